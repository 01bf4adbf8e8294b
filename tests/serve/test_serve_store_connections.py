"""Bounded connections: half-sent request heads are closed on time and never starve /healthz."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from typer.testing import CliRunner

from oltr.cli import app as cli
from oltr.serve import ServeSettings, create_app
from oltr.serve.connections import ConnectionLimits, uvicorn_config

HEAD_TIMEOUT = 1.0
IDLE = 300  # half-header connections held open at once


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    app = create_app(ServeSettings(store=tmp_path / "s.db"))
    limits = ConnectionLimits(timeout_header=HEAD_TIMEOUT, limit_concurrency=IDLE + 100)
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, limits, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the service did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


def _closed_by_peer(sock: socket.socket, wait: float) -> bool:
    sock.settimeout(wait)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_half_sent_heads_are_closed_and_healthz_answers_meanwhile(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    idle = []
    for i in range(IDLE):
        sock = socket.create_connection(("127.0.0.1", port))
        if i % 3:  # two in three send half a head; the others nothing at all
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        idle.append(sock)
    opened = time.monotonic()
    try:
        for _ in range(5):  # while all of them are open
            start = time.monotonic()
            answer = httpx.get(f"{url}/healthz", timeout=1.0)
            assert answer.status_code == 200 and time.monotonic() - start < 1.0
        closed = [
            _closed_by_peer(s, max(0.05, opened + HEAD_TIMEOUT + 3 - time.monotonic()))
            for s in idle
        ]
        assert all(closed), f"{closed.count(False)} of {IDLE} half-sent heads still open"
    finally:
        for sock in idle:
            sock.close()


def test_a_head_sent_a_byte_at_a_time_still_has_its_deadline(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        start = time.monotonic()
        for byte in b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n":
            try:
                sock.sendall(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.1)  # active all along, complete never
        assert time.monotonic() - start < HEAD_TIMEOUT + 2.5
        assert _closed_by_peer(sock, 1.0)


def test_a_head_over_the_size_limit_gets_431_before_its_deadline(url: str) -> None:
    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port)) as sock:
        start = time.monotonic()
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            for _ in range(100):  # 100 KB of headers, never ended
                sock.sendall(b"X-Pad: " + b"a" * 1014 + b"\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        sock.settimeout(HEAD_TIMEOUT)
        answer = b""
        try:
            while chunk := sock.recv(4096):
                answer += chunk
        except ConnectionResetError:
            pass
        assert answer.startswith(b"HTTP/1.1 431 ")
        assert time.monotonic() - start < HEAD_TIMEOUT
    # Large bodies are not heads: 500 KB of JSON goes through to the app (no such ranker).
    big = httpx.post(f"{url}/rankers/none/rank", json={"features": [[0.5] * 5] * 25_000})
    assert big.status_code == 404 and "none" in big.json()["detail"]


def test_a_complete_request_is_not_cut_by_the_head_timeout(url: str) -> None:
    with httpx.Client(base_url=url, timeout=5.0) as client:  # one kept-alive connection
        for _ in range(3):
            assert client.get("/healthz").status_code == 200
            time.sleep(HEAD_TIMEOUT * 0.7)  # idle between requests: not a half-sent head


@pytest.mark.parametrize(
    ("option", "value"),
    [("--timeout-header", "0"), ("--limit-concurrency", "-1"), ("--timeout-keep-alive", "0")],
)
def test_connection_options_out_of_range_are_refused(
    tmp_path: Path, option: str, value: str
) -> None:
    result = CliRunner().invoke(cli, ["serve", "--store", str(tmp_path / "s.db"), option, value])
    assert result.exit_code == 2 and f"{option} must be > 0" in result.stderr
    assert not (tmp_path / "s.db").exists()
