"""Position bias by intervention harvesting: the AllPairs estimator.

Agarwal, Zaitsev, Wang, Li, Najork & Joachims 2019, "Estimating Position Bias
without Intrusive Interventions" (WSDM), §3–4. When several loggers (rankers
that do not depend on the user) show the same (query, document) at different
positions, the position it lands on is an intervention that the log already
holds. For positions k ≠ k' the *interventional set* S_{k,k'} holds the
(q, d) that some logger put at k and some logger put at k' (§3.2). The
weighted click count of (q, d) at k pools the loggers,

    ĉ_k(q, d) = Σ_i Σ_{sessions of q by logger i with d at k} c · w(q, d, k),
    w(q, d, k) = 1 / Σ_i n_i(q) π_i(k | q, d),

where n_i(q) π_i(k | q, d) is the expected number of logger i's sessions of q
that put d at k; with the empirical π_i it is the count of such sessions, so
ĉ_k(q, d) is the click rate of (q, d) at k over all loggers and ¬ĉ_k(q, d)
= 1 − ĉ_k(q, d) its skip rate (:class:`~oltr.logs.PositionCounts` holds
exactly these sums). Under the PBM, E[ĉ_k(q, d)] = θ_k γ_{q,d}.

AllPairs (§4.2) sums them over each interventional set,
ĉ_k^{k,k'} = Σ_{(q,d) ∈ S_{k,k'}} ĉ_k(q, d) (and ¬ĉ_k^{k,k'} likewise), and
maximises the extremum objective

    Σ_{k ≠ k'} ĉ_k^{k,k'} log(p_k r_{k,k'}) + ¬ĉ_k^{k,k'} log(1 − p_k r_{k,k'})

over propensities p_k and one relevance r_{k,k'} = r_{k',k} per unordered pair
(the average relevance of S_{k,k'}, shared by both of its positions, which
is what ties p_k to p_{k'}). The p_k are identified up to scale; we report
θ_k = p_k / p_1. Fang, Agarwal & Joachims 2019 (SIGIR) extend it to
propensities that depend on the query's context; this module estimates the
context-free θ_k of the original paper.

We parametrise p_k = σ(a_k), r = σ(b) (so every product is a probability) and
maximise with L-BFGS (scipy), analytic gradient. A position that no chain of
interventional sets links to position 1 is not identified: an error names it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits

from oltr.errors import InputError
from oltr.estimators.propensity_fit import FitResult
from oltr.logs.binding import PositionCounts
from oltr.logs.schema import LogFormatError

__all__ = ["HarvestingProblem", "allpairs_objective", "harvesting_problem", "intervention_counts"]


def _sigmoid(z: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.asarray(0.5 * (1.0 + np.tanh(0.5 * z)))


def intervention_counts(
    clicks: NDArray[np.float64],
    shown: NDArray[np.float64],
    weights: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """ĉ_k^{k,k'} and ¬ĉ_k^{k,k'} as (K, K) arrays (diagonal 0), from counts per (row, position).

    ``weights`` (n_rows,) multiplies every (q, d)'s terms (the bootstrap's query weights).

    >>> c, nc = intervention_counts(np.array([[1.0, 1.0, 0.0]]), np.array([[2.0, 4.0, 0.0]]))
    >>> c.tolist()
    [[0.0, 0.5, 0.0], [0.25, 0.0, 0.0], [0.0, 0.0, 0.0]]
    >>> nc.tolist()
    [[0.0, 0.5, 0.0], [0.75, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    present = (shown > 0).astype(np.float64)
    rate = np.divide(clicks, shown, out=np.zeros_like(clicks), where=shown > 0)
    skip = present - rate
    if weights is not None:
        rate = rate * weights[:, None]
        skip = skip * weights[:, None]
    c = rate.T @ present
    nc = skip.T @ present
    np.fill_diagonal(c, 0.0)
    np.fill_diagonal(nc, 0.0)
    return c, nc


def allpairs_objective(
    x: NDArray[np.float64],
    c: NDArray[np.float64],
    nc: NDArray[np.float64],
    pairs: tuple[NDArray[np.intp], NDArray[np.intp]],
) -> tuple[float, NDArray[np.float64]]:
    """Minus the AllPairs objective and its gradient at ``x = (a_1..a_K, b_pairs)``."""
    k = c.shape[0]
    i, j = pairs
    a = x[:k]
    p = _sigmoid(a)
    r = np.zeros((k, k))
    rb = _sigmoid(x[k:])
    r[i, j] = rb
    r[j, i] = rb
    mu = np.clip(p[:, None] * r, 1e-12, 1 - 1e-12)
    value = float((c * np.log(mu) + nc * np.log1p(-mu)).sum())
    g = c - nc * mu / (1.0 - mu)  # d/d log mu
    grad_a = (1.0 - p) * g.sum(axis=1)
    grad_b = (1.0 - rb) * (g[i, j] + g[j, i])
    return -value, -np.concatenate([grad_a, grad_b])


@dataclass
class HarvestingProblem:
    """Counts of the (q, d) shown at two positions or more, ready for AllPairs."""

    clicks: NDArray[np.float64]
    shown: NDArray[np.float64]
    groups: NDArray[np.int64]
    n_groups: int
    max_iter: int = 10_000

    def fit(self, weights: NDArray[np.float64] | None, start: Any) -> FitResult:
        """AllPairs on the counts, each query's (q, d) weighted by ``weights`` (None: 1)."""
        from scipy.optimize import minimize

        w = None if weights is None else weights[self.groups]
        c, nc = intervention_counts(self.clicks, self.shown, w)
        k = c.shape[0]
        pairs = _linked_pairs(c + nc)
        scale = float((c + nc).sum())
        x0 = np.zeros(k + pairs[0].size) if start is None else np.asarray(start, dtype=float)
        with threadpool_limits(1, user_api="blas"):  # tiny products: threads only contend
            res = minimize(
                lambda x: tuple(v / scale for v in allpairs_objective(x, c, nc, pairs)),
                x0,
                jac=True,
                method="L-BFGS-B",
                options={"maxiter": self.max_iter, "ftol": 1e-15, "gtol": 1e-9},
            )
        p = _sigmoid(res.x[:k])
        return FitResult(
            theta=p / p[0],
            iterations=int(res.nit),
            converged=bool(res.success),
            start=res.x,
            details={"objective": float(-res.fun * scale), "pairs": int(pairs[0].size)},
        )


def _linked_pairs(mass: NDArray[np.float64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """The unordered pairs k < k' with data; an error when some position is not linked to 1."""
    k = mass.shape[0]
    linked = (mass + mass.T) > 0
    i, j = np.nonzero(np.triu(linked, 1))
    if i.size == 0:
        raise InputError(
            "intervention harvesting found no (query, document) shown at two different "
            "positions: the loggers always agree; it needs loggers that rank differently"
        )
    reach = np.zeros(k, dtype=bool)
    reach[0] = True
    for _ in range(k):
        reach = reach | (linked[reach].any(axis=0))
    if not reach.all():
        missing = (np.flatnonzero(~reach) + 1).tolist()
        raise InputError(
            f"positions {missing} are not linked to position 1 by any (query, document) "
            "shown at both (directly or through other positions): their propensities are "
            "not identified; lower n_positions or add loggers"
        )
    return i.astype(np.intp), j.astype(np.intp)


def harvesting_problem(
    counts: PositionCounts,
    *,
    groups: NDArray[np.int64] | None = None,
    max_iter: int = 10_000,
) -> HarvestingProblem:
    """Prepare AllPairs on counts per logger (``position_counts(..., by_logger=True)``).

    Parameters
    ----------
    counts
        Clicks and impressions per (logger, row, position).
    groups
        Array (n_rows,): the query of every row, the bootstrap's unit
        (default: every row its own unit).
    max_iter
        L-BFGS iterations at most.

    Raises
    ------
    LogFormatError
        Counts without loggers (a log without a ``logger`` column).
    InputError
        No (q, d) at two positions, or a position not linked to position 1.
    """
    if counts.logger_names is None:
        raise LogFormatError(
            "intervention harvesting needs a 'logger' column (which ranker showed each "
            "list) and counts per logger",
            column="logger",
        )
    total = counts.total()
    keep = (total.shown > 0).sum(axis=1) >= 2
    if not keep.any():
        _linked_pairs(np.zeros((total.n_positions, total.n_positions)))
    n_rows = total.clicks.shape[0]
    group = np.arange(n_rows, dtype=np.int64) if groups is None else np.asarray(groups, np.int64)
    _, dense = np.unique(group[keep], return_inverse=True)
    problem = HarvestingProblem(
        clicks=np.ascontiguousarray(total.clicks[keep]),
        shown=np.ascontiguousarray(total.shown[keep]),
        groups=dense.astype(np.int64),
        n_groups=int(dense.max()) + 1,
        max_iter=int(max_iter),
    )
    c, nc = intervention_counts(problem.clicks, problem.shown)
    _linked_pairs(c + nc)
    return problem
