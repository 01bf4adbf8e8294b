"""Cheap imports: the package and its subpackages load their modules only when a name is used.

Each package ``__init__`` that exports lazily (:mod:`oltr.lazy`) states its names
three times: in ``__all__``, under ``if TYPE_CHECKING:`` (for type checkers) and
in the table handed to :func:`oltr.lazy.lazy_exports`; the tests here keep the
three in step and check, in fresh interpreters, what an import pulls in.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from oltr.lazy import lazy_exports

ROOT = Path(__file__).resolve().parents[1] / "oltr"

#: Libraries that take a noticeable time to import (numpy is not one of them).
HEAVY = (
    "numba",
    "scipy",
    "pandas",
    "pyarrow",
    "pydantic",
    "sklearn",
    "matplotlib",
    "fastapi",
    "uvicorn",
    "httpx",
    "rich",
    "tqdm",
)

#: Packages whose import must stay cheap; the registering ones (learners, envs,
#: feedback: importing them fills the registry tables) and those whose own
#: module computes with their classes (surrogates, conformance) are not here.
LIGHT_PACKAGES = (
    "oltr",
    "oltr.metrics",
    "oltr.permutations",
    "oltr.theory",
    "oltr.data",
    "oltr.clicks",
    "oltr.experiments",
    "oltr.serve",
)


def _fresh(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _heavy_after(statement: str) -> list[str]:
    out = _fresh(
        f"import sys, json\n{statement}\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    return list(json.loads(out.splitlines()[-1]))


@pytest.mark.parametrize("package", LIGHT_PACKAGES)
def test_importing_a_package_loads_no_heavy_library(package: str) -> None:
    assert _heavy_after(f"import {package}") == []


def test_the_measures_load_no_heavy_library() -> None:
    statement = (
        "import numpy as np\n"
        "from oltr.metrics import get_measure, ndcg\n"
        "assert abs(float(ndcg([2, 0, 1], [0, 2, 1])) - 1.0) < 1e-12\n"
        "get_measure('ndcg@10')"
    )
    assert _heavy_after(statement) == []


def test_the_registry_tables_are_complete_when_read_from_the_package() -> None:
    import oltr.build  # noqa: F401  (fills the tables in this process)
    from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS

    out = _fresh(
        "import json, oltr\n"
        "print(json.dumps([sorted(oltr.LEARNERS), sorted(oltr.ENVIRONMENTS), "
        "sorted(oltr.FEEDBACK_MODELS)]))"
    )
    expected = [sorted(LEARNERS), sorted(ENVIRONMENTS), sorted(FEEDBACK_MODELS)]
    assert json.loads(out) == expected
    assert all(expected)


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _lazy_inits() -> list[Path]:
    return sorted(p for p in ROOT.rglob("__init__.py") if "lazy_exports(" in p.read_text())


def _declared(path: Path) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(TYPE_CHECKING imports, lazy table, __all__) of a package __init__, as name -> module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    table: dict[str, str] = {}
    exported: list[str] = []
    for node in tree.body:
        if _is_type_checking(node):
            assert isinstance(node, ast.If)
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.level == 0, ast.unparse(stmt)
                typed.update({a.asname or a.name: str(stmt.module) for a in stmt.names})
            for call in ast.walk(ast.Module(body=node.orelse, type_ignores=[])):
                if isinstance(call, ast.Call) and ast.unparse(call.func) == "lazy_exports":
                    mapping = ast.literal_eval(call.args[1])
                    table.update({n: m for m, names in mapping.items() for n in names})
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            exported = list(ast.literal_eval(node.value))
    return typed, table, exported


def test_some_packages_export_lazily() -> None:
    names = {p.parent.name for p in _lazy_inits()}
    assert {"oltr", "metrics", "experiments", "serve"} <= names


@pytest.mark.parametrize("path", _lazy_inits(), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_lazy_table_type_checking_imports_and_all_agree(path: Path) -> None:
    typed, table, exported = _declared(path)
    assert table, "no lazy table found"
    assert typed == table
    assert sorted(exported) == sorted(table)


@pytest.mark.parametrize("path", _lazy_inits(), ids=lambda p: str(p.relative_to(ROOT.parent)))
def test_every_lazy_name_is_the_object_its_module_defines(path: Path) -> None:
    parts = path.relative_to(ROOT.parent).parent.parts
    package = importlib.import_module(".".join(parts))
    _, table, _ = _declared(path)
    for name, module in table.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
        assert name in dir(package)
    with pytest.raises(AttributeError, match="has no attribute"):
        _ = package.no_such_name  # type: ignore[attr-defined]


def test_a_name_exported_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="'x' is exported by"):
        lazy_exports("oltr", {"oltr.errors": ["x"], "oltr.types": ["x"]})
