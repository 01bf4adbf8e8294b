"""Loss, feedback and signal matrices against the tables and rows printed in CT15."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest

from oltr.permutations import all_orders
from oltr.theory.matrices import (
    enumerate_actions,
    enumerate_outcomes,
    game_from_matrices,
    ranking_game,
)
from oltr.theory.signals import signal_matrices

# CT15 Table 1 (SumLoss, m = 3), typed from the paper: rows σ1..σ6, columns r1..r8.
TABLE1_ROWS = ("123", "132", "213", "231", "312", "321")
TABLE1_COLS = ("000", "001", "010", "011", "100", "101", "110", "111")
TABLE1 = [
    [0, 3, 2, 5, 1, 4, 3, 6],
    [0, 2, 3, 5, 1, 3, 4, 6],
    [0, 3, 1, 4, 2, 5, 3, 6],
    [0, 1, 3, 4, 2, 3, 5, 6],
    [0, 2, 1, 3, 3, 5, 4, 6],
    [0, 1, 2, 3, 3, 4, 5, 6],
]
# CT15 Table 2 (feedback matrix H, m = 3).
TABLE2 = [
    [0, 0, 0, 0, 1, 1, 1, 1],
    [0, 0, 0, 0, 1, 1, 1, 1],
    [0, 0, 1, 1, 0, 0, 1, 1],
    [0, 1, 0, 1, 0, 1, 0, 1],
    [0, 0, 1, 1, 0, 0, 1, 1],
    [0, 1, 0, 1, 0, 1, 0, 1],
]
# Signal matrices printed in CT15 §12.3 (eq. 8) and §15 for m = 3.
S_TOP1 = [[1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1, 1]]
S_TOP2 = [[1, 1, 0, 0, 1, 1, 0, 0], [0, 0, 1, 1, 0, 0, 1, 1]]
S_TOP3 = [[1, 0, 1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1, 0, 1]]
LOG3 = math.log2(3)


def test_table1_sumloss_exact() -> None:
    g = ranking_game("sumloss", 3)
    assert g.action_labels == TABLE1_ROWS
    assert g.outcome_labels == TABLE1_COLS
    assert g.kind == "loss"
    exact = g.exact_values()
    assert exact is not None
    assert [[F(x) for x in row] for row in TABLE1] == exact.tolist()


def test_table2_feedback_exact() -> None:
    g = ranking_game("sumloss", 3)
    assert g.feedback.tolist() == TABLE2
    assert g.n_symbols == 2


def test_worked_entries_of_section5() -> None:
    # CT15 §5: L_{3,4} = σ3·r4 = 4 and H_{3,4} = r4(σ3^{-1}(1)) = r4(2) = 1.
    g = ranking_game("sumloss", 3)
    assert g.values[2, 3] == 4
    assert g.feedback[2, 3] == 1
    # σ5 = 312: item 1 at position 3, item 2 at 1, item 3 at 2.
    assert g.actions[4].tolist() == [1, 2, 0]


def test_signal_matrices_as_printed() -> None:
    s = ranking_game("sumloss", 3).signal_matrices()
    assert s.shape == (6, 2, 8)
    for i in (0, 1):
        assert s[i].tolist() == S_TOP1
    for i in (2, 4):
        assert s[i].tolist() == S_TOP2
    for i in (3, 5):
        assert s[i].tolist() == S_TOP3
    # Definition 2: row 2 of S_i is row i of H, row 1 its complement.
    assert np.array_equal(s[:, 1], np.array(TABLE2))
    assert np.array_equal(s[:, 0], 1 - np.array(TABLE2))


def test_row_order_orders_permutes_table1() -> None:
    g = ranking_game("sumloss", 3, row_order="orders")
    assert np.array_equal(g.actions, all_orders(3))
    table = dict(zip(TABLE1_ROWS, TABLE1, strict=True))
    for label, row in zip(g.action_labels, g.values.tolist(), strict=True):
        assert row == table[label]


# CT15 §15, m = 4: the column listing r1..r16 and the AUC rows of σ1 = 1234, σ24 = 4321.
WEIGHT_COLS = (
    "0000",
    "0001",
    "0010",
    "0100",
    "1000",
    "0011",
    "0101",
    "1001",
    "0110",
    "1010",
    "1100",
    "0111",
    "1011",
    "1101",
    "1110",
    "1111",
)
AUC_S1 = [
    0,
    1,
    F(2, 3),
    F(1, 3),
    0,
    1,
    F(3, 4),
    F(1, 2),
    F(1, 2),
    F(1, 4),
    0,
    1,
    F(2, 3),
    F(1, 3),
    0,
    0,
]
AUC_S24 = [
    0,
    0,
    F(1, 3),
    F(2, 3),
    1,
    0,
    F(1, 4),
    F(1, 2),
    F(1, 2),
    F(3, 4),
    1,
    0,
    F(1, 3),
    F(2, 3),
    1,
    0,
]
AUC_DIFF = [
    0,
    1,
    F(1, 3),
    F(-1, 3),
    -1,
    1,
    F(1, 2),
    0,
    0,
    F(-1, 2),
    -1,
    1,
    F(1, 3),
    F(-1, 3),
    -1,
    0,
]
# The §15 signal matrices S_1..S_4 of m = 4 (indexed by the item on top), weight order.
S4_BY_TOP_ITEM = [
    ["1111011010010000", "0000100101101111"],
    ["1110110101001000", "0001001010110111"],
    ["1101101100100100", "0010010011011011"],
    ["1011100011100010", "0100011100011101"],
]


def test_auc_m4_rows_of_section15() -> None:
    g = ranking_game("auc", 4, col_order="weight")
    assert g.outcome_labels == WEIGHT_COLS
    assert g.action_labels[0] == "1234" and g.action_labels[23] == "4321"
    exact = g.exact_values()
    assert exact is not None
    assert exact[0].tolist() == AUC_S1
    assert exact[23].tolist() == AUC_S24
    assert (exact[0] - exact[23]).tolist() == AUC_DIFF


def test_m4_signal_matrices_of_section15() -> None:
    g = ranking_game("auc", 4, col_order="weight")
    s = g.signal_matrices()
    for a, order in enumerate(g.actions):
        assert ["".join(map(str, row)) for row in s[a]] == S4_BY_TOP_ITEM[order[0]]


def test_map_m3_rows_of_section15() -> None:
    exact = ranking_game("map", 3).exact_values()
    assert exact is not None
    assert exact[0].tolist() == [1, F(1, 3), F(1, 2), F(7, 12), 1, F(5, 6), 1, 1]
    assert exact[5].tolist() == [1, 1, F(1, 2), 1, F(1, 3), F(5, 6), F(7, 12), 1]
    assert (exact[0] - exact[5]).tolist() == [0, F(-2, 3), 0, F(-5, 12), F(2, 3), 0, F(5, 12), 0]


def test_ndcg_m3_rows_of_section15() -> None:
    g = ranking_game("ndcg", 3)
    assert g.kind == "gain" and g.exact_values() is None
    s1 = [1, 1 / 2, 1 / LOG3, (1 + LOG3 / 2) / (1 + LOG3), 1, 3 / (2 * (1 + 1 / LOG3)), 1, 1]
    s6 = [1, 1, 1 / LOG3, 1, 1 / 2, 3 / (2 * (1 + 1 / LOG3)), (1 + LOG3 / 2) / (1 + LOG3), 1]
    diff = [0, -1 / 2, 0, -LOG3 / (2 * (1 + LOG3)), 1 / 2, 0, LOG3 / (2 * (1 + LOG3)), 0]
    np.testing.assert_allclose(g.values[0], s1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.values[5], s6, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.values[0] - g.values[5], diff, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.loss, -g.values)


def test_dcg_m3_rows_of_section14() -> None:
    g = ranking_game("dcg", 3)
    s1 = [0, 1 / 2, 1 / LOG3, 1 / 2 + 1 / LOG3, 1, 3 / 2, 1 + 1 / LOG3, 3 / 2 + 1 / LOG3]
    s2 = [0, 1 / LOG3, 1 / 2, 1 / 2 + 1 / LOG3, 1, 1 + 1 / LOG3, 3 / 2, 3 / 2 + 1 / LOG3]
    np.testing.assert_allclose(g.values[0], s1, rtol=0, atol=1e-12)
    np.testing.assert_allclose(g.values[1], s2, rtol=0, atol=1e-12)


def test_graded_dcg_and_signal_rows() -> None:
    # §14.1: grades 0..n, DCG = Σ (2^r − 1)/log2(1 + σ(i)), S_i has n + 1 rows.
    g = ranking_game("dcg", 3, max_grade=2)
    assert g.n_outcomes == 27 and g.n_symbols == 3
    j = g.outcome_labels.index("201")
    i = g.action_labels.index("231")  # item 1 at 2, item 2 at 3, item 3 at 1
    assert g.values[i, j] == pytest.approx(3 / LOG3 + 1, abs=1e-12)
    assert g.feedback[i, j] == 1  # item 3 is on top, grade 1
    s = g.signal_matrices()
    assert s.shape == (6, 3, 27)
    assert np.all(s.sum(axis=1) == 1)


def test_top2_feedback_codes() -> None:
    g = ranking_game("sumloss", 3, k=2)
    assert g.n_symbols == 4
    i, j = g.action_labels.index("132"), g.outcome_labels.index("011")
    # σ = 132 shows items 1 then 3: relevances 0, 1.
    assert g.symbol_label(g.feedback[i, j]) == "01"
    i = g.action_labels.index("312")  # items 2, 3 on top
    assert g.symbol_label(g.feedback[i, j]) == "11"


def test_precision_is_exact_and_duplicated() -> None:
    g = ranking_game("precision@2", 3)
    exact = g.exact_values()
    assert exact is not None
    # Prec@2 divides by k = 2; σ1 = 123 keeps items 1, 2 on top.
    assert exact[0].tolist() == [0, 0, F(1, 2), F(1, 2), F(1, 2), F(1, 2), 1, 1]
    assert exact[0].tolist() == exact[2].tolist()  # 213 has the same top-2 set


def test_enumerate_orders_and_outcomes() -> None:
    assert [tuple(r) for r in enumerate_actions(3)] == [
        (0, 1, 2),
        (0, 2, 1),
        (1, 0, 2),
        (2, 0, 1),
        (1, 2, 0),
        (2, 1, 0),
    ]
    lex = enumerate_outcomes(3, 2)
    assert [tuple(r) for r in lex] == list(itertools.product(range(3), repeat=3))
    weight = enumerate_outcomes(3, 2, col_order="weight")
    assert sorted(map(tuple, weight)) == sorted(map(tuple, lex))
    assert np.all(np.diff(weight.sum(axis=1)) >= 0)


def test_explicit_outcomes_subgame() -> None:
    cols = np.array([[1, 0, 0], [0, 1, 1]])
    g = ranking_game("sumloss", 3, col_order=cols)
    assert g.outcome_labels == ("100", "011")
    assert g.values[:, 0].tolist() == [1, 1, 2, 2, 3, 3]


def test_signal_matrices_function() -> None:
    s = signal_matrices([[2, 0], [1, 1]], n_symbols=3)
    assert s.tolist() == [[[0, 1], [0, 0], [1, 0]], [[0, 0], [1, 1], [0, 0]]]


def test_game_from_matrices_labels_and_kind() -> None:
    g = game_from_matrices(
        [[1, 2], [3, 4]], [[0, 1], [1, 0]], kind="gain", action_labels=["a", "b"]
    )
    assert g.action_labels == ("a", "b") and g.outcome_labels == ("1", "2")
    assert g.loss.tolist() == [[-1, -2], [-3, -4]]
    assert g.exact_values() is None


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"measure": "sumloss", "n_items": 0}, ValueError, "n_items"),
        ({"measure": "sumloss", "n_items": 9}, ValueError, "n_items"),
        ({"measure": "sumloss", "n_items": True}, TypeError, "n_items"),
        ({"measure": "sumloss", "n_items": 3, "k": 4}, ValueError, "k must be"),
        ({"measure": "sumloss", "n_items": 3, "max_grade": 0}, ValueError, "max_grade"),
        ({"measure": "nope", "n_items": 3}, ValueError, "unknown measure"),
        ({"measure": "sumloss", "n_items": 3, "row_order": "x"}, ValueError, "row_order"),
        ({"measure": "sumloss", "n_items": 3, "col_order": "x"}, ValueError, "col_order"),
        ({"measure": "sumloss", "n_items": 2, "col_order": [[0, 1], [0, 1]]}, ValueError, "repeat"),
        ({"measure": "sumloss", "n_items": 2, "col_order": [[0, 2]]}, ValueError, "grades"),
        ({"measure": "sumloss", "n_items": 2, "col_order": [[0, 1, 1]]}, ValueError, "shape"),
        ({"measure": 42, "n_items": 2}, TypeError, "measure"),
    ],
)
def test_ranking_game_rejects_bad_input(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ranking_game(**kwargs)


@pytest.mark.parametrize(
    ("values", "feedback", "match"),
    [
        ([[0, 1]], [[0, 1], [1, 0]], "shape"),
        ([[np.nan, 1]], [[0, 1]], "finite"),
        ([[0, 1]], [[-1, 0]], ">= 0"),
        ([], [], "non-empty"),
    ],
)
def test_game_from_matrices_rejects_bad_input(values: list, feedback: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        game_from_matrices(values, feedback)


def test_signal_matrices_rejects_float_symbols() -> None:
    with pytest.raises(TypeError, match="integer"):
        signal_matrices(np.array([[0.5, 1.0]]))
