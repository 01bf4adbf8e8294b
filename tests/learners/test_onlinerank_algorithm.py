"""OnlineRank (Ailon 2014 Algorithms 1–3) and FPL (§4.1, §8): rates, updates, sampling.

Statistical tests use fixed seeds and the error rate ``ALPHA`` (Bonferroni-corrected
where several hypotheses are tested at once).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from oltr.feedback import ChoiceFeedback, FullFeedback
from oltr.learners.expweights import ExponentialWeights
from oltr.learners.onlinerank import AilonFPL, OnlineRank
from oltr.types import Context

ALPHA = 1e-3
SORTS = ("quicksort", "plackett-luce")


def logistic(a: float, b: float) -> float:
    """e^a / (e^a + e^b)."""
    return 1.0 / (1.0 + math.exp(b - a))


def pl_probability(order: tuple[int, ...], w: list[float]) -> float:
    """Algorithm 3 by hand: pick the next item in proportion to e^w among the rest."""
    p, rest = 1.0, list(order)
    for u in order:
        p *= math.exp(w[u]) / sum(math.exp(w[v]) for v in rest)
        rest.remove(u)
    return p


def quicksort_probability_3(order: tuple[int, ...], w: list[float]) -> float:
    """Algorithm 2 on three items, by hand.

    Pivot ``p`` uniform; each other item goes left of ``p`` with probability
    logistic(w(v), w(p)); two items on one side are sorted by a 2-item QuickSort,
    which puts ``x`` first with probability ½[q(x,y)] + ½[1 − q(y,x)] = q(x,y).
    """
    a, b, c = order
    total = 0.0
    for p in (a, b, c):
        others = [v for v in (a, b, c) if v != p]
        left_side = [v for v in order if v != p and order.index(v) < order.index(p)]
        right_side = [v for v in order if v != p and order.index(v) > order.index(p)]
        prob = 1.0
        for v in others:
            go_left = logistic(w[v], w[p])
            prob *= go_left if v in left_side else 1.0 - go_left
        for side in (left_side, right_side):
            if len(side) == 2:
                prob *= logistic(w[side[0]], w[side[1]])
        total += prob / 3.0
    return total


def sample(lrn: OnlineRank, n_items: int, n_calls: int) -> np.ndarray:
    ctx = Context(t=1, n_items=n_items)
    return np.concatenate([lrn.rank(ctx) for _ in range(n_calls)])


def trained(sort: str, s: list[float], *, eta: float, n_runs: int, seed: int) -> OnlineRank:
    """OnlineRank after one revealed signal s (w_1 = η s), on len(s) items."""
    lrn = OnlineRank(sort=sort, eta=eta, signal="full", n_runs=n_runs, rng=seed)
    ctx = Context(t=1, n_items=len(s))
    orders = lrn.rank(ctx)
    lrn.update(ctx, orders, FullFeedback(orders, np.tile(np.asarray(s, float), (n_runs, 1))))
    return lrn


# ---------------------------------------------------------------------------
# Algorithm 1 and Theorem 3.1 by hand


@pytest.mark.parametrize(
    ("kw", "n", "horizon", "want"),
    [
        ({}, 4, 100, 4 * math.sqrt(math.log(2)) / math.sqrt(100 * 4)),  # single: M = n
        ({"n_chosen": 2}, 6, 300, 6 * math.sqrt(math.log(2)) / math.sqrt(300 * 12)),  # M = nk
        ({"signal": "full"}, 3, 50, 3 * math.sqrt(math.log(2)) / math.sqrt(50 * 6)),  # M = 1+4+1
        ({"max_loss": 2.0}, 5, 1000, 5 * math.sqrt(math.log(2)) / math.sqrt(2000)),
        ({}, 10, 3, 1.0),  # n √(log 2 / (T M)) > 1: capped at the algorithm's range η <= 1
    ],
)
def test_default_rate_is_theorem_31(kw: dict, n: int, horizon: int, want: float) -> None:
    lrn = OnlineRank(horizon=horizon, rng=0, **kw)
    lrn.rank(Context(t=1, n_items=n))
    assert lrn.eta_ == pytest.approx(want, rel=1e-12)


def test_update_adds_eta_times_the_chosen_indicator() -> None:
    eta = 0.25
    lrn = OnlineRank(eta=eta, n_runs=2, rng=0)
    chosen = [([0], [3]), ([0, 2], [3]), ([1], [1, 2])]  # per round: run 0's set, run 1's set
    for t, (u0, u1) in enumerate(chosen, start=1):
        ctx = Context(t=t, n_items=4)
        orders = lrn.rank(ctx)
        mask = np.zeros((2, 4), bool)
        mask[0, u0], mask[1, u1] = True, True
        lrn.update(ctx, orders, ChoiceFeedback(orders, mask))
    # counts: run 0 chose item 0 twice, 1 once, 2 once; run 1 chose 3 twice, 1 once, 2 once
    np.testing.assert_array_equal(lrn.weights_, eta * np.array([[2, 1, 1, 0], [0, 1, 1, 2]]))


def _rate(lrn: OnlineRank | AilonFPL | ExponentialWeights) -> float:
    return lrn._beta if isinstance(lrn, ExponentialWeights) else lrn.eta_


def _choose(lrn: OnlineRank | AilonFPL | ExponentialWeights, t: int, m: int) -> int:
    """One round in which the user always chooses item 0; returns the item shown on top."""
    ctx = Context(t=t, n_items=m)
    orders = lrn.rank(ctx)
    chosen = np.zeros((lrn.n_runs, m), dtype=bool)
    chosen[:, 0] = True
    lrn.update(ctx, orders, ChoiceFeedback(orders, chosen))
    return int((orders[:, 0] == 0).sum())


@pytest.mark.parametrize("cls", [OnlineRank, AilonFPL, ExponentialWeights])
def test_without_horizon_the_rate_is_the_default_formula_with_t_for_t(cls: type) -> None:
    # Anytime: at round t the rate is exactly the one a learner told horizon = t uses.
    m = 4
    anytime = cls(n_runs=2, rng=0)
    for t in range(1, 201):
        _choose(anytime, t, m)
        if t in (1, 7, 200):
            told = cls(horizon=t, rng=0)
            told.rank(Context(t=1, n_items=m))
            assert _rate(anytime) == _rate(told)


@pytest.mark.parametrize("cls", [OnlineRank, AilonFPL, ExponentialWeights])
def test_without_horizon_the_chosen_item_rises_to_the_top(cls: type) -> None:
    # Item 0 of 5 is always chosen. Over rounds 1,001-2,000 of 4 runs a learner that
    # learns puts it on top far more often than a random order's 1/5: binomial test
    # against 1/5 at alpha = 1e-6, and at least half of the time.
    m, lrn = 5, cls(n_runs=4, rng=1)
    tops = [_choose(lrn, t, m) for t in range(1, 2001)]
    hits = sum(tops[1000:])
    assert stats.binomtest(hits, 4000, 0.2, alternative="greater").pvalue < 1e-6
    assert hits > 2000


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"sort": "mergesort"}, "sort"),
        ({"eta": 0.0}, "eta"),
        ({"eta": 1.5}, "eta"),
        ({"max_loss": -1.0}, "max_loss"),
        ({"signal": "bandit"}, "signal"),
        ({"horizon": 0}, "horizon"),
        ({"n_chosen": 0}, "n_chosen"),
    ],
)
def test_invalid_parameters(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OnlineRank(**kw)


def test_item_set_must_stay_fixed() -> None:
    lrn = OnlineRank(eta=0.1, rng=0)
    lrn.rank(Context(t=1, n_items=3))
    with pytest.raises(ValueError, match="fixed item set"):
        lrn.rank(Context(t=2, n_items=4))


# ---------------------------------------------------------------------------
# FPL by hand


def test_fpl_rate_by_hand() -> None:
    lrn = AilonFPL(horizon=100, n_chosen=2, rng=0)
    lrn.rank(Context(t=1, n_items=5))
    # linear z on 5 items: D = 4+2+0+2+4 = 12; worst 2-choice loss R = 3 + 4 = 7; A = 2
    assert lrn.eta_ == pytest.approx(math.sqrt(12 / (7 * 2 * 100)))


def test_fpl_follows_the_leader_when_the_noise_is_small() -> None:
    lrn = AilonFPL(eta=1e6, n_runs=2, rng=0)  # noise below 1e-6: the leader
    ctx = Context(t=1, n_items=4)
    orders = lrn.rank(ctx)
    counts = np.array([[True, False, True, False], [False, False, False, True]])
    lrn.update(ctx, orders, ChoiceFeedback(orders, counts))
    ctx2 = Context(t=2, n_items=4)
    orders = lrn.rank(ctx2)
    lrn.update(ctx2, orders, ChoiceFeedback(orders, np.array([[True, False, False, False]] * 2)))
    top = lrn.rank(Context(t=3, n_items=4))
    assert top[0, 0] == 0 and top[0, 1] == 2  # counts 2, 0, 1, 0
    assert set(top[1, :2].tolist()) == {0, 3}  # counts 1, 0, 0, 1


# ---------------------------------------------------------------------------
# sampling: the full distribution for n = 3, and Lemma 6.1 for every pair


@pytest.mark.parametrize("sort", SORTS)
def test_three_item_distribution_matches_the_algorithm_box(sort: str) -> None:
    s, eta = [2.0, 0.0, 1.0], 0.6
    w = [eta * x for x in s]
    lrn = trained(sort, s, eta=eta, n_runs=4000, seed=11)
    orders = sample(lrn, 3, 5)  # 20 000 draws
    exact = quicksort_probability_3 if sort == "quicksort" else pl_probability
    perms = list(itertools.permutations(range(3)))
    want = np.array([exact(p, w) for p in perms])
    assert want.sum() == pytest.approx(1.0)
    codes = orders[:, 0] * 9 + orders[:, 1] * 3 + orders[:, 2]
    got = np.array([(codes == a * 9 + b * 3 + c).sum() for a, b, c in perms])
    assert stats.chisquare(got, want * got.sum()).pvalue > ALPHA


def test_the_two_sorts_differ_on_whole_orders() -> None:
    """Ailon §8: QuickSort is not Plackett–Luce (already for three items)."""
    w = [1.5, 0.0, 0.7]
    perms = list(itertools.permutations(range(3)))
    qs = np.array([quicksort_probability_3(p, w) for p in perms])
    pl = np.array([pl_probability(p, w) for p in perms])
    assert np.abs(qs - pl).max() > 1e-3


@pytest.mark.parametrize("sort", SORTS)
def test_pairwise_marginals_are_logistic(sort: str) -> None:
    """Lemma 6.1: P(u ≺ v) = e^{w(u)} / (e^{w(u)} + e^{w(v)}) for every pair."""
    s = [3.0, 0.0, 1.0, 2.0, 0.5, 1.5]
    eta = 0.7
    n, n_draws = len(s), 12_000
    lrn = trained(sort, s, eta=eta, n_runs=2000, seed=5)
    orders = sample(lrn, n, n_draws // 2000)
    ranks = np.argsort(orders, axis=1)
    pairs = list(itertools.combinations(range(n), 2))
    for u, v in pairs:
        p = logistic(eta * s[u], eta * s[v])
        k = int((ranks[:, u] < ranks[:, v]).sum())
        pvalue = stats.binomtest(k, n_draws, p).pvalue
        assert pvalue > ALPHA / len(pairs), (u, v, k / n_draws, p)


@pytest.mark.parametrize("sort", SORTS)
def test_batch_runs_equal_single_runs(sort: str) -> None:
    from oltr.types import RunGenerators

    gens = lambda reps: RunGenerators.from_keys(9, "learner", reps=reps)  # noqa: E731
    batch = OnlineRank(sort=sort, eta=0.3, n_runs=3, rng=gens([0, 1, 2]))
    solo = OnlineRank(sort=sort, eta=0.3, n_runs=1, rng=gens([2]))
    ctx = Context(t=1, n_items=7)
    np.testing.assert_array_equal(batch.rank(ctx)[2], solo.rank(ctx)[0])


def test_sorting_is_the_library_sort_on_w() -> None:
    """Each run's order is oltr.permutations' sort of η·histogram with that run's stream."""
    from oltr.permutations import noisy_quicksort, plackett_luce
    from oltr.types import RunGenerators

    s = np.array([[3.0, 0.0, 1.0, 2.0, 5.0], [0.0, 4.0, 1.0, 1.0, 0.0]])
    for sort, fn in (("quicksort", noisy_quicksort), ("plackett-luce", plackett_luce)):
        lrn = OnlineRank(
            sort=sort, eta=0.4, signal="full", n_runs=2, rng=RunGenerators.from_rng(3, 2)
        )
        ctx = Context(t=1, n_items=5)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, FullFeedback(orders, s))
        got = lrn.rank(Context(t=2, n_items=5))
        twins = RunGenerators.from_rng(3, 2)
        for b in range(2):
            fn(np.zeros(5), twins[b])  # the first round's draw
            np.testing.assert_array_equal(got[b], fn(0.4 * s[b], twins[b]))


def test_short_list_race_is_the_array_form() -> None:
    """The compiled race of short lists orders items as the array form's sort does."""
    from oltr.learners.onlinerank import _race_orders

    gen = np.random.default_rng(4)
    for m in (1, 2, 5, 16):
        hist = gen.integers(0, 6, (9, m)).astype(float)
        log_race = np.log(gen.standard_exponential((9, m)))
        w = 0.3 * hist
        expected = np.argsort(log_race - (w - w.max(axis=1, keepdims=True)), axis=1)
        out = np.empty((9, m), dtype=np.intp)
        _race_orders(log_race, hist, 0.3, out)
        np.testing.assert_array_equal(out, expected)
