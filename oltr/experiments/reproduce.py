"""Reproductions: each paper figure or table is one packaged experiment config.

A reproduction is the TOML file ``oltr/configs/NAME.toml`` (package data, so it is
installed with oltr). It is an ordinary experiment config (see
:mod:`oltr.experiments.config`) with two requirements:

* ``[experiment] description`` — one line, shown by ``oltr reproduce --list``;
* ``[sizes.small]`` and ``[sizes.full]`` — overrides giving a quick version
  (minutes on a laptop) and the paper's scale (horizon, reps, …).

Adding a reproduction is adding such a file; nothing else needs registering.

A few reproductions are not run sets of the engine: the synthetic duels of Yue &
Joachims (2009, §5.1) compare weight vectors through a value function and rank no
items, so a dedicated batched simulation computes them. They are listed in
:data:`FUNCTION_REPRODUCTIONS` and write a table (CSV and Markdown) instead of a
sweep's results.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import tempfile
import tomllib
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

import pandas as pd

from oltr.experiments.config import Experiment, load_config

__all__ = [
    "FUNCTION_REPRODUCTIONS",
    "SIZES",
    "Reproduction",
    "list_reproductions",
    "load_reproduction",
    "run_function_reproduction",
]

#: Sizes every reproduction defines.
SIZES = ("small", "full")


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A packaged reproduction config: its name, one-line description and file."""

    name: str
    description: str
    resource: Traversable | None  # None for a function reproduction


#: Reproductions computed by a function ``f(*, size) -> DataFrame``: name ->
#: ("module:function", one-line description).
FUNCTION_REPRODUCTIONS: dict[str, tuple[str, str]] = {
    "yj09-table1": (
        "oltr.experiments.yj09:reproduce_table1",
        "Yue & Joachims 2009 Table 1: DBGD average regret on P1-P5 x delta_L "
        "(synthetic duels; full: T = 10^6, 10 runs)",
    ),
    "learner-quality": (
        "oltr.experiments.quality:reproduce_learner_quality",
        "Held-out NDCG@10 of every contextual learner at its defaults vs random orders and "
        "offline RankSVM (small: synthetic; full: MQ2008, OHSUMED folds, MSLR sample, T = 50,000)",
    ),
    "oltr-clicks": (
        "oltr.experiments.clicks_reproduction:reproduce_oltr_clicks",
        "PDGD (linear, neural) vs P-MGD vs P-DBGD vs TD-DBGD vs RTop-kF on MQ2008/OHSUMED/MSLR "
        "with perfect/navigational/informational clicks (full: 5 folds x 25 runs x 10^4)",
    ),
    "yj09-fig2": (
        "oltr.experiments.yj09:reproduce_figure2",
        "Yue & Joachims 2009 Figure 2: DBGD vs BGD1 vs BGD2 average regret on P1 and P5",
    ),
}


def run_function_reproduction(
    name: str, *, size: str = "small", out: str | os.PathLike[str] | None = None
) -> Path:
    """Run a reproduction of :data:`FUNCTION_REPRODUCTIONS`; write ``table.csv`` and ``table.md``.

    Returns the folder written (default ``results/NAME-SIZE``). Each file is
    written to a temporary name and renamed, so a file present is complete.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    if name not in FUNCTION_REPRODUCTIONS:
        raise ValueError(
            f"{name!r} is not a function reproduction; "
            f"have {', '.join(sorted(FUNCTION_REPRODUCTIONS))}"
        )
    module, func = FUNCTION_REPRODUCTIONS[name][0].split(":")
    reproduction = getattr(importlib.import_module(module), func)
    folder = Path(out) if out is not None else Path("results") / f"{name}-{size}"
    folder.mkdir(parents=True, exist_ok=True)
    # A reproduction that also writes files (curves, plots) takes the folder as ``out``.
    takes_out = "out" in inspect.signature(reproduction).parameters
    table = reproduction(size=size, out=folder) if takes_out else reproduction(size=size)
    _write_atomic(folder / "table.csv", table.to_csv(index=False, float_format="%.6g"))
    _write_atomic(folder / "table.md", _markdown(table))
    return folder


def _markdown(table: pd.DataFrame) -> str:
    cells = [
        [f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        for row in table.itertuples(index=False)
    ]
    lines = [
        "| " + " | ".join(map(str, table.columns)) + " |",
        "|" + "|".join("---" for _ in table.columns) + "|",
    ]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells]) + "\n"


def _write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


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
    out += [
        Reproduction(name, description, None)
        for name, (_, description) in FUNCTION_REPRODUCTIONS.items()
    ]
    return sorted(out, key=lambda r: r.name)


def load_reproduction(name: str, *, size: str = "small") -> Experiment:
    """Load and validate reproduction ``name`` at ``size`` (``"small"`` or ``"full"``).

    Its default output folder is ``results/NAME-SIZE``.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    every = {r.name: r for r in list_reproductions()}
    known = {n: r for n, r in every.items() if r.resource is not None}
    if name not in known:
        raise ValueError(
            f"unknown reproduction {name!r}; available: {', '.join(sorted(every)) or 'none'}"
            " (oltr reproduce --list)"
        )
    resource = known[name].resource
    assert resource is not None  # config reproductions carry their file
    with as_file(resource) as path:
        experiment = load_config(Path(path), size=size)
    return dataclasses.replace(experiment, output=Path("results") / f"{name}-{size}")
