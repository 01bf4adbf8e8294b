"""A click log written by any tool that follows the schema fits like a simulated one.

The simulated log is written once by :func:`oltr.logs.write_log` and once by
plain pyarrow / the standard ``json`` module (what a user's own system would
do: no oltr metadata, its own row groups and column order); ``oltr logs fit``
on either gives the same model file, bit for bit. Streamed logs name a bad row
by its place in the file, not in the chunk that found it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import oltr.cli.logs_propensities as logs_propensities
from oltr.cli import app
from oltr.data import synthetic_letor, write_letor
from oltr.logs import ClickLog, write_log
from oltr.logs.simulate import simulate_log, train_logger


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))
    return CliRunner()


def _rows(log: ClickLog) -> list[dict[str, object]]:
    assert log.loggers is not None
    rows = []
    for i in range(log.n_impressions):
        qid, docs, clicks = log.impression(i)
        rows.append(
            {
                "qid": qid,
                "docs": docs.tolist(),
                "clicks": clicks.tolist(),
                "logger": str(log.loggers[i]),
            }
        )
    return rows


def _by_pyarrow(rows: list[dict[str, object]], path: Path) -> None:
    # Another column order, int32 documents, int8 clicks, small row groups, no oltr metadata.
    table = pa.table(
        {
            "clicks": pa.array([r["clicks"] for r in rows], pa.list_(pa.int8())),
            "logger": [r["logger"] for r in rows],
            "docs": pa.array([r["docs"] for r in rows], pa.list_(pa.int32())),
            "qid": [r["qid"] for r in rows],
        }
    )
    pq.write_table(table, path, row_group_size=97)


def _fit(runner: CliRunner, log: Path, data: Path, out: Path) -> dict[str, object]:
    args = ["logs", "fit", str(log), "--data", str(data), "--out", str(out)]
    result = runner.invoke(app, [*args, "--learner", "ips", "--method", "em", "--seed", "3"])
    assert result.exit_code == 0, result.output
    model: dict[str, object] = json.loads(out.read_text())
    return model


def test_a_log_from_any_tool_fits_like_the_simulated_one(runner: CliRunner, tmp_path: Path) -> None:
    data = synthetic_letor(n_queries=60, n_features=8, max_grade=2, max_docs=15, rng=1)
    letor = tmp_path / "train.txt"
    write_letor(data, letor)
    log = simulate_log(data, train_logger(data, rng=1), n_sessions=3_000, eta=2.0, rng=2)
    write_log(log, tmp_path / "oltr.parquet")
    rows = _rows(log)
    _by_pyarrow(rows, tmp_path / "pyarrow.parquet")
    (tmp_path / "json.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    reference = _fit(runner, tmp_path / "oltr.parquet", letor, tmp_path / "a.json")
    for name in ("pyarrow.parquet", "json.jsonl"):
        other = _fit(runner, tmp_path / name, letor, tmp_path / f"{name}.model.json")
        assert other["weights"] == reference["weights"], name
        assert other["propensities"] == reference["propensities"], name


def test_a_streamed_log_names_the_bad_row_in_the_file(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = synthetic_letor(n_queries=5, n_features=3, max_grade=2, max_docs=5, rng=1)
    letor = tmp_path / "train.txt"
    write_letor(data, letor)
    qids = [str(q) for q in data.qids.tolist()]
    rows = [{"qid": qids[i % 5], "docs": [0], "clicks": [1]} for i in range(10)]
    rows[7]["qid"] = "no-such-query"
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(logs_propensities, "CHUNK_ROWS", 3)  # row 7 is row 1 of the third chunk
    args = ["logs", "propensities", str(log), "--data", str(letor), "--method", "em"]
    result = runner.invoke(app, args)
    assert result.exit_code == 3, result.output
    assert "row 7, column 'qid'" in result.output
