"""End to end over real HTTP: the simulator's result through the service, and kill -9 recovery."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import uvicorn
from live_server import free_port, start_server, wait_healthy

from oltr.build import make_env, make_feedback, make_learner
from oltr.client import OltrClient
from oltr.random import child_rng
from oltr.serve import ServeSettings, Store, create_app
from oltr.types import RunGenerators

SEED, T, D = 5, 60, 6
PARAMS = {"surrogate": "squared"}  # η and γ from the horizon, as the runner does
ENV = "letor-stream-v1"
ENV_PARAMS = {"n_queries": 25, "n_features": D, "data_seed": 2}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[OltrClient]:
    """A uvicorn server in a thread on an ephemeral port of 127.0.0.1."""
    port = free_port()
    app = create_app(ServeSettings(store=tmp_path / "s.db"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    client = OltrClient(f"http://127.0.0.1:{port}")
    wait_healthy(client, time.monotonic() + 20)
    yield client
    client.close()
    server.should_exit = True
    thread.join(timeout=10)


def _definition() -> dict[str, Any]:
    return {
        "learner": "rtopk",
        "params": PARAMS,
        "feedback": "top-k",
        "feedback_params": {"k": 1},
        "n_features": D,
        "seed": SEED,
        "horizon": T,
    }


def _user() -> tuple[Any, RunGenerators]:
    """The simulated user: the runner's environment stream and feedback stream of rep 0."""
    env = make_env(ENV, ENV_PARAMS, feedback=make_feedback("top-k", {"k": 1}))
    env.reset(rng=child_rng(SEED, "env", ENV))
    return env, RunGenerators.from_keys(SEED, "feedback", reps=[0])


def _in_process() -> tuple[list[list[int]], np.ndarray[Any, Any]]:
    """The runner's protocol loop (run_set's keying, rep 0)."""
    env, fb_rngs = _user()
    rngs = RunGenerators.from_keys(SEED, "learner", "rtopk", reps=[0])
    learner = make_learner("rtopk", PARAMS, n_runs=1, rngs=rngs, horizon=T)
    orders = []
    for t in range(1, T + 1):
        ctx = env.observe(t)
        o = learner.rank(ctx)
        fb = env.feedback(o, fb_rngs)
        learner.update(ctx, o, fb.restrict(learner.requires))
        orders.append(o[0].tolist())
    return orders, np.asarray(learner.weights_)[0]  # type: ignore[attr-defined]


@pytest.mark.parametrize("binary", [False, True], ids=["json", "npy"])
def test_simulated_user_over_http_gives_the_simulator_result(
    live: OltrClient, binary: bool
) -> None:
    live.binary = binary  # features as JSON numbers, or as a .npy body
    live.put_ranker("sim", **_definition())
    env, fb_rngs = _user()
    shown = []
    for t in range(1, T + 1):
        ctx = env.observe(t)
        out = live.rank("sim", ctx.features)
        order = np.asarray([out["order"]])
        labels = env.feedback(order, fb_rngs).labels[0]
        live.feedback("sim", out["impression"], labels=labels.tolist())
        shown.append(out["order"])
    expected_orders, expected_w = _in_process()
    assert shown == expected_orders
    weights = np.asarray(live.ranker("sim")["learner"]["weights"])
    assert np.array_equal(weights, expected_w)  # bit for bit (JSON floats round-trip)
    assert np.abs(expected_w).sum() > 0  # it did learn something


def test_kill_9_loses_nothing_acknowledged(tmp_path: Path) -> None:
    store, port = tmp_path / "s.db", free_port()
    env, fb_rngs = _user()
    contexts, labels, events = [], [], []  # what the service acknowledged, in order
    proc = start_server(store, port, stderr=subprocess.PIPE)
    client = OltrClient(f"http://127.0.0.1:{port}")
    try:
        wait_healthy(client, time.monotonic() + 60)
        client.put_ranker("k", **_definition())
        pending = None
        for t in range(1, 41):
            ctx = env.observe(t)
            out = client.rank("k", ctx.features)
            contexts.append(ctx)
            events.append(("rank", t - 1))
            lab = env.feedback(np.asarray([out["order"]]), fb_rngs).labels[0].tolist()
            labels.append(lab)
            if t == 40:  # left pending across the crash
                pending = out["impression"]
                break
            client.feedback("k", out["impression"], labels=lab)
            events.append(("feedback", t - 1))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc = start_server(store, port, stderr=subprocess.PIPE)
        wait_healthy(client, time.monotonic() + 60)
        assert pending is not None
        client.feedback("k", pending, labels=labels[-1])
        events.append(("feedback", 39))
        for t in range(41, T + 1):
            ctx = env.observe(t)
            out = client.rank("k", ctx.features)
            contexts.append(ctx)
            lab = env.feedback(np.asarray([out["order"]]), fb_rngs).labels[0].tolist()
            labels.append(lab)
            client.feedback("k", out["impression"], labels=lab)
            events += [("rank", t - 1), ("feedback", t - 1)]
        served = np.asarray(client.ranker("k")["learner"]["weights"])
        assert client.ranker("k")["rounds"] == T
    finally:
        client.close()
        proc.kill()
        proc.wait(timeout=10)
    # An uninterrupted learner fed the same acknowledged events.
    rngs = RunGenerators.from_keys(SEED, "learner", "rtopk", reps=[0])
    learner = make_learner("rtopk", PARAMS, n_runs=1, rngs=rngs, horizon=T)
    from oltr.feedback import TopKFeedback

    orders: dict[int, Any] = {}
    for kind, i in events:
        if kind == "rank":
            orders[i] = learner.rank(contexts[i])
        else:
            fb = TopKFeedback(orders[i], np.asarray([labels[i]], dtype=np.float64))
            learner.update(contexts[i], orders[i], fb)
    assert np.array_equal(served, np.asarray(learner.weights_)[0])  # type: ignore[attr-defined]


def test_concurrent_feedbacks_are_all_durable_after_kill_9_in_their_logged_order(
    tmp_path: Path,
) -> None:
    """Many feedbacks in flight at once (their writes share commits): every acknowledged one
    survives SIGKILL, and replaying the log in its order gives the live learner bit for bit."""
    store, port, n, senders = tmp_path / "s.db", free_port(), 48, 8
    url = f"http://127.0.0.1:{port}"
    rng = np.random.default_rng(3)
    proc = start_server(store, port, sync="FULL", stderr=subprocess.PIPE)
    client = OltrClient(url)
    acked: list[str] = []
    try:
        wait_healthy(client, time.monotonic() + 60)
        client.put_ranker("c", **_definition())
        shown = [client.rank("c", rng.random((8, D)))["impression"] for _ in range(n)]
        lock = threading.Lock()

        def send(chunk: list[str]) -> None:
            with OltrClient(url) as mine:
                for imp in chunk:
                    # different grades, so that updates applied in another order differ
                    mine.feedback("c", imp, labels=[float(int(imp.split("-")[0]) % 3)])
                    with lock:
                        acked.append(imp)

        threads = [threading.Thread(target=send, args=(shown[i::senders],)) for i in range(senders)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        live = client.ranker("c")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc = start_server(store, port, sync="FULL", stderr=subprocess.PIPE)
        wait_healthy(client, time.monotonic() + 60)
        restarted = client.ranker("c")
    finally:
        client.close()
        proc.kill()
        proc.wait(timeout=10)
    assert sorted(acked) == sorted(shown)
    assert live["rounds"] == restarted["rounds"] == n
    assert restarted["learner"]["weights"] == live["learner"]["weights"]  # bit for bit
    db = Store(store)
    try:
        logged = [e.impression for e in db.events("c") if e.kind == "feedback"]
    finally:
        db.close()
    assert sorted(logged) == sorted(shown)  # each acknowledged feedback once
