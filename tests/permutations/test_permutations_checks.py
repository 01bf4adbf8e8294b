"""The runner's compiled permutation check against the definition, by exhaustive enumeration."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from oltr.permutations.checks import checked_orders, first_non_permutation
from oltr.validation import check_orders


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_every_row_of_entries_in_minus_one_to_m_is_judged_as_the_definition_says(m: int) -> None:
    # All (m + 2)^m rows with entries in -1..m: the out-of-range values on both sides,
    # repeats, and the m! permutations. A row is a permutation iff its sorted entries
    # are 0..m-1.
    rows = np.array(list(itertools.product(range(-1, m + 1), repeat=m)), dtype=np.intp)
    is_permutation = (np.sort(rows, axis=1) == np.arange(m)).all(axis=1)
    verdicts = np.array([first_non_permutation(row[None, :]) for row in rows])
    assert np.array_equal(verdicts == -1, is_permutation)
    assert is_permutation.sum() == [1, 2, 6, 24][m - 1]  # the enumeration holds every permutation


def test_the_first_bad_row_is_named() -> None:
    good = np.array([[2, 0, 1], [0, 1, 2], [1, 2, 0]])
    assert first_non_permutation(good) == -1
    for bad_row, bad in itertools.product(range(3), ([0, 0, 1], [0, 1, 3], [-1, 0, 1])):
        orders = good.copy()
        orders[bad_row] = bad
        assert first_non_permutation(orders) == bad_row


def test_checked_orders_returns_a_learners_own_array_itself() -> None:
    orders = np.array([[2, 0, 1], [0, 1, 2]], dtype=np.intp)
    assert checked_orders(orders, 3, 2) is orders
    duels = np.array([[[2, 0, 1], [0, 1, 2]]], dtype=np.intp)
    assert checked_orders(duels, 3, 1, n_lists=2) is duels


@pytest.mark.parametrize(
    ("orders", "n_runs", "n_lists"),
    [
        (np.array([[1, 1, 2]], dtype=np.intp), 1, 1),  # a repeat: the compiled check fails it
        (np.array([[[0, 1, 2], [0, 1, 3]]], dtype=np.intp), 1, 2),  # a duel's second list
        (np.array([[0, 1, 2]], dtype=np.intp), 2, 1),  # one row for two runs
        (np.array([[0, 1]], dtype=np.intp), 1, 1),  # the wrong length
        (np.array([[0.0, 1.0, 2.0]]), 1, 1),  # floats
    ],
)
def test_checked_orders_refuses_as_check_orders_does(
    orders: np.ndarray, n_runs: int, n_lists: int
) -> None:
    with pytest.raises((ValueError, TypeError)) as expected:
        check_orders(orders, 3, n_runs, n_lists)
    with pytest.raises(expected.type, match=re.escape(str(expected.value))):
        checked_orders(orders, 3, n_runs, n_lists)


def test_other_forms_are_converted_as_check_orders_converts_them() -> None:
    every_other = np.array([2, 9, 0, 9, 1, 9])[::2][None]
    for orders in ([[2, 0, 1]], np.array([[2, 0, 1]], dtype=np.int32), every_other):
        assert np.array_equal(checked_orders(orders, 3, 1), check_orders(orders, 3, 1))
    strided = np.array([[2, 0, 1, 9], [0, 1, 2, 9]])[:, :3]  # not C-ordered: the numpy check
    assert checked_orders(strided, 3, 2).dtype == np.intp
