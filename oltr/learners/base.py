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

A learner whose schedule depends on the horizon T takes a keyword
``horizon: int | None = None``; the runner fills it with the run's horizon
unless the configuration sets it.

``get_params``, ``clone``, ``repr`` and pickling come for free (river ``Base``,
scikit-learn's constructor rule).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.feedback import Feedback, FeedbackRequirement, check_orders_shape
from oltr.types import (
    Configurable,
    Context,
    Orders,
    RunGenerators,
    RunRNGLike,
    _check_n_runs,
    check_choice,
    check_scalar,
)

__all__ = ["Learner", "check_choice", "check_orders", "check_scalar"]


class Learner(Configurable, ABC):
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

    def __init__(self, *, n_runs: int = 1, rng: RunRNGLike = None) -> None:
        self.n_runs = _check_n_runs(n_runs)
        self._rng_arg = rng
        self.rngs = RunGenerators.from_rng(rng, self.n_runs)
        self.run_index: NDArray[np.intp] = np.arange(self.n_runs, dtype=np.intp)

    @abstractmethod
    def rank(self, context: Context) -> Orders:
        """Orders of shape (B, m) — (B, 2, m) when ``requires.kind == "duel"``."""

    @abstractmethod
    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """Learn from ``feedback`` (exactly ``self.requires``) on the shown ``orders``."""

    def clone(
        self, *, n_runs: int | None = None, rng: RunRNGLike = None, same_rng: bool = True
    ) -> Learner:
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


# ---------------------------------------------------------------------------
# validation


def check_orders(
    orders: ArrayLike, n_items: int, n_runs: int | None = None, n_lists: int = 1
) -> Orders:
    """Validate batched orders: shape, integer dtype, a permutation of ``0..m-1`` per row.

    Returns the orders as an intp array. Costs O(B m log m).

    >>> check_orders([[1, 0, 2]], 3)
    array([[1, 0, 2]])
    >>> check_orders([[1, 1, 2]], 3)
    Traceback (most recent call last):
    ...
    ValueError: orders must be permutations of 0..2 along the last axis; run 0 is [1, 1, 2]
    """
    arr = check_orders_shape(orders, n_items, n_lists)
    if n_runs is not None and arr.shape[0] != n_runs:
        raise ValueError(f"orders must have {n_runs} rows (one per run), got {arr.shape[0]}")
    bad = (np.sort(arr, axis=-1) != np.arange(n_items)).any(axis=-1)
    if bad.any():
        b = int(np.argwhere(bad)[0][0])
        raise ValueError(
            f"orders must be permutations of 0..{n_items - 1} along the last axis; "
            f"run {b} is {arr[b].tolist()}"
        )
    return arr
