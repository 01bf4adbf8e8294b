"""Small array helpers shared by the surrogate modules (no validation).

And the compiled top-k estimators the learners call every round: the same
arithmetic as the numpy ``_estimate`` of each surrogate (tests compare them bit
for bit), without its temporaries.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.errors import InputError
from oltr.kernels import njit

__all__ = [
    "checked_exp",
    "f64",
    "gather",
    "one_hot",
    "ranksvm_estimate",
    "squared_estimate",
]


def f64(a: object) -> NDArray[np.float64]:
    """View an array expression as a float64 array (no copy when it already is one)."""
    return np.asarray(a, dtype=np.float64)


def one_hot(items: NDArray[np.intp], n_items: int) -> NDArray[np.float64]:
    """Standard basis vectors e_i of R^m for item indices of shape (...): shape (..., m)."""
    return f64(np.arange(n_items) == items[..., None])


def gather(values: NDArray[np.float64], items: NDArray[np.intp]) -> NDArray[np.float64]:
    """``values[..., items]`` row by row, broadcasting the leading axes of both.

    ``values`` has shape (..., m) and ``items`` (..., ℓ); the result has the
    broadcast leading shape + (ℓ,).
    """
    lead = np.broadcast_shapes(values.shape[:-1], items.shape[:-1])
    v = np.broadcast_to(values, lead + values.shape[-1:])
    it = np.broadcast_to(items, lead + items.shape[-1:])
    return np.take_along_axis(v, it, axis=-1)


def checked_exp(x: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    """``exp(x)``, raising :class:`InputError` instead of overflowing to inf.

    ``exp(x)`` is finite exactly for ``x ≤ log(max float64) ≈ 709.78``: the bound
    on the scores (``|s_i| ≤ ‖w‖‖x_i‖ ≤ U‖x_i‖``) and, for the KL-modified
    ListNet, on the grades, whose exponentials give the target distribution.
    """
    with np.errstate(over="ignore"):
        out = np.exp(x)
    if not np.isfinite(out).all():
        limit = np.log(np.finfo(np.float64).max)
        raise InputError(
            f"{what}: exp overflows float64 for arguments above {limit:.2f} (largest here "
            f"{np.max(x):.6g}), so the result is not representable; keep scores bounded "
            "(RTop-kF projects w onto a ball of radius U, so |s_i| <= R_D * U): features on "
            "a raw scale (values far outside [0, 1], as in MSLR-WEB) give such scores, so "
            "load them min-max scaled per query (normalize='auto', the default of "
            "letor-stream-v1 and [heldout], or normalize=true)"
        )
    return out


@njit(nogil=True)
def squared_estimate(
    scores: Any, orders: Any, observed: Any, gamma: float, own: Any, out: Any
) -> None:  # pragma: no cover
    """``SquaredLoss._estimate`` for every run, written into ``out`` (same roundings).

    ``z = 2s`` except at the shown top item t, ``z_t = 2(s_t − R_t / p)`` with
    ``p = (1 − γ)·1(t = own top) + γ/m``; ``own`` holds each run's own order (B, ≥ 1).
    """
    n_runs, m = scores.shape
    for b in range(n_runs):
        top = orders[b, 0]
        p = (1.0 - gamma) * (1.0 if own[b, 0] == top else 0.0) + gamma / m
        weight = observed[b, 0] / p
        for i in range(m):
            out[b, i] = 2.0 * scores[b, i]
        out[b, top] = 2.0 * (scores[b, top] - weight)


@njit(nogil=True)
def ranksvm_estimate(
    floor: float, scores: Any, orders: Any, observed: Any, gamma: float, own: Any, out: Any
) -> None:  # pragma: no cover
    """``RankSVMHinge._estimate`` for every run, written into ``out`` (same roundings); the
    list size's ``floor`` comes first, so that ``partial(ranksvm_estimate, floor)`` takes the
    arguments of :func:`squared_estimate`.

    With the shown top pair (i, j): ``c = 1(R_i > R_j)1(1 + s_j > s_i) −
    1(R_j > R_i)1(1 + s_i > s_j)``, ``P = (1 − γ)·1({i, j} = own top pair) +
    γ·floor`` (floor = 1/C(m, 2)), and ``z = (c/P)(e_j − e_i)``.
    """
    n_runs, m = scores.shape
    for b in range(n_runs):
        i, j = orders[b, 0], orders[b, 1]
        s_i, s_j = scores[b, i], scores[b, j]
        r_i, r_j = observed[b, 0], observed[b, 1]
        forward = 1.0 if (r_i > r_j) and (1.0 + s_j > s_i) else 0.0
        backward = 1.0 if (r_j > r_i) and (1.0 + s_i > s_j) else 0.0
        a, c = own[b, 0], own[b, 1]
        same = (a == i and c == j) or (a == j and c == i)
        den = (1.0 - gamma) * (1.0 if same else 0.0) + gamma * floor
        v = (forward - backward) / den
        for n in range(m):
            out[b, n] = v * 0.0
        out[b, j] = v
        out[b, i] = -v


@njit(nogil=True)
def shifted_pair(s: Any, r: Any, out: Any) -> None:  # pragma: no cover
    """``out[0] = s − max(s)`` and ``out[1] = r − max(r)`` row by row; s, r (n, m), out (2, n, m).

    The first step of a numerically safe softmax, as numpy writes it
    (``v - v.max(axis=-1, keepdims=True)``): the maximum is exact in any order
    and the subtraction is one rounding, so the bits are numpy's.
    """
    n, m = s.shape
    for i in range(n):
        top_s, top_r = s[i, 0], r[i, 0]
        for j in range(1, m):
            top_s = max(top_s, s[i, j])
            top_r = max(top_r, r[i, j])
        for j in range(m):
            out[0, i, j] = s[i, j] - top_s
            out[1, i, j] = r[i, j] - top_r


@njit(nogil=True)
def shifted_pair_checked(s: Any, r: Any, out: Any) -> bool:  # pragma: no cover
    """:func:`shifted_pair`, for grades ``r`` not yet checked: False (``out`` unfinished)
    as soon as a grade is not a finite number >= 0 (NaN fails both comparisons)."""
    n, m = s.shape
    for i in range(n):
        for j in range(m):
            if not (0.0 <= r[i, j] < np.inf):
                return False
    shifted_pair(s, r, out)
    return True


@njit(nogil=True)
def normalized_difference(e: Any, totals: Any, out: Any) -> None:  # pragma: no cover
    """``out = e[0] / totals[0] − e[1] / totals[1]`` row by row (two softmaxes' difference)."""
    n, m = out.shape
    for i in range(n):
        a, b = totals[0, i], totals[1, i]
        for j in range(m):
            out[i, j] = e[0, i, j] / a - e[1, i, j] / b


@njit(nogil=True)
def shifted_pair_shared(s: Any, r: Any, out: Any) -> int:  # pragma: no cover
    """:func:`shifted_pair_checked`, telling whether every run has the first run's grades.

    Returns −1 (``out`` unfinished) when a grade is not a finite number >= 0;
    1 when there are several non-empty rows and every one equals the first, after
    writing ``out[0]`` in full and ``out[1, 0]`` only (the other rows of
    ``out[1]`` would repeat it); 0 after writing ``out`` in full. Rows compare
    with ``==``, so grades differing only in the sign of zero count as equal:
    their shifted values differ at most in a zero's sign, which ``exp`` maps to
    the same 1.0, so every later bit is the same.
    """
    n, m = s.shape
    same = n > 1 and m > 0
    for i in range(1, n):
        for j in range(m):
            if r[i, j] != r[0, j]:  # NaN too: the full check below then refuses it
                same = False
                break
        if not same:
            break
    if not same:
        return 0 if shifted_pair_checked(s, r, out) else -1
    top_r = r[0, 0]
    for j in range(m):
        if not (0.0 <= r[0, j] < np.inf):
            return -1
        top_r = max(top_r, r[0, j])
    for j in range(m):
        out[1, 0, j] = r[0, j] - top_r
    for i in range(n):
        top_s = s[i, 0]
        for j in range(1, m):
            top_s = max(top_s, s[i, j])
        for j in range(m):
            out[0, i, j] = s[i, j] - top_s
    return 1


@njit(nogil=True)
def shared_difference(
    e: Any, totals: Any, e_row: Any, total_row: float, out: Any
) -> None:  # pragma: no cover
    """``out[i] = e[i] / totals[i] − e_row / total_row`` for every row i, ``e_row`` overwritten.

    :func:`normalized_difference` when every row's second softmax is the same
    row: each division is the same operation on the same numbers, made once.
    """
    n, m = out.shape
    for j in range(m):
        e_row[j] = e_row[j] / total_row
    for i in range(n):
        a = totals[i]
        for j in range(m):
            out[i, j] = e[i, j] / a - e_row[j]
