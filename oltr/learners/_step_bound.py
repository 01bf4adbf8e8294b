"""The magnitudes a linear learner's step can take, checked before the step changes anything.

A linear learner steps along ``g_b = Σ_i d_bi x_i`` (``d`` the surrogate's
direction in score space, ``x_i`` the features of item ``i``):

* **The direction must be a number.** ``d`` is computed in the learner's dtype
  from the scores and the feedback; a grade so large that the surrogate's
  arithmetic overflows (squared loss: ``z_t = 2(s_t − R_t/p)`` with
  ``p ≥ γ/m``, so ``|R_t| ≲ γ·max/(2m)``; the exponentials of KL and ListNet
  refuse themselves, see :func:`oltr.surrogates._kernels.checked_exp`) makes it
  ``±inf``, and the step would write ``inf`` or NaN into the weights.
* **The AdaGrad-norm accumulator must stay finite** (``eta="adaptive"``, the
  default). It adds ``‖g_b‖²`` to ``G_b`` (in float64) and steps by
  ``U/√G_b``. Once ``G_b`` overflows to ``inf`` the step is ``U/∞ = 0`` in every
  later round: the weights never move again, silently. By the triangle and
  Cauchy–Schwarz inequalities
  ``‖g_b‖ ≤ Σ_i |d_bi| ‖x_i‖ ≤ ‖d_b‖₁ · √n_features · max_ij |x_ij| =: β_b``,
  so ``G_b + ‖g_b‖²`` is finite whenever ``β_b ≤ √(max − G_b)`` (about
  1.34e154 while ``G_b`` is small; ``max`` = 1.80e308, the largest float64).
  ``g_b`` itself is held in the learner's dtype, so ``β_b`` must also stay
  below that dtype's largest number (3.40e38 in float32). The check refuses
  what ``β_b`` does not bound: a sufficient condition, exact up to the factor
  ``√n_features · ‖d_b‖₁ / ‖g_b‖``, far above any features met in practice.

A fixed step (``eta`` a number) has no accumulator: weights that overflow
there are a :class:`~oltr.errors.NumericalError` of the step size (after the
step), not of the input.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.errors import InputError
from oltr.kernels import njit
from oltr.types import FloatArray

__all__ = ["FLOAT64_MAX", "check_step", "largest_abs"]

FLOAT64_MAX = float(np.finfo(np.float64).max)


#: Largest finite number of each dtype a learner computes in (``np.finfo`` is slow to call).
_DTYPE_MAX = {np.dtype(t): float(np.finfo(t).max) for t in (np.float64, np.float32)}


#: float64 bits without the sign, and the bits of +inf: |x| as an integer, and where NaN starts.
_SIGN_OFF = np.int64(0x7FFFFFFFFFFFFFFF)
_INF_BITS = np.int64(0x7FF0000000000000)


@njit(nogil=True)
def largest_abs(a: Any) -> float:  # pragma: no cover
    """``max |a_ij|`` of a 2-D float array in one pass; NaN if ``a`` holds one, 0.0 if empty.

    For float64 the pass compares bit patterns: with the sign bit cleared, IEEE 754
    numbers (zeros, subnormals, inf) order as their bits do as integers, and every
    NaN's bits lie above inf's. An integer maximum has no NaN rule to keep, so the
    loop vectorises (a branch per element made it the costliest part of a step's
    check on lists of 120 × 136). float32 takes the plain loop.
    """
    flat = np.ascontiguousarray(a).ravel()
    if flat.itemsize == 8:
        bits = flat.view(np.int64)
        top_bits = np.int64(0)
        for k in range(bits.shape[0]):
            v = bits[k] & _SIGN_OFF
            top_bits = v if v > top_bits else top_bits
        if top_bits > _INF_BITS:
            return np.nan
        return float(np.array([top_bits]).view(np.float64)[0])
    top = 0.0
    for k in range(flat.shape[0]):
        v = abs(flat[k])
        if not v <= top:  # larger, or NaN
            if v != v:
                return float(v)
            top = v
    return top


@njit(nogil=True)
def _step_status(
    direction: Any, x: Any, sumsq: Any, adaptive: bool, dtype_max: float
) -> int:  # pragma: no cover
    """0: the step is safe; 1: the direction is not finite; 2: the cheap bound fails (look closer).

    One compiled pass: the check runs every round, so it must cost next to nothing.
    """
    top = largest_abs(direction)
    if not top <= dtype_max:  # NaN or inf
        return 1
    if not adaptive or x.shape[0] == 0 or x.shape[1] == 0:
        return 0
    largest = largest_abs(x)
    g = 0.0
    for b in range(sumsq.shape[0]):
        if not sumsq[b] <= g:
            g = sumsq[b]
    room = FLOAT64_MAX - g
    if not room >= 0.0:
        return 2
    limit = min(dtype_max, math.sqrt(room))
    # ‖d_b‖₁ ≤ m·max|d|: one bound for every run first, the exact one only near the limit
    if direction.shape[1] * top * math.sqrt(x.shape[1]) * largest <= limit:
        return 0
    return 2


def check_step(
    learner: str,
    t: int,
    direction: NDArray[np.floating[Any]],
    x: NDArray[np.floating[Any]],
    sumsq: FloatArray,
    adaptive: bool,
) -> None:
    """Raise :class:`InputError` for a step the learner's arithmetic cannot hold (module docs).

    ``direction`` (B, m) and ``x`` (m, d) are in the learner's dtype; ``sumsq``
    (B,) is the AdaGrad-norm accumulator ``G``. Nothing is changed.
    """
    dtype_max = _DTYPE_MAX.get(x.dtype) or float(np.finfo(x.dtype).max)
    status = _step_status(direction, x, sumsq, adaptive, dtype_max)
    if status == 0:
        return
    if status == 1:
        run = int(np.argmin(np.isfinite(direction).all(axis=1)))
        raise InputError(
            f"{learner}: the step direction of run {run} overflowed in round {t}: the grades "
            "(or the scores, features times weights) are beyond what the surrogate's arithmetic "
            f"holds in {direction.dtype} (largest number "
            f"{float(np.finfo(direction.dtype).max):.3g}); rescale the grades or normalise the "
            "features"
        )
    largest = float(largest_abs(x))
    spread = math.sqrt(x.shape[1]) * largest
    with np.errstate(over="ignore"):
        beta = np.abs(direction).sum(axis=1, dtype=np.float64) * spread
    for b in range(beta.shape[0]):
        limit = min(math.sqrt(max(FLOAT64_MAX - float(sumsq[b]), 0.0)), dtype_max)
        if beta[b] > limit:
            raise InputError(
                f"{learner}: the step of round {t} is too large for the adaptive step size: its "
                f"gradient bound ‖d‖₁·√n_features·max|x| = {beta[b]:.3g} (run {b}) exceeds "
                f"{limit:.3g}, beyond which Σ‖g‖² overflows and the weights stop moving "
                f"(largest |feature| {largest:.3g}, ‖d‖₁ {beta[b] / spread:.3g}); normalise the "
                "features or rescale the grades"
            )
