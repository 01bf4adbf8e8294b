"""The command starts at once: help, usage errors and --version import none of the library's
heavy dependencies, and ``oltr serve`` without the web stack says which extra to install.

Each case runs the command's ``main`` in a fresh interpreter and reads ``sys.modules``
afterwards; no wall-clock time is asserted (``benchmarks/bench_startup.py`` measures it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

#: What the command must not import before a command body runs.
HEAVY = ("numba", "scipy", "pandas", "pyarrow", "sklearn", "matplotlib", "fastapi", "uvicorn")

_RUN_MAIN = """
import json, sys
{prelude}
sys.argv = ["oltr", *json.loads(sys.argv[1])]
code = 0
try:
    from oltr.cli import main
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
print(json.dumps({{"code": code, "loaded": [m for m in {heavy!r} if m in sys.modules]}}),
      file=sys.stderr)
"""

#: Makes the web stack unimportable, as in an install without the ``serve`` extra.
_NO_WEB_STACK = """
class _Absent:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"fastapi", "starlette", "uvicorn", "prometheus_client"}:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Absent())
"""


def _oltr(*args: str, prelude: str = "", cwd: Path | None = None) -> tuple[int, str, str, list]:
    """(exit code, stdout, stderr without the report line, heavy modules loaded)."""
    code = _RUN_MAIN.format(prelude=prelude, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(list(args))],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        cwd=cwd,
    )
    *err, last = done.stderr.rstrip("\n").splitlines()
    report = json.loads(last)
    return report["code"], done.stdout, "\n".join(err), report["loaded"]


def test_help_lists_every_command_and_imports_no_heavy_library() -> None:
    code, out, _, loaded = _oltr("--help")
    assert code == 0
    assert loaded == []
    for command in ("demo", "list", "check", "run", "report", "reproduce", "serve", "replay"):
        assert f"\n  {command} " in out, command
    assert "--version" in out


@pytest.mark.parametrize(
    ("args", "options"),
    [
        (["demo"], ["--seed", "--out", "--online"]),
        (["reproduce"], ["--list", "--size", "--jobs", "--backend"]),
        (["serve"], ["--store", "--host", "--port", "--token-file", "--sync"]),
        (["check"], ["module:Class"]),
        (["data", "info"], ["--group-file", "--json", "--no-cache"]),
        (["theory", "matrices"], ["--measure", "--m", "--k", "--grades", "--force"]),
    ],
)
def test_a_command_help_shows_its_real_options_without_the_library(
    args: list[str], options: list[str]
) -> None:
    code, out, _, loaded = _oltr(*args, "--help")
    assert code == 0
    assert loaded == []
    for option in options:
        assert option in out, option


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["demo", "--no-such-option"], "No such option: --no-such-option"),
        (["no-such-command"], "No such command 'no-such-command'"),
        (["theory", "matrices", "--m", "three"], "Invalid value for '--m'"),
    ],
)
def test_a_usage_error_imports_no_heavy_library(args: list[str], message: str) -> None:
    code, _, err, loaded = _oltr(*args)
    assert code == 2
    assert message in err
    assert loaded == []


def test_version_prints_the_installed_version() -> None:
    code, out, _, loaded = _oltr("--version")
    assert code == 0
    assert out == f"oltr {version('oltr')}\n"
    assert loaded == []


def test_serve_without_the_web_stack_names_the_extra(tmp_path: Path) -> None:
    code, out, err, _ = _oltr("serve", "--store", "s.db", prelude=_NO_WEB_STACK, cwd=tmp_path)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        "error: oltr serve needs the web stack (uvicorn is not installed): "
        'pip install "oltr[serve]"'
    ]
    assert not (tmp_path / "s.db").exists()


def test_replay_needs_no_web_stack(tmp_path: Path) -> None:
    code, _, err, _ = _oltr(
        "replay", "--store", "none.db", "--ranker", "r", prelude=_NO_WEB_STACK, cwd=tmp_path
    )
    assert code == 2
    assert "none.db: no such file" in err
    assert "oltr[serve]" not in err
