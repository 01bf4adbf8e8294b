"""Compiled kernels are cached on disk: a second process compiles nothing and says nothing.

Every kernel goes through :func:`oltr.kernels.njit` (numba's ``njit`` with
``cache=True``); the first compilation in a process prints one notice on stderr.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oltr.kernels import NOTICE, njit

ROOT = Path(__file__).resolve().parents[1] / "oltr"

#: Compiles a user's kernel (no notice for it), then one oltr kernel for two key
#: types (two compilations, one notice), and reports the oltr kernel's cache stats.
_WORKLOAD = """
import json, sys
import numba
import numpy as np

@numba.njit
def users_own(x):
    return x + 1

users_own(1)
print("after the user's kernel", file=sys.stderr, flush=True)

from oltr.permutations.counting import orders_by_counting

keys = np.array([[0.5, 0.2, 0.5], [0.1, 0.3, 0.2]])
out = np.empty((2, 3), dtype=np.intp)
orders_by_counting(keys, out)
assert out.tolist() == [[1, 0, 2], [0, 2, 1]], out.tolist()
orders_by_counting(keys.astype(np.float32), out)
stats = orders_by_counting.stats
print(json.dumps({"misses": sum(stats.cache_misses.values()),
                  "hits": sum(stats.cache_hits.values())}))
"""


def _run(cache: Path) -> tuple[dict[str, int], list[str]]:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", _WORKLOAD],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr.splitlines()


@pytest.mark.slow
def test_the_first_process_compiles_with_one_notice_and_the_second_loads_silently(
    tmp_path: Path,
) -> None:
    first, first_err = _run(tmp_path)
    assert first == {"misses": 2, "hits": 0}
    notice = NOTICE.format(where=tmp_path)
    assert first_err.count(notice) == 1
    assert first_err.index("after the user's kernel") < first_err.index(notice)

    second, second_err = _run(tmp_path)
    assert second == {"misses": 0, "hits": 2}
    assert not [line for line in second_err if line.startswith("oltr:")]


def _numba_decorators(path: Path) -> list[str]:
    """Decorators and calls in ``path`` that compile with numba directly."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "numba" and node.attr in ("njit", "jit", "vectorize", "cfunc"):
                found.append(f"{path.name}:{node.lineno}: numba.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "numba":
            names = [a.name for a in node.names if a.name in ("njit", "jit", "vectorize", "cfunc")]
            found.extend(f"{path.name}:{node.lineno}: from numba import {n}" for n in names)
    return found


def test_every_kernel_compiles_through_the_caching_decorator() -> None:
    direct = [
        hit
        for path in sorted(ROOT.rglob("*.py"))
        if path.name != "kernels.py"
        for hit in _numba_decorators(path)
    ]
    assert direct == []
    users = [p for p in ROOT.rglob("*.py") if "from oltr.kernels import njit" in p.read_text()]
    assert len(users) >= 10


def test_the_cache_cannot_be_switched_off() -> None:
    with pytest.raises(TypeError, match="always caches"):
        njit(cache=False)
