"""The package layout: layers, no import cycle, no private name across packages, small modules.

The import graph is read from the source (every import statement, including
those inside functions; ``TYPE_CHECKING`` blocks excluded), so a deferred
import cannot hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "oltr"
MAX_LINES = 500

#: The layers of DESIGN.md: a module imports only from its own layer or below.
LAYERS: dict[str, int] = {
    "oltr.types": 0,
    "oltr.random": 0,
    "oltr.validation": 0,
    "oltr.errors": 0,
    "oltr.registry": 0,
    "oltr.version": 0,
    "oltr.lazy": 0,
    "oltr.kernels": 0,
    "oltr.metrics": 1,
    "oltr.permutations": 1,
    "oltr.surrogates": 1,
    "oltr.theory": 1,
    "oltr.data": 2,
    "oltr.clicks": 2,
    "oltr.logs": 2,
    "oltr.feedback": 3,
    "oltr.estimators": 3,
    "oltr.envs": 4,
    "oltr.learners": 4,
    "oltr.build": 4,
    "oltr.conformance": 5,
    "oltr.experiments": 5,
    "oltr.reproductions": 5,
    "oltr.serve": 5,
    "oltr.cli": 6,
    "oltr.client": 6,
}
#: Packages of one layer that must not import each other.
SIBLINGS_APART = {frozenset({"oltr.envs", "oltr.learners"})}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) for every import in ``path`` outside TYPE_CHECKING blocks."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, list[str]]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    visit(stmt)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, []) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                found.append((base, [alias.name for alias in child.names]))
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return [(m, names) for m, names in found if m == "oltr" or m.startswith("oltr.")]


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(target: str, names: list[str]) -> set[str]:
    """The package modules an import statement loads (a name may be a submodule)."""
    out = set()
    # Every import runs the root package's __init__ first; that is not an edge of the graph.
    candidates = [f"{target}.{n}" for n in names] + ([target] if target != "oltr" else [])
    for full in candidates:
        while full and full not in MODULES:
            full = full.rpartition(".")[0]
        if full:
            out.add(full)
    return out


def _layer_of(module: str) -> tuple[str, int] | None:
    for prefix, layer in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            return prefix, layer
    return None


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        edges = set()
        for target, names in _imports(path):
            edges |= _resolve(target, names)
        # A package's __init__ importing its own submodules is how it exports them.
        graph[name] = {e for e in edges if e != name and not e.startswith(name + ".")}
    return graph


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in MODULES if m != "oltr" and _layer_of(m) is None]
    assert not unplaced, f"modules outside the layer table: {unplaced}"


def test_no_import_points_up_a_layer_or_across_apart_siblings() -> None:
    problems = []
    for source, targets in _graph().items():
        here = _layer_of(source)
        if here is None:  # the top-level package may import anything
            continue
        for target in targets:
            there = _layer_of(target)
            if there is None:
                problems.append(f"{source} imports the top-level package {target}")
            elif there[1] > here[1]:
                problems.append(f"{source} (layer {here[1]}) imports {target} (layer {there[1]})")
            elif frozenset({here[0], there[0]}) in SIBLINGS_APART:
                problems.append(f"{source} imports {target}: these packages stay apart")
    assert not problems, "\n".join(problems)


def test_the_import_graph_has_no_cycle() -> None:
    graph = _graph()
    state: dict[str, int] = {}  # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_no_private_name_is_imported_across_packages() -> None:
    problems = []
    for source, path in MODULES.items():
        source_pkg = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for target, names in _imports(path):
            target_pkg = (
                target
                if target in MODULES and MODULES[target].name == "__init__.py"
                else (target.rpartition(".")[0])
            )
            private = [n for n in names if n.startswith("_") and not n.endswith("__")]
            module_private = any(part.startswith("_") for part in target.split(".")[1:])
            if (private or module_private) and target_pkg != source_pkg:
                problems.append(f"{source} imports {private or target} from {target}")
    assert not problems, "\n".join(problems)


def test_modules_stay_under_the_line_limit() -> None:
    sizes = {m: len(p.read_text(encoding="utf-8").splitlines()) for m, p in MODULES.items()}
    big = {m: n for m, n in sizes.items() if n > MAX_LINES}
    assert not big, f"modules over {MAX_LINES} lines: {big}"
