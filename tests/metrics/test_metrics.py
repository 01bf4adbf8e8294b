"""Ranking measures: hand-computed values, the papers' printed values, identities,
agreement with scikit-learn and a plain-Python reference, masks, and bad input."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from sklearn.metrics import dcg_score, ndcg_score

from oltr.metrics import (
    MEASURES,
    Measure,
    auc,
    average_precision,
    dcg,
    err,
    from_scores,
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


# ---------------------------------------------------------------------------
# plain-Python reference, written from the definitions (σ(i) = 1-based rank of item i)


def ranks_of(order):
    return {item: p + 1 for p, item in enumerate(order)}


def ref_dcg(r, order, k=None, gain=lambda g: 2.0**g - 1):
    k = len(order) if k is None else k
    return sum(gain(r[i]) / math.log2(1 + p + 1) for p, i in enumerate(order) if p < k)


def ref_ndcg(r, order, k=None, no_relevant=1.0):
    best = max(ref_dcg(r, sorted(range(len(r)), key=lambda i: -r[i]), k), 0.0)
    return no_relevant if best == 0 else ref_dcg(r, order, k) / best


def ref_precision(r, order, k):
    return sum(1 for p, i in enumerate(order) if p < k and r[i] > 0) / k


def ref_ap(r, order, no_relevant=1.0):
    hits, total = 0, 0.0
    for p, i in enumerate(order):
        if r[i] > 0:
            hits += 1
            total += hits / (p + 1)
    return no_relevant if hits == 0 else total / hits


def ref_pairwise(r, order):
    s = ranks_of(order)
    return sum(1 for i in s for j in s if s[i] < s[j] and r[i] < r[j])


def ref_auc(r, order, no_relevant=0.0):
    n = sum(1 for i in range(len(r)) for j in range(len(r)) if r[i] < r[j])
    return no_relevant if n == 0 else ref_pairwise(r, order) / n


def ref_sum_loss(r, order):
    s = ranks_of(order)
    return sum(s[i] * r[i] for i in s)


def ref_err(r, order, k=None, max_grade=None):
    g_max = max(r) if max_grade is None else max_grade
    k = len(order) if k is None else k
    out, reach = 0.0, 1.0
    for p, i in enumerate(order[:k]):
        stop = (2.0 ** r[i] - 1) / 2.0**g_max
        out += reach * stop / (p + 1)
        reach *= 1 - stop
    return out


REFERENCE = {
    "dcg": ref_dcg,
    "ndcg": ref_ndcg,
    "ap": ref_ap,
    "auc": ref_auc,
    "sumloss": ref_sum_loss,
    "pairwise": ref_pairwise,
    "err": lambda r, o: ref_err(r, o, None, 4),
    "precision": lambda r, o: ref_precision(r, o, 3),
}
FUNCS = {
    "dcg": dcg,
    "ndcg": ndcg,
    "ap": average_precision,
    "auc": auc,
    "sumloss": sum_loss,
    "pairwise": pairwise_loss,
    "precision": lambda r, o, **kw: precision(r, o, k=3, **kw),
    "err": lambda r, o, **kw: err(r, o, max_grade=4, **kw),  # one scale for batch and rows
}


def random_graded(rng, shape, top=4):
    """Grades 0..top with many ties and some all-zero rows."""
    r = rng.integers(0, top + 1, size=shape) * (rng.random(shape) < 0.6)
    return r


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


# ---------------------------------------------------------------------------
# agreement with scikit-learn and with the reference loop


@pytest.mark.parametrize("k", [None, 1, 5, 20])
def test_dcg_ndcg_match_sklearn_with_exp2_gain(k):
    rng = np.random.default_rng(11)
    rel = random_graded(rng, (25, 12))
    scores = rng.normal(size=(25, 12))  # continuous: no ties, so tie handling is moot
    y_true = 2.0**rel - 1  # sklearn's gain is the label itself
    ours_dcg = from_scores("dcg", rel, scores, k=k)
    ours_ndcg = from_scores("ndcg", rel, scores, k=k, no_relevant=0.0)  # sklearn: 0
    for b in range(25):
        assert ours_dcg[b] == pytest.approx(dcg_score(y_true[b : b + 1], scores[b : b + 1], k=k))
        assert ours_ndcg[b] == pytest.approx(ndcg_score(y_true[b : b + 1], scores[b : b + 1], k=k))
    assert ours_ndcg.mean() == pytest.approx(ndcg_score(y_true, scores, k=k))
    assert from_scores("dcg", rel[3], scores[3], k=k) == pytest.approx(ours_dcg[3])


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_measures_match_reference_loop_batched_and_unbatched(name):
    rng = np.random.default_rng(sorted(REFERENCE).index(name))
    rel = random_graded(rng, (30, 9))
    orders = rng.permuted(np.tile(np.arange(9), (30, 1)), axis=-1)
    batched = FUNCS[name](rel, orders)
    assert batched.shape == (30,) and batched.dtype == np.float64
    for b in range(30):
        expected = REFERENCE[name](list(rel[b]), list(orders[b]))
        assert batched[b] == pytest.approx(expected, abs=1e-12)
        single = FUNCS[name](rel[b], orders[b])
        assert isinstance(single, np.float64) and single == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 4, 9, 50])
def test_cutoff_measures_match_reference(k):
    rng = np.random.default_rng(k)
    rel = random_graded(rng, (20, 9))
    orders = rng.permuted(np.tile(np.arange(9), (20, 1)), axis=-1)
    for b in range(20):
        r, o = list(rel[b]), list(orders[b])
        assert dcg(rel[b], o, k=k) == pytest.approx(ref_dcg(r, o, k))
        assert ndcg(rel[b], o, k=k) == pytest.approx(ref_ndcg(r, o, k))
        assert precision(rel[b], o, k=k) == pytest.approx(ref_precision(r, o, k))
        assert err(rel[b], o, k=k, max_grade=4) == pytest.approx(ref_err(r, o, k, 4))


def test_one_relevance_against_many_orders_broadcasts():
    rng = np.random.default_rng(3)
    rel = np.array([2, 0, 1, 3, 0, 1])
    orders = rng.permuted(np.tile(np.arange(6), (5, 4, 1)), axis=-1)
    for name, f in FUNCS.items():
        got = f(rel, orders)
        assert got.shape == (5, 4), name
        for idx in np.ndindex(5, 4):
            assert got[idx] == pytest.approx(REFERENCE[name](list(rel), list(orders[idx]))), name


def test_float_grades_are_accepted():
    r = [0.5, 2.25, 0.0, 1.0]
    order = [3, 0, 1, 2]
    assert pairwise_loss(r, order) == ref_pairwise(r, order)
    assert ndcg(r, order) == pytest.approx(ref_ndcg(r, order))


# ---------------------------------------------------------------------------
# masks: padded batches equal per-list results


def padded_batch(rng, lengths, m_max, top=3):
    q = len(lengths)
    mask = np.arange(m_max) < np.array(lengths)[:, None]
    rel = np.where(mask, random_graded(rng, (q, m_max), top), np.nan)  # padding may hold NaN
    orders = rng.permuted(np.tile(np.arange(m_max), (q, 1)), axis=-1)  # padding anywhere
    return rel, orders, mask


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_masked_batch_equals_per_list(name):
    rng = np.random.default_rng(99)
    lengths = [1, 3, 8, 5, 2, 8, 6, 4]
    rel, orders, mask = padded_batch(rng, lengths, 8)
    got = FUNCS[name](rel, orders, mask=mask)
    assert got.shape == (len(lengths),)
    for q, n in enumerate(lengths):
        own = orders[q][mask[q][orders[q]]]  # the real items, in their order
        expected = FUNCS[name](rel[q, :n].astype(int), own)
        assert got[q] == pytest.approx(expected, abs=1e-12), (name, q)


def test_masked_err_uses_largest_real_grade_of_the_call():
    rel = np.array([[1, 0, 9], [0, 1, 2]])
    mask = np.array([[True, True, False], [True, True, True]])
    got = err(rel, [[0, 1, 2], [2, 1, 0]], mask=mask)
    assert got[0] == pytest.approx((2**1 - 1) / 2**2)  # padded 9 ignored; scale max is 2
    assert got[1] == pytest.approx(3 / 4 + (1 / 2) * (1 / 4) * (1 / 4))


def test_all_padded_list_gets_the_conventions():
    rel, order, mask = np.zeros((1, 3)), np.array([[2, 0, 1]]), np.zeros((1, 3), bool)
    assert ndcg(rel, order, mask=mask)[0] == 1.0
    assert average_precision(rel, order, mask=mask, no_relevant=0.25)[0] == 0.25
    assert auc(rel, order, mask=mask)[0] == 0.0
    for f in (dcg, sum_loss, pairwise_loss, err):
        assert f(rel, order, mask=mask)[0] == 0.0
    assert precision(rel, order, k=2, mask=mask)[0] == 0.0


# ---------------------------------------------------------------------------
# conventions, registry, scores


def test_no_relevant_conventions():
    zeros, order = [0, 0, 0, 0], [3, 1, 0, 2]
    assert ndcg(zeros, order) == 1.0 and average_precision(zeros, order) == 1.0
    assert auc(zeros, order) == 0.0 and auc([2, 2, 2, 2], order) == 0.0  # N(R) = 0
    assert ndcg(zeros, order, no_relevant=0.0) == 0.0
    assert np.isnan(average_precision(zeros, order, no_relevant=np.nan))
    assert auc(zeros, order, no_relevant=0.5) == 0.5
    batch = ndcg(np.array([[0, 0, 0, 0], [0, 1, 0, 0]]), [0, 1, 2, 3], no_relevant=np.nan)
    assert np.isnan(batch[0]) and batch[1] == pytest.approx(1 / L3)
    assert np.nanmean(batch) == pytest.approx(1 / L3)  # MAP/NDCG dropping such queries


def test_registry_kinds_and_grammar():
    kinds = {
        "dcg": "gain",
        "ndcg": "gain",
        "precision": "gain",
        "ap": "gain",
        "err": "gain",
        "auc": "loss",
        "sumloss": "loss",
        "pairwise": "loss",
        "position": "loss",
        "spearman": "gain",
    }
    assert {n: m.kind for n, m in MEASURES.items()} == kinds
    m = get_measure("ndcg@10")
    assert (m.name, m.k, m.kind, m.label, m.sign) == ("ndcg", 10, "gain", "ndcg@10", 1.0)
    assert get_measure(" NDCG @ 3 ").k == 3
    assert get_measure("map").name == "ap" and get_measure("P@5").name == "precision"
    assert get_measure("auc").sign == -1.0
    for measure in MEASURES.values():
        assert get_measure(measure.label) == measure
    rel, order = [0, 2, 1, 0, 1], [0, 1, 2, 3, 4]
    assert get_measure("ndcg@2")(rel, order) == ndcg(rel, order, k=2)
    assert get_measure("ndcg@2")(rel, order, k=4) == ndcg(rel, order, k=4)  # call overrides
    assert get_measure("precision@2")(rel, order) == 1 / 2
    assert get_measure("err")(rel, order, max_grade=3) == err(rel, order, max_grade=3)
    bound = Measure("ndcg", "gain", ndcg, k=1, takes_k=True, kwargs={"no_relevant": -1.0})
    assert bound([0, 0], [0, 1]) == -1.0 and bound([0, 1], [0, 1]) == 0.0
    with pytest.raises(TypeError):
        bound.kwargs["no_relevant"] = 2.0  # read-only


def test_from_scores_breaks_ties_by_lower_index():
    rel = [1, 0, 0, 1]
    assert from_scores("sumloss", rel, [0.0, 0.0, 0.0, 0.0]) == 1 + 4  # order 0, 1, 2, 3
    assert from_scores("sumloss", rel, [0.0, 5.0, 5.0, 0.0]) == 3 + 4  # order 1, 2, 0, 3
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 3, size=(10, 6)).astype(float)  # many ties
    rel = random_graded(rng, (10, 6))
    got = from_scores("pairwise", rel, scores)
    for b in range(10):
        order = sorted(range(6), key=lambda i: (-scores[b, i], i))
        assert got[b] == ref_pairwise(list(rel[b]), order)


def test_from_scores_with_padding():
    rel = np.array([[1, 0, 3], [2, 1, 0]])
    mask = np.array([[True, True, False], [True, True, True]])
    scores = np.array([[0.1, 0.9, np.nan], [0.3, 0.2, 0.9]])
    got = from_scores("ndcg", rel, scores, mask=mask)
    assert got[0] == pytest.approx(1 / L3)  # item 1 (grade 0) above item 0 (grade 1)
    assert got[1] == pytest.approx((3 / L3 + 1 / 2) / (3 + 1 / L3))


def test_validate_false_gives_the_same_values():
    rng = np.random.default_rng(8)
    rel, orders, mask = padded_batch(rng, [3, 5, 1, 5], 5)
    rel = np.nan_to_num(rel)
    for name, f in FUNCS.items():
        np.testing.assert_array_equal(
            f(rel, orders, mask=mask), f(rel, orders, mask=mask, validate=False), err_msg=name
        )


# ---------------------------------------------------------------------------
# bad input

OK_R, OK_O = np.array([1, 0, 2]), np.array([2, 0, 1])
BAD_INPUT = [
    (ndcg, ([1, np.nan, 0], OK_O), {}, ValueError, r"finite and >= 0 .* got nan at \(1,\)"),
    (dcg, ([1, -1, 0], OK_O), {}, ValueError, r"finite and >= 0 .* got -1 at \(1,\)"),
    (sum_loss, (["a", "b", "c"], OK_O), {}, TypeError, "relevance must be a real numeric"),
    (sum_loss, ([True, False, True], OK_O), {}, TypeError, "relevance"),
    (auc, (OK_R, [0, 0, 1]), {}, ValueError, "permutation"),
    (auc, (OK_R, [[0, 1, 2], [0, 2, 2]]), {}, ValueError, r"permutation.*\(1,\)"),
    (pairwise_loss, (OK_R, [0, 1, 3]), {}, ValueError, r"\[0, 2\]"),
    (pairwise_loss, (OK_R, [0.0, 1.0, 2.0]), {}, TypeError, "order must be an integer"),
    (dcg, (OK_R, [0, 1]), {}, ValueError, "order has 2 items"),
    (dcg, (np.zeros((2, 3)), np.tile(OK_O, (3, 1))), {}, ValueError, "broadcast"),
    (dcg, (np.zeros((0,)), np.zeros((0,), int)), {}, ValueError, "at least one item"),
    (dcg, (1.0, 0), {}, ValueError, "at least one axis"),
    (ndcg, (OK_R, OK_O), {"mask": [1, 1, 0]}, TypeError, "mask must be a boolean"),
    (ndcg, (OK_R, OK_O), {"mask": [True, False]}, ValueError, "mask must have shape"),
    (ndcg, (OK_R, OK_O), {"k": 0}, ValueError, "k must be >= 1, got 0"),
    (ndcg, (OK_R, OK_O), {"k": 1.5}, TypeError, "k must be an int"),
    (err, (OK_R, OK_O), {"k": True}, TypeError, "k must be an int"),
    (precision, (OK_R, OK_O), {"k": None}, TypeError, "k must be an int"),
    (err, (OK_R, OK_O), {"max_grade": 1}, ValueError, "max_grade must be"),
    (ndcg, (OK_R, OK_O), {"no_relevant": "one"}, TypeError, "no_relevant"),
    (get_measure, ("foo@3",), {}, ValueError, "unknown measure 'foo'.*ap, auc, dcg, err, ndcg"),
    (get_measure, ("auc@5",), {}, ValueError, "takes no cutoff"),
    (get_measure, ("ndcg@",), {}, ValueError, "cannot parse"),
    (get_measure, ("ndcg@0",), {}, ValueError, "k must be >= 1"),
    (get_measure, (3,), {}, TypeError, "a measure is a str"),
    (MEASURES["precision"], (OK_R, OK_O), {}, ValueError, "needs a cutoff"),
    (from_scores, ("ndcg", OK_R, [0.1, np.nan, 0.3]), {}, ValueError, "scores contain NaN"),
    (from_scores, ("ndcg", OK_R, ["a", "b", "c"]), {}, TypeError, "scores must be"),
    (Measure, ("x", "reward", ndcg), {}, ValueError, "kind must be"),
]


@pytest.mark.parametrize(
    ("func", "args", "kwargs", "error", "message"),
    BAD_INPUT,
    ids=[f"{i}-{row[4][:20]}" for i, row in enumerate(BAD_INPUT)],
)
def test_bad_input_is_rejected_with_a_clear_message(func, args, kwargs, error, message):
    with pytest.raises(error, match=message):
        func(*args, **kwargs)


BELOW_BOUND = float(np.nextafter(1024.0, 0.0))  # the largest float64 grade with a finite 2^g


def test_exp2_gain_bound_is_float64s_max_exponent():
    from oltr.errors import InputError
    from oltr.metrics.lists import EXP2_GRADE_BOUND, exp2_gain

    assert EXP2_GRADE_BOUND == 1024.0 and np.finfo(np.float64).max == (2 - 2.0**-52) * 2.0**1023
    # at the bound: the grade just below it has a finite gain (within 2^-40 of the largest
    # float64), the bound itself none
    gain = exp2_gain(np.array([BELOW_BOUND]))[0]
    assert np.isfinite(gain) and gain > np.finfo(np.float64).max * (1 - 2.0**-40)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp2(EXP2_GRADE_BOUND))
    with pytest.raises(InputError, match="grade 1024.0 is too large .* from g = 1024"):
        exp2_gain(np.array([0.0, EXP2_GRADE_BOUND]))


@pytest.mark.parametrize(
    ("func", "grades", "message"),
    [
        (ndcg, [2000, 1, 0], "grade 2000.0 is too large for the exponential gain"),
        (get_measure("ndcg"), [2000, 1, 0], "grade 2000.0 is too large"),
        (dcg, [1100, 0, 0], "grade 1100.0 is too large"),
        (dcg, [1024, 0, 0], "grade 1024.0 is too large"),
        # each gain finite, their discounted sum not: 2^1023.5 (1 + 1/log2 3) > 2^1024
        (dcg, [1023.5, 1023.5, 0], "DCG of grades up to 1023.5 overflows float64"),
        (ndcg, [1023.5, 0, 1023.5], "ideal DCG of grades up to 1023.5 overflows"),
        (err, [1024, 1, 0], "max_grade 1024.0 is too large for ERR"),
    ],
)
def test_grades_beyond_the_exp2_bound_raise_instead_of_inf_or_nan(func, grades, message):
    from oltr.errors import InputError

    with pytest.raises(InputError, match=message):
        func(np.array(grades, dtype=np.float64), np.array([0, 1, 2]))


def test_grades_just_below_the_exp2_bound_give_finite_measures():
    rel, order = np.array([BELOW_BOUND, 0.0, 0.0]), np.array([0, 1, 2])
    assert dcg(rel, order) == np.exp2(BELOW_BOUND) - 1.0  # one gain, discount 1
    assert ndcg(rel, order) == 1.0
    assert ndcg(rel, np.array([1, 0, 2])) == pytest.approx(1 / np.log2(3), rel=1e-15)
    # the largest two-item DCG that fits: 2^g (1 + 1/log2 3) just below 2^1024
    g = 1024 - np.log2(1 + 1 / np.log2(3)) - 1e-9
    assert np.isfinite(dcg(np.array([g, g, 0.0]), order))


def test_error_names_the_bad_position():
    rel = np.array([[0, 1, 2], [1, -3, 0]])
    with pytest.raises(ValueError, match=re.escape("(1, 1)")):
        ndcg(rel, OK_O)


def test_measures_survive_pickling_for_worker_processes():
    import pickle

    for label in ("ndcg@3", "precision@2", "err", "auc"):
        m = get_measure(label)
        back = pickle.loads(pickle.dumps(m))
        assert back == m and back.label == label and dict(back.kwargs) == dict(m.kwargs)
        rel, order = np.array([2, 0, 1, 3]), np.array([3, 0, 2, 1])
        assert back(rel, order) == m(rel, order)


def test_ailon_measures_by_hand():
    # ℓ_linear: positions from 0, the chosen items at positions 1 and 2 -> 1 + 2.
    assert get_measure("position")([0, 1, 1], [0, 1, 2]) == 3.0
    # Spearman's ρ = Σ π(u) σ(u) with σ(u) = m − r(u): identity vs identity = 1 + 4 + 9.
    assert get_measure("spearman")([2, 1, 0], [0, 1, 2]) == 14.0
    assert get_measure("spearman")([2, 1, 0], [2, 1, 0]) == 10.0
    assert get_measure("spearman").kind == "gain" and get_measure("position@2").k == 2
