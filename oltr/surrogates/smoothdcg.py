"""SmoothDCG@1, a non-convex gain, and its top-1 gradient estimator (CT16 §4.1.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import softmax

from oltr.metrics import exp2_gain
from oltr.surrogates._kernels import f64, gather, one_hot
from oltr.surrogates._validation import FeedbackArrays
from oltr.surrogates.base import Surrogate
from oltr.surrogates.decomposition import DecomposedGradient
from oltr.surrogates.exploration import _position_prob

__all__ = ["SCORE_SCALE_EPS", "SmoothDCG", "score_scale_eps"]

#: ε / (U σ_X) of the default ``eps="auto"``: the smoothing in units of the list's score scale.
SCORE_SCALE_EPS = 10.0


def _gain(relevance: NDArray[np.float64]) -> NDArray[np.float64]:
    """G(r) = 2^r − 1 (CT16 §2), refusing grades whose gain overflows float64."""
    with np.errstate(over="ignore"):
        g = f64(exp2_gain(relevance))
    if not np.isfinite(g).all():
        raise ValueError(
            f"DCG gain 2^r - 1 overflows float64 for grades >= 1024, got grade {np.max(relevance)}"
        )
    return g


@dataclass(frozen=True)
class SmoothDCG(Surrogate):
    """SmoothDCG@1 with smoothing ε: a *gain*, estimable from top-1 feedback.

    With the tempered softmax q = softmax(s / ε) and G(r) = 2^r − 1,

    .. math::
        φ_{SD}(s, R) = \\sum_i G(R_i)\\, q_i,
        \\qquad ∇_s φ_{SD} = \\sum_i h_{s,i}(R_i),\\quad
        h_{s,i}(R_i) = \\frac{G(R_i)}{ε}\\, q_i\\, (e_i − q),

    i.e. ∂φ/∂s_j = q_j (G(R_j) − Σ_i G(R_i) q_i) / ε. As ε → 0 the value tends
    to G of the top-scored item, DCG@1. From the top shown item (CT16 §4.1.1)

    .. math:: \\tilde z = \\frac{G(R_{σ(1)})}{p(σ(1))}\\, \\frac{q_{σ(1)}}{ε}\\, (e_{σ(1)} − q).

    SmoothDCG is maximised: ``kind == "gain"`` and ``sign == -1``, so
    :meth:`descent_grad` and :meth:`estimate_descent_grad` are −∇φ and its
    estimate, and ``w ← w − η Xᵀ descent_grad`` ascends φ. It is not convex and
    CT16 proves no regret bound for it. Softmax with max subtraction keeps it
    finite for any finite scores.

    Parameters
    ----------
    eps
        Smoothing ε > 0; the paper's experiments fix ε = 0.01 (§6).

    References
    ----------
    Chaudhuri & Tewari (2016), §4.1.1 and §6; Chapelle & Wu (2010).

    Examples
    --------
    >>> sd = SmoothDCG(eps=1.0)
    >>> float(sd.value([0.0, 0.0], [2, 0]))  # (3 + 0) / 2
    1.5
    >>> sd.grad([0.0, 0.0], [2, 0])  # q = (1/2, 1/2): q_j (G_j - 1.5)
    array([ 0.75, -0.75])
    >>> sd.descent_grad([0.0, 0.0], [2, 0])  # step against it to raise the gain
    array([-0.75,  0.75])
    """

    eps: float = 0.01

    name = "smoothdcg"
    kind = "gain"
    min_k = 1
    feedback_reason = "its gradient decomposes over single relevance coordinates (CT16 §4.1.1)"

    def __post_init__(self) -> None:
        if isinstance(self.eps, bool) or not isinstance(self.eps, int | float | np.number):
            raise TypeError(f"eps must be a real number, got {type(self.eps).__name__}")
        if not (np.isfinite(self.eps) and self.eps > 0):
            raise ValueError(f"eps must be finite and > 0, got {self.eps}")

    def _q(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        z = s / self.eps
        if not np.isfinite(z).all():
            raise ValueError(
                f"scores / eps overflows float64 (eps = {self.eps}, largest "
                f"|score| {np.max(np.abs(s)):.6g}); use a larger eps"
            )
        return f64(softmax(z, axis=-1))

    def _value(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        return f64((_gain(r) * self._q(s)).sum(axis=-1))

    def _grad(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        q = self._q(s)
        g = _gain(r)
        mean_gain = (g * q).sum(axis=-1, keepdims=True)
        return f64(q * (g - mean_gain) / self.eps)

    def _components(
        self, s: NDArray[np.float64], items: NDArray[np.intp], values: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        q = self._q(s)
        q_i = gather(q, items)[..., 0]
        coeff = _gain(values[..., 0]) * q_i / self.eps
        return coeff[..., None] * (one_hot(items[..., 0], s.shape[-1]) - q)

    def _estimate(self, fb: FeedbackArrays) -> NDArray[np.float64]:
        top = fb.order[..., :1]
        p = _position_prob(fb.exploit_top, top[..., 0], 0, fb.gamma, fb.n_items)
        return self._components(fb.scores, top, fb.observed[..., :1]) / p[..., None]

    @property
    def decomposition(self) -> DecomposedGradient:
        """Σ_i G(R_i) q_i (e_i − q) / ε: one-coordinate components, no known part."""
        return DecomposedGradient(self._components, arity=1)

    def _general_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # Not in CT16 (Lemma 5 covers the convex surrogates). ‖h_i‖₁ = G(R_i) 2 q_i (1 - q_i)/ε
        # <= G(R_max) / (2ε), so E <= R_D² (G(R_max) / 2ε)² Σ_i 1/p(i) <= ... · m² / γ.
        g = float(2.0**rmax - 1.0)
        return rd**2 * (g / (2.0 * self.eps)) ** 2 * m**2 / gamma


def score_scale_eps(features: NDArray[np.floating], radius: float) -> float:
    """SmoothDCG's ε for one list, in units of its score scale: ``c · U · σ_X``.

    σ_X = √(mean_j Var_i X_ij) is the root mean of the per-feature variances over
    the list's m items: the spread of the scores ``X w`` for a direction w of
    norm 1 drawn uniformly (E_w Var_i (X w)_i = tr Cov(X) / d); U is the weight
    radius (1 when there is no projection) and c = :data:`SCORE_SCALE_EPS`. Since
    ε then scales with the features and with U as the scores do, softmax(s/ε)
    has the same sharpness whatever the units of the features (softmax(X w / ε)
    depends on w / ε only, so a fixed ε such as CT16 §6's 0.01 means a different
    surrogate for every feature scale and radius). ε depends on the features
    only, not on the weights or the feedback, so it is known before the round's
    grades and the top-1 estimate stays unbiased for that round's φ_ε. A list
    whose items all have the same features (σ_X = 0) gets σ_X = 1: every ε
    gives it the same, zero, gradient in weight space (Xᵀ(e_i − q) = 0 when the
    rows are equal).

    >>> score_scale_eps(np.array([[0.0, 1.0], [2.0, 1.0]]), 1.0)  # σ_X = √((1 + 0) / 2)
    7.0710678118654755
    """
    x = np.asarray(features, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"features must have shape (m, d) with m >= 1, got {x.shape}")
    spread = float(np.sqrt(x.var(axis=0).mean())) if x.shape[1] > 0 else 0.0
    if not np.isfinite(spread):
        raise ValueError("features must be finite to set SmoothDCG's eps from their scale")
    scale = float(radius) if np.isfinite(radius) else 1.0
    return SCORE_SCALE_EPS * scale * (spread if spread > 0.0 else 1.0)
