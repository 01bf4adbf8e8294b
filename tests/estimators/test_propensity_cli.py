"""The propensities command: table, JSON, streamed counts equal to the whole log's, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from oltr.cli.errors import handle_errors
from oltr.cli.logs_propensities import propensities, stream_counts
from oltr.data import LetorDataset, synthetic_letor, write_letor
from oltr.estimators import estimate_propensities
from oltr.logs import ClickLog, bind, position_counts
from oltr.logs.io import write_log
from oltr.logs.simulate import simulate_log

K = 5


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, LetorDataset, ClickLog]:
    folder = tmp_path_factory.mktemp("prop")
    ds = synthetic_letor(n_queries=20, n_features=3, max_grade=2, min_docs=6, max_docs=9, rng=2)
    rng = np.random.default_rng(1)
    log = simulate_log(
        ds, [rng.standard_normal(3) for _ in range(2)], n_sessions=5000, top_k=K, rng=3
    )
    write_letor(ds, folder / "data.txt")
    write_log(log, folder / "log.jsonl")
    return folder / "log.jsonl", folder / "data.txt", ds, log


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(handle_errors(propensities))
    return app


def test_streamed_counts_equal_the_whole_logs(
    files: tuple[Path, Path, LetorDataset, ClickLog], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, ds, log = files
    monkeypatch.setattr("oltr.cli.logs_propensities.CHUNK_ROWS", 777)  # several chunks
    counts, n = stream_counts(path, ds, None, by_logger=True)
    whole = position_counts(bind(log, ds), by_logger=True)
    assert n == log.n_impressions and counts.logger_names == whole.logger_names
    assert np.array_equal(counts.clicks, whole.clicks)
    assert np.array_equal(counts.shown, whole.shown)


def test_json_output_is_the_estimate(files: tuple[Path, Path, LetorDataset, ClickLog]) -> None:
    path, data, ds, log = files
    args = [str(path), "--data", str(data), "--method", "harvesting", "--json", "--seed", "4"]
    result = CliRunner().invoke(_app(), [*args, "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    direct = estimate_propensities(bind(log, ds), "harvesting", n_bootstrap=20, rng=4)
    assert out == direct.to_json()
    assert len(out["propensities"]) == K and out["ci"][0] == [1.0, 1.0]


def test_table_output_and_errors(files: tuple[Path, Path, LetorDataset, ClickLog]) -> None:
    path, data, _, _ = files
    runner = CliRunner()
    ok = runner.invoke(_app(), [str(path), "--data", str(data), "--bootstrap", "5"])
    assert ok.exit_code == 0, ok.output
    assert "propensities by em" in ok.stdout and "95% interval" in ok.stdout
    bad = runner.invoke(_app(), [str(path), "--data", str(data), "--method", "ctr"])
    assert bad.exit_code == 2 and "unknown method 'ctr'" in bad.output
    too_long = runner.invoke(_app(), [str(path), "--data", str(data), "--n-positions", "9"])
    assert too_long.exit_code == 2 and "larger than any shown list" in too_long.output
    swaps = runner.invoke(_app(), [str(path), "--data", str(data), "--method", "randomization"])
    assert swaps.exit_code == 2 and "no impression carries a swap" in swaps.output
