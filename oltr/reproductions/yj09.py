"""Yue & Joachims (2009) §5.1: Table 1 and Figure 2, run sets of the experiment engine.

Both are synthetic parameter-space duels (:mod:`oltr.reproductions.synthetic_duels`):
each run set is one learner (DBGD, BGD1 or BGD2) at one δ_L on one problem, all
its repetitions advanced together by :func:`~oltr.reproductions.synthetic_duels.run_duel_set`,
the run-set task of these recipes; the sweep runs, stores and resumes them like
any other experiment. The trace's ``duel-loss:avg`` is the average regret Δ_t / t
(eq. 2), recorded at :data:`N_CHECKPOINTS` log-spaced rounds.

* ``yj09-table1``: DBGD's average regret at T on P1–P5 × δ_L (Table 1), beside
  the paper's values;
* ``yj09-fig2``: average regret against t of DBGD, BGD1 and BGD2 at δ_L = 1 on P1
  and P5 (Figure 2), drawn from the stored results.

Sizes (:data:`SYNTHETIC_SIZES`): ``full`` is the paper's scale as we read it —
T = 10⁶ (the horizon at which Table 1's rows match), 10 runs, d = 50, R = 10,
w_1 = 1·√(5/d), "P2" the L1 reading of v2; ``small`` is T = 20,000 with 5 runs
(about a minute), enough for a 95% interval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from oltr.experiments.config import Experiment, PlannedRunSet
from oltr.experiments.page import ReportSection
from oltr.experiments.regret import log_checkpoints
from oltr.reproductions.recipe import Recipe, built_experiment, load_grouped, t_interval
from oltr.reproductions.synthetic_duels import (
    DUEL_MEASURE,
    SYNTHETIC_METHODS,
    TABLE1,
    TABLE1_DELTA_L,
    duel_spec,
    run_duel_set,
)
from oltr.validation import check_choice

__all__ = [
    "FIGURE2_DELTA_L",
    "FIGURE2_PROBLEMS",
    "FIGURE2_RECIPE",
    "METHOD_LABELS",
    "N_CHECKPOINTS",
    "SYNTHETIC_SIZES",
    "TABLE1_RECIPE",
    "build_figure2",
    "build_table1",
    "figure2_sections",
    "table1_sections",
]

#: Horizon T and runs per cell of each size.
SYNTHETIC_SIZES: Mapping[str, Mapping[str, int]] = {
    "small": {"horizon": 20_000, "reps": 5},
    "full": {"horizon": 1_000_000, "reps": 10},
}
#: Log-spaced rounds at which the average regret is recorded.
N_CHECKPOINTS = 30
#: Root seed of both reproductions.
SEED = 2009
#: Figure 2's problems and δ_L.
FIGURE2_PROBLEMS: tuple[str, ...] = ("P1", "P5")
FIGURE2_DELTA_L = 1.0
#: The names the paper gives the methods.
METHOD_LABELS: Mapping[str, str] = {"dbgd": "DBGD", "bgd1": "BGD1", "bgd2": "BGD2"}
_AVG = f"{DUEL_MEASURE}:avg"


def _size(size: str, reps: int | None) -> tuple[int, tuple[int, ...]]:
    check_choice(size, "size", tuple(SYNTHETIC_SIZES))
    n = SYNTHETIC_SIZES[size]["reps"] if reps is None else int(reps)
    return SYNTHETIC_SIZES[size]["horizon"], tuple(range(n))


def build_table1(
    size: str, output: Path, *, reps: int | None = None, problems: Sequence[str] = tuple(TABLE1)
) -> Experiment:
    """``yj09-table1``: one DBGD run set per problem and δ_L of Table 1 (``reps`` overrides)."""
    horizon, rep_ids = _size(size, reps)
    cps = log_checkpoints(horizon, N_CHECKPOINTS)
    run_sets: list[PlannedRunSet] = []
    for problem in problems:
        for delta_l in TABLE1_DELTA_L:
            spec = duel_spec(
                problem, "dbgd", delta_l, reps=rep_ids, seed=SEED, horizon=horizon, checkpoints=cps
            )
            label = f"{problem} δ_L={delta_l:g}"
            run_sets.append(
                PlannedRunSet(spec, label, {"delta_l": delta_l}, len(run_sets), group=problem)
            )
    return built_experiment(
        "yj09-table1",
        description=TABLE1_RECIPE.description,
        source="oltr.reproductions.yj09:build_table1",
        size=size,
        seed=SEED,
        output=output,
        run_sets=run_sets,
        settings={"horizon": horizon, "reps": len(rep_ids), "problems": list(problems)},
    )


def _final(results_dir: Path) -> pd.DataFrame:
    """One row per run set and repetition at the last round: group, spec fields, Δ_T / T."""
    df, meta = load_grouped(results_dir)
    last: pd.DataFrame = df[df["t"] == df["t"].max()].copy()
    last["delta_l"] = last["run_set"].map(
        lambda rid: float(meta[rid]["spec"]["learner_params"]["delta_l"])
    )
    last["method"] = last["run_set"].map(
        lambda rid: str(
            meta[rid]["spec"]["learner_params"].get("variant", meta[rid]["spec"]["learner"])
        )
    )
    return last


def table1_sections(results_dir: Path) -> list[ReportSection]:
    """Table 1 from the stored results: mean average regret at T ± 95%, beside the paper's."""
    last = _final(results_dir)
    rows = []
    for (problem, delta_l), part in last.groupby(["group", "delta_l"], sort=False):
        delta_l = float(delta_l)  # type: ignore[arg-type]  # a float column
        paper = TABLE1.get(str(problem))
        rows.append(
            {
                "problem": problem,
                "delta_l": delta_l,
                "regret": float(part[_AVG].mean()),
                "±95%": t_interval(part[_AVG]),
                "paper": paper[TABLE1_DELTA_L.index(delta_l)] if paper else float("nan"),
            }
        )
    horizon = int(last["t"].max())
    text = (
        f"DBGD's average regret Δ_T/T at T = {horizon:,} (mean over runs, 95% t-interval), "
        "and Table 1 of the paper (T = 10^6 as we read it)."
    )
    return [ReportSection("table1", "Table 1: DBGD average regret", text, pd.DataFrame(rows))]


def build_figure2(size: str, output: Path, *, reps: int | None = None) -> Experiment:
    """``yj09-fig2``: DBGD, BGD1 and BGD2 at δ_L = 1 on P1 and P5 (``reps`` overrides)."""
    horizon, rep_ids = _size(size, reps)
    cps = log_checkpoints(horizon, N_CHECKPOINTS)
    delta_l = FIGURE2_DELTA_L
    run_sets: list[PlannedRunSet] = []
    for problem in FIGURE2_PROBLEMS:
        for method in SYNTHETIC_METHODS:
            spec = duel_spec(
                problem, method, delta_l, reps=rep_ids, seed=SEED, horizon=horizon, checkpoints=cps
            )
            label = f"{problem} {METHOD_LABELS[method]}"
            run_sets.append(
                PlannedRunSet(spec, label, {"method": method}, len(run_sets), group=problem)
            )
    return built_experiment(
        "yj09-fig2",
        description=FIGURE2_RECIPE.description,
        source="oltr.reproductions.yj09:build_figure2",
        size=size,
        seed=SEED,
        output=output,
        run_sets=run_sets,
        settings={"horizon": horizon, "reps": len(rep_ids), "delta_l": delta_l},
    )


def figure2_sections(results_dir: Path) -> list[ReportSection]:
    """Figure 2 drawn from the stored results (one panel per problem), and its values at T."""
    df, meta = load_grouped(results_dir)
    df["method"] = df["run_set"].map(
        lambda rid: str(
            meta[rid]["spec"]["learner_params"].get("variant", meta[rid]["spec"]["learner"])
        )
    )
    labels = METHOD_LABELS
    problems = list(dict.fromkeys(df["group"]))
    fig = Figure(figsize=(5.2 * len(problems), 3.9), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(problems), squeeze=False)[0]
    rows = []
    for ax, problem in zip(axes, problems, strict=True):
        part = df[df["group"] == problem]
        for i, method in enumerate(m for m in SYNTHETIC_METHODS if m in set(part["method"])):
            runs = part[part["method"] == method]
            by_t = runs.groupby("t")[_AVG]
            t = np.asarray(by_t.mean().index, dtype=float)
            mean = by_t.mean().to_numpy()
            half = by_t.agg(t_interval).to_numpy()
            style = ("-", "--", "-.")[i % 3]
            ax.plot(t, mean, style, color=f"C{i}", label=labels.get(method, method))
            if np.isfinite(half).any():
                ax.fill_between(t, mean - half, mean + half, color=f"C{i}", alpha=0.2, lw=0)
            final = runs[runs["t"] == runs["t"].max()][_AVG]
            rows.append(
                {
                    "problem": problem,
                    "method": labels.get(method, method),
                    "T": int(runs["t"].max()),
                    "regret": float(final.mean()),
                    "±95%": t_interval(final),
                }
            )
        ax.set_xscale("log")
        ax.set_title(f"{problem} ($\\delta_L$ = {FIGURE2_DELTA_L:g})")
        ax.set_xlabel("round t")
        ax.set_ylabel("average regret Δ_t / t")
        ax.grid(True, alpha=0.3)
        ax.legend(frameon=False)
    text = (
        "Average regret Δ_t/t against t (mean over runs, 95% t-interval band) of DBGD, "
        "BGD1 and BGD2, as in Figure 2 of the paper."
    )
    return [ReportSection("figure2", "Figure 2: DBGD vs BGD", text, pd.DataFrame(rows), fig)]


TABLE1_RECIPE = Recipe(
    "Yue & Joachims 2009 Table 1: DBGD average regret on P1-P5 x delta_L "
    "(synthetic duels; small: T = 20,000, 5 runs; full: T = 10^6, 10 runs)",
    build=build_table1,
    task=run_duel_set,
    sections=table1_sections,
)
FIGURE2_RECIPE = Recipe(
    "Yue & Joachims 2009 Figure 2: DBGD vs BGD1 vs BGD2 average regret against t "
    "on P1 and P5 (small: T = 20,000, 5 runs; full: T = 10^6, 10 runs)",
    build=build_figure2,
    task=run_duel_set,
    sections=figure2_sections,
)
