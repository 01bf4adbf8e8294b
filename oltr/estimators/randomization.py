"""Position bias from swap interventions (result randomization).

Joachims, Swaminathan & Schnabel 2017, "Unbiased Learning-to-Rank with Biased
Feedback" (WSDM), §5.1 (*swap-1k*): in each session the result at position 1
is swapped with the one at a position k drawn uniformly (k = 1: no swap). The
document the logger ranks first, d₁, then lands on every position with the
same relevance γ(d₁), so under the PBM

    E[click on d₁ at k] / E[click on d₁ at 1] = θ_k γ(d₁) / θ_1 γ(d₁) = θ_k / θ_1.

Wang, Bendersky, Metzler & Najork 2016, "Learning to Rank with Selection Bias
in Personal Search" (SIGIR), §5.2 (*RandPair*): k is drawn from 2..K, so d₁
is never shown at position 1; the document d_k that the logger ranks at k is
shown at k in the sessions that swap another position and at 1 in those that
swap k, and θ_k / θ_1 = E[click on d_k at k] / E[click on d_k at 1].

Which impressions were swapped, and with which position, is read from the
``logger`` column: :func:`oltr.logs.simulate.simulate_log` writes
``f"{name}@swap{k}"`` (1-based k; k = 1 unchanged), parsed by
:func:`oltr.logs.simulate.split_swap_tags`; impressions without a tag are
ignored. The tag identifies d₁ in every impression exactly (it is the
document at position k of a ``@swap{k}`` impression): inferring d₁ from the
shown lists alone (e.g. "the document most often at position 1") fails under
swap-1k, where each of the logger's top K documents is at position 1 in 1/K of
the sessions.

Estimator. For every query q and position k we take the click *rates* of the
two observations above (clicks over impressions of that query), and pool the
queries that have both, weighting each query equally:
θ_k / θ_1 = Σ_q rate_q(d at k) / Σ_q rate_q(d at 1). Per-query rates keep the
ratio consistent when the share of swaps to k differs between queries (a query
with fewer than k documents is never swapped to k). ``design="auto"`` uses
swap-1k when some impressions carry ``@swap1`` and RandPair otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.errors import InputError
from oltr.estimators.propensity_fit import FitResult
from oltr.logs.binding import BoundLog
from oltr.logs.schema import LogFormatError
from oltr.logs.simulate import SWAP_TAG, split_swap_tags

__all__ = ["DESIGNS", "RandomizationProblem", "randomization_problem", "swap_tables"]

#: The swap designs: the top result swapped with k uniform on 1..K, or on 2..K.
DESIGNS = ("auto", "swap-1k", "randpair")


def swap_tables(
    bound: BoundLog, n_positions: int | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Clicks and impressions per (query, swap, position) of the swapped impressions.

    Returns
    -------
    clicks, shown
        Arrays (n_queries, K, K): ``[q, t, p]`` sums over impressions of data-set
        query q tagged ``@swap{t+1}`` the clicks at (0-based) position p, and
        how many of them showed a document at p.
    queries
        Array (n_queries,): the data set's query index of each first-axis entry.
    """
    log = bound.log
    if log.loggers is None:
        raise LogFormatError(
            "the randomization estimator reads the swaps from the 'logger' column "
            f"('<name>{SWAP_TAG}<k>'); this log has none",
            column="logger",
            source=log.source,
        )
    _, tag = split_swap_tags(log.loggers)
    tagged = tag > 0
    if not tagged.any():
        raise InputError(
            "no impression carries a swap intervention: the randomization estimator needs "
            f"loggers named '<name>{SWAP_TAG}<k>' (oltr logs simulate --swap swap-1k)"
        )
    k = int(tag.max()) if n_positions is None else int(n_positions)
    queries, dense = np.unique(bound.query_index[tagged], return_inverse=True)
    query_of = np.full(log.n_impressions, -1, dtype=np.int64)
    query_of[tagged] = dense
    entry_imp = log.impression_of_entry
    pos = log.positions
    t = tag[entry_imp] - 1
    keep = tagged[entry_imp] & (pos < k) & (t < k)
    flat = (query_of[entry_imp[keep]] * k + t[keep]) * k + pos[keep]
    size = queries.size * k * k
    clicks = np.bincount(flat, weights=log.clicks[keep].astype(np.float64), minlength=size)
    shown = np.bincount(flat, minlength=size).astype(np.float64)
    shape = (queries.size, k, k)
    return (
        np.asarray(clicks, dtype=np.float64).reshape(shape),
        shown.reshape(shape),
        queries.astype(np.int64),
    )


def _rate(c: NDArray[np.float64], n: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.divide(c, n, out=np.full_like(c, np.nan), where=n > 0)


@dataclass
class RandomizationProblem:
    """Per-query click rates of the swapped documents, ready for the ratio estimator."""

    numerator: NDArray[np.float64]  # (n_queries, K): rate of the document at k
    denominator: NDArray[np.float64]  # (n_queries, K): rate of the same document at 1
    design: str
    n_groups: int

    def fit(self, weights: NDArray[np.float64] | None, start: Any) -> FitResult:
        """θ_k / θ_1 = Σ_q w_q num_q,k / Σ_q w_q den_q,k over queries with both observed."""
        w = np.ones(self.n_groups) if weights is None else weights
        both = np.isfinite(self.numerator) & np.isfinite(self.denominator)
        num = np.where(both, self.numerator, 0.0) * w[:, None]
        den = np.where(both, self.denominator, 0.0) * w[:, None]
        top, bottom = num.sum(axis=0), den.sum(axis=0)
        bad = np.flatnonzero(~(bottom > 0))
        if bad.size:
            raise InputError(
                f"position {int(bad[0]) + 1}: no query has a click on the swapped document at "
                "position 1 and an impression at that position; the propensity is not identified"
            )
        theta = top / bottom
        theta[0] = 1.0
        queries = both.sum(axis=0)
        return FitResult(
            theta=theta,
            details={"design": self.design, "queries_per_position": queries.tolist()},
        )


def randomization_problem(
    bound: BoundLog, n_positions: int | None = None, *, design: str = "auto"
) -> RandomizationProblem:
    """Prepare the swap estimator on a bound log whose ``logger`` column tags the swaps.

    Parameters
    ----------
    bound
        The bound log.
    n_positions
        K; default the largest swapped position.
    design
        ``"swap-1k"`` (d₁ at k against d₁ at 1), ``"randpair"`` (d_k at k
        against d_k at 1) or ``"auto"`` (swap-1k when some impression is
        ``@swap1``, else randpair).
    """
    if design not in DESIGNS:
        raise InputError(f"unknown swap design {design!r}; choose one of {list(DESIGNS)}")
    clicks, shown, _ = swap_tables(bound, n_positions)
    k = clicks.shape[1]
    if design == "auto":
        design = "swap-1k" if shown[:, 0, 0].sum() > 0 else "randpair"
    diag = np.arange(k)
    if design == "swap-1k":
        # @swap{k}: d1 at position k; @swap1: d1 at position 1.
        num = _rate(clicks[:, diag, diag], shown[:, diag, diag])
        den = np.repeat(_rate(clicks[:, 0, 0], shown[:, 0, 0])[:, None], k, axis=1)
    else:
        # @swap{k}: d_k at position 1; any other swap: d_k at position k.
        den = _rate(clicks[:, diag, 0], shown[:, diag, 0])
        other_c = clicks.sum(axis=1) - clicks[:, diag, diag]
        other_n = shown.sum(axis=1) - shown[:, diag, diag]
        num = _rate(other_c, other_n)
    num[:, 0] = den[:, 0] = 1.0
    if k < 2:
        raise InputError("the swaps reach position 1 only: nothing to estimate")
    return RandomizationProblem(
        numerator=num, denominator=den, design=design, n_groups=clicks.shape[0]
    )
