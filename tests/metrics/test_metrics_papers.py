"""Ranking measures: hand-computed values, the papers' printed values, and identities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oltr.metrics import (
    auc,
    average_precision,
    dcg,
    err,
    get_measure,
    linear_gain,
    ndcg,
    pairwise_loss,
    precision,
    sum_loss,
)

L3 = math.log2(3)


def order_of_ranks(ranks: str) -> list[int]:
    """CT15 writes σ as the 1-based rank of objects 1..m ("312": object 1 at rank 3, ...)."""
    r = [int(c) - 1 for c in ranks]
    return sorted(range(len(r)), key=lambda i: r[i])


def bits(vector: str) -> list[int]:
    return [int(c) for c in vector]


def ranks_of(order):
    return {item: p + 1 for p, item in enumerate(order)}


# ---------------------------------------------------------------------------
# hand-computed values

R4, O4 = [3, 2, 0, 1], [1, 3, 0, 2]  # grades in position order: 2, 1, 3, 0


def test_hand_values_graded_list():
    assert dcg(R4, O4) == pytest.approx(3 / 1 + 1 / L3 + 7 / 2 + 0 / math.log2(5))
    assert dcg(R4, O4, k=2) == pytest.approx(3 + 1 / L3)
    assert dcg(R4, O4, gain=linear_gain) == pytest.approx(2 + 1 / L3 + 3 / 2)
    assert ndcg(R4, O4) == pytest.approx((3 + 1 / L3 + 7 / 2) / (7 + 3 / L3 + 1 / 2))
    assert ndcg(R4, O4, k=2) == pytest.approx((3 + 1 / L3) / (7 + 3 / L3))
    assert ndcg(R4, O4, k=1) == pytest.approx(3 / 7)
    assert precision(R4, O4, k=2) == 2 / 2
    assert precision(R4, O4, k=4) == 3 / 4
    assert precision(R4, O4, k=6) == 3 / 6  # divisor k even past the list's end
    assert precision(R4, O4, k=4, normalize=False) == 3
    assert average_precision(R4, O4) == pytest.approx((1 / 1 + 2 / 2 + 3 / 3) / 3)
    assert sum_loss(R4, O4) == 1 * 2 + 2 * 1 + 3 * 3 + 4 * 0
    assert pairwise_loss(R4, O4) == 2  # (grade 2 above 3) and (grade 1 above 3)
    assert auc(R4, O4) == pytest.approx(2 / 6)  # 4 distinct grades: 6 pairs
    assert err(R4, O4) == pytest.approx(
        3 / 8 + (1 / 2) * (5 / 8) * (1 / 8) + (1 / 3) * (5 / 8) * (7 / 8) * (7 / 8)
    )
    assert err(R4, O4, max_grade=4) == pytest.approx(
        3 / 16 + (1 / 2) * (13 / 16) * (1 / 16) + (1 / 3) * (13 / 16) * (15 / 16) * (7 / 16)
    )
    assert err(R4, O4, k=1) == pytest.approx(3 / 8)


def test_hand_values_binary_ap_and_auc():
    r, order = [0, 1, 0, 2, 1], [0, 1, 2, 3, 4]  # relevant at positions 2, 4, 5
    assert average_precision(r, order) == pytest.approx((1 / 2 + 2 / 4 + 3 / 5) / 3)
    # pairs with different grades: 0<1 (2·2), 0<2 (2·1), 1<2 (2·1) = 8; misordered:
    # item0 above 1,3,4; item2 above 3,4; item1 above 3; item4 below everything above it
    assert pairwise_loss(r, order) == 3 + 2 + 1
    assert auc(r, order) == pytest.approx(6 / 8)


def test_ailon_measures_by_hand():
    # ℓ_linear: positions from 0, the chosen items at positions 1 and 2 -> 1 + 2.
    assert get_measure("position")([0, 1, 1], [0, 1, 2]) == 3.0
    # Spearman's ρ = Σ π(u) σ(u) with σ(u) = m − r(u): identity vs identity = 1 + 4 + 9.
    assert get_measure("spearman")([2, 1, 0], [0, 1, 2]) == 14.0
    assert get_measure("spearman")([2, 1, 0], [2, 1, 0]) == 10.0
    assert get_measure("spearman").kind == "gain" and get_measure("position@2").k == 2


# ---------------------------------------------------------------------------
# Chaudhuri & Tewari 2015: Table 1 and the §12, §14, §15 rows

SIGMAS3 = ["123", "132", "213", "231", "312", "321"]
R3 = ["000", "001", "010", "011", "100", "101", "110", "111"]
TABLE1 = [  # SumLoss, rows σ1..σ6, columns r1..r8, as printed
    [0, 3, 2, 5, 1, 4, 3, 6],
    [0, 2, 3, 5, 1, 3, 4, 6],
    [0, 3, 1, 4, 2, 5, 3, 6],
    [0, 1, 3, 4, 2, 3, 5, 6],
    [0, 2, 1, 3, 3, 5, 4, 6],
    [0, 1, 2, 3, 3, 4, 5, 6],
]


def test_table1_sumloss_m3_all_entries():
    orders = np.array([order_of_ranks(s) for s in SIGMAS3])
    rel = np.array([bits(v) for v in R3])
    got = sum_loss(rel[None, :, :], orders[:, None, :])  # (6, 8) by broadcasting
    np.testing.assert_array_equal(got, np.array(TABLE1, dtype=float))
    # and cell by cell, unbatched (L_{3,4} = 2·0 + 1·1 + 3·1 = 4 as worked in §5)
    for i, s in enumerate(SIGMAS3):
        for j, v in enumerate(R3):
            assert sum_loss(bits(v), order_of_ranks(s)) == TABLE1[i][j]
    assert sum_loss(bits("011"), order_of_ranks("213")) == 2 * 0 + 1 * 1 + 3 * 1


def test_ct15_sumloss_row_difference_and_dcg_rows():
    rel = np.array([bits(v) for v in R3])
    s1, s2 = order_of_ranks("123"), order_of_ranks("132")
    np.testing.assert_array_equal(sum_loss(rel, s1) - sum_loss(rel, s2), [0, 1, -1, 0, 0, 1, -1, 0])
    # §14.1.1, DCG with binary relevance
    l1 = [0, 1 / 2, 1 / L3, 1 / 2 + 1 / L3, 1, 3 / 2, 1 + 1 / L3, 3 / 2 + 1 / L3]
    l2 = [0, 1 / L3, 1 / 2, 1 / 2 + 1 / L3, 1, 1 + 1 / L3, 3 / 2, 3 / 2 + 1 / L3]
    np.testing.assert_allclose(dcg(rel, s1), l1, rtol=1e-12)
    np.testing.assert_allclose(dcg(rel, s2), l2, rtol=1e-12)


def test_ct15_s15_ndcg_rows():
    rel = np.array([bits(v) for v in R3])
    s1, s6 = order_of_ranks("123"), order_of_ranks("321")
    l1 = [1, 1 / 2, 1 / L3, (1 + L3 / 2) / (1 + L3), 1, 3 / (2 * (1 + 1 / L3)), 1, 1]
    l6 = [1, 1, math.log2(2) / L3, 1, 1 / 2, 3 / (2 * (1 + 1 / L3)), (1 + L3 / 2) / (1 + L3), 1]
    diff = [0, -1 / 2, 0, -L3 / (2 * (1 + L3)), 1 / 2, 0, L3 / (2 * (1 + L3)), 0]
    a, b = ndcg(rel, s1, no_relevant=1.0), ndcg(rel, s6, no_relevant=1.0)
    np.testing.assert_allclose(a, l1, rtol=1e-12)
    np.testing.assert_allclose(b, l6, rtol=1e-12)
    np.testing.assert_allclose(a - b, diff, atol=1e-12)


def test_ct15_s15_map_rows():
    rel = np.array([bits(v) for v in R3])
    s1, s6 = order_of_ranks("123"), order_of_ranks("321")
    a = average_precision(rel, s1, no_relevant=1.0)
    b = average_precision(rel, s6, no_relevant=1.0)
    np.testing.assert_allclose(a, [1, 1 / 3, 1 / 2, 7 / 12, 1, 5 / 6, 1, 1], rtol=1e-12)
    np.testing.assert_allclose(b, [1, 1, 1 / 2, 1, 1 / 3, 5 / 6, 7 / 12, 1], rtol=1e-12)
    np.testing.assert_allclose(a - b, [0, -2 / 3, 0, -5 / 12, 2 / 3, 0, 5 / 12, 0], atol=1e-12)


def test_ct15_s15_auc_rows_m4():
    cols = [
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
    ]
    rel = np.array([bits(v) for v in cols])
    s1, s24 = order_of_ranks("1234"), order_of_ranks("4321")
    l1 = [0, 1, 2 / 3, 1 / 3, 0, 1, 3 / 4, 1 / 2, 1 / 2, 1 / 4, 0, 1, 2 / 3, 1 / 3, 0, 0]
    l24 = [0, 0, 1 / 3, 2 / 3, 1, 0, 1 / 4, 1 / 2, 1 / 2, 3 / 4, 1, 0, 1 / 3, 2 / 3, 1, 0]
    diff = [0, 1, 1 / 3, -1 / 3, -1, 1, 1 / 2, 0, 0, -1 / 2, -1, 1, 1 / 3, -1 / 3, -1, 0]
    a, b = auc(rel, s1, no_relevant=0.0), auc(rel, s24, no_relevant=0.0)
    np.testing.assert_allclose(a, l1, atol=1e-12)
    np.testing.assert_allclose(b, l24, atol=1e-12)
    np.testing.assert_allclose(a - b, diff, atol=1e-12)
    # the normaliser N(r) = #rel · (m − #rel) of §3
    n = np.array([v.count("1") * (4 - v.count("1")) for v in cols])
    np.testing.assert_allclose(pairwise_loss(rel, s1)[n > 0] / n[n > 0], np.array(l1)[n > 0])


# ---------------------------------------------------------------------------
# identities


def test_eq2_sumloss_minus_pairwise_depends_only_on_r():
    rng = np.random.default_rng(20150101)
    m, n_r, n_orders = 7, 40, 30
    rel = (rng.random((n_r, 1, m)) < 0.5).astype(np.int64)
    orders = rng.permuted(np.tile(np.arange(m), (1, n_orders, 1)), axis=-1)
    diff = sum_loss(rel, orders) - pairwise_loss(rel, orders)  # (n_r, n_orders)
    size = rel[:, 0, :].sum(axis=-1)
    # counting, for each relevant item, the items above it: |r| + |r|(|r|-1)/2 + PL
    expected = np.broadcast_to((size * (size + 1) / 2)[:, None], diff.shape)
    np.testing.assert_array_equal(diff, expected)


def test_graded_sumloss_matches_grade_gap_weighted_misorderings():
    # eq. 2 is stated for binary r; with grades it holds for Σ 1(σ(i) < σ(j)) (R_j − R_i)⁺
    rng = np.random.default_rng(7)
    for _ in range(20):
        r = rng.integers(0, 5, size=6)
        values = set()
        for _ in range(15):
            order = list(rng.permutation(6))
            s = ranks_of(order)
            weighted = sum(max(r[j] - r[i], 0) for i in s for j in s if s[i] < s[j])
            values.add(round(float(sum_loss(r, order)) - weighted, 9))
        assert len(values) == 1
    # while the unweighted count of PairwiseLoss does not satisfy it: r = (0, 2)
    assert sum_loss([0, 2], [0, 1]) - pairwise_loss([0, 2], [0, 1]) == 4 - 1
    assert sum_loss([0, 2], [1, 0]) - pairwise_loss([0, 2], [1, 0]) == 2 - 0
