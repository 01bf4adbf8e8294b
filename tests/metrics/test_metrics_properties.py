"""Property tests of the ranking measures (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from oltr.metrics import (
    auc,
    average_precision,
    dcg,
    err,
    ndcg,
    pairwise_loss,
    precision,
    sum_loss,
)

SETTINGS = settings(max_examples=60, deadline=None)
ALL = {
    "dcg": dcg,
    "ndcg": ndcg,
    "ap": average_precision,
    "auc": auc,
    "sumloss": sum_loss,
    "pairwise": pairwise_loss,
    "err": lambda r, o, **kw: err(r, o, max_grade=4, **kw),
    "precision": lambda r, o, **kw: precision(r, o, k=2, **kw),
}


@st.composite
def graded_list(draw, max_items=9):
    m = draw(st.integers(1, max_items))
    rel = np.array(draw(st.lists(st.integers(0, 4), min_size=m, max_size=m)))
    order = np.array(draw(st.permutations(range(m))))
    return rel, order


@st.composite
def padded_batch(draw):
    m = draw(st.integers(1, 7))
    rows = draw(st.integers(1, 5))
    rel = np.array(draw(st.lists(st.integers(0, 3), min_size=rows * m, max_size=rows * m)))
    mask = np.array(draw(st.lists(st.booleans(), min_size=rows * m, max_size=rows * m)))
    orders = [draw(st.permutations(range(m))) for _ in range(rows)]
    return rel.reshape(rows, m), np.array(orders), mask.reshape(rows, m)


def ideal(rel):
    return np.argsort(-rel, kind="stable")


@SETTINGS
@given(graded_list(), st.one_of(st.none(), st.integers(1, 12)))
def test_normalised_measures_lie_in_unit_interval(lst, k):
    rel, order = lst
    for value in (
        ndcg(rel, order, k=k),
        average_precision(rel, order),
        auc(rel, order),
        err(rel, order, k=k),
        precision(rel, order, k=k or 3),
    ):
        assert 0.0 <= value <= 1.0 + 1e-12


@SETTINGS
@given(graded_list(), st.one_of(st.none(), st.integers(1, 12)))
def test_ideal_order_is_best(lst, k):
    rel, order = lst
    best = ideal(rel)
    assert ndcg(rel, best, k=k) == 1.0
    assert average_precision(rel, best) == 1.0
    assert auc(rel, best) == 0.0 and pairwise_loss(rel, best) == 0.0
    assert dcg(rel, best, k=k) >= dcg(rel, order, k=k) - 1e-12
    assert err(rel, best, k=k) >= err(rel, order, k=k) - 1e-12
    assert sum_loss(rel, best) <= sum_loss(rel, order) + 1e-12


@SETTINGS
@given(graded_list(), st.integers(0, 2**32 - 1))
def test_swapping_equal_label_items_changes_nothing(lst, seed):
    rel, order = lst
    rng = np.random.default_rng(seed)
    relabel = np.arange(rel.size)  # a permutation of items that keeps every label
    for grade in np.unique(rel):
        group = np.flatnonzero(rel == grade)
        relabel[group] = rng.permutation(group)
    other = relabel[order]
    for name, f in ALL.items():
        assert f(rel, other) == f(rel, order), name


@SETTINGS
@given(graded_list(), st.integers(0, 5))
def test_cutoff_at_or_past_the_end_is_uncut(lst, extra):
    rel, order = lst
    k = rel.size + extra
    assert dcg(rel, order, k=k) == dcg(rel, order)
    assert ndcg(rel, order, k=k) == ndcg(rel, order)
    assert err(rel, order, k=k) == err(rel, order)
    assert precision(rel, order, k=k, normalize=False) == np.count_nonzero(rel)


@SETTINGS
@given(padded_batch())
def test_batch_equals_per_row(batch):
    rel, orders, mask = batch
    for name, f in ALL.items():
        together = f(rel, orders, mask=mask)
        assert together.shape == (rel.shape[0],)
        for b in range(rel.shape[0]):
            assert np.isclose(together[b], f(rel[b], orders[b], mask=mask[b]), rtol=1e-12), name


@SETTINGS
@given(padded_batch())
def test_padding_equals_the_unpadded_list(batch):
    rel, orders, mask = batch
    for name, f in ALL.items():
        together = f(rel, orders, mask=mask)
        for b in range(rel.shape[0]):
            keep = np.flatnonzero(mask[b])
            if keep.size == 0:
                continue
            new_index = np.full(rel.shape[1], -1)
            new_index[keep] = np.arange(keep.size)
            own = new_index[orders[b]][mask[b][orders[b]]]  # real items renumbered, in order
            assert np.isclose(together[b], f(rel[b][keep], own), rtol=1e-12, atol=1e-12), name
