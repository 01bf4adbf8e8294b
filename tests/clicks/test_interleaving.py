"""Interleaving: defining properties, exact laws, fairness and fidelity, seeding, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from oltr.clicks.click_models import cascade_model
from oltr.clicks.interleaving import (
    TEAM_A,
    BalancedInterleaving,
    TeamDraftInterleaving,
    balanced_interleave,
    team_draft_interleave,
    team_draft_rows,
)
from oltr.clicks.methods import INTERLEAVING_METHODS, compare, interleave
from oltr.clicks.probabilistic import ProbabilisticInterleaving, probabilistic_interleave

#: Error rate of each statistical test (seeds are fixed, so each test is deterministic).
ALPHA = 1e-3

METHODS = tuple(INTERLEAVING_METHODS)


def random_orders(n: int, m: int, seed: int) -> np.ndarray:
    return np.argsort(np.random.default_rng(seed).random((n, m)), axis=1)


def first_unshown(order: np.ndarray, shown: list[int]) -> int:
    return next(int(d) for d in order if d not in shown)


# ---------------------------------------------------------------------------
# team-draft


@pytest.mark.parametrize(("m", "k"), [(12, 10), (12, 7), (5, 10), (1, 10)])
def test_team_draft_replays_radlinski_algorithm(m: int, k: int) -> None:
    a, b = random_orders(500, m, 1), random_orders(500, m, 2)
    il = team_draft_interleave(a, b, k=k, rng=3)
    n = min(k, m)
    assert il.shown.shape == il.team.shape == (500, n)
    for row in range(500):
        shown: list[int] = []
        for t in range(n):
            # Teams alternate inside each pair of picks (|A| < |B| picks next; ties by coin).
            if t % 2 == 1:
                assert il.team[row, t] == -il.team[row, t - 1]
            own = a[row] if il.team[row, t] == -1 else b[row]
            assert il.shown[row, t] == first_unshown(own, shown)
            shown.append(int(il.shown[row, t]))
        # Each team's items appear in its own ranker's relative order.
        for team, order in ((-1, a[row]), (1, b[row])):
            rank = np.argsort(order)
            assert np.all(np.diff(rank[il.shown[row][il.team[row] == team]]) > 0)


def test_team_draft_teams_are_balanced_and_the_first_pick_is_fair() -> None:
    n_rows = 20_000
    a, b = random_orders(n_rows, 15, 4), random_orders(n_rows, 15, 5)
    il = team_draft_interleave(a, b, k=9, rng=6)
    size_gap = (il.team == -1).sum(axis=1) - (il.team == 1).sum(axis=1)
    assert set(np.unique(size_gap)) <= {-1, 0, 1}
    # Odd length: the gap is ±1, and A is ahead as often as B (zero mean).
    assert stats.binomtest(int((size_gap == 1).sum()), n_rows).pvalue > ALPHA
    assert stats.binomtest(int((il.team[:, 0] == -1).sum()), n_rows).pvalue > ALPHA
    even = team_draft_interleave(a, b, k=10, rng=6)
    assert ((even.team == -1).sum(axis=1) == 5).all()


def test_team_draft_outcome_counts_clicks_per_team_by_hand() -> None:
    il = TeamDraftInterleaving(
        np.array([[4, 2, 0, 1], [4, 2, 0, 1], [4, 2, 0, 1]]),
        np.array([[-1, 1, 1, -1]] * 3, dtype=np.int8),
    )
    clicks = np.array(
        [
            [True, True, True, False],  # A 1, B 2
            [True, False, False, True],  # A 2, B 0
            [True, True, False, False],
        ]
    )  # A 1, B 1
    np.testing.assert_array_equal(il.outcome(clicks), [1, -1, 0])
    ca, cb = il.credit(clicks)
    np.testing.assert_array_equal(ca, [1, 2, 1])
    np.testing.assert_array_equal(cb, [2, 0, 1])


# ---------------------------------------------------------------------------
# balanced


@pytest.mark.parametrize(("m", "k"), [(12, 10), (12, 7), (30, 10), (4, 10)])
def test_balanced_top_n_holds_the_top_half_of_each_ranker(m: int, k: int) -> None:
    n_rows = 2000
    a, b = random_orders(n_rows, m, 7), random_orders(n_rows, m, 8)
    # Rows with heavy overlap between the rankers stress the duplicate skipping.
    b[: n_rows // 2] = a[: n_rows // 2]
    b[: n_rows // 4, :2] = b[: n_rows // 4, 1::-1]
    il = balanced_interleave(a, b, k=k, rng=9)
    n = min(k, m)
    for row in range(n_rows):
        shown = set(il.shown[row].tolist())
        assert len(shown) == n
        lead, other = (a[row], b[row]) if il.a_first[row] else (b[row], a[row])
        assert set(lead[: (n + 1) // 2].tolist()) <= shown
        assert set(other[: n // 2].tolist()) <= shown


def test_balanced_replays_joachims_algorithm() -> None:
    n_rows, m, k = 1000, 9, 6
    a, b = random_orders(n_rows, m, 10), random_orders(n_rows, m, 11)
    b[::3] = np.roll(a[::3], 1, axis=1)  # shifted copies: many duplicates
    il = balanced_interleave(a, b, k=k, rng=12)
    for row in range(n_rows):
        shown: list[int] = []
        ka = kb = 0
        while len(shown) < k:
            if ka < kb or (ka == kb and il.a_first[row]):
                item, ka = int(a[row, ka]), ka + 1
            else:
                item, kb = int(b[row, kb]), kb + 1
            if item not in shown:
                shown.append(item)
        assert il.shown[row].tolist() == shown
        np.testing.assert_array_equal(il.rank_a[row], np.argsort(a[row])[shown])
        np.testing.assert_array_equal(il.rank_b[row], np.argsort(b[row])[shown])


def test_balanced_credit_by_hand() -> None:
    a, b = [0, 1, 2, 3, 4, 5], [4, 0, 5, 1, 2, 3]
    for seed in range(20):
        il = balanced_interleave(a, b, k=5, rng=seed)
        # A leads: a0=0, b0=4, a1=1, (b1=0 shown), a2=2, b2=5.
        # B leads: b0=4, a0=0, (b1=0 shown), a1=1, b2=5, a2=2.
        expected = [0, 4, 1, 2, 5] if il.a_first else [4, 0, 1, 5, 2]
        assert il.shown.tolist() == expected
        # Click on item 1 only: k* = min(rank_a 1, rank_b 3) + 1 = 2; A's top 2 {0, 1} has
        # it, B's top 2 {4, 0} does not: A wins.
        assert il.outcome(il.shown == 1) == -1
        # Clicks on items 4 and 5: lowest is 5, k* = min(5, 2) + 1 = 3; A's top 3 {0, 1, 2}
        # holds neither, B's top 3 {4, 0, 5} both: B wins.
        assert il.outcome(np.isin(il.shown, [4, 5])) == 1
        # Clicks on 0 and 4: lowest clicked is 4 (A first) or 0 (B first); either way k* = 1
        # and each ranker's top item is clicked: tie.
        assert il.outcome(np.isin(il.shown, [0, 4])) == 0
        # Clicks on 4 and 2: the lowest clicked is 2 in both lists, k* = min(2, 4) + 1 = 3;
        # A's top 3 holds 2, B's top 3 holds 4: tie (reading from the top click would give B).
        assert il.outcome(np.isin(il.shown, [2, 4])) == 0
        assert il.outcome(np.zeros(5, bool)) == 0


def test_balanced_self_comparison_is_always_a_tie() -> None:
    a = random_orders(3000, 12, 13)
    rel = np.random.default_rng(14).integers(0, 5, size=(3000, 12))
    out = compare(a, a, rel, cascade_model("informational"), method="balanced", rng=15)
    assert (out == 0).all()


# ---------------------------------------------------------------------------
# probabilistic


def softmax(order: np.ndarray, tau: float = 3.0) -> np.ndarray:
    """P_s(d) ∝ 1 / r_s(d)^τ, r 1-based, indexed by item."""
    w = np.empty(len(order))
    w[order] = 1.0 / np.arange(1, len(order) + 1) ** tau
    return w


def list_and_assignment_law(a: np.ndarray, b: np.ndarray, n: int) -> dict:
    """Exact P(shown list, assignment): Π_i ½ P_{a_i}(L_i | items not yet shown)."""
    wa, wb = softmax(a), softmax(b)
    law = {}
    for shown in itertools.permutations(range(len(a)), n):
        for assign in itertools.product((-1, 1), repeat=n):
            p, free = 1.0, np.ones(len(a), bool)
            for d, s in zip(shown, assign, strict=True):
                w = wa if s == -1 else wb
                p *= 0.5 * w[d] / w[free].sum()
                free[d] = False
            law[shown + assign] = p
    return law


@pytest.mark.parametrize(
    ("a", "b"), [([0, 1, 2], [2, 0, 1]), ([0, 1, 2], [0, 1, 2]), ([1, 0, 2, 3], [3, 2, 0, 1])]
)
def test_probabilistic_list_and_assignment_follow_the_softmax_law(a, b) -> None:
    a, b = np.array(a), np.array(b)
    n_rows, n = 60_000, 3
    il = probabilistic_interleave(np.tile(a, (n_rows, 1)), b, k=n, rng=np.random.default_rng(16))
    law = list_and_assignment_law(a, b, n)
    keys = [tuple(r) for r in np.concatenate([il.shown, il.assignment], axis=1).tolist()]
    observed: dict = {}
    for key in keys:
        observed[key] = observed.get(key, 0) + 1
    exp = np.array([law[k] * n_rows for k in law])
    obs = np.array([observed.get(k, 0) for k in law], float)
    assert sum(observed.values()) == n_rows and set(observed) <= set(law)
    small = exp < 5  # pool cells expected below 5
    if small.any():
        exp = np.append(exp[~small], exp[small].sum())
        obs = np.append(obs[~small], obs[small].sum())
    assert stats.chisquare(obs, exp).pvalue > ALPHA


def test_probabilistic_inclusion_probabilities_match_the_softmax() -> None:
    m, n, n_rows = 7, 3, 40_000
    a, b = np.array([3, 0, 6, 1, 5, 2, 4]), np.array([2, 4, 0, 3, 6, 1, 5])
    inclusion = np.zeros(m)
    first = np.zeros(m)
    for key, p in list_and_assignment_law(a, b, n).items():
        inclusion[list(key[:n])] += p
        first[key[0]] += p
    # Position 1 is the even mixture of the two softmaxes.
    np.testing.assert_allclose(
        first, 0.5 * softmax(a) / softmax(a).sum() + 0.5 * softmax(b) / softmax(b).sum(), rtol=1e-12
    )
    il = probabilistic_interleave(np.tile(a, (n_rows, 1)), b, k=n, rng=17)
    counts = np.array([(il.shown == d).any(axis=1).sum() for d in range(m)])
    z = (counts - n_rows * inclusion) / np.sqrt(n_rows * inclusion * (1 - inclusion))
    assert (2 * stats.norm.sf(np.abs(z))).min() > ALPHA / m


def test_probabilistic_posterior_is_bayes_over_all_assignments() -> None:
    m, n = 6, 5
    a, b = random_orders(40, m, 18), random_orders(40, m, 19)
    il = probabilistic_interleave(a, b, k=n, rng=20)
    for row in range(40):
        wa, wb = softmax(a[row]), softmax(b[row])
        joint = {}
        for assign in itertools.product((-1, 1), repeat=n):
            p, free = 1.0, np.ones(m, bool)
            for d, s in zip(il.shown[row], assign, strict=True):
                w = wa if s == -1 else wb
                p *= w[d] / w[free].sum()
                free[d] = False
            joint[assign] = p
        total = sum(joint.values())
        post_b = [sum(p for s, p in joint.items() if s[i] == 1) / total for i in range(n)]
        np.testing.assert_allclose(il.posterior_b[row], post_b, rtol=1e-10)


def test_probabilistic_expected_outcome_equals_the_sum_over_assignments() -> None:
    n = 6
    rng = np.random.default_rng(21)
    q = rng.random((200, n))
    clicks = rng.random((200, n)) < 0.4
    il = ProbabilisticInterleaving(np.tile(np.arange(n), (200, 1)), np.ones((200, n), np.int8), q)
    brute = np.zeros(200)
    for assign in itertools.product((-1, 1), repeat=n):
        s = np.array(assign)
        p = np.prod(np.where(s == 1, q, 1 - q), axis=1)
        brute += p * np.sign((clicks * s).sum(axis=1))
    np.testing.assert_allclose(il.expected_outcome(clicks), brute, atol=1e-12)
    np.testing.assert_array_equal(il.outcome(clicks), np.sign(brute).astype(int))
    # The naive outcome reads the sampled assignment (all B here).
    np.testing.assert_array_equal(
        il.outcome(clicks, marginalize=False), clicks.any(axis=1).astype(int)
    )


def test_probabilistic_self_comparison_marginal_is_an_exact_tie() -> None:
    a = random_orders(2000, 10, 22)
    rel = np.random.default_rng(23).integers(0, 5, size=(2000, 10))
    out = compare(a, a, rel, cascade_model("informational"), method="probabilistic", rng=24)
    assert (out == 0).all()


# ---------------------------------------------------------------------------
# every method: fairness, fidelity, seeding


@pytest.mark.parametrize("method", ["team_draft", "probabilistic_sampled"])
def test_a_ranker_against_itself_wins_half_of_the_non_ties(method: str) -> None:
    n_rows = 20_000
    a = random_orders(n_rows, 20, 25)
    rel = np.random.default_rng(26).integers(0, 5, size=(n_rows, 20))
    model = cascade_model("informational")
    g = np.random.default_rng(27)
    if method == "team_draft":
        out = compare(a, a, rel, model, method=method, rng=g)
    else:
        il = probabilistic_interleave(a, a, rng=g)
        out = il.outcome(model.simulate(np.take_along_axis(rel, il.shown, 1), g), marginalize=False)
    wins_b, non_ties = int((out == 1).sum()), int((out != 0).sum())
    assert non_ties > n_rows // 2
    assert stats.binomtest(wins_b, non_ties).pvalue > ALPHA


@pytest.mark.parametrize("method", METHODS)
def test_exchangeable_rankers_win_equally_often(method: str) -> None:
    # A and B drawn i.i.d.: neither argument slot may be favoured.
    n_rows = 20_000
    a, b = random_orders(n_rows, 20, 28), random_orders(n_rows, 20, 29)
    rel = np.random.default_rng(30).integers(0, 5, size=(n_rows, 20))
    out = compare(a, b, rel, cascade_model("navigational"), method=method, rng=31)
    assert stats.binomtest(int((out == 1).sum()), int((out != 0).sum())).pvalue > ALPHA


@pytest.mark.parametrize(
    ("method", "least"), [("team_draft", 0.99), ("balanced", 0.99), ("probabilistic", 0.9)]
)
def test_the_ideal_ranker_beats_its_reverse_under_perfect_clicks(method: str, least: float) -> None:
    n_rows, m = 4000, 20
    g = np.random.default_rng(32)
    rel = g.integers(0, 5, size=(n_rows, m))
    rel[:, 0] = 4  # at least one always-clicked document
    rel = g.permuted(rel, axis=1)
    best = np.argsort(-rel, axis=1, kind="stable")
    out = compare(best, best[:, ::-1], rel, cascade_model("perfect"), method=method, rng=33)
    wins_a = int((out == -1).sum())
    assert stats.binomtest(wins_a, n_rows, least, alternative="greater").pvalue < ALPHA


@pytest.mark.parametrize("method", METHODS)
def test_a_certain_click_on_a_top_item_decides_the_duel(method: str) -> None:
    # Only item 0 is relevant and A ranks it first, B last; the perfect user always clicks
    # it when shown and never clicks anything else.
    model = cascade_model("perfect", n_grades=2)
    out = compare(
        np.tile([0, 1, 2, 3], (300, 1)),
        [3, 2, 1, 0],
        [1, 0, 0, 0],
        model,
        method=method,
        k=2,
        rng=34,
    )
    if method == "probabilistic":  # item 0 may be left out; B can never win
        assert set(np.unique(out)) <= {-1, 0} and (out == -1).mean() > 0.5
    else:
        assert (out == -1).all()


@pytest.mark.parametrize("method", METHODS)
def test_seeding_is_reproducible_and_per_row_generators_match_single_calls(method: str) -> None:
    a, b = random_orders(5, 15, 35), random_orders(5, 15, 36)
    one = interleave(method, a, b, rng=37)
    two = interleave(method, a, b, rng=37)
    np.testing.assert_array_equal(one.shown, two.shown)
    batch = interleave(method, a, b, rng=[np.random.default_rng(50 + r) for r in range(5)])
    for r in range(5):
        single = interleave(method, a[r], b[r], rng=np.random.default_rng(50 + r))
        np.testing.assert_array_equal(batch.shown[r], single.shown)
    rel = np.random.default_rng(38).integers(0, 5, size=(5, 15))
    model = cascade_model("navigational")
    outs = compare(
        a, b, rel, model, method=method, rng=[np.random.default_rng(60 + r) for r in range(5)]
    )
    for r in range(5):
        assert outs[r] == compare(
            a[r], b[r], rel[r], model, method=method, rng=np.random.default_rng(60 + r)
        )


@pytest.mark.parametrize("method", METHODS)
def test_leading_axes_broadcast_and_one_d_gives_a_scalar(method: str) -> None:
    a = np.arange(8)
    b = random_orders(4, 8, 39).reshape(2, 2, 8)
    il = interleave(method, a, b, k=5, rng=40)
    assert il.shown.shape == (2, 2, 5)
    assert np.all(np.sort(il.shown, axis=-1)[..., 1:] != np.sort(il.shown, axis=-1)[..., :-1])
    out = il.outcome(np.zeros((2, 2, 5), bool))
    assert out.shape == (2, 2) and (out == 0).all()
    single = interleave(method, a, b[0, 0], k=5, rng=40)
    assert np.ndim(single.outcome(np.ones(5, bool))) == 0


# ---------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: team_draft_interleave([0, 1, 2], [0, 1, 2], k=0, rng=0), ValueError, "k .* >= 1"),
        (lambda: team_draft_interleave([0, 1, 2], [0, 1, 2], k=True, rng=0), ValueError, "k "),
        (
            lambda: balanced_interleave([0, 1, 1], [0, 1, 2], rng=0),
            ValueError,
            "order_a: .*not a permutation",
        ),
        (lambda: balanced_interleave([0, 1, 2], [0, 1, 3], rng=0), ValueError, "order_b: "),
        (lambda: balanced_interleave([0.0, 1.0], [0, 1], rng=0), TypeError, "order_a: "),
        (lambda: team_draft_interleave([0, 1, 2], [0, 1], rng=0), ValueError, "same items"),
        (
            lambda: team_draft_interleave(
                np.zeros((2, 3), int) + [0, 1, 2], np.zeros((3, 3), int) + [0, 1, 2], rng=0
            ),
            ValueError,
            "do not broadcast",
        ),
        (lambda: probabilistic_interleave([0, 1], [1, 0], tau=0.0, rng=0), ValueError, "tau"),
        (
            lambda: interleave("optimized", [0, 1], [1, 0], rng=0),
            ValueError,
            "unknown interleaving method 'optimized'",
        ),
        (
            lambda: team_draft_interleave([[0, 1]] * 2, [1, 0], rng=[np.random.default_rng(0)]),
            ValueError,
            "one row per Generator",
        ),
        (
            lambda: team_draft_interleave([0, 1], [1, 0], rng=0).outcome([1, 0]),
            TypeError,
            "clicks must be a bool",
        ),
        (
            lambda: balanced_interleave([0, 1, 2], [1, 0, 2], rng=0).outcome(np.ones(2, bool)),
            ValueError,
            "shape of the shown list",
        ),
        (
            lambda: compare([0, 1], [1, 0], [0, 1, 1], cascade_model("perfect"), rng=0),
            ValueError,
            "relevance must have shape",
        ),
        (
            lambda: compare([0, 1], [1, 0], [0, 7], cascade_model("perfect"), rng=0),
            ValueError,
            "grades must lie in",
        ),
    ],
)
def test_bad_input_raises_a_clear_error(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()


def test_result_types() -> None:
    assert isinstance(interleave("balanced", [0, 1], [1, 0], rng=0), BalancedInterleaving)


def test_team_draft_picks_follow_the_captains_rule() -> None:
    """Each position gets its team's best item not shown yet (a plain loop as reference)."""
    gen = np.random.default_rng(11)
    for _ in range(200):
        m, k = int(gen.integers(1, 25)), int(gen.integers(1, 14))
        a = np.stack([gen.permutation(m) for _ in range(4)])
        b = np.stack([gen.permutation(m) for _ in range(4)])
        il = team_draft_interleave(a, b, k=k, rng=int(gen.integers(1 << 30)))
        for r in range(4):
            shown: list[int] = []
            for team in il.team[r].tolist():
                src = a[r] if team == TEAM_A else b[r]
                shown.append(next(int(i) for i in src if int(i) not in shown))
            assert il.shown[r].tolist() == shown


@pytest.mark.parametrize(("n_runs", "m", "k"), [(1, 10, 10), (3, 7, 10), (4, 12, 5), (2, 1, 3)])
def test_team_draft_rows_is_team_draft_interleave_without_the_checks(
    n_runs: int, m: int, k: int
) -> None:
    rng = np.random.default_rng(m * 100 + k)
    for _ in range(20):
        a = np.argsort(rng.random((n_runs, m)), axis=1)
        b = np.argsort(rng.random((n_runs, m)), axis=1)
        seeds = rng.integers(0, 2**32, n_runs)
        checked = team_draft_interleave(a, b, k=k, rng=[np.random.default_rng(s) for s in seeds])
        gens = [np.random.default_rng(s) for s in seeds]
        rows = team_draft_rows(a, b, k, gens)
        assert np.array_equal(rows.shown, checked.shown)
        assert np.array_equal(rows.team, checked.team) and rows.team.dtype == checked.team.dtype
        # The same coins were drawn: each generator is where the checked call left its twin.
        twins = [np.random.default_rng(s) for s in seeds]
        team_draft_interleave(a, b, k=k, rng=twins)
        assert [g.random() for g in gens] == [g.random() for g in twins]
