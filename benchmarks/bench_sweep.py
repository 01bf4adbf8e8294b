"""Sweep scaling: wall time of one experiment with ``-j 1`` and ``-j 2`` (local process pool).

Eight run sets of RTop-kF on the built-in synthetic stream (T = 20,000, 4 reps
each) are run into fresh folders with one and then two worker processes. The
ratio is what a second core buys; the aim is at least 1.8x on a 2-core machine.

Usage: ``python benchmarks/bench_sweep.py`` (or ``python benchmarks/run.py sweep``).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from oltr.experiments.config import parse_config
from oltr.experiments.sweep import run_experiment

CONFIG = {
    "experiment": {
        "name": "bench-sweep",
        "horizon": 20_000,
        "reps": 4,
        "seed": 1,
        "measures": ["ndcg@10"],
        "schedule": {"every": 5_000},
    },
    "env": {"name": "letor-stream-v1", "params": {}},
    "feedback": {"name": "top-k", "params": {"k": 1}},
    "learners": [
        {"name": "rtopk", "label": f"rtopk-{i}", "params": {"eta": 0.01 * (i + 1), "gamma": 0.1}}
        for i in range(8)
    ],
}


def wall_time(jobs: int) -> float:
    with tempfile.TemporaryDirectory() as folder:
        experiment = parse_config(CONFIG)
        start = time.perf_counter()
        run_experiment(experiment, out=Path(folder) / "res", jobs=jobs, progress=False)
        return time.perf_counter() - start


def main() -> None:
    wall_time(1)  # warm the caches (numba, data) once
    one, two = wall_time(1), wall_time(2)
    print(f"cores: {os.cpu_count()}; 8 run sets x 4 reps x T = 20,000 (RTop-kF, synthetic stream)")
    print("jobs  wall s  speed-up")
    print(f"   1  {one:6.2f}     1.00x")
    print(f"   2  {two:6.2f}     {one / two:.2f}x")


if __name__ == "__main__":
    main()
