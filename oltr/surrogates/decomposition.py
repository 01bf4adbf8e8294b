"""Lemma 1 of Chaudhuri & Tewari (2016): unbiased estimates from top-k feedback.

A vector function of the hidden relevance vector ``R`` can be estimated without
bias from the relevances of the top ``k`` shown items only if it decomposes over
at most ``k`` coordinates of ``R`` at a time (CT16 Eq. 2):

.. math:: F_s(R) = c(s) + \\sum_{(i_1,…,i_ℓ) ∈ {}^mP_ℓ} h_{s,i_1…i_ℓ}(R_{i_1},…,R_{i_ℓ}),
          \\qquad ℓ ≤ k,

where ``c(s)`` is a part that does not depend on ``R`` (known to the learner;
CT16 §4.1 keeps ``2s`` of the squared loss's gradient this way). When it does,

.. math:: g = c(s) + \\frac{\\sum_{π ∈ S_ℓ} h_{σ(π_1)…σ(π_ℓ)}(R_{σ(π_1)},…,R_{σ(π_ℓ)})}
                          {\\sum_{π ∈ S_ℓ} p(σ(π_1),…,σ(π_ℓ))}

is unbiased (Eq. 3), where σ is the shown order and ``p`` the prefix
probabilities of RTop-kF's exploration distribution
(:mod:`oltr.surrogates.exploration`). With ``k > ℓ`` the supplement's proof
drops the extra observations and uses the top ℓ; with ``k = m`` (the whole list
observed) the estimate is ``F_s(R)`` itself (the note closing the proof).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.surrogates._kernels import f64
from oltr.surrogates._validation import (
    broadcast_scores_relevance,
    full_relevance,
    prepare_feedback,
)
from oltr.surrogates.exploration import _top_set_prob

__all__ = ["ComponentFn", "DecomposedGradient", "KnownFn"]

#: ``h(scores, items, values) -> (..., a)``: the component for the ordered tuple
#: ``items`` (..., ℓ) of distinct item indices whose relevances are ``values``
#: (..., ℓ); ``scores`` (..., m) broadcasts against the leading axes.
ComponentFn = Callable[
    [NDArray[np.float64], NDArray[np.intp], NDArray[np.float64]], NDArray[np.float64]
]
#: ``c(scores) -> (..., a)``: the part of F that does not depend on the relevance.
KnownFn = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@cache
def _orderings(ell: int) -> NDArray[np.intp]:
    """The ℓ! orderings of ``range(ℓ)``, shape (ℓ!, ℓ) (read-only, cached)."""
    out = np.array(list(itertools.permutations(range(ell))), dtype=np.intp).reshape(-1, ell)
    out.flags.writeable = False
    return out


@cache
def _tuples(m: int, ell: int) -> NDArray[np.intp]:
    """All ordered ℓ-tuples of distinct items of ``range(m)`` (ᵐP_ℓ), shape (m!/(m−ℓ)!, ℓ)."""
    out = np.array(list(itertools.permutations(range(m), ell)), dtype=np.intp).reshape(-1, ell)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class DecomposedGradient:
    """A function of the relevance vector that decomposes over ``arity`` coordinates.

    Holds the pieces of CT16 Eq. 2 and builds Lemma 1's unbiased estimator (Eq. 3)
    from them, for any ``arity`` ℓ and any feedback depth ``k >= ℓ``.

    Parameters
    ----------
    components
        ``h(scores, items, values)``: the component for ordered item tuples
        ``items`` of shape (..., ℓ) with relevances ``values`` (..., ℓ); must
        broadcast over leading axes and return shape (..., a).
    arity
        ℓ >= 1, the number of relevance coordinates each component reads.
    known
        Optional ``c(scores)`` of shape (..., a): the relevance-free part, added
        exactly instead of being estimated.

    References
    ----------
    Chaudhuri & Tewari (2016), Lemma 1 (Eqs. 1–3) and its proof in the supplement.

    Examples
    --------
    The identity ``F(R) = R = Σ_i R_i e_i`` decomposes over one coordinate
    (the paper's first illustrative example):

    >>> def h(s, items, values):
    ...     return values * (np.arange(s.shape[-1]) == items)
    >>> F = DecomposedGradient(h, arity=1)
    >>> F.exact([0.0, 0.0, 0.0], [3, 1, 2])
    array([3., 1., 2.])
    >>> F.estimate([0.0, 1.0, 0.5], order=[0, 1, 2], observed=[3], gamma=0.3)  # p = 0.1
    array([30.,  0.,  0.])
    """

    components: ComponentFn
    arity: int
    known: KnownFn | None = None

    def __post_init__(self) -> None:
        if isinstance(self.arity, bool) or not isinstance(self.arity, int | np.integer):
            raise TypeError(f"arity must be an int, got {type(self.arity).__name__}")
        if self.arity < 1:
            raise ValueError(f"arity must be >= 1, got {self.arity}")
        if not callable(self.components):
            raise TypeError("components must be callable h(scores, items, values)")
        if self.known is not None and not callable(self.known):
            raise TypeError("known must be None or callable c(scores)")

    def _with_known(
        self, scores: NDArray[np.float64], total: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        return total if self.known is None else f64(total + self.known(scores))

    def _exact(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        m = s.shape[-1]
        if self.arity > m:
            raise ValueError(f"arity = {self.arity} exceeds the number of items {m}")
        tuples = _tuples(m, self.arity)
        items = np.broadcast_to(tuples, s.shape[:-1] + tuples.shape)
        h = self.components(s[..., None, :], items, r[..., tuples])
        return self._with_known(s, f64(h.sum(axis=-2)))

    def exact(self, scores: ArrayLike, relevance: ArrayLike) -> NDArray[np.float64]:
        """``F_s(R)`` by summing the components over all ordered ℓ-tuples (Eq. 2).

        Parameters
        ----------
        scores
            Shape (..., n_items).
        relevance
            Shape (..., n_items), grades >= 0.

        Returns
        -------
        value
            Shape (..., a). Costs m!/(m − ℓ)! component evaluations per list.
        """
        s, r = broadcast_scores_relevance(scores, relevance)
        return self._exact(np.ascontiguousarray(s), np.ascontiguousarray(r))

    def estimate(
        self,
        scores: ArrayLike,
        order: ArrayLike,
        observed: ArrayLike,
        gamma: ArrayLike,
        *,
        exploit_order: ArrayLike | None = None,
    ) -> NDArray[np.float64]:
        """Lemma 1's unbiased estimate of ``F_s(R)`` from top-k feedback (Eq. 3).

        Parameters
        ----------
        scores
            The learner's scores, shape (..., n_items).
        order
            The order shown, shape (..., n_items).
        observed
            Relevances of the first ``k`` shown items, shape (..., k), ``arity <= k``.
        gamma
            RTop-kF's exploration rate in (0, 1].
        exploit_order
            The learner's own order; default descending ``scores``, ties by lower index.

        Returns
        -------
        estimate
            Shape (..., a); its expectation over RTop-kF's exploration
            distribution is ``F_s(R)``.
        """
        fb = prepare_feedback(scores, order, observed, gamma, exploit_order, self.arity)
        ell, k, m = self.arity, fb.k, fb.n_items
        if k == m:
            return self._exact(fb.scores, full_relevance(fb.order, fb.observed))
        if k < ell:
            raise ValueError(
                f"this function decomposes over {ell} relevance coordinates at a time, so an "
                f"unbiased estimate needs top-{ell} feedback (Chaudhuri & Tewari 2016 Lemma 1); "
                f"got the relevances of the top {k} of {m} items"
            )
        top = fb.order[..., :ell]
        perms = _orderings(ell)
        h = self.components(
            fb.scores[..., None, :], top[..., perms], fb.observed[..., :ell][..., perms]
        )
        den = _top_set_prob(fb.exploit_top, top, fb.gamma, m)
        return self._with_known(fb.scores, f64(h.sum(axis=-2) / den[..., None]))
