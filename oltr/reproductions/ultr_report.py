"""The report of ``oltr reproduce ultr``: tables and figures from the stored results alone.

Three tables and two figures (:func:`ultr_sections`):

* ``ultr-table``: mean held-out NDCG@10 ± 95% Student-t interval per (data
  set, η, sessions, learner), over folds × runs;
* ``ultr-gap``: per fold, η and sessions, the share of the gap between the
  naive ranker and the skyline that IPS, DLA and DR close,
  ``(NDCG_L − NDCG_naive) / (NDCG_skyline − NDCG_naive)``, and the one-sided
  paired t-test of ``NDCG_L − NDCG_naive`` over the runs (runs share the
  logger and the log, so the pairing removes their variance);
* ``ultr-propensities``: estimated θ_k (EM, DLA, harvesting) beside the true;
* figures: NDCG@10 against sessions per η, and estimated vs true propensities.

The published orderings these check (Joachims et al. 2017 Fig. 2–4; Ai et al.
2018 Table 2; Oosterhuis 2023 Fig. 2): IPS and DLA above naive, the gap
growing with η (stronger position bias); DR reaching a given NDCG with fewer
sessions than IPS.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

from oltr.experiments.page import ReportSection
from oltr.reproductions.recipe import load_grouped, t_interval

__all__ = [
    "CORRECTED",
    "K",
    "LEARNERS",
    "gap_table",
    "long_results",
    "propensity_table",
    "prop_column",
    "summary_table",
    "ultr_sections",
]

#: NDCG cutoff and the shown list length.
K = 10
#: The rankers a run set fits and scores, in the report's order.
LEARNERS: tuple[str, ...] = ("logger", "naive", "ips", "ips-true", "dla", "dr", "skyline")
#: The corrected learners whose share of the naive-to-skyline gap is tabulated.
CORRECTED: tuple[str, ...] = ("ips", "dla", "dr")
_HELDOUT, _PROP = "heldout:", "prop:"


def prop_column(method: str, k: int) -> str:
    """Trace column of the propensity θ_k (1-based k) of ``method``.

    >>> prop_column("em", 2)
    'prop:em:2'
    """
    return f"{_PROP}{method}:{k}"


def long_results(results_dir: Path) -> pd.DataFrame:
    """One row per (run set, rep, learner): data set, fold, η, sessions, NDCG@10."""
    df, meta = load_grouped(Path(results_dir))
    eta = df["run_set"].map(lambda rid: float(meta[rid]["spec"]["env_params"]["eta"]))
    group = df["group"].astype(str)
    base = pd.DataFrame(
        {
            "dataset": group.str.split("/").str[0],
            "fold": group,
            "eta": eta,
            "sessions": df["t"].astype(np.int64),
            "rep": df["rep"],
        }
    )
    parts = []
    for col in df.columns:
        if col.startswith(_HELDOUT) and col.count(":") == 2:
            learner = col.split(":")[1]
            parts.append(base.assign(learner=learner, ndcg=df[col].to_numpy()))
    out = pd.concat(parts, ignore_index=True)
    order = {name: i for i, name in enumerate(LEARNERS)}
    out["_o"] = out["learner"].map(lambda name: order.get(name, len(order)))
    out = out.sort_values(["dataset", "eta", "sessions", "_o"], kind="stable")
    return out.drop(columns="_o").reset_index(drop=True)


def summary_table(long: pd.DataFrame) -> pd.DataFrame:
    """Mean NDCG@10 ± 95% t-interval per (data set, η, sessions, learner), over folds × runs."""
    rows = []
    for key, part in long.groupby(["dataset", "eta", "sessions", "learner"], sort=False):
        data, eta, n, learner = key
        values = part["ndcg"].to_numpy()
        rows.append(
            {
                "data": data,
                "eta": eta,
                "sessions": n,
                "learner": learner,
                "NDCG@10": float(values.mean()),
                "±95%": t_interval(values),
                "n": int(values.size),
            }
        )
    return pd.DataFrame(rows)


def gap_table(long: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per fold, η, sessions and corrected learner: gap closed and the paired test vs naive.

    ``closed`` = (mean_L − mean_naive) / (mean_skyline − mean_naive);
    ``p`` the one-sided paired t-test of L − naive > 0 over the runs;
    ``pass`` when ``closed >= 0.5`` and ``p < alpha``.
    """
    rows = []
    for (fold, eta, n), part in long.groupby(["fold", "eta", "sessions"], sort=False):
        by = {name: g.sort_values("rep")["ndcg"].to_numpy() for name, g in part.groupby("learner")}
        if "naive" not in by or "skyline" not in by:
            continue
        naive, sky = by["naive"], by["skyline"]
        for learner in (c for c in CORRECTED if c in by):
            values = by[learner]
            gap = float(sky.mean() - naive.mean())
            closed = float(values.mean() - naive.mean()) / gap if gap > 0 else np.nan
            diff = values - naive
            if diff.size > 1 and diff.std(ddof=1) > 0:
                p = float(stats.ttest_rel(values, naive, alternative="greater").pvalue)
            else:
                p = 0.0 if diff.size and (diff > 0).all() else 1.0
            rows.append(
                {
                    "fold": fold,
                    "eta": eta,
                    "sessions": n,
                    "learner": learner,
                    "naive": float(naive.mean()),
                    "NDCG@10": float(values.mean()),
                    "skyline": float(sky.mean()),
                    "gap closed": closed,
                    "p (> naive)": p,
                    "pass": bool(closed >= 0.5 and p < alpha),
                }
            )
    return pd.DataFrame(rows)


def propensity_table(results_dir: Path) -> pd.DataFrame:
    """Mean θ_k per (data set, η, sessions, method, k) over folds × runs, with the t-interval."""
    df, meta = load_grouped(Path(results_dir))
    df["dataset"] = df["group"].astype(str).str.split("/").str[0]
    df["eta"] = df["run_set"].map(lambda rid: float(meta[rid]["spec"]["env_params"]["eta"]))
    rows = []
    cols = [c for c in df.columns if c.startswith(_PROP)]
    for (data, eta, n), part in df.groupby(["dataset", "eta", "t"], sort=False):
        for col in cols:
            _, method, k = col.split(":")
            values = part[col].dropna().to_numpy()
            if values.size:
                rows.append(
                    {
                        "data": data,
                        "eta": eta,
                        "sessions": int(n),  # type: ignore[call-overload]  # an int column
                        "method": method,
                        "k": int(k),
                        "theta": float(values.mean()),
                        "±95%": t_interval(values),
                    }
                )
    return pd.DataFrame(rows)


def _curves_figure(table: pd.DataFrame) -> Figure:
    datasets, etas = list(dict.fromkeys(table["data"])), sorted(set(table["eta"]))
    fig = Figure(figsize=(4.2 * len(etas), 3.4 * len(datasets)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(datasets), len(etas), squeeze=False)
    for i, data in enumerate(datasets):
        for j, eta in enumerate(etas):
            ax = axes[i, j]
            part = table[(table["data"] == data) & (table["eta"] == eta)]
            for c, learner in enumerate(dict.fromkeys(part["learner"])):
                line = part[part["learner"] == learner].sort_values("sessions")
                x, y = line["sessions"].to_numpy(), line["NDCG@10"].to_numpy()
                half = np.nan_to_num(line["±95%"].to_numpy())
                style = "--" if learner in ("logger", "skyline") else "-"
                ax.plot(x, y, style, marker="o", ms=3, color=f"C{c}", label=str(learner))
                ax.fill_between(x, y - half, y + half, color=f"C{c}", alpha=0.15, lw=0)
            ax.set_xscale("log")
            ax.set_title(f"{data}, η = {eta:g}")
            ax.set_xlabel("logged sessions")
            ax.set_ylabel("held-out NDCG@10")
            ax.grid(True, alpha=0.3)
    axes[0, -1].legend(fontsize=7, frameon=False)
    return fig


def _propensity_figure(props: pd.DataFrame) -> Figure:
    top = props[props["sessions"] == props["sessions"].max()]
    datasets, etas = list(dict.fromkeys(top["data"])), sorted(set(top["eta"]))
    fig = Figure(figsize=(4.2 * len(etas), 3.4 * len(datasets)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(datasets), len(etas), squeeze=False)
    for i, data in enumerate(datasets):
        for j, eta in enumerate(etas):
            ax = axes[i, j]
            part = top[(top["data"] == data) & (top["eta"] == eta)]
            for c, method in enumerate(dict.fromkeys(part["method"])):
                line = part[part["method"] == method].sort_values("k")
                style = "k--" if method == "true" else "-"
                kw = {} if method == "true" else {"color": f"C{c}", "marker": "o", "ms": 3}
                ax.errorbar(line["k"], line["theta"], yerr=np.nan_to_num(line["±95%"]),
                            fmt=style, label=str(method), capsize=2, **kw)  # fmt: skip
            ax.set_yscale("log")
            ax.set_title(f"{data}, η = {eta:g}, N = {int(top['sessions'].max()):.0e}")
            ax.set_xlabel("position k")
            ax.set_ylabel("θ_k / θ_1")
            ax.grid(True, alpha=0.3)
    axes[0, -1].legend(fontsize=7, frameon=False)
    return fig


def ultr_sections(results_dir: Path) -> list[ReportSection]:
    """The reproduction's tables and figures (see the module docstring)."""
    long = long_results(results_dir)
    table = summary_table(long)
    gaps = gap_table(long)
    props = propensity_table(results_dir)
    return [
        ReportSection(
            "ultr-table",
            "Held-out NDCG@10 of rankers fit from click logs",
            "Mean NDCG@10 on the test queries with a relevant document, ± 95% Student-t "
            "interval over folds × runs (n); ips and dr use the EM propensities, ips-true the "
            "true ones; the logger is the ranker that produced the log.",
            table=table,
        ),
        ReportSection(
            "ultr-gap",
            "Share of the naive-to-skyline gap closed, per fold",
            "closed = (L − naive) / (skyline − naive) of the means over runs; p: one-sided "
            "paired t-test of L − naive > 0 over the runs; pass: closed >= 0.5 and p < 0.05.",
            table=gaps,
        ),
        ReportSection(
            "ultr-curves",
            "NDCG@10 against logged sessions",
            "Mean over folds × runs with the 95% band, one panel per data set and η.",
            figure=_curves_figure(table),
        ),
        ReportSection(
            "ultr-propensities",
            "Estimated and true propensities",
            "θ_k / θ_1 at the largest log: EM (Wang et al. 2018), DLA's own estimate and, with "
            "several loggers, intervention harvesting, mean ± 95% over folds × runs; dashed: "
            "the simulator's (1/k)^η.",
            table=props,
            figure=_propensity_figure(props),
        ),
    ]
