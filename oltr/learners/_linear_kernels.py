"""Compiled loops of :mod:`oltr.learners.linear`: fused scores and fused projected steps.

Every entry of a product is a sum in index order of rounded products, started
at 0.0 (``a ← a + fl(w·x)``, no fused multiply-add, no reassociation:
``fastmath`` is off), in the precision of the arrays (float64, or float32 for
``dtype="float32"`` learners, whose sums of squares and steps are float64
expressions rounded once when stored), so a run's row is the same bits whatever ``B`` is and
however the loops are blocked. Blocking four runs together only shares the
loads of ``X`` between them; each lane still performs its own sequence.
Adding ``fl(0·x) = ±0`` to such a sum never changes it (the sum is never −0),
so skipping zero coefficients is exact too.

The kernels also take over the checks that used to be separate numpy passes:
the scores kernel reports the first non-finite feature, the step kernel the
first run whose weights stopped being finite.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oltr.kernels import njit
from oltr.permutations.counting import COUNTING_UP_TO, orders_by_counting

__all__: list[str] = []

#: Lists of at least this many runs use a transposed copy of X for the scores.
_TRANSPOSE_FROM = 4


@njit(nogil=True)
def first_bad_feature(x: Any) -> int:  # pragma: no cover
    """Flat C-order index of the first non-finite entry of ``x`` (m, d), or −1."""
    m, d = x.shape
    for i in range(m):
        bad = False
        for j in range(d):
            bad |= not (np.abs(x[i, j]) <= 1.7976931348623157e308)
        if bad:
            for j in range(d):
                if not np.isfinite(x[i, j]):
                    return int(i * d + j)
    return -1


@njit(nogil=True)
def _scores_direct(weights: Any, x: Any, out: Any) -> None:  # pragma: no cover
    # Few runs: eight items at a time, eight independent sums over the rows of X.
    n_runs, d = weights.shape
    m = x.shape[0]
    zero = out.dtype.type(0.0)  # float32 weights sum in float32, as rows_times does
    for b in range(n_runs):
        w = weights[b]
        i = 0
        while i + 8 <= m:
            x0, x1, x2, x3 = x[i], x[i + 1], x[i + 2], x[i + 3]
            x4, x5, x6, x7 = x[i + 4], x[i + 5], x[i + 6], x[i + 7]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = zero
            for j in range(d):
                v = w[j]
                a0 += v * x0[j]
                a1 += v * x1[j]
                a2 += v * x2[j]
                a3 += v * x3[j]
                a4 += v * x4[j]
                a5 += v * x5[j]
                a6 += v * x6[j]
                a7 += v * x7[j]
            out[b, i], out[b, i + 1], out[b, i + 2], out[b, i + 3] = a0, a1, a2, a3
            out[b, i + 4], out[b, i + 5], out[b, i + 6], out[b, i + 7] = a4, a5, a6, a7
            i += 8
        while i < m:
            xi = x[i]
            a = zero
            for j in range(d):
                a += w[j] * xi[j]
            out[b, i] = a
            i += 1


@njit(nogil=True)
def _sparse_row(a: Any, mat: Any, o: Any, r: int) -> None:  # pragma: no cover
    # o = Σ_k a[r, k] mat[k] over the non-zero a[r, k] only, in k order.
    o[:] = 0.0
    for k in range(a.shape[1]):
        c = a[r, k]
        if c != 0.0:
            m = mat[k]
            for n in range(mat.shape[1]):
                o[n] += c * m[n]


@njit(nogil=True)
def one_row_times(a: Any, mat: Any, o: Any, r: int, skip: bool) -> None:  # pragma: no cover
    """``o = Σ_k a[r, k] mat[k]``, four steps of k per expression (see :func:`rows_times`)."""
    n_inner, n_cols = mat.shape
    o[:] = 0.0
    k = 0
    while k + 4 <= n_inner:
        a0, a1, a2, a3 = a[r, k], a[r, k + 1], a[r, k + 2], a[r, k + 3]
        if not skip or a0 != 0.0 or a1 != 0.0 or a2 != 0.0 or a3 != 0.0:
            m0, m1, m2, m3 = mat[k], mat[k + 1], mat[k + 2], mat[k + 3]
            for n in range(n_cols):
                o[n] = (((o[n] + a0 * m0[n]) + a1 * m1[n]) + a2 * m2[n]) + a3 * m3[n]
        k += 4
    while k < n_inner:
        a0 = a[r, k]
        m0 = mat[k]
        for n in range(n_cols):
            o[n] += a0 * m0[n]
        k += 1


@njit(nogil=True)
def _all_zero(a: Any, b: int, k: int) -> bool:  # pragma: no cover
    for r in range(b, b + 4):
        for u in range(k, k + 4):
            if a[r, u] != 0.0:
                return False
    return True


@njit(nogil=True)
def four_rows_times(a: Any, mat: Any, out: Any, b: int, skip: bool) -> None:  # pragma: no cover
    """Rows b..b+3 of :func:`rows_times`: ``out[r] = Σ_k a[r, k] mat[k]``, four k a term.

    ``a`` may be a transposed view (the runs-minor kernels pass ``Xᵀ`` or
    ``Wᵀᵀ``): its 16 coefficients per step are scalar loads either way, while
    the loop over ``mat``'s columns is the vectorised one.
    """
    n_inner, n_cols = mat.shape
    o0, o1, o2, o3 = out[b], out[b + 1], out[b + 2], out[b + 3]
    o0[:] = 0.0
    o1[:] = 0.0
    o2[:] = 0.0
    o3[:] = 0.0
    k = 0
    while k + 4 <= n_inner:
        if skip and _all_zero(a, b, k):
            k += 4
            continue
        a00, a01, a02, a03 = a[b, k], a[b, k + 1], a[b, k + 2], a[b, k + 3]
        a10, a11, a12, a13 = a[b + 1, k], a[b + 1, k + 1], a[b + 1, k + 2], a[b + 1, k + 3]
        a20, a21, a22, a23 = a[b + 2, k], a[b + 2, k + 1], a[b + 2, k + 2], a[b + 2, k + 3]
        a30, a31, a32, a33 = a[b + 3, k], a[b + 3, k + 1], a[b + 3, k + 2], a[b + 3, k + 3]
        m0, m1, m2, m3 = mat[k], mat[k + 1], mat[k + 2], mat[k + 3]
        for n in range(n_cols):
            v0, v1, v2, v3 = m0[n], m1[n], m2[n], m3[n]
            o0[n] = (((o0[n] + a00 * v0) + a01 * v1) + a02 * v2) + a03 * v3
            o1[n] = (((o1[n] + a10 * v0) + a11 * v1) + a12 * v2) + a13 * v3
            o2[n] = (((o2[n] + a20 * v0) + a21 * v1) + a22 * v2) + a23 * v3
            o3[n] = (((o3[n] + a30 * v0) + a31 * v1) + a32 * v2) + a33 * v3
        k += 4
    while k < n_inner:
        a00, a10, a20, a30 = a[b, k], a[b + 1, k], a[b + 2, k], a[b + 3, k]
        m0 = mat[k]
        for n in range(n_cols):
            v0 = m0[n]
            o0[n] += a00 * v0
            o1[n] += a10 * v0
            o2[n] += a20 * v0
            o3[n] += a30 * v0
        k += 1


@njit(nogil=True)
def rows_times(a: Any, mat: Any, out: Any, skip: bool) -> None:  # pragma: no cover
    """``out[b, n] = Σ_k a[b, k] mat[k, n]``, every sum in k order from 0.0.

    Four rows of ``a`` share each pass over ``mat``, and four steps of k are
    written as one expression ``(((o + a₀v₀) + a₁v₁) + a₂v₂) + a₃v₃``: the same
    roundings in the same order as the plain loop, with a quarter of the loads
    and stores of ``out``, vectorised over n. With ``skip``, rows with few
    non-zero coefficients (top-k estimates) take a sparse loop and blocks of
    zeros are skipped (which changes no sum); without, every term is added.
    """
    n_rows, n_inner = a.shape
    b = 0
    while b < n_rows:
        block = min(4, n_rows - b)
        nonzero = 0
        if skip:
            for r in range(b, b + block):
                for k in range(n_inner):
                    nonzero += a[r, k] != 0.0
        if skip and 4 * nonzero < block * n_inner:  # under a quarter non-zero
            for r in range(b, b + block):
                _sparse_row(a, mat, out[r], r)
        elif block < 4:
            for r in range(b, b + block):
                one_row_times(a, mat, out[r], r, skip)
        else:
            four_rows_times(a, mat, out, b, skip)
        b += block


@njit(nogil=True)
def _scores_into(weights: Any, x: Any, xt: Any, out: Any) -> None:  # pragma: no cover
    """``out = W Xᵀ``: four runs or more through ``xt`` (d, m), filled with ``Xᵀ`` so that the
    sums over features run along rows (:func:`rows_times`); fewer directly, row by row."""
    if out.shape[0] >= _TRANSPOSE_FROM:
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                xt[j, i] = x[i, j]
        rows_times(weights, xt, out, False)
    else:
        _scores_direct(weights, x, out)


@njit(nogil=True)
def fused_scores(
    weights: Any, x: Any, xt: Any, out: Any, neg: Any, order: Any
) -> int:  # pragma: no cover
    """``out = W Xᵀ``, ``neg = −out`` and, where :func:`sorts_here`, ``order``.

    Returns the flat index of the first non-finite feature, −2 when a score is
    not finite although the features are, else −1 (``order`` then holds the
    stable ascending order of ``neg`` if it has rows and :func:`sorts_here`; the
    caller sorts otherwise). The features need no separate pass: every product
    ``w_j x_ij`` enters the sums (zero weights too), and the weights are finite,
    so a non-finite feature makes its score NaN or ±∞; only then is ``x`` searched.
    """
    n_runs, m = out.shape
    _scores_into(weights, x, xt, out)
    finite = True
    for b in range(n_runs):
        for i in range(m):
            s = out[b, i]
            neg[b, i] = -s
            finite &= np.abs(s) <= 1.7976931348623157e308
    if not finite:
        bad = first_bad_feature(x)
        return bad if bad >= 0 else -2
    if order.shape[0] == 0:
        return -1
    if m <= COUNTING_UP_TO:
        orders_by_counting(neg, order)
    elif n_runs < _TRANSPOSE_FROM:
        for b in range(n_runs):
            order[b] = np.argsort(neg[b], kind="mergesort")
    return -1


def sorts_here(n_runs: int, m: int) -> bool:
    """Whether :func:`fused_scores` orders B = ``n_runs`` lists of ``m`` items itself.

    Lists of up to :data:`~oltr.permutations.counting.COUNTING_UP_TO` items are
    ordered by counting, longer ones of fewer than four runs by a merge sort; a
    larger batch of long lists is left to numpy's vectorised sort and a tie pass.
    :func:`oltr.learners._runs_minor_kernels.scores_runs_minor` counts the same
    short lists and leaves the long ones to its caller (it serves eight runs or more).
    """
    return m <= COUNTING_UP_TO or n_runs < _TRANSPOSE_FROM


@njit(nogil=True)
def plain_scores(weights: Any, x: Any, out: Any) -> int:  # pragma: no cover
    """``out = W Xᵀ`` (row-major weights), unsorted; returns as :func:`fused_scores` does."""
    n_runs, m = out.shape
    xt = np.empty((x.shape[1], m) if n_runs >= _TRANSPOSE_FROM else (0, 0), x.dtype)
    _scores_into(weights, x, xt, out)
    finite = True
    for b in range(n_runs):
        for i in range(m):
            finite &= np.abs(out[b, i]) <= 1.7976931348623157e308
    if not finite:
        bad = first_bad_feature(x)
        return bad if bad >= 0 else -2
    return -1


@njit(nogil=True)
def stable_ties(keys: Any, order: Any) -> None:  # pragma: no cover
    """Put every run of equal keys in ``order`` (sorted by ``keys``) in index order.

    After any ascending sort of finite keys, equal keys are adjacent; ordering
    each such group by item index gives exactly the stable sort. One compare
    per position when there are no ties.
    """
    n_runs, m = order.shape
    for b in range(n_runs):
        row = order[b]
        key = keys[b]
        prev = key[row[0]]
        p = 1
        while p < m:
            cur = key[row[p]]
            if cur != prev:
                prev = cur
                p += 1
                continue
            start, end = p - 1, p + 1  # a group of equal keys: find its end ...
            while end < m and key[row[end]] == prev:
                end += 1
            for r in range(start + 1, end):  # ... and insertion-sort it by index
                v = row[r]
                q = r - 1
                while q >= start and row[q] > v:
                    row[q + 1] = row[q]
                    q -= 1
                row[q + 1] = v
            if end < m:
                prev = key[row[end]]
            p = end + 1


@njit(nogil=True)
def row_sumsq(rows: Any, out: Any) -> None:  # pragma: no cover
    # out[b] = Σ_j rows[b, j]² in index order; eight rows at a time (independent chains).
    n_rows, d = rows.shape
    b = 0
    while b + 8 <= n_rows:
        r0, r1, r2, r3 = rows[b], rows[b + 1], rows[b + 2], rows[b + 3]
        r4, r5, r6, r7 = rows[b + 4], rows[b + 5], rows[b + 6], rows[b + 7]
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
        for j in range(d):
            s0 += r0[j] * r0[j]
            s1 += r1[j] * r1[j]
            s2 += r2[j] * r2[j]
            s3 += r3[j] * r3[j]
            s4 += r4[j] * r4[j]
            s5 += r5[j] * r5[j]
            s6 += r6[j] * r6[j]
            s7 += r7[j] * r7[j]
        out[b], out[b + 1], out[b + 2], out[b + 3] = s0, s1, s2, s3
        out[b + 4], out[b + 5], out[b + 6], out[b + 7] = s4, s5, s6, s7
        b += 8
    while b < n_rows:
        r0 = rows[b]
        s0 = 0.0
        for j in range(d):
            s0 += r0[j] * r0[j]
        out[b] = s0
        b += 1


@njit(nogil=True)
def _project_row(w: Any, radius: float, total: float) -> None:  # pragma: no cover
    # w ← min{1, U/‖w‖} w given total = Σ w_j² in index order, rescaled if that overflowed.
    d = w.shape[0]
    norm = np.sqrt(total)
    if not np.isfinite(norm):
        top = 0.0
        for j in range(d):
            top = max(top, np.abs(w[j]))
        total = 0.0
        for j in range(d):
            v = w[j] / top
            total += v * v
        norm = top * np.sqrt(total)
    if norm > radius:
        f = radius / norm
        for j in range(d):
            w[j] *= f


@njit(nogil=True)
def fused_step(
    weights: Any,
    direction: Any,
    x: Any,
    eta: float,
    adaptive: bool,
    sumsq: Any,
    radius: float,
    average: Any,
    n_averaged: float,
    buffer: Any,
) -> int:  # pragma: no cover
    """One projected step of every run, its finiteness check and the running average.

    Fixed step: ``g = Σ_i fl(η d_i) x_i``, ``w ← w − g``. Adaptive (AdaGrad-norm):
    ``g = Σ_i d_i x_i``, ``G += ‖g‖²``, ``w ← w − (η/√G) g`` (η is the scale U;
    a run with G = 0 does not move). Then ``w ← Π_U(w)`` (skipped for U = ∞).
    Returns the first run whose weights are not finite (then the average is
    left as it was), else −1 after ``ā ← ā + (w − ā)/n`` (skipped when
    ``average`` has no rows).
    """
    n_runs, d = weights.shape
    m = x.shape[0]
    coef = np.empty((n_runs, m), weights.dtype)
    for b in range(n_runs):
        for i in range(m):
            coef[b, i] = direction[b, i] if adaptive else eta * direction[b, i]
    rows_times(coef, x, buffer, True)
    totals = np.empty(n_runs)
    if adaptive:
        row_sumsq(buffer, totals)
        for b in range(n_runs):
            sumsq[b] += totals[b]
            if sumsq[b] > 0.0:
                step = eta / np.sqrt(sumsq[b])
                w, g = weights[b], buffer[b]
                for j in range(d):
                    w[j] -= step * g[j]
    else:
        for b in range(n_runs):
            w, g = weights[b], buffer[b]
            for j in range(d):
                w[j] -= g[j]
    if radius != np.inf:
        row_sumsq(weights, totals)
        for b in range(n_runs):
            _project_row(weights[b], radius, totals[b])
    for b in range(n_runs):
        w = weights[b]
        ok = True
        for j in range(d):
            ok &= np.abs(w[j]) <= 1.7976931348623157e308
        if not ok:
            return b
    if average.shape[0] == 0:
        return -1
    for b in range(n_runs):
        for j in range(d):
            average[b, j] += (weights[b, j] - average[b, j]) / n_averaged
    return -1


@njit(nogil=True)
def project_each(weights: Any, radius: float) -> None:  # pragma: no cover
    """``w_b ← Π_U(w_b)`` for every row, as :func:`fused_step` projects."""
    totals = np.empty(weights.shape[0])
    row_sumsq(weights, totals)
    for b in range(weights.shape[0]):
        _project_row(weights[b], radius, totals[b])
