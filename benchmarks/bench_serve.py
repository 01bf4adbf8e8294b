"""Load on ``oltr serve`` over loopback: latency of rank and feedback, sustained rate.

A uvicorn server runs in a subprocess on 127.0.0.1 with an RTop-kF ranker at
(m, d) = (50, 46); client threads send rank+feedback pairs, open loop at a
target rate (each pair starts on its schedule), then as fast as they can.
Bounded: at most ``PAIRS`` pairs and ``SECONDS`` seconds per setting.
Reports p50/p99 latency of each request and the achieved pair rate.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

M, D = 50, 46
PAIRS, SECONDS = 3000, 10.0
THREADS = int(os.environ.get("BENCH_SERVE_THREADS", "4"))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(store: Path, port: int, sync: str) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(store)]
    cmd += ["--port", str(port), "--sync", sync]
    proc = subprocess.Popen(cmd, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.1)
    proc.kill()
    raise TimeoutError("server did not start")


def _load(url: str, rate: float | None) -> tuple[list[float], list[float], float, int]:
    """Send pairs (at ``rate`` pairs/s, or flat out); return latencies, wall time, pairs."""
    rng = np.random.default_rng(0)
    bodies = [{"features": rng.random((M, D)).round(6).tolist()} for _ in range(64)]
    rank_ms: list[float] = []
    fb_ms: list[float] = []
    lock = threading.Lock()
    counter = [0]
    start = time.perf_counter()

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=10) as http:
            while True:
                with lock:
                    i = counter[0]
                    counter[0] += 1
                if i >= PAIRS or time.perf_counter() - start > SECONDS:
                    return
                if rate is not None:  # open loop: wait for this pair's slot
                    delay = start + i / rate - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                t0 = time.perf_counter()
                out = http.post("/rankers/b/rank", json=bodies[i % 64]).json()
                t1 = time.perf_counter()
                http.post(
                    "/rankers/b/feedback", json={"impression": out["impression"], "labels": [1]}
                )
                t2 = time.perf_counter()
                with lock:
                    rank_ms.append(1e3 * (t1 - t0))
                    fb_ms.append(1e3 * (t2 - t1))

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return rank_ms, fb_ms, time.perf_counter() - start, len(rank_ms)


def main() -> None:
    print(
        f"RTop-kF (squared, top-1) at m={M}, d={D}; {THREADS} client threads; "
        f"<= {PAIRS} pairs or {SECONDS:.0f} s per row; cores: {os.cpu_count()}"
    )
    print(
        f"{'sync':>6} {'target/s':>9} {'pairs/s':>8} {'rank p50':>9} {'rank p99':>9} "
        f"{'fb p50':>8} {'fb p99':>8}  (ms)"
    )
    for sync in ("NORMAL", "FULL"):
        with tempfile.TemporaryDirectory() as tmp:
            port = _port()
            proc = _serve(Path(tmp) / "b.db", port, sync)
            url = f"http://127.0.0.1:{port}"
            try:
                httpx.put(
                    f"{url}/rankers/b",
                    json={
                        "learner": "rtopk",
                        "params": {"surrogate": "squared"},
                        "horizon": 100_000,
                        "feedback": "top-k",
                        "feedback_params": {"k": 1},
                        "n_features": D,
                    },
                ).raise_for_status()
                _load(url, None)  # warm up (numba, caches)
                for rate in (500.0, None):
                    r, f, wall, n = _load(url, rate)
                    print(
                        f"{sync:>6} {rate or 'max'!s:>9} {n / wall:8.0f} "
                        f"{np.percentile(r, 50):9.2f} {np.percentile(r, 99):9.2f} "
                        f"{np.percentile(f, 50):8.2f} {np.percentile(f, 99):8.2f}",
                        flush=True,
                    )
            finally:
                proc.terminate()
                proc.wait(timeout=20)


if __name__ == "__main__":
    main()
