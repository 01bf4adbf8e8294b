"""Replay of a log, and the IPS estimator's unbiasedness by exact enumeration."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oltr.build import make_learner
from oltr.cli import app as cli
from oltr.serve import ServeSettings, Store, create_app
from oltr.serve.protocol import exploration_propensities
from oltr.serve.replay import REWARDS, estimate_weights, ips_terms, logged_rounds, replay_log
from oltr.types import Context


@pytest.mark.parametrize("reward", sorted(REWARDS))
@pytest.mark.parametrize("depth", [1, 2])
def test_ips_is_unbiased_by_exact_enumeration(reward: str, depth: int) -> None:
    """Σ over every shown order of P(order) · term = the new ranker's true reward (exactly)."""
    m, gamma = 4, 0.3
    learner = make_learner("rtopk", {"gamma": gamma, "eta": 0.1}, n_runs=1, rngs=0)
    x = np.arange(m * 2, dtype=float).reshape(m, 2)
    ctx = Context(t=1, n_items=m, features=x)
    learner.rank(ctx)  # zero weights: the own order is 0, 1, 2, 3
    own = np.arange(m)
    grades = np.array([0.0, 2.0, 1.0, 0.0])  # by item; the log reveals those shown on top
    for new in itertools.permutations(range(m)):
        new_prefix = np.asarray(new[:depth])
        expected = REWARDS[reward](grades[new_prefix])
        total = 0.0
        for shown_t in itertools.permutations(range(m)):
            shown = np.asarray(shown_t)
            p_order = (1 - gamma) * np.array_equal(shown, own) + gamma / math.factorial(m)
            props = exploration_propensities(learner, ctx, shown, depth)
            labels = grades[shown[:depth]]
            total += p_order * ips_terms(
                shown, labels, props["prefix"][-1], new_prefix, REWARDS[reward]
            )
        assert total == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_replay_reproduces_the_live_ranker_and_estimates_it(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    c = TestClient(create_app(ServeSettings(store=store, snapshot_every=5)))
    body = {
        "learner": "rtopk",
        "params": {"gamma": 0.5, "eta": 0.2},
        "n_features": 3,
        "feedback_params": {"k": 1},
    }
    c.put("/rankers/r", json=body)
    rng = np.random.default_rng(0)
    w_true = np.array([1.0, -1.0, 0.5])
    for _ in range(200):
        x = rng.standard_normal((4, 3))
        out = c.post("/rankers/r/rank", json={"features": x.tolist()}).json()
        top = out["order"][0]
        label = float(x[top] @ w_true > 0.5)
        c.post("/rankers/r/feedback", json={"impression": out["impression"], "labels": [label]})
    live = np.asarray(c.get("/rankers/r").json()["learner"]["weights"])
    db = Store(store, readonly=True)  # beside the live service
    learner, _, rounds = replay_log(db, "r")
    assert rounds == 200 and np.array_equal(np.asarray(learner.weights_)[0], live)
    rounds_ = logged_rounds(db, "r")
    # The true ranker's CTR@1 is at least that of a random top item; IPS sees it within 4 SE.
    truth = np.mean(
        [
            float(r.context.features[np.argmax(r.context.features @ w_true)] @ w_true > 0.5)
            for r in rounds_
        ]
    )
    est = estimate_weights(rounds_, w_true, "ctr@1")
    assert abs(est.value - truth) < 4 * est.stderr  # false alarm rate ≈ 6e-5 under normality
    db.close()
    result = CliRunner().invoke(cli, ["replay", "--store", str(store), "--ranker", "r"])
    assert result.exit_code == 0, result.output
    assert "replayed 200 feedback rounds" in result.output
    printed = result.output.split("weights: ")[1].splitlines()[0]
    assert np.array_equal(np.asarray(json.loads(printed)), live)
