"""Global and local observability verdicts against Theorems 1 and 4, §14 and Lemma 11 of CT15."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oltr.theory.cells import cell_structure
from oltr.theory.matrices import game_from_matrices, ranking_game
from oltr.theory.observability import (
    analyze_game,
    global_observability,
    local_observability,
    span_residual,
)

LOG3 = math.log2(3)


def test_span_residual_hand() -> None:
    rows = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    res = span_residual(np.array([[2.0, 2.0, 5.0], [1.0, -1.0, 0.0], [1.0, 0.0, 0.0]]), rows)
    np.testing.assert_allclose(res, [0.0, math.sqrt(2), math.sqrt(0.5)], atol=1e-12)


def test_hand_games() -> None:
    pennies = [[0, 1], [1, 0]]
    blind = game_from_matrices(pennies, [[0, 0], [0, 0]])  # one symbol: sees nothing
    full = game_from_matrices(pennies, [[0, 1], [0, 1]])  # sees the outcome
    res = global_observability(blind)
    assert not res.holds
    # ℓ_1 − ℓ_2 = (−1, 1) is orthogonal to the all-ones signal row: residual √2.
    assert res.witness.actions == (0, 1)
    assert res.witness.residual == pytest.approx(math.sqrt(2))
    assert global_observability(full).holds
    assert not local_observability(blind).holds and local_observability(full).holds


@pytest.mark.parametrize(
    ("measure", "m", "grades"),
    [
        ("sumloss", 3, 1),
        ("sumloss", 4, 1),
        ("pairwise", 3, 1),
        ("dcg", 3, 1),
        ("dcg", 3, 2),
        ("dcg", 4, 1),
        ("precision@2", 3, 1),
        ("precision@2", 4, 1),
        ("precision@3", 4, 1),
    ],
)
def test_theorem1_global_observability_holds(measure: str, m: int, grades: int) -> None:
    g = ranking_game(measure, m, max_grade=grades)
    for pairs in ("all", "pareto"):
        res = global_observability(g, pairs=pairs)  # type: ignore[arg-type]
        assert res.holds and res.witness is None
        assert max(c.residual for c in res.checks) < 1e-10


def _swap_position(game, i: int, j: int) -> int:
    """The first position at which two orders that differ by an adjacent swap differ."""
    return int(np.flatnonzero(game.actions[i] != game.actions[j])[0])


@pytest.mark.parametrize(
    ("measure", "m", "grades"),
    [
        ("sumloss", 3, 1),
        ("sumloss", 4, 1),
        ("dcg", 3, 1),
        ("dcg", 3, 2),
        ("dcg", 4, 1),
    ],
)
def test_theorem4_local_observability_fails(measure: str, m: int, grades: int) -> None:
    # ℓ_i − ℓ_j of a swap at positions (k, k+1) is c·(g(r_a) − g(r_b)) (§12.3). N⁺ = {i, j}
    # shows the top item only, so the pair is observable iff the swap is at the top (k = 1).
    g = ranking_game(measure, m, max_grade=grades)
    res = local_observability(g)
    assert not res.holds
    assert len(res.checks) == (m - 1) * math.factorial(m) // 2
    for c in res.checks:
        assert c.observable == (_swap_position(g, *c.actions) == 0)
        assert c.observers == tuple(sorted(c.actions))


def test_theorem4_witness_residuals_by_hand() -> None:
    # §12.3: ℓ1 − ℓ2 = [0 1 −1 0 0 1 −1 0] is orthogonal to both signal rows: residual 2.
    res = local_observability(ranking_game("sumloss", 3))
    check = {c.labels: c for c in res.checks}[("123", "132")]
    assert not check.observable and check.residual == pytest.approx(2.0)
    assert res.witness.residual == pytest.approx(2.0)
    # §14.1.1 (DCG): the same pattern with entries ±(1/log2 3 − 1/2).
    res = local_observability(ranking_game("dcg", 3))
    check = {c.labels: c for c in res.checks}[("123", "132")]
    assert check.residual == pytest.approx(2 * (1 / LOG3 - 1 / 2))


@pytest.mark.parametrize(("measure", "m"), [("ndcg", 3), ("map", 3), ("auc", 4)])
def test_lemma11_global_observability_fails(measure: str, m: int) -> None:
    g = ranking_game(measure, m)
    for pairs in ("all", "pareto"):
        res = global_observability(g, pairs=pairs)  # type: ignore[arg-type]
        assert not res.holds
        assert res.witness.residual > 0.1
    # The pair the paper uses: σ1 and the reversed order σ_{m!}.
    last = g.n_actions - 1
    paper = {c.actions: c for c in global_observability(g).checks}[(0, last)]
    assert not paper.observable


def test_lemma11_paper_differences_outside_the_span() -> None:
    # The printed NDCG and MAP differences ℓσ1 − ℓσ6 (m = 3) against the printed S matrices.
    signals = ranking_game("sumloss", 3).signal_matrices().reshape(-1, 8).astype(float)
    c = LOG3 / (2 * (1 + LOG3))
    ndcg = [0, -1 / 2, 0, -c, 1 / 2, 0, c, 0]
    ap = [0, -2 / 3, 0, -5 / 12, 2 / 3, 0, 5 / 12, 0]
    assert span_residual(np.array([ndcg, ap]), signals).min() > 0.1


def test_lemma11_auc_holds_at_m3() -> None:
    # §15: N(r) = 2 for every mixed r when m = 3, so AUC = PairwiseLoss/2 up to constants.
    res = global_observability(ranking_game("auc", 3))
    assert res.holds


@pytest.mark.parametrize(("m", "k"), [(3, 2), (3, 3), (4, 2), (4, 3)])
def test_precision_local_observability_holds(m: int, k: int) -> None:
    # Neighbouring top-k sets A, A' = A − {a} + {b} differ by ℓ = r_a − r_b (up to 1/k), and
    # N⁺ contains orders with a on top (from A) and with b on top (from A').
    g = ranking_game(f"precision@{k}", m)
    cs = cell_structure(g)
    res = local_observability(g, cells=cs)
    assert res.holds
    assert len(res.checks) == len(cs.neighbours)
    for c in res.checks:
        tops = {int(g.actions[o][0]) for o in c.observers}
        a_set, b_set = (set(g.actions[x][:k].tolist()) for x in c.actions)
        assert (a_set ^ b_set) <= tops


def test_precision_without_duplicates_in_hood_would_fail() -> None:
    # With N⁺ cut down to the class representatives only, Prec@2 (m = 4) is not locally
    # observable: the duplicates in N⁺ are what makes the difference.
    g = ranking_game("precision@2", 4)
    cs = cell_structure(g)
    signals = g.signal_matrices().astype(float)
    worst = 0.0
    for a, b in cs.neighbours:
        i, j = cs.classes[a][0], cs.classes[b][0]
        rows = signals[[i, j]].reshape(-1, g.n_outcomes)
        worst = max(worst, float(span_residual(g.loss[i] - g.loss[j], rows)[0]))
    assert worst > 0.1


def test_analyze_game_report() -> None:
    rep = analyze_game(ranking_game("precision@2", 3))
    assert rep["n_classes"] == 3 and rep["n_pareto"] == 6
    assert sorted(map(sorted, rep["duplicate_classes"])) == [
        ["123", "213"],
        ["132", "231"],
        ["312", "321"],
    ]
    assert rep["global"]["holds"] and rep["local"]["holds"]
    assert len(rep["neighbours"]) == 3
    assert all(len(nb["neighbourhood"]) == 4 for nb in rep["neighbours"])


def test_global_observability_rejects_bad_pairs() -> None:
    with pytest.raises(ValueError, match="pairs"):
        global_observability(ranking_game("sumloss", 2), pairs="some")  # type: ignore[arg-type]
