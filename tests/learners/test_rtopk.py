"""RTop-kF (CT16 Algorithm 1): hand-computed steps, projection, batching, learning, limits."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from oltr.envs.stream import LetorStreamEnv
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import FullFeedback, TopKFeedback, TopKFeedbackModel
from oltr.learners.linear import batch_scores, batch_step, own_order, project_rows
from oltr.learners.rtopk import RTopKF, trusted_estimate
from oltr.surrogates import make_surrogate
from oltr.types import Context, RunGenerators

ALPHA = 1e-3
# Features of a 3-document list, d = 2 (rows are documents).
X = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
TINY = 1e-12  # an exploration rate that never explores in one round (P = 1e-12)


def one_step(
    surrogate: str,
    labels: list[float],
    *,
    gamma: float = TINY,
    eta: float = 0.5,
    radius: float = math.inf,
    **kw: float,
) -> tuple[np.ndarray, np.ndarray]:
    """One round from w = 0: (shown order, weights after the update)."""
    lrn = RTopKF(surrogate=surrogate, eta=eta, gamma=gamma, radius=radius, rng=0, **kw)
    ctx = Context(t=1, n_items=3, features=X)
    orders = lrn.rank(ctx)
    lrn.update(ctx, orders, TopKFeedback(orders, np.array([labels])))
    return orders[0], np.array(lrn.weights_[0])


# ----------------------------------------------------------------- hand-computed steps


def test_squared_step_by_hand() -> None:
    # w = 0: s = 0, own order (0, 1, 2); item 0 shown on top with grade 2, p ≈ 1,
    # z = 2(s - 2 e_0 / p) = (-4, 0, 0); w = -η zᵀX = 0.5 · 4 · X[0] = 2 X[0].
    order, w = one_step("squared", [2.0])
    assert order.tolist() == [0, 1, 2]
    np.testing.assert_allclose(w, 2.0 * X[0], rtol=1e-9)


def test_squared_step_when_exploring_by_hand() -> None:
    # γ = 1: a uniform order; its top item t has p = 1/3, z = -2 · 3 R e_t, w = 0.5 · 6 R X[t].
    order, w = one_step("squared", [1.0], gamma=1.0)
    np.testing.assert_allclose(w, 3.0 * X[order[0]], rtol=1e-9)


def test_ranksvm_step_by_hand() -> None:
    # Top pair (0, 1) with grades (0, 2): R_1 > R_0 and 1 + s_0 - s_1 = 1 > 0, so the pair
    # contributes e_0 - e_1; denominator ≈ 1. w = -η (e_0 - e_1)ᵀ X = η (X[1] - X[0]).
    order, w = one_step("ranksvm", [0.0, 2.0], eta=0.25)
    assert order.tolist() == [0, 1, 2]
    np.testing.assert_allclose(w, 0.25 * (X[1] - X[0]), rtol=1e-9)


def test_kl_step_by_hand() -> None:
    # ∇ = (e^0 - e^1) e_0 / p, p ≈ 1: w = -η (1 - e) X[0].
    _, w = one_step("kl", [1.0], eta=0.1)
    np.testing.assert_allclose(w, 0.1 * (math.e - 1.0) * X[0], rtol=1e-9)


def test_smoothdcg_step_ascends_by_hand() -> None:
    # ε = 1, s = 0: q = 1/3; top item 0 with G(1) = 1: ∇φ = (1/3)(e_0 - q), a gain, so the
    # step goes up it: w = +η (1/3)(e_0 - q)ᵀ X.
    _, w = one_step("smoothdcg", [1.0], eps=1.0)
    q = np.full(3, 1.0 / 3.0)
    expected = 0.5 * (1.0 / 3.0) * ((np.array([1.0, 0, 0]) - q) @ X)
    np.testing.assert_allclose(w, expected, rtol=1e-9)


def test_step_is_projected_onto_the_ball() -> None:
    _, w = one_step("squared", [2.0], radius=1.0)  # unprojected: 2 X[0], norm 2√5
    np.testing.assert_allclose(w, X[0] / np.linalg.norm(X[0]), rtol=1e-9)


def test_project_rows_by_hand() -> None:
    w = np.array([[3.0, 4.0], [0.0, 0.5], [0.0, 0.0]])
    project_rows(w, 2.5)
    np.testing.assert_allclose(w, [[1.5, 2.0], [0.0, 0.5], [0.0, 0.0]])
    big = np.array([[1e200, 1e200]])
    np.testing.assert_allclose(np.linalg.norm(project_rows(big, 1.0)), 1.0)


@pytest.mark.parametrize("surrogate", ["squared", "ranksvm", "kl", "smoothdcg"])
@pytest.mark.parametrize("m", [1, 2, 7])
def test_trusted_estimate_equals_the_public_estimator(surrogate: str, m: int) -> None:
    # The learner's unvalidated fast path must be the surrogates' estimate_descent_grad,
    # for own and explored orders (rows alternate) and for lists no longer than k.
    sur = make_surrogate(surrogate)
    gen = np.random.default_rng(m)
    scores = gen.standard_normal((6, m))
    own = own_order(scores)
    orders = np.array([own[b] if b % 2 else gen.permutation(m) for b in range(6)])
    k = min(sur.min_k, m)
    labels = np.take_along_axis(gen.integers(0, 4, (6, m)), orders, axis=1)[:, :k]
    want = sur.estimate_descent_grad(scores, orders, labels, 0.3, exploit_order=own)
    np.testing.assert_array_equal(trusted_estimate(sur, scores, orders, labels, 0.3, own), want)
    # ... and so must the estimate written into a reused buffer, and a compiled estimator
    into = np.full((6, m), np.nan)
    sur.trusted_descent_estimate_into(scores, orders, labels.astype(float), 0.3, own, into)
    np.testing.assert_array_equal(into, want)
    estimator = sur.trusted_estimator(m) if m > k else None
    assert (estimator is not None) == (m > k and surrogate in ("squared", "ranksvm"))
    if estimator is not None:  # the gradient's estimate: the descent direction of a loss
        into[...] = np.nan
        estimator(scores, orders, labels.astype(float), 0.3, own, into)
        np.testing.assert_array_equal(into, want if sur.kind == "loss" else -want)


# ------------------------------------------------------------------ defaults, validation


def test_paper_setting_by_name_and_anytime_defaults() -> None:
    lrn = RTopKF(eta="paper", gamma="paper", horizon=1000)
    assert lrn.eta_ == pytest.approx(0.01)  # T^(-2/3)
    assert lrn.gamma_at(1) == lrn.gamma_at(999) == pytest.approx(0.1)  # T^(-1/3)
    assert lrn.radius == 1.0 and lrn.eps == "auto"  # §6 fixes ε = 0.01: eps=0.01 by name
    default = RTopKF()  # no horizon needed: adaptive eta, anytime gamma
    assert default.eta == "adaptive" and np.isnan(default.eta_)
    assert [default.gamma_at(t) for t in (1, 8, 1000)] == pytest.approx([0.5, 0.5, 0.1])
    assert default.report == "average"
    assert {
        s: RTopKF(surrogate=s, horizon=8).requires.k
        for s in ("squared", "ranksvm", "kl", "smoothdcg")
    } == {"squared": 1, "ranksvm": 2, "kl": 1, "smoothdcg": 1}


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"surrogate": "listnet", "horizon": 10}, ValueError, "surrogate must be one of"),
        ({"surrogate": "hinge", "horizon": 10}, ValueError, "surrogate must be one of"),
        ({"eta": 0.0, "gamma": 0.1}, ValueError, "eta must be > 0"),
        ({"eta": 0.1, "gamma": 1.5}, ValueError, "gamma must be <= 1"),
        ({"eta": 0.1, "gamma": 0.0}, ValueError, "gamma must be > 0"),
        ({"horizon": 10, "radius": -1.0}, ValueError, "radius must be > 0"),
        ({"horizon": 10, "eps": 0.0}, ValueError, "eps must be > 0"),
        ({"horizon": 0}, ValueError, "horizon must be >= 1"),
        ({"horizon": 10, "eta": "0.1"}, ValueError, "eta must be one of 'adaptive', 'paper'"),
    ],
)
def test_bad_parameters(kwargs: dict, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        RTopKF(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eta": "paper"}, "eta defaults to T"),
        ({"eta": 0.1, "gamma": "paper"}, "gamma defaults to T"),
        ({"gamma": 0.1, "eta": "paper"}, "eta defaults to T"),
    ],
)
def test_the_paper_setting_needs_the_horizon_before_the_first_round(
    kwargs: dict, match: str
) -> None:
    lrn = RTopKF(**kwargs)  # buildable (configs are checked without T) ...
    with pytest.raises(ValueError, match=match):  # ... but cannot start
        lrn.rank(Context(t=1, n_items=3, features=X))


def test_bad_contexts() -> None:
    lrn = RTopKF(horizon=10)
    with pytest.raises(ValueError, match="has no features"):
        lrn.rank(Context(t=1, n_items=3))
    lrn.rank(Context(t=1, n_items=3, features=X))
    with pytest.raises(ValueError, match="must have 2 columns"):
        lrn.rank(Context(t=2, n_items=3, features=np.ones((3, 4))))
    with pytest.raises(TypeError, match="needs .topk. feedback .* got FullFeedback"):
        ctx = Context(t=3, n_items=3, features=X)
        o = lrn.rank(ctx)
        lrn.update(ctx, o, FullFeedback(o, np.zeros((1, 3))))


# ---------------------------------------------------------------- exploration frequency


def test_explores_with_probability_gamma() -> None:
    # w stays ~0 (η tiny), so the own order is the identity; a round differs from it iff
    # it explored and the uniform order is not the identity: P = γ (1 - 1/m!).
    gamma, m, n = 0.3, 5, 3000
    lrn = RTopKF(eta=1e-300, gamma=gamma, rng=11)
    feats = np.random.default_rng(0).random((m, 3))
    moved = 0
    for t in range(1, n + 1):
        ctx = Context(t=t, n_items=m, features=feats)
        o = lrn.rank(ctx)
        moved += int((o[0] != np.arange(m)).any())
        lrn.update(ctx, o, TopKFeedback(o, np.zeros((1, 1))))
    assert binomtest(moved, n, gamma * (1 - 1 / math.factorial(m))).pvalue > ALPHA


# ------------------------------------------------------------------------- batching


def rollout(lrn: RTopKF, n_rounds: int, fb_rngs: RunGenerators) -> tuple[list, np.ndarray]:
    env = LetorStreamEnv(
        n_queries=30,
        n_features=6,
        min_docs=2,
        max_docs=25,
        feedback=TopKFeedbackModel(k=lrn.requires.k),
    )
    env.reset(rng=5)
    orders = []
    for t in range(1, n_rounds + 1):
        ctx = env.observe(t)
        o = lrn.rank(ctx)
        orders.append(o.copy())
        lrn.update(ctx, o, env.feedback(o, fb_rngs).restrict(lrn.requires))
    return orders, np.array(lrn.weights_)


@pytest.mark.parametrize("surrogate", ["squared", "ranksvm", "kl", "smoothdcg"])
def test_batch_of_five_equals_five_single_runs(surrogate: str) -> None:
    reps = [0, 1, 2, 3, 4]
    params = {"surrogate": surrogate, "eta": 0.05, "gamma": 0.2}
    gens = RunGenerators.from_keys(9, "learner", reps=reps)
    fbs = RunGenerators.from_keys(9, "feedback", reps=reps)
    batch_orders, batch_w = rollout(RTopKF(**params, n_runs=5, rng=gens), 200, fbs)
    for b, rep in enumerate(reps):
        solo_orders, solo_w = rollout(
            RTopKF(**params, n_runs=1, rng=RunGenerators.from_keys(9, "learner", reps=[rep])),
            200,
            RunGenerators.from_keys(9, "feedback", reps=[rep]),
        )
        assert all(
            np.array_equal(x[b], y[0]) for x, y in zip(batch_orders, solo_orders, strict=True)
        )
        # Bit for bit: a run's arithmetic does not depend on its batch companions
        # (oltr.learners.linear computes each run's row with the same instructions).
        np.testing.assert_array_equal(batch_w[b], solo_w[0])


# ----------------------------------------------------------------- numerical limits


@pytest.mark.parametrize("surrogate", ["squared", "ranksvm", "smoothdcg"])
def test_large_scores_stay_finite(surrogate: str) -> None:
    # Features of norm ~1e4 and U = 1 give scores up to ~1e4.
    feats = 1e4 * np.random.default_rng(1).random((8, 4))
    lrn = RTopKF(surrogate=surrogate, eta=1.0, gamma=0.3, radius=1.0, n_runs=3, rng=2)
    for t in range(1, 60):
        ctx = Context(t=t, n_items=8, features=feats)
        o = lrn.rank(ctx)
        labels = np.take_along_axis(np.tile(np.arange(8.0) % 3, (3, 1)), o, axis=1)
        lrn.update(ctx, o, TopKFeedback(o, labels[:, : lrn.requires.k]))
    w = np.array(lrn.weights_)
    assert np.isfinite(w).all()
    assert (np.linalg.norm(w, axis=1) <= 1.0 + 1e-12).all()
    assert np.abs(w @ feats.T).max() > 1e3  # the scores really were large


def test_kl_refuses_unrepresentable_scores() -> None:
    # e^s overflows float64 for s > 709.78: the KL estimator raises instead of going NaN.
    feats = 1e4 * np.eye(3)
    lrn = RTopKF(surrogate="kl", eta=1.0, gamma=TINY, radius=1.0, rng=0)
    ctx = Context(t=1, n_items=3, features=feats)
    o = lrn.rank(ctx)
    # Grade 3 on top item 0: ∇ = (1 - e^3) e_0, so w moves to +e_0 (projected) ...
    lrn.update(ctx, o, TopKFeedback(o, np.array([[3.0]])))
    ctx = Context(t=2, n_items=3, features=feats)  # ... and s_0 = 1e4 in the next round.
    o = lrn.rank(ctx)
    with pytest.raises(ValueError, match="exp overflows"):
        lrn.update(ctx, o, TopKFeedback(o, np.array([[0.0]])))


# ------------------------------------------------------------------- learning sanity


def final_ndcg(learner: str, params: dict, horizon: int = 3000) -> float:
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"n_queries": 200, "n_features": 20, "data_seed": 0},
        feedback="full",
        feedback_params={},
        learner=learner,
        learner_params=params,
        reps=(0, 1, 2),
        seed=1,
        horizon=horizon,
        measures=("ndcg@10",),
        checkpoints=(horizon,),
    )
    return float(run_set(spec)["ndcg@10:avg"].mean())


def test_rtopk_beats_random_on_the_synthetic_stream() -> None:
    # Mean over 3 seeded reps of the running-average NDCG@10 after 3000 rounds; the random
    # ranker's value (~0.48) has a standard error below 0.005 at this size, and each
    # surrogate clears it by a margin of at least 0.02 (fixed seeds: deterministic).
    rand = final_ndcg("random", {})
    for surrogate in ("squared", "ranksvm", "kl", "smoothdcg"):
        assert final_ndcg("rtopk", {"surrogate": surrogate}) > rand + 0.02, surrogate


def test_float32_learners_learn_as_float64_ones() -> None:
    # Mean over 3 seeded reps of the running-average NDCG@10 after 3000 rounds (as
    # above): float32 clears the random ranker by the same 0.02 margin, and
    # stays within 0.01 of float64 (the rep-to-rep standard deviation here is about 0.01;
    # the two differ only by rounding, so any larger gap would be a defect, not chance).
    rand = final_ndcg("random", {})
    for name, params in (("rtopk", {"surrogate": "squared"}), ("listnet", {})):
        single = final_ndcg(name, {**params, "dtype": "float32"})
        double = final_ndcg(name, {**params, "dtype": "float64"})
        assert single > rand + 0.02, name
        assert abs(single - double) < 0.01, name


# ---------------------------------------------------------------- the §6 reproduction


def test_ct16_fig1_small_reproduces_the_ordering(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd
    from typer.testing import CliRunner

    from oltr.cli import app

    out = tmp_path / "ct16"
    result = CliRunner().invoke(
        app, ["reproduce", "ct16-fig1", "--size", "small", "--out", str(out), "-q", "-j", "1"]
    )
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "report" / "final.csv").set_index("learner")["ndcg@10:avg mean"]
    assert len(table) == 6
    rtopk = table[[name for name in table.index if name.startswith("RTop-kF")]]
    # §6: full-feedback ListNet on top, every RTop-kF variant above the random ranker.
    assert table.idxmax() == "ListNet (full feedback)"
    assert (rtopk > table["random ranker"]).all()


@pytest.mark.parametrize("shape", [(1, 3, 4), (5, 24, 70), (64, 50, 46)])
def test_batched_products_equal_numpy_within_the_dot_product_bound(shape: tuple) -> None:
    # batch_scores and batch_step compute W Xᵀ and W − η D X with sums in index order.
    # Higham's bound for a recursive sum of n products: |fl(Σ aᵢbᵢ) − Σ aᵢbᵢ| ≤ γₙ Σ|aᵢbᵢ|,
    # γₙ = n u / (1 − n u), u = 2⁻⁵³; numpy's BLAS obeys the same bound, so the two differ
    # by at most 2 γₙ Σ|aᵢbᵢ| per entry.
    n_runs, m, d = shape
    rng = np.random.default_rng(sum(shape))
    w, x, direction = (
        rng.normal(size=(n_runs, d)),
        rng.normal(size=(m, d)),
        rng.normal(size=(n_runs, m)),
    )
    u = 2.0**-53

    def gamma(n: int) -> float:
        return n * u / (1 - n * u)

    scores = batch_scores(w, x)
    bound = 2 * gamma(d) * (np.abs(w) @ np.abs(x).T)
    assert (np.abs(scores - w @ x.T) <= bound).all()
    stepped = w.copy()
    batch_step(stepped, direction, 0.3, x)
    exact_step = (0.3 * direction) @ x
    # |a − b| ≤ 2γₘ S for the two sums a, b (S = Σ|c x|), and each final subtraction
    # rounds once: |fl(w − a) − fl(w − b)| ≤ 2u|w − b| + 2γₘ S (1 + u).
    total = np.abs(0.3 * direction) @ np.abs(x)
    bound = 2 * u * np.abs(w - exact_step) + 2 * gamma(m) * total * (1 + u)
    assert (np.abs(stepped - (w - exact_step)) <= bound).all()


def test_a_run_computes_the_same_bits_in_any_batch() -> None:
    # Row b of a batch equals the same row computed alone, for both products.
    rng = np.random.default_rng(3)
    w, x, direction = rng.normal(size=(7, 33)), rng.normal(size=(19, 33)), rng.normal(size=(7, 19))
    batch = batch_scores(w, x)
    stepped = w.copy()
    batch_step(stepped, direction, 0.1, x)
    for b in range(7):
        np.testing.assert_array_equal(batch_scores(w[b : b + 1], x)[0], batch[b])
        alone = w[b : b + 1].copy()
        batch_step(alone, direction[b : b + 1], 0.1, x)
        np.testing.assert_array_equal(alone[0], stepped[b])


def test_the_own_order_played_is_the_one_the_exploration_coin_chose_against() -> None:
    # Rows 0 and 3 are equal (a tie: lower index first); γ = 1/2 explores half the rounds.
    lrn = RTopKF(eta=0.3, gamma=0.5, rng=4)
    rng = np.random.default_rng(9)
    for t in range(1, 40):
        x = rng.random((6, 3))
        x[3] = x[0]
        ctx = Context(t=t, n_items=6, features=x)
        w = np.array(lrn.weights_[0]) if t > 1 else np.zeros(3)
        orders = lrn.rank(ctx)
        played = lrn.own_orders_played(t)
        assert played is not None and lrn.own_orders_played(t + 1) is None
        by_hand = sorted(range(6), key=lambda i: (-(x[i] @ w), i))
        assert played[0].tolist() == by_hand
        lrn.update(ctx, orders, TopKFeedback(orders, rng.integers(0, 3, (1, 1)).astype(float)))
        assert lrn.own_orders_played(t) is None  # the round is over: nothing of it is kept
