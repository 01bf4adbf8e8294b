"""BGD1 and BGD2 (Yue & Joachims 2009 §5.1; Flaxman et al. 2005): updates, expectations, sharing."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from oltr.envs.duels import ValueFunctionDuel
from oltr.learners.bgd import BanditGradientDescent
from oltr.learners.dbgd import theorem2_schedule
from oltr.reproductions.synthetic_duels import run_parameter_duels, simulate_synthetic
from oltr.types import RunGenerators

ALPHA = 1e-3


def _step(variant: str, p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    bgd = BanditGradientDescent(variant=variant, dim=3, delta=0.5, gamma=0.2, n_runs=p.size, rng=1)
    pts = bgd.propose()
    w, u = pts[:, 0].copy(), (pts[:, 1] - pts[:, 0]) / 0.5  # inside the ball: no projection
    bgd.learn(p)
    return w, u, bgd.weights_


def test_bgd1_steps_minus_gamma_c_u() -> None:
    p = np.array([0.9, 0.2])
    w, u, w_new = _step("bgd1", p)
    np.testing.assert_allclose(w_new, w - 0.2 * p[:, None] * u)


def test_bgd2_steps_on_epsilon() -> None:
    # ε_t = c_t − 1/2: c = 0.5 leaves w in place, c = 0.1 moves by +0.4 γ u.
    p = np.array([0.5, 0.1])
    w, u, w_new = _step("bgd2", p)
    np.testing.assert_allclose(w_new, w - 0.2 * (p - 0.5)[:, None] * u)
    np.testing.assert_array_equal(w_new[0], w[0])


def test_bgd1_and_bgd2_have_the_same_expected_step() -> None:
    """E[(1/2 − c) u] − E[−c u] = E[u]/2 = 0: the two baselines descend the same direction.

    N runs share w_1 on P1; the paired difference of their steps is tested per
    coordinate with a z-test (Bonferroni over d, total ALPHA).
    """
    n, d = 20_000, 5
    env = ValueFunctionDuel("P1", dim=d)
    steps = []
    for variant in ("bgd1", "bgd2"):
        bgd = BanditGradientDescent(variant=variant, dim=d, delta=1.0, gamma=1e-3, n_runs=n, rng=3)
        w = bgd.weights_
        p_first, _ = env.assess(bgd.propose())
        bgd.learn(p_first)
        steps.append((bgd.weights_ - w) / 1e-3)
    diff = steps[1] - steps[0]
    z = np.abs(diff.mean(0) / (diff.std(0, ddof=1) / np.sqrt(n)))
    assert (z < stats.norm.ppf(1 - ALPHA / (2 * d))).all(), z
    # ...and that direction is a descent direction of v towards w* = 0.
    assert (steps[0].mean(0) @ w[0]) < 0


@pytest.mark.parametrize("method", ["bgd1", "bgd2"])
def test_fast_simulation_equals_the_learner_loop(method: str) -> None:
    horizon, reps = 300, (1, 4)
    fast = simulate_synthetic(
        "P3",
        method=method,
        delta_l=[1.0],
        reps=reps,
        seed=2,
        horizon=horizon,
        checkpoints=[50, 300],
        dim=8,
    )
    delta, gamma = theorem2_schedule(horizon, 8, 10.0, 1.0)
    bgd = BanditGradientDescent(
        variant=method,
        dim=8,
        delta=delta,
        gamma=gamma,
        n_runs=2,
        rng=RunGenerators.from_keys(2, "learner", method, reps=reps),
    )
    slow = run_parameter_duels(
        ValueFunctionDuel("P3", dim=8),
        bgd,
        horizon=horizon,
        checkpoints=[50, 300],
        rngs=RunGenerators.from_rng(0, 2),
    )
    np.testing.assert_array_equal(fast[0], slow)


@pytest.mark.parametrize("method", ["bgd1", "bgd2"])
def test_learns_on_p1(method: str) -> None:
    stay = 2 * (1 / (1 + np.exp(-5.0)) - 0.5)  # regret of never leaving w_1
    reg = simulate_synthetic(
        "P1", method=method, delta_l=[1.0], reps=range(2), seed=0, horizon=20_000, dim=10
    )
    assert (reg[0, :, -1] < 0.6 * stay).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"variant": "bgd3"}, "variant must be one of"),
        ({"dim": 0}, "dim must be >= 1"),
        ({"delta": -1.0, "gamma": 0.1}, "delta must be > 0"),
    ],
)
def test_invalid_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BanditGradientDescent(**kwargs)


def test_without_horizon_the_schedule_is_theorem2_with_t_for_t() -> None:
    # Anytime: the pair on offer at round t was drawn with (δ, γ) = the schedule for T = t,
    # and the step after round t uses that round's γ.
    bgd = BanditGradientDescent(dim=4, radius=2.0, n_runs=2, rng=0)
    for t in range(1, 50):
        assert (bgd._delta, bgd._gamma) == theorem2_schedule(t, 4, 2.0, 1.0)
        w, w_prime = bgd.propose()[0]
        assert np.linalg.norm(w_prime - w) <= bgd._delta * (1 + 1e-12)
        bgd.learn(np.array([0.5, 0.5]))


def test_without_horizon_bgd_learns_on_p1() -> None:
    # The anytime schedule must still learn: after 20,000 rounds on P1 the average regret of
    # both runs is below 0.6 of never leaving w_1 (as the horizon schedule in the test above).
    stay = 2 * (1 / (1 + np.exp(-5.0)) - 0.5)
    env = ValueFunctionDuel("P1", dim=10)
    bgd = BanditGradientDescent(variant="bgd2", dim=10, n_runs=2, rng=0)
    reg = run_parameter_duels(
        env, bgd, horizon=20_000, checkpoints=[20_000], rngs=RunGenerators.from_rng(1, 2)
    )
    assert (reg[:, -1] < 0.6 * stay).all(), reg


def test_learn_rejects_non_probabilities() -> None:
    bgd = BanditGradientDescent(dim=2, delta=0.1, gamma=0.1, n_runs=2, rng=0)
    with pytest.raises(ValueError, match="probabilities"):
        bgd.learn(np.array([0.5, 1.5]))
