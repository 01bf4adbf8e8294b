"""What a single run's round costs beyond its arithmetic: RTop-kF at B = 1, three ways.

For the shapes of :mod:`bench_rtopk` (squared surrogate, fixed η and γ, B = 1), times in turns:

* ``learner``: :class:`oltr.learners.rtopk.RTopKF` as the runner drives it
  (``trusted_rank``, the feedback model's ``observe`` and ``restrict``, ``trusted_update``);
* ``kernels``: the same round made of the learner's own compiled calls (scores and order,
  the top-1 estimate, the checked step) and the protocol's objects (the context, ``observe``),
  called directly, with no learner method between them: what the learner would cost if its
  Python around the kernels were free (a diagnostic; it reaches into private kernels);
* ``loop``: the plain per-run numpy loop of :func:`bench_rtopk.loop_step`.

``learner / loop`` is the benchmark's B = 1 figure; ``kernels / loop`` bounds what trimming the
learner's Python could give. Rates are per CPU second, the fastest of 25 blocks, the three
columns in turns (:func:`bench_rtopk.rates`).

Usage: ``python benchmarks/bench_trusted_glue.py`` (or ``python benchmarks/run.py trusted_glue``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from bench_rtopk import ETA, GAMMA, POOL, SHAPES, loop_step, pool, rates
from threadpoolctl import threadpool_limits

from oltr.feedback import TopKFeedbackModel
from oltr.learners._linear_kernels import fused_scores
from oltr.learners._step_bound import _DTYPE_MAX
from oltr.learners.linear_round import checked_step
from oltr.learners.rtopk import RTopKF
from oltr.permutations import permutation_rows
from oltr.surrogates._kernels import squared_estimate
from oltr.types import Context, RunGenerators

#: Builds a fresh round and returns its per-round step.
Maker = Callable[[], Callable[[int], None]]


def learner_step(m: int, d: int) -> Maker:
    """RTop-kF (squared) at B = 1 through the runner's calls."""
    feats, rels = pool(m, d)

    def make() -> Callable[[int], None]:
        lrn = RTopKF(surrogate="squared", eta=ETA, gamma=GAMMA, n_runs=1, rng=1)
        model, rngs, required = TopKFeedbackModel(k=1), RunGenerators.from_rng(2, 1), lrn.requires

        def step(t: int) -> None:
            i = t % POOL
            ctx = Context(t=t + 1, n_items=m, features=feats[i])
            orders = lrn.trusted_rank(ctx)
            fb: Any = model.observe(orders, rels[i], rngs=rngs).restrict(required)
            lrn.trusted_update(ctx, orders, fb)  # top-k feedback, as the learner declared

        return step

    return make


def kernels_step(m: int, d: int) -> Maker:
    """The same round: the learner's kernels and the protocol's objects, called directly."""
    feats, rels = pool(m, d)

    def make() -> Callable[[int], None]:
        model, rngs = TopKFeedbackModel(k=1), RunGenerators.from_rng(2, 1)
        weights, average, buffer = np.zeros((1, d)), np.zeros((1, d)), np.empty((1, d))
        sumsq, no_xt = np.zeros(1), np.empty((0, 0))
        scores, neg, z = np.empty((1, m)), np.empty((1, m)), np.empty((1, m))
        own, shown = np.empty((1, m), dtype=np.intp), np.empty((1, m), dtype=np.intp)
        coins = np.random.default_rng(3).random(1 << 16)
        largest = _DTYPE_MAX[np.dtype(np.float64)]
        explore = np.zeros(1, dtype=np.intp)

        def step(t: int) -> None:
            i = t % POOL
            x = Context(t=t + 1, n_items=m, features=feats[i]).features
            fused_scores(weights, x, no_xt, scores, neg, own)
            orders = own
            if coins[t & 0xFFFF] < GAMMA:
                shown[...] = own
                permutation_rows(rngs, explore, shown)
                orders = shown
            labels = model.observe(orders, rels[i], rngs=rngs).labels
            squared_estimate(scores, orders, labels, GAMMA, own, z)
            args = (weights, z, x, ETA, False, sumsq, 1.0, average, float(t + 1), buffer)
            checked_step(False, *args, largest)

        return step

    return make


def main() -> None:
    with threadpool_limits(limits=1):
        print("RTop-kF (squared) at B = 1, run-rounds per CPU second")
        header = f"{'(m, d)':>10} {'learner':>9} {'kernels':>9} {'loop':>9}"
        print(f"{header} {'learner/loop':>13} {'kernels/loop':>13}")
        for m, d in SHAPES:
            fast, bare, slow = rates(
                [learner_step(m, d), kernels_step(m, d), loop_step("squared", 1, m, d)], 1
            )
            print(
                f"{f'({m}, {d})':>10} {fast:>9.0f} {bare:>9.0f} {slow:>9.0f} "
                f"{fast / slow:>12.2f}x {bare / slow:>12.2f}x",
                flush=True,
            )


if __name__ == "__main__":
    main()
