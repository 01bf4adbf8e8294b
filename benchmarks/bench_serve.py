"""Load on ``oltr serve`` over loopback, against the bare HTTP stack it runs on.

For each list size m in ``SIZES`` (d = 46 features), two servers run side by
side in subprocesses on 127.0.0.1: ``oltr serve`` with an RTop-kF ranker, and
the **bare stack** (``serve_bare.py`` beside this file: FastAPI on the same
uvicorn configuration, answering the two routes with constant bytes of
``oltr serve``'s own answers, captured first). Client threads send rank +
feedback pairs, open loop at ``RATE`` pairs/s, then flat out, to one server
at a time, in turns: ``REPEATS`` rows per server and mode
(``BENCH_SERVE_REPEATS``, default 3), so that the machine's drift between
rows falls on both servers alike, and the ratios are the medians of the
per-turn ratios. Bounded: at most ``PAIRS`` pairs and ``SECONDS`` seconds per
row. At the sizes of ``NPY_SIZES`` both servers run once more with the
features sent as a NumPy ``.npy`` body (``Content-Type: application/x-npy``)
instead of JSON numbers.

Open loop without coordinated omission (Tene, "How NOT to measure latency",
2013; Schroeder et al., "Open versus closed: a cautionary tale", NSDI 2006):
pair i has a scheduled start ``start + i / RATE``, and its latency runs from
that schedule to the feedback's answer, so a stall that delays the sending of
later pairs counts against each of them. Flat-out rows have no schedule:
their latency runs from the send. Reported: the achieved pair rate, pair
latency p50 / p99 / p99.9 / max, the p99 of each request, the CPU time the
server (from ``/proc``) and the client spent per pair, and the load average;
then the ratios oltr / bare of the flat-out rate and of the server CPU per
pair, beside the project's targets.

The client is kept cheap because it shares the machine with the server: the
rank request bodies are encoded once, and requests go over keep-alive sockets
as pre-built HTTP/1.1 bytes (no HTTP library on the hot path).

Environment: ``BENCH_SERVE_THREADS`` (client threads, default 16: enough
connections for the open loop to keep its schedule while requests wait for a
commit); ``BENCH_SERVE_SYNC`` (default ``FULL``, the service's default);
``BENCH_SERVE_BASELINE=DIR`` also runs, at m = 50 in the same turns, the
package found in ``DIR`` (e.g. an older ``oltr`` exported with ``git archive
REV oltr | tar -x -C DIR``), labelled "before". (uvicorn's pure-Python parser and loop, h11 and
asyncio, can no longer be compared: ``oltr serve``'s own HTTP protocol is
built on httptools.) Last, served PDGD at (50, 46), learning from clicks, and the bare
stack with PDGD's answers, in turns at ``RATE`` (``BENCH_SERVE_ONLY=pdgd`` runs them alone).
"""

from __future__ import annotations

import io
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
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import numpy as np

D = 46
SIZES = (10, 50, 200)
NPY_SIZES = (50, 200)
NPY = "application/x-npy"
RATE = 500.0
PAIRS, SECONDS = 2000, 5.0
REPEATS = int(os.environ.get("BENCH_SERVE_REPEATS", "3"))
THREADS = int(os.environ.get("BENCH_SERVE_THREADS", "16"))
SYNC = os.environ.get("BENCH_SERVE_SYNC", "FULL")
BASELINE = os.environ.get("BENCH_SERVE_BASELINE")
BARE = Path(__file__).resolve().parent / "serve_bare.py"
#: The project's targets: server CPU per pair of oltr / bare at these m, p99 at RATE.
CPU_TARGETS = {50: 2.0, 200: 3.0}
P99_TARGET_MS = 10.0
_LENGTH = re.compile(rb"content-length:\s*(\d+)", re.IGNORECASE)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _request(method: str, path: str, body: bytes = b"", media: str = "application/json") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nhost: bench\r\ncontent-type: {media}\r\n"
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


def _once(port: int, request: bytes) -> tuple[int, bytes]:
    conn = _Conn(port)
    try:
        return conn.call(request)
    finally:
        conn.close()


def _start(cmd: list[str], port: int, folder: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start a server in ``folder`` (its working directory); return once it answers."""
    out = subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=out, env=env, cwd=folder)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if _once(port, _request("GET", "/healthz"))[0] == 200:
                return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError(f"server did not start: {cmd}")


@contextmanager
def _running(cmd: list[str], port: int, folder: Path, env: dict[str, str]) -> Iterator[int]:
    proc = _start(cmd, port, folder, env)
    try:
        yield proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _oltr(folder: Path, port: int, package: str | None = None) -> AbstractContextManager[int]:
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(folder / "b.db")]
    cmd += ["--port", str(port), "--sync", SYNC]
    env = dict(os.environ)
    if package is not None:
        env["PYTHONPATH"] = package
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The store's folder as working directory: the package comes from PYTHONPATH or the install.
    return _running(cmd, port, folder, env)


def _bare(folder: Path, port: int, rank: bytes, feedback: bytes) -> AbstractContextManager[int]:
    (folder / "rank.json").write_bytes(rank)
    (folder / "feedback.json").write_bytes(feedback)
    cmd = [sys.executable, str(BARE), str(port), "rank.json", "feedback.json"]
    return _running(cmd, port, folder, dict(os.environ))


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _own_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _bodies(m: int, n: int = 32, npy: bool = False) -> list[bytes]:
    """``n`` pre-built rank requests with (m, D) features, as JSON or as a ``.npy`` body."""
    out = []
    for i in range(n):
        x = np.random.default_rng(i).random((m, D)).round(6)
        if npy:
            buffer = io.BytesIO()
            np.save(buffer, x)
            out.append(_request("POST", "/rankers/b/rank", buffer.getvalue(), NPY))
        else:
            body = json.dumps({"features": x.tolist()}).encode()
            out.append(_request("POST", "/rankers/b/rank", body))
    return out


FEEDBACK = '{{"impression": "{}", "labels": [1]}}'


def _load(
    port: int,
    rate: float | None,
    bodies: list[bytes],
    feedback: str = FEEDBACK,
    pairs: int = PAIRS,
    seconds: float = SECONDS,
) -> dict[str, Any]:
    """Send pairs (open loop at ``rate`` pairs/s, or flat out); return latencies and rate."""
    pair_ms: list[float] = []
    rank_ms: list[float] = []
    fb_ms: list[float] = []
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
                t0 = time.perf_counter()
                if rate is not None:  # open loop: latency counts from the pair's slot
                    slot = start + i / rate
                    if slot > t0:
                        time.sleep(slot - t0)
                    t0 = time.perf_counter()
                else:
                    slot = t0
                status, out = conn.call(bodies[i % len(bodies)])
                t1 = time.perf_counter()
                impression = json.loads(out)["impression"] if status == 200 else "?"
                body = feedback.format(impression).encode()
                status2, _ = conn.call(_request("POST", "/rankers/b/feedback", body))
                t2 = time.perf_counter()
                with lock:
                    if status != 200 or status2 != 200:
                        errors.append(f"{status}/{status2}")
                    pair_ms.append(1e3 * (t2 - slot))
                    rank_ms.append(1e3 * (t1 - t0))
                    fb_ms.append(1e3 * (t2 - t1))
        finally:
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise RuntimeError(f"{len(errors)} failed pairs, e.g. {errors[:3]}")
    elapsed = time.perf_counter() - start
    return {"pair": pair_ms, "rank": rank_ms, "fb": fb_ms, "rate": len(pair_ms) / elapsed}


HEADER = (
    f"{'server':>6} {'m':>4} {'target':>6} {'pairs/s':>7} {'p50':>7} {'p99':>7} {'p99.9':>7} "
    f"{'max':>7} {'rank99':>6} {'fb99':>6} {'srv cpu':>7} {'cli cpu':>7} {'load':>5}"
)
UNITS = (
    f"{'':>6} {'':>4} {'/s':>6} {'':>7} {'pair latency (ms), from schedule':>31} "
    f"{'(ms)':>6} {'(ms)':>6} {'ms/pair':>7} {'ms/pair':>7}"
)


def _row(
    label: str,
    m: int,
    port: int,
    pid: int,
    rate: float | None,
    bodies: list[bytes],
    feedback: str = FEEDBACK,
) -> dict[str, float]:
    """Measure one row, print it, and return its rate, server CPU per pair and pair p99."""
    server0, client0 = _cpu_seconds(pid), _own_cpu()
    res = _load(port, rate, bodies, feedback)
    n = len(res["pair"])
    server_ms = 1e3 * (_cpu_seconds(pid) - server0) / n
    client_ms = 1e3 * (_own_cpu() - client0) / n
    p, r, f = (np.asarray(res[k]) for k in ("pair", "rank", "fb"))
    q = np.percentile(p, [50, 99, 99.9])
    load = os.getloadavg()[0]
    print(
        f"{label:>6} {m:>4} {rate or 'max'!s:>6} {res['rate']:7.0f} {q[0]:7.2f} {q[1]:7.2f} "
        f"{q[2]:7.1f} {p.max():7.1f} {np.percentile(r, 99):6.2f} {np.percentile(f, 99):6.2f} "
        f"{server_ms:7.3f} {client_ms:7.3f} {load:5.2f}",
        flush=True,
    )
    return {"rate": res["rate"], "cpu": server_ms, "p99": float(q[1]), "load": load}


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


def _put(port: int, ranker: dict[str, object]) -> None:
    status, out = _once(port, _request("PUT", "/rankers/b", json.dumps(ranker).encode()))
    if status != 201:
        raise RuntimeError(f"PUT /rankers/b: {status} {out!r}")


def _answers(port: int, body: bytes, feedback: str) -> tuple[bytes, bytes]:
    """One real rank answer and the feedback answer to it, from the running ``oltr serve``."""
    conn = _Conn(port)
    try:
        status, rank = conn.call(body)
        impression = json.loads(rank)["impression"]
        fb_req = _request("POST", "/rankers/b/feedback", feedback.format(impression).encode())
        status2, fb = conn.call(fb_req)
    finally:
        conn.close()
    if status != 200 or status2 != 200:
        raise RuntimeError(f"capturing answers: {status}/{status2}")
    return rank, fb


Rows = dict[str, list[dict[str, float]]]


def compare(
    m: int,
    npy: bool = False,
    baseline: str | None = None,
    served: tuple[str, dict[str, object], str] = ("oltr", RANKER, FEEDBACK),
    rates: tuple[float | None, ...] = (RATE, None),
) -> Rows:
    """Rows of ``oltr serve``, the bare stack (and the package in ``baseline``) at list size
    ``m``, features as JSON or .npy: the servers run side by side and are measured in turns,
    ``REPEATS`` rows each at each of ``rates`` (``None``: flat out), so that a drift of the
    machine falls on all of them alike. ``served`` is the row label, the ranker definition
    and the feedback body template of the served ranker (RTop-kF by default)."""
    label, ranker, feedback = served
    bodies, tag = _bodies(m, npy=npy), "-npy" if npy else ""
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        servers: dict[str, tuple[int, int]] = {}
        folders = {name: Path(tmp, name) for name in ("oltr", "before", "bare")}
        for folder in folders.values():
            folder.mkdir()
        port = _port()
        servers[label + tag] = (port, stack.enter_context(_oltr(folders["oltr"], port)))
        _put(port, ranker)
        rank, fb = _answers(port, bodies[0], feedback)
        if baseline is not None:
            port = _port()
            pid = stack.enter_context(_oltr(folders["before"], port, baseline))
            servers["before"] = (port, pid)
            _put(port, ranker)
        port = _port()
        servers["bare" + tag] = (port, stack.enter_context(_bare(folders["bare"], port, rank, fb)))
        for port, _ in servers.values():  # warm up (numba, caches)
            _load(port, None, bodies, feedback, pairs=500, seconds=3.0)
        rows: Rows = {name: [] for name in servers}
        for rate in rates:
            for _ in range(REPEATS):
                for name, (port, pid) in servers.items():
                    rows[name].append(_row(name, m, port, pid, rate, bodies, feedback))
    return rows


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def _ratios(oltr: list[dict[str, float]], bare: list[dict[str, float]], key: str) -> list[float]:
    """Per-turn ratios oltr / bare of ``key``: the rows at RATE, then the flat-out rows."""
    return [a[key] / b[key] for a, b in zip(oltr, bare, strict=True)]


def summary(results: dict[str, Rows]) -> None:
    """Medians (and ranges) of the per-turn ratios oltr / bare, and the targets."""
    print(
        f"oltr / bare, median (range) of the {REPEATS} turns: server CPU per pair at "
        f"{RATE:.0f}/s and flat out; flat-out pairs/s"
    )
    for key, rows in results.items():
        m, npy = int(key.split()[0]), key.endswith("npy")
        oltr, bare = rows["oltr-npy" if npy else "oltr"], rows["bare-npy" if npy else "bare"]
        cpu = _ratios(oltr, bare, "cpu")
        at_rate, flat = cpu[:REPEATS], cpu[REPEATS:]
        rate = _ratios(oltr[REPEATS:], bare[REPEATS:], "rate")
        line = (
            f"  m={key:>7}: CPU/pair {np.median(at_rate):4.2f}x ({min(at_rate):.2f}-"
            f"{max(at_rate):.2f}) at {RATE:.0f}/s, {np.median(flat):4.2f}x ({min(flat):.2f}-"
            f"{max(flat):.2f}) flat out; rate {np.median(rate):4.2f}x"
        )
        if m in CPU_TARGETS:
            ok = float(np.median(at_rate)) <= CPU_TARGETS[m]
            line += f"; target CPU <= {CPU_TARGETS[m]:.0f}x: {_verdict(ok)}"
        print(line)
        if "before" in rows:
            before = _ratios(rows["before"], oltr, "cpu")
            print(
                f"  m={key:>7}: the package in BENCH_SERVE_BASELINE / this one, CPU per pair: "
                f"{np.median(before[:REPEATS]):4.2f}x at {RATE:.0f}/s, "
                f"{np.median(before[REPEATS:]):4.2f}x flat out"
            )
    for key, rows in results.items():
        open_rows = rows["oltr-npy" if key.endswith("npy") else "oltr"][:REPEATS]
        p99 = float(np.median([row["p99"] for row in open_rows]))
        achieved = float(np.median([row["rate"] for row in open_rows]))
        load = max(row["load"] for row in open_rows)
        ok = p99 < P99_TARGET_MS and achieved >= 0.98 * RATE
        print(
            f"  m={key:>7}: oltr pair p99 {p99:.2f} ms at {achieved:.0f}/s, median of turns "
            f"(target < {P99_TARGET_MS:.0f} ms at {RATE:.0f}/s on an idle machine; load up "
            f"to {load:.2f}): {_verdict(ok)}"
        )


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
    p50, p99 = _fsync_ms(tempfile.gettempdir())
    print(
        f"RTop-kF (squared, top-1), d={D}, sync {SYNC}; {THREADS} client threads; "
        f"<= {PAIRS} pairs or {SECONDS:.0f} s per row; cores: {os.cpu_count()}; "
        f"fdatasync of 4 KB: p50 {p50:.2f} ms, p99 {p99:.2f} ms"
    )
    print(HEADER)
    print(UNITS)
    results: dict[str, Rows] = {}
    for m in SIZES:
        results[f"{m}"] = compare(m, baseline=BASELINE if m == 50 else None)
    for m in NPY_SIZES:  # the features as a .npy body: no JSON numbers to print or parse
        results[f"{m} .npy"] = compare(m, npy=True)
    summary(results)
    pdgd_rows()


def pdgd_rows() -> None:
    """Served PDGD at (m, d) = (50, 46), clicks on positions 0 and 2, beside the bare stack.

    The bare stack answers with PDGD's own captured answers; the two servers are loaded
    in turns at ``RATE`` (``REPEATS`` rows each), so the p99 of the stack every served
    learner runs on is measured on the same machine in the same minute as PDGD's.
    """
    print(f"PDGD (navigational clicks, page of 10) at m=50, d={D}; sync {SYNC}")
    print(HEADER)
    rows = compare(50, served=("pdgd", PDGD, CLICKS), rates=(RATE,))
    for label, found in rows.items():
        p99 = float(np.median([row["p99"] for row in found]))
        achieved = float(np.median([row["rate"] for row in found]))
        ok = p99 < P99_TARGET_MS and achieved >= 0.98 * RATE
        print(
            f"  {label}: pair p99 {p99:.2f} ms at {achieved:.0f}/s, median of {REPEATS} turns "
            f"(target < {P99_TARGET_MS:.0f} ms at {RATE:.0f}/s): {_verdict(ok)}"
        )
    cpu = _ratios(rows["pdgd"], rows["bare"], "cpu")
    print(
        f"  pdgd / bare, server CPU per pair at {RATE:.0f}/s: {np.median(cpu):.2f}x "
        f"({min(cpu):.2f}-{max(cpu):.2f})"
    )


if __name__ == "__main__":
    if os.environ.get("BENCH_SERVE_ONLY") == "pdgd":
        pdgd_rows()
    else:
        main()
