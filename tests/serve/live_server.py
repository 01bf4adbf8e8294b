"""An `oltr serve` process on 127.0.0.1 for the tests that kill it: start, wait, pick a port."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from oltr.client import OltrClient


def free_port() -> int:
    """A port of 127.0.0.1 free a moment ago (the server binds it right after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    store: Path,
    port: int,
    *,
    snapshot_every: int = 7,
    sync: str = "NORMAL",
    stderr: int = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """``oltr serve`` on ``store`` in a child process (NORMAL: every commit survives a SIGKILL)."""
    cmd = [sys.executable, "-m", "oltr.cli", "serve", "--store", str(store), "--port", str(port)]
    cmd += ["--snapshot-every", str(snapshot_every), "--sync", sync]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr)


def wait_healthy(client: OltrClient, deadline: float) -> None:
    """Return once ``client``'s server answers its health check; TimeoutError at ``deadline``."""
    while time.monotonic() < deadline:
        try:
            if client.health():
                return
        except Exception:  # not listening yet
            time.sleep(0.05)
    raise TimeoutError("the service did not start in time")
