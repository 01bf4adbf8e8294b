"""Reproductions: each paper figure or table is one packaged experiment config.

A reproduction is the TOML file ``oltr/configs/NAME.toml`` (package data, so it is
installed with oltr). It is an ordinary experiment config (see
:mod:`oltr.experiments.config`) with two requirements:

* ``[experiment] description`` — one line, shown by ``oltr reproduce --list``;
* ``[sizes.small]`` and ``[sizes.full]`` — overrides giving a quick version
  (minutes on a laptop) and the paper's scale (horizon, reps, …).

Adding a reproduction is adding such a file; nothing else needs registering.
"""

from __future__ import annotations

import dataclasses
import tomllib
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

from oltr.experiments.config import Experiment, load_config

__all__ = ["SIZES", "Reproduction", "list_reproductions", "load_reproduction"]

#: Sizes every reproduction defines.
SIZES = ("small", "full")


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A packaged reproduction config: its name, one-line description and file."""

    name: str
    description: str
    resource: Traversable


def _config_root() -> Traversable:
    return files("oltr").joinpath("configs")


def list_reproductions() -> list[Reproduction]:
    """Every packaged reproduction, sorted by name (files are only parsed, not validated)."""
    root = _config_root()
    out: list[Reproduction] = []
    if not root.is_dir():
        return out
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".toml"):
            continue
        name = entry.name.removesuffix(".toml")
        try:
            description = str(tomllib.loads(entry.read_text("utf-8"))["experiment"]["description"])
        except (tomllib.TOMLDecodeError, KeyError, TypeError):
            description = "(no [experiment] description)"
        out.append(Reproduction(name, description, entry))
    return out


def load_reproduction(name: str, *, size: str = "small") -> Experiment:
    """Load and validate reproduction ``name`` at ``size`` (``"small"`` or ``"full"``).

    Its default output folder is ``results/NAME-SIZE``.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    known = {r.name: r for r in list_reproductions()}
    if name not in known:
        raise ValueError(
            f"unknown reproduction {name!r}; available: {', '.join(sorted(known)) or 'none'}"
            " (oltr reproduce --list)"
        )
    with as_file(known[name].resource) as path:
        experiment = load_config(Path(path), size=size)
    return dataclasses.replace(experiment, output=Path("results") / f"{name}-{size}")
