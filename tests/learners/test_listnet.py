"""Online ListNet with full feedback (CT16 §6 baseline): hand-computed step, defaults, learning."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import FullFeedback, TopKFeedback
from oltr.learners.listnet import OnlineListNet
from oltr.types import Context

X = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])


def test_step_by_hand() -> None:
    # w = 0: s = 0, P(s) = 1/3 each; R = (2, 0, 0): P(R) = (e², 1, 1) / (e² + 2).
    # w ← -η (P(s) - P(R))ᵀ X.
    lrn = OnlineListNet(eta=0.5, radius=math.inf)
    ctx = Context(t=1, n_items=3, features=X)
    orders = lrn.rank(ctx)
    assert orders.tolist() == [[0, 1, 2]]
    lrn.update(ctx, orders, FullFeedback(orders, np.array([[2, 0, 0]])))
    e2 = math.exp(2.0)
    p_r = np.array([e2, 1.0, 1.0]) / (e2 + 2.0)
    np.testing.assert_allclose(lrn.weights_[0], -0.5 * (np.full(3, 1 / 3) - p_r) @ X, rtol=1e-12)


def test_ranks_by_score_and_projects() -> None:
    lrn = OnlineListNet(eta=100.0, radius=1.0, n_runs=2)
    ctx = Context(t=1, n_items=3, features=X)
    o = lrn.rank(ctx)
    lrn.update(ctx, o, FullFeedback(o, np.array([[0, 0, 2], [0, 0, 2]])))
    w = np.array(lrn.weights_)
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1.0)
    ctx2 = Context(t=2, n_items=3, features=X)
    # Item 2 was relevant: it now scores highest, and the order is descending score.
    assert lrn.rank(ctx2)[0].tolist() == np.argsort(-(X @ w[0]), kind="stable").tolist()
    assert lrn.rank(ctx2)[0, 0] == 2


def test_defaults_and_requirements() -> None:
    lrn = OnlineListNet(eta="paper", horizon=250_000)
    assert lrn.eta_ == pytest.approx(250_000**-0.5)  # §6: η = T^(-1/2)
    assert lrn.requires.kind == "full"
    assert OnlineListNet().eta == "adaptive"  # the default needs no horizon
    with pytest.raises(ValueError, match="needs the horizon"):
        OnlineListNet(eta="paper").rank(Context(t=1, n_items=3, features=X))
    with pytest.raises(ValueError, match="eta must be > 0"):
        OnlineListNet(eta=-1.0)
    with pytest.raises(ValueError, match="radius must be > 0"):
        OnlineListNet(eta=1.0, radius=0.0)
    ctx = Context(t=1, n_items=3, features=X)
    o = lrn.rank(ctx)
    with pytest.raises(TypeError, match="needs .full. feedback .* got TopKFeedback"):
        lrn.update(ctx, o, TopKFeedback(o, np.zeros((1, 1))))


def final_ndcg(learner: str, params: dict, horizon: int = 2000) -> float:
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"n_queries": 200, "n_features": 20, "data_seed": 0},
        feedback="full",
        feedback_params={},
        learner=learner,
        learner_params=params,
        reps=(0, 1),
        seed=1,
        horizon=horizon,
        measures=("ndcg@10",),
        checkpoints=(horizon,),
    )
    return float(run_set(spec)["ndcg@10:avg"].mean())


def test_listnet_beats_rtopk_and_random_on_the_synthetic_stream() -> None:
    # Full information should learn fastest (CT16 §6 "ListNet ... highest average NDCG").
    listnet = final_ndcg("listnet", {})
    assert listnet > final_ndcg("rtopk", {"surrogate": "ranksvm"}) + 0.05
    assert listnet > final_ndcg("random", {}) + 0.1
