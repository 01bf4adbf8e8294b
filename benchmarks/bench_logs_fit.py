"""Sessions per second of propensity estimation and counterfactual fits (``oltr logs fit``).

MQ2008 Fold1 train (471 queries, 46 features; a synthetic set of the same shape
when ``../shared/data`` is absent), a log of 10^6 sessions (η = 2, top 10) from
one Ranking SVM logger (two for intervention harvesting, which needs several),
bound to the data set once. Timed apart: :func:`oltr.estimators.estimate_propensities`
(``em``, ``harvesting``; no bootstrap, and with ``--bootstrap`` replicates) and
:func:`oltr.learners.counterfactual.fit_counterfactual` (``naive``, ``ips``,
``dla``, ``dr``; linear scorer). Sessions per second is the log's sessions over
the wall time of the call. The peak resident memory of the process
(``resource.getrusage``, which only grows) is printed after each step beside the
log's size in memory, and the 1-minute load average beside every figure: the
machine may be shared.

    python benchmarks/bench_logs_fit.py --sessions 1000000 --bootstrap 20
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from oltr.data import LetorDataset, load_letor, synthetic_letor
from oltr.estimators import estimate_propensities
from oltr.experiments.datapaths import data_root
from oltr.learners.counterfactual import fit_counterfactual
from oltr.logs import ClickLog, bind
from oltr.logs.simulate import simulate_log, train_logger


def _data() -> tuple[LetorDataset, str]:
    path = data_root() / "LETOR4.0/MQ2008/Fold1/train.txt.gz"
    if path.is_file():
        return load_letor(path), "MQ2008 Fold1 train"
    synthetic = synthetic_letor(
        n_queries=471, n_features=46, max_grade=2, min_docs=5, max_docs=40, rng=0
    )
    return synthetic, "synthetic (MQ2008-shaped; ../shared/data absent)"


def _peak_mb() -> float:
    """Peak resident set size of this process in MB (ru_maxrss: kB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def _log_mb(log: ClickLog) -> float:
    arrays = [log.qids, log.offsets, log.docs, log.clicks, log.loggers, log.propensities]
    return sum(np.asarray(a).nbytes for a in arrays if a is not None) / 1e6


def _timed(label: str, n: int, call: Callable[[], Any]) -> Any:
    start = time.perf_counter()
    out = call()
    wall = time.perf_counter() - start
    print(
        f"{label:<32} {wall:8.2f} {n / wall:14,.0f} {_peak_mb():9.0f} {os.getloadavg()[0]:6.2f}",
        flush=True,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--bootstrap", type=int, default=20, help="EM replicates (0: skip)")
    parser.add_argument("--learners", nargs="+", default=["naive", "ips", "dla", "dr"])
    args = parser.parse_args()
    dataset, name = _data()
    n = args.sessions
    loggers = [train_logger(dataset, rng=i) for i in range(2)]
    one = simulate_log(dataset, loggers[0], n_sessions=n, eta=2.0, rng=1)
    two = simulate_log(dataset, np.stack(loggers), n_sessions=n, eta=2.0, rng=2)
    start = time.perf_counter()
    bound = bind(one, dataset)
    bind_s = time.perf_counter() - start
    bound_two = bind(two, dataset)
    print(f"data: {name}; log: {n:,} sessions, {_log_mb(one):.0f} MB in memory")
    print(f"bind: {bind_s:.2f} s; peak memory so far {_peak_mb():.0f} MB")
    print(f"{'step':<32} {'s':>8} {'sessions/s':>14} {'peak MB':>9} {'load':>6}")
    em = _timed(
        "estimate em",
        n,
        lambda: estimate_propensities(bound, "em", n_positions=10, n_bootstrap=0),
    )
    if args.bootstrap:
        _timed(
            f"estimate em, {args.bootstrap} bootstrap",
            n,
            lambda: estimate_propensities(bound, "em", n_positions=10, n_bootstrap=args.bootstrap),
        )
    try:
        _timed(
            "estimate harvesting (2 loggers)",
            n,
            lambda: estimate_propensities(bound_two, "harvesting", n_positions=10, n_bootstrap=0),
        )
    except (ImportError, ValueError) as exc:  # an estimator not in this build, or no overlap
        print(f"{'estimate harvesting':<32} skipped: {exc}")
    for learner in args.learners:
        theta = em if learner in ("ips", "dr") else None
        _timed(
            f"fit {learner}",
            n,
            functools.partial(
                fit_counterfactual, bound, dataset, learner=learner, propensities=theta, rng=0
            ),
        )


if __name__ == "__main__":
    main()
