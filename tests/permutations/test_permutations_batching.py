"""Noisy sorts: batching, seeding, limits and validation; per-run kernels."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oltr.permutations.orders as orders_module
import oltr.permutations.sorts as sorts_module
from oltr.permutations import (
    noisy_quicksort,
    plackett_luce,
)

SORTS = [plackett_luce, noisy_quicksort]


def _is_permutation_rows(order: np.ndarray) -> bool:
    m = order.shape[-1]
    return bool((np.sort(order, axis=-1) == np.arange(m)).all())


# ---------------------------------------------------------------------------
# batching, seeding, limits, validation


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
def test_batched_orders_are_valid_and_seeded(sort):
    w = np.random.default_rng(5).normal(size=(3, 4, 17))
    a = sort(w, 77)
    assert a.shape == (3, 4, 17) and a.dtype == np.intp and _is_permutation_rows(a)
    np.testing.assert_array_equal(a, sort(w, 77))
    np.testing.assert_array_equal(a, sort(w, np.random.default_rng(77)))
    assert not np.array_equal(a, sort(w, 78))
    # Rows of one call are independent draws, not copies of one draw.
    same_w = sort(np.zeros((4, 30)), 77)
    assert len({tuple(r) for r in same_w}) == 4
    # A shared Generator advances: consecutive calls differ, and its stream moved on.
    g = np.random.default_rng(77)
    first, second = sort(w, g), sort(w, g)
    assert not np.array_equal(first, second)
    assert g.random() != np.random.default_rng(77).random()


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
def test_well_separated_weights_sort_deterministically(sort):
    # Neighbouring items differ by 50 nats: a wrong comparison has probability
    # about e^-50 per pair, so the descending order comes out every time.
    rng = np.random.default_rng(8)
    n = 2_000
    w = np.stack([50.0 * rng.permutation(n) for _ in range(3)])
    expected = np.argsort(-w, axis=-1)
    np.testing.assert_array_equal(sort(w, 1), expected)
    np.testing.assert_array_equal(sort(w[0], 1), expected[0])
    # Huge but equal offsets are harmless: shift invariance.
    np.testing.assert_array_equal(sort(w[0] + 1e6, 2), expected[0])


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
def test_single_item_and_empty_batch(sort):
    np.testing.assert_array_equal(sort([3.0], 0), [0])
    np.testing.assert_array_equal(sort(np.zeros((4, 1)), 0), np.zeros((4, 1), dtype=int))
    assert sort(np.zeros((0, 5)), 0).shape == (0, 5)


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "bad, error, match",
    [
        ([0.0, np.nan], ValueError, r"w must be finite.*nan at index \(1,\)"),
        ([0.0, np.inf], ValueError, r"w must be finite.*inf at index \(1,\)"),
        ([[0.0, 1.0], [-np.inf, 0.0]], ValueError, r"w must be finite.*index \(1, 0\)"),
        (1.0, ValueError, "w must have at least one axis"),
        (np.zeros((2, 0)), ValueError, "w must hold at least one item"),
        (["x", "y"], TypeError, "w must hold real numbers"),
    ],
)
def test_sorts_reject_bad_weights(sort, bad, error, match):
    with pytest.raises(error, match=match):
        sort(bad, 0)


def test_integer_weights_are_accepted():
    np.testing.assert_array_equal(plackett_luce([0, 100, 50], 0), [1, 2, 0])
    np.testing.assert_array_equal(noisy_quicksort([0, 100, 50], 0), [1, 2, 0])


@pytest.mark.parametrize("module", [orders_module, sorts_module])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize(
    "bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox]
)
@pytest.mark.parametrize("n", [1, 2, 3, 10, 70])
def test_noisy_quicksort_runs_is_noisy_quicksort_per_run(bit_generator: type, n: int) -> None:
    """One compiled call for all runs: the same orders and generator states as one call per run."""
    from oltr.permutations import noisy_quicksort, noisy_quicksort_runs
    from oltr.types import RunGenerators

    def gens() -> RunGenerators:
        seeds = np.random.SeedSequence(n).spawn(5)
        return RunGenerators(np.random.Generator(bit_generator(s)) for s in seeds)

    fast_rngs, slow_rngs = gens(), gens()
    w = np.random.default_rng(n).normal(scale=2.0, size=(5, n))
    w[0] = 0.0  # ties everywhere: every comparison is a fair coin
    for _ in range(4):
        fast = noisy_quicksort_runs(w, fast_rngs)
        slow = np.stack([noisy_quicksort(w[b], g) for b, g in enumerate(slow_rngs)])
        np.testing.assert_array_equal(fast, slow)
    for a, b in zip(fast_rngs, slow_rngs, strict=True):
        np.testing.assert_equal(a.bit_generator.state, b.bit_generator.state)


def test_noisy_quicksort_runs_needs_one_row_per_generator() -> None:
    from oltr.permutations import noisy_quicksort_runs
    from oltr.types import RunGenerators

    with pytest.raises(ValueError, match="shape"):
        noisy_quicksort_runs(np.zeros((3, 4)), RunGenerators.from_rng(0, 2))


@pytest.mark.parametrize(
    "bit_generator", [np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox]
)
@pytest.mark.parametrize("n", [1, 2, 3, 10, 70, 1000])
def test_permutation_rows_is_generator_permutation_per_run(bit_generator: type, n: int) -> None:
    """The listed runs get rngs[b].permutation(n), the generators end in the same states."""
    from oltr.permutations import permutation_rows
    from oltr.types import RunGenerators

    def gens() -> RunGenerators:
        seeds = np.random.SeedSequence(n).spawn(5)
        return RunGenerators(np.random.Generator(bit_generator(s)) for s in seeds)

    fast_rngs, slow_rngs = gens(), gens()
    for rows in ([0, 2, 4], [1], [], [0, 1, 2, 3, 4]):
        fast = np.full((5, n), -1, dtype=np.intp)
        permutation_rows(fast_rngs, np.array(rows, dtype=np.intp), fast)
        for b in range(5):
            want = slow_rngs[b].permutation(n) if b in rows else np.full(n, -1)
            np.testing.assert_array_equal(fast[b], want)
    for a, b in zip(fast_rngs, slow_rngs, strict=True):
        np.testing.assert_equal(a.bit_generator.state, b.bit_generator.state)
