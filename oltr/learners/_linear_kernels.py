"""Compiled loops of :mod:`oltr.learners.linear`: fused scores and fused projected steps.

Every entry of a product is a sum in index order of rounded products, started
at 0.0 (``a ← a + fl(w·x)``, no fused multiply-add, no reassociation:
``fastmath`` is off), so a run's row is the same bits whatever ``B`` is and
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

import numba
import numpy as np

__all__: list[str] = []

#: Runs per block in the batched products (they share the loads of X).
_RUN_BLOCK = 4
#: Lists of at least this many runs use a transposed copy of X for the scores.
_TRANSPOSE_FROM = 4


@numba.njit(cache=True, nogil=True)
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
                    return i * d + j
    return -1


@numba.njit(cache=True, nogil=True)
def _scores_direct(weights: Any, x: Any, out: Any) -> None:  # pragma: no cover
    # Few runs: eight items at a time, eight independent sums over the rows of X.
    n_runs, d = weights.shape
    m = x.shape[0]
    for b in range(n_runs):
        w = weights[b]
        i = 0
        while i + 8 <= m:
            x0, x1, x2, x3 = x[i], x[i + 1], x[i + 2], x[i + 3]
            x4, x5, x6, x7 = x[i + 4], x[i + 5], x[i + 6], x[i + 7]
            a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
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
            a = 0.0
            for j in range(d):
                a += w[j] * xi[j]
            out[b, i] = a
            i += 1


@numba.njit(cache=True, nogil=True)
def _scores_blocked(weights: Any, x: Any, xt: Any, out: Any) -> None:  # pragma: no cover
    # Many runs: X transposed once, then four runs per pass over it, vectorised over items.
    n_runs, d = weights.shape
    m = x.shape[0]
    for i in range(m):
        for j in range(d):
            xt[j, i] = x[i, j]
    b = 0
    while b + 4 <= n_runs:
        r0, r1, r2, r3 = out[b], out[b + 1], out[b + 2], out[b + 3]
        r0[:] = 0.0
        r1[:] = 0.0
        r2[:] = 0.0
        r3[:] = 0.0
        for j in range(d):
            w0, w1, w2, w3 = weights[b, j], weights[b + 1, j], weights[b + 2, j], weights[b + 3, j]
            xr = xt[j]
            for i in range(m):
                v = xr[i]
                r0[i] += w0 * v
                r1[i] += w1 * v
                r2[i] += w2 * v
                r3[i] += w3 * v
        b += 4
    while b < n_runs:
        r = out[b]
        r[:] = 0.0
        for j in range(d):
            w0 = weights[b, j]
            xr = xt[j]
            for i in range(m):
                r[i] += w0 * xr[i]
        b += 1


@numba.njit(cache=True, nogil=True)
def fused_scores(weights: Any, x: Any, xt: Any, out: Any, neg: Any) -> int:  # pragma: no cover
    """``out = W Xᵀ`` and ``neg = −out``, after checking ``x``; see :func:`scores_status`.

    Returns the flat index of the first non-finite feature (then nothing is
    computed), −2 when a score is not finite, else −1.
    """
    bad = first_bad_feature(x)
    if bad >= 0:
        return bad
    if weights.shape[0] >= _TRANSPOSE_FROM:
        _scores_blocked(weights, x, xt, out)
    else:
        _scores_direct(weights, x, out)
    n_runs, m = out.shape
    finite = True
    for b in range(n_runs):
        for i in range(m):
            s = out[b, i]
            neg[b, i] = -s
            finite &= np.abs(s) <= 1.7976931348623157e308
    return -1 if finite else -2


@numba.njit(cache=True, nogil=True)
def stable_ties(keys: Any, order: Any) -> None:  # pragma: no cover
    """Put every run of equal keys in ``order`` (sorted by ``keys``) in index order.

    After any ascending sort of finite keys, equal keys are adjacent; ordering
    each such group by item index gives exactly the stable sort.
    """
    n_runs, m = order.shape
    for b in range(n_runs):
        row = order[b]
        key = keys[b]
        start = 0
        while start < m:
            end = start + 1
            k0 = key[row[start]]
            while end < m and key[row[end]] == k0:
                end += 1
            if end - start > 1:  # insertion sort of the (usually tiny) group by index
                for p in range(start + 1, end):
                    v = row[p]
                    q = p - 1
                    while q >= start and row[q] > v:
                        row[q + 1] = row[q]
                        q -= 1
                    row[q + 1] = v
            start = end


@numba.njit(cache=True, nogil=True)
def sorted_rows(keys: Any, order: Any) -> None:  # pragma: no cover
    """``order[b] = argsort(keys[b])``, stable (a few runs: cheaper than a numpy call)."""
    for b in range(keys.shape[0]):
        order[b] = np.argsort(keys[b], kind="mergesort")


@numba.njit(cache=True, nogil=True)
def _accumulate(coef: Any, x: Any, buffer: Any) -> None:  # pragma: no cover
    # buffer[r] = Σ_i coef[r, i] x_i in item order, four runs per pass over X.
    n_runs, m = coef.shape
    d = x.shape[1]
    buffer[:, :] = 0.0
    b = 0
    while b + 4 <= n_runs:
        g0, g1, g2, g3 = buffer[b], buffer[b + 1], buffer[b + 2], buffer[b + 3]
        for i in range(m):
            c0, c1, c2, c3 = coef[b, i], coef[b + 1, i], coef[b + 2, i], coef[b + 3, i]
            if c0 == 0.0 and c1 == 0.0 and c2 == 0.0 and c3 == 0.0:
                continue
            xi = x[i]
            for j in range(d):
                v = xi[j]
                g0[j] += c0 * v
                g1[j] += c1 * v
                g2[j] += c2 * v
                g3[j] += c3 * v
        b += 4
    while b < n_runs:
        g = buffer[b]
        for i in range(m):
            c = coef[b, i]
            if c != 0.0:
                xi = x[i]
                for j in range(d):
                    g[j] += c * xi[j]
        b += 1


@numba.njit(cache=True, nogil=True)
def _project_row(w: Any, radius: float) -> None:  # pragma: no cover
    # w ← min{1, U/‖w‖} w, the sum of squares in index order, rescaled if it overflows.
    d = w.shape[0]
    total = 0.0
    for j in range(d):
        total += w[j] * w[j]
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


@numba.njit(cache=True, nogil=True)
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
    coef = np.empty((n_runs, m))
    for b in range(n_runs):
        for i in range(m):
            coef[b, i] = direction[b, i] if adaptive else eta * direction[b, i]
    _accumulate(coef, x, buffer)
    bad = -1
    for b in range(n_runs):
        w = weights[b]
        g = buffer[b]
        if adaptive:
            norm2 = 0.0
            for j in range(d):
                norm2 += g[j] * g[j]
            sumsq[b] += norm2
            if sumsq[b] > 0.0:
                step = eta / np.sqrt(sumsq[b])
                for j in range(d):
                    w[j] -= step * g[j]
        else:
            for j in range(d):
                w[j] -= g[j]
        if radius != np.inf:
            _project_row(w, radius)
        if bad < 0:
            for j in range(d):
                if not np.isfinite(w[j]):
                    bad = b
                    break
    if bad >= 0 or average.shape[0] == 0:
        return bad
    for b in range(n_runs):
        for j in range(d):
            average[b, j] += (weights[b, j] - average[b, j]) / n_averaged
    return -1


@numba.njit(cache=True, nogil=True)
def project_each(weights: Any, radius: float) -> None:  # pragma: no cover
    """``w_b ← Π_U(w_b)`` for every row, as :func:`fused_step` projects."""
    for b in range(weights.shape[0]):
        _project_row(weights[b], radius)
