"""The reproductions by name: packaged TOML configs and recipes, run through the engine.

A reproduction is either

* the TOML file ``oltr/reproductions/configs/NAME.toml`` (package data, so it is
  installed with oltr): an ordinary experiment config (see
  :mod:`oltr.experiments.config`) with ``[experiment] description`` (one line,
  shown by ``oltr reproduce --list``) and ``[sizes.small]`` / ``[sizes.full]``
  overrides giving a quick version (about a minute) and the paper's scale.
  Adding such a file is adding a reproduction; nothing else needs registering;
* or a :class:`~oltr.reproductions.recipe.Recipe` listed in :data:`RECIPES`,
  for what a config cannot say (data written before the runs, references
  computed from the data, the paper's table or figure in the report, run sets
  of the parameter-space duel task).

Either way :func:`load_reproduction` gives an ordinary
:class:`~oltr.experiments.config.Experiment` whose run sets the sweep runs,
stores and resumes (:func:`run_reproduction`), and :func:`write_results_report`
writes the report of any results folder, with the reproduction's own sections
when the folder's manifest names a recipe.
"""

from __future__ import annotations

import dataclasses
import importlib
import tomllib
from collections.abc import Mapping, Sequence
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path

from oltr.experiments import storage
from oltr.experiments.catalog import Entry
from oltr.experiments.config import Experiment, load_config
from oltr.experiments.report import Report, write_report
from oltr.experiments.sweep import Backend, SweepResult, run_experiment
from oltr.experiments.workers import RunSetFn
from oltr.reproductions.recipe import Recipe

__all__ = [
    "RECIPES",
    "SIZES",
    "Reproduction",
    "list_reproductions",
    "load_reproduction",
    "recipe",
    "reproduction_entries",
    "reproduction_task",
    "run_reproduction",
    "write_results_report",
]

#: Sizes every reproduction defines.
SIZES = ("small", "full")

#: Reproductions written in Python: name -> ``"module:attribute"``, a
#: :class:`~oltr.reproductions.recipe.Recipe` or a mapping of names to recipes.
#: The module is imported when the reproduction is listed or loaded.
RECIPES: dict[str, str] = {
    "learner-quality": "oltr.reproductions.learner_quality:LEARNER_QUALITY",
    "oltr-clicks": "oltr.reproductions.clicks:RECIPES",
    "oltr-clicks-lerot": "oltr.reproductions.clicks:RECIPES",
    "ultr": "oltr.reproductions.ultr:ULTR_RECIPE",
    "yj09-fig2": "oltr.reproductions.yj09:FIGURE2_RECIPE",
    "yj09-table1": "oltr.reproductions.yj09:TABLE1_RECIPE",
}


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A packaged reproduction: its name, one-line description and config file (None: a recipe)."""

    name: str
    description: str
    resource: Traversable | None


def _config_root() -> Traversable:
    return files("oltr.reproductions").joinpath("configs")


def list_reproductions() -> list[Reproduction]:
    """Every packaged reproduction, sorted by name (files are only parsed, not validated)."""
    root = _config_root()
    out: list[Reproduction] = []
    if root.is_dir():
        for entry in sorted(root.iterdir(), key=lambda e: e.name):
            if not entry.name.endswith(".toml"):
                continue
            name = entry.name.removesuffix(".toml")
            try:
                doc = tomllib.loads(entry.read_text("utf-8"))
                description = str(doc["experiment"]["description"])
            except (tomllib.TOMLDecodeError, KeyError, TypeError):
                description = "(no [experiment] description)"
            out.append(Reproduction(name, description, entry))
    out += [Reproduction(name, _recipe(name).description, None) for name in RECIPES]
    return sorted(out, key=lambda r: r.name)


def reproduction_entries() -> list[Entry]:
    """The reproductions as ``oltr list`` shows them."""
    return [Entry(r.name, r.description) for r in list_reproductions()]


def recipe(name: str) -> Recipe | None:
    """The recipe of reproduction ``name`` (None for a TOML reproduction or an unknown name)."""
    return _recipe(name) if name in RECIPES else None


def _recipe(name: str) -> Recipe:
    module, attribute = RECIPES[name].split(":")
    found = getattr(importlib.import_module(module), attribute)
    if isinstance(found, Mapping):
        found = found.get(name)
    if not isinstance(found, Recipe):
        raise TypeError(f"{RECIPES[name]} holds no Recipe for {name!r}")
    return found


def reproduction_task(name: str) -> RunSetFn | None:
    """The run-set task of reproduction ``name``; None: the engine's ``run_set``."""
    found = recipe(name)
    return None if found is None else found.task


def load_reproduction(
    name: str, *, size: str = "small", out: str | Path | None = None
) -> Experiment:
    """Load and validate reproduction ``name`` at ``size`` (``"small"`` or ``"full"``).

    Its output folder is ``out``, by default ``results/NAME-SIZE``; a recipe may
    write the data its run sets read there.
    """
    if size not in SIZES:
        raise ValueError(f"size must be one of {', '.join(SIZES)}, got {size!r}")
    output = Path(out) if out is not None else Path("results") / f"{name}-{size}"
    found = recipe(name)
    if found is not None:
        storage.prepare_dir(output)  # a recipe may write its data there: fail first if it cannot
        return dataclasses.replace(found.build(size, output), output=output, reproduction=name)
    known = {r.name: r for r in list_reproductions() if r.resource is not None}
    if name not in known:
        every = sorted(r.name for r in list_reproductions())
        raise ValueError(
            f"unknown reproduction {name!r}; available: {', '.join(every) or 'none'}"
            " (oltr reproduce --list)"
        )
    resource = known[name].resource
    assert resource is not None  # config reproductions carry their file
    with as_file(resource) as path:
        experiment = load_config(Path(path), size=size)
    return dataclasses.replace(experiment, output=output, reproduction=name)


def write_results_report(
    results_dir: str | Path,
    *,
    measures: Sequence[str] | None = None,
    out: str | Path | None = None,
) -> Report:
    """The report of any results folder, with its reproduction's own sections when it has some.

    The folder's manifest names the reproduction that wrote it; a recipe's
    sections (the paper's table, its figure) are computed from the stored
    results and shown first (:func:`oltr.experiments.report.write_report`).
    """
    manifest = storage.read_manifest(results_dir) or {}
    found = recipe(str(manifest.get("reproduction", "")))
    sections = found.sections(Path(results_dir)) if found is not None and found.sections else ()
    return write_report(results_dir, measures=measures, out=out, sections=sections)


def run_reproduction(
    name: str,
    *,
    size: str = "small",
    out: str | Path | None = None,
    jobs: int | None = None,
    backend: Backend = "local",
    address: str | None = None,
    progress: bool = True,
) -> tuple[SweepResult, Report]:
    """Run reproduction ``name`` (resuming what ``out`` holds) and write its report.

    The arguments after ``size`` are those of :func:`oltr.experiments.sweep.run_experiment`.
    """
    experiment = load_reproduction(name, size=size, out=out)
    result = run_experiment(
        experiment,
        out=experiment.output,
        jobs=jobs,
        backend=backend,
        address=address,
        progress=progress,
        run_set_fn=reproduction_task(name),
    )
    return result, write_results_report(experiment.output)
