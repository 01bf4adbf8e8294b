"""Orders and ranks, orders from scores with their tie rules, and the list of all orders."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from oltr.permutations import (
    all_orders,
    order_from_ranks,
    order_from_scores,
    random_order,
    ranks_from_order,
    ranks_from_scores,
)


def _is_permutation_rows(order: np.ndarray) -> bool:
    m = order.shape[-1]
    return bool((np.sort(order, axis=-1) == np.arange(m)).all())


# ---------------------------------------------------------------------------
# orders and ranks


def test_ranks_and_orders_hand_examples():
    # order [2, 0, 1]: item 2 on top, then item 0, then item 1.
    np.testing.assert_array_equal(ranks_from_order([2, 0, 1]), [1, 2, 0])
    np.testing.assert_array_equal(order_from_ranks([1, 2, 0]), [2, 0, 1])
    np.testing.assert_array_equal(
        ranks_from_order([[0, 1, 2, 3], [3, 2, 1, 0]]), [[0, 1, 2, 3], [3, 2, 1, 0]]
    )
    np.testing.assert_array_equal(ranks_from_order([[1, 3, 0, 2]]), [[2, 0, 3, 1]])
    assert ranks_from_order(np.array([0], dtype=np.uint8)).tolist() == [0]


@given(
    st.integers(1, 9).flatmap(lambda m: st.lists(st.permutations(range(m)), min_size=1, max_size=6))
)
def test_ranks_inverse_property_and_round_trip(rows):
    order = np.array(rows)
    ranks = ranks_from_order(order)
    for b in range(order.shape[0]):
        for position, item in enumerate(rows[b]):
            assert ranks[b, item] == position
    np.testing.assert_array_equal(order_from_ranks(ranks), order)
    np.testing.assert_array_equal(ranks_from_order(order_from_ranks(order)), order)


def test_inverse_is_batched_over_several_leading_axes():
    order = random_order(7, rng=3, size=(4, 5))
    ranks = ranks_from_order(order)
    assert ranks.shape == (4, 5, 7)
    for idx in np.ndindex(4, 5):
        np.testing.assert_array_equal(ranks[idx], np.argsort(order[idx]))


@pytest.mark.parametrize("func, name", [(ranks_from_order, "order"), (order_from_ranks, "ranks")])
@pytest.mark.parametrize(
    "bad, error, match",
    [
        ([0, 0, 2], ValueError, r"not a permutation of 0\.\.2: value 1 is missing"),
        ([[0, 1, 2], [2, 2, 0]], ValueError, r"row \(1,\) is not a permutation"),
        ([0, 3, 1], ValueError, r"must lie in \[0, 2\].*got 3 at index \(1,\)"),
        ([0, -1, 1], ValueError, r"must lie in \[0, 2\].*got -1"),
        ([0.0, 1.0], TypeError, "integer indices, got dtype float64"),
        (np.int64(0), ValueError, "at least one axis"),
        (np.zeros((2, 0), dtype=int), ValueError, "at least one item"),
    ],
)
def test_inverse_rejects_bad_input(func, name, bad, error, match):
    with pytest.raises(error, match=match) as info:
        func(bad)
    assert name in str(info.value)


# ---------------------------------------------------------------------------
# scores and ties


def test_order_from_scores_hand_examples():
    np.testing.assert_array_equal(order_from_scores([0.5, 2.0, 0.5, -np.inf, 3.0]), [4, 1, 0, 2, 3])
    # All tied: lower index first.
    np.testing.assert_array_equal(order_from_scores([1.0, 1.0, 1.0, 1.0]), [0, 1, 2, 3])
    # -inf padding goes last, among itself by index; +inf first.
    np.testing.assert_array_equal(order_from_scores([-np.inf, 1.0, -np.inf, np.inf]), [3, 1, 0, 2])
    # Integer dtypes where negation would overflow.
    np.testing.assert_array_equal(
        order_from_scores(np.array([0, 255, 7, 255], np.uint8)), [1, 3, 2, 0]
    )
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    np.testing.assert_array_equal(order_from_scores(np.array([lo, hi, 0, lo])), [1, 2, 0, 3])
    np.testing.assert_array_equal(order_from_scores([False, True, True]), [1, 2, 0])
    np.testing.assert_array_equal(order_from_scores([[3, 1, 2], [1, 1, 5]]), [[0, 2, 1], [2, 0, 1]])
    np.testing.assert_array_equal(ranks_from_scores([0.5, 2.0, 0.5, -np.inf, 3.0]), [2, 1, 3, 4, 0])


@given(
    st.lists(
        st.lists(st.sampled_from([-np.inf, -1.0, 0.0, -0.0, 0.5, 2.0]), min_size=5, max_size=5),
        min_size=1,
        max_size=4,
    )
)
def test_order_from_scores_matches_python_sort(rows):
    scores = np.array(rows)
    expected = [sorted(range(5), key=lambda i, r=r: (-r[i], i)) for r in rows]
    np.testing.assert_array_equal(order_from_scores(scores), expected)


@given(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=1, max_size=8), st.integers(0, 2**32))
def test_random_tie_breaking_respects_scores(row, seed):
    scores = np.array(row)
    order = order_from_scores(scores, rng=seed)
    assert _is_permutation_rows(order)
    assert (np.diff(scores[order]) <= 0).all()
    np.testing.assert_array_equal(order, order_from_scores(scores, rng=seed))


@pytest.mark.parametrize(
    "bad, error, match",
    [
        ([1.0, np.nan, 0.0], ValueError, r"NaN at index \(1,\)"),
        ([[1.0, 2.0], [0.0, np.nan]], ValueError, r"NaN at index \(1, 1\)"),
        (["a", "b"], TypeError, "real numbers"),
        ([1j, 2j], TypeError, "real numbers"),
        (3.0, ValueError, "at least one axis"),
        (np.zeros((3, 0)), ValueError, "at least one item"),
    ],
)
def test_order_from_scores_rejects_bad_input(bad, error, match):
    with pytest.raises(error, match=match):
        order_from_scores(bad)
    with pytest.raises(error, match=match):
        order_from_scores(bad, rng=0)


# ---------------------------------------------------------------------------
# all orders


@pytest.mark.parametrize("m", range(1, 8))
def test_all_orders_is_itertools_order(m):
    np.testing.assert_array_equal(all_orders(m), np.array(list(itertools.permutations(range(m)))))


@pytest.mark.parametrize(
    "m, error", [(0, ValueError), (11, ValueError), (-1, ValueError), (3.0, TypeError)]
)
def test_all_orders_rejects_bad_n_items(m, error):
    with pytest.raises(error, match="n_items"):
        all_orders(m)
