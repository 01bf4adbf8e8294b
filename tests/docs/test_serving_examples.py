"""The ``curl`` examples of ``docs/guides/serving.md`` run against a live service.

Every shell block of the page that calls ``curl`` is run, in the page's order,
as one bash session (a reader typing them into one terminal: a variable set in
one block holds in the next) against a real server on an ephemeral port of
127.0.0.1 with a bearer token. What a reader would change is substituted: the
documented address ``localhost:8000`` becomes the live one, the documented
token (the one the page writes to ``token.txt``) the live one, the example
impression id of the page's rank answers the impression the live service
answered last; a model file that a ranker's ``"init"`` names is written first
(a linear model of the command's ``n_features``, as ``oltr logs fit`` writes).
``curl`` is a bash function that records each call; for each, in order, the
test checks curl's exit status, that a JSON answer parses, that the status is
2xx (or the status the comment after the command names, e.g. ``# 401 ...``),
and that every key of the answer the page shows in the comment lines after it
(``# {"round": 1}``) is in the live answer.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "guides" / "serving.md"
SHELLS = {"bash", "sh", "shell", "console"}
DOC_ADDRESS = "localhost:8000"
#: A line that starts a curl call, perhaps inside a command substitution ``X=$(curl ...``.
_CALL = re.compile(r"^\s*(?:[A-Za-z_]\w*=\$\()?curl\s")
_IMPRESSION = re.compile(r'"impression":\s*"(\d+-[0-9a-f]{8})"')
_TOKEN_FILE = re.compile(r"""^echo\s+["']?([^"'\s]+)["']?\s*>\s*\S+""", re.M)

# Records each call: its arguments, answer, status, content type and curl's exit status;
# substitutes the documented impression id by the live service's latest.
_WRAPPER = r"""
_oltr_n=0
curl() {
    _oltr_n=$((_oltr_n + 1))
    local out="$OLTR_OUT/$_oltr_n" imp="" args=() a
    [ -f "$OLTR_OUT/impression" ] && imp=$(cat "$OLTR_OUT/impression")
    for a in "$@"; do
        [ -n "$imp" ] && a=${a//"$OLTR_DOC_IMPRESSION"/"$imp"}
        args+=("$a")
    done
    printf '%s\n' "${args[@]}" > "$out.args"
    command curl "${args[@]}" -o "$out.body" -w '%{http_code} %{content_type}' > "$out.status"
    echo $? > "$out.exit"
    "$OLTR_PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["impression"])' \
        "$out.body" > "$OLTR_OUT/impression.new" 2>/dev/null \
        && mv "$OLTR_OUT/impression.new" "$OLTR_OUT/impression"
    cat "$out.body"
}
"""


@dataclass(frozen=True)
class Call:
    """A curl command of the page: its text, the status it expects, the keys it shows."""

    text: str
    status: int | None  # None: any 2xx
    keys: frozenset[str]


def curl_blocks(text: str) -> list[str]:
    """The shell blocks of the page that call curl, in order."""
    blocks = []
    for token in MarkdownIt("commonmark").parse(text):
        if token.type == "fence" and token.info.strip().split(" ")[0] in SHELLS:
            if any(_CALL.match(line) for line in token.content.splitlines()):
                blocks.append(token.content)
    return blocks


def calls(block: str) -> list[Call]:
    """The curl commands of ``block``, each with what its comments say of its answer.

    >>> [c.status for c in calls("curl -s a  # 401 without the token\\ncurl -s b\\n")]
    [401, None]
    >>> sorted(calls('curl -s b\\n# {"x": 1,\\n#  "y": [2]}\\n')[0].keys)
    ['x', 'y']
    """
    lines = block.splitlines()
    found = []
    i = 0
    while i < len(lines):
        if not _CALL.match(lines[i]):
            i += 1
            continue
        start = i
        # A line continued by a backslash, or a single quote still open: the command goes on.
        while i + 1 < len(lines) and (
            lines[i].rstrip().endswith("\\") or "\n".join(lines[start : i + 1]).count("'") % 2
        ):
            i += 1
        command = "\n".join(lines[start : i + 1])
        comment = lines[i].partition("  # ")[2] if "  # " in lines[i] else ""
        status = re.match(r"(\d{3})\b", comment.strip())
        shown = []
        j = i + 1
        while j < len(lines) and lines[j].lstrip().startswith("#"):
            shown.append(lines[j].lstrip()[1:])
            j += 1
        answer = "\n".join(shown) if shown and shown[0].lstrip().startswith("{") else ""
        keys = frozenset(re.findall(r'"(\w+)":', answer))
        found.append(Call(command, int(status.group(1)) if status else None, keys))
        i += 1
    return found


def provide_models(script: str, where: Path) -> list[Path]:
    """Write, under ``where``, the linear model file each ``"init": "<path>"`` of ``script``
    names, with the ``n_features`` of its command (what ``oltr logs fit`` would have written)."""
    made = []
    for command in re.split(r"\n(?=\s*curl\s)", script):
        init = re.search(r'"init":\s*"([^"]+)"', command)
        size = re.search(r'"n_features":\s*(\d+)', command)
        if init is None or size is None:
            continue
        from oltr.learners.counterfactual import RankingModel, Scorer, save_model

        scorer = Scorer(n_features=int(size.group(1)))
        params = np.linspace(-1.0, 1.0, scorer.n_params)
        path = where / init.group(1)
        path.parent.mkdir(parents=True, exist_ok=True)
        made.append(save_model(RankingModel(scorer, params, learner="ips"), path))
    return made


def _all_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _all_keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _all_keys(v)}
    return set()


@pytest.fixture
def live(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A uvicorn server in a thread on 127.0.0.1, port 0, with a token: (host:port, token)."""
    uvicorn = pytest.importorskip(
        "uvicorn", reason='the web stack is missing: pip install ".[serve]"'
    )
    from oltr.serve import ServeSettings, create_app

    token = secrets.token_hex(8)
    app = create_app(ServeSettings(store=tmp_path / "web.db", token=token, synchronous="NORMAL"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"127.0.0.1:{port}", token
    server.should_exit = True
    thread.join(timeout=30)


def test_the_page_has_curl_examples() -> None:
    # The extraction itself can fail: the page is known to create, rank, learn and watch.
    text = PAGE.read_text(encoding="utf-8")
    every = [c for block in curl_blocks(text) for c in calls(block)]
    assert len(every) >= 6
    joined = " ".join(c.text for c in every)
    for route in ("/rankers/web ", "/rank ", "/feedback ", "/stats"):
        assert route in joined
    assert DOC_ADDRESS in joined and _TOKEN_FILE.search(text) and _IMPRESSION.search(text)


def test_the_curl_examples_run(
    live: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("curl") is None or shutil.which("bash") is None:
        pytest.skip("curl and bash are needed to run the page's shell examples")
    address, token = live
    text = PAGE.read_text(encoding="utf-8")
    doc_token = _TOKEN_FILE.search(text)
    doc_impression = _IMPRESSION.search(text)
    assert doc_token is not None and doc_impression is not None
    blocks = curl_blocks(text)
    expected = [c for block in blocks for c in calls(block)]
    script = "\n".join(blocks).replace(DOC_ADDRESS, address).replace(doc_token.group(1), token)
    out = tmp_path / "calls"
    out.mkdir()
    monkeypatch.chdir(tmp_path)  # the service reads the model files the page names from here
    provide_models(script, tmp_path)
    env = {
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "OLTR_OUT": str(out),
        "OLTR_PYTHON": shutil.which("python3") or "python3",
        "OLTR_DOC_IMPRESSION": doc_impression.group(1),
    }
    run = subprocess.run(
        ["bash", "-c", _WRAPPER + script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    made = len(list(out.glob("*.exit")))
    assert made == len(expected), f"{made} curl calls ran, the page shows {len(expected)}"
    for n, call in enumerate(expected, start=1):
        where = f"serving.md, curl call {n}:\n{call.text}"
        assert (out / f"{n}.exit").read_text().strip() == "0", f"curl failed: {where}"
        assert token not in (out / f"{n}.body").read_text(errors="replace")
        status_text, _, content_type = (out / f"{n}.status").read_text().partition(" ")
        status = int(status_text)
        body = (out / f"{n}.body").read_text(encoding="utf-8")
        if call.status is None:
            assert 200 <= status < 300, f"status {status} ({body[:300]}): {where}"
        else:
            assert status == call.status, f"status {status}, not {call.status}: {where}"
        if "json" in content_type:
            answer = json.loads(body)
            missing = call.keys - _all_keys(answer)
            assert not missing, f"the answer lacks {sorted(missing)} the page shows: {where}"
        else:
            assert not call.keys, f"a {content_type} answer where the page shows JSON: {where}"
