"""Wall time of the full click protocol on one data set (MQ2008 by default), its table and curves.

The folds of ``--dataset`` (5 for MQ2008 and OHSUMED, 1 for the MSLR sample) × 3 click
models (perfect, navigational, informational) × ``--runs`` runs
× ``--impressions`` impressions for each learner of ``--learners`` (default: the
five click-based ones), in ``--jobs`` worker processes. Writes ``runs.csv``,
``curves.csv``, ``table.csv`` and one PNG per click model to ``--out``.

    nice python benchmarks/bench_clicks_protocol.py --jobs 2 --out results/clicks-mq2008
    nice python benchmarks/bench_clicks_protocol.py --dataset OHSUMED --runs 5 \\
        --out results/clicks-ohsumed
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from oltr.experiments.clicks_reproduction import plot_curves, run_oltr_clicks, summarize

CLICK_LEARNERS = ("PDGD", "PDGD (neural)", "P-MGD", "P-DBGD", "TD-DBGD")
FOLDS = {"MQ2008": (1, 2, 3, 4, 5), "OHSUMED": (1, 2, 3, 4, 5), "MSLR-sample": (1,)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", choices=sorted(FOLDS), default="MQ2008")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--impressions", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--learners", nargs="+", default=list(CLICK_LEARNERS))
    parser.add_argument("--out", type=Path, default=Path("results/clicks-mq2008"))
    args = parser.parse_args()
    start = time.perf_counter()
    finals, curves = run_oltr_clicks(
        datasets={args.dataset: FOLDS[args.dataset]},
        runs=args.runs,
        horizon=args.impressions,
        learners=tuple(args.learners),
        n_jobs=args.jobs,
        progress=lambda line: print(f"{time.perf_counter() - start:7.1f} s  {line}", flush=True),
    )
    wall = time.perf_counter() - start
    args.out.mkdir(parents=True, exist_ok=True)
    finals.to_csv(args.out / "runs.csv", index=False)
    curves.to_csv(args.out / "curves.csv", index=False)
    plot_curves(curves, args.out)
    table = summarize(finals)
    table.to_csv(args.out / "table.csv", index=False)
    print(table.to_string(index=False))
    print(f"wall time: {wall:.1f} s ({wall / 60:.1f} min) with {args.jobs} worker processes")


if __name__ == "__main__":
    main()
