"""Compiled loops for large batches, with the weights stored runs-minor: ``Wᵀ`` of shape (d, B).

The loops of :mod:`oltr.learners._linear_kernels` vectorise along items (the
scores) or features (the step) and keep every run's sums in index order. With
lists of 24 or 40 items, a vector loop over the items ends after three or
five iterations, and each run's sums over features are scalar chains. Stored
as ``Wᵀ`` (d, B), the same sums can run *across runs*: lane ``b`` of a vector
holds run ``b``'s partial sum, each lane adds its terms in index order from
0.0 (``a ← a + fl(x·w)``, no fused multiply-add, no reassociation), so the
bits are exactly those of the row-major loops, whatever ``B`` is, and the
vector loop is as long as the batch.

* scores: ``Sᵀ = X Wᵀ`` is :func:`rows_times` with X's rows as coefficients;
* step: ``Gᵀ = Xᵀ Cᵀ`` (C = η·direction, (B, m)) likewise, over the items;
* the sums of squares of AdaGrad-norm and of the projection, the finiteness
  check and the running average are element-wise or column sums, in index
  order per lane.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oltr.kernels import njit
from oltr.learners._linear_kernels import (
    first_bad_feature,
    four_rows_times,
    one_row_times,
    row_sumsq,
    rows_times,
)
from oltr.permutations.counting import COUNTING_UP_TO, orders_by_counting

__all__: list[str] = []

_FLOAT_MAX = 1.7976931348623157e308

#: Lists of at least this many items are computed as row-major weights are:
#: scores vectorised along items, the step along features (then Wᵀ moved by a
#: strided pass), where a top-k estimate's zeros are skipped. With 120 items
#: that beats the sums across runs; with 24 or 40 it does not (measured on Zen 4
#: at (m, d) = (120, 136), (24, 700) and (40, 46)). Both ways give the same bits.
ROWS_FROM = 64


def scratch_shape(m: int, d: int, n_runs: int) -> tuple[int, int]:
    """Shape of the scratch array :func:`scores_runs_minor` needs for a list of m items."""
    return (d, m) if m >= ROWS_FROM else (m, n_runs)


@njit(nogil=True)
def scores_runs_minor(
    weights_t: Any, x: Any, scratch: Any, out: Any, neg: Any, order: Any
) -> int:  # pragma: no cover
    """``out = (X Wᵀ)ᵀ`` (B, m) from ``weights_t`` (d, B), ``neg = −out``, and ``order``.

    ``scratch`` receives ``X Wᵀ`` (m, B) for lists shorter than
    :data:`ROWS_FROM`, else ``Xᵀ`` (d, m) (see :func:`scratch_shape`). Returns as
    :func:`oltr.learners._linear_kernels.fused_scores` does: the flat index of
    the first non-finite feature, −2 when a score is not finite although the
    features are, else −1. With finite scores, lists of up to
    :data:`~oltr.permutations.counting.COUNTING_UP_TO` items and an ``order``
    (B, m) with rows, ``order`` then holds each run's stable descending order
    (by counting); otherwise the caller sorts ``neg``.
    """
    m, d = x.shape
    n_runs = weights_t.shape[1]
    finite = True
    if m >= ROWS_FROM:  # long lists: W rows times Xᵀ, vectorised along items
        for i in range(m):
            for j in range(d):
                scratch[j, i] = x[i, j]
        transposed_times(weights_t, scratch, out, np.empty(0))
        for b in range(n_runs):
            for i in range(m):
                s = out[b, i]
                neg[b, i] = -s
                finite &= np.abs(s) <= _FLOAT_MAX
    else:  # short lists: X times Wᵀ, vectorised across runs
        rows_times(x, weights_t, scratch, False)
        for i in range(m):
            row = scratch[i]
            for b in range(n_runs):
                s = row[b]
                out[b, i] = s
                neg[b, i] = -s
                finite &= np.abs(s) <= _FLOAT_MAX
    if not finite:
        bad = first_bad_feature(x)
        return bad if bad >= 0 else -2
    if m <= COUNTING_UP_TO and order.shape[0] > 0:
        orders_by_counting(neg, order)
    return -1


@njit(nogil=True)
def transposed_times(x: Any, coef_t: Any, out_t: Any, sumsq: Any) -> None:  # pragma: no cover
    """``out_t[n] = Σ_k x[k, n] coef_t[k]`` in k order from 0.0, and ``sumsq = Σ_n out_t[n]²``.

    :func:`oltr.learners._linear_kernels.rows_times` with its coefficients read
    transposed, in place (no transposed copy): the step's ``Gᵀ = Xᵀ Cᵀ``, and
    the scores ``S = W Xᵀ`` from ``Wᵀ`` for long lists. Each block's squares
    are added to ``sumsq`` while the block is in cache, in row order, as a
    separate pass would (skipped when ``sumsq`` is empty).
    """
    d = x.shape[1]
    sumsq[:] = 0.0
    n = 0
    while n < d:
        rows = 4 if n + 4 <= d else 1
        if rows == 4:
            four_rows_times(x.T, coef_t, out_t, n, False)
        else:
            one_row_times(x.T, coef_t, out_t[n], n, False)
        if sumsq.shape[0] > 0:
            for r in range(n, n + rows):
                o = out_t[r]
                for b in range(o.shape[0]):
                    sumsq[b] += o[b] * o[b]
        n += rows


@njit(nogil=True)
def _rescaled_norm(weights_t: Any, b: int) -> float:  # pragma: no cover
    # ‖w_b‖ when Σ w² overflowed: rescale by the largest entry first (as _project_row).
    top = 0.0
    for n in range(weights_t.shape[0]):
        top = max(top, np.abs(weights_t[n, b]))
    total = 0.0
    for n in range(weights_t.shape[0]):
        v = weights_t[n, b] / top
        total += v * v
    return float(top * np.sqrt(total))


@njit(nogil=True)
def _move(
    weights_t: Any, grad: Any, by_rows: bool, step: Any, moves: Any, norm2: Any
) -> int:  # pragma: no cover
    # w_b ← w_b − step_b g_b where moves[b] (grad (B, d) if by_rows, else (d, B));
    # norm2[b] = ‖w_b‖² in n order; returns the first run whose weights are not finite.
    n_runs = weights_t.shape[1]
    norm2[:] = 0.0
    ok = np.ones(n_runs, dtype=np.bool_)
    for n in range(weights_t.shape[0]):
        w = weights_t[n]
        if by_rows:
            for b in range(n_runs):
                v = w[b] - step[b] * grad[b, n] if moves[b] else w[b]
                w[b] = v
                stored = w[b]  # float32 weights: rounded, and squared in float32 as row_sumsq does
                norm2[b] += stored * stored
                ok[b] &= np.abs(stored) <= _FLOAT_MAX
        else:
            g = grad[n]
            for b in range(n_runs):
                v = w[b] - step[b] * g[b] if moves[b] else w[b]
                w[b] = v
                stored = w[b]  # float32 weights: rounded, and squared in float32 as row_sumsq does
                norm2[b] += stored * stored
                ok[b] &= np.abs(stored) <= _FLOAT_MAX
    for b in range(n_runs):
        if not ok[b]:
            return b
    return -1


@njit(nogil=True)
def _shrink_and_average(
    weights_t: Any, radius: float, norm2: Any, average_t: Any, n_averaged: float, average: bool
) -> None:  # pragma: no cover
    # Projection w_b ← min{1, U/‖w_b‖} w_b (as _project_row), then ā ← ā + (w − ā)/n.
    n_runs = weights_t.shape[1]
    factor = np.ones(n_runs)
    shrink = np.zeros(n_runs, dtype=np.bool_)
    for b in range(n_runs):
        norm = np.sqrt(norm2[b])
        if not np.isfinite(norm):
            norm = _rescaled_norm(weights_t, b)
        if norm > radius:
            factor[b] = radius / norm
            shrink[b] = True
    project = shrink.any()
    if not (project or average):
        return
    for n in range(weights_t.shape[0]):
        w = weights_t[n]
        if project:
            for b in range(n_runs):
                w[b] = w[b] * factor[b] if shrink[b] else w[b]
        if average:
            a = average_t[n]
            for b in range(n_runs):
                a[b] += (w[b] - a[b]) / n_averaged


@njit(nogil=True)
def step_runs_minor(
    weights_t: Any,
    direction: Any,
    x: Any,
    eta: float,
    adaptive: bool,
    sumsq: Any,
    radius: float,
    average_t: Any,
    n_averaged: float,
    buffer_t: Any,
) -> int:  # pragma: no cover
    """:func:`oltr.learners._linear_kernels.fused_step` on runs-minor weights (d, B).

    ``direction`` is (B, m) as the estimators make it; ``buffer_t`` (d·B
    values) receives the step's sums, (d, B) or, from :data:`ROWS_FROM` items
    on, (B, d). ``average_t`` with no columns skips the running
    average. Same arithmetic, same result, same return; three passes over the
    weights instead of six: the gradient with its squared norms, the move with
    the weights' squared norms and finiteness, then the projection with the
    running average. Finiteness is read before the projection, which is the
    same: a factor in (0, 1] keeps finite weights finite and non-finite ones not.
    """
    m, d = x.shape
    n_runs = weights_t.shape[1]
    totals = np.empty(n_runs)
    by_rows = m >= ROWS_FROM
    if by_rows:  # long lists: sums vectorised along features, sparse estimates cheap
        coef = np.empty((n_runs, m), weights_t.dtype)
        for b in range(n_runs):
            for i in range(m):
                coef[b, i] = direction[b, i] if adaptive else eta * direction[b, i]
        grad = buffer_t.reshape((n_runs, d))
        rows_times(coef, x, grad, True)
        row_sumsq(grad, totals)
    else:
        coef_t = np.empty((m, n_runs), weights_t.dtype)
        for b in range(n_runs):
            for i in range(m):
                coef_t[i, b] = direction[b, i] if adaptive else eta * direction[b, i]
        grad = buffer_t
        transposed_times(x, coef_t, buffer_t, totals)
    step = np.ones(n_runs)  # a fixed step has η inside the gradient: w − 1·g = w − g
    moves = np.ones(n_runs, dtype=np.bool_)
    if adaptive:
        for b in range(n_runs):
            sumsq[b] += totals[b]
            moves[b] = sumsq[b] > 0.0
            step[b] = eta / np.sqrt(sumsq[b]) if moves[b] else 0.0
    norm2 = np.empty(n_runs)
    bad = _move(weights_t, grad, by_rows, step, moves, norm2)
    if radius == np.inf:
        norm2[:] = 0.0  # no projection: every factor stays 1
        radius = _FLOAT_MAX
    average = bad < 0 and average_t.shape[1] > 0
    _shrink_and_average(weights_t, radius, norm2, average_t, n_averaged, average)
    return bad
