"""Reports: plots, a table of final values and one self-contained HTML page.

A report only reads a results folder (:func:`oltr.experiments.storage.load_results`);
it never runs anything. For every measure ``M`` it draws, against the round t,
the mean over repetitions and its 95 % t-interval of

* the time-averaged regret ``R_t / t`` (``M:regret`` divided by t) when the
  environment computed a comparator, otherwise
* the running average of the measure ``M:avg``,

once on linear and once on log–log axes; on log–log axes of a regret curve the
legend carries the fitted regret exponent α in ``R_T ∝ T^α`` (slope ± standard
error of the least-squares fit of log R_t on log t over the last part of the run,
:func:`oltr.experiments.regret.regret_exponent`). Lines differ in line style and
marker as well as colour, so the plots read in black and white.

A held-out column ``heldout:ndcg@k`` (NDCG@k of each learner's current weights
on a test file, :mod:`oltr.experiments.runner`) is a value at t, not a sum over
rounds, and has no ``:cum``/``:avg``/``:regret`` companions: it is drawn and
tabulated as it is. Learners without weights (all NaN) are left out of its plot
and show "–" in the table.

The 95 % interval at each t is ``mean ± t_{0.975, n-1} · s / √n`` over the n
repetitions (Student t, sample standard deviation s); with one repetition there
is no interval. Repetitions of different learners share random numbers
(common environment and feedback streams), so the intervals are for each learner
alone, not for differences.
"""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from scipy import stats

from oltr.experiments import storage
from oltr.experiments.page import ReportSection, frame_markdown, render_page
from oltr.experiments.regret import regret_exponent

__all__ = [
    "HELDOUT_PREFIX",
    "Quantity",
    "Report",
    "ReportSection",
    "final_table",
    "measures_in",
    "plot_measure",
    "quantity_for",
    "summarize",
    "write_report",
]

#: Okabe–Ito palette (distinguishable with colour-vision deficiencies).
_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")  # 7 and 4 are coprime: 28 distinct pairs
_LEVEL = 0.95


@dataclasses.dataclass(frozen=True)
class Quantity:
    """What is plotted for a measure: a column, optionally divided by t."""

    measure: str
    column: str
    per_round: bool  # divide by t (time-averaged regret)
    is_regret: bool
    label: str


@dataclasses.dataclass(frozen=True)
class Report:
    """Files written by :func:`write_report` and the figures drawn."""

    out_dir: Path
    html: Path
    table_md: Path
    table_csv: Path
    images: tuple[Path, ...]
    figures: dict[str, Figure]


#: Prefix of held-out columns (``heldout:ndcg@10``): values at t without companions.
HELDOUT_PREFIX = "heldout:"


def measures_in(df: pd.DataFrame) -> list[str]:
    """The measures of a results frame, in column order.

    Those with an ``M:avg`` column, then the held-out columns (``heldout:…``)
    that hold a value.
    """
    online = [c[: -len(":avg")] for c in df.columns if c.endswith(":avg")]
    # A held-out column that is NaN throughout (only learners without weights) shows nothing.
    return online + [c for c in df.columns if _is_heldout(c) and df[c].notna().any()]


def quantity_for(df: pd.DataFrame, measure: str) -> Quantity:
    """The quantity plotted for ``measure``: average regret when available, else ``M:avg``.

    ``measure`` may also name a column directly (``"ndcg@10:cum"``, ``"sumloss:regret"``).
    A held-out column (``"heldout:ndcg@10"``) is its own quantity.
    """
    if _is_heldout(measure) and measure in df.columns:
        name = measure[len(HELDOUT_PREFIX) :]
        return Quantity(measure, measure, False, False, f"held-out {name} of current weights")
    if measure in measures_in(df):
        regret = f"{measure}:regret"
        if regret in df.columns and df[regret].notna().all():
            return Quantity(measure, regret, True, True, f"average regret $R_t/t$ ({measure})")
        return Quantity(measure, f"{measure}:avg", False, False, f"average {measure} per round")
    if measure in df.columns and measure not in ("rep", "t"):
        base, _, suffix = measure.rpartition(":")
        names = {"cum": "cumulative", "regret": "cumulative regret", "avg": "average"}
        label = f"{names.get(suffix, '')} {base or measure}".strip() if base else measure
        is_regret = bool(suffix == "regret" and df[measure].notna().all())
        return Quantity(base or measure, measure, False, is_regret, label)
    available = measures_in(df)
    raise ValueError(
        f"measure {measure!r} is not in the results; available: {', '.join(available)}"
        " (or a column such as 'M:cum')"
    )


def summarize(df: pd.DataFrame, quantity: Quantity) -> pd.DataFrame:
    """Mean, 95 % t-interval half-width and count over reps, per learner and t.

    Returns columns ``learner, t, mean, ci, n, lower, upper`` (``ci`` is NaN for n = 1).
    """
    values = df[quantity.column].to_numpy(dtype=float)
    if quantity.per_round:
        values = values / df["t"].to_numpy(dtype=float)
    frame = pd.DataFrame({"learner": df["learner"], "t": df["t"], "value": values})
    grouped = frame.groupby(["learner", "t"], sort=False)["value"]
    out = grouped.agg(mean="mean", std="std", n="count").reset_index()
    out["ci"] = _half_width(out["std"].to_numpy(), out["n"].to_numpy())
    out["lower"] = out["mean"] - out["ci"]
    out["upper"] = out["mean"] + out["ci"]
    return out.drop(columns="std").sort_values(["learner", "t"], kind="stable", ignore_index=True)


def plot_measure(
    df: pd.DataFrame,
    measure: str,
    *,
    loglog: bool = False,
    order: Sequence[str] | None = None,
    fit_from: float = 0.1,
) -> Figure:
    """One figure: mean ± 95 % interval per learner against t.

    Parameters
    ----------
    df
        Results (:func:`oltr.experiments.storage.load_results`).
    measure
        Measure name or column (see :func:`quantity_for`).
    loglog
        Log–log axes; for regret, the legend shows the fitted exponent.
    order
        Learner labels in the order to draw them (default: as they appear).
    fit_from
        The exponent is fitted on checkpoints with t >= fit_from * T, in (0, 1].
    """
    if not 0 < fit_from <= 1:
        raise ValueError(f"fit_from must be in (0, 1], got {fit_from}")
    quantity = quantity_for(df, measure)
    summary = summarize(df, quantity)
    learners = list(order) if order is not None else list(dict.fromkeys(df["learner"]))
    fig = Figure(figsize=(6.4, 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for i, learner in enumerate(learners):
        part = summary[summary["learner"] == learner]
        if part.empty or part["mean"].isna().all():  # e.g. held-out value of a random ranker
            continue
        t = part["t"].to_numpy(dtype=float)
        mean = part["mean"].to_numpy()
        lower, upper = part["lower"].to_numpy(), part["upper"].to_numpy()
        label = learner
        if loglog:
            # Log axes cannot show values <= 0: leave those parts of the band out.
            lower = np.where(lower > 0, lower, np.nan)
            if quantity.is_regret:
                label += _exponent_label(df, quantity, learner, fit_from)
        ax.plot(
            t,
            mean,
            label=label,
            color=_COLOURS[i % len(_COLOURS)],
            linestyle=_LINESTYLES[i % len(_LINESTYLES)],
            marker=_MARKERS[i % len(_MARKERS)],
            # Evenly spaced along the drawn line (display space), staggered per learner.
            markevery=(0.1 * (i % 5) / 5, 0.1),
            markersize=5,
            linewidth=1.6,
        )
        if np.isfinite(upper).any():
            ax.fill_between(
                t, lower, upper, color=_COLOURS[i % len(_COLOURS)], alpha=0.18, linewidth=0
            )
    if loglog:
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel("round t")
    ax.set_ylabel(quantity.label)
    ax.set_title(
        f"{quantity.label}: mean and 95% interval over reps" + (" (log–log)" if loglog else ""),
        fontsize=10,
    )
    ax.grid(True, which="major", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, frameon=False)
    return fig


def final_table(
    df: pd.DataFrame, measures: Sequence[str] | None = None, *, order: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per learner, mean and 95 % half-width at the last round of ``M:avg`` and ``M:regret``.

    Columns: ``learner, params, reps, horizon`` then, per measure M,
    ``M:avg mean, M:avg ci95`` and (when the regret is available)
    ``M:regret mean, M:regret ci95``; for a held-out column H (``heldout:ndcg@10``),
    ``H mean, H ci95`` (left out for learners without weights, whose values are NaN).
    """
    measures = list(measures) if measures is not None else measures_in(df)
    learners = list(order) if order is not None else list(dict.fromkeys(df["learner"]))
    last = df[df["t"] == df.groupby("learner")["t"].transform("max")]
    rows = []
    for learner in learners:
        part = last[last["learner"] == learner]
        if part.empty:
            continue
        row: dict[str, Any] = {
            "learner": learner,
            "params": part["params"].iloc[0],
            "reps": int(part["rep"].nunique()),
            "horizon": int(part["t"].iloc[0]),
        }
        for m in measures:
            for col in [m] if _is_heldout(m) else [f"{m}:avg", f"{m}:regret"]:
                if col not in part.columns or part[col].isna().any():
                    continue
                values = part[col].to_numpy(dtype=float)
                row[f"{col} mean"] = float(values.mean())
                row[f"{col} ci95"] = float(
                    _half_width(
                        np.array([values.std(ddof=1) if len(values) > 1 else np.nan]),
                        np.array([len(values)]),
                    )[0]
                )
        rows.append(row)
    return pd.DataFrame(rows)


def write_report(
    results_dir: str | Path,
    *,
    measures: Sequence[str] | None = None,
    out: str | Path | None = None,
    fit_from: float = 0.1,
    sections: Sequence[ReportSection] = (),
) -> Report:
    """Write plots (PNG + SVG), the final-value table (Markdown + CSV) and ``index.html``.

    Parameters
    ----------
    results_dir
        A results folder written by a sweep.
    measures
        Measures (or columns) to plot; default every measure in the results.
    out
        Output folder; default ``RESULTS_DIR/report``.
    fit_from
        Fraction of the horizon from which the regret exponent is fitted.
    sections
        What the caller adds (:class:`~oltr.experiments.page.ReportSection`: a
        paper's table, its figure), shown first; each table is also written as
        ``NAME.csv`` and ``NAME.md``, each figure as ``NAME.png`` and ``NAME.svg``.
    """
    results_dir = Path(results_dir)
    df = storage.load_results(results_dir)
    metadata = storage.load_metadata(results_dir)
    manifest = storage.read_manifest(results_dir) or {}
    order = _learner_order(df, metadata)
    chosen = list(measures) if measures else measures_in(df)
    for m in chosen:
        quantity_for(df, m)  # fail on an unknown measure before writing anything
    out_dir = Path(out) if out is not None else results_dir / "report"
    storage.prepare_dir(out_dir, what="report folder")

    figures: dict[str, Figure] = {}
    images: list[Path] = []
    embedded: list[tuple[str, str]] = []
    shown: list[tuple[ReportSection, str | None]] = []
    for section in sections:
        png_data = None
        if section.table is not None:
            _write_text(
                out_dir / f"{section.name}.csv",
                section.table.to_csv(index=False, float_format="%.6g"),
            )
            _write_text(out_dir / f"{section.name}.md", frame_markdown(section.table))
        if section.figure is not None:
            figures[section.name] = section.figure
            images += _save_both(section.figure, out_dir / section.name)
            png_data = base64.b64encode(images[-2].read_bytes()).decode("ascii")
        shown.append((section, png_data))
    for m in chosen:
        for loglog in (False, True):
            name = f"{_slug(m)}_{'loglog' if loglog else 'linear'}"
            fig = plot_measure(df, m, loglog=loglog, order=order, fit_from=fit_from)
            figures[name] = fig
            images += _save_both(fig, out_dir / name)
            embedded.append((name, base64.b64encode(images[-2].read_bytes()).decode("ascii")))

    table = final_table(df, [m for m in chosen if m in measures_in(df)], order=order)
    table_csv, table_md = out_dir / "final.csv", out_dir / "final.md"
    csv_text = table.to_csv(index=False, float_format="%.6g")
    _write_text(table_csv, csv_text)
    _write_text(table_md, _markdown(table))
    page = out_dir / "index.html"
    summary = (
        f"{df['learner'].nunique()} learner setting(s), {int(df['rep'].nunique())} repetition(s),"
        f" horizon {int(df['t'].max())}"
    )
    _write_text(page, render_page(manifest, summary, _cells(table), embedded, shown))
    return Report(out_dir, page, table_md, table_csv, tuple(images), figures)


# ----------------------------------------------------------------------------- internals


def _is_heldout(column: str) -> bool:
    # heldout:ndcg@10, or a named held-out set's heldout:NAME:ndcg@10
    return column.startswith(HELDOUT_PREFIX) and column.count(":") <= 2


def _half_width(std: np.ndarray, n: np.ndarray) -> np.ndarray:
    n = n.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        crit = stats.t.ppf(0.5 + _LEVEL / 2, np.where(n > 1, n - 1, np.nan))
        return np.where(n > 1, crit * std / np.sqrt(n), np.nan)


def _exponent_label(df: pd.DataFrame, quantity: Quantity, learner: str, fit_from: float) -> str:
    part = df[df["learner"] == learner]
    mean = part.groupby("t")[f"{quantity.measure}:regret"].mean()
    t = mean.index.to_numpy(dtype=float)
    cum = mean.to_numpy(dtype=float)
    keep = (t >= fit_from * t.max()) & (cum > 0)
    if keep.sum() < 3:
        return ""
    try:
        slope, stderr = regret_exponent(t[keep], cum[keep])
    except ValueError:
        return ""
    if not math.isfinite(slope):
        return ""
    return rf"  ($R_T \propto T^{{{slope:.2f} \pm {stderr:.2f}}}$)"


def _learner_order(df: pd.DataFrame, metadata: dict[str, dict[str, Any]]) -> list[str]:
    # Config order (learner entry, then grid order), not alphabetical.
    first: dict[str, tuple[int, int, str]] = {}
    for rid, record in metadata.items():
        key = (int(record.get("learner_index", 0)), int(record.get("position", 0)), rid)
        label = record["label"]
        first[label] = min(first.get(label, key), key)
    present = set(df["learner"])
    return [label for label, _ in sorted(first.items(), key=lambda kv: kv[1]) if label in present]


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)


def _save_both(fig: Figure, stem: Path) -> list[Path]:
    """Save ``fig`` as ``stem.png`` and ``stem.svg``; returns both paths (PNG first)."""
    png, svg = stem.with_name(stem.name + ".png"), stem.with_name(stem.name + ".svg")
    with mpl.rc_context({"svg.hashsalt": "oltr"}):  # reproducible SVG ids
        _save(fig, png, "png")
        _save(fig, svg, "svg")
    return [png, svg]


def _save(fig: Figure, path: Path, fmt: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format=fmt, dpi=150, metadata={"Date": None} if fmt == "svg" else None)
    tmp.replace(path)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _cells(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """Display cells: 'mean ± ci' per quantity."""
    quantities = [c[: -len(" mean")] for c in table.columns if c.endswith(" mean")]
    header = ["learner", "reps", *quantities]
    rows = []
    for _, row in table.iterrows():
        cells = [str(row["learner"]), str(row["reps"])]
        for q in quantities:
            mean, ci = row.get(f"{q} mean"), row.get(f"{q} ci95")
            if mean is None or (isinstance(mean, float) and math.isnan(mean)):
                cells.append("–")
            elif ci is None or math.isnan(ci):
                cells.append(f"{mean:.4g}")
            elif ci <= 1e-12 * max(1.0, abs(mean)):  # rounding noise of identical reps
                cells.append(f"{mean:.4g} ± 0")
            else:
                cells.append(f"{mean:.4g} ± {ci:.2g}")
        rows.append(cells)
    return header, rows


def _markdown(table: pd.DataFrame) -> str:
    header, rows = _cells(table)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    horizon = int(table["horizon"].max()) if len(table) else 0
    note = (
        f"\nValues at the last round T = {horizon}: mean ± 95% t-interval half-width over"
        " repetitions. `M:avg` is the average per-round measure, `M:regret` the cumulative"
        " regret"
    )
    if any(_is_heldout(h) for h in header):
        note += ", `heldout:M` the measure of the final weights on the held-out queries"
    note += ".\n"
    return "\n".join(lines) + "\n" + note
