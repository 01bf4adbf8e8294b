"""What is registered, described: the table behind ``oltr list``.

Each entry is a registry name, the first line of its docstring and the
parameters its constructor takes (with their defaults), read from the code
itself so the listing never drifts from it. ``oltr list`` shows the packaged
reproductions (:func:`oltr.reproductions.reproduction_entries`) beside these.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import oltr.build  # noqa: F401  (imports every component: the registry tables are complete)
from oltr.metrics import MEASURES
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS, PARAMETER_DUELERS

__all__ = ["CATALOGS", "Entry", "catalog"]

#: Parameters every component of a kind takes, set by the runner rather than by users.
_RESERVED = ("n_runs", "rng", "feedback")


@dataclass(frozen=True)
class Entry:
    """One registered component: its name, a one-line summary and its parameters."""

    name: str
    summary: str
    params: tuple[str, ...] = ()


def _summary(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def _params(cls: type) -> tuple[str, ...]:
    out = []
    for p in inspect.signature(cls).parameters.values():
        if p.name in _RESERVED or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        out.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return tuple(out)


def _classes(table: Mapping[str, type]) -> list[Entry]:
    return [Entry(name, _summary(cls), _params(cls)) for name, cls in table.items()]


def _measures() -> list[Entry]:
    out = []
    for name, measure in sorted(MEASURES.items()):
        cutoff = "@k required" if measure.needs_k else ("@k optional" if measure.takes_k else "")
        params = (cutoff,) if cutoff else ()
        out.append(Entry(name, f"{measure.kind}: {_summary(measure.fn)}", params))
    return out


#: The kinds ``oltr list`` knows, each with the function that lists it.
CATALOGS: dict[str, Callable[[], list[Entry]]] = {
    "learners": lambda: _classes(LEARNERS),
    "envs": lambda: _classes(ENVIRONMENTS),
    "feedback": lambda: _classes(FEEDBACK_MODELS),
    "duelers": lambda: _classes(PARAMETER_DUELERS),
    "measures": _measures,
}


def catalog(kind: str) -> list[Entry]:
    """The entries of ``kind`` (one of :data:`CATALOGS`), sorted by name.

    >>> [e.name for e in catalog("feedback")][:3]
    ['bandit', 'choice', 'clicks']
    """
    if kind not in CATALOGS:
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(CATALOGS)}")
    return sorted(CATALOGS[kind](), key=lambda e: e.name)
