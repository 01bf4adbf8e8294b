"""The click reproduction (oltr-clicks): its protocols, run through the engine, and on real data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oltr.build import make_env, make_feedback
from oltr.clicks import click_model
from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor, write_letor
from oltr.data.synthetic import synthetic_letor
from oltr.experiments import storage
from oltr.experiments.sweep import run_experiment
from oltr.random import child_rng
from oltr.reproductions.clicks import (
    OFFLINE,
    ONLINE,
    click_experiment,
    click_run_sets,
    sections,
    summarize,
)
from oltr.types import RunGenerators


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture()
def data(tmp_path: Path) -> list[tuple[str, str, str, int, bool]]:
    """One synthetic fold with 3 grades; a third of the training queries have no relevant doc."""
    full = synthetic_letor(n_queries=60, n_features=5, max_grade=2, min_docs=3, max_docs=15, rng=4)
    rel = np.array(full.relevance)
    for q in range(0, 40, 3):
        rel[full.offsets[q] : full.offsets[q + 1]] = 0
    full = LetorDataset(features=full.features, relevance=rel, qids=full.qids, offsets=full.offsets)
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    write_letor(full.subset(np.arange(40)), train)
    write_letor(full.subset(np.arange(40, 60)), test)
    return [("syn/Fold1", str(train), str(test), 3, False)]


def _runs(data, protocol: str, cm: str = "navigational", learner: str = "PDGD"):  # type: ignore[no-untyped-def]
    return click_run_sets(
        data, learners=(learner,), click_models=(cm,), runs=4, horizon=30, protocol=protocol
    )


# ----------------------------------------------------------------------------- the protocols


def test_reference_user_throws_the_stop_coin_at_every_position(data) -> None:
    # The run sets' feedback model, asked 40,000 times about one page, clicks with the
    # frequencies of the cascade law of its stop rule: c_i Π_{j<i}(1 − s_j) under "reference",
    # c_i Π_{j<i}(1 − c_j s_j) under "lerot". Standard errors are below 0.0025; 5 SE apart.
    grades = np.array([0, 1, 0, 0, 2, 0, 1, 0, 0, 2])
    n = 40_000
    orders = np.tile(np.arange(10), (n, 1))
    for protocol, rule in (("reference", "every-position"), ("lerot", "after-click")):
        spec = _runs(data, protocol)[0].spec
        model = make_feedback(spec.feedback, spec.feedback_params)
        clicks = model.observe(orders, grades, rngs=RunGenerators.from_rng(1, n)).clicks
        want = click_model("navigational", n_grades=3, stop_rule=rule).click_probabilities(grades)
        np.testing.assert_allclose(clicks.mean(axis=0), want, atol=5 * 0.0025)
    other = click_model("navigational", n_grades=3, stop_rule="after-click")
    every = click_model("navigational", n_grades=3, stop_rule="every-position")
    # the two laws are far apart: the grade-2 document at position 5, 0.69 against 0.24
    assert other.click_probabilities(grades)[4] - every.click_probabilities(grades)[4] > 0.4


def test_reference_trains_on_queries_without_a_relevant_document(data) -> None:
    _, train, test, _, _ = data[0]
    n_empty = sum(int(load_letor(train, cache=False).query(q)[1].max() == 0) for q in range(40))
    assert n_empty >= 10
    for protocol, n_train in (("reference", 40), ("lerot", 40 - n_empty)):
        spec = _runs(data, protocol)[0].spec
        env = make_env(spec.env, spec.env_params)
        env.reset(rng=0)
        assert env.data().n_queries == n_train
        # held-out evaluation leaves them out under both
        assert spec.heldouts is not None and spec.heldouts["test"]["drop_no_relevant"]
    # and they count 0 in the online measure under "reference" (the reference code's NDCG)
    assert _runs(data, "reference")[0].spec.no_relevant == 0.0


def test_reference_draws_each_runs_own_query_stream(data) -> None:
    # The runner keys run r's stream child_rng(seed, "env", env, r) under per-run streams
    # (tests/experiments/test_runner.py); here: the protocols ask for it, and it differs.
    ref, lerot = _runs(data, "reference")[0].spec, _runs(data, "lerot")[0].spec
    assert ref.streams == "per-run" and lerot.streams is None

    def qids(*keys: int | str) -> list[int]:
        env = make_env(ref.env, ref.env_params)
        env.reset(rng=child_rng(ref.seed, "env", ref.env, *keys))
        return [int(env.observe(t).qid) for t in range(1, 31)]

    assert qids(0) != qids(1) and qids(0) != qids()


def test_rtopk_runs_once_per_data_set_on_labels(data) -> None:
    runs = click_run_sets(
        data,
        learners=("PDGD", "RTop-kF (top-1 labels)"),
        click_models=("perfect", "informational"),
        runs=2,
        horizon=10,
    )
    groups = [(rs.label, rs.group) for rs in runs]
    assert groups.count(("RTop-kF (top-1 labels)", "syn/Fold1|top-1 labels")) == 1
    assert ("PDGD", "syn/Fold1|informational") in groups


# ----------------------------------------------------------------------------- through the engine


def test_reproduction_writes_into_out_and_resumes(data, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    kw = dict(runs=5, horizon=40, learners=("PDGD", "random"), click_models=("perfect",))
    exp = click_experiment("small", out, data=data, **kw)  # type: ignore[arg-type]
    first = run_experiment(exp, jobs=1, progress=False)
    assert len(first.computed) == len(exp.run_sets) == 2  # 5 runs in chunks of 5
    assert not (tmp_path / "results").exists()
    again = run_experiment(
        click_experiment("small", out, data=data, **kw),  # type: ignore[arg-type]
        jobs=1,
        progress=False,
    )
    assert again.computed == () and len(again.skipped) == 2
    table, curves = summarize(out)
    assert set(table["learner"]) == {"PDGD", "random"} and (table["n"] == 5).all()
    assert {1, 40} <= set(curves["impressions"])
    assert [s.name for s in sections(out)] == ["clicks-table", "clicks-syn"]
    df = storage.load_results(out)
    assert df[OFFLINE].notna().all() and df[ONLINE].notna().all()


# ----------------------------------------------------------------------------- real data


@pytest.mark.shared_data
@pytest.mark.slow
def test_pdgd_beats_random_on_mq2008(shared_data: Path, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # 5 runs × 600 impressions of MQ2008 Fold1 with perfect clicks under the reference
    # protocol. PDGD's held-out NDCG@10 is far above the random ranker's (~0.47 on MQ2008):
    # a margin of 0.1 is several times the 95% interval of 5 runs.
    monkeypatch.setenv("OLTR_DATA_DIR", str(shared_data))
    out = tmp_path / "out"
    exp = click_experiment(
        "small", out, runs=5, horizon=600, learners=("PDGD", "random"), click_models=("perfect",)
    )
    run_experiment(exp, jobs=1, progress=False)
    table = summarize(out)[0].set_index("learner")
    assert table.loc["PDGD", "offline NDCG@10"] > table.loc["random", "offline NDCG@10"] + 0.1
    assert table.loc["PDGD", "online (discounted)"] > table.loc["random", "online (discounted)"]
    assert np.isfinite(table["offline ±95%"]).all()


@pytest.mark.slow
def test_cli_reproduction_writes_into_out_resumes_and_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `oltr reproduce oltr-clicks --size small` on a synthetic stand-in for MQ2008 Fold1
    # (same layout under $OLTR_DATA_DIR): everything lands in --out, nothing in ./results,
    # the second call runs nothing, and the report carries the protocol's table.
    from typer.testing import CliRunner

    from oltr.cli import app

    fold = tmp_path / "data" / "LETOR4.0" / "MQ2008" / "Fold1"
    fold.mkdir(parents=True)
    full = synthetic_letor(n_queries=50, n_features=46, max_grade=2, min_docs=3, max_docs=12, rng=1)
    write_letor(full.subset(np.arange(35)), fold / "train.txt.gz")
    write_letor(full.subset(np.arange(35, 50)), fold / "test.txt.gz")
    monkeypatch.setenv("OLTR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    args = ["reproduce", "oltr-clicks", "--size", "small", "--out", str(out), "-j", "2", "-q"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert not (tmp_path / "results").exists()
    n_sets = len(list((out / "runs").glob("*.parquet")))
    assert n_sets == 3 * 3  # 3 click models x 3 learners, 5 runs in one chunk each
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and f"{n_sets} already finished" in again.output
    page = (out / "report" / "index.html").read_text(encoding="utf-8")
    assert "Offline and online NDCG@10" in page
    table = pd.read_csv(out / "report" / "clicks-table.csv")
    assert set(table["click_model"]) == {"perfect", "navigational", "informational"}
