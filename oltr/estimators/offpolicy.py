"""Off-policy estimates of a candidate ranker's click value from logs of a stochastic ranker.

A logging ranker π₀ (PDGD's Plackett–Luce, RTop-kF's exploration, ...) showed
list ``a_i = (a_i(1), …, a_i(K_i))`` for impression i and recorded clicks
``c_i(l)``. A candidate π_e has not met users. Each estimator here returns an
:class:`OffPolicyEstimate` of the candidate's expected value of a click metric,
``V(π_e) = E_x E_{a∼π_e(·|x)} E[Σ_l r(l) | x, a]``, with a confidence interval.

**Inputs.** :class:`~oltr.estimators.loggedlists.LoggedLists` holds the shown
lists padded to ``(n, K)`` with a boolean ``mask`` and the clicks ``(n, K)``.
Probabilities come as ``float64`` arrays aligned with it (positions 0-based):

- list probabilities, shape ``(n,)``: ``P(a_i | x_i)`` of the whole shown list;
  or prefix probabilities, shape ``(n, K)``: ``[i, l] = P(a_i(1..l+1) | x_i)``
  (the probability that the top l + 1 shown items are exactly these, in order);
- item-position marginals, shape ``(n, K)``: ``[i, l] = P(a_i(l+1) at position
  l + 1 | x_i)``.

The logging policy's entries must be > 0 wherever something was logged; the
candidate's may be 0 (a deterministic candidate has 0/1 entries). Helpers in
:mod:`oltr.estimators.rankingpolicy` compute them for a Plackett–Luce logger and
a deterministic linear candidate.

**Metrics** (:mod:`oltr.estimators.loggedlists`): ``clicks`` / ``clicks@k``
(expected clicks in the top k), ``dcg@k`` (Σ_l c(l)/log2(l + 1)) and ``ctr@k``
(the probability of at least one click in the top k, as the sum of first-click
indicators; not a sum over (item, position) pairs, so ``pbm-ips`` refuses it).

**Estimators** (``w`` = candidate / logging probability):

- :func:`ips` — list-level inverse propensity scoring (Horvitz & Thompson 1952),
  the standard IPS of Swaminathan et al. 2017 (NeurIPS, "Off-policy evaluation
  for slate recommendation", its standard IPS baseline) and Li et al. 2018 (KDD,
  "Offline evaluation of ranking policies with click models", the list-level
  estimator):
  ``V̂ = (1/n) Σ_i w_i R_i``. Unbiased when π₀(a|x) > 0 wherever π_e(a|x) > 0,
  with no click model. With prefix probabilities it weights only the top-k
  prefix the metric depends on (unbiased too, lower variance).
- :func:`snips` — self-normalised IPS (Swaminathan & Joachims 2015, NeurIPS,
  "The self-normalized estimator for counterfactual learning"):
  ``V̂ = Σ_i w_i R_i / Σ_i w_i``; biased O(1/n), consistent, much lower variance.
- :func:`pbm_ips` — item-position IPS (Li et al. 2018, the item-position model
  estimator): ``V̂ = (1/n) Σ_i Σ_l r_i(l) π_e(a_i(l), l | x_i) / π₀(a_i(l), l | x_i)``.
  Unbiased when the expected click on (document d, position l) depends on d and
  l only (the position-based model, PBM, satisfies this) and π₀'s marginal is
  > 0 wherever π_e's is.
- :func:`cascade_dr` — Cascade doubly robust (Kiyohara, Saito, Matsuhiro,
  Narita, Shimizu & Yamamoto 2022, WSDM, §3.1; the reference implementation
  is Open Bandit Pipeline's ``SlateCascadeDoublyRobust``). Unbiased when r(l)
  depends on the shown prefix ``a(1..l)`` only (the cascade behaviour
  assumption; the PBM satisfies it too) and the propensities are right, for any
  regression Q̂ (see its docstring).

**Intervals.** All four default to the studentized bootstrap (bootstrap-t) over
impressions (:mod:`oltr.estimators.intervals`, B = 1000, seeded): every estimate
is a ratio of sums over impressions, which the bootstrap resamples directly
(SNIPS's ratio included), and the bootstrap-t standardises each resample by its
own standard error, so a log that has drawn few of the rare large weights — low
estimate, small standard error — gets its upper endpoint pushed out by a multiple
of the standard error instead of stopping at the largest resampled estimate, as
the percentile and BCa endpoints do. On the logs of a learning PDGD ranker (the
package's coverage check, docs/guides/off-policy.md) the bootstrap-t covered at
least as often as BCa for every estimator, at 0–9% more width. ``"bca"``,
``"percentile"`` and ``"normal"`` remain available; ``interval="bernstein"``
(ips and pbm-ips only) gives Maurer & Pontil's finite-sample bound instead; it
needs the range of a term in advance — max weight × max reward — and was 1.8–5.8
times as wide in that check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError
from oltr.estimators.intervals import (
    INTERVAL_METHODS,
    bernstein_interval,
    bootstrap_interval,
    normal_interval,
)
from oltr.estimators.loggedlists import (
    METRICS,
    LoggedLists,
    max_reward,
    metric_depth,
    metric_rewards,
)
from oltr.random import RNGLike

__all__ = [
    "DEFAULT_INTERVALS",
    "ESTIMATORS",
    "OffPolicyEstimate",
    "cascade_dr",
    "ips",
    "pbm_ips",
    "snips",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class OffPolicyEstimate:
    """An off-policy estimate with its interval.

    ``value`` estimates the candidate's expected ``metric`` per impression;
    ``[ci_low, ci_high]`` is the ``1 − alpha`` interval of ``interval_method``;
    ``stderr`` the plug-in standard error; ``matched`` the impressions whose weight
    is non-zero (for ``ips``/``snips``: the logged list or prefix is one the
    candidate could show).
    """

    estimator: str
    metric: str
    value: float
    ci_low: float
    ci_high: float
    n: int
    interval_method: str
    alpha: float
    stderr: float
    matched: int


def _at(bad: NDArray[np.bool_]) -> str:
    """The index of the first True entry, as ``[i]`` or ``[i, j]``."""
    return str([int(v) for v in np.argwhere(bad)[0]])


def _probabilities(
    p: ArrayLike, log: LoggedLists, name: str, *, logging: bool, shapes: str
) -> FloatArray:
    arr = np.asarray(p, dtype=np.float64)
    n, k = log.shown.shape
    allowed = [(n,), (n, k)] if shapes == "list" else [(n, k)]
    if arr.shape not in allowed:
        raise InputError(
            f"{name} has shape {arr.shape}; it must be one of {allowed} to match the log"
        )
    if np.any(np.isnan(arr)):
        raise InputError(f"{name}{_at(np.isnan(arr))} is NaN")
    if np.any((arr < 0) | (arr > 1 + 1e-12)):
        bad = (arr < 0) | (arr > 1 + 1e-12)
        raise InputError(f"{name}{_at(bad)} = {arr[bad][0]} is not a probability in [0, 1]")
    if logging:
        used = np.ones(arr.shape, dtype=bool) if arr.ndim == 1 else log.mask
        if np.any(used & (arr <= 0)):
            raise InputError(
                f"{name}{_at(used & (arr <= 0))} is 0 for a logged list or position: the "
                "logging policy showed it, so its probability must be > 0 (wrong "
                "propensities, or a deterministic logger)"
            )
    return arr


def _at_depth(p: FloatArray, log: LoggedLists, k: int) -> FloatArray:
    """Prefix probabilities at depth min(k, K_i); list probabilities as they are."""
    if p.ndim == 1:
        return p
    col = np.minimum(log.lengths, k) - 1
    out: FloatArray = p[np.arange(log.n), col]
    return out


def _estimate(
    estimator: str,
    metric: str,
    numer: FloatArray,
    denom: FloatArray | None,
    *,
    interval: str | None,
    alpha: float,
    n_boot: int,
    rng: RNGLike,
    term_range: tuple[float, float] | None,
    matched: int,
) -> OffPolicyEstimate:
    method = DEFAULT_INTERVALS[estimator] if interval is None else interval
    if method not in INTERVAL_METHODS:
        raise InputError(f"unknown interval {method!r}; known: {list(INTERVAL_METHODS)}")
    lo_n, hi_n, se = normal_interval(numer, denom, alpha=alpha)
    value = float(numer.sum() / (numer.size if denom is None else denom.sum()))
    if method == "normal":
        low, high = lo_n, hi_n
    elif method == "bernstein":
        if term_range is None:
            raise InputError(
                f"interval 'bernstein' needs a mean of terms with a known range; {estimator} "
                "has none (use 'bca')"
            )
        low, high = bernstein_interval(numer, low=term_range[0], high=term_range[1], alpha=alpha)
    else:
        low, high = bootstrap_interval(
            numer,
            denom,
            alpha=alpha,
            n_boot=n_boot,
            method=method,  # type: ignore[arg-type]  # bca, percentile or studentized
            rng=rng,
        )
    return OffPolicyEstimate(
        estimator, metric, value, low, high, numer.size, method, alpha, se, matched
    )


def _weight_bound(weights: FloatArray, weight_max: float | None) -> float:
    observed = float(weights.max(initial=0.0))
    if weight_max is None:
        return observed
    if not (math.isfinite(weight_max) and weight_max > 0):
        raise InputError(f"weight_max must be a positive finite number, got {weight_max!r}")
    return float(weight_max)


def _list_weights(
    log: LoggedLists, metric: str, logging_prob: ArrayLike, target_prob: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    p0 = _probabilities(logging_prob, log, "logging_prob", logging=True, shapes="list")
    pe = _probabilities(target_prob, log, "target_prob", logging=False, shapes="list")
    if p0.shape != pe.shape:
        raise InputError(
            f"logging_prob has shape {p0.shape} but target_prob {pe.shape}; they must agree"
        )
    k = metric_depth(metric, log.shown.shape[1])
    w = _at_depth(pe, log, k) / _at_depth(p0, log, k)
    return w, metric_rewards(log, metric).sum(axis=1)


def ips(
    log: LoggedLists,
    metric: str = "clicks",
    *,
    logging_prob: ArrayLike,
    target_prob: ArrayLike,
    interval: str | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    rng: RNGLike = 0,
    weight_max: float | None = None,
) -> OffPolicyEstimate:
    """List-level IPS: ``V̂ = (1/n) Σ_i π_e(a_i|x_i)/π₀(a_i|x_i) · R_i`` (module docstring).

    Parameters
    ----------
    log
        The logged impressions (:func:`logged_lists` or :func:`pad_lists`).
    metric
        ``"clicks"``, ``"clicks@k"``, ``"ctr@k"`` or ``"dcg@k"``.
    logging_prob, target_prob
        π₀'s and π_e's probability of each logged list, shape (n,), or of each
        logged prefix, shape (n, K); with prefixes the weight is taken at depth
        ``min(k, K_i)`` (the metric ignores what lies below).
    interval
        ``"studentized"`` (bootstrap-t, the default), ``"bca"``, ``"percentile"``,
        ``"normal"`` or ``"bernstein"``.
    alpha, n_boot, rng
        1 − coverage; bootstrap resamples; the bootstrap's seed or Generator.
    weight_max
        For ``"bernstein"``: a bound on π_e/π₀ fixed in advance (e.g. 1 / the
        smallest logging probability of a list the candidate shows). Default:
        the largest observed weight, a plug-in that makes the bound approximate.
    """
    w, big_r = _list_weights(log, metric, logging_prob, target_prob)
    wm = _weight_bound(w, weight_max)
    return _estimate(
        "ips", metric, w * big_r, None, interval=interval, alpha=alpha, n_boot=n_boot, rng=rng,
        term_range=(0.0, wm * max_reward(metric, log.shown.shape[1])),
        matched=int(np.count_nonzero(w)),
    )  # fmt: skip


def snips(
    log: LoggedLists,
    metric: str = "clicks",
    *,
    logging_prob: ArrayLike,
    target_prob: ArrayLike,
    interval: str | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    rng: RNGLike = 0,
) -> OffPolicyEstimate:
    """Self-normalised IPS: ``V̂ = Σ_i w_i R_i / Σ_i w_i`` (Swaminathan & Joachims 2015).

    Same inputs as :func:`ips`. The default bootstrap-t resamples impressions
    and recomputes the ratio (no delta-method linearisation); a resample where
    no impression has weight is dropped. Raises :class:`~oltr.errors.InputError`
    when no logged impression has positive weight (the ratio is undefined).
    """
    w, big_r = _list_weights(log, metric, logging_prob, target_prob)
    if not np.any(w > 0):
        raise InputError(
            "snips: no logged list has positive candidate probability, so Σ w = 0 and the "
            "self-normalised estimate is undefined"
        )
    return _estimate(
        "snips", metric, w * big_r, w, interval=interval, alpha=alpha, n_boot=n_boot, rng=rng,
        term_range=None, matched=int(np.count_nonzero(w)),
    )  # fmt: skip


def pbm_ips(
    log: LoggedLists,
    metric: str = "clicks",
    *,
    logging_marginals: ArrayLike,
    target_marginals: ArrayLike,
    interval: str | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    rng: RNGLike = 0,
    weight_max: float | None = None,
) -> OffPolicyEstimate:
    """Item-position IPS: ``V̂ = (1/n) Σ_i Σ_l r_i(l) π_e(a_i(l), l|x_i) / π₀(a_i(l), l|x_i)``.

    Li et al. 2018 (KDD), the item-position model estimator: under a model where
    the expected click on (item d, position l) depends on (d, l) only — the PBM's
    θ_l·α_d — reweighting each click by the ratio of the two policies'
    item-position marginals is unbiased. The metric must be a sum of per-(item,
    position) click rewards: ``clicks``, ``clicks@k`` or ``dcg@k`` (``ctr@k`` is
    not; use :func:`ips` or :func:`cascade_dr`).

    Parameters
    ----------
    logging_marginals, target_marginals
        Shape (n, K): ``[i, l]`` = probability that the policy puts the logged
        item ``a_i(l+1)`` at position ``l + 1`` (:mod:`oltr.estimators.rankingpolicy`).
    weight_max
        For ``"bernstein"``: a bound on each per-position ratio fixed in advance;
        the term range is then ``[0, weight_max × max reward]``.
    interval, alpha, n_boot, rng
        As in :func:`ips`.
    """
    name = metric.partition("@")[0]
    if name in METRICS and not METRICS[name][1]:
        raise InputError(
            f"pbm-ips estimates sums of per-(item, position) click rewards; {metric!r} is not one "
            "(P(any click) is not additive over positions): use ips, snips or cascade_dr"
        )
    r = metric_rewards(log, metric)
    m0 = _probabilities(logging_marginals, log, "logging_marginals", logging=True, shapes="pos")
    me = _probabilities(target_marginals, log, "target_marginals", logging=False, shapes="pos")
    w = np.where(log.mask, me / np.where(log.mask, m0, 1.0), 0.0)
    wm = _weight_bound(w, weight_max)
    return _estimate(
        "pbm-ips", metric, (w * r).sum(axis=1), None, interval=interval, alpha=alpha, n_boot=n_boot,
        rng=rng, term_range=(0.0, wm * max_reward(metric, log.shown.shape[1])),
        matched=int(np.count_nonzero(np.any(w > 0, axis=1))),
    )  # fmt: skip


def cascade_dr(
    log: LoggedLists,
    metric: str = "clicks",
    *,
    logging_prefix_prob: ArrayLike,
    target_prefix_prob: ArrayLike,
    q_logged: ArrayLike,
    q_target: ArrayLike,
    interval: str | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
    rng: RNGLike = 0,
) -> OffPolicyEstimate:
    """Cascade doubly robust estimate (Kiyohara et al. 2022, WSDM, §3.1).

    With ``w_{1:l} = π_e(a(1..l)|x) / π₀(a(1..l)|x)`` (``w_{1:0} = 1``) and a
    regression ``Q̂_l(x, a(1..l)) ≈ E[Σ_{l'≥l} r(l') | x, a(1..l)]`` (the later
    positions filled by π_e), the estimator — written recursively from the
    bottom, ``V̂_l = E_{a∼π_e(·|x,a(1..l−1))} Q̂_l(x,a(1..l−1),a) + w_l (r(l) +
    V̂_{l+1} − Q̂_l(x,a(1..l)))`` with the per-position ratio ``w_l`` and
    ``V̂_{k+1} = 0`` — unrolls into the sum over positions implemented here (the
    form of Open Bandit Pipeline's ``SlateCascadeDoublyRobust``, whose ``Q̂_l`` is
    the same cumulative regression):

    .. math::
        \\hat V = \\frac1n \\sum_i \\sum_{l=1}^{k} \\Big( w_{1:l}\\,(r_i(l) − Q̂_l(x_i, a_i(1..l)))
                 + w_{1:l−1}\\, E_{a∼π_e(·|x_i, a_i(1..l−1))} Q̂_l(x_i, a_i(1..l−1), a) \\Big).

    Unbiasedness needs only the cascade assumption (r(l) depends on the shown
    prefix a(1..l), not on what lies below) and correct propensities: for any
    fixed Q̂, the expectation of the control-variate pair at position l cancels,
    ``E_{a(l)∼π₀}[w_{1:l} Q̂_l] = w_{1:l−1} E_{a∼π_e} Q̂_l``, leaving the cascade IPS
    ``Σ_l w_{1:l} r(l)``, which is unbiased under the assumption. A Q̂ fitted on
    the same log (as :func:`oltr.estimators.rankingpolicy.cascade_baselines`
    does, with a per-(query, item, position) click-rate table) adds an O(1/n)
    dependence; a good Q̂ cuts the variance, a poor one leaves IPS-like variance.

    Parameters
    ----------
    logging_prefix_prob, target_prefix_prob
        Shape (n, K): ``[i, l]`` = probability of the logged prefix ``a_i(1..l+1)``.
    q_logged
        Shape (n, K): ``Q̂_l(x_i, a_i(1..l))`` at the logged prefix.
    q_target
        Shape (n, K): ``E_{a∼π_e(·|x_i, a_i(1..l−1))} Q̂_l(x_i, a_i(1..l−1), a)``
        (for a deterministic candidate: Q̂ at its own item after the logged
        prefix; only rows where that prefix is the candidate's own matter).
    interval, alpha, n_boot, rng
        As in :func:`ips`; ``interval="bernstein"`` is refused (the terms have no
        range known in advance).
    """
    r = metric_rewards(log, metric)
    k = metric_depth(metric, log.shown.shape[1])
    p0 = _probabilities(logging_prefix_prob, log, "logging_prefix_prob", logging=True, shapes="pos")
    pe = _probabilities(target_prefix_prob, log, "target_prefix_prob", logging=False, shapes="pos")
    qs = []
    for name, q in (("q_logged", q_logged), ("q_target", q_target)):
        arr = np.asarray(q, dtype=np.float64)
        if arr.shape != log.shown.shape:
            raise InputError(
                f"{name} has shape {arr.shape}; it must be {log.shown.shape} to match the log"
            )
        if not np.all(np.isfinite(arr[log.mask])):
            raise InputError(f"{name}{_at(log.mask & ~np.isfinite(arr))} is not finite")
        qs.append(arr)
    live = log.mask & (np.arange(log.shown.shape[1]) < k)
    w = np.where(live, pe / np.where(log.mask, p0, 1.0), 0.0)
    w_prev = np.concatenate([np.ones((log.n, 1)), w[:, :-1]], axis=1)
    terms = np.where(live, w * (r - qs[0]) + w_prev * qs[1], 0.0).sum(axis=1)
    return _estimate(
        "cascade-dr", metric, terms, None, interval=interval, alpha=alpha, n_boot=n_boot, rng=rng,
        term_range=None, matched=int(np.count_nonzero(w[:, 0])),
    )  # fmt: skip


#: The estimators, by name.
ESTIMATORS: dict[str, Callable[..., OffPolicyEstimate]] = {
    "ips": ips,
    "snips": snips,
    "pbm-ips": pbm_ips,
    "cascade-dr": cascade_dr,
}
#: The default interval of each estimator, and why (module docstring, "Intervals"): the
#: studentized bootstrap everywhere, because every estimate is a ratio of sums over impressions
#: whose importance-weighted terms are right-skewed and heavy-tailed.
DEFAULT_INTERVALS: dict[str, str] = {
    "ips": "studentized",
    "snips": "studentized",
    "pbm-ips": "studentized",
    "cascade-dr": "studentized",
}
