"""Replay a ranker's log, and estimate a new ranker's online value from it (IPS).

:func:`replay_log` re-runs every logged event into a learner freshly built
from the ranker's definition: the result equals the live ranker (the service's
restore does the same from a snapshot).

:func:`ips_estimate` is the inverse propensity scoring estimator of a new
ranker's value on the logged impressions (Horvitz & Thompson 1952; for ranking
and click logs, Li, Chu, Langford & Wang 2011, "Unbiased offline evaluation of
contextual-bandit-based news article recommendation algorithms", WSDM, §3, and
Swaminathan & Joachims 2015 for the standard error). With the logged policy
showing prefix ``a`` of length ``j`` with probability ``p(a | x) > 0`` for every
prefix, and the new ranker's prefix ``π(x)`` fixed given the context,

.. math::
    \\hat V = \\frac1n \\sum_i \\frac{[π(x_i) = a_i]}{p(a_i | x_i)}\\, r(a_i, y_i),
    \\qquad E[\\hat V] = \\frac1n \\sum_i E[r(π(x_i), y_i)],

because ``E_a[[π(x)=a] r(a, y)/p(a|x)] = Σ_a p(a|x) [π(x)=a] r(a,y)/p(a|x) = r(π(x), y)``.
Its standard error is ``std(terms, ddof=1)/√n``. The rewards use only the
revealed labels of the first ``j`` shown positions: ``ctr@1`` (label of the
top item > 0) and ``dcg@j`` (gain 2^r − 1, discount 1/log2(1 + position));
NDCG would need every item's grade, which a top-k log does not hold.

A candidate *learner* is evaluated with the replay method of Li et al. (2011,
Algorithm 3): it ranks every logged context, and it learns only from the
impressions whose shown prefix matches its own (it would have received exactly
that feedback). That estimate is unbiased for a fixed policy; for a learning
one it is the standard replay estimate, exact in distribution when the logging
policy is uniform.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from oltr.learners.base import Learner
from oltr.learners.linear import batch_scores, own_order
from oltr.serve.protocol import RankerDefinition, build_ranker, make_feedback_object
from oltr.serve.rankers import replay_into
from oltr.serve.store import Impression, Store
from oltr.types import Context

__all__ = [
    "IPSResult",
    "REWARDS",
    "LoggedRound",
    "ips_estimate",
    "ips_terms",
    "logged_rounds",
    "replay_log",
]


def ctr_at_1(labels: np.ndarray[Any, Any]) -> float:
    """1 when the top shown item got a positive label (a click), else 0."""
    return float(labels[0] > 0)


def dcg(labels: np.ndarray[Any, Any]) -> float:
    """DCG of the revealed labels: Σ_j (2^{r_j} − 1) / log2(1 + j) (Järvelin & Kekäläinen 2002)."""
    pos = np.arange(1, labels.size + 1)
    return float(((2.0**labels - 1.0) / np.log2(1.0 + pos)).sum())


#: Rewards of a revealed top-j prefix, by name.
REWARDS: dict[str, Callable[[np.ndarray[Any, Any]], float]] = {"ctr@1": ctr_at_1, "dcg": dcg}


@dataclass(frozen=True)
class LoggedRound:
    """One impression with its feedback: context, shown list, labels, logged propensities."""

    context: Context
    orders: np.ndarray[Any, Any]
    shown: np.ndarray[Any, Any]
    labels: np.ndarray[Any, Any]
    prefix: tuple[float, ...]
    payload: dict[str, Any]


@dataclass(frozen=True)
class IPSResult:
    """An IPS estimate: value, standard error, rounds used, rounds where the ranker agreed."""

    value: float
    stderr: float
    n: int
    matched: int


def ips_terms(
    shown: np.ndarray[Any, Any],
    labels: np.ndarray[Any, Any],
    propensity: float,
    new_prefix: np.ndarray[Any, Any],
    reward: Callable[[np.ndarray[Any, Any]], float],
) -> float:
    """One round's IPS term: ``[new prefix = shown prefix] · reward(labels) / propensity``."""
    j = new_prefix.size
    if propensity <= 0:
        raise ValueError(f"propensity must be > 0, got {propensity}")
    if not np.array_equal(shown[:j], new_prefix):
        return 0.0
    return reward(labels[:j]) / propensity


def ips_estimate(terms: Iterable[float], matched: int | None = None) -> IPSResult:
    """Mean of the IPS terms with its standard error ``std(ddof=1)/√n``."""
    arr = np.asarray(list(terms), dtype=np.float64)
    n = arr.size
    if n == 0:
        return IPSResult(math.nan, math.nan, 0, 0)
    se = float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return IPSResult(
        float(arr.mean()), se, n, int((arr != 0).sum() if matched is None else matched)
    )


def logged_rounds(store: Store, name: str) -> list[LoggedRound]:
    """The impressions of ``name`` that have feedback with labels and propensities, by round."""
    fb = {ev.impression: ev.payload for ev in store.events(name) if ev.kind == "feedback"}
    out = []
    for imp in store.impressions(name):
        payload = fb.get(imp.id)
        if payload is None or "labels" not in payload or not imp.propensities:
            continue
        out.append(_round(imp, payload))
    return out


def _round(imp: Impression, payload: dict[str, Any]) -> LoggedRound:
    x = imp.features
    ctx = Context(t=imp.t, n_items=imp.n_items, features=x)
    return LoggedRound(
        context=ctx,
        orders=np.asarray(imp.orders, dtype=np.intp),
        shown=np.asarray(imp.shown, dtype=np.intp),
        labels=np.asarray(payload["labels"], dtype=np.float64),
        prefix=tuple(imp.propensities["prefix"]),
        payload=payload,
    )


def replay_log(store: Store, name: str) -> tuple[Learner[Any], RankerDefinition, int]:
    """A fresh learner of ranker ``name`` with every logged event replayed; and its rounds."""
    defs = store.rankers()
    if name not in defs:
        raise ValueError(f"store {store.path} has no ranker {name!r}; it has {sorted(defs)}")
    defn = RankerDefinition(**defs[name])
    learner, model = build_ranker(defn)
    rounds = replay_into(learner, model, defn, store, name, store.events(name))
    return learner, defn, rounds


def _depth(rounds: list[LoggedRound], depth: int | None) -> int:
    most = min((min(len(r.prefix), r.labels.size) for r in rounds), default=1)
    return most if depth is None else min(depth, most)


def estimate_weights(
    rounds: list[LoggedRound], weights: np.ndarray[Any, Any], reward: str, depth: int | None = None
) -> IPSResult:
    """IPS value of the deterministic linear ranker ``weights`` (descending ``X w``)."""
    j = _depth(rounds, depth)
    w = np.asarray(weights, dtype=np.float64).reshape(1, -1)
    terms = []
    for r in rounds:
        assert r.context.features is not None
        own = own_order(batch_scores(w, r.context.features))[0]
        terms.append(ips_terms(r.shown, r.labels, r.prefix[j - 1], own[:j], REWARDS[reward]))
    return ips_estimate(terms)


def estimate_learner(
    rounds: list[LoggedRound], defn: RankerDefinition, reward: str, depth: int | None = None
) -> IPSResult:
    """Replay estimate (module docstring) of a candidate learner built from ``defn``."""
    learner, model = build_ranker(defn)
    j = _depth(rounds, depth)
    terms, matched = [], 0
    for r in rounds:
        orders = np.asarray(learner.rank(r.context))
        mine = orders[0, :j]
        term = ips_terms(r.shown, r.labels, r.prefix[j - 1], mine, REWARDS[reward])
        terms.append(term)
        if np.array_equal(r.shown[:j], mine):
            matched += 1
            # Learn from the logged feedback as if this list had been shown (its prefix was).
            fb, _ = make_feedback_object(learner, model, r.orders, r.shown, None, r.payload)
            learner.update(r.context, r.orders, fb)
    return ips_estimate(terms, matched)


def on_policy(rounds: list[LoggedRound], reward: str, depth: int | None = None) -> IPSResult:
    """The logged ranker's own average reward (no weighting): what users actually saw."""
    j = _depth(rounds, depth)
    return ips_estimate((REWARDS[reward](r.labels[:j]) for r in rounds), len(rounds))
