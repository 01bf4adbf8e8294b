"""Ailon's adversaries and losses: distributions, obliviousness, loss identities, comparator."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from oltr.envs.choice import ChoiceEnv, RankAggregationEnv
from oltr.feedback import ChoiceFeedbackModel, FullFeedbackModel
from oltr.metrics import pairwise_loss, sum_loss
from oltr.metrics.aggregation import position_loss, position_weights, spearman_rho
from oltr.permutations import all_orders

ALPHA = 1e-3


def sequence(env, n_rounds: int, seed: int = 0) -> np.ndarray:
    env.reset(rng=seed)
    rows = []
    for t in range(1, n_rounds + 1):
        env.observe(t)
        rows.append(np.array(env._ground_truth()))
    return np.array(rows)


# ---------------------------------------------------------------------------
# choice adversaries


@pytest.mark.parametrize("kind", ["uniform", "zipf", "cyclic"])
@pytest.mark.parametrize("k", [1, 3])
def test_exactly_k_items_are_chosen(kind: str, k: int) -> None:
    seq = sequence(ChoiceEnv(n_items=7, n_chosen=k, kind=kind), 2500)
    assert set(np.unique(seq).tolist()) == {0, 1}
    assert (seq.sum(axis=1) == k).all()


def test_uniform_subsets_are_uniform() -> None:
    """Theorem 3.3's adversary: U_t uniform over the C(5, 2) = 10 subsets."""
    seq = sequence(ChoiceEnv(n_items=5, n_chosen=2), 10_000, seed=3)
    subsets = list(itertools.combinations(range(5), 2))
    codes = {s: i for i, s in enumerate(subsets)}
    counts = np.bincount([codes[tuple(np.flatnonzero(r))] for r in seq], minlength=len(subsets))
    assert stats.chisquare(counts).pvalue > ALPHA


def test_uniform_rounds_are_independent() -> None:
    """Single choice: the pair (u_t, u_{t+1}) is uniform on the n² pairs."""
    seq = sequence(ChoiceEnv(n_items=4), 8000, seed=8)
    u = seq.argmax(axis=1)
    counts = np.bincount(u[:-1:2] * 4 + u[1::2], minlength=16)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_zipf_popularity() -> None:
    """k = 1: item frequencies are ∝ 1/j^skew over some hidden item order."""
    n, skew, n_rounds = 5, 1.2, 20_000
    seq = sequence(ChoiceEnv(n_items=n, kind="zipf", skew=skew), n_rounds, seed=2)
    counts = seq.sum(axis=0)
    ranked = np.argsort(-counts)  # the hidden order, read off the counts
    p = 1.0 / np.arange(1, n + 1) ** skew
    assert stats.chisquare(counts[ranked], n_rounds * p / p.sum()).pvalue > ALPHA


def test_cyclic_is_a_round_robin() -> None:
    n, k = 6, 4  # lcm(6, 4) / 4 = 3 rounds per cycle of the items
    seq = sequence(ChoiceEnv(n_items=n, n_chosen=k, kind="cyclic"), 3 * 100)
    np.testing.assert_array_equal(seq.reshape(100, 3, n).sum(axis=1), np.full((100, n), 2))
    np.testing.assert_array_equal(seq[:3], seq[3:6])


@pytest.mark.parametrize(
    "cls,params",
    [(ChoiceEnv, {"n_items": 5, "kind": "zipf"}), (RankAggregationEnv, {"n_items": 5})],
)
def test_oblivious_the_sequence_ignores_the_rankings(cls, params: dict) -> None:
    """Two rollouts showing different rankings see the same hidden sequence."""
    model = ChoiceFeedbackModel() if cls is ChoiceEnv else FullFeedbackModel()
    seen = []
    for shown in (np.array([[0, 1, 2, 3, 4]]), np.array([[4, 3, 2, 1, 0]])):
        env = cls(**params, feedback=model)
        env.reset(rng=1)
        rows = []
        for t in range(1, 1500):  # crosses a block boundary
            env.observe(t)
            env.feedback(shown)
            rows.append(np.array(env._ground_truth()))
        seen.append(np.array(rows))
    np.testing.assert_array_equal(seen[0], seen[1])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"n_items": 1}, "n_items"),
        ({"n_items": 4, "n_chosen": 4}, "n_chosen"),
        ({"n_items": 4, "n_chosen": 0}, "n_chosen"),
        ({"n_items": 4, "kind": "adaptive"}, "kind"),
        ({"n_items": 4, "skew": 0.0}, "skew"),
    ],
)
def test_choice_env_rejects_bad_parameters(params: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ChoiceEnv(**params)


def test_choice_feedback_reveals_the_chosen_set() -> None:
    env = ChoiceEnv(n_items=5, n_chosen=2, feedback=ChoiceFeedbackModel())
    env.reset(rng=0)
    env.observe(1)
    fb = env.feedback(np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]))
    np.testing.assert_array_equal(fb.chosen, np.tile(env._ground_truth() == 1, (2, 1)))


# ---------------------------------------------------------------------------
# rank aggregation


def test_rank_aggregation_grades_are_rankings() -> None:
    seq = sequence(RankAggregationEnv(n_items=6), 2000)
    np.testing.assert_array_equal(np.sort(seq, axis=1), np.tile(np.arange(6), (2000, 1)))


def test_uniform_rankings_are_uniform() -> None:
    seq = sequence(RankAggregationEnv(n_items=3, kind="uniform"), 12_000, seed=6)
    codes = seq @ np.array([9, 3, 1])
    table = {int(c): i for i, c in enumerate(all_orders(3) @ np.array([9, 3, 1]))}
    counts = np.bincount([table[int(c)] for c in codes], minlength=6)
    assert stats.chisquare(counts).pvalue > ALPHA


def test_plackett_luce_rankings() -> None:
    """σ_t ~ PL with log-weight −c·j for the centre's j-th item; the centre is the mode."""
    c, n_rounds = 0.8, 20_000
    seq = sequence(RankAggregationEnv(n_items=3, concentration=c), n_rounds, seed=4)
    orders = np.argsort(-seq, axis=1)  # grade m−1 is σ's top item
    perms = list(itertools.permutations(range(3)))
    counts = np.array([(orders == np.array(p)).all(axis=1).sum() for p in perms])
    centre = perms[int(np.argmax(counts))]
    log_w = {item: -c * j for j, item in enumerate(centre)}

    def pl(order: tuple[int, ...]) -> float:
        p, rest = 1.0, list(order)
        for u in order:
            p *= math.exp(log_w[u]) / sum(math.exp(log_w[v]) for v in rest)
            rest.remove(u)
        return p

    want = np.array([pl(p) for p in perms])
    assert stats.chisquare(counts, n_rounds * want).pvalue > ALPHA


# ---------------------------------------------------------------------------
# losses


def test_position_loss_by_hand() -> None:
    # order (2, 0, 1): item 2 at position 1, item 0 at 2, item 1 at 3
    assert position_loss([1, 0, 1], [2, 0, 1]) == 0 * 1 + 1 * 1
    assert position_loss([1, 1, 0], [2, 0, 1], z="quadratic") == 1**2 + 2**2
    assert position_loss([0, 1, 0], [2, 0, 1], z="dcg") == pytest.approx(1 - 1 / math.log2(4))
    assert position_loss([0, 1, 0], [2, 0, 1], k=1) == 1.0  # position 3 charged as 2
    # mask: item 1 is padding, positions count real items only
    assert position_loss([0, 9, 1], [1, 0, 2], mask=[True, False, True]) == 1.0


def test_position_loss_identities() -> None:
    gen = np.random.default_rng(0)
    rel = gen.integers(0, 2, size=(50, 7))
    orders = np.stack([gen.permutation(7) for _ in range(50)])
    lin = position_loss(rel, orders)
    np.testing.assert_allclose(lin, sum_loss(rel, orders) - rel.sum(axis=1))  # eq. 2.1
    k = rel.sum(axis=1)
    np.testing.assert_allclose(lin - k * (k - 1) / 2, pairwise_loss(rel, orders))  # eq. 2.2
    single = np.eye(7, dtype=int)[gen.integers(0, 7, 50)]
    np.testing.assert_allclose(position_loss(single, orders), pairwise_loss(single, orders))


def test_position_weights_are_nondecreasing() -> None:
    for z in ("linear", "quadratic", "dcg"):
        assert (np.diff(position_weights(z, 10)) >= 0).all()


def test_spearman_rho_matches_scipy() -> None:
    """ρ(π, σ) = Σ π(u)σ(u) is affine in Spearman's coefficient 1 − 6Σd²/(n(n²−1))."""
    gen = np.random.default_rng(1)
    n = 8
    for _ in range(20):
        sigma = gen.permutation(n) + 1  # σ(u), from 1
        order = gen.permutation(n)
        pi = np.empty(n, int)
        pi[order] = np.arange(1, n + 1)
        rho = float(spearman_rho(n - sigma, order))
        assert rho == float(np.sum(pi * sigma))
        sq = n * (n + 1) * (2 * n + 1) / 6
        coef = 1 - 6 * (2 * sq - 2 * rho) / (n * (n * n - 1))
        assert coef == pytest.approx(stats.spearmanr(pi, sigma).statistic)
        # sumloss on the stored grades is m²(m+1)/2 − ρ (§5: same regret as −ρ)
        assert float(sum_loss(n - sigma, order)) == n * n * (n + 1) / 2 - rho


def test_spearman_rho_rejects_a_cutoff() -> None:
    with pytest.raises(ValueError, match="cutoff"):
        spearman_rho([1, 0], [0, 1], k=1)


def test_losses_validate_their_inputs() -> None:
    with pytest.raises(ValueError, match="permutation"):
        position_loss([1, 0, 0], [0, 0, 1])
    with pytest.raises(ValueError, match="z must be one of"):
        position_loss([1, 0], [0, 1], z="cubic")


# ---------------------------------------------------------------------------
# the comparator is the best fixed ranking, by enumeration


@pytest.mark.parametrize(
    "env,measure",
    [
        (ChoiceEnv(n_items=5, n_chosen=2, kind="zipf"), "pairwise"),
        (ChoiceEnv(n_items=5), "sumloss"),
        (RankAggregationEnv(n_items=5), "sumloss"),
    ],
)
def test_comparator_is_the_best_ranking_in_hindsight(env, measure: str) -> None:
    seq = sequence(env, 60, seed=9)
    best = env.comparator([measure], [10, 60])[measure]
    orders = all_orders(5)
    loss_of = sum_loss if measure == "sumloss" else pairwise_loss
    for i, t in enumerate((10, 60)):
        totals = sum(loss_of(row, orders) for row in seq[:t])
        assert best[i] == pytest.approx(totals.min())
