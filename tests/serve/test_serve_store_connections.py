"""Bounded connections: half-sent request heads are closed on time and never starve /healthz."""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
import warnings
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


# -- 20,000 at once, on a real ``oltr serve`` ----------------------------------------------------

MANY = 20_000
MANY_HEAD_TIMEOUT = 45.0  # long enough that every connection is open before the first is closed


def _room_for(connections: int) -> int:
    """Raise this process's open-file limits (inherited by the server) toward ``connections``;
    the connections that fit: the smaller of those, the hard limit and the ephemeral ports."""
    want = connections + 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < want:
        with contextlib.suppress(ValueError, OSError):  # raising the hard limit needs privilege
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, want))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < want:
        top = want if hard == resource.RLIM_INFINITY else min(want, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    # The server's own descriptors (store, log, libraries, listening socket) are about 30; this
    # process's clients share its limit with whatever it already holds (earlier tests' files).
    held = _open_fds(os.getpid()) or 0
    fit = connections if soft == resource.RLIM_INFINITY else min(connections, soft - held - 200)
    ports = Path("/proc/sys/net/ipv4/ip_local_port_range")
    if ports.exists():
        low, high = map(int, ports.read_text().split())
        fit = min(fit, high - low - 1000)
    return fit


def _open_fds(pid: int) -> int | None:
    fds = Path(f"/proc/{pid}/fd")
    return len(list(fds.iterdir())) if fds.exists() else None


@pytest.mark.slow
def test_20000_half_sent_heads_are_all_closed_and_healthz_answers_meanwhile(
    tmp_path: Path,
) -> None:
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        n = _room_for(MANY)
        if n < MANY:
            warnings.warn(f"this machine holds {n} of {MANY} connections at once", stacklevel=1)
        assert n >= 1000, f"room for only {n} connections"
        _many_idle_connections(tmp_path, n)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)


def _many_idle_connections(tmp_path: Path, n: int) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cmd = [
        *(sys.executable, "-m", "oltr.cli", "serve", "--store", str(tmp_path / "s.db")),
        *("--port", str(port), "--sync", "NORMAL", "--limit-concurrency", str(n + 100)),
        *("--timeout-header", str(MANY_HEAD_TIMEOUT)),
    ]
    log = tmp_path / "serve.log"  # a file, not a pipe: a full pipe would stall the server
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=out)
    url = f"http://127.0.0.1:{port}"
    idle: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "no service"
            time.sleep(0.1)
        first = time.monotonic()
        for i in range(n):
            sock = _connect(port, i)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            idle.append(sock)
        # All of them open at once, in the server too (one descriptor each, once accepted).
        held = _open_fds(proc.pid)
        while held is not None and held < n and time.monotonic() < first + MANY_HEAD_TIMEOUT - 5:
            time.sleep(0.1)
            held = _open_fds(proc.pid)
        last = time.monotonic()
        assert last - first < MANY_HEAD_TIMEOUT - 5, f"{n} connections took {last - first:.1f} s"
        assert held is None or held >= n, f"the server holds {held} descriptors"
        slowest = 0.0
        for _ in range(5):
            start = time.monotonic()
            answer = httpx.get(f"{url}/healthz", timeout=1.0)
            slowest = max(slowest, time.monotonic() - start)
            assert answer.status_code == 200
            time.sleep(0.2)
        print(f"{n} connections opened in {last - first:.1f} s; slowest /healthz {slowest:.3f} s")
        assert slowest < 1.0
        assert time.monotonic() < first + MANY_HEAD_TIMEOUT, "not measured while all were open"
        # Then the head timeout closes every one of them.
        open_ = _closed_all(idle, until=last + MANY_HEAD_TIMEOUT + 10)
        assert not open_, f"{len(open_)} of {n} half-sent heads still open"
        print(f"all closed {time.monotonic() - last:.1f} s after the last opened")
        assert httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200
    finally:
        for sock in idle:
            sock.close()
        proc.kill()
        proc.wait(timeout=30)
    err = log.read_text(errors="replace")
    assert "Traceback" not in err, err[-3000:]


def _connect(port: int, i: int) -> socket.socket:
    """Connection ``i`` to the server; on Linux from one of 2,000 loopback addresses, whose
    port is chosen at connect time (a port per address, not one of the range per connection:
    opening 20,000 stays fast as the ephemeral ports fill)."""
    if sys.platform != "linux":
        return socket.create_connection(("127.0.0.1", port), timeout=5.0)
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24), 1)
    sock.bind((f"127.0.{1 + i % 8}.{1 + (i // 8) % 250}", 0))
    sock.settimeout(5.0)
    sock.connect(("127.0.0.1", port))
    return sock


def _closed_all(socks: list[socket.socket], until: float) -> set[socket.socket]:
    """Wait until the peer has closed each of ``socks`` (or ``until``); those still open."""
    still = set(socks)
    with selectors.DefaultSelector() as sel:
        for sock in socks:
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ)
        while still and time.monotonic() < until:
            for key, _ in sel.select(timeout=max(0.0, until - time.monotonic())):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    data = sock.recv(1024)
                except ConnectionResetError:
                    data = b""
                assert data == b"", f"an answer to a half-sent head: {data[:80]!r}"
                sel.unregister(sock)
                still.discard(sock)
    return still
