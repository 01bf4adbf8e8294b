"""Judge a candidate ranker off-policy on a served ranker's logged impressions.

A stochastic served ranker (PDGD's Plackett–Luce, RTop-kF's ε-greedy, a
team-draft or probabilistic duel) logs with every impression the probability
of each prefix of the page it showed (:mod:`oltr.serve.propensities`), and the
clicks come back as feedback events. :func:`logged_impressions` reads them
from the store into the inputs of :mod:`oltr.estimators.offpolicy`:

- :class:`~oltr.estimators.loggedlists.LoggedLists` — the shown page (the
  first ``n = len(prefix)`` items of the shown list), its clicks (a ``clicks``
  body's positions; for a ``labels`` body a positive label counts as a click)
  and the mask;
- the logging prefix probabilities, exactly as logged;
- for a Plackett–Luce logger, the scores it sampled with. They are read from
  the impression itself: a click learner keeps the round its update needs with
  each impression (``extra["round"]`` = ``(t, scores)``,
  :mod:`oltr.serve.clickfeedback`), and those are the very scores that drew
  the list. Replaying the log into a fresh learner
  (:func:`oltr.serve.replay.replay_log`) would give the same scores bit for bit
  (the service's restore relies on it) at the cost of re-running every update;
  the stored ones are checked instead against the logged prefix
  probabilities (Plackett 1975; Oosterhuis & de Rijke 2018, eq. 2), and a
  mismatch is an error. Their item-position marginals
  (:func:`oltr.estimators.rankingpolicy.plackett_luce_marginals`) feed
  ``pbm-ips``; for the other loggers ``pbm-ips`` is unavailable.

Impressions without feedback (pending or expired), impressions without
propensities and pages a live comparison produced (interleaved, or the
candidate's after a promotion: not the logger's policy) are left out and
counted in :attr:`LoggedImpressions.skipped`.

A **candidate** is deterministic here: its list for each logged context, as
an (n, m) array of orders (:class:`Candidate`). It comes from

- another served ranker: its current weights (``weights_``, what ``GET
  /rankers/{name}`` shows), ranked greedily — its own order, the ranker it
  *reports*, not its exploration policy;
- a ranker definition (the body ``PUT /rankers/{name}`` takes): the learner
  its fresh state plays greedily — zero weights, or the weights of its
  ``init`` model file — with no training by replay (a definition with an
  ``init`` is the useful case: "would this warm start beat the served one?");
- a model file of ``oltr logs fit`` (:func:`oltr.learners.counterfactual.load_model`):
  items by descending model score (linear or MLP).

Ties go to the lower item index (:func:`oltr.permutations.order_from_scores`).
Its probabilities are then 0/1 (:func:`~oltr.estimators.rankingpolicy.
deterministic_prefix_probabilities`, :func:`~oltr.estimators.rankingpolicy.
deterministic_marginals`), and ``cascade-dr``'s regression is the cross-fitted
per-(context, item, position) click-rate table
(:func:`~oltr.estimators.rankingpolicy.cross_fitted_baselines`, two folds; a
context is identified by the bytes of its feature matrix). :func:`evaluate`
runs the chosen estimators and the logged ranker's own on-policy value (the
mean logged reward) with the same kind of interval.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from oltr.errors import DataFormatError, InputError
from oltr.estimators.intervals import bernstein_interval, bootstrap_interval, normal_interval
from oltr.estimators.loggedlists import (
    LoggedLists,
    logged_lists,
    max_reward,
    metric_depth,
    metric_rewards,
)
from oltr.estimators.offpolicy import ESTIMATORS, OffPolicyEstimate
from oltr.estimators.rankingpolicy import (
    MAX_EXACT_ITEMS,
    cross_fitted_baselines,
    deterministic_marginals,
    deterministic_prefix_probabilities,
    gather_marginals,
    plackett_luce_marginals,
    plackett_luce_prefix_probabilities,
)
from oltr.learners.base import Learner
from oltr.learners.counterfactual import RankingModel
from oltr.learners.linear import LinearRanker
from oltr.permutations import order_from_scores
from oltr.serve.comparison import learns_from
from oltr.serve.protocol import RankerDefinition, RequestError, build_ranker
from oltr.serve.state import decode_state
from oltr.serve.store import Impression, Store

__all__ = [
    "ESTIMATOR_NAMES",
    "Candidate",
    "Evaluation",
    "check_features",
    "LoggedImpressions",
    "evaluate",
    "learner_candidate",
    "learner_weights",
    "logged_impressions",
    "model_candidate",
    "weights_candidate",
]

FloatArray = NDArray[np.float64]
#: The estimators :func:`evaluate` runs, in the order it reports them.
ESTIMATOR_NAMES = ("ips", "snips", "pbm-ips", "cascade-dr")
#: Relative tolerance between the logged prefix probabilities and those of the stored scores:
#: both are float64 products of the same factors, computed in a different order.
_PREFIX_RTOL = 1e-8


@dataclass(frozen=True)
class LoggedImpressions:
    """The judged impressions of one served ranker, aligned row by row (module docstring).

    ``features`` is (n, M, d), zero on padding; ``valid`` (n, M) marks real items;
    ``prefix`` (n, K) the logging prefix probabilities (the last repeated on
    padding); ``scores`` (n, M) the Plackett–Luce logger's scores (``-inf`` on
    padding) or None; ``qid`` (n,) one id per distinct context; ``skipped``
    how many impressions were left out, by reason.
    """

    ranker: str
    method: str
    ids: tuple[str, ...]
    log: LoggedLists
    features: FloatArray
    valid: NDArray[np.bool_]
    prefix: FloatArray
    scores: FloatArray | None
    qid: NDArray[np.intp]
    skipped: dict[str, int]

    @property
    def n_features(self) -> int:
        """Length of the logged feature vectors."""
        return int(self.features.shape[2])


@dataclass(frozen=True)
class Candidate:
    """A deterministic candidate's list for every logged context: ``orders`` (n, M)."""

    label: str
    orders: NDArray[np.intp]


@dataclass(frozen=True)
class Evaluation:
    """The estimates of one candidate on one log (``unavailable``: estimator → why not)."""

    ranker: str
    candidate: str
    metric: str
    alpha: float
    n: int
    skipped: dict[str, int]
    on_policy: OffPolicyEstimate
    estimates: dict[str, OffPolicyEstimate]
    unavailable: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (NaN becomes None)."""
        return {
            "ranker": self.ranker,
            "candidate": self.candidate,
            "metric": self.metric,
            "alpha": self.alpha,
            "impressions": self.n,
            "skipped": dict(self.skipped),
            "on_policy": _estimate_dict(self.on_policy),
            "estimates": [_estimate_dict(e) for e in self.estimates.values()],
            "unavailable": dict(self.unavailable),
        }


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _estimate_dict(e: OffPolicyEstimate) -> dict[str, Any]:
    return {
        "estimator": e.estimator,
        "value": _finite(e.value),
        "ci_low": _finite(e.ci_low),
        "ci_high": _finite(e.ci_high),
        "interval": e.interval_method,
        "stderr": _finite(e.stderr),
        "n": e.n,
        "matched": e.matched,
    }


# -- the log ------------------------------------------------------------------------------


def _clicks(payload: dict[str, Any], n: int, where: str) -> FloatArray:
    c = np.zeros(n)
    if "clicks" in payload:
        for pos in payload["clicks"]:
            if not (isinstance(pos, int) and 0 <= pos < n):
                raise DataFormatError(f"{where}: click position {pos!r} is not on the page of {n}")
            c[pos] = 1.0
    elif "labels" in payload:
        labels = np.asarray(payload["labels"], dtype=np.float64)[:n]
        c[: labels.size] = labels > 0  # a positive label counts as a click
    else:
        raise DataFormatError(f"{where}: feedback has neither clicks nor labels: {payload}")
    return c


def _round_scores(imp: Impression, where: str) -> FloatArray:
    enc = imp.extra.get("round")
    if enc is None:
        raise DataFormatError(f"{where}: a Plackett-Luce impression without its round's scores")
    state = decode_state(enc, None, "round")
    return np.asarray(state[1], dtype=np.float64).reshape(-1)


def _context_ids(features: Sequence[FloatArray]) -> NDArray[np.intp]:
    seen: dict[bytes, int] = {}
    out = np.empty(len(features), dtype=np.intp)
    for i, x in enumerate(features):
        key = hashlib.blake2b(np.ascontiguousarray(x).tobytes(), digest_size=16).digest()
        key += str(x.shape).encode()
        out[i] = seen.setdefault(key, len(seen))
    return out


def logged_impressions(store: Store, name: str, *, learner: str | None = None) -> LoggedImpressions:
    """The impressions of ranker ``name`` that can be judged off-policy (module docstring).

    Raises :class:`~oltr.serve.protocol.RequestError` 404 when the store has no
    ranker ``name``, and 422 when none of its impressions with feedback carries
    propensities (a deterministic ranker, or balanced interleaving) or carries
    no features. ``learner`` names its learner in that message.
    """
    defs = store.rankers()
    if name not in defs:
        raise RequestError(f"no ranker named {name!r} in store {store.path}", 404)
    who = f"ranker {name!r} (learner {learner or defs[name].get('learner')!r})"
    fb = {ev.impression: ev.payload for ev in store.events(name) if ev.kind == "feedback"}
    skipped = {"pending": 0, "expired": 0, "no_propensities": 0, "comparison": 0}
    rows: list[tuple[Impression, dict[str, Any]]] = []
    for imp in store.impressions(name):
        payload = fb.get(imp.id)
        if payload is None:
            skipped["expired" if imp.status == "expired" else "pending"] += 1
        elif not learns_from(imp.extra):
            skipped["comparison"] += 1
        elif not imp.propensities.get("prefix"):
            skipped["no_propensities"] += 1
        else:
            rows.append((imp, payload))
    if not rows:
        why = (
            "its impressions carry no propensities: a deterministic ranker (or balanced "
            "interleaving) logs no list probabilities, so nothing it did not show can be judged"
            if skipped["no_propensities"]
            else "it has no impression with feedback yet"
        )
        raise RequestError(f"{who} cannot be evaluated off-policy: {why} ({skipped})")
    if any(imp.features is None for imp, _ in rows):
        raise RequestError(f"{who} ranks a fixed item set: candidates here rank feature lists")
    methods = {imp.propensities.get("method") for imp, _ in rows}
    if len(methods) != 1:
        raise DataFormatError(
            f"{who}: impressions logged by several policies: {sorted(map(str, methods))}"
        )
    method = str(methods.pop())
    n, big_m = len(rows), max(imp.n_items for imp, _ in rows)
    d = int(rows[0][0].features.shape[1])  # type: ignore[union-attr]
    big_k = max(len(imp.propensities["prefix"]) for imp, _ in rows)
    shown = np.full((n, big_k), -1, dtype=np.intp)
    clicks, prefix = np.zeros((n, big_k)), np.ones((n, big_k))
    mask = np.zeros((n, big_k), dtype=bool)
    feats, valid = np.zeros((n, big_m, d)), np.zeros((n, big_m), dtype=bool)
    scores = np.full((n, big_m), -np.inf) if method == "plackett-luce" else None
    for i, (imp, payload) in enumerate(rows):
        where = f"{who}, impression {imp.id}"
        p = np.asarray(imp.propensities["prefix"], dtype=np.float64)
        k, m = p.size, imp.n_items
        shown[i, :k], mask[i, :k], prefix[i, :k], prefix[i, k:] = imp.shown[:k], True, p, p[-1]
        clicks[i, :k] = _clicks(payload, k, where)
        feats[i, :m], valid[i, :m] = imp.features, True
        if scores is not None:
            s = _round_scores(imp, where)
            if s.size != m:
                raise DataFormatError(f"{where}: {s.size} stored scores for {m} items")
            scores[i, :m] = s
    log = logged_lists(shown, clicks, mask)
    if scores is not None:
        again = plackett_luce_prefix_probabilities(scores, log)
        bad = ~np.isclose(again, prefix, rtol=_PREFIX_RTOL, atol=0.0) & mask
        if np.any(bad):
            i = int(np.argwhere(bad)[0][0])
            raise DataFormatError(
                f"{who}, impression {rows[i][0].id}: the logged prefix probabilities "
                f"{prefix[i][mask[i]].tolist()} are not those of its stored scores "
                f"{again[i][mask[i]].tolist()}"
            )
    ids = tuple(imp.id for imp, _ in rows)
    qid = _context_ids([imp.features for imp, _ in rows])  # type: ignore[misc]
    return LoggedImpressions(name, method, ids, log, feats, valid, prefix, scores, qid, skipped)


# -- candidates ---------------------------------------------------------------------------


def _scored(label: str, scores: FloatArray, logged: LoggedImpressions) -> Candidate:
    s = np.where(logged.valid, scores, -np.inf)
    return Candidate(label, order_from_scores(s).astype(np.intp))


def weights_candidate(label: str, weights: Any, logged: LoggedImpressions) -> Candidate:
    """The linear ranker ``weights`` (d,), greedy: items by descending ``X w``."""
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    if w.size != logged.n_features:
        raise InputError(
            f"candidate {label} scores {w.size} features, but ranker {logged.ranker!r} logged "
            f"{logged.n_features}"
        )
    if not np.all(np.isfinite(w)):
        raise InputError(f"candidate {label} has weights that are not finite")
    return _scored(label, logged.features @ w, logged)


def model_candidate(label: str, model: RankingModel, logged: LoggedImpressions) -> Candidate:
    """A model of ``oltr logs fit``: items by descending model score."""
    if model.n_features != logged.n_features:
        raise InputError(
            f"candidate {label} is a model of {model.n_features} features, but ranker "
            f"{logged.ranker!r} logged {logged.n_features}"
        )
    n, m, d = logged.features.shape
    return _scored(label, model.scores(logged.features.reshape(n * m, d)).reshape(n, m), logged)


def check_features(what: str, n_features: int | None, logged: LoggedImpressions) -> None:
    """Refuse a candidate whose definition ranks another number of features than were logged."""
    if n_features != logged.n_features:
        raise InputError(
            f"candidate {what} ranks {n_features} features, but ranker {logged.ranker!r} "
            f"logged {logged.n_features}"
        )


def learner_weights(learner: Learner[Any], what: str, n_features: int) -> FloatArray:
    """The current weights (d,) of a linear learner (zeros before its first round)."""
    try:
        w: FloatArray = np.array(learner.weights_, dtype=np.float64)[0]  # type: ignore[attr-defined]
        return w
    except AttributeError:
        if isinstance(learner, LinearRanker):
            return np.zeros(n_features)
    raise InputError(
        f"candidate {what} ({type(learner).__name__}) is not a linear scorer: only linear "
        "rankers and model files can be judged here"
    )


def learner_candidate(
    defn: RankerDefinition, logged: LoggedImpressions, label: str | None = None
) -> Candidate:
    """The policy a fresh learner of ``defn`` plays greedily (its init weights, or zeros)."""
    what = label or f"definition {defn.learner!r}"
    check_features(what, defn.n_features, logged)
    learner, _ = build_ranker(defn)
    return weights_candidate(what, learner_weights(learner, what, logged.n_features), logged)


# -- the estimates ------------------------------------------------------------------------


def _on_policy(
    logged: LoggedImpressions, metric: str, interval: str | None, alpha: float, n_boot: int
) -> OffPolicyEstimate:
    log = logged.log
    terms = metric_rewards(log, metric).sum(axis=1)
    method = interval or "studentized"
    _, _, se = normal_interval(terms, alpha=alpha)
    if method == "bernstein":
        low, high = bernstein_interval(
            terms, low=0.0, high=max_reward(metric, log.shown.shape[1]), alpha=alpha
        )
    else:
        boot: Literal["bca", "studentized"] = "bca" if method == "bca" else "studentized"
        low, high = bootstrap_interval(terms, alpha=alpha, n_boot=n_boot, method=boot, rng=0)
    value = float(terms.mean())
    return OffPolicyEstimate("on-policy", metric, value, low, high, log.n, method, alpha, se, log.n)


def _inputs(name: str, logged: LoggedImpressions, cand: Candidate, metric: str) -> dict[str, Any]:
    log = logged.log
    if name in ("ips", "snips"):
        target = deterministic_prefix_probabilities(cand.orders, log)
        return {"logging_prob": logged.prefix, "target_prob": target}
    if name == "pbm-ips":
        if logged.scores is None:
            raise InputError(
                f"pbm-ips needs item-position marginals, known here for a Plackett-Luce "
                f"logger only; ranker {logged.ranker!r} logs {logged.method!r}"
            )
        if logged.scores.shape[1] > MAX_EXACT_ITEMS:
            raise InputError(
                f"pbm-ips: exact Plackett-Luce marginals need lists of at most "
                f"{MAX_EXACT_ITEMS} items, the log has {logged.scores.shape[1]} (sampled ones "
                "would bias the weights; use ips, snips or cascade-dr)"
            )
        marg = plackett_luce_marginals(logged.scores, log.shown.shape[1], method="exact")
        return {
            "logging_marginals": gather_marginals(marg, log),
            "target_marginals": deterministic_marginals(cand.orders, log),
        }
    q_logged, q_target = cross_fitted_baselines(
        logged.qid, log, metric_rewards(log, metric), cand.orders,
        n_queries=int(logged.qid.max()) + 1, n_items=int(logged.features.shape[1]),
    )  # fmt: skip
    return {
        "logging_prefix_prob": logged.prefix,
        "target_prefix_prob": deterministic_prefix_probabilities(cand.orders, log),
        "q_logged": q_logged,
        "q_target": q_target,
    }


def evaluate(
    logged: LoggedImpressions,
    candidate: Candidate,
    *,
    estimators: Sequence[str] = ESTIMATOR_NAMES,
    metric: str = "clicks",
    interval: str | None = None,
    alpha: float = 0.05,
    n_boot: int = 1000,
) -> Evaluation:
    """Estimate ``candidate``'s value of ``metric`` on ``logged`` with each of ``estimators``.

    ``interval`` None takes each estimator's default (BCa bootstrap, seed 0);
    ``"bernstein"`` the empirical Bernstein bound where an estimator has one.
    An estimator that cannot judge this log or metric (``pbm-ips`` on ``ctr@k``
    or for a logger without marginals, ``bernstein`` for ``snips``) is listed
    in :attr:`Evaluation.unavailable` with the reason; an unknown name, metric
    or interval raises :class:`~oltr.errors.InputError`.
    """
    unknown = [e for e in estimators if e not in ESTIMATORS]
    if unknown or not estimators:
        raise InputError(f"estimators must be among {list(ESTIMATOR_NAMES)}, got {unknown}")
    if interval not in (None, "studentized", "bca", "bernstein"):
        raise InputError(f"interval must be 'studentized', 'bca' or 'bernstein', got {interval!r}")
    metric_depth(metric, logged.log.shown.shape[1])  # an unknown metric fails here
    if candidate.orders.shape[0] != logged.log.n:
        raise InputError(
            f"candidate {candidate.label} has {candidate.orders.shape[0]} lists for "
            f"{logged.log.n} impressions"
        )
    on = _on_policy(logged, metric, interval, alpha, n_boot)
    out: dict[str, OffPolicyEstimate] = {}
    unavailable: dict[str, str] = {}
    for name in (e for e in ESTIMATOR_NAMES if e in estimators):
        try:
            out[name] = ESTIMATORS[name](
                logged.log, metric, **_inputs(name, logged, candidate, metric),
                interval=interval, alpha=alpha, n_boot=n_boot, rng=0,
            )  # fmt: skip
        except InputError as exc:
            unavailable[name] = str(exc)
    return Evaluation(
        logged.ranker, candidate.label, metric, alpha, logged.log.n, logged.skipped, on, out,
        unavailable,
    )  # fmt: skip
