"""Reproductions written in Python: run sets built by a function, run and stored by the engine.

Most reproductions are TOML configs (:mod:`oltr.reproductions.reproduce`). A few
need what a config cannot say: a data split written before the runs, references
computed from the data (a random floor, an offline ceiling), the paper's own
table or figure in the report, or run sets of another task than
:func:`~oltr.experiments.runner.run_set` (the parameter-space duels of Yue &
Joachims 2009 §5.1). A :class:`Recipe` says how: ``build(size, output)`` returns an
ordinary :class:`~oltr.experiments.config.Experiment` (its run sets, each with its
:class:`~oltr.experiments.runner.RunSetSpec`), which the sweep runs and stores like
any other, so ``--out``, ``-j``, ``--backend``, ``-q``, resuming and the HTML
report work the same; ``sections(results_dir)`` adds the paper's tables and
figures to the report, from the stored results alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from oltr.experiments import storage
from oltr.experiments.config import Experiment, PlannedRunSet
from oltr.experiments.page import ReportSection
from oltr.experiments.workers import RunSetFn

__all__ = ["Recipe", "built_experiment", "load_grouped", "t_interval"]


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How a reproduction written in Python is built, run and reported.

    Its name is listed in :data:`oltr.reproductions.reproduce.RECIPES`.

    Parameters
    ----------
    description
        One line, shown by ``oltr reproduce --list``.
    build
        ``build(size, output) -> Experiment``: the run sets of ``size``
        (``"small"`` or ``"full"``); ``output`` is the results folder, where the
        recipe may write data its run sets read (written once, atomically).
    task
        The run-set task (``task(spec, *, progress=None) -> trace``, a module-level
        function so that worker processes can run it); None: the engine's
        :func:`~oltr.experiments.runner.run_set`.
    sections
        ``sections(results_dir) -> [ReportSection, ...]``: the reproduction's own
        tables and figures, computed from the stored results; None: none.
    """

    description: str
    build: Callable[[str, Path], Experiment]
    task: RunSetFn | None = None
    sections: Callable[[Path], Sequence[ReportSection]] | None = None


def built_experiment(
    name: str,
    *,
    description: str,
    source: str,
    size: str,
    seed: int,
    output: Path,
    run_sets: Sequence[PlannedRunSet],
    settings: Mapping[str, Any],
) -> Experiment:
    """An :class:`~oltr.experiments.config.Experiment` from run sets built in Python.

    ``settings`` (JSON values) is what the manifest records as the experiment's
    configuration. Every run set must share the horizon, checkpoints and measures.
    """
    if not run_sets:
        raise ValueError(f"{name}: no run sets")
    first = run_sets[0].spec
    for rs in run_sets:
        spec = rs.spec
        if (spec.horizon, spec.checkpoints, spec.measures) != (
            first.horizon,
            first.checkpoints,
            first.measures,
        ):
            raise ValueError(f"{name}: run set {rs.label!r} has another horizon or measures")
    ids = [rs.run_set_id for rs in run_sets]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{name}: two run sets have the same spec")
    return Experiment(
        name=name,
        description=description,
        source=source,
        size=size,
        seed=seed,
        seed_drawn=False,
        output=output,
        measures=tuple(first.measures),
        horizon=first.horizon,
        checkpoints=tuple(first.checkpoints),
        run_sets=tuple(run_sets),
        resolved={"experiment": {"name": name, "seed": seed, "size": size, **settings}},
        reproduction=name,
    )


def t_interval(values: ArrayLike) -> float:
    """Half-width of the 95% Student-t interval of the mean of ``values`` (NaN for fewer than 2).

    >>> round(t_interval([1.0, 2.0, 3.0]), 4)  # t_{0.975, 2} · 1 / √3
    2.4841
    """
    arr = np.asarray(values, dtype=np.float64)
    n = arr.size
    if n < 2:
        return float("nan")
    return float(stats.t.ppf(0.975, n - 1) * arr.std(ddof=1) / np.sqrt(n))


def load_grouped(results_dir: Path) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """The stored results with a ``group`` column (the run set's group), and the records by id.

    Rows follow the order in which the experiment lists its run sets (then rep, t).
    """
    df = storage.load_results(results_dir)
    meta = storage.load_metadata(results_dir)
    df.insert(1, "group", df["run_set"].map(lambda rid: meta[rid].get("group")))
    manifest = storage.read_manifest(results_dir) or {}
    position = {entry["run_set"]: i for i, entry in enumerate(manifest.get("run_sets", []))}
    order = df["run_set"].map(lambda rid: position.get(rid, len(position)))
    df = df.assign(_order=order).sort_values(["_order", "rep", "t"], kind="stable")
    return df.drop(columns="_order").reset_index(drop=True), meta
