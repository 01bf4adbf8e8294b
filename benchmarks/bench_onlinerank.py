"""Time OnlineRank (Ailon 2014 Algorithm 1): cost per round against n, and batched throughput.

Usage: ``python benchmarks/bench_onlinerank.py [--quick]``. Prints only; asserts nothing.

1. Per-round cost (``rank`` + ``update``, one run, single-choice signals from a uniform
   adversary) for n = 10 … 10 000 with both noisy sorts. The exponent of time/round
   against n is fitted by least squares on log–log axes, next to the exponent that
   ``n log n`` itself has on the same grid (its local slope ``1 + 1/ln n`` is above 1),
   and ``time / (n log n)`` is printed: flat for an ``O(n log n)`` round. Fits are given
   over all n and over n >= 1000, where fixed per-call overhead no longer dominates.
2. Throughput in rounds × runs per second at m = 10 and 1000 with B = 1 and B = 100:
   the batched learner (one call per round for all B runs) against a plain per-round
   Python loop over runs, each run its own weight vector and generator, written here.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from scipy import stats

from oltr.feedback import ChoiceFeedback
from oltr.learners.onlinerank import OnlineRank
from oltr.permutations import noisy_quicksort
from oltr.types import Context, RunGenerators

SORTS = ("quicksort", "plackett-luce")
QUICK = "--quick" in sys.argv
SIZES = (10, 30, 100, 300, 1_000, 3_000, 10_000)
MIN_SECONDS = 0.2 if QUICK else 0.6  # per cell: repeat rounds until this much time has passed


def chosen_masks(n: int, n_runs: int, n_rounds: int, seed: int = 0) -> list[np.ndarray]:
    """Single-choice feedback (uniform adversary), one (B, n) mask per round."""
    gen = np.random.default_rng(seed)
    out = []
    for u in gen.integers(0, n, n_rounds):
        mask = np.zeros((n_runs, n), bool)
        mask[:, u] = True
        out.append(mask)
    return out


def time_learner(sort: str, n: int, n_runs: int) -> float:
    """Seconds per round (rank + update for all runs) of the batched learner.

    Building the feedback object (the environment's side of the round) is not timed.
    """
    lrn = OnlineRank(sort=sort, eta=0.05, n_runs=n_runs, rng=1)
    masks = chosen_masks(n, n_runs, 64)
    t, elapsed, rounds = 1, 0.0, 0
    while elapsed < MIN_SECONDS or rounds < 5:
        ctx = Context(t=t, n_items=n)
        start = time.perf_counter()
        orders = lrn.rank(ctx)
        mid = time.perf_counter()
        feedback = ChoiceFeedback(orders, masks[t % len(masks)])  # the environment's work
        resume = time.perf_counter()
        lrn.update(ctx, orders, feedback)
        elapsed += (mid - start) + (time.perf_counter() - resume)
        t, rounds = t + 1, rounds + 1
    return elapsed / rounds


def time_baseline(sort: str, n: int, n_runs: int) -> float:
    """Seconds per round of a plain loop over runs: per-run state, per-run sort and update."""
    gens = list(RunGenerators.from_rng(1, n_runs))
    weights = [np.zeros(n) for _ in range(n_runs)]
    eta = 0.05
    items = np.random.default_rng(0).integers(0, n, 64)
    t, elapsed, rounds = 0, 0.0, 0
    while elapsed < MIN_SECONDS or rounds < 5:
        u = items[t % items.size]
        start = time.perf_counter()
        for b in range(n_runs):
            w, g = weights[b], gens[b]
            if sort == "quicksort":
                order = noisy_quicksort(w, g)
            else:  # Algorithm 3 by the exponential race, one run at a time
                order = np.argsort(np.log(g.standard_exponential(n)) - (w - w.max()))
            assert order.shape == (n,)
            w[u] += eta  # Algorithm 1, line 6, for a single choice
        elapsed += time.perf_counter() - start
        t, rounds = t + 1, rounds + 1
    return elapsed / rounds


def per_round_scaling() -> None:
    print("1. per-round cost of OnlineRank, B = 1 (rank + update)\n")
    header = f"{'n':>7} | " + " | ".join(
        f"{s + ' us/round':>24} {'ns/(n ln n)':>12}" for s in SORTS
    )
    print(header)
    print("-" * len(header))
    times: dict[str, list[float]] = {s: [] for s in SORTS}
    for n in SIZES:
        cells = []
        for sort in SORTS:
            sec = time_learner(sort, n, 1)
            times[sort].append(sec)
            cells.append(f"{sec * 1e6:>24.1f} {sec * 1e9 / (n * math.log(n)):>12.2f}")
        print(f"{n:>7} | " + " | ".join(cells), flush=True)
    ns = np.asarray(SIZES, dtype=float)
    print()
    for label, keep in (("all n", ns >= 0), ("n >= 1000", ns >= 1000)):
        ref = stats.linregress(np.log(ns[keep]), np.log(ns[keep] * np.log(ns[keep]))).slope
        fits = []
        for sort in SORTS:
            fit = stats.linregress(np.log(ns[keep]), np.log(np.asarray(times[sort])[keep]))
            fits.append(f"{sort} {fit.slope:.3f} ± {fit.stderr:.3f}")
        print(
            f"fitted exponent of time/round vs n ({label}): {', '.join(fits)}; "
            f"n log n on the same grid: {ref:.3f}"
        )


def throughput() -> None:
    print("\n2. rounds × runs per second: batched learner vs a per-run Python loop\n")
    header = f"{'m':>6} {'B':>4} | {'sort':<14} {'batched':>12} {'loop':>12} {'batched/loop':>13}"
    print(header)
    print("-" * len(header))
    for n in (10, 1_000):
        for n_runs in (1, 100):
            for sort in SORTS:
                fast = n_runs / time_learner(sort, n, n_runs)
                slow = n_runs / time_baseline(sort, n, n_runs)
                print(
                    f"{n:>6} {n_runs:>4} | {sort:<14} {fast:>12,.0f} {slow:>12,.0f} "
                    f"{fast / slow:>12.2f}x",
                    flush=True,
                )


def main() -> None:
    start = time.perf_counter()
    noisy_quicksort(np.zeros(3), 0)
    print(f"noisy_quicksort first call (numba load/compile): {time.perf_counter() - start:.2f} s\n")
    per_round_scaling()
    throughput()


if __name__ == "__main__":
    main()
