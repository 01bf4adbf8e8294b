"""Exact exponential weights over all rankings: brute-force distribution, sampling, regret."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import ChoiceFeedback, FullFeedback
from oltr.learners.expweights import ExponentialWeights
from oltr.types import Context

ALPHA = 1e-3


def brute_force(
    perms: list[tuple[int, ...]], signals: list[np.ndarray], beta: float, loss
) -> np.ndarray:
    """P(π) ∝ exp(−β Σ_t loss(π, s_t)) over the listed rankings, by plain loops."""
    totals = np.array([sum(loss(p, s) for s in signals) for p in perms])
    weights = np.exp(-beta * (totals - totals.min()))
    return weights / weights.sum()


def linear_loss(order: tuple[int, ...], s: np.ndarray) -> float:
    """Eq. (2.1) with 0-based positions: Σ_u position(u) s(u)."""
    return float(sum(pos * s[u] for pos, u in enumerate(order)))


def pairwise_ll(order: tuple[int, ...], s: np.ndarray) -> float:
    """Eq. (2.2): Σ_{u≠v} [u before v] [s(v) − s(u)]₊."""
    return float(sum(max(s[v] - s[u], 0.0) for i, u in enumerate(order) for v in order[i + 1 :]))


def quadratic_loss(order: tuple[int, ...], s: np.ndarray) -> float:
    return float(sum(pos**2 * s[u] for pos, u in enumerate(order)))


def feed(lrn: ExponentialWeights, signals: list[np.ndarray], full: bool = False) -> None:
    for t, s in enumerate(signals, start=1):
        ctx = Context(t=t, n_items=s.size)
        orders = lrn.rank(ctx)
        rows = np.tile(s, (lrn.n_runs, 1))
        fb = FullFeedback(orders, rows) if full else ChoiceFeedback(orders, rows.astype(bool))
        lrn.update(ctx, orders, fb)


SETS = [[0, 2], [1], [3, 0], [2], [2, 3], [0]]


def choice_signals(n: int) -> list[np.ndarray]:
    out = []
    for chosen in SETS:
        s = np.zeros(n)
        s[chosen] = 1.0
        out.append(s)
    return out


@pytest.mark.parametrize(
    ("z", "loss"), [("linear", linear_loss), ("linear", pairwise_ll), ("quadratic", quadratic_loss)]
)
def test_distribution_is_exact(z: str, loss) -> None:
    """ℓℓ and ℓ differ by a function of s only (§2), so they give the same distribution."""
    n, beta = 4, 0.3
    lrn = ExponentialWeights(beta=beta, z=z, n_runs=2, rng=0)
    signals = choice_signals(n)
    feed(lrn, signals)
    perms = [tuple(int(i) for i in row) for row in lrn.orders_]
    assert perms == list(itertools.permutations(range(n)))
    want = brute_force(perms, signals, beta, loss)
    np.testing.assert_allclose(lrn.probabilities_, np.tile(want, (2, 1)), rtol=1e-12)


def test_distribution_for_ranking_signals() -> None:
    n, beta = 3, 0.2
    lrn = ExponentialWeights(beta=beta, signal="full", rng=0)
    signals = [np.array([2.0, 0.0, 1.0]), np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.0, 0.0])]
    feed(lrn, signals, full=True)
    perms = list(itertools.permutations(range(n)))
    np.testing.assert_allclose(
        lrn.probabilities_[0], brute_force(perms, signals, beta, pairwise_ll), rtol=1e-12
    )


def test_two_items_by_hand() -> None:
    lrn = ExponentialWeights(beta=math.log(3.0), rng=0)
    feed(lrn, [np.array([0.0, 1.0])])  # order (0, 1) loses 1, order (1, 0) loses 0
    np.testing.assert_allclose(lrn.probabilities_, [[0.25, 0.75]])


def test_samples_follow_the_distribution() -> None:
    n = 3
    lrn = ExponentialWeights(beta=0.5, n_runs=3000, rng=4)
    feed(lrn, [np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])])
    want = lrn.probabilities_[0]
    ctx = Context(t=4, n_items=n)
    orders = np.concatenate([lrn.rank(ctx) for _ in range(6)])  # 18 000 draws
    codes = orders @ np.array([9, 3, 1])
    table = lrn.orders_ @ np.array([9, 3, 1])
    got = np.array([(codes == c).sum() for c in table])
    assert stats.chisquare(got, want * got.sum()).pvalue > ALPHA


def test_default_rate_is_hedge() -> None:
    lrn = ExponentialWeights(horizon=100, rng=0)
    lrn.rank(Context(t=1, n_items=3))
    # single choice on 3 items: losses 0, 1, 2 -> range R = 2; N = 3! = 6 rankings
    assert lrn._beta == pytest.approx(math.sqrt(8 * math.log(6) / 100) / 2)


def test_more_than_eight_items_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"m <= 8; got m = 9 \(362880 rankings\)"):
        ExponentialWeights(beta=1.0, rng=0).rank(Context(t=1, n_items=9))


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"beta": 0.0}, "beta"),
        ({"z": "cubic"}, "z"),
        ({"signal": "duel"}, "signal"),
        ({"horizon": 0}, "horizon"),
        ({"n_chosen": 0}, "n_chosen"),
    ],
)
def test_invalid_parameters(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ExponentialWeights(**kw)


@pytest.mark.parametrize(
    ("env_params", "spread"),
    [
        ({"n_items": 5, "kind": "zipf"}, 4.0),
        ({"n_items": 5, "n_chosen": 2}, 6.0),
        ({"n_items": 5, "n_chosen": 2, "kind": "cyclic"}, 6.0),
    ],
)
def test_regret_stays_under_the_hedge_bound(env_params: dict, spread: float) -> None:
    horizon, n = 300, env_params["n_items"]
    spec = RunSetSpec(
        env="ailon-choice-v1",
        env_params=env_params,
        feedback="choice",
        feedback_params={},
        learner="expweights",
        learner_params={"n_chosen": env_params.get("n_chosen", 1)},
        reps=(0, 1, 2, 3),
        seed=5,
        horizon=horizon,
        measures=("pairwise",),
        checkpoints=(horizon,),
    )
    regret = run_set(spec)["pairwise:regret"].mean()
    assert regret <= spread * math.sqrt(horizon * math.lgamma(n + 1) / 2)
