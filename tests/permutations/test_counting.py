"""Orders by counting: the stable sort's order, by exhaustive enumeration and on long tied lists."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from oltr.permutations.counting import (
    COUNTING_UP_TO,
    order_by_counting,
    orders_by_counting,
    stable_orders,
)

#: Ties of every kind: −0.0 equals 0.0, infinities equal themselves.
VALUES = (-np.inf, -1.5, -0.0, 0.0, 1.0, np.inf)


def every_row(m: int, values: tuple[float, ...]) -> np.ndarray:
    """Every key vector of length m over ``values``, one per row."""
    return np.array(list(itertools.product(values, repeat=m)), dtype=np.float64).reshape(-1, m)


@pytest.mark.parametrize("m", range(1, 7))
def test_every_row_over_tied_values_gets_the_stable_order(m: int) -> None:
    """m = 1 … 6 covers the four-at-a-time pass, its remainder, and both together."""
    keys = every_row(m, VALUES)
    out = np.full(keys.shape, 99, dtype=np.intp)  # whatever was there does not matter
    orders_by_counting(keys, out)
    np.testing.assert_array_equal(out, np.argsort(keys, axis=-1, kind="stable"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m", [7, 24, 40, 121, COUNTING_UP_TO])
def test_long_rows_with_many_ties_get_the_stable_order(m: int, dtype: type) -> None:
    gen = np.random.default_rng(m)
    keys = np.vstack(
        [
            gen.integers(-3, 4, size=(5, m)),  # few values: long runs of ties
            np.zeros((1, m)),  # one group of m equal keys
            gen.normal(size=(2, m)),  # no ties
        ]
    ).astype(dtype)
    out = np.empty(keys.shape, dtype=np.intp)
    orders_by_counting(keys, out)
    np.testing.assert_array_equal(out, np.argsort(keys, axis=-1, kind="stable"))
    row = np.empty(m, dtype=np.intp)
    order_by_counting(keys[0], row)  # one row alone is the same order
    np.testing.assert_array_equal(row, out[0])


@pytest.mark.parametrize("m", range(1, 7))
def test_nan_keys_still_give_a_permutation(m: int) -> None:
    """NaN compares false both ways, so the counts can disagree; every item is placed once,
    inside the row (a position past the end would write outside it)."""
    keys = every_row(m, (np.nan, 0.0, 1.0))
    out = np.empty(keys.shape, dtype=np.intp)
    orders_by_counting(keys, out)
    np.testing.assert_array_equal(np.sort(out, axis=-1), np.broadcast_to(np.arange(m), out.shape))
    finite = ~np.isnan(keys).any(axis=-1)
    np.testing.assert_array_equal(out[finite], np.argsort(keys[finite], axis=-1, kind="stable"))


@pytest.mark.parametrize(
    "shape", [(1, 1), (3, 5), (2, 2, 7), (4, COUNTING_UP_TO), (2, COUNTING_UP_TO + 1), (0, 3)]
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.float16])
def test_stable_orders_is_numpys_stable_argsort(shape: tuple[int, ...], dtype: type) -> None:
    """By counting or by numpy's sort, whatever the shape and dtype: the same intp orders."""
    keys = np.random.default_rng(len(shape)).integers(-2, 3, size=shape).astype(dtype)
    got = stable_orders(keys)
    assert got.dtype == np.intp
    np.testing.assert_array_equal(got, np.argsort(keys, axis=-1, kind="stable"))


def test_stable_orders_with_nan_is_numpys_order() -> None:
    """NaN rows cannot be counted; the whole batch goes to numpy, which puts NaN last."""
    keys = np.array([[0.5, np.nan, -1.0, np.nan], [2.0, 1.0, 1.0, -np.inf]])
    np.testing.assert_array_equal(stable_orders(keys), np.argsort(keys, axis=-1, kind="stable"))
    transposed = np.asfortranarray(every_row(3, VALUES))  # not C-ordered: copied, same order
    np.testing.assert_array_equal(
        stable_orders(transposed), np.argsort(transposed, axis=-1, kind="stable")
    )
