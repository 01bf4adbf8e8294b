"""Bounded resources: each limit refuses with the option that raises it, memory stays bounded,
and a long request of one ranker never holds up the others."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import uvicorn
from fastapi.testclient import TestClient

from oltr.serve import ServeSettings, create_app
from oltr.serve.connections import ConnectionLimits, uvicorn_config
from oltr.serve.limits import ITEM_BYTES, Limits

D = 3
RTOPK = {
    "learner": "rtopk",
    "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    "feedback": "top-k",
    "n_features": D,
    "normalize": False,  # the magnitudes below reach the learner as sent
    "horizon": 1000,
}
CHOICE = {"learner": "onlinerank", "feedback": "choice", "horizon": 100}


def _client(tmp_path: Path, **limits: int) -> TestClient:
    tmp_path.mkdir(exist_ok=True)
    settings = ServeSettings(store=tmp_path / "s.db", limits=Limits(**limits))
    return TestClient(create_app(settings))


def _state(client: TestClient) -> Any:
    return client.get("/rankers").json()


@pytest.mark.parametrize(
    ("rows", "status"),
    [(5, 200), (6, 413)],  # 5 x 3 = 15 cells fit the limit of 15; 6 x 3 = 18 do not
)
def test_rank_request_over_max_cells_is_413_naming_the_option(
    tmp_path: Path, rows: int, status: int
) -> None:
    client = _client(tmp_path, max_cells=15)
    assert client.put("/rankers/r", json=RTOPK).status_code == 201
    before = _state(client)
    answer = client.post("/rankers/r/rank", json={"features": np.ones((rows, D)).tolist()})
    assert answer.status_code == status, answer.text
    if status == 413:
        assert "--max-cells" in answer.json()["detail"]
        assert "15 cells" in answer.json()["detail"]
        assert _state(client) == before  # no impression, the learner untouched
    else:
        assert _state(client)["rankers"][0]["impressions"] == 1


@pytest.mark.parametrize(
    ("field", "value", "option", "base"),
    [
        ("n_items", 51, "--max-items", CHOICE),
        ("n_features", 41, "--max-features", RTOPK),
    ],
)
def test_definitions_over_their_limit_are_refused_naming_the_option(
    tmp_path: Path, field: str, value: int, option: str, base: dict[str, Any]
) -> None:
    client = _client(tmp_path, max_items=50, max_features=40)
    assert client.put("/rankers/keep", json=RTOPK).status_code == 201
    before = _state(client)
    answer = client.put("/rankers/big", json={**base, field: value})
    assert answer.status_code == 422, answer.text
    assert option in answer.json()["detail"]
    assert client.get("/rankers/big").status_code == 404
    assert _state(client) == before
    assert client.put("/rankers/big", json={**base, field: value - 1}).status_code == 201


@pytest.mark.parametrize("name", ["max_cells", "max_items", "max_features", "max_pending_bytes"])
@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_limits_must_be_positive_whole_numbers(name: str, bad: Any) -> None:
    option = "--" + name.replace("_", "-")
    with pytest.raises(ValueError, match=re.escape(option)):
        Limits(**{name: bad})


def _rounds(client: TestClient, rows: list[np.ndarray]) -> tuple[list[str], Any]:
    shown = [client.post("/rankers/r/rank", json={"features": x.tolist()}).json() for x in rows]
    for i, answer in enumerate(shown):  # the oldest first: those the budget dropped first
        body = {"impression": answer["impression"], "labels": [i % 3]}
        fb = client.post("/rankers/r/feedback", json=body)
        assert fb.status_code == 200, fb.text
    return [a["impression"] for a in shown], client.get("/rankers/r").json()["learner"]


def test_pending_impressions_stay_within_the_byte_budget_and_keep_their_feedback(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    rows = [rng.random((8, D)) for _ in range(12)]
    one = 8 * D * 8 + ITEM_BYTES * 2 * 8  # features, orders and shown list of one impression
    limit = 3 * one + one // 2  # room for three impressions, not four
    small = _client(tmp_path / "a", max_pending_bytes=limit)
    roomy = _client(tmp_path / "b")
    budget = small.app.state.rankers.budget  # type: ignore[attr-defined]
    for client in (small, roomy):
        assert client.put("/rankers/r", json=RTOPK).status_code == 201
    for x in rows:
        small.post("/rankers/r/rank", json={"features": x.tolist()})
        assert 0 < budget.total <= limit
    assert budget.total == 3 * one  # the three newest held, the nine oldest dropped
    small.delete("/rankers/r")
    assert budget.total == 0
    # dropped from memory, not from the store: every feedback applies, to the same weights
    small.put("/rankers/r", json=RTOPK)
    assert _rounds(small, rows)[1] == _rounds(roomy, rows)[1]


def _vmrss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/<pid>/status")
def test_oversized_rank_requests_do_not_grow_the_server_beyond_its_budget(tmp_path: Path) -> None:
    budget = 8 << 20
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(tmp_path / "s.db")]
    cmd += ["--port", "0", "--log-level", "info", "--max-pending-bytes", str(budget)]
    cmd += ["--sync", "NORMAL"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")))  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while not (
            url := next((re.search(r"http://\S+:\d+", s) for s in lines if "running on" in s), None)
        ):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.05)
        base = url.group(0)
        rng = np.random.default_rng(0)
        body = json.dumps({"features": np.round(rng.random((100_000, 1)), 2).tolist()})
        with httpx.Client(base_url=base, timeout=60) as http:
            assert http.put("/rankers/r", json={**RTOPK, "n_features": 1}).status_code == 201
            for i in range(40):
                answer = http.post("/rankers/r/rank", content=body)
                assert answer.status_code == 200, answer.text
                if i == 4:  # after the first few: code paths warm, the allocator settled
                    settled = _vmrss_kib(proc.pid)
            grown = (_vmrss_kib(proc.pid) - settled) * 1024
        # 35 impressions of 100,000 rows hold 35 x 7.2 MB unbounded; the budget keeps 8 MB,
        # plus what one request takes while it is parsed and answered (tens of MB).
        assert grown < budget + (64 << 20), f"grew by {grown / 2**20:.0f} MiB"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        reader.join(timeout=10)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    app = create_app(ServeSettings(store=tmp_path / "s.db", limits=Limits(max_items=10**6)))
    server = uvicorn.Server(
        uvicorn_config(app, "127.0.0.1", 0, ConnectionLimits(), log_level="error")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}", app.state.rankers
    server.should_exit = True
    thread.join(timeout=10)


def test_a_large_fixed_item_sort_does_not_hold_up_other_requests(live: tuple[str, Any]) -> None:
    url, rankers = live
    done: list[str] = []
    with httpx.Client(base_url=url, timeout=120) as http:
        assert http.put("/rankers/big", json={**CHOICE, "n_items": 10**6}).status_code == 201
        assert http.put("/rankers/small", json={**CHOICE, "n_items": 5}).status_code == 201
        big = rankers.get("big")
        sort = big.rank_locked

        # The big sort waits (at most 30 s) until the other requests are answered: off the event
        # loop they are answered meanwhile; on it they could only follow, after the wait ran out.
        others_answered = threading.Event()

        def sorted_then_noted(features: Any) -> Any:
            out = sort(features)
            others_answered.wait(timeout=30)
            done.append("big sorted")
            return out

        big.rank_locked = sorted_then_noted
        answers: list[httpx.Response] = []
        slow = threading.Thread(
            target=lambda: answers.append(http.post("/rankers/big/rank", json={}))
        )
        slow.start()
        deadline = time.monotonic() + 60
        while not big.lock.locked():  # the big rank has started
            assert slow.is_alive() and time.monotonic() < deadline, answers
            time.sleep(0.001)
        assert http.get("/healthz").status_code == 200
        done.append("healthz")
        assert http.post("/rankers/small/rank", json={}).status_code == 200
        done.append("small")
        others_answered.set()
        slow.join()
    assert done == ["healthz", "small", "big sorted"]
    assert answers[0].status_code == 200 and len(answers[0].json()["order"]) == 10**6


@pytest.mark.parametrize(
    ("surrogate", "scale", "label", "message"),
    [
        ("squared", 1e300, 1.0, "too large for the adaptive step"),
        ("squared", 1.0, 1e308, "direction of run 0 overflowed"),
        ("kl", 1.0, 1000.0, "above 709.78"),
        ("smoothdcg", 1.0, 1e6, "from g = 1024"),
    ],
)
def test_magnitudes_the_learner_cannot_take_are_422_and_change_nothing(
    tmp_path: Path, surrogate: str, scale: float, label: float, message: str
) -> None:
    client = _client(tmp_path)
    params = {"surrogate": surrogate, "gamma": 0.3}
    assert client.put("/rankers/r", json={**RTOPK, "params": params}).status_code == 201
    x = np.random.default_rng(2).random((5, D))
    shown = client.post("/rankers/r/rank", json={"features": (x * scale).tolist()}).json()
    before = client.get("/rankers/r").json()
    body = {"impression": shown["impression"], "labels": [label]}
    answer = client.post("/rankers/r/feedback", json=body)
    assert answer.status_code == 422, answer.text
    assert message in answer.json()["detail"]
    assert client.get("/rankers/r").json() == before


def test_serve_refuses_a_limit_below_one(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from oltr.cli import app as cli

    store = str(tmp_path / "s.db")
    result = CliRunner().invoke(cli, ["serve", "--store", store, "--max-pending-bytes", "0"])
    assert result.exit_code == 2
    assert "--max-pending-bytes must be a whole number >= 1, got 0" in result.output
