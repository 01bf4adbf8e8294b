"""What a round reveals: one frozen dataclass per feedback kind.

And the :class:`FeedbackRequirement` a learner declares.


Each kind is batched over a leading run axis ``B``; :meth:`Feedback.restrict`
cuts feedback down to exactly what a learner's :class:`FeedbackRequirement`
asks for, so a learner never receives more than it declared.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self, TypeAlias

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.types import FloatArray, Orders

__all__ = [
    "FEEDBACK_KINDS",
    "BanditFeedback",
    "ChoiceFeedback",
    "DuelFeedback",
    "Feedback",
    "FeedbackKind",
    "FeedbackRequirement",
    "FullFeedback",
    "NoFeedback",
    "TopKFeedback",
]

FeedbackKind: TypeAlias = Literal["none", "full", "topk", "choice", "bandit", "duel", "clicks"]
FEEDBACK_KINDS: tuple[str, ...] = ("none", "full", "topk", "choice", "bandit", "duel", "clicks")

_DESCRIPTIONS = {
    "none": "no feedback",
    "full": "full relevance of every item",
    "choice": "the set of chosen items",
    "bandit": "the loss of the shown list (bandit feedback)",
    "duel": "the outcome of a duel between two lists",
    "clicks": "the clicks on the shown list",
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
            if type(self.k) is int and self.k >= 1:  # the common case, checked cheaply
                return
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


_INTP = np.dtype(np.intp)


def _frozen(array: ArrayLike, dtype: Any = None) -> NDArray[Any]:
    """A fresh read-only copy (never a view of the caller's array)."""
    if type(array) is np.ndarray and (
        dtype is None or array.dtype is dtype or array.dtype == dtype
    ):
        out = array.copy(order="K")  # the common case, without np.array's conversions
    else:
        out = np.array(array, dtype=dtype, copy=True)
    out.setflags(write=False)
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
        # Built every round: one pass, each copy made as cheaply as numpy allows, and
        # written to the instance dict directly (a frozen dataclass's setattr is slower).
        fields = self.__dict__
        orders = fields["orders"] = _frozen(self.orders, _INTP)
        for name in self._arrays():
            value = fields[name] = _frozen(fields[name])
            if value.shape[:1] != orders.shape[:1]:
                raise ValueError(
                    f"{name} must have {self.n_runs} rows (one per run), got shape {value.shape}"
                )

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ()

    @classmethod
    def handed_over(cls, orders: Orders, **arrays: NDArray[Any]) -> Self:
        """Feedback built from ``arrays`` its caller has just made for it and keeps no reference to.

        A feedback model's arrays (fancy-indexed grades, repeated grade rows) are
        new already, so they are made read-only in place instead of copied; the
        orders, which the learner holds, are copied as by the constructor. The
        caller vouches that each array has one row per run.
        """
        feedback = object.__new__(cls)
        fields = feedback.__dict__
        if type(orders) is np.ndarray and orders.dtype is _INTP:  # a learner's own orders
            shown = fields["orders"] = orders.copy(order="K")  # _frozen's copy, without its call
            shown.setflags(write=False)
        else:
            fields["orders"] = _frozen(orders, _INTP)
        for name in cls._arrays():
            value = fields[name] = arrays[name]
            value.setflags(write=False)
        return feedback

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

    def restrict(self, required: FeedbackRequirement) -> Feedback:
        """As :meth:`Feedback.restrict`; top-k feedback deep enough is returned as it is."""
        if required.kind == "topk" and int(required.k or 1) >= self.labels.shape[1]:
            return self  # checked first: the runner restricts every round
        return super().restrict(required)

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
        second won, 0 for a tie — the convention of :mod:`oltr.clicks.interleaving`,
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
