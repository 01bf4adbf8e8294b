"""Value functions and comparison oracles of Yue & Joachims (2009) §3, §5."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from oltr.envs.valuefns import (
    SYNTHETIC_PROBLEMS,
    SyntheticProblem,
    logistic,
    maximize_on_ball,
    project_to_ball,
    synthetic_problem,
    v1,
    v2_l1,
    v2_l2,
    v3,
    v4,
    v5,
)
from oltr.envs.websearch import web_search_duel, web_search_ndcg, web_search_preference

#: Error rate of each statistical test (seeds are fixed, so each test is deterministic).
ALPHA = 1e-3


def uniform_in_ball(n: int, dim: int, radius: float, seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    x = g.standard_normal((n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x * radius * g.random((n, 1)) ** (1 / dim)


# ---------------------------------------------------------------------------
# the functions themselves


def test_value_functions_by_hand() -> None:
    w = np.array([1.0, -2.0, 3.0, -1.0, 2.0, -3.0])  # coordinates 1..6 as in the paper
    assert v1(w) == -(1 + 4 + 9 + 1 + 4 + 9)
    assert v2_l2(w) == pytest.approx(-math.sqrt(28))
    assert v2_l1(w) == -12
    # odd coordinates 1, 3, 5 hold 1, 3, 2 (squared); even 2, 4, 6 hold -2, -1, -3 (abs).
    assert v3(w) == -(1 + 9 + 4) - (2 + 1 + 3)
    assert v4(w) == pytest.approx(-sum(math.exp(x) + math.exp(-x) for x in w))
    # i % 3 == 1: i = 1, 4 -> e^{[1]+} + e^{[-1]+} = e + 1;
    # i % 3 == 2: i = 2, 5 -> e^{[2]+} + e^{[-2]+} = e^2 + 1.
    assert v5(w) == pytest.approx(-20 - (math.e + 1) - (math.e**2 + 1))


def test_value_functions_are_batched() -> None:
    w = uniform_in_ball(12, 7, 3.0, 0).reshape(3, 4, 7)
    for fn in (v1, v2_l1, v2_l2, v3, v4, v5):
        out = fn(w)
        assert out.shape == (3, 4)
        np.testing.assert_allclose(out[1, 2], fn(w[1, 2]), rtol=1e-14)


@pytest.mark.parametrize("name", SYNTHETIC_PROBLEMS)
def test_w_star_is_optimal_on_the_ball(name: str) -> None:
    p = synthetic_problem(name)
    assert p.dim == 50 and p.radius == 10.0
    best = p.best_value
    # Better than every point of a large sample of the ball ...
    assert (p.value(uniform_in_ball(20_000, 50, 10.0, 1)) < best).all()
    # ... and than small moves in every signed coordinate direction and random directions
    # (a local check that also covers the kinks of |w| and e^{[w]+}).
    dirs = np.concatenate([np.eye(50), -np.eye(50), uniform_in_ball(200, 50, 1.0, 2)])
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    for h in (1e-6, 1e-3, 1.0):
        assert (p.value(p.optimum + h * dirs) < best).all()


@pytest.mark.parametrize("fn", [v1, v4])
def test_smooth_value_functions_have_zero_gradient_at_w_star(fn) -> None:
    p = SyntheticProblem(fn, optimum=np.zeros(50))
    h = 1e-5
    grad = (fn(p.optimum + h * np.eye(50)) - fn(p.optimum - h * np.eye(50))) / (2 * h)
    np.testing.assert_allclose(grad, 0.0, atol=1e-6)


@pytest.mark.parametrize("fn", [v1, v4])
def test_the_numerical_optimum_agrees_with_the_analytic_one(fn) -> None:
    numeric = SyntheticProblem(fn, dim=20, radius=10.0)  # no optimum given: SLSQP
    np.testing.assert_allclose(numeric.optimum, 0.0, atol=1e-5)


def test_numerical_optimum_on_the_boundary_satisfies_kkt() -> None:
    # v(w) = −‖w − c‖² with ‖c‖ = 25 > R: w* = R c / ‖c‖, and ∇v(w*) = λ w* with λ > 0.
    c = np.array([15.0, -20.0, 0.0, 0.0])
    p = SyntheticProblem(lambda w: -np.sum((w - c) ** 2, axis=-1), dim=4, radius=10.0)
    np.testing.assert_allclose(p.optimum, [6.0, -8.0, 0.0, 0.0], atol=1e-6)
    grad = -2 * (p.optimum - c)
    lam = grad @ p.optimum / (p.optimum @ p.optimum)
    assert lam > 0
    np.testing.assert_allclose(grad, lam * p.optimum, atol=1e-5)


def test_numerical_optimum_inside_the_ball_of_a_non_separable_function() -> None:
    q = np.array([[2.0, 0.9, 0.0], [0.9, 1.0, 0.3], [0.0, 0.3, 0.5]])
    c = np.array([1.0, -2.0, 3.0])
    w = maximize_on_ball(lambda w: -(w - c) @ q @ (w - c), 3, 10.0)
    np.testing.assert_allclose(w, c, atol=1e-5)


def test_projection_onto_the_ball() -> None:
    np.testing.assert_allclose(
        project_to_ball([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], 1.0),
        [[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]],
    )


# ---------------------------------------------------------------------------
# link, symmetry, regret


def test_logistic_link_identity_by_hand() -> None:
    p = synthetic_problem("P1", dim=3)
    w, w_prime = np.array([1.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])
    # v(w) − v(w') = −1 − (−4) = 3.
    assert p.preference(w, w_prime) == pytest.approx(1 / (1 + math.exp(-3)), rel=1e-14)
    assert p.epsilon(w, w_prime) == pytest.approx(1 / (1 + math.exp(-3)) - 0.5, rel=1e-14)
    assert logistic(0.0) == 0.5


@pytest.mark.parametrize("name", SYNTHETIC_PROBLEMS)
def test_preferences_are_symmetric_and_regret_is_eq_2(name: str) -> None:
    p = synthetic_problem(name)
    w, w_prime = uniform_in_ball(500, 50, 2.0, 3), uniform_in_ball(500, 50, 2.0, 4)
    np.testing.assert_allclose(p.preference(w, w_prime) + p.preference(w_prime, w), 1.0, atol=1e-14)
    np.testing.assert_allclose(p.epsilon(w, w_prime), -p.epsilon(w_prime, w), atol=1e-14)
    regret = p.regret(w, w_prime)
    star = np.zeros(50)
    direct = (
        1 / (1 + np.exp(-(p.value(star) - p.value(w))))
        - 0.5
        + 1 / (1 + np.exp(-(p.value(star) - p.value(w_prime))))
        - 0.5
    )
    np.testing.assert_allclose(regret, direct, atol=1e-12)
    assert (regret >= 0).all() and (regret <= 1).all()
    assert p.regret(p.optimum, p.optimum) == 0.0


@pytest.mark.parametrize("name", SYNTHETIC_PROBLEMS)
def test_the_regret_of_a_random_point_is_about_one(name: str) -> None:
    # §5.1: "the regret of a random point is about 1".
    p = synthetic_problem(name)
    w, w_prime = uniform_in_ball(2000, 50, 10.0, 5), uniform_in_ball(2000, 50, 10.0, 6)
    assert p.regret(w, w_prime).mean() > 0.99


def test_initial_point_is_one_times_root_five_over_d() -> None:
    p = synthetic_problem("P3")
    np.testing.assert_allclose(p.initial_point, np.full(50, math.sqrt(0.1)))
    assert np.linalg.norm(p.initial_point) == pytest.approx(math.sqrt(5))


def test_duel_outcomes_follow_the_preference() -> None:
    p = synthetic_problem("P1", dim=2)
    w, w_prime = np.array([1.0, 0.0]), np.array([0.5, 0.0])
    n = 40_000
    out = p.duel(np.tile(w, (n, 1)), w_prime, rng=7)
    assert set(np.unique(out)) == {-1, 1}
    p_second = 1 - 1 / (1 + math.exp(-(-1 + 0.25)))  # P(w' ≻ w) = σ(0.75)
    assert stats.binomtest(int((out == 1).sum()), n, p_second).pvalue > ALPHA


def test_duel_seeding_per_row() -> None:
    p = synthetic_problem("P5")
    w, w_prime = uniform_in_ball(6, 50, 1.0, 8), uniform_in_ball(6, 50, 1.0, 9)
    batch = p.duel(w, w_prime, [np.random.default_rng(r) for r in range(6)])
    for r in range(6):
        assert batch[r] == p.duel(w[r], w_prime[r], np.random.default_rng(r))
    np.testing.assert_array_equal(p.duel(w, w_prime, 3), p.duel(w, w_prime, 3))


# ---------------------------------------------------------------------------
# web search oracle (§5.2)


X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
R = np.array([2, 0, 1])


def test_web_search_ndcg_by_hand() -> None:
    # w = (1, 0): scores (1, 0, 0.5) -> order 0, 2, 1: ideal, NDCG 1.
    # w' = (0, 1): scores (0, 1, 0.5) -> order 1, 2, 0: gains 0, 1, 3 at positions 1..3.
    ideal = 3 / math.log2(2) + 1 / math.log2(3)
    got = 0 / math.log2(2) + 1 / math.log2(3) + 3 / math.log2(4)
    values = web_search_ndcg(X, R, np.array([[1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_allclose(values, [1.0, got / ideal], rtol=1e-12)
    p = web_search_preference(X, R, [1.0, 0.0], [0.0, 1.0])
    assert p == pytest.approx(1 / (1 + math.exp(-10 * (1 - got / ideal))), rel=1e-12)
    assert web_search_preference(X, R, [0.0, 1.0], [1.0, 0.0]) == pytest.approx(1 - p)


def test_web_search_cutoff_and_ties() -> None:
    # k = 1: only the top document counts; w = 0 ties everything -> document 0 first.
    assert web_search_ndcg(X, R, [0.0, 0.0], k=1) == 1.0
    assert web_search_ndcg(X, R, [-1.0, 1.0], k=1) == 0.0


def test_web_search_padding_sorts_last() -> None:
    xp = np.vstack([X, [[100.0, 100.0]]])  # a padded document with huge scores
    mask = np.array([True, True, True, False])
    rp = np.array([2, 0, 1, 0])
    np.testing.assert_allclose(
        web_search_ndcg(xp, rp, [0.0, 1.0], mask=mask), web_search_ndcg(X, R, [0.0, 1.0])
    )


def test_web_search_duel_frequency() -> None:
    n = 20_000
    w = np.tile([0.0, 1.0], (n, 1))
    p = web_search_preference(X, R, [0.0, 1.0], [1.0, 0.0])
    out = web_search_duel(X, R, w, [1.0, 0.0], rng=10)
    assert stats.binomtest(int((out == 1).sum()), n, 1 - p).pvalue > ALPHA


# ---------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: synthetic_problem("P6"), ValueError, "unknown synthetic problem 'P6'"),
        (lambda: synthetic_problem("P1", dim=0), ValueError, "dim must be"),
        (lambda: synthetic_problem("P1", radius=-1.0), ValueError, "radius must be"),
        (
            lambda: synthetic_problem("P1").preference(np.zeros(3), np.zeros(50)),
            ValueError,
            r"w must have shape \(\.\.\., 50\)",
        ),
        (
            lambda: synthetic_problem("P1").regret(np.zeros(50), np.full(50, np.nan)),
            ValueError,
            "w_prime must be finite",
        ),
        (lambda: SyntheticProblem(v1, dim=3, optimum=np.zeros(2)), ValueError, "optimum must"),
        (
            lambda: SyntheticProblem(v1, dim=2, optimum=np.array([20.0, 0.0])),
            ValueError,
            "in the ball",
        ),
        (lambda: web_search_ndcg(X, R, [1.0, 0.0, 0.0]), ValueError, r"w must have shape"),
        (lambda: web_search_ndcg(X[0], R, [1.0, 0.0]), ValueError, "features must have shape"),
        (lambda: web_search_ndcg(X, R, [np.inf, 0.0]), ValueError, "w must be finite"),
    ],
)
def test_bad_input_raises_a_clear_error(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call()
