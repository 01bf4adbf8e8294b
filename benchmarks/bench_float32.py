"""What ``dtype="float32"`` costs in accuracy: scores against the derived bound, and learning.

For RTop-kF (squared, KL) and online ListNet at their defaults, runs the same
seeded stream twice, in float64 and in float32, on MQ2008 Fold1 (or, without
``../shared/data``, the built-in synthetic set) and prints the average NDCG@10
of the lists shown online and the held-out NDCG@10 of the reported ranker at
the horizon, for both precisions, and their differences. The scores' error
bound, ``|ŝ − s| ≤ (γ_d (1 + u) + u) Σ|w_j x_j|`` with u = 2⁻²⁴, is derived and
checked against exact arithmetic in ``tests/learners/test_float32.py``.

Speed in float32 is in ``bench_rtopk.py``. Usage:
``python benchmarks/bench_float32.py [--horizon 20000] [--reps 2]``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from oltr.data import synthetic_letor, write_letor
from oltr.experiments.datapaths import data_root
from oltr.experiments.runner import RunSetSpec, heldout_column, run_set
from oltr.reproductions.learner_quality import CONTEXTUAL_DEFAULTS

#: RTop-kF squared and KL and ListNet, as the learner-quality reproduction runs them.
LEARNERS = tuple(
    row
    for row in CONTEXTUAL_DEFAULTS
    if row[0].startswith(("RTop-kF squared", "RTop-kF KL", "ListNet"))
)
K = 10


def data_files(scratch: Path) -> tuple[str, Path, Path]:
    """(name, train, test): MQ2008 Fold1 when present, else the built-in synthetic split."""
    fold = data_root() / "LETOR4.0/MQ2008/Fold1"
    if (fold / "train.txt.gz").exists():
        return "MQ2008 Fold1", fold / "train.txt.gz", fold / "test.txt.gz"
    data = synthetic_letor(n_queries=600, n_features=46, max_grade=4, rng=20160509)
    write_letor(data.subset(np.arange(0, 400)), scratch / "train.txt")
    write_letor(data.subset(np.arange(400, 600)), scratch / "test.txt")
    return "synthetic", scratch / "train.txt", scratch / "test.txt"


def run(
    train: Path, test: Path, row: tuple[Any, ...], dtype: str, horizon: int, reps: int
) -> tuple[float, float]:
    """(online NDCG@10, held-out NDCG@10) at the horizon, averaged over the reps."""
    _, learner, params, feedback, feedback_params = row
    options = {"normalize": True, "drop_no_relevant": True}
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(train), **options},
        feedback=feedback,
        feedback_params=feedback_params,
        learner=learner,
        learner_params={**params, "dtype": dtype},
        reps=tuple(range(reps)),
        seed=20161124,
        horizon=horizon,
        measures=(f"ndcg@{K}",),
        checkpoints=(horizon,),
        heldout={"path": str(test), "k": K, **options},
    )
    trace = run_set(spec)
    return float(trace[f"ndcg@{K}:avg"].mean()), float(trace[heldout_column(K)].mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--horizon", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        name, train, test = data_files(Path(scratch))
        print(f"{name}, T = {args.horizon}, {args.reps} runs; NDCG@{K} online / held-out")
        print(f"{'learner':<26} {'float64':>15} {'float32':>15} {'difference':>18}")
        for row in LEARNERS:
            double = run(train, test, row, "float64", args.horizon, args.reps)
            single = run(train, test, row, "float32", args.horizon, args.reps)
            print(
                f"{row[0]:<26} {double[0]:.4f} {double[1]:.4f}  {single[0]:.4f} {single[1]:.4f}"
                f"  {single[0] - double[0]:+.1e} {single[1] - double[1]:+.1e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
