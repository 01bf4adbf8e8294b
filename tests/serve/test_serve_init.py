"""A served ranker started from a model file (``init``): first list, learning, restart, 422s."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from oltr.build import make_learner
from oltr.feedback import FullFeedback, TopKFeedback
from oltr.learners.base import Learner
from oltr.learners.counterfactual import RankingModel, make_scorer, save_model
from oltr.serve import ServeSettings, Store, create_app
from oltr.serve.protocol import RankerDefinition
from oltr.serve.rankers import Rankers
from oltr.serve.warmstart import read_init
from oltr.types import Context, RunGenerators

D = 5
W = [0.7, -1.3, 0.25, 2.0, -0.4]  # not in any ball: the learners' projection must keep its order
LISTNET = {
    "learner": "listnet",
    "params": {"eta": 0.1},
    "feedback": "full",
    "n_features": D,
    "normalize": False,  # the model was fitted on these features as they are
    "seed": 3,
}
RTOPK = {
    "learner": "rtopk",
    "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    "feedback": "top-k",
    "feedback_params": {"k": 1},
    "n_features": D,
    "normalize": False,
    "seed": 4,
}


def _model(path: Path, weights: list[float] = W, **fields: Any) -> str:
    body = {"format": "oltr-model", "version": 1, "kind": "linear", "n_features": len(weights)}
    body.update({"weights": weights, "learner": "ips", **fields})
    path.write_text(json.dumps(body))
    return str(path)


def _x(seed: int, m: int = 6) -> np.ndarray[Any, Any]:
    return np.random.default_rng(seed).standard_normal((m, D))


def _labels(seed: int, m: int = 6) -> np.ndarray[Any, Any]:
    return np.random.default_rng(1000 + seed).integers(0, 3, size=m).astype(np.float64)


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(ServeSettings(store=tmp_path / "s.db")))


def _in_process(defn: dict[str, Any], weights: list[float]) -> Learner[Any]:
    """The learner a served ranker should be: the runner's stream of repetition 0, warm-started."""
    name = defn["learner"]
    rngs = RunGenerators.from_keys(defn["seed"], "learner", name, reps=[0])
    learner = make_learner(name, defn["params"], n_runs=1, rngs=rngs)
    learner.warm_start(weights)  # type: ignore[attr-defined]
    return learner


def test_first_list_is_the_models_order_and_the_ranker_keeps_learning(
    client: TestClient, tmp_path: Path
) -> None:
    path = _model(tmp_path / "m.json")
    resp = client.put("/rankers/r", json={**LISTNET, "init": path})
    assert resp.status_code == 201, resp.text
    init = resp.json()["definition"]["init"]
    assert init["weights"] == W and init["path"] == str(Path(path).resolve())
    assert init["sha256"] == hashlib.sha256(Path(path).read_bytes()).hexdigest()
    # Online ListNet shows its own order: before any feedback, the model's order
    # (descending X w, ties to the lower index), whatever the radius-1 projection's scale.
    reference = _in_process(LISTNET, W)
    for t in range(1, 6):
        x = _x(t)
        out = client.post("/rankers/r/rank", json={"features": x.tolist()}).json()
        if t == 1:
            assert out["order"] == np.argsort(-(x @ np.asarray(W)), kind="stable").tolist()
        ctx = Context(t=t, n_items=6, features=x)
        expected = reference.rank(ctx)
        assert out["order"] == expected[0].tolist()
        grades = _labels(t)[expected[0]]  # labels of the shown list, top first
        fb = client.post(
            "/rankers/r/feedback", json={"impression": out["impression"], "labels": grades.tolist()}
        )
        assert fb.status_code == 200, fb.text
        rel = np.empty(6)
        rel[expected[0]] = grades
        reference.update(ctx, expected, FullFeedback(expected, rel[None]))
    served = np.asarray(client.get("/rankers/r").json()["learner"]["weights"])
    start = np.asarray(W) / np.linalg.norm(W)  # w₁ projected onto the unit ball
    assert not np.allclose(served, start)  # it learned
    assert np.array_equal(served, np.asarray(reference.weights_)[0])  # bit for bit
    # PUT again with the same file: the same definition (200); another file: 409
    assert client.put("/rankers/r", json={**LISTNET, "init": path}).status_code == 200
    other = _model(tmp_path / "m2.json", [1.0] * D)
    assert client.put("/rankers/r", json={**LISTNET, "init": other}).status_code == 409


def _rounds(rankers: Rankers, t0: int, n: int) -> None:
    ranker = rankers.get("r")
    for t in range(t0, t0 + n):
        out = ranker.rank(_x(t).tolist())
        ranker.feedback(out["impression"], {"labels": [float(_labels(t)[out["order"][0]])]}, 3600)


def test_restart_is_bit_for_bit_without_the_model_file(tmp_path: Path) -> None:
    """Snapshots every 3 rounds, 7 rounds: a restart restores a snapshot and replays the rest."""
    model = tmp_path / "m.json"
    defn = RankerDefinition(**{**RTOPK, "init": read_init(_model(model), D)})
    store = Store(tmp_path / "s.db")
    rankers = Rankers(store, snapshot_every=3)
    rankers.put("r", defn)
    _rounds(rankers, 1, 7)
    before = json.dumps(rankers.get("r").describe()["learner"])
    store.close()
    model.unlink()  # the store alone rebuilds the ranker
    store = Store(tmp_path / "s.db")
    again = Rankers(store, snapshot_every=3)
    assert json.dumps(again.get("r").describe()["learner"]) == before
    assert again.get("r").definition == defn
    _rounds(again, 8, 4)
    after = np.asarray(again.get("r").learner.weights_)  # type: ignore[attr-defined]
    store.close()
    # the same 11 rounds in process, never interrupted
    reference = _in_process(RTOPK, W)
    for t in range(1, 12):
        ctx = Context(t=t, n_items=6, features=_x(t))
        orders = reference.rank(ctx)
        label = _labels(t)[orders[0, 0]]
        reference.update(ctx, orders, TopKFeedback(orders, np.array([[label]])))
    assert np.array_equal(after, np.asarray(reference.weights_))


@pytest.mark.parametrize(
    ("setup", "body", "message"),
    [
        ("missing", LISTNET, "no such file"),
        ("dir", LISTNET, "not a regular file"),
        ("nul", LISTNET, "not a file path"),
        ("text", LISTNET, "not an oltr model file (not JSON"),
        ("other-json", LISTNET, "'format' must be 'oltr-model'"),
        ("mlp", LISTNET, "kind 'mlp' cannot start a served ranker"),
        ("short", LISTNET, "the model has n_features 3, the ranker n_features 5"),
        ("not-a-number", LISTNET, "'weights' must be an array of numbers"),
        ("ok", {**LISTNET, "learner": "pdgd-neural", "feedback": "clicks"}, "not a linear scorer"),
        ("ok", {**LISTNET, "learner": "random", "params": {}}, "no feature weights"),
        ("ok", {**LISTNET, "n_features": None, "n_items": 5}, "give n_features"),
    ],
)
def test_bad_init_gets_422_with_the_reason(
    client: TestClient, tmp_path: Path, setup: str, body: dict[str, Any], message: str
) -> None:
    path = tmp_path / "m.json"
    if setup == "dir":
        path.mkdir()
    elif setup == "text":
        path.write_text("weights: 1 2 3\n")
    elif setup == "other-json":
        path.write_text(json.dumps({"weights": W}))
    elif setup == "mlp":
        net = make_scorer("mlp", D, hidden=3)
        save_model(RankingModel(net, net.init(np.random.default_rng(0)), "ips"), path)
    elif setup == "short":
        _model(path, W[:3])
    elif setup == "not-a-number":
        _model(path, [1.0, "x"])  # type: ignore[list-item]
    elif setup == "ok":
        _model(path)
    name = f"{path}\x00.json" if setup == "nul" else str(path)
    resp = client.put("/rankers/r", json={**body, "init": name})
    assert resp.status_code == 422, resp.text
    assert message in resp.json()["detail"]
    assert client.get("/rankers/r").status_code == 404  # nothing was created


@pytest.mark.parametrize("name", ["rtopk", "listnet", "pdgd", "p-mgd", "p-dbgd", "td-dbgd", "dbgd"])
def test_every_linear_learner_starts_from_the_models_direction(name: str) -> None:
    """w₁ of every run is a positive multiple of the model's w (the learner's projection)."""
    rngs = RunGenerators.from_keys(0, "learner", name, reps=[0, 1, 2])
    learner = make_learner(name, {}, n_runs=3, rngs=rngs, horizon=100)
    learner.warm_start(W)  # type: ignore[attr-defined]
    learner.rank(Context(t=1, n_items=6, features=_x(1)))
    w = np.asarray(learner.weights_)  # type: ignore[attr-defined]
    cosine = w @ np.asarray(W) / (np.linalg.norm(w, axis=1) * np.linalg.norm(W))
    assert np.allclose(cosine, 1.0, rtol=0, atol=1e-12)  # float64 rescaling: ~1e-16 off
    if name != "dbgd":  # the linear base sizes w₁ once: a second start is refused
        with pytest.raises(RuntimeError, match="before the first round"):
            learner.warm_start(W)  # type: ignore[attr-defined]
