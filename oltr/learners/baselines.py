"""Reference rankers that do not learn: uniformly random, fixed, and do-nothing.

They bracket every learning curve — a learner that does not beat
:class:`RandomRanker` has learned nothing, and :class:`FixedRanker` is the
"one fixed action" the regret compares against — and :class:`NoOpLearner`
measures the runner's own overhead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from oltr.feedback import Feedback, FeedbackRequirement
from oltr.learners.base import Learner
from oltr.permutations import order_from_scores
from oltr.registry import register_learner
from oltr.types import Context, Orders, RunRNGLike
from oltr.validation import check_scalar

__all__ = ["FixedRanker", "NoOpLearner", "RandomRanker"]


@register_learner("random")
class RandomRanker(Learner[Feedback]):
    """Shows a uniformly random order every round, ignoring all feedback.

    Its expected value is the average of the measure over all ``m!`` orders
    (the "random ranker" baseline of Chaudhuri & Tewari 2016 §6).

    Parameters
    ----------
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    Examples
    --------
    >>> from oltr.types import Context
    >>> orders = RandomRanker(n_runs=3, rng=0).rank(Context(t=1, n_items=4))
    >>> orders.shape, sorted(orders[0].tolist())
    ((3, 4), [0, 1, 2, 3])
    """

    requires = FeedbackRequirement("none")

    def __init__(self, *, n_runs: int = 1, rng: RunRNGLike = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)

    def rank(self, context: Context) -> Orders:
        """A fresh uniform permutation per run."""
        return self.rngs.permutations(context.n_items)

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """Nothing to learn."""


@register_learner("fixed")
class FixedRanker(Learner[Feedback]):
    """Shows the same order every round: by item index, or by one feature column.

    Parameters
    ----------
    feature
        None ranks items ``0, 1, …, m-1``; an integer ``j >= 0`` ranks by
        decreasing ``X[:, j]`` (ties: lower index first), a single-feature
        ranker such as BM25 for query streams. Contexts without features (fixed
        item sets) always get ``0, 1, …, m-1``.
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    Examples
    --------
    >>> from oltr.types import Context
    >>> FixedRanker().rank(Context(t=1, n_items=3)).tolist()
    [[0, 1, 2]]
    >>> X = np.array([[0.1], [0.9], [0.5]])
    >>> FixedRanker(feature=0, n_runs=2).rank(Context(t=1, n_items=3, features=X)).tolist()
    [[1, 2, 0], [1, 2, 0]]
    """

    requires = FeedbackRequirement("none")

    def __init__(
        self, *, feature: int | None = None, n_runs: int = 1, rng: RunRNGLike = None
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        if feature is not None:
            check_scalar(feature, "feature", low=0, integer=True)
        self.feature = feature

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}
        yield {"feature": 0}

    def rank(self, context: Context) -> Orders:
        """The fixed order, repeated for every run."""
        if self.feature is None or context.features is None:
            order = np.arange(context.n_items, dtype=np.intp)
        elif self.feature >= context.n_features:
            raise ValueError(
                f"feature={self.feature} is out of range for {context.n_features} feature columns"
            )
        else:
            order = order_from_scores(context.features[:, self.feature])
        return np.tile(order, (self.n_runs, 1))

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """Nothing to learn."""


@register_learner("noop")
class NoOpLearner(Learner[Feedback]):
    """Does nothing, as fast as possible: for measuring the runner's overhead.

    Returns one cached identity order per list length (read-only) and ignores
    feedback.

    Parameters
    ----------
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    Examples
    --------
    >>> from oltr.types import Context
    >>> NoOpLearner(n_runs=2).rank(Context(t=1, n_items=2)).tolist()
    [[0, 1], [0, 1]]
    """

    requires = FeedbackRequirement("none")

    def __init__(self, *, n_runs: int = 1, rng: RunRNGLike = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self._cache: dict[int, Orders] = {}

    def rank(self, context: Context) -> Orders:
        """The identity order for every run (cached)."""
        orders = self._cache.get(context.n_items)
        if orders is None:
            orders = np.tile(np.arange(context.n_items, dtype=np.intp), (self.n_runs, 1))
            orders.flags.writeable = False
            self._cache[context.n_items] = orders
        return orders

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """Nothing to learn."""
