"""The learner protocol, batched over runs, and the helpers learners share.

A learner ranks ``B`` runs at once and learns from what the feedback model
reveals, nothing more::

    orders = learner.rank(context)             # (B, m) intp; (B, 2, m) for duels
    learner.update(context, orders, feedback)  # feedback: exactly learner.requires

Writing one takes four things (see the README for a complete 20-line example):

1. keyword-only hyperparameters, each validated (``check_scalar``) and stored
   unmodified under its own name, then ``super().__init__(n_runs=n_runs, rng=rng)``;
2. ``requires``: the :class:`~oltr.feedback.FeedbackRequirement` it consumes
   (a class attribute, or a property when it depends on a hyperparameter);
3. :meth:`Learner.rank` and :meth:`Learner.update` as array code over the run
   axis, drawing randomness only from ``self.rngs`` (one generator per run, so
   run ``b`` behaves the same in any batch);
4. ``_test_params()``: a few small settings for the conformance suite.

A learner whose schedule depends on the horizon T declares
``horizon_dependent = True`` and takes a keyword ``horizon: int | None = None``;
the runner (:func:`oltr.build.make_learner`) then passes the run's
horizon unless the configuration sets it. The conformance suite checks that the
declaration and the constructor agree.

``get_params``, ``clone``, ``repr`` and pickling come for free (river ``Base``,
scikit-learn's constructor rule).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.feedback import Feedback, FeedbackRequirement
from oltr.types import Configurable, Context, Orders, RunGenerators, RunRNGLike
from oltr.validation import check_n_runs

__all__ = ["FeatureScorer", "FeedbackT", "Learner", "ParameterDueler", "ResumableRound"]

#: The feedback kind a learner consumes (its ``update`` is typed with it).
FeedbackT = TypeVar("FeedbackT", bound=Feedback)


class Learner(Configurable, ABC, Generic[FeedbackT]):
    """Base class of online rankers: ``B`` runs, per-run generators, keyword-only params.

    Parameters
    ----------
    n_runs
        Number of runs ``B`` advanced together, >= 1.
    rng
        Per-run randomness: a seed (run ``b`` draws from the seed's child ``b``,
        whatever ``n_runs``), a Generator (spawned into ``n_runs`` children), or
        ``n_runs`` Generators (:class:`~oltr.types.RunGenerators`), as the runner
        passes them.

    Attributes
    ----------
    requires : FeedbackRequirement
        What :meth:`update` needs; the runner refuses weaker feedback models
        before any work and hands :meth:`update` exactly this kind.
    context_kind : str
        ``"items"`` (a fixed item set, no features), ``"features"`` (feature
        lists, possibly of varying length) or ``"any"``.
    rngs : RunGenerators
        One generator per run.
    """

    _reserved: tuple[str, ...] = ("n_runs", "rng")
    requires: FeedbackRequirement = FeedbackRequirement("none")
    context_kind: ClassVar[str] = "any"
    horizon_dependent: ClassVar[bool] = False
    #: Attributes that hold nothing from one round to the next (reused buffers): left out
    #: of snapshots and sized again on first use after a restore.
    scratch_fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, n_runs: int = 1, rng: RunRNGLike = None) -> None:
        self.n_runs = check_n_runs(n_runs)
        self._rng_arg = rng
        self.rngs = RunGenerators.from_rng(rng, self.n_runs)
        self.run_index: NDArray[np.intp] = np.arange(self.n_runs, dtype=np.intp)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every concrete update() is guarded: it receives exactly the declared feedback
        # kind, so learners type `feedback` by that kind and never narrow it themselves.
        super().__init_subclass__(**kwargs)
        update = cls.__dict__.get("update")
        if update is not None and not getattr(update, "_checks_kind", False):
            cls.update = _checked_update(update)  # type: ignore[method-assign]

    @abstractmethod
    def rank(self, context: Context) -> Orders:
        """Orders of shape (B, m) — (B, 2, m) when ``requires.kind == "duel"``."""

    @abstractmethod
    def update(self, context: Context, orders: Orders, feedback: FeedbackT) -> None:
        """Learn from ``feedback`` (exactly ``self.requires``) on the shown ``orders``."""

    def trusted_rank(self, context: Context) -> Orders:
        """:meth:`rank` for a caller that keeps the runner's guarantees (below); same results.

        The runner (:func:`oltr.experiments.runner.run_set`) calls this and
        :meth:`trusted_update` instead of the checked verbs. It guarantees: the
        contexts come from one environment in round order; each round's
        :meth:`trusted_update` gets the same context, the orders this method
        returned (unmodified) and ``feedback.restrict(self.requires)``; and it
        keeps nothing this method returns past the next round, so a learner may
        reuse its buffers. A learner may skip the checks these make redundant;
        the draws and the arithmetic must stay those of :meth:`rank` and
        :meth:`update`, bit for bit. By default, the checked verbs themselves.
        """
        return self.rank(context)

    def trusted_update(self, context: Context, orders: Orders, feedback: FeedbackT) -> None:
        """:meth:`update` under :meth:`trusted_rank`'s guarantees (by default, ``update``)."""
        self.update(context, orders, feedback)

    def clone(
        self, *, n_runs: int | None = None, rng: RunRNGLike = None, same_rng: bool = True
    ) -> Learner[FeedbackT]:
        """A fresh, untrained learner with the same hyperparameters.

        With ``same_rng`` (the default) and no ``rng``, the clone reuses the
        original ``rng`` argument: a seed gives an identical clone, a Generator
        is shared.
        """
        rng_arg = self._rng_arg if (rng is None and same_rng) else rng
        return type(self)(
            **self.get_params(), n_runs=self.n_runs if n_runs is None else n_runs, rng=rng_arg
        )

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        """Small hyperparameter settings for the conformance suite."""
        yield {}


class ResumableRound:
    """A learner whose :meth:`update` needs what its latest ``rank`` drew (scores, candidates).

    A service that shows several lists before their clicks come back keeps
    :meth:`round_state` with each list and hands it back with
    :meth:`resume_round` just before that list's update; a loop that
    alternates rank and update never needs it. ``_round_attr`` names the
    attribute that holds the round.
    """

    _round_attr: ClassVar[str] = "_last"

    def round_state(self) -> Any:
        """What :meth:`update` needs of the latest ``rank`` (``None`` once it has learned)."""
        return getattr(self, self._round_attr)

    def resume_round(self, state: Any) -> None:
        """Make ``state`` (from :meth:`round_state`) the round the next ``update`` learns."""
        setattr(self, self._round_attr, state)


@runtime_checkable
class ParameterDueler(Protocol):
    """A learner in parameter space that improves from duels (Yue & Joachims 2009 §3).

    Each round it proposes two points of W per run, its current ``w_t`` and a
    candidate ``w'_t`` (:meth:`propose`, shape (B, 2, d)); a duel environment
    (:class:`oltr.envs.duels.ValueFunctionDuel`) compares them and the learner
    sees only what ``parameter_feedback`` names (:meth:`learn`):

    * ``"duel"``: the outcome per run, +1 when ``w'_t`` won, −1 otherwise (DBGD);
    * ``"preference"``: the probability P(w_t ≻ w'_t) itself (the BGD baselines
      of §5.1, which assume strictly more information).

    Register one with :func:`oltr.registry.register_dueler`; the conformance
    suite then checks it (shapes, seeding, batch independence, learning).
    """

    parameter_feedback: ClassVar[str]
    n_runs: int

    def propose(self) -> NDArray[np.float64]:
        """The pair (w_t, w'_t) of every run, shape (B, 2, d)."""
        ...

    def learn(self, outcome: ArrayLike) -> None:
        """Update from this round's duel: outcomes or preferences, shape (B,)."""
        ...


@runtime_checkable
class FeatureScorer(Protocol):
    """A learner whose current rankers score feature rows without linear weights.

    A held-out evaluation of such a learner (e.g. a neural ranker) ranks each
    test list by ``score_features(X)``, shape (B, n) for ``X`` of shape (n, d),
    where a linear learner exposes ``weights_`` instead.
    """

    n_runs: int

    def score_features(self, features: NDArray[np.float64]) -> NDArray[np.float64]:
        """Every run's scores of the rows of ``features``, shape (B, n)."""
        ...


def _checked_update(update: Any) -> Any:
    """``update`` refusing feedback of another kind than the learner's ``requires``."""

    @functools.wraps(update)
    def checked(self: Learner[Any], context: Context, orders: Orders, feedback: Any) -> None:
        required = self.requires.kind
        if required != "none" and getattr(feedback, "kind", None) != required:
            raise TypeError(
                f"{type(self).__name__}.update needs {required!r} feedback "
                f"({self.requires.describe()}), got {type(feedback).__name__}; "
                "pass feedback.restrict(learner.requires)"
            )
        update(self, context, orders, feedback)

    checked._checks_kind = True  # type: ignore[attr-defined]
    return checked
