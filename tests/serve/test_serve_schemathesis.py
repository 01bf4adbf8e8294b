"""The service against its own published OpenAPI schema: schemathesis, every check, stateful too.

A real ``oltr serve`` process (token file, temporary store) is fuzzed over HTTP
from ``/openapi.json`` in every phase (examples, coverage, fuzzing, stateful)
with every check, bounded in examples and time and seeded.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from oltr.serve import ServeSettings, create_app

TOKEN = "fuzz-token"

# Checks configured away from their defaults, each with its reason.
CONFIG = """
# Positive data the schema allows but the service refuses with a reason, not a fault: a ranker
# definition's learner, feedback model and parameters are checked against the registry and each
# other (an unknown learner, a parameter the learner does not take, a feedback model that does not
# fit it: 422 naming the field), a rank's features against the ranker's n_features and an
# impression against those pending (422, 404, 410), a request against the size limits (413).
# A JSON schema cannot state these, so 413 and 422 are expected answers to valid-looking data.
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "410", "413", "422", "429", "5xx"]

# Names that reach a ranker's logic rather than a 404 most of the time: the rankers defined before
# the run, and the registry's learners and feedback models (any string is fuzzed still).
[dictionaries.names]
values = ["a", "b"]
[dictionaries.learners]
values = ["onlinerank", "rtopk", "listnet", "fixed", "random", "dbgd", "pdgd", "expweights"]
[dictionaries.feedbacks]
values = ["choice", "top-k", "full", "clicks", "duel", "bandit"]

[parameters]
"path.name" = { dictionary = "names", probability = 0.7 }
"body.learner" = { dictionary = "learners", probability = 0.9 }
"body.feedback" = { dictionary = "feedbacks", probability = 0.9 }
"""
# The rankers the run starts with: a fixed item set (ranks without features) and a linear one.
RANKERS = {
    "a": {"learner": "onlinerank", "feedback": "choice", "n_items": 4, "horizon": 100},
    "b": {"learner": "rtopk", "n_features": 1, "feedback_params": {"k": 1}},
}


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("OPTIONS", "/rankers/x", "DELETE, GET, PUT"),
        ("PATCH", "/rankers/x", "DELETE, GET, PUT"),
        ("GET", "/rankers/x/rank", "POST"),
        ("DELETE", "/rankers", "GET"),
    ],
)
def test_a_405_names_every_method_of_its_path(
    tmp_path: Path, method: str, path: str, allowed: str
) -> None:
    with TestClient(create_app(ServeSettings(store=tmp_path / "s.db"))) as client:
        answer = client.request(method, path)
    assert answer.status_code == 405 and answer.headers["allow"] == allowed
    assert answer.json() == {"detail": "Method Not Allowed"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def live(tmp_path: Path) -> Iterator[str]:
    """A real ``oltr serve`` on 127.0.0.1 with a bearer token and a fresh store."""
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = _free_port()
    cmd = [
        *(sys.executable, "-m", "oltr.cli", "serve", "--store", str(tmp_path / "s.db")),
        *("--port", str(port), "--token-file", str(token_file), "--sync", "NORMAL"),
    ]
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, (tmp_path / "serve.log").read_text()
        assert time.monotonic() < deadline, "the service did not start in time"
        time.sleep(0.1)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=30)
    finally:
        proc.kill()
        log.close()


@pytest.mark.slow
def test_every_schemathesis_check_passes_in_every_phase(live: str, tmp_path: Path) -> None:
    exe = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip('schemathesis is not installed (pip install "oltr[test]")')
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for name, definition in RANKERS.items():
        put = httpx.put(f"{live}/rankers/{name}", json=definition, headers=auth, timeout=30)
        assert put.status_code == 201, put.text
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    cmd = [
        *(exe, "--config-file", str(config), "--no-color", "run", f"{live}/openapi.json"),
        *("--checks", "all", "--phases", "examples,coverage,fuzzing,stateful"),
        *("--header", f"Authorization: Bearer {TOKEN}"),
        *("--max-examples", "25", "--max-time", "60", "--seed", "1", "--workers", "1"),
        *("--request-timeout", "10", "--generation-database", "none"),
    ]
    run = subprocess.run(
        cmd, cwd=tmp_path, capture_output=True, text=True, timeout=150, check=False
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report[-8000:]
    # Every phase ran, the stateful one included, and API operations were really exercised.
    for phase in ("Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in report, report[-4000:]
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
