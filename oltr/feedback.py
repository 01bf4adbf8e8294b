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
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.registry import register_feedback
from oltr.types import Configurable, FloatArray, Orders, RunGenerators

__all__ = [
    "FEEDBACK_KINDS",
    "BanditFeedback",
    "BanditFeedbackModel",
    "ChoiceFeedback",
    "ChoiceFeedbackModel",
    "DuelFeedback",
    "DuelFeedbackModel",
    "Feedback",
    "FeedbackKind",
    "FeedbackModel",
    "FeedbackRequirement",
    "FullFeedback",
    "FullFeedbackModel",
    "NoFeedback",
    "TopKFeedback",
    "TopKFeedbackModel",
    "check_orders_shape",
]

FeedbackKind: TypeAlias = Literal["none", "full", "topk", "choice", "bandit", "duel"]
FEEDBACK_KINDS: tuple[str, ...] = ("none", "full", "topk", "choice", "bandit", "duel")

_DESCRIPTIONS = {
    "none": "no feedback",
    "full": "full relevance of every item",
    "choice": "the set of chosen items",
    "bandit": "the loss of the shown list (bandit feedback)",
    "duel": "the outcome of a duel between two lists",
}


@dataclass(frozen=True)
class FeedbackRequirement:
    """What a learner needs to see, or what a feedback model reveals.

    Parameters
    ----------
    kind
        One of :data:`FEEDBACK_KINDS`.
    k
        For ``kind="topk"`` only: the number of top positions whose grades are
        needed (>= 1).

    Examples
    --------
    >>> top1, top2 = FeedbackRequirement("topk", k=1), FeedbackRequirement("topk", k=2)
    >>> top1.satisfied_by(top2), top2.satisfied_by(top1)
    (True, False)
    >>> top2.satisfied_by(FeedbackRequirement("full"))
    True
    """

    kind: FeedbackKind
    k: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in FEEDBACK_KINDS:
            raise ValueError(
                f"feedback kind must be one of {', '.join(FEEDBACK_KINDS)}; got {self.kind!r}"
            )
        if self.kind == "topk":
            if isinstance(self.k, bool) or not isinstance(self.k, int | np.integer):
                raise TypeError(f"k must be an int >= 1 for kind='topk', got {self.k!r}")
            if self.k < 1:
                raise ValueError(f"k must be >= 1 for kind='topk', got {self.k}")
            object.__setattr__(self, "k", int(self.k))
        elif self.k is not None:
            raise ValueError(f"k applies only to kind='topk', got k={self.k} for {self.kind!r}")

    @property
    def n_lists(self) -> int:
        """Lists shown per run and round: 2 for duels (orders (B, 2, m)), else 1."""
        return 2 if self.kind == "duel" else 1

    def describe(self) -> str:
        """A phrase for messages, e.g. ``"top-2 relevance"``."""
        if self.kind == "topk":
            return f"top-{self.k} relevance"
        return _DESCRIPTIONS[self.kind]

    def satisfied_by(self, provided: FeedbackRequirement, *, check_k: bool = True) -> bool:
        """Whether feedback ``provided`` reveals at least what ``self`` needs.

        ``check_k=False`` compares kinds only (for checks made before the
        model's ``k`` is known).
        """
        if self.kind == provided.kind:
            if self.kind == "topk" and check_k:
                return bool(provided.k is not None and self.k is not None and provided.k >= self.k)
            return True
        if self.kind == "none":
            return provided.n_lists == 1
        return provided.kind == "full" and self.kind in ("topk", "choice")


# ---------------------------------------------------------------------------
# feedback objects


def _frozen(array: ArrayLike, dtype: Any = None) -> NDArray[Any]:
    """A fresh read-only copy (never a view of the caller's array)."""
    out = np.array(array, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class Feedback:
    """Base of the feedback kinds: the shown ``orders``, one row per run.

    ``orders`` has shape (B, m), or (B, 2, m) for duels; it is a read-only copy
    of what the learner ranked.
    """

    kind: ClassVar[str] = "none"
    orders: Orders

    def __post_init__(self) -> None:
        object.__setattr__(self, "orders", _frozen(self.orders, np.intp))
        for name in self._arrays():
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        for name in self._arrays():
            if getattr(self, name).shape[:1] != self.orders.shape[:1]:
                raise ValueError(
                    f"{name} must have {self.n_runs} rows (one per run), "
                    f"got shape {getattr(self, name).shape}"
                )

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ()

    @property
    def n_runs(self) -> int:
        """Number of runs ``B``."""
        return int(self.orders.shape[0])

    def arrays(self) -> Iterator[NDArray[Any]]:
        """Every array this feedback holds (for audits: nothing may alias the truth)."""
        yield self.orders
        for name in self._arrays():
            yield getattr(self, name)

    def restrict(self, required: FeedbackRequirement) -> Feedback:
        """This feedback cut down to exactly ``required`` (which it must satisfy)."""
        if required.kind == "none":
            return self if type(self) is NoFeedback else NoFeedback(self.orders)
        if required.kind == self.kind and required.kind != "topk":
            return self
        return self._restrict(required)

    def _restrict(self, required: FeedbackRequirement) -> Feedback:
        raise ValueError(f"{self.kind!r} feedback cannot provide {required.describe()}")


@dataclass(frozen=True, eq=False)
class NoFeedback(Feedback):
    """No information beyond the shown orders (for learners that ignore feedback)."""

    kind: ClassVar[str] = "none"


@dataclass(frozen=True, eq=False)
class FullFeedback(Feedback):
    """Full information: every item's grade.

    Attributes
    ----------
    relevance
        Array of shape (B, m): ``relevance[b, i]`` is the grade of item ``i``.
    """

    kind: ClassVar[str] = "full"
    relevance: NDArray[Any]

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ("relevance",)

    def _restrict(self, required: FeedbackRequirement) -> Feedback:
        if required.kind == "topk":
            k = min(int(required.k or 1), self.orders.shape[-1])
            rows = np.arange(self.n_runs)[:, None]
            return TopKFeedback(self.orders, self.relevance[rows, self.orders[:, :k]])
        if required.kind == "choice":
            return ChoiceFeedback(self.orders, self.relevance > 0)
        return super()._restrict(required)


@dataclass(frozen=True, eq=False)
class TopKFeedback(Feedback):
    """Grades of the top ``k`` shown items only (Chaudhuri & Tewari 2015 §2, 2016 §2).

    Attributes
    ----------
    labels
        Array of shape (B, k'), ``k' = min(k, m)``: ``labels[b, j]`` is the grade
        of item ``orders[b, j]``, the item shown at position ``j + 1``.
    """

    kind: ClassVar[str] = "topk"
    labels: NDArray[Any]

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ("labels",)

    @property
    def k(self) -> int:
        """Number of revealed positions ``k'``."""
        return int(self.labels.shape[1])

    def _restrict(self, required: FeedbackRequirement) -> Feedback:
        if required.kind == "topk":
            k = int(required.k or 1)
            return self if k >= self.k else TopKFeedback(self.orders, self.labels[:, :k])
        return super()._restrict(required)


@dataclass(frozen=True, eq=False)
class ChoiceFeedback(Feedback):
    """The set of chosen items (Ailon 2014 §2: ``s_t(u) = 1`` iff ``u ∈ U_t``).

    Attributes
    ----------
    chosen
        Boolean array of shape (B, m), indexed by item: ``chosen[b, i]`` is True
        when item ``i`` was chosen.
    """

    kind: ClassVar[str] = "choice"
    chosen: NDArray[np.bool_]

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ("chosen",)


@dataclass(frozen=True, eq=False)
class BanditFeedback(Feedback):
    """The loss of the shown list and nothing else.

    Attributes
    ----------
    loss
        Array of shape (B,): the model's measure of the shown order, as a loss
        (a gain ``g`` is reported as ``-g``), so smaller is always better.
    """

    kind: ClassVar[str] = "bandit"
    loss: FloatArray

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ("loss",)


@dataclass(frozen=True, eq=False)
class DuelFeedback(Feedback):
    """Which of two compared lists won (Yue & Joachims 2009 §3).

    ``orders`` has shape (B, 2, m): ``orders[:, 0]`` is the first list (the
    incumbent, ``w_t``), ``orders[:, 1]`` the second (the challenger, ``w'_t``).

    Attributes
    ----------
    outcome
        Integer array of shape (B,): -1 when the first list won, +1 when the
        second won, 0 for a tie — the convention of :mod:`oltr.envs.interleaving`,
        so a duel decided by interleaved clicks reads the same.
    """

    kind: ClassVar[str] = "duel"
    outcome: NDArray[np.int8]

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ("outcome",)

    @property
    def second_won(self) -> NDArray[np.bool_]:
        """Shape (B,): True where the challenger won."""
        return np.asarray(self.outcome > 0)

    @property
    def tie(self) -> NDArray[np.bool_]:
        """Shape (B,): True where the duel was a tie."""
        return np.asarray(self.outcome == 0)


# ---------------------------------------------------------------------------
# feedback models


def check_orders_shape(orders: ArrayLike, n_items: int, n_lists: int = 1) -> Orders:
    """Validate the shape and dtype of batched orders; return them as an intp array.

    Shape (B, m) for ``n_lists == 1``, (B, 2, m) for duels. Only shapes are
    checked here (O(1)); see :func:`oltr.learners.base.check_orders` for the
    permutation check.
    """
    arr = np.asarray(orders)
    want = "(B, m)" if n_lists == 1 else "(B, 2, m)"
    ndim = 2 if n_lists == 1 else 3
    if arr.ndim != ndim or arr.shape[-1] != n_items or (n_lists == 2 and arr.shape[1] != 2):
        raise ValueError(f"orders must have shape {want} with m = {n_items}, got {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError("orders must hold at least one run (B >= 1)")
    if not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"orders must be an integer array of item indices, got dtype {arr.dtype}")
    return arr.astype(np.intp, copy=False)


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
        rel = np.asarray(relevance)
        if rel.ndim != 1 or rel.size < 1:
            raise ValueError(f"relevance must have shape (m,) with m >= 1, got {rel.shape}")
        return check_orders_shape(orders, rel.size, self.provides.n_lists), rel


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
        return FullFeedback(orders, np.repeat(rel[None, :], orders.shape[0], axis=0))


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
        return TopKFeedback(orders, rel[orders[:, : self.k]])


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
