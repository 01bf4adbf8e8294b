"""Time the fixed-item learners: batched learner vs a plain per-run Python loop.

Usage: ``python benchmarks/bench_fixed_items.py``. For m items and B runs it
prints rounds × runs per second of the learner's ``rank`` + ``update`` on a
pre-drawn relevance sequence (no environment, no evaluation: the learner alone,
with the Context and feedback objects an environment would build each round),
of a baseline that runs the same algorithm one run at a time with one
Generator per run, their ratio, and at m = 1000 the cost of the per-round sort
alone (``np.argsort`` of a (B, m) array). Learners: RTop-1F (C&T 2015
Algorithm 1, top-1 feedback), full-information FTPL (C&T 2015 §10) and
OnlineRank (Ailon 2014 Algorithm 1, noisy QuickSort and Plackett–Luce, one
chosen item per round). Each figure is the best of three measurements. Prints
only; asserts nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Literal

import numpy as np

from oltr.feedback import ChoiceFeedback, FullFeedback, TopKFeedback
from oltr.learners.ftpl import FullInformationFTPL, ftpl_epsilon
from oltr.learners.onlinerank import OnlineRank
from oltr.learners.rtop1f import RTop1F, rtop1f_schedule
from oltr.permutations import noisy_quicksort
from oltr.types import Context

CASES = ((10, 1), (10, 100), (1000, 1), (1000, 100))
OTHER_CASES = ((10, 1), (10, 100))  # FTPL and OnlineRank
ETA = 0.05  # OnlineRank's rate
ROUNDS = {10: 5000, 1000: 400}  # rounds timed per case
BASE_ROUNDS = {10: 500, 1000: 40}  # the baseline is slower: fewer rounds, same rate units
HORIZON = {10: 10_000, 1000: 2_000_000}  # T >= m^2 so the paper's K leaves room to explore


def relevance(m: int, n_rounds: int) -> np.ndarray:
    """A §10-like sequence: half the items relevant, 2.3 % flips."""
    rng = np.random.default_rng(0)
    v = (np.arange(m) < m // 2).astype(float)
    return (v + 0.25 * rng.standard_normal((n_rounds, m)) >= 0.5).astype(np.int64)


def batched(m: int, b: int, rel: np.ndarray) -> float:
    """Rounds × runs per second of the batched learner."""
    lrn = RTop1F(measure="dcg", horizon=HORIZON[m], n_runs=b, rng=1)
    n = int(rel.shape[0])
    start = time.perf_counter()
    for t in range(1, n + 1):
        ctx = Context(t=t, n_items=m)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, TopKFeedback(orders, rel[t - 1][orders[:, :1]]))
    return n * b / (time.perf_counter() - start)


class LoopRTop1F:
    """The same algorithm for ONE run, written as a plain per-round loop (the baseline)."""

    def __init__(self, m: int, horizon: int, rng: np.random.Generator) -> None:
        self.m, self.rng = m, rng
        self.k_blocks, self.eps = rtop1f_schedule("dcg", m, horizon)
        self.length = horizon // self.k_blocks
        self.s = np.zeros(m)
        self.est = np.zeros(m)
        self.t = 0
        self.explore_at: dict[int, int] = {}

    def rank(self) -> np.ndarray:
        offset = self.t % self.length
        if offset == 0:  # new block: m exploration times, one object each (line 8)
            times = self.rng.choice(self.length, size=self.m, replace=False)
            objs = self.rng.permutation(self.m)
            self.explore_at = dict(zip(times.tolist(), objs.tolist(), strict=True))
        self.t += 1
        u = self.rng.random(self.m)
        kind: Literal["stable", "quicksort"] = "stable" if self.m <= 256 else "quicksort"
        order = np.argsort(-(self.s + u / self.eps), kind=kind)
        self.j = self.explore_at.get(offset)
        if self.j is not None:  # line 11, "front": move j to the top
            order = np.concatenate(([self.j], order[order != self.j]))
        self.last = offset == self.length - 1
        return order

    def update(self, label: int) -> None:
        if self.j is not None:
            self.est[self.j] = 2.0**label - 1.0
        if self.last:
            self.s += self.est
            self.est[:] = 0.0


def loop(m: int, b: int, rel: np.ndarray) -> float:
    """Rounds × runs per second of the per-run loop."""
    runs = [LoopRTop1F(m, HORIZON[m], g) for g in np.random.default_rng(1).spawn(b)]
    n = int(rel.shape[0])
    start = time.perf_counter()
    for t in range(n):
        for run in runs:
            order = run.rank()
            run.update(int(rel[t, order[0]]))
    return n * b / (time.perf_counter() - start)


def ftpl_batched(m: int, b: int, rel: np.ndarray) -> float:
    """Rounds × runs per second of batched full-information FTPL."""
    lrn = FullInformationFTPL(measure="dcg", horizon=HORIZON[m], n_runs=b, rng=1)
    n = int(rel.shape[0])
    rows = np.broadcast_to(rel[:, None], (n, b, m))
    start = time.perf_counter()
    for t in range(1, n + 1):
        ctx = Context(t=t, n_items=m)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, FullFeedback(orders, rows[t - 1]))
    return n * b / (time.perf_counter() - start)


def ftpl_loop(m: int, b: int, rel: np.ndarray) -> float:
    """Rounds × runs per second of FTPL written as a per-run loop."""
    eps = ftpl_epsilon("dcg", m, HORIZON[m])
    gens = np.random.default_rng(1).spawn(b)
    scores = [np.zeros(m) for _ in range(b)]
    gains = np.exp2(rel.astype(float)) - 1.0
    n = int(rel.shape[0])
    start = time.perf_counter()
    for t in range(n):
        for s, g in zip(scores, gens, strict=True):
            order = np.argsort(-(s + g.random(m) / eps), kind="stable")
            s += gains[t]
    assert order.shape == (m,)
    return n * b / (time.perf_counter() - start)


def onlinerank_batched(sort: str, m: int, b: int, chosen: np.ndarray) -> float:
    """Rounds × runs per second of batched OnlineRank with one chosen item per round."""
    lrn = OnlineRank(sort=sort, eta=ETA, n_runs=b, rng=1)
    n = chosen.size
    masks = np.zeros((n, b, m), dtype=bool)
    masks[np.arange(n), :, chosen] = True
    start = time.perf_counter()
    for t in range(1, n + 1):
        ctx = Context(t=t, n_items=m)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, ChoiceFeedback(orders, masks[t - 1]))
    return n * b / (time.perf_counter() - start)


def onlinerank_loop(sort: str, m: int, b: int, chosen: np.ndarray) -> float:
    """Rounds × runs per second of OnlineRank as a per-run loop (Algorithm 1, lines 4-6)."""
    gens = np.random.default_rng(1).spawn(b)
    weights = [np.zeros(m) for _ in range(b)]
    n = chosen.size
    start = time.perf_counter()
    for t in range(n):
        for w, g in zip(weights, gens, strict=True):
            if sort == "quicksort":
                order = noisy_quicksort(w, g)
            else:  # Algorithm 3 by the exponential race
                order = np.argsort(np.log(g.standard_exponential(m)) - (w - w.max()))
            w[chosen[t]] += ETA
    assert order.shape == (m,)
    return n * b / (time.perf_counter() - start)


def sort_only(m: int, b: int, n: int) -> float:
    """Seconds per round of np.argsort on a (B, m) array (the O(m log m) step)."""
    keys = np.random.default_rng(2).random((b, m))
    start = time.perf_counter()
    for _ in range(n):
        np.argsort(-keys, axis=1, kind="stable" if m <= 256 else "quicksort")
    return (time.perf_counter() - start) / n


def best(fn: Callable[..., float], *args: object, repeats: int = 3) -> float:
    """Best of ``repeats`` measurements (the machine may be shared: take the least disturbed)."""
    return max(fn(*args) for _ in range(repeats))


def main() -> None:
    header = (
        f"{'learner':<24} {'m':>5} {'B':>4} | {'batched r*B/s':>14} {'loop r*B/s':>12} "
        f"{'ratio':>7} | {'us/round':>9} {'sort us/round':>14}"
    )
    print(header)
    print("-" * len(header))

    def row(name: str, m: int, b: int, fast: float, slow: float, sort: str = "") -> None:
        print(
            f"{name:<24} {m:>5} {b:>4} | {fast:>14,.0f} {slow:>12,.0f} {fast / slow:>6.1f}x "
            f"| {b / fast * 1e6:>9.1f} {sort:>14}",
            flush=True,
        )

    for m, b in CASES:
        rel = relevance(m, ROUNDS[m])
        fast = best(batched, m, b, rel)
        slow = best(loop, m, b, rel[: BASE_ROUNDS[m]])
        sort_s = min(sort_only(m, b, 200) for _ in range(3)) if m >= 1000 else None
        row("RTop-1F (top-1)", m, b, fast, slow, f"{sort_s * 1e6:.1f}" if sort_s else "")
    for m, b in OTHER_CASES:
        rel = relevance(m, ROUNDS[m])
        row("FTPL (full)", m, b, best(ftpl_batched, m, b, rel), best(ftpl_loop, m, b, rel[:500]))
    for sort in ("quicksort", "plackett-luce"):
        for m, b in OTHER_CASES:
            chosen = np.random.default_rng(0).integers(0, m, 2000)
            fast = best(onlinerank_batched, sort, m, b, chosen)
            slow = best(onlinerank_loop, sort, m, b, chosen[:200])
            row(f"OnlineRank ({sort})", m, b, fast, slow)


if __name__ == "__main__":
    main()
