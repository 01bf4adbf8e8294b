"""Reproductions written in Python run through the engine: --out, resume, report, run-set task.

Each test shrinks the small size (horizon, runs, learners) so that it runs in
seconds; what is checked is the path through sweep → storage → report, and that
the numbers stored are the ones an independent computation gives.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import oltr.reproductions.learner_quality as learner_quality
import oltr.reproductions.yj09 as yj09
from oltr.cli import app
from oltr.experiments import storage
from oltr.reproductions import list_reproductions, load_reproduction
from oltr.reproductions.recipe import t_interval
from oltr.reproductions.synthetic_duels import (
    DUEL_MEASURE,
    TABLE1,
    duel_spec,
    run_duel_set,
    simulate_synthetic,
)

#: The reproductions written in Python, and what their report page must show.
RECIPES = {
    "learner-quality": "Held-out NDCG@10 at the defaults",
    "yj09-table1": "Table 1: DBGD average regret",
    "yj09-fig2": "Figure 2: DBGD vs BGD",
}


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small sizes of seconds: a short horizon, two runs, two learners, one problem."""
    monkeypatch.setitem(yj09.SYNTHETIC_SIZES, "small", {"horizon": 300, "reps": 2})
    monkeypatch.setitem(
        learner_quality.SIZES,
        "small",
        {
            **learner_quality.SIZES["small"],
            "horizon": 300,
            "reps": 2,
            "learners": learner_quality.CONTEXTUAL_DEFAULTS[:2],
        },
    )
    original = yj09.build_table1

    def one_problem(size: str, output: Path) -> object:
        return original(size, output, problems=("P1",))

    monkeypatch.setattr(
        yj09,
        "TABLE1_RECIPE",
        yj09.TABLE1_RECIPE.__class__(
            yj09.TABLE1_RECIPE.description,
            one_problem,
            yj09.TABLE1_RECIPE.task,
            yj09.TABLE1_RECIPE.sections,
        ),
    )


def _reproduce(name: str, out: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        app, ["reproduce", name, "--size", "small", "--out", str(out), "-q", *extra]
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_the_recipes_are_listed() -> None:
    listed = {r.name: r for r in list_reproductions()}
    for name in RECIPES:
        assert listed[name].resource is None and listed[name].description


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.slow] if n == "learner-quality" else []) for n in RECIPES],
)
def test_out_resume_and_report(
    name: str, tiny: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "elsewhere"
    first = _reproduce(name, out, "-j", "1")
    n = len(storage.finished_run_sets(out))
    assert n > 0 and f"{n} run set(s), {n} to run" in first
    assert not (tmp_path / "results").exists()  # --out is honoured: nothing in ./results
    manifest = json.loads((out / "experiment.json").read_text())
    assert manifest["reproduction"] == name and manifest["size"] == "small"

    # Resuming: a second run finds every run set finished and computes none.
    stamps = {p: p.stat().st_mtime_ns for p in storage.runs_dir(out).glob("*.parquet")}
    second = _reproduce(name, out, "-j", "1")
    assert f"{n} run set(s), 0 to run, {n} already finished" in second
    assert {p: p.stat().st_mtime_ns for p in storage.runs_dir(out).glob("*.parquet")} == stamps

    # `oltr report` rebuilds the report, the reproduction's own section included.
    page = out / "report" / "index.html"
    page.unlink()
    result = CliRunner().invoke(app, ["report", str(out)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert f"<h1>{name}</h1>" in text and RECIPES[name] in text


def test_duel_run_sets_run_in_worker_processes(tiny: None, tmp_path: Path) -> None:
    # The run-set task reaches the pool's workers (-j 2) and the figure is drawn.
    out = tmp_path / "fig2"
    _reproduce("yj09-fig2", out, "-j", "2")
    assert (out / "report" / "figure2.png").stat().st_size > 0
    table = pd.read_csv(out / "report" / "figure2.csv")
    assert set(table["method"]) == {"DBGD", "BGD1", "BGD2"} and set(table["problem"]) == {
        "P1",
        "P5",
    }


# ----------------------------------------------------------------------------- the duel task


@pytest.mark.parametrize("method", ["dbgd", "bgd1", "bgd2"])
def test_a_duel_run_set_equals_the_batched_simulation(method: str) -> None:
    # Two implementations of §5.1: the learner classes in the protocol loop
    # (run_duel_set) and the array simulation; the same keys give the same numbers.
    cps = (1, 10, 100, 400)
    spec = duel_spec("P3", method, 0.8, reps=(0, 3), seed=5, horizon=400, checkpoints=cps, dim=6)
    trace = run_duel_set(spec)
    fast = simulate_synthetic(
        "P3", method=method, delta_l=[0.8], reps=(0, 3), seed=5, horizon=400, checkpoints=cps, dim=6
    )[0]
    avg = trace[f"{DUEL_MEASURE}:avg"].to_numpy().reshape(2, len(cps))
    np.testing.assert_array_equal(avg, fast)
    # Δ_t is the running sum of the per-round term, so the term at t = 1 is Δ_1.
    first = trace[trace["t"] == 1]
    np.testing.assert_array_equal(first[DUEL_MEASURE], first[f"{DUEL_MEASURE}:cum"])
    np.testing.assert_array_equal(trace[f"{DUEL_MEASURE}:regret"], trace[f"{DUEL_MEASURE}:cum"])


def test_a_duel_run_set_refuses_other_environments() -> None:
    spec = duel_spec("P1", "dbgd", 1.0, reps=(0,), seed=0, horizon=5, checkpoints=(5,))
    with pytest.raises(ValueError, match="value-function-duel"):
        run_duel_set(
            type(spec)(**{**spec.__dict__, "env": "fixed-items-v1"})  # type: ignore[arg-type]
        )


def test_table1_section_is_the_mean_and_interval_of_the_stored_runs(
    tiny: None, tmp_path: Path
) -> None:
    out = tmp_path / "t1"
    _reproduce("yj09-table1", out, "-j", "1")
    table = pd.read_csv(out / "report" / "table1.csv")
    assert len(table) == 5 and set(table["problem"]) == {"P1"}
    # The stored runs, recomputed independently by the array simulation.
    reg = simulate_synthetic(
        "P1", delta_l=table["delta_l"].tolist(), reps=(0, 1), seed=yj09.SEED, horizon=300
    )[..., -1]
    np.testing.assert_allclose(table["regret"], reg.mean(axis=1), rtol=1e-5)
    np.testing.assert_allclose(table["±95%"], [t_interval(r) for r in reg], rtol=1e-5)
    np.testing.assert_allclose(table["paper"], TABLE1["P1"])


def test_a_recipe_loads_into_the_folder_it_is_given(tmp_path: Path) -> None:
    exp = load_reproduction("yj09-fig2", size="small", out=tmp_path / "x")
    assert exp.output == tmp_path / "x" and exp.reproduction == "yj09-fig2"
    assert {rs.spec.reps for rs in exp.run_sets} == {tuple(range(5))}  # ≥ 5 runs: an interval
