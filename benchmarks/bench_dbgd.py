"""Duels per second of Dueling Bandit Gradient Descent.

Usage: ``python benchmarks/bench_dbgd.py``. Two settings:

* **interleaved clicks** — DBGD ranks a synthetic query's m documents (d features)
  with w_t and w'_t, team-draft interleaving and a navigational cascade user decide
  the duel, DBGD learns: (m, d) = (40, 46) (LETOR 4.0 size) and (120, 136)
  (MSLR-WEB size), B = 1 and 64 runs per step;
* **synthetic P1** (d = 50) — the array loop of
  :func:`oltr.reproductions.synthetic_duels.simulate_synthetic` with B = 1 and 64 runs.

"duels/s" counts one duel per run: B × rounds / seconds. Prints only; asserts nothing.
"""

from __future__ import annotations

import time

import numpy as np

from oltr.feedback import InterleavedClickFeedback
from oltr.learners.dbgd import DBGD
from oltr.reproductions.synthetic_duels import simulate_synthetic
from oltr.types import Context, RunGenerators

MIN_SECONDS = 1.0


def letor_rate(m: int, d: int, n_runs: int) -> float:
    """Duels per second of rank -> interleave + clicks -> update on one fixed query."""
    gen = np.random.default_rng(0)
    x = gen.random((m, d))
    rel = gen.integers(0, 3, size=m)
    lrn = DBGD(delta=1.0, gamma=0.01, n_runs=n_runs, rng=1)
    fb = InterleavedClickFeedback(click_model="navigational", n_grades=3, k=10)
    rngs = RunGenerators.from_rng(2, n_runs)
    ctx = Context(t=1, n_items=m, features=x)
    for _ in range(20):  # the first calls load (or compile) the kernels: not timed
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, fb.observe(orders, rel, rngs=rngs))
    rounds, start = 0, time.perf_counter()
    while time.perf_counter() - start < MIN_SECONDS or rounds < 20:
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, fb.observe(orders, rel, rngs=rngs))
        rounds += 1
    return n_runs * rounds / (time.perf_counter() - start)


def synthetic_rate(n_runs: int) -> float:
    """Duels per second of the batched P1 simulation (d = 50)."""
    horizon = 20_000
    start = time.perf_counter()
    simulate_synthetic("P1", delta_l=[1.0], reps=range(n_runs), horizon=horizon)
    return n_runs * horizon / (time.perf_counter() - start)


def main() -> None:
    header = f"{'setting':<34} {'B':>4} {'duels/s':>12}"
    print(header)
    print("-" * len(header))
    for m, d in ((40, 46), (120, 136)):
        for b in (1, 64):
            print(f"{f'team-draft clicks (m={m}, d={d})':<34} {b:>4} {letor_rate(m, d, b):>12,.0f}")
    for b in (1, 64):
        print(f"{'synthetic P1 (d=50)':<34} {b:>4} {synthetic_rate(b):>12,.0f}")


if __name__ == "__main__":
    main()
