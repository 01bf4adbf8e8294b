"""Cells, Pareto optimality and neighbours from Definitions 1 and 4, checked against Lemmas 2–3."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from oltr.theory.cells import action_classes, cell_structure
from oltr.theory.faces import polytope_face
from oltr.theory.matrices import RankingGame, ranking_game


def test_polytope_face_hand_examples() -> None:
    simplex_eq = (np.ones((1, 3)), [1.0])
    nonneg = -np.eye(3)
    tri = polytope_face(nonneg, np.zeros(3), *simplex_eq)
    assert tri.dim == 2 and not tri.implicit.any()
    assert np.all(tri.point > 0) and tri.point.sum() == pytest.approx(1)
    # x1 = x2 = x3 forced by two opposite inequalities: a single point.
    G = np.vstack([nonneg, [[1, -1, 0], [-1, 1, 0], [0, 1, -1], [0, -1, 1]]])
    pt = polytope_face(G, np.zeros(7), *simplex_eq)
    assert pt.dim == 0
    np.testing.assert_allclose(pt.point, [1 / 3] * 3, atol=1e-8)
    assert pt.implicit.tolist() == [False] * 3 + [True] * 4
    # x1 <= -1 on the simplex: empty.
    empty = polytope_face(np.vstack([nonneg, [[1, 0, 0]]]), [0, 0, 0, -1.0], *simplex_eq)
    assert empty.dim == -1 and empty.point is None


def test_polytope_face_rejects_zero_rows() -> None:
    with pytest.raises(ValueError, match="non-zero"):
        polytope_face(np.zeros((1, 2)), [0.0], np.ones((1, 2)), [1.0])


# A hand-made game on 3 outcomes: rows 0 and 3 duplicates, row 4 dominated (empty cell),
# row 5 the average of rows 0 and 1 (optimal only on C_0 ∩ C_1: a degenerate action).
HAND = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0], [0, 1, 1], [2, 2, 2], [0.5, 0.5, 1]])


@pytest.mark.parametrize("method", ["facets", "faces"])
def test_hand_game_cells_and_neighbours(method: str) -> None:
    cs = cell_structure(HAND, method=method)
    assert cs.classes == ((0, 3), (1,), (2,), (4,), (5,))
    # Simplex of 3 outcomes has dimension 2; the degenerate cell is a segment.
    assert cs.cell_dim.tolist() == [2, 2, 2, -1, 1]
    assert cs.pareto.tolist() == [True, True, True, False, False]
    assert cs.pareto_actions == (0, 1, 2, 3)
    assert cs.neighbours == ((0, 1), (0, 2), (1, 2))
    # N⁺ holds duplicates and the degenerate action whose cell is C_0 ∩ C_1.
    assert cs.neighbourhood[(0, 1)] == (0, 1, 3, 5)
    assert cs.neighbourhood[(0, 2)] == (0, 2, 3)
    assert cs.neighbour_action_pairs() == ((0, 1), (0, 2), (1, 2), (1, 3), (2, 3))
    assert cs.class_of.tolist() == [0, 1, 2, 0, 3, 4]


def test_action_classes_exact_and_tolerance() -> None:
    assert action_classes(np.array([[0.0, 1.0], [1e-12, 1.0], [0.0, 2.0]])) == ((0, 1), (2,))
    g = ranking_game("precision@2", 3)
    # Orders sharing the top-2 set are duplicates: {123, 213}, {132, 231}, {312, 321}.
    labels = [{g.action_labels[a] for a in c} for c in action_classes(g)]
    assert labels == [{"123", "213"}, {"132", "231"}, {"312", "321"}]


def _adjacent_swaps(game: RankingGame) -> set[tuple[int, int]]:
    """Lemma 3: pairs of orders that differ by swapping two consecutive positions."""
    index = {tuple(o): i for i, o in enumerate(game.actions.tolist())}
    pairs = set()
    for o, i in index.items():
        for pos in range(len(o) - 1):
            s = list(o)
            s[pos], s[pos + 1] = s[pos + 1], s[pos]
            pairs.add(tuple(sorted((i, index[tuple(s)]))))
    return pairs


@pytest.mark.parametrize(
    ("measure", "m", "grades"),
    [
        ("sumloss", 3, 1),
        ("sumloss", 4, 1),
        ("dcg", 3, 1),
        ("dcg", 3, 2),
        ("dcg", 4, 1),
        ("pairwise", 3, 1),
    ],
)
def test_lemmas_2_and_3(measure: str, m: int, grades: int) -> None:
    g = ranking_game(measure, m, max_grade=grades)
    cs = cell_structure(g)
    # Lemma 2 (and §14.1.1 for DCG): every action is Pareto-optimal, no duplicates.
    assert len(cs.classes) == g.n_actions
    assert cs.pareto.all() and np.all(cs.cell_dim == g.n_outcomes - 1)
    # Lemma 3 (and its converse, from the proof in §12.2): neighbours are adjacent swaps,
    # and N⁺ is the pair itself (§12.3).
    assert set(cs.neighbour_action_pairs()) == _adjacent_swaps(g)
    assert len(cs.neighbours) == (m - 1) * len(g.action_labels) // 2
    for (a, b), hood in cs.neighbourhood.items():
        assert hood == tuple(sorted((cs.classes[a][0], cs.classes[b][0])))


def _top_set_pairs(m: int, k: int) -> set[frozenset[frozenset[int]]]:
    """Top-k sets that differ by exchanging one item."""
    sets = [frozenset(c) for c in itertools.combinations(range(m), k)]
    return {frozenset((s, t)) for s, t in itertools.combinations(sets, 2) if len(s & t) == k - 1}


@pytest.mark.parametrize(("m", "k"), [(3, 2), (4, 2), (4, 3)])
def test_precision_neighbours_are_one_item_exchanges(m: int, k: int) -> None:
    # Prec@k depends only on the top-k set; its cell is {E r_a >= E r_b, a in A, b not in A}.
    # Two sets are neighbours iff they differ by one exchanged item, and N⁺ is their union.
    g = ranking_game(f"precision@{k}", m)
    cs = cell_structure(g)
    top = [frozenset(o[:k]) for o in g.actions.tolist()]
    assert len(cs.classes) == len(set(top))
    assert all(len({top[a] for a in c}) == 1 for c in cs.classes)
    found = {frozenset((top[cs.classes[a][0]], top[cs.classes[b][0]])) for a, b in cs.neighbours}
    assert found == _top_set_pairs(m, k)
    for (a, b), hood in cs.neighbourhood.items():
        assert set(hood) == set(cs.classes[a]) | set(cs.classes[b])


def test_precision_at_m_has_one_class() -> None:
    cs = cell_structure(ranking_game("precision@3", 3))
    assert len(cs.classes) == 1 and cs.pareto.all() and cs.neighbours == ()


def _relatively_open_in_hyperplane(loss: np.ndarray, a: int, b: int, classes: list) -> float:
    """Independent check: max t with ℓ_a·p = ℓ_b·p, p_j >= t, (ℓ_c − ℓ_a)·p >= t otherwise."""
    n = loss.shape[1]
    rows = [-(loss[c] - loss[a]) for c in classes if c not in (a, b)] + list(-np.eye(n))
    a_ub = np.hstack([np.array(rows), np.ones((len(rows), 1))])
    a_eq = np.vstack([np.append(np.ones(n), 0), np.append(loss[a] - loss[b], 0)])
    res = linprog(
        np.append(np.zeros(n), -1),
        A_ub=a_ub,
        b_ub=np.zeros(len(rows)),
        A_eq=a_eq,
        b_eq=[1, 0],
        bounds=[(None, None)] * n + [(None, 1)],
        method="highs",
    )
    return float(res.x[-1]) if res.status == 0 else -np.inf


@pytest.mark.parametrize("measure", ["ap", "ndcg", "auc"])
def test_neighbours_cross_checked_by_strict_points(measure: str) -> None:
    # Where N⁺ is only the pair, C_a ∩ C_b is (N − 2)-dimensional iff a point of the
    # hyperplane ℓ_a·p = ℓ_b·p satisfies every other constraint strictly.
    g = ranking_game(measure, 3)
    cs = cell_structure(g)
    reps = [c[0] for c in cs.classes]
    for a, b in itertools.combinations(reps, 2):
        t = _relatively_open_in_hyperplane(g.loss, a, b, reps)
        pair = (reps.index(a), reps.index(b))
        if pair in cs.neighbours and len(cs.neighbourhood[pair]) == 2:
            assert t > 1e-6
        elif pair not in cs.neighbours:
            assert t < 1e-6


@pytest.mark.parametrize(
    ("measure", "m"),
    [
        ("sumloss", 3),
        ("ndcg", 3),
        ("ap", 3),
        ("auc", 3),
        ("precision@2", 3),
        ("precision@2", 4),
        ("precision@3", 4),
        ("ap", 4),
    ],
)
def test_facet_and_face_methods_agree(measure: str, m: int) -> None:
    g = ranking_game(measure, m)
    fast, direct = cell_structure(g), cell_structure(g, method="faces")
    assert fast.neighbours == direct.neighbours
    assert fast.neighbourhood == direct.neighbourhood
    assert np.array_equal(fast.cell_dim, direct.cell_dim)


def test_cell_structure_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="finite"):
        cell_structure(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="method"):
        cell_structure(HAND, method="vertices")  # type: ignore[arg-type]
