"""Propensity helpers: Plackett–Luce prefix probabilities and marginals; deterministic lists."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from oltr.errors import InputError
from oltr.estimators.loggedlists import logged_lists, pad_lists
from oltr.estimators.rankingpolicy import (
    cascade_baselines,
    click_rate_table,
    cross_fitted_baselines,
    deterministic_marginals,
    deterministic_prefix_probabilities,
    gather_marginals,
    linear_orders,
    plackett_luce_marginals,
    plackett_luce_prefix_probabilities,
)

SCORES = np.array([[0.3, -1.0, 1.5, 0.0, 0.7], [2.0, 0.1, -0.5, -np.inf, 0.4]])


def brute_force(scores: np.ndarray) -> dict[tuple[int, ...], float]:
    """Probability of every full ranking of the present items, by the sequential definition."""
    items = [d for d in range(scores.size) if np.isfinite(scores[d])]
    out = {}
    for perm in itertools.permutations(items):
        p, left = 1.0, list(items)
        for d in perm:
            p *= np.exp(scores[d]) / np.exp(scores[left]).sum()
            left.remove(d)
        out[perm] = p
    return out


def test_prefix_probabilities_match_the_definition_and_sum_to_one() -> None:
    for row, scores in enumerate(SCORES):
        full = brute_force(scores)
        present = [d for d in range(5) if np.isfinite(scores[d])]
        prefixes = np.array(list(itertools.permutations(present, 3)))
        log = logged_lists(prefixes, np.zeros(prefixes.shape))
        got = plackett_luce_prefix_probabilities(np.broadcast_to(scores, (len(prefixes), 5)), log)
        want = [sum(p for perm, p in full.items() if perm[:3] == tuple(x)) for x in prefixes]
        # sums of ≤ 120 products of exponentials: agreement to 1e-12 is rounding
        assert got[:, 2] == pytest.approx(want, abs=1e-12), row
        assert got[:, 2].sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(np.diff(got, axis=1) <= 0)  # a longer prefix is no more likely


def test_prefix_probabilities_of_ragged_lists_repeat_the_last_value() -> None:
    log = pad_lists([[2, 0], [2, 0, 4]], [[0, 1], [0, 0, 1]])
    got = plackett_luce_prefix_probabilities(np.broadcast_to(SCORES[0], (2, 5)), log)
    assert got[0, 2] == got[0, 1]
    assert got[1, 1] == pytest.approx(got[0, 1])


@pytest.mark.parametrize("row", [0, 1])
def test_exact_marginals_match_enumeration(row: int) -> None:
    full = brute_force(SCORES[row])
    got = plackett_luce_marginals(SCORES[row : row + 1], 4, method="exact")[0]
    want = np.zeros((5, 4))
    for perm, p in full.items():
        for pos in range(min(4, len(perm))):
            want[perm[pos], pos] += p
    assert got == pytest.approx(want, abs=1e-12)


def test_monte_carlo_marginals_are_within_their_error() -> None:
    """With 20 000 rankings the standard error is ≤ 0.5/√20000 = 0.0035 per entry.

    A miss by 5 standard errors (0.018) in any of the 50 entries has probability
    below 50 × 6e-7; the seed is fixed.
    """
    exact = plackett_luce_marginals(SCORES, 5, method="exact")
    mc = plackett_luce_marginals(SCORES, 5, method="monte-carlo", n_samples=20_000, rng=4)
    assert np.abs(mc - exact).max() < 0.018
    again = plackett_luce_marginals(SCORES, 5, method="monte-carlo", n_samples=20_000, rng=4)
    assert np.array_equal(mc, again)


def test_gather_marginals_reads_the_logged_pairs() -> None:
    marg = plackett_luce_marginals(SCORES, 3, method="exact")
    log = pad_lists([[2, 0, 4], [0, 4]], [[0, 0, 0], [1, 0]])
    got = gather_marginals(marg, log)
    assert got[0].tolist() == [marg[0, 2, 0], marg[0, 0, 1], marg[0, 4, 2]]
    assert got[1].tolist() == [marg[1, 0, 0], marg[1, 4, 1], 0.0]


def test_linear_orders_sort_by_score_with_ties_to_the_lower_index() -> None:
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    assert linear_orders([1.0, 1.0], x).tolist() == [[2, 0, 1, 3]]
    assert linear_orders([1.0, 0.0], x, valid=[[True, True, False, True]]).tolist() == [
        [0, 1, 3, 2]
    ]


def test_deterministic_candidate_probabilities() -> None:
    cand = np.array([[0, 1, 2, 3], [3, 2, 1, 0]])
    log = logged_lists(np.array([[0, 2, 1], [3, 2, 1]]), np.zeros((2, 3)))
    assert deterministic_prefix_probabilities(cand, log).tolist() == [[1, 0, 0], [1, 1, 1]]
    assert deterministic_marginals(cand, log).tolist() == [[1, 0, 0], [1, 1, 1]]


def test_click_rate_table_and_cascade_baselines() -> None:
    log = logged_lists(np.array([[0, 1], [0, 1], [1, 0]]), np.array([[1, 0], [0, 0], [1, 1.0]]))
    qid = np.zeros(3, dtype=np.intp)
    table = click_rate_table(qid, log, log.clicks, n_queries=1, n_items=3)
    # (item 0, pos 0): clicks 1, 0 -> 0.5; (item 1, pos 1): 0, 0 -> 0; (item 1, pos 0): 1;
    # (item 0, pos 1): 1; item 2 never shown: the position means 2/3 and 1/3.
    np.testing.assert_allclose(table[0], [[0.5, 1.0], [1.0, 0.0], [2 / 3, 1 / 3]], rtol=1e-15)
    cand = np.array([[0, 1, 2]] * 3)
    q_logged, q_target = cascade_baselines(table, qid, cand, log)
    # Q̂_1(σ) = q̂(0, 1) + q̂(1, 2) = 0.5 + 0, Q̂_2(σ) = q̂(1, 2) = 0
    assert q_target.tolist() == [[0.5, 0.0]] * 3
    # row 2 shows item 1 first (not σ): its own q̂(1, 1) = 1 and q̂(0, 2) = 1
    assert q_logged.tolist() == [[0.5, 0.0], [0.5, 0.0], [1.0, 1.0]]


def test_cross_fitted_baselines_use_the_other_fold() -> None:
    """Rows 0, 2 (fold 0) get Q̂ fitted on rows 1, 3 (fold 1), and vice versa."""
    shown = np.array([[0, 1], [0, 1], [1, 0], [0, 1]])
    clicks = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    log = logged_lists(shown, clicks)
    qid = np.zeros(4, dtype=np.intp)
    cand = np.array([[0, 1]] * 4)
    q_logged, q_target = cross_fitted_baselines(qid, log, clicks, cand, n_queries=1, n_items=2)
    # fold 1 (rows 1, 3): q̂(0, pos 0) = 0.5, q̂(1, pos 1) = 1 -> Q̂_1 = 1.5, Q̂_2 = 1
    assert q_target[[0, 2]].tolist() == [[1.5, 1.0], [1.5, 1.0]]
    # fold 0 (rows 0, 2): q̂(0, pos 0) = 1, q̂(1, pos 1) = 0 -> Q̂_1 = 1, Q̂_2 = 0
    assert q_target[[1, 3]].tolist() == [[1.0, 0.0], [1.0, 0.0]]
    # row 2 shows item 1 first: its own q̂(1, pos 0) from fold 1 (never shown there: the
    # position mean of fold 1 at pos 0, 0.5) and q̂(0, pos 1) (never shown: mean at pos 1, 1.0)
    assert q_logged[2].tolist() == [0.5, 1.0]
    with pytest.raises(InputError, match="folds"):
        cross_fitted_baselines(qid, log, clicks, cand, n_queries=1, n_items=2, folds=1)
