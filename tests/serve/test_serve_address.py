"""``oltr serve`` says where it listens: the port it really bound (``--port 0`` too), its store
and whether a token is required, on stdout, once it serves."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

TOKEN = "not-for-the-log"


def _lines(stream: object, into: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.put(line)


def test_serve_prints_the_port_it_bound_and_its_store(tmp_path: Path) -> None:
    store, token_file = tmp_path / "web.db", tmp_path / "token.txt"
    token_file.write_text(TOKEN + "\n")
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--port", "0", "--store", str(store)]
    cmd += ["--token-file", str(token_file), "--sync", "NORMAL"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    out: queue.Queue[str] = queue.Queue()
    err: queue.Queue[str] = queue.Queue()
    for stream, into in ((proc.stdout, out), (proc.stderr, err)):
        threading.Thread(target=_lines, args=(stream, into), daemon=True).start()
    try:
        printed: list[str] = []
        deadline = time.monotonic() + 90  # the first start imports and compiles a great deal
        while len(printed) < 2:
            assert proc.poll() is None, "".join(err.queue)
            assert time.monotonic() < deadline, f"nothing printed: {printed} {list(err.queue)}"
            try:
                printed.append(out.get(timeout=0.5))
            except queue.Empty:
                pass
        where = re.fullmatch(
            r"oltr serve listening on http://127\.0\.0\.1:(\d+); "
            r"the page: http://127\.0\.0\.1:(\d+)/ui/\n",
            printed[0],
        )
        assert where is not None, printed
        port = int(where.group(1))
        assert port > 0 and int(where.group(2)) == port
        assert printed[1] == f"oltr serve store: {store.resolve()}; bearer token required\n"
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).json() == {"status": "ok"}
        # The port printed is the service's: a route behind the token answers 401 without it.
        assert httpx.get(f"http://127.0.0.1:{port}/rankers", timeout=10).status_code == 401
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    time.sleep(0.2)  # the reader threads take the last lines
    # uvicorn stops cleanly on SIGTERM, then re-raises it: the status says what ended it
    assert proc.returncode in (0, -signal.SIGTERM)
    said = "".join(printed) + "".join(out.queue) + "".join(err.queue)
    assert TOKEN not in said
