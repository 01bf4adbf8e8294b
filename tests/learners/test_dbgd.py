"""DBGD (Yue & Joachims 2009, Algorithm 1): Lemma 1, projections, schedules, batching, learning.

Statistical tests state their error rate ALPHA and use fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from oltr.data.synthetic import synthetic_letor
from oltr.envs.duels import ValueFunctionDuel
from oltr.experiments.heldout import heldout_ndcg
from oltr.feedback import DuelFeedbackModel
from oltr.learners.dbgd import (
    DBGD,
    DirectionStream,
    DuelingBanditGradientDescent,
    gradient_step,
    initial_weights,
    project,
    theorem2_schedule,
)
from oltr.learners.ranksvm import fit_ranksvm, pairwise_differences
from oltr.random import child_rng
from oltr.reproductions.synthetic_duels import run_parameter_duels, simulate_synthetic
from oltr.types import Context, RunGenerators

ALPHA = 1e-3


# ---------------------------------------------------------------------------
# projection and directions


def test_ball_projection_hand_values() -> None:
    # (3, 4) has norm 5: onto the ball of radius 1 it becomes (3, 4)/5; inside points stay.
    np.testing.assert_allclose(
        project([[3.0, 4.0], [0.3, 0.4]], "ball", 1.0), [[0.6, 0.8], [0.3, 0.4]]
    )
    np.testing.assert_allclose(project([0.3, 0.4], "sphere", 2.0), [1.2, 1.6])


def test_ball_projection_is_the_nearest_point() -> None:
    gen = np.random.default_rng(0)
    x = gen.normal(scale=3.0, size=(200, 4))
    p = project(x, "ball", 2.0)
    assert (np.linalg.norm(p, axis=1) <= 2.0 + 1e-12).all()
    np.testing.assert_allclose(project(p, "ball", 2.0), p)  # idempotent
    y = project(gen.normal(scale=3.0, size=(200, 4)), "ball", 2.0)  # other points of the ball
    assert (np.linalg.norm(x - p, axis=1) <= np.linalg.norm(x - y, axis=1) + 1e-12).all()


def test_directions_are_uniform_on_the_sphere() -> None:
    # Archimedes: one coordinate of a uniform point on the 2-sphere in R^3 is uniform on [-1, 1].
    stream = DirectionStream(RunGenerators.from_rng(4, 5), 3, block=100)
    u = np.concatenate([stream.next() for _ in range(400)])
    np.testing.assert_allclose(np.linalg.norm(u, axis=1), 1.0)
    assert stats.kstest(u[:, 0], stats.uniform(loc=-1, scale=2).cdf).pvalue > ALPHA


def test_theorem2_schedule_hand_values() -> None:
    # T = 10^4, d = 50, R = 10: T^{-1/4} = 0.1, √(0.4·10·50) = √200, γ = 10/100.
    delta, gamma = theorem2_schedule(10_000, 50, 10.0, delta_l=2.0)
    assert delta == pytest.approx(0.1 * 2.0 * np.sqrt(200.0))
    assert gamma == pytest.approx(0.1)
    # The learner counts update decisions: 300 rounds, 3 queries each -> T = 100.
    lrn = DBGD(delta=None, gamma=None, horizon=300, n_queries=3, space="ball", radius=4.0, dim=10)
    assert lrn.step_sizes_ == pytest.approx((100**-0.25 * np.sqrt(0.4 * 4 * 10), 4 / 10))


def test_initial_weights_follow_section_5_1() -> None:
    rngs = RunGenerators.from_rng(0, 2)
    w = initial_weights("ones", 50, "ball", 10.0, rngs)
    np.testing.assert_allclose(w, np.full((2, 50), np.sqrt(5 / 50)))  # w_1 = 1·√(5/d)
    np.testing.assert_allclose(
        np.linalg.norm(initial_weights("ones", 7, "sphere", 1.0, rngs), axis=1), 1.0
    )


# ---------------------------------------------------------------------------
# the update rule


def _pair(lrn: DBGD) -> tuple[np.ndarray, np.ndarray]:
    pts = lrn.propose()
    return pts[:, 0].copy(), pts[:, 1].copy()


def test_update_moves_by_gamma_u_only_when_the_candidate_wins() -> None:
    # Inside the ball nothing is projected: u = (w' − w)/δ and a win moves w by γu exactly.
    lrn = DBGD(delta=0.5, gamma=0.1, space="ball", radius=10.0, dim=4, n_runs=2, rng=1)
    w, wp = _pair(lrn)
    u = (wp - w) / 0.5
    lrn.learn(np.array([1, -1]))
    np.testing.assert_allclose(lrn.weights_[0], w[0] + 0.1 * u[0])
    np.testing.assert_array_equal(lrn.weights_[1], w[1])


def test_several_queries_per_decision_use_the_majority() -> None:
    lrn = DBGD(delta=0.5, gamma=0.1, space="ball", radius=10.0, dim=3, n_runs=3, n_queries=3, rng=2)
    w, wp = _pair(lrn)
    u = (wp - w) / 0.5
    for outcome in ([1, 1, 1], [-1, -1, 0], [1, 1, -1]):  # sums: run 0: 1, run 1: 1, run 2: 0
        np.testing.assert_array_equal(lrn.weights_, w)  # no move before the 3rd comparison
        np.testing.assert_array_equal(lrn.propose()[:, 1], wp)  # the same pair throughout
        lrn.learn(np.array(outcome))
    np.testing.assert_allclose(lrn.weights_[:2], w[:2] + 0.1 * u[:2])
    np.testing.assert_array_equal(lrn.weights_[2], w[2])  # a tie keeps w_t


def test_sphere_iterates_stay_on_the_sphere() -> None:
    lrn = DBGD(delta=1.0, gamma=0.3, dim=6, n_runs=5, rng=3)
    for _ in range(50):
        pts = lrn.propose()
        np.testing.assert_allclose(np.linalg.norm(pts, axis=-1), 1.0)
        lrn.learn(np.ones(5))


def test_lemma1_expected_update_direction() -> None:
    """E[X_t(P(w+δu)) u] = −E[c_t(P(w+δu)) u] (Lemma 1), with X_t the learner's own move.

    N runs start at the same w_1 on P1 (d = 4); each duels once. The learner's
    step (w_2 − w_1)/γ is X_t u. Paired with the same u, the per-run quantity
    X_t u + c_t u has mean 0 exactly when Lemma 1 holds; a z-test per coordinate
    (Bonferroni over d, total ALPHA). Power: E[c u] is far from 0 here, so a
    learner stepping on a loss instead, (1 − X) u, fails the test.
    """
    n, d, delta, gamma = 40_000, 4, 1.0, 1e-3
    env = ValueFunctionDuel("P1", dim=d, radius=10.0)
    lrn = DBGD(delta=delta, gamma=gamma, space="ball", radius=10.0, dim=d, n_runs=n, rng=11)
    w, wp = _pair(lrn)
    u = (wp - w) / delta  # no projection: ‖w + δu‖ <= √5 + 1
    p_first, _ = env.assess(lrn.propose())  # c_t(w') = P(w_t ≻ w'_t)
    coins = np.random.default_rng(12).random(n)
    lrn.learn(env.outcome(p_first, coins).astype(float))
    step = (lrn.weights_ - w) / gamma
    d_mean = (step + p_first[:, None] * u).mean(axis=0)
    d_se = (step + p_first[:, None] * u).std(axis=0, ddof=1) / np.sqrt(n)
    z = np.abs(d_mean / d_se)
    assert (z < stats.norm.ppf(1 - ALPHA / (2 * d))).all(), z
    # The expected step points towards w* = 0 (descent on ε_t): −E[c u]·w_1 < 0, clearly.
    along = (p_first[:, None] * u).mean(axis=0) @ w[0]
    assert along > 10 * np.abs(d_se).max()


# ---------------------------------------------------------------------------
# batching, seeding, sharing code with the fast simulation


def _letor_rollout(reps: tuple[int, ...], n_rounds: int = 60) -> np.ndarray:
    data = synthetic_letor(n_queries=20, n_features=5, rng=0)
    lrn = DBGD(
        delta=1.0,
        gamma=0.1,
        n_runs=len(reps),
        rng=RunGenerators.from_keys(7, "learner", "dbgd", reps=reps),
    )
    fb_rngs = RunGenerators.from_keys(7, "feedback", reps=reps)
    oracle = DuelFeedbackModel()
    q_rng = np.random.default_rng(5)
    for t in range(1, n_rounds + 1):
        x, r = data.query(int(q_rng.integers(data.n_queries)))
        ctx = Context(t=t, n_items=x.shape[0], features=x)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, oracle.observe(orders, r, rngs=fb_rngs))
    return np.array(lrn.weights_)


def test_batch_invariance_bit_for_bit() -> None:
    together = _letor_rollout((0, 1, 2))
    alone = _letor_rollout((1,))
    np.testing.assert_array_equal(together[1], alone[0])
    assert not np.array_equal(together[0], together[1])


def test_fast_simulation_equals_the_learner_loop() -> None:
    horizon, reps, seed = 400, (0, 3), 5
    fast = simulate_synthetic(
        "P5",
        delta_l=[0.8, 2.0],
        reps=reps,
        seed=seed,
        horizon=horizon,
        checkpoints=[100, 400],
        dim=6,
    )
    delta, gamma = theorem2_schedule(horizon, 6, 10.0, 2.0)
    lrn = DBGD(
        delta=delta,
        gamma=gamma,
        space="ball",
        radius=10.0,
        dim=6,
        n_runs=2,
        rng=RunGenerators.from_keys(seed, "learner", "dbgd", reps=reps),
    )
    slow = run_parameter_duels(
        ValueFunctionDuel("P5", dim=6),
        lrn,
        horizon=horizon,
        checkpoints=[100, 400],
        rngs=RunGenerators.from_keys(seed, "feedback", reps=reps),
    )
    np.testing.assert_array_equal(fast[1], slow)
    # A δ_L's rows do not depend on which other δ_L share the batch.
    np.testing.assert_array_equal(
        simulate_synthetic(
            "P5",
            delta_l=[2.0],
            reps=(3,),
            seed=seed,
            horizon=horizon,
            checkpoints=[100, 400],
            dim=6,
        )[0, 0],
        fast[1, 1],
    )


def test_same_seed_same_run_and_clone() -> None:
    a, b = _letor_rollout((0,)), _letor_rollout((0,))
    np.testing.assert_array_equal(a, b)
    lrn = DBGD(delta=0.3, n_runs=2, rng=9)
    assert lrn.clone().get_params() == lrn.get_params()


# ---------------------------------------------------------------------------
# learning sanity


def test_learns_on_p1() -> None:
    # Staying at w_1 costs ε(w*, w_1) per point: v(w_1) = −5, so 2(σ(5) − 1/2) per round.
    stay = 2 * (1 / (1 + np.exp(-5.0)) - 0.5)
    reg = simulate_synthetic(
        "P1",
        delta_l=[1.0],
        reps=range(3),
        seed=1,
        horizon=20_000,
        checkpoints=[1_000, 20_000],
        dim=10,
    )
    assert (reg[0, :, 1] < 0.6 * stay).all()
    assert (reg[0, :, 1] < reg[0, :, 0]).all()  # average regret falls with t


def test_learns_a_linear_ranker_from_the_web_search_oracle() -> None:
    data = synthetic_letor(n_queries=40, n_features=6, rng=3)
    w_start = initial_weights("ones", 6, "sphere", 1.0, RunGenerators.from_rng(0, 1))
    lrn = DBGD(delta=1.0, gamma=0.1, n_runs=3, rng=4)
    oracle, fb_rngs = DuelFeedbackModel(), RunGenerators.from_rng(5, 3)
    q_rng = np.random.default_rng(6)
    for t in range(1, 2001):
        x, r = data.query(int(q_rng.integers(data.n_queries)))
        ctx = Context(t=t, n_items=x.shape[0], features=x)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, oracle.observe(orders, r, rngs=fb_rngs))
    before = heldout_ndcg(w_start, data)[0]
    random_w = project(np.random.default_rng(8).normal(size=(50, 6)), "sphere", 1.0)
    assert (
        heldout_ndcg(lrn.weights_, data) > max(before, heldout_ndcg(random_w, data).mean()) + 0.02
    ).all()


def test_ranks_by_descending_score_w_first() -> None:
    lrn = DBGD(init=[1.0, 0.0], delta=0.1, n_runs=1, rng=0)
    x = np.array([[0.0, 5.0], [2.0, 0.0], [1.0, 1.0]])
    orders = lrn.rank(Context(t=1, n_items=3, features=x))
    assert orders.shape == (1, 2, 3)
    np.testing.assert_array_equal(orders[0, 0], [1, 2, 0])  # w_1 = e_1 scores 0, 2, 1


# ---------------------------------------------------------------------------
# RankSVM reference


def test_pairwise_differences_hand_values() -> None:
    from oltr.data.dataset import LetorDataset

    ds = LetorDataset(
        features=np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [2.0, 2.0]]),
        relevance=np.array([0, 2, 1, 1]),
        qids=np.array([1, 2]),
        offsets=np.array([0, 3, 4]),
    )
    # Query 1: doc 1 (grade 2) over docs 0 and 2, doc 2 (grade 1) over doc 0; query 2: no pair.
    got = {tuple(r) for r in pairwise_differences(ds).tolist()}
    assert got == {(-1.0, 1.0), (0.0, 1.0), (-1.0, 0.0)}


def test_ranksvm_recovers_a_separable_ranker() -> None:
    # Grades are a monotone function of the score x·w_true: the pairs are separable by w_true.
    from oltr.data.dataset import LetorDataset

    gen = np.random.default_rng(0)
    w_true = np.array([2.0, -1.0, 0.0, 0.5])
    x = gen.normal(size=(400, 4))
    rel = np.digitize(x @ w_true, [-1.0, 1.0])
    ds = LetorDataset(features=x, relevance=rel, qids=np.arange(20), offsets=np.arange(0, 401, 20))
    w = fit_ranksvm(ds, c=10.0)
    assert w @ w_true / np.linalg.norm(w_true) > 0.95
    assert heldout_ndcg(w[None], ds)[0] == pytest.approx(
        heldout_ndcg(w_true[None], ds)[0], abs=0.02
    )


# ---------------------------------------------------------------------------
# invalid input


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"delta": 0.0}, ValueError, "delta must be > 0"),
        ({"gamma": -1.0}, ValueError, "gamma must be > 0"),
        ({"space": "cube"}, ValueError, "space must be one of"),
        ({"init": "zeros"}, ValueError, "not on the sphere"),
        ({"n_queries": 0}, ValueError, "n_queries must be >= 1"),
        ({"radius": float("nan")}, ValueError, "radius must be finite"),
        ({"init": "middle"}, ValueError, "init must be one of"),
    ],
)
def test_invalid_parameters(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        DuelingBanditGradientDescent(**kwargs)


def test_invalid_calls() -> None:
    lrn = DBGD(n_runs=2, rng=0)
    with pytest.raises(ValueError, match="no features"):
        lrn.rank(Context(t=1, n_items=3))
    lrn.rank(Context(t=1, n_items=2, features=np.eye(2)))
    with pytest.raises(ValueError, match="3 features"):
        lrn.rank(Context(t=2, n_items=2, features=np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"outcome must have shape \(2,\)"):
        lrn.learn(np.ones(3))
    with pytest.raises(ValueError, match="init must have 3 entries"):
        DBGD(init=[1.0, 2.0], dim=3)


def test_gradient_step_keeps_losers_exactly() -> None:
    w = np.array([[0.1, 0.2], [0.3, 0.4]])
    u = np.array([[1.0, 0.0], [0.0, 1.0]])
    out = gradient_step(w, u, np.array([0.0, 1.0]), 0.5, "ball", 10.0)
    np.testing.assert_array_equal(out[0], w[0])
    np.testing.assert_allclose(out[1], [0.3, 0.9])


def test_child_rng_keys_match_the_runner() -> None:
    # The simulation keys a repetition's directions like the runner keys learners.
    g = RunGenerators.from_keys(3, "learner", "dbgd", reps=(2,))[0]
    assert g.random() == child_rng(3, "learner", "dbgd", 2).random()


def test_per_run_step_sizes_equal_separate_runs() -> None:
    # A grid advanced as one batch: run b with (δ_b, γ_b) equals a lone run with those values.
    reps = (0, 1)
    grid = DBGD(
        delta=[0.2, 0.7],
        gamma=[0.05, 0.3],
        space="ball",
        radius=3.0,
        dim=4,
        n_runs=2,
        rng=RunGenerators.from_keys(1, "learner", "dbgd", reps=reps),
    )
    lone = DBGD(
        delta=0.7,
        gamma=0.3,
        space="ball",
        radius=3.0,
        dim=4,
        n_runs=1,
        rng=RunGenerators.from_keys(1, "learner", "dbgd", reps=(1,)),
    )
    outcomes = np.random.default_rng(0).choice([-1, 1], size=(30, 2))
    for out in outcomes:
        grid.learn(out)
        lone.learn(out[1:])
    np.testing.assert_array_equal(grid.weights_[1], lone.weights_[0])
    with pytest.raises(ValueError, match="one value per run"):
        DBGD(delta=[0.1, 0.2, 0.3], n_runs=2)


def test_without_horizon_the_schedule_is_theorem2_with_the_decision_count() -> None:
    # Anytime: the pair of update decision t is drawn with (δ, γ) = the §5.1 / Theorem 2
    # schedule for T = t (two comparisons per decision here), and fixed values stay fixed.
    dbgd = DBGD(delta=None, gamma=None, space="ball", radius=2.0, n_queries=2, dim=3, rng=0)
    fixed = DBGD(delta=0.5, gamma=None, space="ball", radius=2.0, dim=3, rng=0)
    for t in range(1, 30):
        assert dbgd.step_sizes_ == theorem2_schedule(t, 3, 2.0, 1.0)
        assert fixed.step_sizes_ == (0.5, theorem2_schedule(t, 3, 2.0, 1.0)[1])
        dbgd.learn(np.array([1.0]))
        dbgd.learn(np.array([1.0]))
        fixed.learn(np.array([-1.0]))
