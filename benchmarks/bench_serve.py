"""Load on ``oltr serve`` over loopback: latency of rank and feedback, sustained rate.

A uvicorn server runs in a subprocess on 127.0.0.1 with an RTop-kF ranker at
(m, d) = (50, 46); client threads send rank+feedback pairs, open loop at a
target rate (each pair starts on its schedule), then as fast as they can.
Bounded: at most ``PAIRS`` pairs and ``SECONDS`` seconds per setting.
Reports p50/p99 latency of each request, the achieved pair rate, the p99 of
how late pairs started against their schedule (open loop), the CPU time the
server and the client spent per pair, and the load average.

The client is kept cheap because it shares the machine with the server: the
rank request bodies are encoded once, and requests go over keep-alive sockets
as pre-built HTTP/1.1 bytes (no HTTP library on the hot path).

Environment: ``BENCH_SERVE_THREADS`` (client threads, default 16: enough
connections for the open loop to keep its schedule while requests wait for a
commit); ``BENCH_SERVE_BASELINE=DIR`` also measures the package found in
``DIR`` (e.g. an older ``oltr`` exported with ``git archive REV oltr | tar -x
-C DIR``), labelled "before", and the current code on uvicorn's pure-Python
HTTP parser and event loop (h11, asyncio), labelled "now-py", so that one run
shows what the code changed and what the compiled parser and loop (httptools,
uvloop) add. Both run with those two blocked, as the baseline did not
depend on them. A last row serves PDGD at the same (m, d), learning from clicks
(``BENCH_SERVE_ONLY=pdgd`` runs that row alone).
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

M, D = 50, 46
PAIRS, SECONDS = 3000, 10.0
THREADS = int(os.environ.get("BENCH_SERVE_THREADS", "16"))
BASELINE = os.environ.get("BENCH_SERVE_BASELINE")
_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: application/json\r\n"
    return f"{head}content-length: {len(body)}\r\n\r\n".encode() + body


class _Conn:
    """One keep-alive HTTP/1.1 connection sending pre-built requests."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def call(self, request: bytes) -> tuple[int, bytes]:
        self.sock.sendall(request)
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self.buf += self._recv()
        head, rest = self.buf[:end], self.buf[end + 4 :]
        found = _LENGTH.search(head)
        length = int(found.group(1)) if found else 0
        while len(rest) < length:
            rest += self._recv()
        self.buf = rest[length:]
        return int(head[9:12]), rest[:length]

    def _recv(self) -> bytes:
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("server closed the connection")
        return chunk

    def close(self) -> None:
        self.sock.close()


#: Imported at the server's start: uvicorn then falls back to h11 and asyncio.
_PURE_PYTHON_HTTP = 'import sys\nsys.modules["httptools"] = sys.modules["uvloop"] = None\n'


def _serve(
    store: Path, port: int, sync: str, package: str | None, pure: bool
) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(store)]
    cmd += ["--port", str(port), "--sync", sync]
    env = dict(os.environ)
    path = [] if package is None else [package]
    if pure:
        (store.parent / "sitecustomize.py").write_text(_PURE_PYTHON_HTTP)
        path.insert(0, str(store.parent))
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The store's folder as working directory: the package comes from PYTHONPATH or the install.
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, env=env, cwd=store.parent)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = _Conn(port)
            status, _ = conn.call(_request("GET", "/healthz"))
            conn.close()
            if status == 200:
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError("server did not start")


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _features(i: int) -> bytes:
    x = np.random.default_rng(i).random((M, D)).round(6)
    return json.dumps({"features": x.tolist()}).encode()


BODIES = [_request("POST", "/rankers/b/rank", _features(i)) for i in range(64)]
FEEDBACK = '{{"impression": "{}", "labels": [1]}}'


def _load(
    port: int,
    rate: float | None,
    pairs: int = PAIRS,
    seconds: float = SECONDS,
    feedback: str = FEEDBACK,
) -> dict[str, Any]:
    """Send pairs (at ``rate`` pairs/s, or flat out); return latencies and rates."""
    rank_ms: list[float] = []
    fb_ms: list[float] = []
    lag_ms: list[float] = []
    lock = threading.Lock()
    counter = [0]
    errors: list[str] = []
    start = time.perf_counter()

    def worker() -> None:
        conn = _Conn(port)
        try:
            while True:
                with lock:
                    i = counter[0]
                    counter[0] += 1
                if i >= pairs or time.perf_counter() - start > seconds:
                    return
                lag = 0.0
                if rate is not None:  # open loop: wait for this pair's slot
                    slot = start + i / rate
                    lag = time.perf_counter() - slot
                    if lag < 0:
                        time.sleep(-lag)
                        lag = 0.0
                t0 = time.perf_counter()
                status, out = conn.call(BODIES[i % 64])
                t1 = time.perf_counter()
                impression = json.loads(out)["impression"] if status == 200 else "?"
                body = feedback.format(impression).encode()
                status2, _ = conn.call(_request("POST", "/rankers/b/feedback", body))
                t2 = time.perf_counter()
                with lock:
                    if status != 200 or status2 != 200:
                        errors.append(f"{status}/{status2}")
                    rank_ms.append(1e3 * (t1 - t0))
                    fb_ms.append(1e3 * (t2 - t1))
                    lag_ms.append(1e3 * lag)
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise RuntimeError(f"{len(errors)} failed pairs, e.g. {errors[:3]}")
    n = len(rank_ms)
    return {"rank": rank_ms, "fb": fb_ms, "lag": lag_ms, "rate": n / (time.perf_counter() - start)}


def _row(
    label: str, sync: str, port: int, pid: int, rate: float | None, feedback: str = FEEDBACK
) -> None:
    server0, client0 = _cpu_seconds(pid), _own_cpu()
    res = _load(port, rate, feedback=feedback)
    n = len(res["rank"])
    server_ms = 1e3 * (_cpu_seconds(pid) - server0) / n
    client_ms = 1e3 * (_own_cpu() - client0) / n
    r, f = np.asarray(res["rank"]), np.asarray(res["fb"])
    print(
        f"{label:>6} {sync:>6} {rate or 'max'!s:>6} {res['rate']:7.0f} "
        f"{np.percentile(r, 50):8.2f} {np.percentile(r, 99):8.2f} "
        f"{np.percentile(f, 50):6.2f} {np.percentile(f, 99):6.2f} "
        f"{np.percentile(res['lag'], 99):7.1f} {server_ms:7.2f} {client_ms:7.2f} "
        f"{os.getloadavg()[0]:5.2f}",
        flush=True,
    )


RANKER = {
    "learner": "rtopk",
    "params": {"surrogate": "squared"},
    "horizon": 100_000,
    "feedback": "top-k",
    "feedback_params": {"k": 1},
    "n_features": D,
}


#: Served PDGD learning from clicks on a page of 10 (the click learners' case).
PDGD = {
    "learner": "pdgd",
    "feedback": "clicks",
    "feedback_params": {"click_model": "navigational", "n_grades": 3, "k": 10},
    "n_features": D,
}
CLICKS = '{{"impression": "{}", "clicks": [0, 2]}}'


def _setting(
    label: str,
    sync: str,
    package: str | None,
    pure: bool = False,
    ranker: dict[str, object] = RANKER,
    feedback: str = FEEDBACK,
    rates: tuple[float | None, ...] = (500.0, None),
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        port = _port()
        proc = _serve(Path(tmp) / "b.db", port, sync, package, pure)
        try:
            conn = _Conn(port)
            status, out = conn.call(_request("PUT", "/rankers/b", json.dumps(ranker).encode()))
            conn.close()
            if status != 201:
                raise RuntimeError(f"PUT /rankers/b: {status} {out!r}")
            _load(port, None, pairs=500, seconds=3.0, feedback=feedback)  # warm up (numba, caches)
            for rate in rates:
                _row(label, sync, port, proc.pid, rate, feedback)
        finally:
            proc.terminate()
            proc.wait(timeout=20)


def _fsync_ms(folder: str, n: int = 100) -> tuple[float, float]:
    """p50 and p99 of ``fdatasync`` after a 4 KB write in ``folder``: the floor of a FULL commit."""
    path, times = Path(folder) / "bench-fsync.bin", []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        for _ in range(n):
            os.write(fd, bytes(4096))
            t0 = time.perf_counter()
            os.fdatasync(fd)
            times.append(1e3 * (time.perf_counter() - t0))
    finally:
        os.close(fd)
        path.unlink()
    return float(np.percentile(times, 50)), float(np.percentile(times, 99))


def main() -> None:
    print(
        f"RTop-kF (squared, top-1) at m={M}, d={D}; {THREADS} client threads; "
        f"<= {PAIRS} pairs or {SECONDS:.0f} s per row; cores: {os.cpu_count()}"
    )
    print(
        f"{'code':>6} {'sync':>6} {'target':>6} {'pairs/s':>7} {'rank p50':>8} {'rank p99':>8} "
        f"{'fb p50':>6} {'fb p99':>6} {'lag p99':>7} {'srv cpu':>7} {'cli cpu':>7} {'load':>5}"
    )
    units = f"{'':>6} {'':>6} {'/s':>6} {'':>7} {'(ms)':>8} {'(ms)':>8} {'(ms)':>6} {'(ms)':>6}"
    print(f"{units} {'(ms)':>7} {'ms/pair':>7} {'ms/pair':>7}")
    for sync in ("NORMAL", "FULL"):
        if sync == "FULL":
            p50, p99 = _fsync_ms(tempfile.gettempdir())
            print(f"fdatasync of 4 KB on the store's disk: p50 {p50:.2f} ms, p99 {p99:.2f} ms")
        if BASELINE:
            _setting("before", sync, BASELINE, pure=True)
            _setting("now-py", sync, None, pure=True)
        _setting("now", sync, None)
    pdgd_rows()


def pdgd_rows() -> None:
    """Served PDGD at (m, d) = (50, 46), clicks on positions 0 and 2, default durability."""
    print(f"PDGD (navigational clicks, page of 10) at m={M}, d={D}; sync FULL (the default)")
    _setting("pdgd", "FULL", None, ranker=PDGD, feedback=CLICKS, rates=(500.0,))


if __name__ == "__main__":
    if os.environ.get("BENCH_SERVE_ONLY") == "pdgd":
        pdgd_rows()
    else:
        main()
