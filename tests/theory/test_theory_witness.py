"""Indistinguishable adversaries: CT16 Table 1 and pairs found by linear programming."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from oltr.metrics import ndcg
from oltr.theory.matrices import game_from_matrices, ranking_game
from oltr.theory.witness import (
    CT16_P,
    CT16_P_TILDE,
    CT16_RELEVANCE,
    check_pair,
    expected_normalized_gain,
    find_indistinguishable_pair,
)

# CT16 Table 1 / proof of Theorem 5.2, typed from the paper: (R1..R8) and p, p̃ in tenths.
TABLE1_R = ["000", "110", "101", "011", "100", "010", "001", "111"]
TABLE1_P = [F(0), F(1, 10), F(15, 100), F(5, 100), F(2, 10), F(3, 10), F(2, 10), F(0)]
TABLE1_P_TILDE = [F(0), F(3, 10), F(0), F(0), F(15, 100), F(15, 100), F(4, 10), F(0)]


def test_table1_constants_match_the_paper() -> None:
    assert ["".join(map(str, r)) for r in CT16_RELEVANCE] == TABLE1_R
    assert CT16_P.tolist() == [float(x) for x in TABLE1_P]
    assert CT16_P_TILDE.tolist() == [float(x) for x in TABLE1_P_TILDE]
    assert sum(TABLE1_P) == 1 and sum(TABLE1_P_TILDE) == 1


def test_table1_equal_marginals_exactly() -> None:
    rel = [[int(c) for c in r] for r in TABLE1_R]
    for dist in (TABLE1_P, TABLE1_P_TILDE):
        marg = [sum(w * r[i] for w, r in zip(dist, rel, strict=True)) for i in range(3)]
        assert marg == [F(45, 100), F(45, 100), F(40, 100)]


def test_table1_expected_normalized_gains_to_printed_precision() -> None:
    got_p = expected_normalized_gain(CT16_RELEVANCE, CT16_P)
    got_q = expected_normalized_gain(CT16_RELEVANCE, CT16_P_TILDE)
    assert np.round(got_p, 4).tolist() == [0.3533, 0.3920, 0.3226]
    assert np.round(got_q, 4).tolist() == [0.3339, 0.3339, 0.4000]


def test_table1_pair_is_a_witness() -> None:
    g = ranking_game("ndcg", 3, col_order=CT16_RELEVANCE)
    pair = check_pair(g, CT16_P, CT16_P_TILDE)
    assert pair.feedback_gap < 1e-12
    orders = lambda acts: {tuple(int(i) + 1 for i in g.actions[a]) for a in acts}  # noqa: E731
    # argsort under p is [2, 1, 3]; under p̃ it is [3, 1, 2] or [3, 2, 1].
    assert orders(pair.optimal_p) == {(2, 1, 3)}
    assert orders(pair.optimal_q) == {(3, 1, 2), (3, 2, 1)}
    assert pair.is_witness and pair.epsilon > 0.01


def test_expected_normalized_gain_sorts_expected_ndcg() -> None:
    # E_p[NDCG(σ, R)] = Σ_i E_p[G(R_i)/Z(R)] / log2(1 + σ(i)) + p(000)·1, for every σ.
    rel = np.array([[0, 0, 0], [1, 0, 1], [0, 1, 1], [1, 1, 1], [1, 0, 0]])
    p = np.array([0.1, 0.2, 0.3, 0.15, 0.25])
    w = expected_normalized_gain(rel, p)
    for order in ([0, 1, 2], [2, 0, 1], [1, 2, 0]):
        ranks = np.argsort(order) + 1
        lhs = float(p @ ndcg(rel, np.array(order)))
        assert lhs == pytest.approx(float(w @ (1 / np.log2(1 + ranks))) + 0.1, abs=1e-12)


def test_hand_game_witness() -> None:
    # Matching pennies seen blind: p = δ_1, q = δ_2, every action regrets 1 under one of them.
    g = game_from_matrices([[0, 1], [1, 0]], [[0, 0], [0, 0]])
    pair = find_indistinguishable_pair(g)
    assert pair is not None and pair.is_witness
    assert pair.epsilon == pytest.approx(0.5)
    assert {pair.optimal_p, pair.optimal_q} == {(0,), (1,)}
    assert (
        find_indistinguishable_pair(game_from_matrices([[0, 1], [1, 0]], [[0, 1], [0, 1]])) is None
    )


@pytest.mark.parametrize(("measure", "m"), [("ndcg", 3), ("map", 3), ("auc", 4)])
def test_found_pairs_are_verified_witnesses(measure: str, m: int) -> None:
    g = ranking_game(measure, m)
    pair = find_indistinguishable_pair(g)
    assert pair is not None and pair.is_witness
    # Independent checks: equal per-item relevance marginals (top-1 feedback, binary) and
    # disjoint optimal sets recomputed from the measure's values.
    np.testing.assert_allclose(pair.p @ g.outcomes, pair.q @ g.outcomes, atol=1e-9)
    assert pair.p.min() >= 0 and pair.p.sum() == pytest.approx(1)
    for dist, claimed in ((pair.p, pair.optimal_p), (pair.q, pair.optimal_q)):
        expected = g.values @ dist
        best = expected.max() if g.kind == "gain" else expected.min()
        assert set(np.flatnonzero(np.abs(expected - best) <= 1e-9)) == set(claimed)
    assert not set(pair.optimal_p) & set(pair.optimal_q)


@pytest.mark.parametrize(
    ("measure", "m"), [("sumloss", 3), ("dcg", 3), ("auc", 3), ("precision@2", 3)]
)
def test_no_witness_when_globally_observable(measure: str, m: int) -> None:
    assert find_indistinguishable_pair(ranking_game(measure, m)) is None


def test_witness_found_pair_beats_table1() -> None:
    # The LP maximises ε over all pairs, so it is at least Table 1's ε.
    g16 = ranking_game("ndcg", 3, col_order=CT16_RELEVANCE)
    table = check_pair(g16, CT16_P, CT16_P_TILDE).epsilon
    assert find_indistinguishable_pair(ranking_game("ndcg", 3)).epsilon >= table - 1e-9


@pytest.mark.parametrize(
    ("p", "match"),
    [
        ([0.5, 0.5], "shape"),
        ([0.5] * 8, "probability"),
        ([np.nan] + [0.0] * 7, "probability"),
    ],
)
def test_check_pair_rejects_bad_distributions(p: list, match: str) -> None:
    g = ranking_game("ndcg", 3)
    with pytest.raises(ValueError, match=match):
        check_pair(g, p, CT16_P)


def test_expected_normalized_gain_rejects_mismatch() -> None:
    with pytest.raises(ValueError, match="agree"):
        expected_normalized_gain([[0, 1]], [0.5, 0.5])


@pytest.mark.parametrize(("measure", "m"), [("ndcg", 3), ("map", 3)])
def test_pruned_search_matches_exhaustive_search(measure: str, m: int) -> None:
    # The bound-and-skip search must return the largest ε that solving every pair gives.
    from scipy.linalg import orth

    from oltr.theory.cells import cell_structure
    from oltr.theory.witness import _pair_lp

    g = ranking_game(measure, m)
    cs = cell_structure(g, neighbours=False)
    reps = g.loss[[c[0] for c, ok in zip(cs.classes, cs.pareto, strict=True) if ok]]
    w = orth(g.signal_matrices().reshape(-1, g.n_outcomes).astype(float).T).T
    best = max(
        sol[0]
        for a in range(len(reps))
        for b in range(a + 1, len(reps))
        if (sol := _pair_lp(reps, a, b, w)) is not None
    )
    assert find_indistinguishable_pair(g).epsilon == pytest.approx(best / 2, abs=1e-8)
