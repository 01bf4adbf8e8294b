"""Sampled orders: uniform orders and ties, and Ailon's two noisy sorts (Lemma 6.1, laws).

Statistical tests use fixed seeds and state their error rate ``ALPHA``: with a
correct implementation a test fails with probability at most ALPHA (for the
fixed seed it then fails every time, so a pass is reproducible). Each one is
paired with a power check that a known-wrong sampler is rejected by the same
procedure, so the tests can fail.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from oltr.permutations import (
    noisy_quicksort,
    order_from_scores,
    plackett_luce,
    random_order,
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
# uniform orders and uniform tie breaking


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
