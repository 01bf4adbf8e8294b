"""Unbiasedness of the counterfactual objectives, by exact enumeration of the click vectors.

A list of four documents with click probabilities γ is shown to a
position-based user with examination θ; every one of the 2^4 click vectors is
enumerated with its probability, so expectations are exact sums (no sampling).
The objectives are linear in the click counts, so the expected IPS objective
equals the full-information objective on γ up to floating-point rounding: a
sum of 16 terms of size O(10), relative error well under 1e-12.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from oltr.data.dataset import LetorDataset
from oltr.learners.counterfactual import make_scorer
from oltr.learners.counterfactual.dr import dr_relevance
from oltr.learners.counterfactual.fit import training_objective
from oltr.learners.counterfactual.objectives import (
    Blocks,
    listwise_softmax,
    pairs_against_query,
    pairwise_hinge,
)
from oltr.learners.counterfactual.training import click_table
from oltr.logs import PositionCounts

THETA = np.array([1.0, 0.5, 0.3, 0.2])
GAMMA = np.array([0.9, 0.2, 0.6, 0.1])  # click probability of each document once examined
#: Two impressions of one query (the logger's order and a swap), each with probability 1/2.
ORDERS = [np.array([0, 1, 2, 3]), np.array([2, 1, 0, 3])]
RTOL = 1e-12  # 16 × 16 outcomes of O(10) terms: rounding is ~1e-15 relative


def _dataset() -> LetorDataset:
    return LetorDataset(
        features=np.eye(4), relevance=np.zeros(4, dtype=np.int64), qids=np.array([1]),
        offsets=np.array([0, 4]),
    )  # fmt: skip


def _outcomes() -> list[tuple[float, PositionCounts]]:
    """Every pair of click vectors of the two impressions, with its probability."""
    out = []
    per_impression = []
    for order in ORDERS:
        p_click = THETA * GAMMA[order]  # position k shows order[k]
        cases = []
        for clicks in itertools.product([0, 1], repeat=4):
            c = np.array(clicks, dtype=np.float64)
            p = float(np.prod(np.where(c == 1, p_click, 1 - p_click)))
            counts = np.zeros((4, 4))
            counts[order, np.arange(4)] = c
            cases.append((p, counts))
        per_impression.append(cases)
    shown = np.zeros((4, 4))
    for order in ORDERS:
        shown[order, np.arange(4)] += 1
    for (p1, c1), (p2, c2) in itertools.product(*per_impression):
        out.append((p1 * p2, PositionCounts(c1 + c2, shown.copy())))
    return out


@pytest.mark.parametrize("learner", ["ips", "ips-pairwise"])
def test_expected_ips_objective_is_the_full_information_one(learner: str) -> None:
    ds = _dataset()
    scorer = make_scorer("linear", 4)
    params = np.array([0.3, -1.2, 0.8, 0.1])  # the scores (features are the identity)
    expected_value, expected_grad, total = 0.0, np.zeros(4), 0.0
    for p, counts in _outcomes():
        fun, _ = training_objective(
            counts, ds, learner=learner, scorer=scorer, propensities=THETA, clip=0.0, l2=0.0
        )
        value, grad = fun(params)
        expected_value += p * value
        expected_grad += p * grad
        total += p
    assert total == pytest.approx(1.0, abs=1e-14)
    # Full information: every document labelled by γ, once per session (the objective is per
    # session, and each session shows all four documents).
    blocks = Blocks(np.array([0]), np.array([4]))
    if learner == "ips":
        truth, truth_grad = listwise_softmax(params, GAMMA, blocks)
    else:
        i, j = pairs_against_query(np.ones(4), blocks)
        truth, truth_grad = pairwise_hinge(params, GAMMA, i, j)
    assert expected_value == pytest.approx(truth, rel=RTOL)
    np.testing.assert_allclose(expected_grad, truth_grad, rtol=RTOL, atol=1e-14)


def test_naive_and_clipped_objectives_are_biased() -> None:
    # The same enumeration must tell a biased objective apart: without correction, or with
    # propensities clipped above the smallest θ, the expectation moves by far more than RTOL.
    ds = _dataset()
    scorer = make_scorer("linear", 4)
    params = np.array([0.3, -1.2, 0.8, 0.1])
    blocks = Blocks(np.array([0]), np.array([4]))
    truth, _ = listwise_softmax(params, GAMMA, blocks)
    for learner, clip in (("naive", None), ("ips", 0.4)):
        expected = 0.0
        for p, counts in _outcomes():
            fun, _ = training_objective(
                counts, ds, learner=learner, scorer=scorer, propensities=THETA, clip=clip, l2=0.0
            )
            expected += p * fun(params)[0]
        assert abs(expected - truth) > 0.05 * truth


def test_expected_dr_relevance_is_gamma_whatever_the_regression() -> None:
    # With the empirical exposure ρ_d = Σ_k shown[d, k] θ_k / n_q and no clipping,
    # E[R̂_DR(d)] = R̂_d + (ρ_d γ_d − ρ_d R̂_d)/ρ_d = γ_d for any prediction R̂.
    ds = _dataset()
    regression = np.array([0.5, 0.05, 0.99, 0.3])
    expected = np.zeros(4)
    for p, counts in _outcomes():
        table = click_table(counts, ds)
        expected += p * dr_relevance(table, THETA, 0.0, regression)
    np.testing.assert_allclose(expected, GAMMA, rtol=RTOL)
    # The enumeration detects bias: the uncorrected click rate is not γ.
    naive = np.zeros(4)
    for p, counts in _outcomes():
        naive += p * dr_relevance(click_table(counts, ds), np.ones(4), 0.0, regression)
    assert np.abs(naive - GAMMA).max() > 0.05


def test_dr_falls_back_on_the_regression_where_nothing_was_shown() -> None:
    # Document 3 is never shown (ρ = 0): with clipping τ > 0 the estimate is the
    # regression's prediction (the direct method), without clipping it is 0.
    ds = _dataset()
    clicks = np.zeros((4, 3))
    clicks[0, 0] = 1
    shown = np.zeros((4, 3))
    shown[[0, 1, 2], [0, 1, 2]] = 1
    table = click_table(PositionCounts(clicks, shown), ds)
    regression = np.array([0.5, 0.05, 0.99, 0.3])
    assert dr_relevance(table, THETA[:3], 0.1, regression)[3] == 0.3
    assert dr_relevance(table, THETA[:3], 0.0, regression)[3] == 0.0


@pytest.mark.parametrize("learner", ["naive", "ips", "ips-pairwise"])
def test_documents_never_shown_are_not_in_the_lists(learner: str) -> None:
    # Document 3 is never shown: the objective must not depend on its score, and must equal
    # the one of the three-document list of the shown ones.
    ds = _dataset()
    clicks = np.zeros((4, 3))
    clicks[[0, 2], [0, 2]] = 1
    shown = np.zeros((4, 3))
    shown[[0, 1, 2], [0, 1, 2]] = 1
    counts = PositionCounts(clicks, shown)
    fun, _ = training_objective(
        counts, ds, learner=learner, scorer=make_scorer("linear", 4), propensities=THETA[:3],
        clip=0.0, l2=0.0,
    )  # fmt: skip
    a, b = np.array([0.3, -1.2, 0.8, 5.0]), np.array([0.3, -1.2, 0.8, -5.0])
    assert fun(a)[0] == fun(b)[0]
    assert fun(a)[1][3] == 0.0
