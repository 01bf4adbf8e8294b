"""What the counterfactual learners share: the training queries' click counts, the optimiser.

:func:`click_table` turns a bound log (or its :class:`~oltr.logs.PositionCounts`)
into the per-(document, position) clicks and impressions of the queries that
were logged, with each query's number of impressions; :func:`minimize_scores`
fits a scorer to an objective of the scores by full-batch L-BFGS.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import minimize

from oltr.data.dataset import LetorDataset
from oltr.errors import InputError, NumericalError
from oltr.learners.counterfactual.model import Scorer, check_propensities
from oltr.learners.counterfactual.objectives import Blocks
from oltr.logs import BoundLog, PositionCounts, position_counts

__all__ = [
    "ClickTable",
    "ScoreObjective",
    "click_table",
    "default_clip",
    "minimize_scores",
    "propensity_vector",
]

FloatArray = NDArray[np.float64]
#: An objective of the scores: value and gradient with respect to the scores.
ScoreObjective = Callable[[FloatArray], tuple[float, FloatArray]]


@dataclass(frozen=True, eq=False)
class ClickTable:
    """Clicks and impressions of the logged queries' documents.

    Attributes
    ----------
    rows
        Array (m,): the data set rows of the logged queries' documents, query by query.
    blocks
        The queries' blocks within ``rows``.
    query_index
        Array (n_logged,): the data set query of every block.
    clicks, shown
        Arrays (m, K): clicks and impressions per (document, 0-based position).
    impressions
        Array (n_logged,): the number of logged impressions of every query.
    features
        Array (m, d): the documents' features.
    """

    rows: NDArray[np.int64]
    blocks: Blocks
    query_index: NDArray[np.int64]
    clicks: FloatArray
    shown: FloatArray
    impressions: FloatArray
    features: FloatArray

    @property
    def n_sessions(self) -> int:
        """Number of logged impressions (sessions)."""
        return int(round(float(self.impressions.sum())))

    @property
    def n_positions(self) -> int:
        """K, the number of positions counted."""
        return int(self.clicks.shape[1])


def click_table(
    bound_or_counts: BoundLog | PositionCounts,
    dataset: LetorDataset,
    *,
    shown_only: bool = False,
) -> ClickTable:
    """The :class:`ClickTable` of a bound log or of its counts on ``dataset``.

    A query's impressions are its documents' impressions at the first
    position (every impression shows a document there). ``shown_only`` keeps
    only the documents the log showed (the displayed lists), else every
    document of a logged query.
    """
    if isinstance(bound_or_counts, BoundLog):
        if bound_or_counts.dataset is not dataset and (
            bound_or_counts.dataset.n_docs != dataset.n_docs
        ):
            raise InputError("the log is bound to another data set than the one given")
        counts = position_counts(bound_or_counts)
    elif isinstance(bound_or_counts, PositionCounts):
        counts = bound_or_counts.total()
    else:
        raise InputError(
            f"expected a BoundLog or PositionCounts, got {type(bound_or_counts).__name__}"
        )
    clicks, shown = counts.clicks, counts.shown
    if clicks.shape[0] != dataset.n_docs:
        raise InputError(
            f"the counts cover {clicks.shape[0]} documents, the data set has {dataset.n_docs}"
        )
    offsets = dataset.offsets
    per_query = np.add.reduceat(shown[:, 0], offsets[:-1])
    logged = np.flatnonzero(per_query > 0)
    if logged.size == 0:
        raise InputError("the log has no impression: nothing to learn from")
    lengths = np.diff(offsets)[logged]
    starts = offsets[logged]
    rows = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    if shown_only:
        keep = shown[rows].sum(axis=1) > 0
        lengths = np.add.reduceat(keep.astype(np.int64), np.cumsum(lengths) - lengths)
        rows = rows[keep]
    blocks = Blocks(np.cumsum(lengths) - lengths, lengths)
    return ClickTable(
        rows=rows,
        blocks=blocks,
        query_index=logged.astype(np.int64),
        clicks=clicks[rows],
        shown=shown[rows],
        impressions=per_query[logged],
        features=np.asarray(dataset.features)[rows],
    )


def propensity_vector(propensities: Any, n_positions: int, *, learner: str) -> FloatArray:
    """θ (K,) from an array, a :class:`~oltr.estimators.PropensityEstimate` or a model's list.

    Propensity estimates longer than the log's lists are cut to ``n_positions``;
    shorter ones cannot weight every logged click and are refused.
    """
    if propensities is None:
        raise InputError(
            f"learner {learner!r} needs propensities: pass an array θ (θ_1 = 1) or a "
            "PropensityEstimate (oltr logs propensities), or use learner 'naive' or 'dla'"
        )
    theta = getattr(propensities, "theta", propensities)
    theta = check_propensities(theta)
    if theta.size < n_positions:
        raise InputError(
            f"the propensities cover {theta.size} positions but the log shows lists of up to "
            f"{n_positions}: estimate them for {n_positions} positions"
        )
    return np.asarray(theta[:n_positions] / theta[0], dtype=np.float64)


def default_clip(n_sessions: int) -> float:
    """τ = min(1, 10/√N): the clipping threshold of Oosterhuis 2023's experiments (N sessions)."""
    return min(1.0, 10.0 / math.sqrt(max(n_sessions, 1)))


def minimize_scores(
    objective: ScoreObjective,
    scorer: Scorer,
    features: FloatArray,
    start: FloatArray,
    *,
    l2: float,
    max_iter: int,
    what: str,
) -> FloatArray:
    """Minimise ``objective(scorer(params, features)) + l2/2 ‖params‖²`` by L-BFGS (scipy).

    Raises
    ------
    NumericalError
        When the objective or its gradient stops being finite.
    """
    from threadpoolctl import threadpool_limits

    fun = regularised(objective, scorer, features, l2)
    # One BLAS thread: the same sums on every machine, and no threads spinning on small products.
    with threadpool_limits(1, user_api="blas"):
        result = minimize(
            fun, start, jac=True, method="L-BFGS-B", options={"maxiter": int(max_iter)}
        )
    params = np.asarray(result.x, dtype=np.float64)
    if not np.isfinite(params).all() or not np.isfinite(result.fun):
        raise NumericalError(f"{what}: the optimiser left finite values ({result.message})")
    return params


def regularised(
    objective: ScoreObjective, scorer: Scorer, features: FloatArray, l2: float
) -> Callable[[FloatArray], tuple[float, FloatArray]]:
    """``params -> (value, gradient)`` of ``objective ∘ scorer + l2/2 ‖params‖²``."""

    def fun(params: FloatArray) -> tuple[float, FloatArray]:
        scores, backward = scorer.forward(params, features)
        value, d_scores = objective(scores)
        return value + 0.5 * l2 * float(params @ params), backward(d_scores) + l2 * params

    return fun
