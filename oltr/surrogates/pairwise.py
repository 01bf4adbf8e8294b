"""The pairwise RankSVM hinge surrogate and its top-2 gradient estimator (CT16 §4.1)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from oltr.surrogates._kernels import f64, gather, one_hot, ranksvm_estimate
from oltr.surrogates._validation import FeedbackArrays
from oltr.surrogates.base import Surrogate, TrustedEstimator
from oltr.surrogates.decomposition import DecomposedGradient
from oltr.surrogates.exploration import _reciprocal, _top_set_prob

__all__ = ["RankSVMHinge"]

#: Pair entries (rows × m²) per block of the full-information value and gradient,
#: bounding their temporaries to a few tens of MB however many lists are batched.
_PAIRS_PER_BLOCK = 1 << 22


def _blockwise(
    fn: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]],
    s: NDArray[np.float64],
    r: NDArray[np.float64],
    tail: tuple[int, ...],
) -> NDArray[np.float64]:
    """Apply a pairwise kernel to blocks of lists (leading axes flattened)."""
    lead, m = s.shape[:-1], s.shape[-1]
    s2, r2 = s.reshape(-1, m), r.reshape(-1, m)
    n = s2.shape[0]
    rows = max(1, _PAIRS_PER_BLOCK // (m * m))
    out = np.empty((n,) + tail, dtype=np.float64)
    for start in range(0, n, rows):
        out[start : start + rows] = fn(s2[start : start + rows], r2[start : start + rows])
    return out.reshape(lead + tail)


def _pair_direction(
    s_i: NDArray[np.float64],
    s_j: NDArray[np.float64],
    r_i: NDArray[np.float64],
    r_j: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Coefficient c of (e_j − e_i) in h_{i,j}(R_i, R_j) + h_{j,i}(R_j, R_i).

    h_{s,i,j}(R_i, R_j) = 1(R_i > R_j) 1(1 + s_j > s_i) (e_j − e_i), so the pair
    contributes +1 if i should be above j and the margin is violated, −1 in the
    mirrored case, and 0 otherwise (at most one of the two holds).
    """
    forward = (r_i > r_j) & (1.0 + s_j > s_i)
    backward = (r_j > r_i) & (1.0 + s_i > s_j)
    return forward.astype(np.float64) - backward


def _components(
    s: NDArray[np.float64], items: NDArray[np.intp], values: NDArray[np.float64]
) -> NDArray[np.float64]:
    # One ordered pair (i, j) per tuple: h_{s,i,j} alone, i.e. only the "forward" term.
    s_ij = gather(s, items)
    active = (values[..., 0] > values[..., 1]) & (1.0 + s_ij[..., 1] > s_ij[..., 0])
    m = s.shape[-1]
    return active[..., None] * (one_hot(items[..., 1], m) - one_hot(items[..., 0], m))


@dataclass(frozen=True)
class RankSVMHinge(Surrogate):
    """RankSVM's pairwise hinge surrogate, estimable from top-2 feedback.

    .. math::
        φ_{svm}(s, R) = \\sum_{i ≠ j} 1(R_i > R_j) \\max(0, 1 + s_j − s_i),

        ∇_s φ_{svm} = \\sum_{i ≠ j} 1(R_i > R_j)\\, 1(1 + s_j > s_i)\\, (e_j − e_i)

    (the subgradient that is 0 at the kink 1 + s_j = s_i, as the paper writes
    it). Each pair term reads two relevances, so from the top two shown items
    σ(1), σ(2) (CT16 §4.1)

    .. math:: \\tilde z = \\frac{h_{s,σ(1),σ(2)}(R_{σ(1)}, R_{σ(2)})
                               + h_{s,σ(2),σ(1)}(R_{σ(2)}, R_{σ(1)})}
                              {p(σ(1), σ(2)) + p(σ(2), σ(1))},

    whose denominator is the probability that {σ(1), σ(2)} is the top pair:
    (1 − γ)·1(it is the learner's own top pair) + γ / C(m, 2) (§4.2).
    Top-1 feedback is not enough (Lemma 2).

    References
    ----------
    Chaudhuri & Tewari (2016), §4.1 "Pairwise Method", Lemma 2, §4.2, Lemma 5;
    Joachims (2002).

    Examples
    --------
    >>> svm = RankSVMHinge()
    >>> float(svm.value([0.0, 0.5, 2.0], [2, 1, 0]))  # 1.5 + 3 + 2.5
    7.0
    >>> svm.grad([0.0, 0.5, 2.0], [2, 1, 0])
    array([-2.,  0.,  2.])
    """

    name = "ranksvm"
    kind = "loss"
    min_k = 2
    feedback_reason = (
        "its gradient does not decompose over single relevance coordinates (Chaudhuri & "
        "Tewari 2016 Lemma 2), so by Lemma 1 no unbiased estimator exists from top-1 feedback"
    )

    @staticmethod
    def _pairs(
        s: NDArray[np.float64], r: NDArray[np.float64]
    ) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
        above = r[..., :, None] > r[..., None, :]  # [i, j]: R_i > R_j
        margin = 1.0 + s[..., None, :] - s[..., :, None]  # [i, j]: 1 + s_j - s_i
        return above, margin

    @classmethod
    def _value_block(cls, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        above, margin = cls._pairs(s, r)
        return f64(np.where(above, np.maximum(margin, 0.0), 0.0).sum(axis=(-2, -1)))

    @classmethod
    def _grad_block(cls, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        above, margin = cls._pairs(s, r)
        active = above & (margin > 0.0)
        # Pair (i, j) adds e_j - e_i: +1 to item j (column sums), -1 to item i (row sums).
        return f64(active.sum(axis=-2, dtype=np.float64) - active.sum(axis=-1, dtype=np.float64))

    def _value(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        # O(m²) pairs per list, computed in blocks of lists to bound memory.
        return _blockwise(self._value_block, s, r, ())

    def _grad(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        return _blockwise(self._grad_block, s, r, (s.shape[-1],))

    def _estimate(self, fb: FeedbackArrays) -> NDArray[np.float64]:
        top = fb.order[..., :2]
        s_ij = gather(fb.scores, top)
        c = _pair_direction(s_ij[..., 0], s_ij[..., 1], fb.observed[..., 0], fb.observed[..., 1])
        den = _top_set_prob(fb.exploit_top, top, fb.gamma, fb.n_items)
        m = fb.n_items
        return (c / den)[..., None] * (one_hot(top[..., 1], m) - one_hot(top[..., 0], m))

    def trusted_estimator(self, n_items: int) -> TrustedEstimator | None:
        """:func:`ranksvm_estimate` with the floor 1/C(m, 2) of lists of ``n_items`` items
        (None for a list without a pair)."""
        if n_items < 2:
            return None
        return functools.partial(ranksvm_estimate, _reciprocal(math.comb(n_items, 2)))

    @property
    def decomposition(self) -> DecomposedGradient:
        """Σ_{i≠j} h_{s,i,j}(R_i, R_j): two-coordinate components, no known part."""
        return DecomposedGradient(_components, arity=2)

    def _paper_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # C^svm = O(m^4 R_D^2): the proof's chain ‖f‖₁ <= 2 / (p(i,j) + p(j,i)) with
        # p(i,j) >= γ/m², summed over the C(m,2) pairs, gives 4 R_D² C(m,2) m² / (2γ).
        return rd**2 * m**3 * (m - 1) / gamma

    def _general_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        # Same chain with the exact floor p(i,j) + p(j,i) >= γ / C(m,2).
        return rd**2 * (m * (m - 1)) ** 2 / gamma
