"""``oltr logs validate`` and ``oltr logs export``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from oltr.cli import app

FIXTURES = Path(__file__).parents[1] / "fixtures" / "letor"
# dense.txt: query 10 has 3 documents, query 20 has 2.
LOG = [
    {"qid": "10", "docs": [2, 0, 1], "clicks": [1, 0, 1]},
    {"qid": "20", "docs": [1, 0], "clicks": [0, 1]},
    {"qid": "10", "docs": [0, 1], "clicks": [0, 0]},
]


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "120")
    return CliRunner()


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_validate_counts_by_hand(runner: CliRunner, tmp_path: Path) -> None:
    log = _write(tmp_path / "log.jsonl", LOG)
    data = FIXTURES / "dense.txt"
    result = runner.invoke(app, ["logs", "validate", str(log), "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)
    assert (s["impressions"], s["queries"], s["data_queries"], s["positions"]) == (3, 2, 2, 3)
    # Position 1: clicks 1 + 0 + 0; position 2: 0 + 1 + 0; position 3: 1.
    assert s["clicks_per_position"] == [1, 1, 1] and s["shown_per_position"] == [3, 3, 1]
    assert s["clicks"] == 3 and s["loggers"] is None and s["propensities"] is False
    table = runner.invoke(app, ["logs", "validate", str(log)])
    assert table.exit_code == 0, table.output
    assert "impressions  3" in table.stdout
    assert "       2      3       1      0.3333" in table.stdout


@pytest.mark.parametrize(
    ("rows", "with_data", "message"),
    [
        (
            [LOG[0], {"qid": "20", "docs": [1, 1], "clicks": [0, 1]}],
            False,
            "row 1, column 'docs': the shown list repeats document 1 (line 2)",
        ),
        ([LOG[0], {**LOG[1], "qid": "30"}], True, "row 1, column 'qid': qid '30' is not a query"),
        (
            [LOG[0], LOG[1], {**LOG[2], "docs": [0, 3]}],
            True,
            "row 2, column 'docs': document index 3 is out of range: query '10' has 3",
        ),
    ],
    ids=["repeated document", "unknown query", "document out of range"],
)
def test_validate_errors_name_row_and_column_with_exit_3(
    runner: CliRunner, tmp_path: Path, rows: list[dict[str, object]], with_data: bool, message: str
) -> None:
    log = _write(tmp_path / "log.jsonl", rows)
    data = ["--data", str(FIXTURES / "dense.txt")] if with_data else []
    result = runner.invoke(app, ["logs", "validate", str(log), *data])
    assert result.exit_code == 3, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {log}, ") and message in lines[0]


def test_export_then_validate_the_pair(runner: CliRunner, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from oltr.serve import ServeSettings, create_app

    store, rng = tmp_path / "s.db", np.random.default_rng(5)
    body = {
        "learner": "rtopk",
        "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
        "feedback_params": {"k": 2},
        "n_features": 3,
    }
    with TestClient(create_app(ServeSettings(store=store))) as c:
        assert c.put("/rankers/r", json=body).status_code == 201
        for _ in range(8):
            x = rng.standard_normal((5, 3)).tolist()
            imp = c.post("/rankers/r/rank", json={"features": x}).json()["impression"]
            labels = {"impression": imp, "labels": [1.0, 0.0]}
            assert c.post("/rankers/r/feedback", json=labels).status_code == 200
    log, data = tmp_path / "log.parquet", tmp_path / "data.txt"
    args = ["logs", "export", str(store), "--ranker", "r", "--out", str(log)]
    refused = runner.invoke(app, [*args, "--data-out", str(data)])
    assert refused.exit_code == 2 and "feedback kind 'top-k'" in refused.stderr
    done = runner.invoke(app, [*args, "--data-out", str(data), "--labels-as-clicks"])
    assert done.exit_code == 0, done.output
    assert "8 impressions, with propensities" in done.stdout
    result = runner.invoke(app, ["logs", "validate", str(log), "--data", str(data), "--json"])
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)
    # Every impression: the top shown clicked, the second not (labels [1, 0]).
    assert s["clicks_per_position"] == [8, 0] and s["shown_per_position"] == [8, 8]
    assert (s["queries"], s["data_queries"], s["loggers"]) == (8, 8, ["r"])


def test_export_of_a_store_that_does_not_exist(runner: CliRunner, tmp_path: Path) -> None:
    args = ["--ranker", "r", "--out", str(tmp_path / "l.jsonl"), "--data-out", str(tmp_path / "d")]
    result = runner.invoke(app, ["logs", "export", str(tmp_path / "none.db"), *args])
    assert result.exit_code == 5 and "does not exist" in result.stderr
