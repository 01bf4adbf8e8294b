"""Feedback: what a round reveals to the learner, and the models that reveal it.

One frozen dataclass per feedback kind, batched over a leading run axis ``B``:

=================  ======================================  =====================================
kind               dataclass (fields besides ``orders``)    reveals
=================  ======================================  =====================================
``"none"``         :class:`NoFeedback`                      nothing
``"full"``         :class:`FullFeedback` ``relevance``      every item's grade (full information)
``"topk"``         :class:`TopKFeedback` ``labels``         grades of the top ``k`` shown items
``"choice"``       :class:`ChoiceFeedback` ``chosen``       the set of chosen items
``"bandit"``       :class:`BanditFeedback` ``loss``         the loss of the shown list
``"duel"``         :class:`DuelFeedback` ``outcome``        which of two compared lists won
=================  ======================================  =====================================

A **feedback model** is pure: ``observe(orders, relevance, *, rngs) -> Feedback``
turns the shown orders and the hidden relevance into a feedback object, drawing
any noise from the per-run generators ``rngs``; it declares what it reveals
(:attr:`FeedbackModel.provides`). A learner declares what it needs
(``requires = FeedbackRequirement("topk", k=1)``). :meth:`FeedbackRequirement.satisfied_by`
decides whether a model reveals enough, and :meth:`Feedback.restrict` cuts a
richer feedback down to exactly what was asked for, so a learner never sees
more than it declared, nor more than the model revealed. Every array of a
feedback object is a fresh, read-only copy: it never aliases the environment's
relevance.

What may stand in for what (the partial order of :meth:`FeedbackRequirement.satisfied_by`):

* ``full`` gives ``topk`` for any ``k`` (grades of the top ``k`` shown items) and
  ``choice`` (the items of grade > 0: Ailon 2014 §2 reads the chosen set as a
  binary relevance vector ``s_t``);
* ``topk`` with ``k`` gives ``topk`` with any ``k' <= k``;
* every single-list kind gives ``none``; ``duel`` stands alone (the learner shows
  two lists, shape (B, 2, m)).

References
----------
Chaudhuri & Tewari 2015 §2 (top-1 feedback: only ``r_t(σ_t⁻¹(1))`` is revealed).
Chaudhuri & Tewari 2016 §2 (top-k feedback).
Ailon 2014 §2 (discrete choice: the chosen set ``U_t``).
Yue & Joachims 2009 §3, §5.2 (pairwise comparisons; logistic link on 10 × NDCG@10).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.feedback.kinds import (
    BanditFeedback,
    ChoiceFeedback,
    DuelFeedback,
    Feedback,
    FeedbackRequirement,
    FullFeedback,
    TopKFeedback,
)
from oltr.registry import register_feedback
from oltr.types import Configurable, Orders, RunGenerators
from oltr.validation import check_orders_shape

__all__ = [
    "BanditFeedbackModel",
    "ChoiceFeedbackModel",
    "DuelFeedbackModel",
    "FeedbackModel",
    "FullFeedbackModel",
    "TopKFeedbackModel",
]


# ---------------------------------------------------------------------------
# feedback objects


# ---------------------------------------------------------------------------
# feedback models


class FeedbackModel(Configurable, ABC):
    """A pure map from (shown orders, hidden relevance, per-run noise) to feedback.

    Subclasses set ``kind`` and implement :meth:`observe`. They must copy
    whatever they reveal (the feedback dataclasses do), so that nothing a
    learner receives aliases the environment's relevance.
    """

    kind: ClassVar[str]
    #: Whether :meth:`observe` draws from ``rngs``.
    stochastic: ClassVar[bool] = False

    @property
    def provides(self) -> FeedbackRequirement:
        """The most this model reveals."""
        return FeedbackRequirement(self.kind)  # type: ignore[arg-type]

    @abstractmethod
    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> Feedback:
        """Feedback for ``orders`` (B, m) — (B, 2, m) for duels — given ``relevance`` (m,)."""

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        """Small parameter settings for the conformance suite."""
        yield {}

    def _rngs(self, rngs: RunGenerators | None, n_runs: int) -> RunGenerators:
        if rngs is None:
            raise ValueError(
                f"{type(self).__name__} is stochastic: pass rngs (one generator per run)"
            )
        if len(rngs) != n_runs:
            raise ValueError(f"got {len(rngs)} generators for {n_runs} runs")
        return rngs

    def _batch(self, orders: ArrayLike, relevance: ArrayLike) -> tuple[Orders, NDArray[Any]]:
        rel = relevance if type(relevance) is np.ndarray else np.asarray(relevance)
        if rel.ndim != 1 or rel.size < 1:
            raise ValueError(f"relevance must have shape (m,) with m >= 1, got {rel.shape}")
        n_lists = 2 if self.kind == "duel" else 1  # self.provides.n_lists, without building it
        if (  # a learner's own orders: what check_orders_shape returns for them, at no cost
            type(orders) is np.ndarray
            and orders.dtype is _INTP
            and orders.ndim == n_lists + 1
            and orders.shape[0] >= 1
            and orders.shape[-1] == rel.shape[0]
            and (n_lists == 1 or orders.shape[1] == 2)
        ):
            return orders, rel
        return check_orders_shape(orders, rel.size, n_lists), rel


_INTP = np.dtype(np.intp)


@register_feedback("full")
class FullFeedbackModel(FeedbackModel):
    """Full information: the learner sees every item's grade.

    Examples
    --------
    >>> fb = FullFeedbackModel().observe(np.array([[1, 0, 2]]), np.array([0, 2, 1]))
    >>> fb.relevance.tolist()
    [[0, 2, 1]]
    """

    kind: ClassVar[str] = "full"

    def __init__(self) -> None:
        pass

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> FullFeedback:
        """Every run sees the whole relevance vector (a copy per run)."""
        orders, rel = self._batch(orders, relevance)
        return FullFeedback.handed_over(orders, relevance=rel[None, :].repeat(orders.shape[0], 0))


@register_feedback("top-k")
class TopKFeedbackModel(FeedbackModel):
    """Top-k feedback: the grades of the ``k`` items shown first, nothing else.

    ``k = 1`` is the top-1 feedback of Chaudhuri & Tewari (2015 §2): only
    ``r_t(σ_t⁻¹(1))`` is revealed. Lists shorter than ``k`` reveal all grades.

    Parameters
    ----------
    k
        Number of top positions revealed, >= 1.

    Examples
    --------
    >>> fb = TopKFeedbackModel(k=2).observe(np.array([[2, 0, 1]]), np.array([5, 6, 7]))
    >>> fb.labels.tolist()
    [[7, 5]]
    """

    kind: ClassVar[str] = "topk"

    def __init__(self, *, k: int = 1) -> None:
        if isinstance(k, bool) or not isinstance(k, int | np.integer):
            raise TypeError(f"k must be an int >= 1, got {type(k).__name__}")
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        self.k = k

    @property
    def provides(self) -> FeedbackRequirement:
        """Top-``k`` relevance."""
        return FeedbackRequirement("topk", k=int(self.k))

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"k": 1}
        yield {"k": 2}

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> TopKFeedback:
        """Grades of ``orders[:, :k]`` (fancy indexing copies them)."""
        orders, rel = self._batch(orders, relevance)
        return TopKFeedback.handed_over(orders, labels=rel[orders[:, : self.k]])


@register_feedback("choice")
class ChoiceFeedbackModel(FeedbackModel):
    """Discrete choice: the learner sees which items were chosen.

    Item ``i`` is chosen when its grade is ``>= threshold``. With binary
    relevance and the default threshold, the relevance vector *is* the choice
    indicator ``s_t`` of Ailon (2014 §2), chosen by nature whatever the ranking;
    the learner's loss is then the sum of the chosen items' positions
    (``sumloss`` minus ``|U_t|``, Ailon counts positions from 0).

    Parameters
    ----------
    threshold
        Smallest grade that counts as chosen, > 0.

    Examples
    --------
    >>> fb = ChoiceFeedbackModel().observe(np.array([[0, 1, 2]]), np.array([0, 1, 0]))
    >>> fb.chosen.tolist()
    [[False, True, False]]
    """

    kind: ClassVar[str] = "choice"

    def __init__(self, *, threshold: float = 1.0) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float | np.number):
            raise TypeError(f"threshold must be a number > 0, got {threshold!r}")
        if not np.isfinite(threshold) or threshold <= 0:
            raise ValueError(f"threshold must be finite and > 0, got {threshold}")
        self.threshold = threshold

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> ChoiceFeedback:
        """The chosen set, item-indexed, one copy per run."""
        orders, rel = self._batch(orders, relevance)
        chosen = rel >= self.threshold
        return ChoiceFeedback(orders, np.repeat(chosen[None, :], orders.shape[0], axis=0))


def _resolve_measure(measure: str) -> Any:
    from oltr.metrics import get_measure

    if not isinstance(measure, str):
        raise TypeError(f"measure must be a string like 'ndcg@10', got {type(measure).__name__}")
    return get_measure(measure)


class _MeasureModel(FeedbackModel):
    """A model holding a resolved measure; pickled by its string (Measure objects are not)."""

    measure: str
    _measure: Any

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_measure", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._measure = _resolve_measure(self.measure)


@register_feedback("bandit")
class BanditFeedbackModel(_MeasureModel):
    """Bandit feedback: the loss of the shown list under one measure, nothing else.

    Parameters
    ----------
    measure
        A measure string for :func:`oltr.metrics.get_measure`; a gain ``g`` is
        reported as the loss ``-g``.

    Examples
    --------
    >>> fb = BanditFeedbackModel(measure="sumloss").observe(np.array([[1, 0]]), np.array([1, 0]))
    >>> fb.loss.tolist()  # item 0 (grade 1) at position 2
    [2.0]
    """

    kind: ClassVar[str] = "bandit"

    def __init__(self, *, measure: str = "sumloss") -> None:
        self._measure = _resolve_measure(measure)
        self.measure = measure

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"measure": "sumloss"}
        yield {"measure": "ndcg@3"}

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> BanditFeedback:
        """The loss of each run's order."""
        orders, rel = self._batch(orders, relevance)
        value = np.asarray(self._measure(rel, orders), dtype=np.float64)
        return BanditFeedback(orders, value if self._measure.kind == "loss" else -value)


@register_feedback("duel")
class DuelFeedbackModel(_MeasureModel):
    """A user comparing two lists: the outcome of a noisy duel on a value function.

    With ``v`` the measure (negated for losses) and ``Δ = v(second) − v(first)``:

    * ``link="logistic"``: the second list wins with probability
      ``σ(scale · Δ) = 1 / (1 + exp(−scale · Δ))``, else the first (no ties);
      Yue & Joachims (2009 §5.2) use the logistic link on ``10 × NDCG@10``,
      the defaults here;
    * ``link="sign"``: deterministic, ``outcome = sign(Δ)``, 0 for a tie.

    Parameters
    ----------
    measure
        A measure string for :func:`oltr.metrics.get_measure`.
    scale
        Multiplier of the value gap, > 0 (logistic link only).
    link
        ``"logistic"`` or ``"sign"``.

    References
    ----------
    Yue & Joachims 2009, §3.1 (``P(w ≻ w') = σ(v(w) − v(w'))``) and §5.2.

    Examples
    --------
    >>> orders = np.array([[[0, 1], [1, 0]]])  # first puts item 0 on top, second item 1
    >>> DuelFeedbackModel(measure="dcg", link="sign").observe(orders, np.array([0, 1])).outcome
    array([1], dtype=int8)
    """

    kind: ClassVar[str] = "duel"
    stochastic: ClassVar[bool] = True

    def __init__(
        self, *, measure: str = "ndcg@10", scale: float = 10.0, link: str = "logistic"
    ) -> None:
        self._measure = _resolve_measure(measure)
        if isinstance(scale, bool) or not isinstance(scale, int | float | np.number):
            raise TypeError(f"scale must be a number > 0, got {scale!r}")
        if not np.isfinite(scale) or scale <= 0:
            raise ValueError(f"scale must be finite and > 0, got {scale}")
        if link not in ("logistic", "sign"):
            raise ValueError(f"link must be 'logistic' or 'sign', got {link!r}")
        self.measure = measure
        self.scale = scale
        self.link = link

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"measure": "ndcg@3"}
        yield {"measure": "dcg", "link": "sign"}

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> DuelFeedback:
        """Outcome of each run's duel between ``orders[:, 0]`` and ``orders[:, 1]``."""
        orders, rel = self._batch(orders, relevance)
        value = np.asarray(self._measure(rel, orders), dtype=np.float64)  # (B, 2)
        gap = (value[:, 1] - value[:, 0]) * (1.0 if self._measure.kind == "gain" else -1.0)
        if self.link == "sign":
            outcome = np.sign(gap)
        else:
            p_second = 1.0 / (1.0 + np.exp(-float(self.scale) * gap))
            u = self._rngs(rngs, orders.shape[0]).random()
            outcome = np.where(u < p_second, 1, -1)
        return DuelFeedback(orders, outcome.astype(np.int8))
