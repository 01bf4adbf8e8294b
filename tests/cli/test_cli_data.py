"""``oltr data info`` and ``oltr data synth``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oltr.cli import app
from oltr.data.letor import load_letor

FIXTURES = Path(__file__).parents[1] / "fixtures" / "letor"


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "120")
    return CliRunner()


def test_info_json_by_hand(runner: CliRunner) -> None:
    result = runner.invoke(app, ["data", "info", str(FIXTURES / "dense.txt"), "--json"])
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)
    assert (s["n_queries"], s["n_docs"], s["n_features"]) == (2, 5, 3)
    assert s["grades"] == {"0": 3, "1": 1, "2": 1}
    assert s["zero_relevance_queries"] == 1
    assert s["list_length"] == {"min": 2, "median": 2.5, "mean": 2.5, "max": 3}
    assert s["query_normalised"] is False


def test_info_table(runner: CliRunner) -> None:
    result = runner.invoke(app, ["data", "info", str(FIXTURES / "nogroup.txt")])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for expected in (
        "queries",
        "documents",
        "features",
        "0: 2 (40.0%)",
        "1: 2 (40.0%)",
        "2: 1 (20.0%)",
        "min 2, median 2.5, mean 2.5, max 3",
        "zero-relevance",
    ):
        assert expected in out


def test_info_group_file_and_no_cache(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "sizes").write_text("1\n4\n")
    result = runner.invoke(
        app,
        [
            "data",
            "info",
            str(FIXTURES / "nogroup.txt"),
            "--group-file",
            str(tmp_path / "sizes"),
            "--json",
            "--no-cache",
        ],
    )
    assert result.exit_code == 0, result.output
    s = json.loads(result.stdout)
    assert s["list_length"]["min"] == 1 and s["list_length"]["max"] == 4
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (
            [str(FIXTURES / "malformed" / "bad_value.txt")],
            "bad_value.txt:3: bad value in token '2:abc'",
            3,
        ),
        ([str(FIXTURES / "absent.txt")], "absent.txt: no such file", 2),
        ([str(FIXTURES / "malformed" / "no_qid.txt")], "no_qid.txt:2: missing qid", 3),
    ],
)
def test_info_errors_are_one_line_with_their_exit_code(
    runner: CliRunner, args: list[str], message: str, code: int
) -> None:
    result = runner.invoke(app, ["data", "info", *args])
    assert result.exit_code == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert message in lines[0]
    assert "Traceback" not in result.output


def test_synth_writes_a_loadable_deterministic_file(runner: CliRunner, tmp_path: Path) -> None:
    args = ["data", "synth", "--queries", "25", "--features", "7", "--seed", "4"]
    first = runner.invoke(app, [*args[:2], str(tmp_path / "a.txt.gz"), *args[2:]])
    second = runner.invoke(app, [*args[:2], str(tmp_path / "b.txt.gz"), *args[2:]])
    assert first.exit_code == 0 and second.exit_code == 0, first.output
    assert (tmp_path / "a.txt.gz").read_bytes() == (tmp_path / "b.txt.gz").read_bytes()
    ds = load_letor(tmp_path / "a.txt.gz", cache=False)
    assert (ds.n_queries, ds.n_features) == (25, 7)
    assert ds.qids.tolist() == list(range(1, 26))


def test_synth_bad_output_folder_is_an_error(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(app, ["data", "synth", str(tmp_path / "missing" / "x.txt")])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1
