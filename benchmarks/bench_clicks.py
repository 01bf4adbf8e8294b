"""Impressions per second of the click-based learners: batched over runs vs a per-run loop.

MQ2008 Fold1, informational clicks, ``--impressions`` impressions; each learner is
run through the engine's runner once with B = ``--runs`` runs in one batch (one shared
query stream) and once as ``--runs`` single runs (``streams = "per-run"``, each run its
own query stream, as the reference protocol of :mod:`oltr.reproductions.clicks` does).
Reports impressions per second counted over all runs (run-impressions / s) and the
projected wall time, on one core, of
the full MQ2008 protocol (5 folds × 3 click models × 25 runs × 10,000 impressions)
for the five click-based learners.

    python benchmarks/bench_clicks.py --impressions 500 --runs 25
"""

from __future__ import annotations

import argparse
import time

from oltr.experiments.datapaths import data_root
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.reproductions.clicks import CLICK_LEARNERS as LEARNERS

CLICK_LEARNERS = ("PDGD", "PDGD (neural)", "P-MGD", "P-DBGD", "TD-DBGD")
#: Run-impressions of the full MQ2008 protocol per learner.
FULL = 5 * 3 * 25 * 10_000


def _time(label: str, runs: int, horizon: int, batched: bool) -> float:
    """Run-impressions per second of ``label``: one batch (shared stream) or single runs."""
    base = data_root() / "LETOR4.0/MQ2008/Fold1"
    learner, params = LEARNERS[label]
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(base / "train.txt.gz"), "drop_no_relevant": True},
        feedback="clicks",
        feedback_params={"click_model": "informational", "n_grades": 3},
        learner=learner,
        learner_params=params,
        reps=tuple(range(runs)),
        seed=0,
        horizon=horizon,
        measures=("ndcg@10",),
        checkpoints=(horizon,),
        heldouts={"test": {"path": str(base / "test.txt.gz"), "drop_no_relevant": True}},
        online_discount=0.9995,
        streams=None if batched else "per-run",
    )
    start = time.perf_counter()
    run_set(spec)
    return runs * horizon / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impressions", type=int, default=500)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    for label in CLICK_LEARNERS:
        _time(label, 2, 20, True)  # compile (or load) the kernels first
    total = 0.0
    print(f"{'learner':<14} {'batched':>9} {'per-run loop':>13} {'full MQ2008, 1 core':>20}")
    for label in CLICK_LEARNERS:
        fast = _time(label, args.runs, args.impressions, True)
        slow = _time(label, args.runs, args.impressions, False)
        total += FULL / fast
        print(f"{label:<14} {fast:9.0f} {slow:13.0f} {FULL / fast / 60:17.1f} min")
    print("(run-impressions / s; projected from the batched rate)")
    n = len(CLICK_LEARNERS)
    print(f"projected full MQ2008 protocol, these {n} learners, one core: {total / 60:.1f} min")


if __name__ == "__main__":
    main()
