"""The surrogate protocol: value, gradient, descent direction and top-k estimator.

A surrogate φ(s, R) scores a score vector ``s`` against a relevance vector ``R``
(Chaudhuri & Tewari 2016 §2). Most are losses (minimised); SmoothDCG is a gain
(maximised). So that a learner cannot step the wrong way, every surrogate also
exposes the *objective* it minimises, ``sign · φ`` with ``sign = +1`` for a loss
and ``-1`` for a gain, and its gradient ``descent_grad = sign · ∇_s φ``. An
online gradient learner always steps ``w ← w − η Xᵀ descent_grad`` (or the
estimated version), whatever the kind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.surrogates._validation import (
    FeedbackArrays,
    as_gamma,
    as_relevance,
    broadcast_scores_relevance,
    full_relevance,
    prepare_feedback,
)
from oltr.surrogates.decomposition import DecomposedGradient

__all__ = ["BOUND_FORMS", "Surrogate", "TrustedEstimator"]

#: ``f(scores, order, observed, gamma, exploit_order, out)``: see
#: :meth:`Surrogate.trusted_estimator`.
TrustedEstimator: TypeAlias = Callable[
    [
        NDArray[np.float64],
        NDArray[np.intp],
        NDArray[np.float64],
        float,
        NDArray[np.intp],
        NDArray[np.float64],
    ],
    None,
]

#: ``"paper"``: the constant C^φ/γ of CT16 Lemma 5 as its proof states it;
#: ``"general"``: a bound derived here that holds for every parameter value.
BOUND_FORMS = ("paper", "general")


def _scalar(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """Return 0-d results as numpy scalars (as the metrics do), arrays unchanged."""
    return a[()] if a.ndim == 0 else a


def _positive(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value}")
    return float(value)


class Surrogate(ABC):
    """A ranking surrogate with its gradient and its unbiased top-k gradient estimator.

    Subclasses set the class attributes and implement ``_value``, ``_grad`` and,
    when top-k estimation is possible, ``_estimate`` and ``decomposition``.

    Attributes
    ----------
    name
        Registry name (``"squared"``, ``"ranksvm"``, ``"kl"``, ``"smoothdcg"``, ``"listnet"``).
    kind
        ``"loss"`` (minimised) or ``"gain"`` (maximised).
    min_k
        The smallest feedback depth ``k`` from which the gradient can be
        estimated without bias; ``None`` when the whole relevance vector is needed.
    """

    name: ClassVar[str]
    kind: ClassVar[Literal["loss", "gain"]]
    min_k: ClassVar[int | None]
    #: Why fewer than ``min_k`` observed relevances cannot give an unbiased estimate.
    feedback_reason: ClassVar[str]

    # ------------------------------------------------------------------ hooks

    @abstractmethod
    def _value(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        """φ(s, R) on validated, broadcast inputs (..., m) -> (...)."""

    @abstractmethod
    def _grad(self, s: NDArray[np.float64], r: NDArray[np.float64]) -> NDArray[np.float64]:
        """∇_s φ(s, R) on validated, broadcast inputs (..., m) -> (..., m)."""

    def _estimate(self, fb: FeedbackArrays) -> NDArray[np.float64]:
        """The unbiased estimate for ``min_k <= k < m`` (validated inputs)."""
        raise NotImplementedError  # pragma: no cover - only reachable if min_k is mis-set

    @property
    def decomposition(self) -> DecomposedGradient | None:
        """∇_s φ written as in CT16 Eq. 2 (``None`` if it does not decompose below m)."""
        return None

    def _paper_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        raise ValueError(
            f"Chaudhuri & Tewari (2016) Lemma 5 states no bound for the {self.name} "
            "surrogate; use form='general'"
        )

    @abstractmethod
    def _general_bound(self, m: int, gamma: float, rd: float, u: float, rmax: float) -> float:
        """A bound on E‖Xᵀ estimate‖² that holds for all parameter values."""

    # ------------------------------------------------------------ direction

    @property
    def sign(self) -> float:
        """+1.0 for a loss, −1.0 for a gain: the objective minimised is ``sign · φ``."""
        return 1.0 if self.kind == "loss" else -1.0

    # ---------------------------------------------------------------- values

    def value(self, scores: ArrayLike, relevance: ArrayLike) -> NDArray[np.float64]:
        """The surrogate φ(s, R) as the paper defines it (a loss or a gain, see ``kind``).

        Parameters
        ----------
        scores
            Real array of shape (..., n_items), finite.
        relevance
            Grades >= 0 of shape (..., n_items); leading axes broadcast with ``scores``.

        Returns
        -------
        value
            Float64 array of the broadcast leading shape (numpy scalar for 1-D inputs).
        """
        s, r = broadcast_scores_relevance(scores, relevance)
        return _scalar(self._value(s, r))

    def loss(self, scores: ArrayLike, relevance: ArrayLike) -> NDArray[np.float64]:
        """Alias of :meth:`value`: φ(s, R), a *gain* when ``kind == "gain"``.

        Use :meth:`objective` for the quantity that is always minimised.
        """
        return self.value(scores, relevance)

    def grad(self, scores: ArrayLike, relevance: ArrayLike) -> NDArray[np.float64]:
        """∇_s φ(s, R), the gradient of :meth:`value` with respect to the scores.

        For a gain this is an *ascent* direction; learners should use
        :meth:`descent_grad` (or :meth:`estimate_descent_grad`).

        Returns
        -------
        gradient
            Float64 array of shape (..., n_items).
        """
        s, r = broadcast_scores_relevance(scores, relevance)
        return self._grad(s, r)

    def objective(self, scores: ArrayLike, relevance: ArrayLike) -> NDArray[np.float64]:
        """``sign · φ(s, R)``: the quantity a learner minimises, whatever the kind."""
        return self.sign * self.value(scores, relevance)

    def descent_grad(self, scores: ArrayLike, relevance: ArrayLike) -> NDArray[np.float64]:
        """``sign · ∇_s φ(s, R)``: step along its negative, ``w ← w − η Xᵀ descent_grad``."""
        return self.sign * self.grad(scores, relevance)

    def trusted_descent_grad(
        self, scores: NDArray[np.float64], relevance: ArrayLike
    ) -> NDArray[np.float64]:
        """:meth:`descent_grad` for a learner's own (B, m) float64 scores.

        The scores are the learner's and need no check; the relevance comes from
        outside and is validated as in :meth:`descent_grad` (finite, >= 0, one row
        of m grades per run or one row for all).
        """
        r = as_relevance(relevance)
        if r.shape[-1] != scores.shape[-1]:
            raise ValueError(
                f"scores and relevance must have the same number of items (last axis), "
                f"got {scores.shape[-1]} and {r.shape[-1]}"
            )
        grad = self._grad(
            scores, r if r.shape == scores.shape else np.broadcast_to(r, scores.shape)
        )
        return grad if self.kind == "loss" else -grad

    # -------------------------------------------------------------- feedback

    def required_k(self, n_items: int) -> int:
        """The feedback depth needed on lists of ``n_items`` items (``min_k``, capped at m)."""
        if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer) or n_items < 1:
            raise ValueError(f"n_items must be an int >= 1, got {n_items!r}")
        return int(n_items) if self.min_k is None else min(self.min_k, int(n_items))

    def check_k(self, k: int | None, *, n_items: int | None = None) -> None:
        """Raise ValueError, saying why, if top-``k`` feedback is too little.

        Parameters
        ----------
        k
            Feedback depth (relevances of the top ``k`` shown items), or ``None``
            for full feedback (the whole relevance vector).
        n_items
            List length, if known. Without it, a surrogate that needs the whole
            list accepts only ``k = None``.
        """
        if k is None:
            return
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"k must be an int >= 1 or None (full feedback), got {k!r}")
        if n_items is not None and k > n_items:
            raise ValueError(f"k = {k} exceeds the list length n_items = {n_items}")
        if self.min_k is None:
            if n_items is None or k < n_items:
                of = "" if n_items is None else f" of {n_items}"
                raise ValueError(
                    f"the {self.name} surrogate needs the full relevance vector (k = n_items), "
                    f"got top-{k}{of} feedback: {self.feedback_reason}"
                )
            return
        if k < (self.min_k if n_items is None else self.required_k(n_items)):
            raise ValueError(
                f"the {self.name} surrogate needs top-{self.min_k} feedback, got top-{k}: "
                f"{self.feedback_reason}"
            )

    def estimate_grad(
        self,
        scores: ArrayLike,
        order: ArrayLike,
        observed: ArrayLike,
        gamma: ArrayLike,
        *,
        exploit_order: ArrayLike | None = None,
    ) -> NDArray[np.float64]:
        """Unbiased estimate of ∇_s φ(s, R) from top-k feedback (CT16 §4).

        Its expectation over RTop-kF's exploration distribution (the learner's
        own order with probability 1 − γ, a uniform order with probability γ) is
        :meth:`grad` ``(scores, R)``. A learner multiplies it by ``Xᵀ``. With
        ``k = n_items`` (the whole list observed) it is the exact gradient
        (Lemma 1, closing note); with ``min_k < k < n_items`` only the top
        ``min_k`` observations are used (as in the proof of Lemma 1).

        Parameters
        ----------
        scores
            The learner's scores ``s = Xw``, shape (..., n_items) (not the
            exploration draw).
        order
            The order actually shown, shape (..., n_items), ``order[..., 0]`` on top.
        observed
            Relevances of its first ``k`` items, shape (..., k), ``k >= required_k``.
        gamma
            Exploration rate in (0, 1] (scalar or broadcasting over leading axes).
        exploit_order
            The learner's own order (what it shows when not exploring). Default:
            descending ``scores``, ties by lower index first
            (:func:`oltr.permutations.order_from_scores`).

        Returns
        -------
        estimate
            Float64 array of shape (..., n_items), leading axes broadcast.

        Raises
        ------
        ValueError
            If ``k`` is below what the surrogate needs (with the lemma that says
            why), or on malformed inputs (shapes, NaN, non-permutations, γ ∉ (0, 1]).
        """
        fb = prepare_feedback(scores, order, observed, gamma, exploit_order, self.min_k or 1)
        self.check_k(fb.k, n_items=fb.n_items)
        if fb.k == fb.n_items:
            return self._grad(fb.scores, full_relevance(fb.order, fb.observed))
        return self._estimate(fb)

    def estimate_descent_grad(
        self,
        scores: ArrayLike,
        order: ArrayLike,
        observed: ArrayLike,
        gamma: ArrayLike,
        *,
        exploit_order: ArrayLike | None = None,
    ) -> NDArray[np.float64]:
        """``sign ·`` :meth:`estimate_grad`: unbiased for :meth:`descent_grad`.

        RTop-kF (CT16 Algorithm 1 step 10) steps ``w ← w − η Xᵀ`` times this.
        """
        return self.sign * self.estimate_grad(
            scores, order, observed, gamma, exploit_order=exploit_order
        )

    def trusted_descent_estimate(
        self,
        scores: NDArray[np.float64],
        order: NDArray[np.intp],
        observed: NDArray[np.float64],
        gamma: float,
        exploit_order: NDArray[np.intp],
    ) -> NDArray[np.float64]:
        """:meth:`estimate_descent_grad` on inputs a learner made itself, unvalidated.

        The public method validates every argument (finite scores, permutations,
        shapes), which costs more than the estimate itself at small ``m``. A
        learner's own scores and orders (and shown orders the runner checked) need
        none of it, so the same kernels are called directly: the exact gradient
        when the whole list was observed, the top-k estimator otherwise (tests
        check that both paths equal the public method). Shapes: ``scores``,
        ``order``, ``exploit_order`` (B, m); ``observed`` (B, k).
        """
        m = scores.shape[-1]
        if observed.shape[-1] >= m:
            grad = self._grad(scores, full_relevance(order, observed[:, :m]))
        else:
            grad = self._trusted_estimate(scores, order, observed, gamma, exploit_order)
        return grad if self.kind == "loss" else -grad  # what sign · grad gives, bit for bit

    def trusted_descent_estimate_into(
        self,
        scores: NDArray[np.float64],
        order: NDArray[np.intp],
        observed: NDArray[np.float64],
        gamma: float,
        exploit_order: NDArray[np.intp],
        out: NDArray[np.float64],
    ) -> None:
        """:meth:`trusted_descent_estimate` written into ``out`` (B, m), a float64 buffer the
        learner reuses (a loss's compiled estimator, :meth:`trusted_estimator`, writes it there)."""
        m = scores.shape[-1]
        if self.kind == "loss" and observed.shape[-1] < m:  # a loss: descent = its gradient
            estimator = self.trusted_estimator(m)
            if estimator is not None:
                estimator(scores, order, observed, float(gamma), exploit_order, out)
                return
        out[...] = self.trusted_descent_estimate(scores, order, observed, gamma, exploit_order)

    def trusted_estimator(self, n_items: int) -> TrustedEstimator | None:
        """The compiled top-k estimator of the gradient for lists of ``n_items`` items, or None.

        ``f(scores, order, observed, gamma, exploit_order, out)`` writes into ``out`` (B, m)
        what ``_estimate`` returns, bit for bit, for inputs a learner made itself (the
        shapes of :meth:`trusted_descent_estimate`, fewer observed positions than items,
        ``gamma`` a float). A learner looks it up once per list size and calls it each
        round; surrogates without one return None.
        """
        return None

    def _trusted_estimate(
        self,
        scores: NDArray[np.float64],
        order: NDArray[np.intp],
        observed: NDArray[np.float64],
        gamma: float,
        exploit_order: NDArray[np.intp],
    ) -> NDArray[np.float64]:
        """``_estimate`` for (B, m) inputs a learner made (compiled where one is)."""
        estimator = self.trusted_estimator(scores.shape[-1])
        if estimator is not None:
            out = np.empty(scores.shape)
            estimator(scores, order, observed, float(gamma), exploit_order, out)
            return out
        ell = min(int(self.min_k or 1), scores.shape[-1])
        gammas = np.full(scores.shape[0], gamma)
        return self._estimate(
            FeedbackArrays(scores, order, observed, gammas, exploit_order[:, :ell])
        )

    # ------------------------------------------------------------------ Lemma 5

    def second_moment_bound(
        self,
        n_items: int,
        gamma: float,
        *,
        feature_norm: float,
        radius: float,
        max_grade: float,
        form: Literal["paper", "general"] = "paper",
    ) -> float:
        """Bound on E‖Xᵀ ẑ‖² for the top-``min_k`` estimate ẑ (CT16 Lemma 5, Eq. 6).

        Valid for documents with ``‖X_i‖₂ <= feature_norm`` (R_D), weights with
        ``‖w‖₂ <= radius`` (U, so ``|s_i| <= R_D U``) and grades ``<= max_grade``
        (R_max).

        Parameters
        ----------
        n_items
            m, the number of documents.
        gamma
            Exploration rate in (0, 1].
        feature_norm, radius, max_grade
            R_D > 0, U > 0, R_max > 0.
        form
            ``"paper"``: C^φ/γ exactly as the proof of Lemma 5 states it (holds in
            the regime that proof tacitly assumes, see each surrogate);
            ``"general"``: a bound derived here from the same steps, valid for all
            parameter values.

        Returns
        -------
        bound
            Upper bound on the second moment, a float.
        """
        self.required_k(n_items)  # validates n_items
        m = int(n_items)
        g = float(as_gamma(gamma))
        rd = _positive(feature_norm, "feature_norm")
        u = _positive(radius, "radius")
        rmax = _positive(max_grade, "max_grade")
        if form == "paper":
            return self._paper_bound(m, g, rd, u, rmax)
        if form == "general":
            return self._general_bound(m, g, rd, u, rmax)
        raise ValueError(f"form must be one of {BOUND_FORMS}, got {form!r}")
