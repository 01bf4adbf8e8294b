"""Bad click logs, one case a row: each names its file, row (0-based impression) and column.

A row of None means the problem is the whole file or column (an empty file, a
missing column, a Parquet column of the wrong type). A failed write leaves the
destination as it was and no temporary file behind.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import oltr.logs.io as log_io
import oltr.logs.jsonl as log_jsonl
from oltr.errors import DataFormatError, InputError
from oltr.logs.io import read_log, write_log
from oltr.logs.schema import ClickLog, LogFormatError

GOOD = {"qid": "1", "docs": [0, 1], "clicks": [0, 1]}


def _lines(*rows: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


# (case id, JSON Lines text, row, column, fragment of the message)
JSONL_CASES: list[tuple[str, str, int | None, str | None, str]] = [
    ("empty file", "", None, None, "the file is empty"),
    ("blank lines only", "\n  \n", None, None, "holds no impression"),
    ("not json", _lines(GOOD, '{"qid": "2", "docs": [0'), 1, None, "not JSON"),
    ("not an object", _lines(GOOD, [1, 2]), 1, None, "must be a JSON object"),
    ("missing docs", _lines(GOOD, {"qid": "2", "clicks": [0]}), 1, "docs", "required column"),
    ("missing qid", _lines({"docs": [0], "clicks": [0]}), 0, "qid", "required column"),
    ("integer qid", _lines(GOOD, {**GOOD, "qid": 7}), 1, "qid", 'write "7", not 7'),
    ("docs not a list", _lines({**GOOD, "docs": 3}), 0, "docs", "list of integers"),
    ("float doc", _lines(GOOD, GOOD, {**GOOD, "docs": [0, 1.5]}), 2, "docs", "list of integers"),
    ("boolean click", _lines({**GOOD, "clicks": [True, False]}), 0, "clicks", "list of integers"),
    ("click of 2", _lines(GOOD, {**GOOD, "clicks": [0, 2]}), 1, "clicks", "0 or 1, got 2"),
    ("lengths differ", _lines(GOOD, {**GOOD, "clicks": [1]}), 1, "clicks", "one click per shown"),
    ("empty list", _lines(GOOD, {"qid": "2", "docs": [], "clicks": []}), 1, "docs", "empty"),
    ("negative doc", _lines({**GOOD, "docs": [0, -1]}), 0, "docs", ">= 0, got -1"),
    ("repeated doc", _lines(GOOD, GOOD, {**GOOD, "docs": [4, 4]}), 2, "docs", "repeats document 4"),
    ("propensity 0", _lines({**GOOD, "propensity": 0}), 0, "propensity", "(0, 1], got 0.0"),
    ("propensity > 1", _lines({**GOOD, "propensity": 1.5}), 0, "propensity", "got 1.5"),
    (
        "propensity NaN",
        _lines(
            {**GOOD, "propensity": 1}, '{"qid": "1", "docs": [0], "clicks": [0], "propensity": NaN}'
        ),
        1,
        "propensity",
        "got nan",
    ),
    ("propensity text", _lines({**GOOD, "propensity": "0.5"}), 0, "propensity", "a number"),
    ("propensity null", _lines({**GOOD, "propensity": None}), 0, "propensity", "a number"),
    ("propensity 1e400", _lines({**GOOD, "propensity": 10**400}), 0, "propensity", "inf"),
    ("doc beyond int64", _lines(GOOD, {**GOOD, "docs": [0, 2**64]}), 1, "docs", "beyond 64 bits"),
    ("logger not text", _lines({**GOOD, "logger": 3}), 0, "logger", "a string"),
    ("unknown column", _lines(GOOD, {**GOOD, "propensities": 0.5}), 1, "propensities", "unknown"),
    ("column dropped", _lines({**GOOD, "logger": "a"}, GOOD), 1, "logger", "all or nothing"),
    ("column added", _lines(GOOD, {**GOOD, "logger": "a"}), 1, "logger", "all or nothing"),
    ("other version", _lines(GOOD, {**GOOD, "version": 2}), 1, "version", "version 2"),
    # A blank line is no impression: row 1 is on line 3.
    ("after a blank line", _lines(GOOD, "", {**GOOD, "qid": 1}), 1, "qid", "(line 3)"),
]


@pytest.mark.parametrize(
    ("text", "row", "column", "fragment"),
    [case[1:] for case in JSONL_CASES],
    ids=[case[0] for case in JSONL_CASES],
)
def test_bad_json_lines(
    tmp_path: Path, text: str, row: int | None, column: str | None, fragment: str
) -> None:
    for name in ("log.jsonl", "log.jsonl.gz"):
        path = tmp_path / name
        if name.endswith(".gz") and text:
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
        with pytest.raises(LogFormatError) as err:
            read_log(path)
        assert (err.value.row, err.value.column) == (row, column), str(err.value)
        assert err.value.source == str(path) and str(err.value).startswith(str(path))
        assert fragment in str(err.value)
        if row is not None:
            assert "(line " in str(err.value)
        assert isinstance(err.value, DataFormatError) and err.value.exit_code == 3


def test_undecodable_text_and_a_false_gzip_name_are_format_errors(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(_lines(GOOD).encode() + b'{"qid": "\xff"}\n')
    with pytest.raises(LogFormatError, match=r"not UTF-8 text.*\(line 2\)") as err:
        read_log(tmp_path / "a.jsonl")
    assert err.value.row == 1
    (tmp_path / "b.jsonl.gz").write_text(_lines(GOOD))
    with pytest.raises(LogFormatError, match="not a readable gzip file"):
        read_log(tmp_path / "b.jsonl.gz")


def _table(**columns: Any) -> pa.Table:
    base = {
        "qid": pa.array(["1", "2", "3"]),
        "docs": pa.array([[0, 1], [2], [1, 0]], pa.list_(pa.int64())),
        "clicks": pa.array([[0, 1], [1], [0, 0]], pa.list_(pa.int8())),
    }
    base.update(columns)
    return pa.table({k: v for k, v in base.items() if v is not None})


def _parquet(table: pa.Table, **kwargs: Any) -> Callable[[Path], None]:
    return lambda path: pq.write_table(table, path, **kwargs)


def _bytes(data: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(data)


INT_LISTS = pa.list_(pa.int64())
PARQUET_CASES: list[tuple[str, Callable[[Path], None], int | None, str | None, str]] = [
    ("empty file", _bytes(b""), None, None, "the file is empty"),
    ("not parquet", _bytes(b'{"qid": "1"}\n'), None, None, "not a Parquet file"),
    ("no rows", _parquet(_table().slice(0, 0)), None, None, "holds no impression"),
    ("missing clicks", _parquet(_table(clicks=None)), None, "clicks", "required column"),
    ("integer qid", _parquet(_table(qid=pa.array([1, 2, 3]))), None, "qid", "type int64"),
    (
        "float docs",
        _parquet(_table(docs=pa.array([[0.0], [1.0], [2.0]]))),
        None,
        "docs",
        "list of integers",
    ),
    ("unknown column", _parquet(_table(score=pa.array([1, 2, 3]))), None, "score", "unknown"),
    (
        "other version",
        _parquet(_table().replace_schema_metadata({"oltr.click_log.version": "2"})),
        None,
        None,
        "schema version '2'",
    ),
    ("null qid", _parquet(_table(qid=pa.array(["1", "2", None]))), 2, "qid", "null"),
    (
        "null doc",
        _parquet(_table(docs=pa.array([[0, 1], [None], [1, 0]], INT_LISTS))),
        1,
        "docs",
        "null entry",
    ),
    (
        "lengths differ",
        _parquet(_table(clicks=pa.array([[0, 1], [1, 0], [0, 0]], INT_LISTS))),
        1,
        "clicks",
        "one click per shown",
    ),
    (
        "click of 2",
        _parquet(_table(clicks=pa.array([[0, 1], [1], [0, 2]], INT_LISTS))),
        2,
        "clicks",
        "0 or 1",
    ),
    (
        "empty list",
        _parquet(
            _table(
                docs=pa.array([[0, 1], [], [1, 0]], INT_LISTS),
                clicks=pa.array([[0, 1], [], [0, 0]], INT_LISTS),
            )
        ),
        1,
        "docs",
        "empty",
    ),
    (
        "repeated doc",
        _parquet(_table(docs=pa.array([[0, 1], [2], [1, 1]], INT_LISTS))),
        2,
        "docs",
        "repeats",
    ),
    (
        "propensity NaN",
        _parquet(_table(propensity=pa.array([0.5, float("nan"), 1.0]))),
        1,
        "propensity",
        "got nan",
    ),
    (
        "propensity 0",
        _parquet(_table(propensity=pa.array([0.5, 1.0, 0.0]))),
        2,
        "propensity",
        "got 0.0",
    ),
    (
        "propensity null",
        _parquet(_table(propensity=pa.array([0.5, None, 1.0]))),
        1,
        "propensity",
        "null",
    ),
    # Rows count from the file's start, across row groups and batches.
    (
        "late row group",
        _parquet(
            pa.table(
                {
                    "qid": [str(i) for i in range(30)],
                    "docs": [[0]] * 30,
                    "clicks": [[0]] * 25 + [[3]] + [[0]] * 4,
                }
            ),
            row_group_size=10,
        ),
        25,
        "clicks",
        "got 3",
    ),
]


@pytest.mark.parametrize(
    ("make", "row", "column", "fragment"),
    [case[1:] for case in PARQUET_CASES],
    ids=[case[0] for case in PARQUET_CASES],
)
def test_bad_parquet(
    tmp_path: Path,
    make: Callable[[Path], None],
    row: int | None,
    column: str | None,
    fragment: str,
) -> None:
    path = tmp_path / "log.parquet"
    make(path)
    with pytest.raises(LogFormatError) as err:
        read_log(path)
    assert (err.value.row, err.value.column) == (row, column), str(err.value)
    assert err.value.source == str(path) and fragment in str(err.value)


def test_a_name_of_no_known_format_is_an_input_error(tmp_path: Path) -> None:
    log = ClickLog.from_rows([("1", [0], [1])])
    for call in (lambda p: read_log(p), lambda p: write_log(log, p)):
        with pytest.raises(InputError, match=r"\.parquet, \.jsonl or \.jsonl\.gz"):
            call(tmp_path / "log.csv")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "module", "function"),
    [("log.parquet", log_io, "_arrow_arrays"), ("log.jsonl.gz", log_jsonl, "_json_lines")],
)
def test_a_failed_write_leaves_no_file_and_the_old_one_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, module: Any, function: str
) -> None:
    rng = np.random.default_rng(0)
    rows = [(str(i), [0, 1], rng.integers(0, 2, size=2)) for i in range(20_000)]
    log = ClickLog.from_rows(rows)
    path = tmp_path / name
    write_log(ClickLog.from_rows(rows[:3]), path)
    before = path.read_bytes()
    real = getattr(module, function)
    calls = []

    def fail_second(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(*args)

    monkeypatch.setattr(module, function, fail_second)
    with pytest.raises(OSError, match="No space left"):
        write_log(log, path, row_group_rows=8192)
    assert len(calls) == 2  # the failure came mid-file, after a part was written
    assert [p.name for p in tmp_path.iterdir()] == [name] and path.read_bytes() == before
    new = tmp_path / f"new-{name}"
    calls.clear()
    with pytest.raises(OSError, match="No space left"):
        write_log(log, new, row_group_rows=8192)
    assert not new.exists() and [p.name for p in tmp_path.iterdir()] == [name]
