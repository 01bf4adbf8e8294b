"""Sessions per second of the click-log simulator (``oltr logs simulate``).

MQ2008 Fold1 train (471 queries, 46 features; a synthetic set of the same shape
when ``../shared/data`` is absent), one Ranking SVM logger trained on 1% of the
queries, top 10, for each click model and 10^4, 10^5, 10^6 sessions. The time
covers everything :func:`oltr.logs.simulate.simulate_log` does (the loggers'
top-k, the draws, building and checking the :class:`~oltr.logs.ClickLog`),
not reading the data or training the logger (reported apart). The 1-minute
load average is printed beside every figure: the machine may be shared.

    python benchmarks/bench_logs_simulate.py --sessions 10000 100000 1000000
"""

from __future__ import annotations

import argparse
import os
import time

from oltr.data import LetorDataset, load_letor, synthetic_letor
from oltr.experiments.datapaths import data_root
from oltr.logs.simulate import simulate_log, train_logger


def _data() -> tuple[LetorDataset, str]:
    path = data_root() / "LETOR4.0/MQ2008/Fold1/train.txt.gz"
    if path.is_file():
        return load_letor(path), "MQ2008 Fold1 train"
    synthetic = synthetic_letor(
        n_queries=471, n_features=46, max_grade=2, min_docs=5, max_docs=40, rng=0
    )
    return synthetic, "synthetic (MQ2008-shaped; ../shared/data absent)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument(
        "--click-models", nargs="+", default=["pbm", "trust", "cascade"], dest="models"
    )
    args = parser.parse_args()
    dataset, name = _data()
    start = time.perf_counter()
    weights = train_logger(dataset, rng=0)
    print(f"data: {name}; logger trained in {time.perf_counter() - start:.2f} s")
    simulate_log(dataset, weights, n_sessions=1000, rng=0)  # imports and first-call costs
    print(
        f"{'click model':<12} {'swap':<8} {'sessions':>10} {'s':>7} {'sessions/s':>12} {'load':>6}"
    )
    for model in args.models:
        for swap in (None, "swap-1k"):
            for n in args.sessions:
                start = time.perf_counter()
                simulate_log(dataset, weights, n_sessions=n, click_model=model, swap=swap, rng=1)
                wall = time.perf_counter() - start
                print(
                    f"{model:<12} {swap or '-':<8} {n:>10,} {wall:7.2f} {n / wall:12,.0f} "
                    f"{os.getloadavg()[0]:6.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
