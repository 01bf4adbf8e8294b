"""Wall time of the click protocol on one data set (MQ2008 by default), its table and curves.

The folds of ``--dataset`` (``--folds``; all by default: 5 for MQ2008 and OHSUMED, 1 for
the MSLR sample) × the click models of ``--click-models`` × ``--runs`` runs ×
``--impressions`` impressions for each learner of ``--learners`` (default: the five
click-based ones), under ``--protocol`` (``reference`` or ``lerot``,
:mod:`oltr.reproductions.clicks`), in ``--jobs`` worker processes, through the engine's
sweep: ``--out`` is an ordinary results folder (an interrupted benchmark resumes), and
its report (``oltr report OUT``) carries the table and the curves. Prints the table.

    nice python benchmarks/bench_clicks_protocol.py --jobs 2 --out results/clicks-mq2008
    nice python benchmarks/bench_clicks_protocol.py --protocol lerot --folds 1 --runs 20 \\
        --learners PDGD TD-DBGD --out results/clicks-lerot
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from oltr.experiments.report import write_report
from oltr.experiments.sweep import run_experiment
from oltr.reproductions.clicks import (
    CLICK_MODELS,
    DATASETS,
    PROTOCOLS,
    click_experiment,
    sections,
    summarize,
)

CLICK_LEARNERS = ("PDGD", "PDGD (neural)", "P-MGD", "P-DBGD", "TD-DBGD")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dataset", choices=sorted(DATASETS), default="MQ2008")
    parser.add_argument("--folds", type=int, nargs="+", default=None)
    parser.add_argument("--protocol", choices=PROTOCOLS, default="reference")
    parser.add_argument("--runs", type=int, default=25)
    parser.add_argument("--impressions", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--learners", nargs="+", default=list(CLICK_LEARNERS))
    parser.add_argument("--click-models", nargs="+", default=list(CLICK_MODELS))
    parser.add_argument("--out", type=Path, default=Path("results/clicks-mq2008"))
    parser.add_argument("--quiet", "-q", action="store_true")
    args = parser.parse_args()
    folds = tuple(args.folds or DATASETS[args.dataset][0])
    experiment = click_experiment(
        "full",
        args.out,
        protocol=args.protocol,
        runs=args.runs,
        horizon=args.impressions,
        learners=args.learners,
        click_models=args.click_models,
        datasets={args.dataset: folds},
    )
    start = time.perf_counter()
    done = run_experiment(experiment, jobs=args.jobs, progress=not args.quiet)
    wall = time.perf_counter() - start
    write_report(args.out, sections=sections(args.out))
    table, _ = summarize(args.out)
    table.to_csv(args.out / "table.csv", index=False)
    print(table.to_string(index=False))
    print(
        f"wall time: {wall:.1f} s ({wall / 60:.1f} min) for {len(done.computed)} run sets "
        f"({len(done.skipped)} found finished) with {args.jobs} worker processes"
    )


if __name__ == "__main__":
    main()
