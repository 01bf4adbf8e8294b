"""Orders and ranks, tie rules, uniform orders, and Ailon's two noisy sorts.

Statistical tests use fixed seeds and state their error rate ``ALPHA``: with a
correct implementation a test fails with probability at most ALPHA (for the
fixed seed it then fails every time, so a pass is reproducible). Each one is
paired with a power check that a known-wrong sampler is rejected by the same
procedure, so the tests can fail.
"""

from __future__ import annotations

import doctest
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import oltr.permutations.orders as orders_module
import oltr.permutations.sorts as sorts_module
from oltr.permutations import (
    all_orders,
    noisy_quicksort,
    order_from_ranks,
    order_from_scores,
    plackett_luce,
    random_order,
    ranks_from_order,
    ranks_from_scores,
)

#: Overall false-alarm rate of each goodness-of-fit test (one chi-square test).
ALPHA_GOF = 1e-3
#: Overall false-alarm rate of each family of pairwise binomial tests
#: (Bonferroni: every single test runs at ALPHA_PAIRS / number of tests).
ALPHA_PAIRS = 1e-3

SORTS = [plackett_luce, noisy_quicksort]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _lemma61(w: np.ndarray) -> np.ndarray:
    """P[u, v] = e^w(u) / (e^w(u) + e^w(v)), Ailon 2014 Lemma 6.1."""
    return _sigmoid(w[:, None] - w[None, :])


def _is_permutation_rows(order: np.ndarray) -> bool:
    m = order.shape[-1]
    return bool((np.sort(order, axis=-1) == np.arange(m)).all())


# ---------------------------------------------------------------------------
# exact distributions over orders, written independently of the sampler code


def _exact_plackett_luce(w: np.ndarray) -> dict[tuple[int, ...], float]:
    """Algorithm 3 probability of every order: product of sequential choices."""
    weights = np.exp(w)
    probs = {}
    for order in itertools.permutations(range(len(w))):
        p, remaining = 1.0, weights.sum()
        for u in order:
            p *= weights[u] / remaining
            remaining -= weights[u]
        probs[order] = p
    return probs


def _exact_quicksort(items: tuple[int, ...], w: np.ndarray) -> dict[tuple[int, ...], float]:
    """Algorithm 2 probability of every order of ``items``: enumerate pivots and splits."""
    if len(items) <= 1:
        return {items: 1.0}
    probs: dict[tuple[int, ...], float] = {}
    for p in items:
        others = [v for v in items if v != p]
        for goes_left in itertools.product([True, False], repeat=len(others)):
            split_p = 1.0
            for v, left in zip(others, goes_left, strict=True):
                q = math.exp(w[v]) / (math.exp(w[v]) + math.exp(w[p]))
                split_p *= q if left else 1.0 - q
            left_items = tuple(v for v, g in zip(others, goes_left, strict=True) if g)
            right_items = tuple(v for v, g in zip(others, goes_left, strict=True) if not g)
            for lo, lp in _exact_quicksort(left_items, w).items():
                for ro, rp in _exact_quicksort(right_items, w).items():
                    key = lo + (p,) + ro
                    probs[key] = probs.get(key, 0.0) + split_p / len(items) * lp * rp
    return probs


def _order_counts(orders: np.ndarray) -> np.ndarray:
    """Counts of each order, indexed like itertools.permutations(range(m))."""
    m = orders.shape[-1]
    index = {o: i for i, o in enumerate(itertools.permutations(range(m)))}
    codes = orders.reshape(-1, m) @ (m ** np.arange(m - 1, -1, -1))
    ref_codes = np.array([np.dot(o, m ** np.arange(m - 1, -1, -1)) for o in index])
    assert (np.diff(ref_codes) > 0).all()  # itertools order is lexicographic
    counts = np.bincount(np.searchsorted(ref_codes, codes), minlength=len(index))
    assert counts.sum() == len(codes)
    return counts


def _chi2_pvalue(counts: np.ndarray, probs: np.ndarray) -> float:
    assert math.isclose(probs.sum(), 1.0, rel_tol=1e-9)
    return float(stats.chisquare(counts, probs * counts.sum()).pvalue)


def _pairwise_pvalues(orders: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Two-sided exact binomial p-value of P(u before v) = Lemma 6.1, every pair u < v."""
    ranks = np.argsort(orders, axis=-1)  # independent of ranks_from_order
    n, m = ranks.shape
    before = (ranks[:, :, None] < ranks[:, None, :]).sum(axis=0)
    expected = _lemma61(w)
    return np.array(
        [
            stats.binomtest(int(before[u, v]), n, expected[u, v]).pvalue
            for u, v in itertools.combinations(range(m), 2)
        ]
    )


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


def test_random_tie_breaking_is_uniform():
    # Items 1, 2, 4, 5 tie at the top; 0 and 3 are fixed at positions 4 and 5.
    scores = np.array([1.0, 3.0, 3.0, 0.0, 3.0, 3.0])
    n = 24_000
    order = order_from_scores(np.broadcast_to(scores, (n, 6)), rng=20240601)
    assert (order[:, 4] == 0).all() and (order[:, 5] == 3).all()
    relabel = np.full(6, -1)
    relabel[[1, 2, 4, 5]] = np.arange(4)
    counts = _order_counts(relabel[order[:, :4]])
    assert _chi2_pvalue(counts, np.full(24, 1 / 24)) > ALPHA_GOF
    # Power: the deterministic rule puts all mass on one of the 24 orders.
    det = relabel[order_from_scores(np.broadcast_to(scores, (n, 6)))[:, :4]]
    assert _chi2_pvalue(_order_counts(det), np.full(24, 1 / 24)) < ALPHA_GOF


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
# uniform orders


def test_random_order_is_uniform_over_all_24_orders():
    n = 48_000
    orders = random_order(4, rng=123, size=n)
    assert orders.shape == (n, 4) and _is_permutation_rows(orders)
    assert _chi2_pvalue(_order_counts(orders), np.full(24, 1 / 24)) > ALPHA_GOF
    # Power: a sampler that never puts item 3 first is rejected.
    biased = orders[orders[:, 0] != 3]
    assert _chi2_pvalue(_order_counts(biased), np.full(24, 1 / 24)) < ALPHA_GOF


def test_random_order_shapes_and_seeding():
    assert random_order(4, rng=0).shape == (4,)
    assert random_order(4, rng=0, size=(2, 3)).shape == (2, 3, 4)
    assert random_order(4, rng=0, size=0).shape == (0, 4)
    np.testing.assert_array_equal(random_order(50, 9, size=3), random_order(50, 9, size=3))
    assert not np.array_equal(random_order(50, 9, size=3), random_order(50, 10, size=3))
    assert _is_permutation_rows(random_order(1, 0, size=5))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_items": 0}, ValueError, "n_items must be >= 1, got 0"),
        ({"n_items": -2}, ValueError, "n_items must be >= 1, got -2"),
        ({"n_items": 2.0}, TypeError, "n_items must be an int, got float"),
        ({"n_items": True}, TypeError, "n_items must be an int, got bool"),
        ({"n_items": 3, "size": -1}, ValueError, "size must be a non-negative int"),
        ({"n_items": 3, "size": (2, 1.5)}, ValueError, "size must be a non-negative int"),
    ],
)
def test_random_order_rejects_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        random_order(rng=0, **kwargs)


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


# ---------------------------------------------------------------------------
# Ailon's Lemma 6.1 for both noisy sorts

#: Weight vectors: equal, moderate, large differences (up to 14 nats), and random.
LEMMA_WEIGHTS = [
    np.zeros(5),
    np.array([0.0, 0.5, 1.0, 2.0, -1.0]),
    np.array([0.0, 4.0, 8.0, -6.0, 2.0]),
    np.random.default_rng(61).normal(scale=1.5, size=8),
]
N_PAIR_SAMPLES = 20_000


def _lemma61_min_pvalue(sort, w_list, seed):
    """Smallest pairwise p-value over all weight vectors, and the number of tests.

    Each vector is sampled in one batched call together with its reversal,
    shape (N, 2, m), so rows with different weights share a call and a stream.
    """
    pvalues = []
    for i, w in enumerate(w_list):
        w2 = np.stack([w, w[::-1]])
        orders = sort(np.broadcast_to(w2, (N_PAIR_SAMPLES, *w2.shape)), seed + i)
        assert orders.shape == (N_PAIR_SAMPLES, 2, len(w)) and _is_permutation_rows(orders)
        pvalues.append(_pairwise_pvalues(orders[:, 0], w))
        pvalues.append(_pairwise_pvalues(orders[:, 1], w[::-1]))
    p = np.concatenate(pvalues)
    return float(p.min()), len(p)


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
def test_lemma_6_1_pairwise_marginals(sort):
    p_min, n_tests = _lemma61_min_pvalue(sort, LEMMA_WEIGHTS, seed=610)
    assert p_min > ALPHA_PAIRS / n_tests


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "wrong",
    [
        pytest.param(lambda w: -w, id="reversed-comparison"),
        pytest.param(lambda w: np.log(w - w.min() + 1.0), id="w-instead-of-exp-w"),
        pytest.param(lambda w: w / 2, id="half-temperature"),
    ],
)
def test_lemma_6_1_test_rejects_wrong_samplers(sort, wrong):
    # "w instead of e^w" means P(u before v) = w(u)/(w(u)+w(v)): a sort with log-weights
    # log(w); the weights are shifted positive so that this is defined.
    def broken(w, rng):
        return sort(wrong(w), rng)

    weights = LEMMA_WEIGHTS[1:]  # with equal weights every variant is correct
    p_min, n_tests = _lemma61_min_pvalue(broken, weights, seed=610)
    assert p_min < ALPHA_PAIRS / n_tests


@pytest.mark.parametrize("sort", SORTS, ids=lambda f: f.__name__)
def test_lemma_6_1_on_a_longer_list(sort):
    # 60 items exercise deep recursions of QuickSort; all 1770 pairs are tested.
    w = np.random.default_rng(62).normal(scale=1.0, size=60)
    orders = sort(np.broadcast_to(w, (4_000, 60)), 6100)
    p = _pairwise_pvalues(orders, w)
    assert p.min() > ALPHA_PAIRS / len(p)


# ---------------------------------------------------------------------------
# full distributions: Plackett–Luce is PL; QuickSort is its own enumeration


@pytest.mark.parametrize("w", [[0.0, 0.5, 1.0, 2.0], [1.0, -1.0, 0.3, 0.0], [0.0, 0.0, 0.0, 0.0]])
def test_plackett_luce_matches_exact_distribution_over_24_orders(w):
    w = np.array(w)
    probs = np.array(list(_exact_plackett_luce(w).values()))
    orders = plackett_luce(np.broadcast_to(w, (60_000, 4)), rng=2401)
    assert _chi2_pvalue(_order_counts(orders), probs) > ALPHA_GOF


def test_exact_quicksort_enumeration_matches_closed_form_for_three_items():
    # Pivot a: b, c go right (p_ab p_ac), then b before c (p_bc); pivot b: a left,
    # c right (p_ab p_bc); pivot c: a, b left (p_ac p_bc), then a before b (p_ab). So
    # P(a b c) = p_ab p_bc (2 p_ac + 1) / 3 with p_xy = e^w(x)/(e^w(x)+e^w(y)).
    w = np.array([0.3, -1.2, 2.0])
    p = _lemma61(w)
    exact = _exact_quicksort((0, 1, 2), w)
    for a, b, c in itertools.permutations(range(3)):
        assert exact[(a, b, c)] == pytest.approx(p[a, b] * p[b, c] * (2 * p[a, c] + 1) / 3)


@pytest.mark.parametrize("w", [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0, -1.0], [0.0, 0.0, 0.0, 0.0]])
def test_exact_quicksort_has_lemma_6_1_marginals_but_is_not_plackett_luce(w):
    w = np.array(w)
    m = len(w)
    qs = _exact_quicksort(tuple(range(m)), w)
    pl = _exact_plackett_luce(w)
    assert sum(qs.values()) == pytest.approx(1.0)
    for u, v in itertools.permutations(range(m), 2):
        p_uv = sum(p for o, p in qs.items() if o.index(u) < o.index(v))
        assert p_uv == pytest.approx(_lemma61(w)[u, v], abs=1e-12)
    gap = max(abs(qs[o] - pl[o]) for o in pl)
    if np.ptp(w) == 0:
        assert gap == pytest.approx(0.0, abs=1e-12)  # equal weights: both uniform
    else:
        assert gap > 0.01


@pytest.mark.parametrize("w", [[0.0, 1.0, 2.0], [0.0, 2.0, 4.0, -1.0], [0.5, -0.5, 0.0, 1.0]])
def test_noisy_quicksort_matches_its_exact_distribution(w):
    w = np.array(w)
    m = len(w)
    exact = _exact_quicksort(tuple(range(m)), w)
    probs = np.array([exact[o] for o in itertools.permutations(range(m))])
    counts = _order_counts(noisy_quicksort(np.broadcast_to(w, (60_000, m)), rng=2402))
    assert _chi2_pvalue(counts, probs) > ALPHA_GOF
    # Power: the same samples are rejected as Plackett–Luce (Ailon §8: QuickSort is
    # not an FPL with Gumbel noise), which also shows the test can fail.
    if m == 3:
        pl = _exact_plackett_luce(w)
        pl_probs = np.array([pl[o] for o in itertools.permutations(range(m))])
        assert _chi2_pvalue(counts, pl_probs) < ALPHA_GOF


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


@pytest.mark.parametrize("n", range(1, 13))
def test_batcher_network_sorts_every_zero_one_input(n: int) -> None:
    """The 0-1 principle (Knuth TAOCP 5.3.4): a network that sorts all 2^n 0-1 inputs sorts all."""
    from oltr.permutations.network import batcher_pairs

    pairs = batcher_pairs(n)
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1  # every 0-1 input, one per row
    for a, b in pairs.tolist():
        low, high = np.minimum(bits[:, a], bits[:, b]), np.maximum(bits[:, a], bits[:, b])
        bits[:, a], bits[:, b] = low, high
    assert (np.diff(bits, axis=1) >= 0).all()
    assert all(a < b for a, b in pairs.tolist())


@pytest.mark.parametrize("m", [1, 2, 3, 7, 24, 40, 63, 130])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_order_by_network_is_the_stable_sort(m: int, dtype: type) -> None:
    from oltr.permutations.network import batcher_pairs, order_by_network

    gen = np.random.default_rng(m)
    keys = gen.integers(-3, 4, size=(11, m)).astype(dtype)  # many ties
    keys[0] = 0.0  # one group of m equal keys
    keys[1, ::2] = -0.0  # -0.0 and 0.0 tie
    keys[2] = gen.normal(size=m)  # no ties
    out = np.empty((11, m), dtype=np.intp)
    runs_minor = np.ascontiguousarray(keys.T)
    order_by_network(runs_minor, batcher_pairs(m), np.empty((m, 11), dtype=np.intp), out)
    np.testing.assert_array_equal(out, np.argsort(keys, axis=-1, kind="stable"))
    np.testing.assert_array_equal(runs_minor.T, np.sort(keys, axis=-1))


@pytest.mark.parametrize("m", [1, 2, 7, 40])
def test_order_by_network_descending_breaks_ties_by_index(m: int) -> None:
    from oltr.permutations.network import batcher_pairs, order_by_network

    keys = np.random.default_rng(m).integers(-2, 3, size=(6, m)).astype(float)
    out = np.empty((6, m), dtype=np.intp)
    runs_minor = np.ascontiguousarray(keys.T)
    order_by_network(runs_minor, batcher_pairs(m), np.empty((m, 6), dtype=np.intp), out, True)
    np.testing.assert_array_equal(out, np.argsort(-keys, axis=-1, kind="stable"))
