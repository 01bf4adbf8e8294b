"""The pointwise squared loss and its top-1 gradient estimator (CT16 §4.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from oltr.surrogates._kernels import f64, one_hot, squared_estimate
from oltr.surrogates._validation import FeedbackArrays
from oltr.surrogates.base import Surrogate, TrustedEstimator
from oltr.surrogates.decomposition import DecomposedGradient
from oltr.surrogates.exploration import _position_prob

__all__ = ["SquaredLoss"]


def _components(
    s: NDArray[np.float64], items: NDArray[np.intp], values: NDArray[np.float64]
) -> NDArray[np.float64]:
    # h_i(R_i) = -2 R_i e_i: the relevance part of 2(s - R); 2s is known exactly.
    return -2.0 * values[..., 0, None] * one_hot(items[..., 0], s.shape[-1])


def _known(s: NDArray[np.float64]) -> NDArray[np.float64]:
    return 2.0 * s


@dataclass(frozen=True)
class SquaredLoss(Surrogate):
    """Pointwise squared loss φ_sq(s, R) = ‖s − R‖²₂, estimable from top-1 feedback.

    .. math::
        φ_{sq}(s, R) = \\sum_i (s_i − R_i)^2, \\qquad ∇_s φ_{sq} = 2(s − R),

    and from the top shown item σ(1) with relevance R_σ(1) (CT16 §4.1)

    .. math:: \\tilde z = 2\\Big(s − \\frac{R_{σ(1)}\\, e_{σ(1)}}{p(σ(1))}\\Big),

    where p(σ(1)) = (1 − γ)·1(σ(1) = σ_s(1)) + γ/m is the probability that
    σ(1) is shown on top (§4.2). Only ``R`` is estimated; ``2s`` is known.

    References
    ----------
    Chaudhuri & Tewari (2016), §4.1 "Pointwise Method", §4.2, Lemma 5;
    Cossock & Zhang (2006).

    Examples
    --------
    >>> sq = SquaredLoss()
    >>> float(sq.value([1.0, 0.0], [0, 2]))  # 1² + 2²
    5.0
    >>> sq.grad([1.0, 0.0], [0, 2])
    array([ 2., -4.])
    >>> sq.estimate_grad([1.0, 0.0], order=[1, 0], observed=[2], gamma=0.5)  # p = 0.25
    array([  2., -16.])
    """

    name = "squared"
    kind = "loss"
    min_k = 1
    feedback_reason = "its gradient decomposes over single relevance coordinates (CT16 §4.1)"

    def _value(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        return f64(np.square(s - r).sum(axis=-1))

    def _grad(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        return 2.0 * (s - r)

    def _estimate(self, fb: FeedbackArrays) -> NDArray[np.float64]:
        top = fb.order[..., 0]
        p = _position_prob(fb.exploit_top, top, 0, fb.gamma, fb.n_items)
        weight = fb.observed[..., 0] / p
        return 2.0 * (fb.scores - weight[..., None] * one_hot(top, fb.n_items))

    def trusted_estimator(self, n_items: int) -> TrustedEstimator:
        """:func:`squared_estimate`, for every list size."""
        return squared_estimate

    @property
    def decomposition(self) -> DecomposedGradient:
        """2(s − R) = 2s + Σ_i (−2 R_i e_i): known part 2s, one-coordinate components."""
        return DecomposedGradient(_components, arity=1, known=_known)

    def _paper_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # C^sq = m^4 R_D^4 U^2 R_max^2 (proof of Lemma 5). Its step
        # m R_D U + R_max/p <= m R_D U R_max / p, and the factor 2 of 2(s - ...) it
        # drops, need (m R_D U - 2)(R_max - 2) >= 4 with both factors positive
        # (e.g. m R_D U >= 4 and R_max >= 4); outside that regime it can fail.
        return m**4 * rd**4 * u**2 * rmax**2 / gamma

    def _general_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # ‖Xᵀf‖ <= R_D ‖f‖₁ (Lemma 4) and ‖f‖₁ <= 2(m R_D U + R_max / p(σ(1))); then
        # E <= 4 R_D² (a² + 2abm + b² Σ_i 1/p(i)) with a = m R_D U, b = R_max and
        # p(i) >= γ/m, which is <= 4 R_D² (a + m b)² / γ for γ <= 1.
        return 4.0 * m**2 * rd**2 * (rd * u + rmax) ** 2 / gamma
