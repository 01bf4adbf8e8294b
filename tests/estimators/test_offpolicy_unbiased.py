"""Unbiasedness of the off-policy estimators, by exact enumeration.

One query with m = 4 items; the logger is Plackett–Luce on fixed scores and
shows the top K = 3. Every logged list (24 prefixes) and every click vector
(8) is enumerated with its probability, so ``E[estimate] = Σ P(list) P(clicks |
list) · term(list, clicks)`` is computed exactly and compared with the true
value of the candidate, computed from the click model by enumeration too.
Both sides are sums of a few hundred double-precision products of numbers in
[0, 50], so they agree to ~1e-14; the tolerance 1e-10 leaves room and still
fails for any real bias (the biased case below is off by > 1e-2).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from oltr.estimators.loggedlists import logged_lists, metric_rewards
from oltr.estimators.offpolicy import OffPolicyEstimate, cascade_dr, ips, pbm_ips, snips
from oltr.estimators.rankingpolicy import (
    deterministic_marginals,
    deterministic_prefix_probabilities,
    gather_marginals,
    plackett_luce_marginals,
    plackett_luce_prefix_probabilities,
)

M, K = 4, 3
TOL = 1e-10
LOG_SCORES = np.array([0.8, 0.1, -0.4, 0.3])
CAND_SCORES = np.array([-0.5, 1.2, 0.4, 0.0])  # a stochastic (Plackett–Luce) candidate
CAND_ORDER = np.array([2, 0, 3, 1])  # a deterministic candidate
ATTRACT = np.array([0.7, 0.2, 0.5, 0.9])
EXAMINE = np.array([1.0, 0.6, 0.3])  # PBM examination by position
PREFIXES = np.array(list(itertools.permutations(range(M), K)))


def pl_prob(scores: np.ndarray, prefix: tuple[int, ...]) -> float:
    """Plackett–Luce probability of a prefix, by its definition (one factor per position)."""
    left = list(range(M))
    p = 1.0
    for item in prefix:
        e = np.exp(scores[left])
        p *= float(np.exp(scores[item]) / e.sum())
        left.remove(item)
    return p


def click_dist(model: str, prefix: np.ndarray) -> list[tuple[np.ndarray, float]]:
    """Every click vector of the shown prefix with its probability under ``model``."""
    a = ATTRACT[prefix]
    out = []
    for c in itertools.product([0.0, 1.0], repeat=K):
        cv = np.array(c)
        if model == "pbm":
            p = np.prod(np.where(cv == 1, EXAMINE * a, 1 - EXAMINE * a))
        else:  # cascade: click the first attractive item, then stop
            if cv.sum() > 1:
                continue
            if cv.sum() == 0:
                p = np.prod(1 - a)
            else:
                at = int(np.argmax(cv))
                p = np.prod(1 - a[:at]) * a[at]
        out.append((cv, float(p)))
    return out


def metric_value(metric: str, c: np.ndarray) -> float:
    log = logged_lists(np.arange(K)[None], c[None])
    return float(metric_rewards(log, metric).sum())


def true_value(model: str, metric: str, candidate: str) -> float:
    """The candidate's expected metric: Σ over its lists and their click vectors."""
    if candidate == "deterministic":
        lists = [(CAND_ORDER[:K], 1.0)]
    else:
        lists = [(p, pl_prob(CAND_SCORES, tuple(p))) for p in PREFIXES]
    return sum(
        pl * pc * metric_value(metric, c) for lst, pl in lists for c, pc in click_dist(model, lst)
    )


def enumerated_log(model: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (logged prefix, click vector) with its probability under the logger and ``model``."""
    shown, clicks, prob = [], [], []
    for p in PREFIXES:
        pp = pl_prob(LOG_SCORES, tuple(p))
        for c, pc in click_dist(model, p):
            shown.append(p)
            clicks.append(c)
            prob.append(pp * pc)
    return np.array(shown), np.array(clicks), np.array(prob)


def candidate_terms(candidate: str, log_shown: np.ndarray) -> dict[str, np.ndarray]:
    log = logged_lists(log_shown, np.zeros(log_shown.shape))
    n = log_shown.shape[0]
    if candidate == "deterministic":
        orders = np.broadcast_to(CAND_ORDER, (n, M))
        return {
            "prefix": deterministic_prefix_probabilities(orders, log),
            "marginals": deterministic_marginals(orders, log),
        }
    s = np.broadcast_to(CAND_SCORES, (n, M))
    return {
        "prefix": plackett_luce_prefix_probabilities(s, log),
        "marginals": gather_marginals(plackett_luce_marginals(s, K, method="exact"), log),
    }


def expectation(
    model: str,
    estimate: Callable[..., OffPolicyEstimate],
    metric: str,
    candidate: str,
    **extra: str,
) -> float:
    """Σ_rows P(row) · (the estimate computed from that single row)."""
    shown, clicks, prob = enumerated_log(model)
    n = shown.shape[0]
    base = logged_lists(shown, np.zeros(shown.shape))
    s0 = np.broadcast_to(LOG_SCORES, (n, M))
    pre0 = plackett_luce_prefix_probabilities(s0, base)
    marg0 = gather_marginals(plackett_luce_marginals(s0, K, method="exact"), base)
    tgt = candidate_terms(candidate, shown)
    q_logged, q_target = cascade_q(shown, candidate)
    total = 0.0
    for i in range(n):
        row = logged_lists(shown[i : i + 1], clicks[i : i + 1])
        inputs = {
            "ips": {"logging_prob": pre0[i : i + 1], "target_prob": tgt["prefix"][i : i + 1]},
            "pbm-ips": {
                "logging_marginals": marg0[i : i + 1],
                "target_marginals": tgt["marginals"][i : i + 1],
            },
            "cascade-dr": {
                "logging_prefix_prob": pre0[i : i + 1],
                "target_prefix_prob": tgt["prefix"][i : i + 1],
                "q_logged": q_logged[i : i + 1],
                "q_target": q_target[i : i + 1],
            },
        }[extra["kind"]]
        est = estimate(row, metric, interval="normal", **inputs)
        total += prob[i] * est.value
    return total


#: An arbitrary (deliberately wrong) regression Q̂_l(prefix): Cascade-DR is unbiased for any fixed Q̂.
_Q_RNG = np.random.default_rng(7)
Q_HAT = {
    tuple(p[:length]): float(_Q_RNG.uniform(0, 2)) for p in PREFIXES for length in range(1, K + 1)
}


def cascade_q(shown: np.ndarray, candidate: str) -> tuple[np.ndarray, np.ndarray]:
    """Q̂ at the logged prefixes, and its expectation under the candidate at each position."""
    n = shown.shape[0]
    q_logged = np.array([[Q_HAT[tuple(shown[i, : pos + 1])] for pos in range(K)] for i in range(n)])
    q_target = np.zeros((n, K))
    for i in range(n):
        for pos in range(K):
            above = list(shown[i, :pos])
            left = [d for d in range(M) if d not in above]
            if candidate == "deterministic":
                nxt = [d for d in CAND_ORDER if d not in above][0]
                probs = {nxt: 1.0}
            else:
                e = np.exp(CAND_SCORES[left])
                probs = dict(zip(left, e / e.sum(), strict=True))
            q_target[i, pos] = sum(pr * Q_HAT[tuple([*above, d])] for d, pr in probs.items())
    return q_logged, q_target


CANDIDATES = ["deterministic", "plackett-luce"]


@pytest.mark.parametrize("candidate", CANDIDATES)
@pytest.mark.parametrize("model", ["pbm", "cascade"])
@pytest.mark.parametrize("metric", ["clicks", "ctr@2", "dcg@3"])
def test_ips_is_unbiased_under_any_click_model(model: str, metric: str, candidate: str) -> None:
    got = expectation(model, ips, metric, candidate, kind="ips")
    assert got == pytest.approx(true_value(model, metric, candidate), abs=TOL)


@pytest.mark.parametrize("candidate", CANDIDATES)
@pytest.mark.parametrize("metric", ["clicks", "clicks@2", "dcg@3"])
def test_pbm_ips_is_unbiased_under_the_position_based_model(metric: str, candidate: str) -> None:
    got = expectation("pbm", pbm_ips, metric, candidate, kind="pbm-ips")
    assert got == pytest.approx(true_value("pbm", metric, candidate), abs=TOL)


def test_pbm_ips_is_biased_when_clicks_cascade() -> None:
    """The test can fail: under the cascade model a click depends on the items above it."""
    got = expectation("cascade", pbm_ips, "clicks", "plackett-luce", kind="pbm-ips")
    assert abs(got - true_value("cascade", "clicks", "plackett-luce")) > 1e-2


@pytest.mark.parametrize("candidate", CANDIDATES)
@pytest.mark.parametrize("model", ["cascade", "pbm"])
@pytest.mark.parametrize("metric", ["clicks", "ctr@3", "dcg@2"])
def test_cascade_dr_is_unbiased_under_the_cascade_assumption(
    model: str, metric: str, candidate: str
) -> None:
    got = expectation(model, cascade_dr, metric, candidate, kind="cascade-dr")
    assert got == pytest.approx(true_value(model, metric, candidate), abs=TOL)


@pytest.mark.parametrize("candidate", CANDIDATES)
def test_snips_limit_is_the_true_value(candidate: str) -> None:
    """SNIPS → E[wR]/E[w] (law of large numbers in numerator and denominator); E[w] = 1 here."""
    num = expectation("pbm", ips, "clicks", candidate, kind="ips")
    shown, _, prob = enumerated_log("pbm")
    n = shown.shape[0]
    base = logged_lists(shown, np.zeros(shown.shape))
    pre0 = plackett_luce_prefix_probabilities(np.broadcast_to(LOG_SCORES, (n, M)), base)
    w = candidate_terms(candidate, shown)["prefix"][:, -1] / pre0[:, -1]
    mean_w = float((prob * w).sum())
    assert mean_w == pytest.approx(1.0, abs=TOL)
    assert num / mean_w == pytest.approx(true_value("pbm", "clicks", candidate), abs=TOL)


def test_snips_is_consistent_on_a_large_sample() -> None:
    """At n = 40 000 draws, SNIPS is within 4 standard errors of the truth.

    Its O(1/n) bias is far below the standard error here; a |z| > 4 miss has
    probability < 1e-4 for a consistent estimator, and the seed is fixed.
    """
    rng = np.random.default_rng(11)
    n = 40_000
    s0 = np.broadcast_to(LOG_SCORES, (n, M))
    shown = np.argsort(-(s0 + rng.gumbel(size=(n, M))), axis=1)[:, :K]
    clicks = (rng.random((n, K)) < EXAMINE * ATTRACT[shown]).astype(float)
    log = logged_lists(shown, clicks)
    p0 = plackett_luce_prefix_probabilities(s0, log)
    pe = plackett_luce_prefix_probabilities(np.broadcast_to(CAND_SCORES, (n, M)), log)
    est = snips(log, "clicks", logging_prob=p0, target_prob=pe, interval="normal")
    truth = true_value("pbm", "clicks", "plackett-luce")
    assert abs(est.value - truth) < 4 * est.stderr
