"""Position-bias propensities from a click log: the result type, the dispatcher and the bootstrap.

Every estimator here works under the position-based model (PBM),
``P(click | q, d, k) = θ_k · γ_{q,d}``: the examination probability θ_k depends
only on the position k, the relevance γ only on the (query, document). Only the
ratios θ_k / θ_1 are identified from clicks, so every estimate is normalised to
θ_1 = 1 (:attr:`PropensityEstimate.theta`).

Methods (:data:`METHODS`):

``"em"``
    the regression EM of Wang, Golbandi, Bendersky, Metzler & Najork 2018
    (WSDM), :mod:`oltr.estimators.em`, with a logistic regression
    (default) or the paper's gradient-boosted trees (``regressor="gbdt"``).
    It runs on a log of one deterministic logger, where θ is identified only
    through the regression, and is then biased at deep positions (by 11–18% on
    simulated MQ2008 logs); it is accurate to within 10% on logs where
    documents move between positions (two loggers: at most 7.5%).
    ``relevance="per-document"`` is the plain EM of the same paper.
``"harvesting"``
    intervention harvesting with the AllPairs estimator of Agarwal, Zaitsev,
    Wang, Li, Najork & Joachims 2019 (WSDM), :mod:`oltr.estimators.harvesting`;
    needs a log of several loggers (a ``logger`` column).
``"randomization"``
    swap interventions (Joachims, Swaminathan & Schnabel 2017, WSDM, §5.1;
    Wang, Bendersky, Metzler & Najork 2016, SIGIR, §5.2),
    :mod:`oltr.estimators.randomization`.

Intervals
---------
95% percentile intervals from a Poisson bootstrap over queries (Hanley &
MacGibbon 2006; Chamandy, Muralidharan, Najmi & Naidu 2012, "Estimating
uncertainty for massive data streams"): replicate ``b`` gives every query a
weight ``w_q ~ Poisson(1)`` and multiplies all of that query's counts by it,
then re-runs the estimator (warm-started from the point estimate). Queries are
the resampling unit because the sessions of one query share its documents'
relevance γ, so they are not independent; resampling sessions would make the
intervals too narrow. Poisson weights approximate the multinomial draw of the
classical bootstrap (n queries with replacement) and act on the counts
directly, so a replicate costs one estimator run on arrays of the counts' size,
whatever the number of sessions. ``n_bootstrap = 200`` replicates by default:
enough for a standard error to within about 5% (its relative sd is about
1/√(2B)) and for 2.5%/97.5% percentiles that move little from seed to seed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from oltr.errors import InputError
from oltr.estimators.em import em_problem
from oltr.estimators.harvesting import harvesting_problem
from oltr.estimators.propensity_fit import PropensityProblem
from oltr.estimators.randomization import randomization_problem
from oltr.logs.binding import BoundLog, PositionCounts, position_counts
from oltr.random import RNGLike, as_rng

if TYPE_CHECKING:
    from oltr.data.dataset import LetorDataset

__all__ = [
    "DEFAULT_BOOTSTRAP",
    "METHODS",
    "PropensityEstimate",
    "bootstrap_replicates",
    "estimate_propensities",
    "query_of_row",
]

#: The estimators :func:`estimate_propensities` knows.
METHODS = ("em", "harvesting", "randomization")
#: Bootstrap replicates by default.
DEFAULT_BOOTSTRAP = 200
#: Two-sided level of the intervals.
LEVEL = 0.95


@dataclass(frozen=True, eq=False)
class PropensityEstimate:
    """Estimated examination probabilities θ_1..θ_K, normalised so θ_1 = 1.

    Attributes
    ----------
    method
        The estimator (``"em"``, ``"harvesting"``, ``"randomization"``, ...).
    theta
        Array (K,): θ_k / θ_1 for positions k = 1..K (``theta[0] == 1``).
    ci
        Array (K, 2): 95% bootstrap percentile intervals (``ci[0] == [1, 1]``);
        NaN when no bootstrap was run.
    n_impressions
        Impressions (sessions) the counts came from.
    iterations
        Iterations of the point estimate's optimiser (0 for closed forms).
    converged
        Whether the point estimate met its stopping rule.
    standard_error
        Array (K,): sd of the bootstrap replicates (NaN without bootstrap).
    n_bootstrap
        Replicates behind ``ci`` and ``standard_error``.
    details
        Method-specific diagnostics (options used, log-likelihood, ...).
    """

    method: str
    theta: NDArray[np.float64]
    ci: NDArray[np.float64]
    n_impressions: int
    iterations: int = 0
    converged: bool = True
    standard_error: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    n_bootstrap: int = 0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def n_positions(self) -> int:
        """K."""
        return int(self.theta.shape[0])

    def to_json(self) -> dict[str, Any]:
        """``{"method": ..., "propensities": [...], "ci": [[lo, hi], ...]}`` (NaN as None)."""

        def num(x: float) -> float | None:
            return float(x) if np.isfinite(x) else None

        return {
            "method": self.method,
            "propensities": [num(x) for x in self.theta.tolist()],
            "ci": [[num(lo), num(hi)] for lo, hi in self.ci.tolist()],
        }


def query_of_row(dataset: LetorDataset) -> NDArray[np.int64]:
    """The query of every row (document) of ``dataset``, shape (n_docs,)."""
    return np.repeat(np.arange(dataset.n_queries, dtype=np.int64), np.diff(dataset.offsets))


def bootstrap_replicates(
    problem: PropensityProblem,
    start: Any,
    n_bootstrap: int,
    rng: np.random.Generator,
    progress: Callable[[int], Any] | None = None,
) -> NDArray[np.float64]:
    """θ of ``n_bootstrap`` Poisson-bootstrap replicates over queries, shape (B, K).

    Replicate b draws ``w ~ Poisson(1)`` per query (``rng.poisson(1.0, n_groups)``,
    in replicate order) and fits the counts reweighted by ``w``, warm-started at
    ``start``. A replicate whose fit fails (e.g. every query that identifies a
    position drew weight 0) is a row of NaN.
    """
    rows: list[NDArray[np.float64] | None] = []
    for _ in range(n_bootstrap):
        w = rng.poisson(1.0, problem.n_groups).astype(np.float64)
        try:
            rows.append(problem.fit(w, start).theta)
        except InputError:
            rows.append(None)
        if progress is not None:
            progress(1)
    k = next((r.shape[0] for r in rows if r is not None), 0)
    out = np.full((n_bootstrap, k), np.nan)
    for i, r in enumerate(rows):
        if r is not None:
            out[i] = r
    return out


def _intervals(
    theta: NDArray[np.float64], reps: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    k = theta.shape[0]
    if reps.size == 0 or not np.isfinite(reps).any():
        return np.full((k, 2), np.nan), np.full(k, np.nan)
    alpha = (1.0 - LEVEL) / 2.0
    lo, hi = np.nanquantile(reps, [alpha, 1.0 - alpha], axis=0)
    ci = np.stack([lo, hi], axis=1)
    se = np.nanstd(reps, axis=0, ddof=1)
    ci[0] = 1.0
    se[0] = 0.0
    return ci, se


def _check_counts(counts: PositionCounts, n_positions: int | None) -> PositionCounts:
    k = counts.n_positions
    if n_positions is not None:
        if n_positions > k:
            raise InputError(f"n_positions={n_positions} exceeds the {k} positions counted")
        counts = PositionCounts(
            np.ascontiguousarray(counts.clicks[..., :n_positions]),
            np.ascontiguousarray(counts.shown[..., :n_positions]),
            counts.logger_names,
        )
        k = n_positions
    shown = counts.shown.reshape(-1, k).sum(axis=0)
    if shown[0] == 0:
        raise InputError("the log shows no document at position 1 (no impression counted)")
    empty = np.flatnonzero(shown == 0)
    if empty.size:
        longest = int(np.flatnonzero(shown > 0).max()) + 1
        raise InputError(
            f"n_positions={k} is larger than any shown list: no impression shows a document "
            f"at position {int(empty[0]) + 1} (the longest list has {longest}); "
            f"use n_positions <= {longest}"
        )
    if counts.clicks.sum() == 0:
        raise InputError("the log has no click: clicks cannot tell positions apart")
    return counts


def _counts_of(
    data: BoundLog | PositionCounts, n_positions: int | None, by_logger: bool
) -> PositionCounts:
    if isinstance(data, BoundLog):
        if n_positions is not None:
            longest = int(data.log.list_lengths.max())
            if n_positions > longest:
                raise InputError(
                    f"n_positions={n_positions} is larger than any shown list "
                    f"(the longest list has {longest}); use n_positions <= {longest}"
                )
        return position_counts(data, n_positions, by_logger=by_logger)
    if not isinstance(data, PositionCounts):
        raise InputError(
            f"expected a BoundLog (oltr.logs.bind) or PositionCounts, got {type(data).__name__}"
        )
    if by_logger and data.logger_names is None:
        from oltr.logs.schema import LogFormatError

        raise LogFormatError(
            "intervention harvesting needs the counts per logger (a log with a 'logger' "
            "column, counted with by_logger=True)",
            column="logger",
        )
    return data


def _build(
    data: BoundLog | PositionCounts,
    method: str,
    n_positions: int | None,
    dataset: LetorDataset | None,
    options: dict[str, Any],
) -> tuple[PropensityProblem, int]:
    if isinstance(data, BoundLog):
        dataset = data.dataset
    groups = None if dataset is None else query_of_row(dataset)
    if method == "randomization":
        if not isinstance(data, BoundLog):
            raise InputError(
                "the randomization estimator reads each impression's swap: give it the "
                "bound log (oltr.logs.bind), not counts"
            )
        problem = randomization_problem(data, n_positions, **options)
        return problem, data.log.n_impressions
    counts = _check_counts(_counts_of(data, n_positions, method == "harvesting"), n_positions)
    n_impressions = int(round(float(counts.shown[..., 0].sum())))
    total = counts.total()
    if groups is not None and groups.shape[0] != total.clicks.shape[0]:
        raise InputError(
            f"the counts have {total.clicks.shape[0]} rows but the data set has "
            f"{groups.shape[0]} documents"
        )
    if method == "em":
        features = None if dataset is None else dataset.features
        return em_problem(total, features=features, groups=groups, **options), n_impressions
    return harvesting_problem(counts, groups=groups, **options), n_impressions


def estimate_propensities(
    bound_or_counts: BoundLog | PositionCounts,
    method: str,
    *,
    n_positions: int | None = None,
    rng: RNGLike = 0,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    dataset: LetorDataset | None = None,
    progress: Callable[[int], Any] | None = None,
    **options: Any,
) -> PropensityEstimate:
    """Estimate θ_1..θ_K (θ_1 = 1) from a click log, with 95% bootstrap intervals.

    Parameters
    ----------
    bound_or_counts
        A bound log (:func:`oltr.logs.bind`) or its :class:`~oltr.logs.PositionCounts`
        (e.g. summed over the chunks of a streamed log; per logger for
        ``"harvesting"``). The randomization estimator needs the bound log.
    method
        One of :data:`METHODS`.
    n_positions
        K; default every position counted (the longest shown list).
    rng
        Seed or Generator of the bootstrap (default 0: the same log gives the
        same intervals).
    n_bootstrap
        Replicates B of the Poisson bootstrap over queries (0: no intervals).
    dataset
        The data set of the counts' rows, when counts are given: the features
        of ``"em"`` (regression) and the queries the bootstrap resamples
        (without it each row, a (query, document), is its own unit).
    progress
        Called with 1 after each bootstrap replicate.
    **options
        Passed to the method (see :func:`oltr.estimators.em.em_problem`,
        :func:`oltr.estimators.harvesting.harvesting_problem`,
        :func:`oltr.estimators.randomization.randomization_problem`).

    Returns
    -------
    PropensityEstimate

    Raises
    ------
    InputError
        An unknown method, K larger than any shown list, a log without clicks,
        a log or counts that do not identify some position.
    LogFormatError
        ``"harvesting"`` on a log without a ``logger`` column.
    """
    if method not in METHODS:
        raise InputError(f"unknown propensity method {method!r}; choose one of {list(METHODS)}")
    if n_positions is not None and (
        isinstance(n_positions, bool) or not isinstance(n_positions, int) or n_positions < 2
    ):
        raise InputError(f"n_positions must be an int >= 2, got {n_positions!r}")
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, int) or n_bootstrap < 0:
        raise InputError(f"n_bootstrap must be an int >= 0, got {n_bootstrap!r}")
    gen = as_rng(rng)
    problem, n_impressions = _build(bound_or_counts, method, n_positions, dataset, options)
    point = problem.fit(None, None)
    reps = bootstrap_replicates(problem, point.start, n_bootstrap, gen, progress)
    if reps.shape[1] == 0:
        reps = np.zeros((n_bootstrap, point.theta.shape[0])) * np.nan
    ci, se = _intervals(point.theta, reps)
    details = dict(point.details)
    if n_bootstrap:
        details["bootstrap_failures"] = int((~np.isfinite(reps).all(axis=1)).sum())
        by_query = isinstance(bound_or_counts, BoundLog) or dataset is not None
        details["bootstrap_unit"] = "query" if by_query else "row"
    return PropensityEstimate(
        method=method,
        theta=point.theta,
        ci=ci,
        n_impressions=n_impressions,
        iterations=point.iterations,
        converged=point.converged,
        standard_error=se,
        n_bootstrap=n_bootstrap,
        details=details,
    )
