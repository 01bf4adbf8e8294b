"""A served PDGD on MQ2008 Fold 1 with navigational clicks: the runner's result, kill -9 or not.

A simulated user (the runner's environment and feedback streams of rep 0) drives
a PDGD ranker of a real ``oltr serve`` process over HTTP for ``N`` impressions;
halfway, with one list shown and its clicks not yet sent, the process is killed
with SIGKILL and restarted on the same store, and the user sends those clicks
and goes on. Every shown list is the one the runner's loop shows, the final
weights are the runner's bit for bit, and run_set's own trace measures the
served lists. ``N`` is 1,000 by default (a few seconds of HTTP);
``OLTR_MQ2008_IMPRESSIONS=10000`` runs the full-size check.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from live_server import free_port, start_server, wait_healthy

from oltr.build import make_env, make_feedback, make_learner
from oltr.client import OltrClient
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.random import child_rng
from oltr.types import RunGenerators

SEED = 7
N = int(os.environ.get("OLTR_MQ2008_IMPRESSIONS", "1000"))
ENV = "letor-stream-v1"
FOLD1 = Path("LETOR4.0") / "MQ2008" / "Fold1" / "train.txt.gz"
#: Navigational clicks on the top 10 (Oosterhuis & de Rijke 2018 §6), MQ2008 grades 0..2.
FEEDBACK = ("clicks", {"click_model": "navigational", "n_grades": 3, "k": 10})

pytestmark = pytest.mark.shared_data


def _user(path: Path) -> tuple[Any, RunGenerators]:
    env = make_env(ENV, {"path": str(path)}, feedback=make_feedback(*FEEDBACK))
    env.reset(rng=child_rng(SEED, "env", ENV))
    return env, RunGenerators.from_keys(SEED, "feedback", reps=[0])


def _in_process(path: Path) -> tuple[list[list[int]], np.ndarray[Any, Any]]:
    """The runner's protocol loop (run_set's keying, rep 0)."""
    env, fb_rngs = _user(path)
    rngs = RunGenerators.from_keys(SEED, "learner", "pdgd", reps=[0])
    learner = make_learner("pdgd", {}, n_runs=1, rngs=rngs, horizon=N)
    orders = []
    for t in range(1, N + 1):
        ctx = env.observe(t)
        o = learner.rank(ctx)
        fb = env.feedback(o, fb_rngs)
        learner.update(ctx, o, fb.restrict(learner.requires))
        orders.append(o[0].tolist())
    return orders, np.asarray(learner.weights_)[0]  # type: ignore[attr-defined]


def test_served_pdgd_on_mq2008_equals_the_runner_across_kill_9(
    shared_data: Path, tmp_path: Path
) -> None:
    path = shared_data / FOLD1
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    expected_orders, expected_w = _in_process(path)
    store, port = tmp_path / "s.db", free_port()
    env, fb_rngs = _user(path)
    proc = start_server(store, port, snapshot_every=97)
    client = OltrClient(f"http://127.0.0.1:{port}", timeout=30)
    served_ndcg: list[float] = []
    try:
        wait_healthy(client, time.monotonic() + 60)
        client.put_ranker(
            "pdgd", learner="pdgd", feedback=FEEDBACK[0], feedback_params=FEEDBACK[1],
            n_features=46, seed=SEED,
        )  # fmt: skip
        for t in range(1, N + 1):
            ctx = env.observe(t)
            out = client.rank("pdgd", ctx.features)
            assert out["order"] == expected_orders[t - 1], f"impression {t}"
            order = np.asarray([out["order"]])
            served_ndcg.append(float(env.evaluate(order, ("ndcg@10",))["ndcg@10"][0]))
            clicks = np.flatnonzero(env.feedback(order, fb_rngs).clicks[0]).tolist()
            if t == N // 2:  # shown, clicks not sent yet: crash and come back
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
                proc = start_server(store, port, snapshot_every=97)
                wait_healthy(client, time.monotonic() + 60)
                assert client.ranker("pdgd")["rounds"] == t - 1
            client.feedback("pdgd", out["impression"], clicks=clicks)
        info = client.ranker("pdgd")
    finally:
        client.close()
        proc.kill()
        proc.wait(timeout=10)
    assert info["rounds"] == N
    weights = np.asarray(info["learner"]["weights"])
    assert np.array_equal(weights, expected_w)  # bit for bit (JSON floats round-trip)
    assert np.abs(expected_w).sum() > 0  # it learned
    spec = RunSetSpec(
        env=ENV,
        env_params={"path": str(path)},
        feedback=FEEDBACK[0],
        feedback_params=FEEDBACK[1],
        learner="pdgd",
        learner_params={},
        reps=(0,),
        seed=SEED,
        horizon=N,
        measures=("ndcg@10",),
        checkpoints=tuple(range(1, N + 1)),
    )
    assert run_set(spec)["ndcg@10"].tolist() == served_ndcg  # run_set saw the same lists
