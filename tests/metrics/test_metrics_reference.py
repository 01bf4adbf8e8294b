"""Ranking measures against scikit-learn and a plain-Python reference; masks, conventions."""

from __future__ import annotations

import math

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
    ndcg,
    pairwise_loss,
    precision,
    sum_loss,
)

L3 = math.log2(3)


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


def test_measures_survive_pickling_for_worker_processes():
    import pickle

    for label in ("ndcg@3", "precision@2", "err", "auc"):
        m = get_measure(label)
        back = pickle.loads(pickle.dumps(m))
        assert back == m and back.label == label and dict(back.kwargs) == dict(m.kwargs)
        rel, order = np.array([2, 0, 1, 3]), np.array([3, 0, 2, 1])
        assert back(rel, order) == m(rel, order)
