"""Reports: interval arithmetic, which quantity is drawn, figure contents, files."""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oltr.experiments import report, storage

# Student t quantile t_{0.975, 2} from the standard table (4.303 to 3 decimals).
T975_DF2 = 4.302652729911275
T975_DF3 = 3.182446305284263


def _frame(
    learners: dict[str, list[tuple[int, float, float]]],
    measure: str = "sumloss",
    regret: bool = True,
) -> pd.DataFrame:
    """learner -> rows (rep, t, value); value fills M, M:avg; regret = value * t."""
    rows = []
    for name, entries in learners.items():
        for rep, t, value in entries:
            rows.append(
                {
                    "run_set": name,
                    "learner": name,
                    "params": "{}",
                    "rep": rep,
                    "t": t,
                    measure: value,
                    f"{measure}:cum": value * t,
                    f"{measure}:avg": value,
                    f"{measure}:regret": value * t if regret else np.nan,
                }
            )
    return pd.DataFrame(rows)


def test_summarize_t_interval_by_hand() -> None:
    df = _frame({"a": [(0, 10, 1.0), (1, 10, 2.0), (2, 10, 3.0)]}, regret=False)
    out = report.summarize(df, report.quantity_for(df, "sumloss"))
    row = out.iloc[0]
    # mean 2, sample sd 1, n 3: half-width t_{.975,2} / sqrt(3)
    assert row["mean"] == pytest.approx(2.0)
    assert row["ci"] == pytest.approx(T975_DF2 / np.sqrt(3))
    assert row["lower"] == pytest.approx(2.0 - T975_DF2 / np.sqrt(3))
    assert row["n"] == 3


def test_summarize_average_regret_divides_by_t() -> None:
    # regret = value * t, so regret / t recovers the values 1, 3 at t = 4.
    df = _frame({"a": [(0, 4, 1.0), (1, 4, 3.0)]})
    q = report.quantity_for(df, "sumloss")
    assert q.column == "sumloss:regret" and q.per_round and q.is_regret
    out = report.summarize(df, q)
    assert out["mean"].iloc[0] == pytest.approx(2.0)


def test_single_rep_has_no_interval() -> None:
    df = _frame({"a": [(0, 1, 5.0)]})
    out = report.summarize(df, report.quantity_for(df, "sumloss"))
    assert np.isnan(out["ci"].iloc[0])


def test_quantity_without_regret_is_running_average() -> None:
    df = _frame({"a": [(0, 1, 1.0)]}, regret=False)
    q = report.quantity_for(df, "sumloss")
    assert q.column == "sumloss:avg" and not q.is_regret and not q.per_round


def test_quantity_can_name_a_column() -> None:
    df = _frame({"a": [(0, 1, 1.0)]})
    q = report.quantity_for(df, "sumloss:cum")
    assert q.column == "sumloss:cum" and not q.per_round


def test_unknown_measure_lists_the_available_ones() -> None:
    df = _frame({"a": [(0, 1, 1.0)]})
    with pytest.raises(ValueError, match=r"'ndcg'.*available: sumloss"):
        report.quantity_for(df, "ndcg")


def _power_law(n_learners: int, exponents: list[float], reps: int = 4) -> pd.DataFrame:
    """Regret exactly c * t^alpha (times a rep factor), at log-spaced t."""
    ts = np.unique(np.geomspace(1, 10_000, 30).round().astype(int))
    rows = []
    for i in range(n_learners):
        for rep in range(reps):
            for t in ts:
                regret = (1 + 0.1 * rep) * (i + 1) * t ** exponents[i]
                rows.append(
                    {
                        "run_set": f"r{i}",
                        "learner": f"L{i}",
                        "params": "{}",
                        "rep": rep,
                        "t": int(t),
                        "m": 0.5,
                        "m:cum": 0.5 * t,
                        "m:avg": 0.5,
                        "m:regret": regret,
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("loglog", [False, True])
def test_plot_has_one_distinct_line_per_learner(loglog: bool) -> None:
    df = _power_law(5, [0.5, 0.6, 0.7, 0.8, 0.9])
    fig = report.plot_measure(df, "m", loglog=loglog)
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 5
    styles = {(ln.get_linestyle(), ln.get_marker()) for ln in lines}
    assert len(styles) == 5  # distinguishable without colour
    assert (ax.get_xscale(), ax.get_yscale()) == (
        ("log", "log") if loglog else ("linear", "linear")
    )
    assert len(ax.collections) == 5  # one interval band each
    # The line is the mean of (regret / t) over reps at each t.
    t, y = lines[0].get_data()
    factor = np.mean([1 + 0.1 * r for r in range(4)])
    np.testing.assert_allclose(y, factor * np.asarray(t, float) ** (0.5 - 1), rtol=1e-12)


def test_loglog_legend_carries_the_fitted_exponent() -> None:
    df = _power_law(2, [0.5, 2 / 3])
    fig = report.plot_measure(df, "m", loglog=True)
    texts = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    slopes = [float(re.search(r"T\^\{(-?[0-9.]+) \\pm", s).group(1)) for s in texts]
    assert slopes == pytest.approx([0.50, 0.67], abs=0.005)
    linear = report.plot_measure(df, "m", loglog=False)
    assert [t.get_text() for t in linear.axes[0].get_legend().get_texts()] == ["L0", "L1"]


def test_no_exponent_without_regret() -> None:
    df = _power_law(1, [0.5])
    df["m:regret"] = np.nan
    fig = report.plot_measure(df, "m", loglog=True)
    assert fig.axes[0].get_legend().get_texts()[0].get_text() == "L0"


def test_final_table_by_hand() -> None:
    df = _frame({"a": [(0, 1, 9.0), (0, 5, 1.0), (1, 5, 2.0), (2, 5, 3.0), (3, 5, 6.0)]})
    table = report.final_table(df)
    row = table.iloc[0]
    # last round t = 5: values 1, 2, 3, 6 -> mean 3, sd sqrt(14/3)
    assert row["reps"] == 4 and row["horizon"] == 5
    assert row["sumloss:avg mean"] == pytest.approx(3.0)
    assert row["sumloss:avg ci95"] == pytest.approx(T975_DF3 * np.sqrt(14 / 3) / 2)
    assert row["sumloss:regret mean"] == pytest.approx(15.0)


def _results_dir(tmp_path: Path) -> Path:
    df = _power_law(3, [0.5, 0.6, 0.7])
    for i, (label, part) in enumerate(df.groupby("learner", sort=True)):
        trace = part.drop(columns=["run_set", "learner", "params"]).reset_index(drop=True)
        storage.write_run_set(
            tmp_path, f"r{i}", trace, {"label": label, "params": {"i": i}, "learner_index": i}
        )
    storage.write_manifest(
        tmp_path,
        {
            "name": "power-law",
            "description": "three curves",
            "run_sets": [{"run_set": f"r{i}"} for i in range(3)],
        },
    )
    return tmp_path


def test_write_report_files(tmp_path: Path) -> None:
    results = _results_dir(tmp_path / "res")
    rep = report.write_report(results)
    assert rep.out_dir == results / "report"
    pngs = [p for p in rep.images if p.suffix == ".png"]
    svgs = [p for p in rep.images if p.suffix == ".svg"]
    assert len(pngs) == len(svgs) == 2  # one measure: linear and log-log
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for svg in svgs:
        assert ET.parse(svg).getroot().tag == "{http://www.w3.org/2000/svg}svg"
    for fig in rep.figures.values():
        assert len(fig.axes[0].get_lines()) == 3

    page = rep.html.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "<script" not in page
    assert page.count('src="data:image/png;base64,') == 2

    with rep.table_csv.open() as fh:
        rows = list(csv.DictReader(fh))
    assert [r["learner"] for r in rows] == ["L0", "L1", "L2"]
    # L0 at T = 10000: regret (1 + 0.1 rep) * 10000^0.5, reps 0..3 -> mean 1.15 * 100
    assert float(rows[0]["m:regret mean"]) == pytest.approx(115.0, rel=1e-5)
    md = rep.table_md.read_text()
    assert md.splitlines()[0] == "| learner | reps | m:avg | m:regret |"
    assert "| L0 | 4 |" in md


def test_report_measure_selection_and_error(tmp_path: Path) -> None:
    results = _results_dir(tmp_path / "res")
    rep = report.write_report(results, measures=["m:cum"], out=tmp_path / "out")
    assert sorted(p.name for p in rep.images) == [
        "m_cum_linear.png",
        "m_cum_linear.svg",
        "m_cum_loglog.png",
        "m_cum_loglog.svg",
    ]
    with pytest.raises(ValueError, match="not in the results"):
        report.write_report(results, measures=["nope"], out=tmp_path / "out2")
    assert not (tmp_path / "out2").exists()


def test_svg_output_is_reproducible(tmp_path: Path) -> None:
    results = _results_dir(tmp_path / "res")
    a = report.write_report(results, out=tmp_path / "a")
    b = report.write_report(results, out=tmp_path / "b")
    for pa, pb in zip(a.images, b.images, strict=True):
        if pa.suffix == ".svg":
            assert pa.read_bytes() == pb.read_bytes()


def test_sections_come_first_and_are_written_as_files(tmp_path: Path) -> None:
    from matplotlib.figure import Figure

    from oltr.experiments.page import ReportSection

    results = _results_dir(tmp_path / "res")
    fig = Figure()
    fig.add_subplot().plot([1, 2], [3, 4])
    table = pd.DataFrame({"problem": ["P1", "P2"], "regret": [0.123456, float("nan")]})
    section = ReportSection("paper-table", "Paper table", "Values at T.", table, fig)
    rep = report.write_report(results, sections=[section])
    page = rep.html.read_text()
    # The section precedes the engine's own tables, with its table cells and its figure.
    assert page.index("Paper table") < page.index("Final values")
    assert "<td>0.1235</td>" in page and "<td>–</td>" in page
    assert page.count('src="data:image/png;base64,') == 3  # the section's figure + 2 curves
    out = rep.out_dir
    assert pd.read_csv(out / "paper-table.csv")["regret"].iloc[0] == pytest.approx(0.123456)
    assert (out / "paper-table.md").read_text().splitlines()[2] == "| P1 | 0.1235 |"
    assert (out / "paper-table.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ET.parse(out / "paper-table.svg").getroot().tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("name", ["", "a b", "../x", "t.csv"])
def test_a_section_name_must_be_a_plain_file_stem(name: str) -> None:
    from oltr.experiments.page import ReportSection

    with pytest.raises(ValueError, match="section name"):
        ReportSection(name, "title")
