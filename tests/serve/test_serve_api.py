"""The HTTP API in process (TestClient): definitions, auth, every bad input, expiry, duels."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from oltr.serve import ServeSettings, create_app

D = 4
RTOPK = {
    "learner": "rtopk",
    "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    "feedback": "top-k",
    "feedback_params": {"k": 2},
    "n_features": D,
    "seed": 1,
}


def _client(tmp_path: Path, **settings: Any) -> TestClient:
    return TestClient(create_app(ServeSettings(store=tmp_path / "s.db", **settings)))


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    c = _client(tmp_path, max_body=20_000)
    assert c.put("/rankers/r", json=RTOPK).status_code == 201
    return c


def _x(m: int = 5, seed: int = 0) -> list[list[float]]:
    return np.random.default_rng(seed).random((m, D)).tolist()


def _round(client: TestClient, seed: int = 0) -> dict[str, Any]:
    out = client.post("/rankers/r/rank", json={"features": _x(seed=seed)}).json()
    fb = client.post("/rankers/r/feedback", json={"impression": out["impression"], "labels": [1]})
    assert fb.status_code == 200, fb.text
    return dict(out)


def test_put_is_idempotent_and_conflicts_on_another_definition(client: TestClient) -> None:
    assert client.put("/rankers/r", json=RTOPK).status_code == 200
    other = {**RTOPK, "seed": 2}
    resp = client.put("/rankers/r", json=other)
    assert resp.status_code == 409 and "another definition" in resp.json()["detail"]
    assert [r["name"] for r in client.get("/rankers").json()["rankers"]] == ["r"]
    assert client.delete("/rankers/r").status_code == 204
    assert client.get("/rankers/r").status_code == 404
    assert client.put("/rankers/r", json=other).status_code == 201


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**RTOPK, "params": {"surrogate": "squared", "eta": "paper"}}, "set horizon"),
        ({**RTOPK, "learner": "nope"}, "unknown learner 'nope'"),
        ({**RTOPK, "params": {"bogus": 1}}, "no parameter 'bogus'"),
        ({**RTOPK, "params": {"surrogate": "ranksvm", "gamma": 0.3, "eta": 0.1}}, "k >= 2"),
        ({**RTOPK, "n_features": None}, "one of n_features"),
        ({**RTOPK, "n_features": None, "n_items": 5}, "give n_features"),
        # JSON numbers only where numbers are meant, integers where integers are
        ({**RTOPK, "seed": "1"}, "'int_type', 'loc': ['body', 'seed']"),
        ({**RTOPK, "seed": 1.0}, "'int_type', 'loc': ['body', 'seed']"),
        ({**RTOPK, "n_features": True}, "'int_type', 'loc': ['body', 'n_features']"),
        ({**RTOPK, "horizon": "100"}, "'int_type', 'loc': ['body', 'horizon']"),
        ({**RTOPK, "horizon": 2**70}, "'less_than_equal', 'loc': ['body', 'horizon']"),
        ({**RTOPK, "learner": 1}, "'string_type', 'loc': ['body', 'learner']"),
        ({**RTOPK, "feedback_params": {"k": True}}, "k must be an int >= 1, got bool"),
        ({**RTOPK, "params": {"surrogate": "squared", "eta": True}}, "eta must be a number"),
    ],
)
def test_bad_definitions_get_422_with_the_reason(
    client: TestClient, body: dict[str, Any], message: str
) -> None:
    if "k >= 2" in message:
        body = {**body, "feedback_params": {"k": 1}}
    resp = client.put("/rankers/other", json=body)
    assert resp.status_code == 422 and message in str(resp.json()["detail"]), resp.text
    assert client.get("/rankers/other").status_code == 404


def test_horizon_in_the_body_makes_a_t_schedule_work(client: TestClient) -> None:
    body = {**RTOPK, "params": {"surrogate": "squared"}, "horizon": 1000}
    assert client.put("/rankers/h", json=body).status_code == 201
    assert client.post("/rankers/h/rank", json={"features": _x()}).status_code == 200


def _state(client: TestClient) -> dict[str, Any]:
    return dict(client.get("/rankers/r").json())


NAN_ROW = [[float("nan")] * D]
BAD_INPUTS: list[tuple[str, str, Any, int, str]] = [
    # (route, content type, body, status, message fragment)
    ("rank", "json", {"features": [[1.0] * (D + 1)] * 3}, 422, f"must have {D} numbers"),
    ("rank", "raw", '{"features": [[NaN, 1, 2, 3]]}', 422, "must be finite"),
    ("rank", "raw", '{"features": [[Infinity, 1, 2, 3]]}', 422, "must be finite"),
    ("rank", "json", {"features": []}, 422, "non-empty list"),
    ("rank", "json", {}, 422, "features are required"),
    ("rank", "json", {"features": [["a", 1, 2, 3]]}, 422, "float"),
    ("rank", "json", {"features": [[1.0] * D], "extra": 1}, 422, "extra"),
    ("rank", "raw", '{"features": [[1, 2', 422, "JSON"),
    ("rank", "json", {"features": [[1.0] * D] * 2000}, 413, "exceeds"),
    ("feedback", "json", {"impression": "PENDING", "labels": [1, 0, 1]}, 422, "1 to 2 grades"),
    ("feedback", "json", {"impression": "PENDING", "labels": []}, 422, "1 to 2 grades"),
    ("feedback", "json", {"impression": "PENDING", "labels": [-1]}, 422, ">= 0"),
    ("feedback", "json", {"impression": "PENDING", "chosen": [1]}, 422, "labels"),
    ("feedback", "json", {"impression": "nope", "labels": [1]}, 404, "no impression 'nope'"),
    ("feedback", "json", {"impression": "DONE", "labels": [1]}, 409, "already has"),
    ("feedback", "json", {"labels": [1]}, 422, "impression"),
    # JSON numbers only where numbers are meant: no booleans, no numeric strings
    ("rank", "json", {"features": [[True, False, 1, 1]]}, 422, "'loc': ['body', 'features', 0, 0]"),
    ("rank", "json", {"features": [["1", "2", "3", "4"]]}, 422, "'float_type'"),
    ("rank", "json", {"features": [[1, 2, 3, 4], [1, 2, 3, "4"]]}, 422, "'features', 1, 3]"),
    ("feedback", "json", {"impression": "PENDING", "labels": [True]}, 422, "'labels', 0]"),
    ("feedback", "json", {"impression": "PENDING", "labels": ["1"]}, 422, "'float_type'"),
    ("feedback", "json", {"impression": 1, "labels": [1]}, 422, "'string_type'"),
    ("feedback", "json", {"impression": "PENDING", "chosen": [True]}, 422, "'chosen', 0]"),
    # non-finite literals the parser takes are refused by the checks, naming the cell
    ("rank", "raw", '{"features": [[1, 2, 3, -Infinity]]}', 422, "features[0][3] is -inf"),
    ("rank", "raw", '{"features": [[1e400, 1, 2, 3]]}', 422, "features[0][0] is inf"),
    # bodies that do not parse: 422, never a 5xx
    ("rank", "raw", b'{"features": [[1, 2, 3, \xff]]}', 422, "not UTF-8"),
    ("rank", "raw", b"\xff\xfe{", 422, "not UTF-8"),
    ("rank", "raw", "[" * 19_000, 422, "nests too deep"),
    ("feedback", "raw", '{"impression": ' * 1_200, 422, "nests too deep"),
    ("rank", "raw", '{"features": [[1, 2, 3, 4]', 422, "JSON"),
    ("feedback", "raw", '{"impression": "x", "labels": [1', 422, "JSON"),
    ("unknown", "json", {"features": [[1.0] * D]}, 404, "no ranker named 'unknown'"),
]


@pytest.mark.parametrize(("route", "kind", "body", "status", "message"), BAD_INPUTS)
def test_bad_input_is_refused_and_changes_nothing(
    client: TestClient, route: str, kind: str, body: Any, status: int, message: str
) -> None:
    done = _round(client, seed=1)
    pending = client.post("/rankers/r/rank", json={"features": _x(seed=2)}).json()["impression"]
    before = _state(client)
    if isinstance(body, dict) and "impression" in body:
        body = {
            **body,
            "impression": {"PENDING": pending, "DONE": done["impression"]}.get(
                body["impression"], body["impression"]
            ),
        }
    path = "/rankers/unknown/rank" if route == "unknown" else f"/rankers/r/{route}"
    if kind == "json":
        resp = client.post(path, json=body)
    else:
        resp = client.post(path, content=body, headers={"content-type": "application/json"})
    assert resp.status_code == status, resp.text
    assert message in str(resp.json()["detail"]), resp.text
    assert _state(client) == before  # weights, rounds and counts untouched
    # and the pending impression still takes its one feedback
    ok = client.post("/rankers/r/feedback", json={"impression": pending, "labels": [2, 0]})
    assert ok.status_code == 200 and ok.json()["round"] == before["rounds"] + 1


def test_token_is_required_except_for_healthz(tmp_path: Path) -> None:
    c = _client(tmp_path, token="s3cret")
    assert c.get("/healthz").status_code == 200
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
        resp = c.put("/rankers/r", json=RTOPK, headers=headers)
        assert resp.status_code == 401 and "bearer token" in resp.json()["detail"]
        assert c.get("/metrics", headers=headers).status_code == 401
    good = {"Authorization": "Bearer s3cret"}
    assert c.put("/rankers/r", json=RTOPK, headers=good).status_code == 201
    assert c.get("/rankers", headers=good).json()["rankers"][0]["name"] == "r"


def test_impressions_expire_and_are_counted(tmp_path: Path) -> None:
    c = _client(tmp_path, impression_ttl=0.05)
    c.put("/rankers/r", json=RTOPK)
    old = c.post("/rankers/r/rank", json={"features": _x()}).json()["impression"]
    time.sleep(0.1)
    resp = c.post("/rankers/r/feedback", json={"impression": old, "labels": [1]})
    assert resp.status_code == 410 and "expired" in resp.json()["detail"]
    info = c.get("/rankers/r").json()
    assert (info["expired"], info["pending"], info["rounds"]) == (1, 0, 0)


def test_metrics_count_requests_rounds_and_errors(client: TestClient) -> None:
    _round(client)
    client.post("/rankers/r/rank", json={"features": []})
    text = client.get("/metrics").text
    assert (
        'oltr_requests_total{method="POST",route="/rankers/{name}/rank",status="200"} 1.0' in text
    )
    assert 'oltr_errors_total{route="/rankers/{name}/rank",status="422"} 1.0' in text
    assert 'oltr_rounds_total{ranker="r"} 1.0' in text
    assert "oltr_request_seconds_bucket" in text
    assert "oltr_store_commits " in text and "oltr_store_writes " in text


def test_propensities_are_those_of_the_exploration(client: TestClient) -> None:
    out = client.post("/rankers/r/rank", json={"features": _x()}).json()
    m, gamma = 5, 0.3
    # Zero weights before the first update: the own order is 0, 1, 2, ... (ties by index).
    own = out["order"][:2] == [0, 1]
    top = out["order"][0] == 0
    expected = [(1 - gamma) * top + gamma / m, (1 - gamma) * own + gamma / (m * (m - 1))]
    assert out["propensities"]["prefix"] == pytest.approx(expected, rel=1e-15)


def test_duel_learner_gets_interleaved_lists_and_click_credit(client: TestClient) -> None:
    body = {
        "learner": "dbgd",
        "params": {"delta": 1.0, "gamma": 0.1},
        "feedback": "interleaved-clicks",
        "feedback_params": {"k": 5, "method": "team_draft"},
        "n_features": D,
        "seed": 3,
    }
    assert client.put("/rankers/d", json=body).status_code == 201, client.put(
        "/rankers/d", json=body
    ).text
    wins = []
    for s in range(30):
        out = client.post("/rankers/d/rank", json={"features": _x(m=6, seed=s)}).json()
        assert len(out["order"]) == 5 and len(set(out["order"])) == 5
        fb = client.post(
            "/rankers/d/feedback", json={"impression": out["impression"], "clicks": [0]}
        )
        wins.append(fb.json()["outcome"])
    # A click on the top position always credits the team that placed it: never a tie.
    assert set(wins) <= {-1, 1} and len(set(wins)) == 2


def test_choice_learner_on_a_fixed_item_set(client: TestClient) -> None:
    body = {"learner": "onlinerank", "feedback": "choice", "n_items": 4, "horizon": 100}
    resp = client.put("/rankers/c", json=body)
    assert resp.status_code == 201, resp.text
    out = client.post("/rankers/c/rank", json={}).json()
    assert sorted(out["order"]) == [0, 1, 2, 3]
    bad = client.post("/rankers/c/feedback", json={"impression": out["impression"], "chosen": [4]})
    assert bad.status_code == 422 and "0..3" in bad.json()["detail"]
    ok = client.post("/rankers/c/feedback", json={"impression": out["impression"], "chosen": [2]})
    assert ok.json()["round"] == 1
    assert client.post("/rankers/c/rank", json={"features": _x()}).status_code == 422


def test_openapi_documents_the_bodies_of_rank_and_feedback(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for route, field in (("rank", "features"), ("feedback", "impression")):
        post = paths[f"/rankers/{{name}}/{route}"]["post"]
        schema = post["requestBody"]["content"]["application/json"]["schema"]
        assert field in schema["properties"]
        assert "200" in post["responses"] and "422" in post["responses"]


def test_freeze_long_lived_freezes_now_and_after_each_full_collection() -> None:
    import gc

    from oltr.serve import freeze_long_lived

    try:
        freeze_long_lived()
        freeze_long_lived()
        assert gc.get_freeze_count() > 0
        assert sum(cb.__name__ == "_refreeze" for cb in gc.callbacks) == 1
        gc.unfreeze()
        gc.collect()
        assert gc.get_freeze_count() > 0  # the full collection froze its survivors
    finally:
        gc.callbacks[:] = [cb for cb in gc.callbacks if cb.__name__ != "_refreeze"]
        gc.unfreeze()


def test_answers_have_the_fields_of_their_response_models(client: TestClient) -> None:
    out = client.post("/rankers/r/rank", json={"features": _x()}).json()
    assert set(out) == {"impression", "order", "propensities"}
    fb = client.post("/rankers/r/feedback", json={"impression": out["impression"], "labels": [1]})
    assert fb.json() == {"round": 1, "outcome": None}


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ('{"features": [[1, 2', {"type": "json_invalid", "loc": ["body", 19]}),
        ("", {"type": "missing", "loc": ["body"], "msg": "Field required"}),
        ('"x"', {"type": "model_attributes_type", "loc": ["body"]}),
        ('{"features": "x"}', {"type": "list_type", "msg": "Input should be a valid list"}),
        ('{"features": [["a", 1, 2, 3]]}', {"loc": ["body", "features", 0, 0]}),
    ],
)
def test_refused_bodies_get_fastapis_422(client: TestClient, body: str, error: Any) -> None:
    """The hot routes parse their body themselves; a refused one reads as FastAPI words it."""
    headers = {"content-type": "application/json"}
    resp = client.post("/rankers/r/rank", content=body, headers=headers)
    assert resp.status_code == 422
    (detail,) = resp.json()["detail"]
    assert {k: detail[k] for k in error} == error
