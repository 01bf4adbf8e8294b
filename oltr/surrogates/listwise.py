"""Listwise surrogates: ListNet's cross-entropy and its KL modification (CT16 §4.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.special import log_softmax

from oltr.surrogates._kernels import (
    checked_exp,
    f64,
    gather,
    normalized_difference,
    one_hot,
    shared_difference,
    shifted_pair,
    shifted_pair_shared,
)
from oltr.surrogates._validation import FeedbackArrays
from oltr.surrogates.base import Surrogate
from oltr.surrogates.decomposition import DecomposedGradient
from oltr.surrogates.exploration import _position_prob

__all__ = ["KLListNet", "ListNet"]


def _kl_components(
    s: NDArray[np.float64], items: NDArray[np.intp], values: NDArray[np.float64]
) -> NDArray[np.float64]:
    # h_{s,i}(R_i) = (exp(s_i) - exp(R_i)) e_i, exactly as CT16 §4.1 writes it.
    i = items[..., 0]
    e_s = checked_exp(gather(s, items)[..., 0], "KL surrogate gradient")
    coeff = e_s - checked_exp(values[..., 0], "KL surrogate gradient")
    return coeff[..., None] * one_hot(i, s.shape[-1])


def _softmax(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """``scipy.special.softmax(v, axis=-1)``: the same numpy operations, without its overhead."""
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return f64(e / e.sum(axis=-1, keepdims=True))


@dataclass(frozen=True)
class KLListNet(Surrogate):
    """ListNet modified to an unnormalised KL divergence, estimable from top-1 feedback.

    With p_i = e^{R_i} and q_i = e^{s_i} (no softmax normaliser), the KL divergence
    for unnormalised vectors gives (CT16 §4.1)

    .. math::
        φ_{KL}(s, R) = \\sum_i e^{R_i} R_i − \\sum_i e^{R_i} s_i − \\sum_i e^{R_i}
                       + \\sum_i e^{s_i},
        \\qquad ∇_s φ_{KL} = \\sum_i (e^{s_i} − e^{R_i})\\, e_i,

    convex, non-negative and 0 exactly at s = R. Each gradient coordinate reads
    one relevance, so from the top shown item

    .. math:: \\tilde z = \\frac{(e^{s_{σ(1)}} − e^{R_{σ(1)}})\\, e_{σ(1)}}{p(σ(1))}.

    The value and gradient contain e^{s}; scores above log(float64 max) ≈ 709.78
    make them unrepresentable and raise ValueError rather than return inf.

    References
    ----------
    Chaudhuri & Tewari (2016), §4.1 "Listwise Method", §4.2, Lemma 5;
    Cao et al. (2007).

    Examples
    --------
    >>> kl = KLListNet()
    >>> float(kl.value([0.0, 0.0], [0, 1]))  # e·1 - 0 - (1 + e) + 2
    1.0
    >>> float(kl.value([0.0, 1.0], [0, 1]))  # zero at s = R
    0.0
    """

    name = "kl"
    kind = "loss"
    min_k = 1
    feedback_reason = "its gradient decomposes over single relevance coordinates (CT16 §4.1)"

    def _value(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        e_r = checked_exp(r, "KL surrogate value")
        e_s = checked_exp(s, "KL surrogate value")
        with np.errstate(over="ignore"):
            out = (e_r * (r - s - 1.0) + e_s).sum(axis=-1)
        if not np.isfinite(out).all():
            raise ValueError(
                "KL surrogate value overflows float64 (sum of exp(scores) too "
                "large); keep scores bounded"
            )
        return f64(out)

    def _grad(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        return checked_exp(s, "KL surrogate gradient") - checked_exp(r, "KL surrogate gradient")

    def _estimate(self, fb: FeedbackArrays) -> NDArray[np.float64]:
        top = fb.order[..., :1]
        p = _position_prob(fb.exploit_top, top[..., 0], 0, fb.gamma, fb.n_items)
        return _kl_components(fb.scores, top, fb.observed[..., :1]) / p[..., None]

    @property
    def decomposition(self) -> DecomposedGradient:
        """Σ_i (e^{s_i} − e^{R_i}) e_i: one-coordinate components, no known part."""
        return DecomposedGradient(_kl_components, arity=1)

    def _paper_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # C^KL = m² R_D² exp(2 R_D U) (proof of Lemma 5, "R_X" read as R_D). Its step
        # |e^{s} - e^{R}| <= exp(R_D U) needs R_max <= R_D U.
        with np.errstate(over="ignore"):
            return float(m**2 * rd**2 * np.exp(2.0 * rd * u) / gamma)

    def _general_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # |e^a - e^b| <= max(e^a, e^b) <= exp(max(R_D U, R_max)); then as in the paper.
        with np.errstate(over="ignore"):
            return float(m**2 * rd**2 * np.exp(2.0 * max(rd * u, rmax)) / gamma)


@dataclass(frozen=True)
class ListNet(Surrogate):
    """ListNet's top-1 cross-entropy surrogate; needs the full relevance vector.

    With P_j(v) = e^{v_j} / Σ_l e^{v_l} (softmax),

    .. math::
        φ_{LN}(s, R) = −\\sum_i P_i(R) \\log P_i(s),
        \\qquad ∇_s φ_{LN} = P(s) − P(R).

    Every coordinate of the gradient depends on all relevances through the
    normaliser, so it decomposes over no fewer than m coordinates (Lemma 3 and
    the remark after it) and, by Lemma 1, has no unbiased estimator from top-k
    feedback with k < m. Its :meth:`estimate_grad` therefore accepts only the
    whole list (k = m), where it is the exact gradient. Computed with log-sum-exp,
    so it stays finite for any finite scores.

    References
    ----------
    Chaudhuri & Tewari (2016), §4.1 "Listwise Method", Lemma 3, §6 (the
    full-feedback baseline); Cao et al. (2007).

    Examples
    --------
    >>> ln = ListNet()
    >>> bool(np.isclose(ln.value([0.0, 0.0], [0, 0]), np.log(2)))
    True
    >>> ln.grad([1.0, 2.0], [1, 2])
    array([0., 0.])
    """

    name = "listnet"
    kind = "loss"
    min_k = None
    feedback_reason = (
        "its gradient P(s) - P(R) depends on every relevance through the softmax normaliser, "
        "so it does not decompose over fewer than n_items coordinates (Chaudhuri & Tewari 2016 "
        "Lemma 3 and the remark after it) and by Lemma 1 no unbiased estimator exists from "
        "partial feedback; use the KL-modified surrogate 'kl', estimable from top-1 feedback"
    )

    def _value(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        return f64(-(_softmax(r) * log_softmax(s, axis=-1)).sum(axis=-1))

    def _grad(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        # P(s) − P(R) with numpy's exp and row sums (their bits define the traces) and the
        # exact steps around them (row maximum, shift, division, difference) compiled.
        m = s.shape[-1]
        if m == 0 or s.size == 0:
            return np.zeros(s.shape)
        rows_s = np.ascontiguousarray(s, dtype=np.float64).reshape(-1, m)
        rows_r = np.ascontiguousarray(r, dtype=np.float64).reshape(-1, m)
        both = np.empty((2, *rows_s.shape))
        shifted_pair(rows_s, rows_r, both)
        e = np.exp(both)
        out = np.empty(rows_s.shape)
        normalized_difference(e, e.sum(axis=-1), out)
        return out.reshape(s.shape)

    def trusted_grad_into(
        self,
        s: NDArray[np.float64],
        r: NDArray[np.float64],
        both: NDArray[np.float64],
        out: NDArray[np.float64],
    ) -> bool:
        """``out = P(s) − P(r)``, the bits of :meth:`trusted_descent_grad`, into given arrays.

        For a learner's own scores ``s`` and float64 grades ``r``, both (n, m) in C
        order, with ``both`` (2, n, m) and ``out`` (n, m) its reused buffers: the
        grades are checked in the compiled shift, not in separate numpy passes.
        Returns False, writing nothing usable, when a grade is not a finite number
        >= 0; :meth:`trusted_descent_grad` then raises saying which. When every run
        has the same grades (full feedback on one query to a batch of runs), their
        softmax is computed once: numpy's ``exp`` is elementwise and its row sum
        depends only on the row, so the bits are those of one softmax per run.
        """
        shared = shifted_pair_shared(s, r, both)
        if shared < 0:
            return False
        if shared:  # every run has the same grades (full feedback): their softmax once
            e, e_row = both[0], both[1, :1]
            np.exp(e, out=e)  # numpy's exp and row sums, as in _grad: their bits define
            np.exp(e_row, out=e_row)  # the traces, element by element and row by row
            shared_difference(e, e.sum(axis=-1), e_row[0], e_row.sum(axis=-1)[0], out)
            return True
        np.exp(both, out=both)
        normalized_difference(both, both.sum(axis=-1), out)
        return True

    def _general_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # Full feedback: the estimate is the gradient, ‖P(s) - P(R)‖₁ <= 2, so E <= 4 R_D².
        return 4.0 * rd**2
