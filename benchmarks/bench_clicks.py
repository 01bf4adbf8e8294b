"""Impressions per second of the click-based learners: batched over runs vs a per-run loop.

MQ2008 Fold1, informational clicks, ``--impressions`` impressions; each learner is
run once with B = ``--runs`` runs in one batch and once as ``--runs`` separate B = 1
learners (the same runs, the same traces). Reports impressions per second counted
over all runs (run-impressions / s) and the projected wall time, on one core, of
the full MQ2008 protocol (5 folds × 3 click models × 25 runs × 10,000 impressions)
for the five click-based learners.

    python benchmarks/bench_clicks.py --impressions 500 --runs 25
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from oltr.data.letor import load_letor
from oltr.experiments.clicks_protocol import run_click_protocol
from oltr.experiments.clicks_reproduction import LEARNERS
from oltr.experiments.datapaths import data_root
from oltr.experiments.heldout import HeldoutSet
from oltr.feedback.clicks import ClickFeedbackModel
from oltr.types import RunGenerators

CLICK_LEARNERS = ("PDGD", "PDGD (neural)", "P-MGD", "P-DBGD", "TD-DBGD")
#: Run-impressions of the full MQ2008 protocol per learner.
FULL = 5 * 3 * 25 * 10_000


def _time(label: str, runs: int, horizon: int, batched: bool, data: tuple) -> float:  # type: ignore[type-arg]
    train, test = data
    fb = ClickFeedbackModel(click_model="informational", n_grades=3)
    cps = np.array([horizon])
    groups = [list(range(runs))] if batched else [[r] for r in range(runs)]
    start = time.perf_counter()
    for reps in groups:
        lrn = LEARNERS[label](len(reps), RunGenerators.from_keys(0, label, reps=reps), horizon)
        run_click_protocol(
            lrn,
            train,
            test,
            fb,
            horizon=horizon,
            checkpoints=cps,
            query_rng=np.random.default_rng(0),
            feedback_rngs=RunGenerators.from_keys(0, "fb", reps=reps),
        )
    return runs * horizon / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impressions", type=int, default=500)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    base = data_root() / "LETOR4.0/MQ2008/Fold1"
    data = (
        load_letor(base / "train.txt.gz", drop_no_relevant=True),
        HeldoutSet(load_letor(base / "test.txt.gz", drop_no_relevant=True)),
    )
    for label in CLICK_LEARNERS:
        _time(label, 2, 20, True, data)  # compile (or load) the kernels first
    total = 0.0
    print(f"{'learner':<14} {'batched':>9} {'per-run loop':>13} {'full MQ2008, 1 core':>20}")
    for label in CLICK_LEARNERS:
        fast = _time(label, args.runs, args.impressions, True, data)
        slow = _time(label, args.runs, args.impressions, False, data)
        total += FULL / fast
        print(f"{label:<14} {fast:9.0f} {slow:13.0f} {FULL / fast / 60:17.1f} min")
    print("(run-impressions / s; projected from the batched rate)")
    n = len(CLICK_LEARNERS)
    print(f"projected full MQ2008 protocol, these {n} learners, one core: {total / 60:.1f} min")


if __name__ == "__main__":
    main()
