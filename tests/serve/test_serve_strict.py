"""No 5xx and no traceback for any body; the published OpenAPI schema is what the service sends."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from oltr.serve import ServeSettings, create_app

jsonschema = pytest.importorskip("jsonschema")

D = 3
RTOPK = {
    "learner": "rtopk",
    "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    "feedback_params": {"k": 2},
    "n_features": D,
    "seed": 1,
}
JSON = {"content-type": "application/json"}
DEEP = b"[" * 100_000  # 100 KB, under the default body limit


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    c = TestClient(create_app(ServeSettings(store=tmp_path / "s.db", token="t")))
    c.headers["Authorization"] = "Bearer t"
    assert c.put("/rankers/r", json=RTOPK).status_code == 201
    return c


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/rankers/r/rank", DEEP, 422),
        ("POST", "/rankers/r/feedback", DEEP, 422),
        ("PUT", "/rankers/q", DEEP, 422),
        ("POST", "/rankers/r/rank", b'{"features": [[1, \xc3\x28, 2]]}', 422),
        ("PUT", "/rankers/q", b'{"learner": "\xff"}', 422),
        ("POST", "/rankers/r/rank", b'{"features": [[1, 2, 3]', 422),
        ("PUT", "/rankers/q", b'{"learner": "rtopk", "n_fea', 422),
    ],
)
def test_bodies_that_do_not_parse_get_a_4xx(
    client: TestClient, method: str, path: str, body: bytes, status: int
) -> None:
    resp = client.request(method, path, content=body, headers=JSON)
    assert resp.status_code == status, resp.text
    assert resp.json()["detail"]
    assert client.get("/rankers/q").status_code == 404


def _validate(doc: dict[str, Any], method: str, route: str, resp: httpx.Response) -> None:
    """``resp`` is one of the answers the published schema declares for ``method route``."""
    answers = doc["paths"][route][method.lower()]["responses"]
    declared = answers.get(str(resp.status_code))
    assert declared is not None, f"{method} {route}: {resp.status_code} is not declared"
    content = declared.get("content")
    if not content:
        assert not resp.content
        return
    media = resp.headers["content-type"]
    assert media in content, f"{method} {route}: {media!r} is not one of {list(content)}"
    schema = {**content[media]["schema"], "components": doc["components"]}
    if media == "application/json":
        jsonschema.Draft202012Validator(schema).validate(resp.json())
    else:
        jsonschema.Draft202012Validator(schema).validate(resp.text)


def test_answers_are_those_the_published_schema_declares(client: TestClient) -> None:
    doc = client.app.openapi()  # type: ignore[attr-defined]
    rank, feedback = "/rankers/{name}/rank", "/rankers/{name}/feedback"
    x = [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]
    out = client.post("/rankers/r/rank", json={"features": x})
    cases: list[tuple[str, str, httpx.Response]] = [
        ("PUT", "/rankers/{name}", client.put("/rankers/q", json=RTOPK)),  # 201
        ("PUT", "/rankers/{name}", client.put("/rankers/q", json=RTOPK)),  # 200: the same
        ("PUT", "/rankers/{name}", client.put("/rankers/q", json={**RTOPK, "seed": 2})),  # 409
        ("PUT", "/rankers/{name}", client.put("/rankers/q", json={**RTOPK, "seed": "2"})),
        ("PUT", "/rankers/{name}", client.put("/rankers/q", content=DEEP, headers=JSON)),
        ("GET", "/rankers", client.get("/rankers")),
        ("GET", "/rankers/{name}", client.get("/rankers/none")),
        ("POST", rank, out),
        ("POST", rank, client.post("/rankers/r/rank", json={"features": [[True, 1, 2]]})),
        ("POST", rank, client.post("/rankers/r/rank", json={"features": [[1.0, 2.0]]})),
        ("POST", rank, client.post("/rankers/r/rank", content=b"\xff", headers=JSON)),
        ("POST", rank, client.post("/rankers/r/rank", json={"features": x * 100_000})),  # 413
        ("POST", rank, client.post("/rankers/r/rank", json={}, headers={"Authorization": ""})),
        ("POST", feedback, client.post("/rankers/r/feedback", json={"impression": "x"})),
        (
            "POST",
            feedback,
            client.post(
                "/rankers/r/feedback", json={"impression": out.json()["impression"], "labels": [1]}
            ),
        ),
        ("GET", "/metrics", client.get("/metrics")),
        ("GET", "/healthz", client.get("/healthz")),
        ("DELETE", "/rankers/{name}", client.delete("/rankers/q")),  # 204, no body
    ]
    statuses = sorted({resp.status_code for *_, resp in cases})
    assert statuses == [200, 201, 204, 401, 404, 409, 413, 422]
    for method, route, resp in cases:
        _validate(doc, method, route, resp)
    # Both forms of a 422: located errors for types, a sentence for values.
    details = [r.json()["detail"] for m, _, r in cases if r.status_code == 422]
    assert {type(d) for d in details} == {list, str}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _half_body(port: int, method: str, path: str) -> None:
    """Announce a 2,000-byte body, send 40 bytes of it, and go away."""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Content-Type: application/json\r\nContent-Length: 2000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head.encode() + b'{"features": [[0.1, 0.2, 0.3], [0.4, 0.')
        time.sleep(0.05)  # the route is reading the body


def test_clients_that_go_away_mid_body_leave_no_traceback(tmp_path: Path) -> None:
    port = _free_port()
    log = tmp_path / "stderr.log"
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(tmp_path / "s.db")]
    with log.open("wb") as err:
        proc = subprocess.Popen([*cmd, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
                time.sleep(0.1)
        assert httpx.put(f"{url}/rankers/r", json=RTOPK).status_code == 201
        for _ in range(3):
            for method, path in (
                ("POST", "/rankers/r/rank"),
                ("POST", "/rankers/r/feedback"),
                ("PUT", "/rankers/q"),
            ):
                _half_body(port, method, path)
        time.sleep(0.3)
        assert httpx.get(f"{url}/healthz", timeout=1).status_code == 200
        # the metrics count each as a client that went away
        text = httpx.get(f"{url}/metrics").text
        assert 'route="/rankers/{name}/rank",status="499"} 3.0' in text
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    text = log.read_text()
    assert "Traceback" not in text and "ClientDisconnect" not in text, text


def test_a_grade_the_learners_gain_cannot_hold_gets_422_and_changes_nothing(
    client: TestClient,
) -> None:
    body = {**RTOPK, "params": {"surrogate": "smoothdcg", "gamma": 0.3, "eta": 0.1}}
    body["feedback_params"] = {"k": 1}
    assert client.put("/rankers/s", json=body).status_code == 201
    shown = client.post("/rankers/s/rank", json={"features": [[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]})
    impression = shown.json()["impression"]
    before = client.get("/rankers/s").json()
    resp = client.post("/rankers/s/feedback", json={"impression": impression, "labels": [1e6]})
    assert resp.status_code == 422, resp.text
    assert "too large for the exponential gain" in resp.json()["detail"]
    assert client.get("/rankers/s").json() == before
    ok = client.post("/rankers/s/feedback", json={"impression": impression, "labels": [3]})
    assert ok.status_code == 200 and ok.json()["round"] == 1
