"""Click logs on disk: Parquet and JSON Lines round trips, streaming, files written by others."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oltr.errors import InputError
from oltr.logs.io import VERSION_KEY, concat_logs, iter_log, read_log, write_log
from oltr.logs.schema import ClickLog, LogFormatError

NAMES = ["log.parquet", "log.jsonl", "log.jsonl.gz"]


def _same(a: ClickLog, b: ClickLog) -> None:
    assert a.qids.tolist() == b.qids.tolist()
    assert a.offsets.tolist() == b.offsets.tolist()
    assert a.docs.tolist() == b.docs.tolist()
    assert a.clicks.tolist() == b.clicks.tolist()
    for name in ("loggers", "propensities"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None)
        if x is not None:
            assert x.tolist() == y.tolist()  # floats exactly: JSON writes the shortest exact text


def _random_log(rng: np.random.Generator, n: int, *, optional: bool = True) -> ClickLog:
    rows = []
    for _ in range(n):
        m = int(rng.integers(1, 8))
        docs = rng.choice(20, size=m, replace=False)
        rows.append((str(rng.integers(0, 5)), docs, rng.integers(0, 2, size=m)))
    return ClickLog.from_rows(
        rows,
        loggers=[f"ranker-{i % 3}" for i in range(n)] if optional else None,
        propensities=rng.uniform(1e-6, 1.0, size=n) if optional else None,
    )


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("optional", [True, False], ids=["all-columns", "required-only"])
def test_round_trip(tmp_path: Path, name: str, optional: bool) -> None:
    log = _random_log(np.random.default_rng(0), 40, optional=optional)
    write_log(log, tmp_path / name, row_group_rows=16)
    back = read_log(tmp_path / name)
    _same(log, back)
    assert back.source == str(tmp_path / name)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left


qids = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), max_size=8)


@st.composite
def click_logs(draw: st.DrawFn) -> ClickLog:
    n = draw(st.integers(1, 6))
    rows = []
    for _ in range(n):
        docs = draw(st.lists(st.integers(0, 2**62), min_size=1, max_size=6, unique=True))
        clicks = draw(st.lists(st.integers(0, 1), min_size=len(docs), max_size=len(docs)))
        rows.append((draw(qids), docs, clicks))
    loggers = draw(st.none() | st.lists(qids, min_size=n, max_size=n))
    props = draw(
        st.none()
        | st.lists(st.floats(0, 1, exclude_min=True, allow_subnormal=True), min_size=n, max_size=n)
    )
    return ClickLog.from_rows(rows, loggers=loggers, propensities=props)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(log=click_logs())
def test_random_logs_round_trip_in_every_format(tmp_path: Path, log: ClickLog) -> None:
    for name in NAMES:
        write_log(log, tmp_path / name, row_group_rows=2)
        _same(log, read_log(tmp_path / name))


def test_iter_log_streams_row_groups_and_its_chunks_make_the_log(tmp_path: Path) -> None:
    log = _random_log(np.random.default_rng(1), 50)
    path = tmp_path / "log.parquet"
    write_log(log, path, row_group_rows=7)
    assert pq.ParquetFile(path).num_row_groups == 8
    chunks = list(iter_log(path, batch_rows=7))
    assert [c.n_impressions for c in chunks] == [7] * 7 + [1]
    _same(concat_logs(chunks), read_log(path))
    _same(read_log(path), log)


def test_a_problem_late_in_a_file_comes_after_the_chunks_before_it(tmp_path: Path) -> None:
    # Streaming, not loading: the first chunks are yielded before the bad row is read.
    path = tmp_path / "log.jsonl"
    lines = [json.dumps({"qid": "1", "docs": [0, 1], "clicks": [0, 1]})] * 39
    path.write_text("\n".join([*lines, '{"qid": "1", "docs": [0], "clicks": [2]}']) + "\n")
    stream = iter_log(path, batch_rows=10)
    assert [next(stream).n_impressions for _ in range(3)] == [10, 10, 10]
    with pytest.raises(LogFormatError) as err:
        next(stream)
    assert (err.value.row, err.value.column) == (39, "clicks") and "(line 40)" in str(err.value)


def test_files_carry_their_version(tmp_path: Path) -> None:
    log = _random_log(np.random.default_rng(2), 3)
    write_log(log, tmp_path / "log.parquet")
    write_log(log, tmp_path / "log.jsonl.gz")
    assert pq.read_schema(tmp_path / "log.parquet").metadata[VERSION_KEY.encode()] == b"1"
    with gzip.open(tmp_path / "log.jsonl.gz", "rt") as f:
        assert [json.loads(line)["version"] for line in f] == [1, 1, 1]


def test_gzip_bytes_depend_only_on_the_log(tmp_path: Path) -> None:
    log = _random_log(np.random.default_rng(3), 20)
    write_log(log, tmp_path / "a.jsonl.gz")
    write_log(log, tmp_path / "b.jsonl.gz")
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()


def test_a_log_written_by_pandas_reads(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame(
        {
            "qid": pd.Categorical(["7", "9", "7"]),  # a dictionary column in Parquet
            "docs": [[2, 0, 1], [0], [1, 0]],
            "clicks": [[False, True, False], [True], [False, False]],  # booleans as 0/1
            "propensity": [1, 1, 1],  # integers as floats
        },
        index=[10, 11, 12],  # a stored index column, ignored
    )
    frame.to_parquet(tmp_path / "log.parquet")
    log = read_log(tmp_path / "log.parquet")
    _same(
        log,
        ClickLog.from_rows(
            [("7", [2, 0, 1], [0, 1, 0]), ("9", [0], [1]), ("7", [1, 0], [0, 0])],
            propensities=[1.0, 1.0, 1.0],
        ),
    )


def test_blank_lines_are_skipped_and_rows_count_impressions(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    a = '{"qid": "a", "docs": [1], "clicks": [1]}'
    b = '{"qid": "b", "docs": [0], "clicks": [0], "version": 1}'
    path.write_text(f"\n{a}\n\n  \n{b}")  # no newline at the end either
    log = read_log(path)
    assert log.qids.tolist() == ["a", "b"] and log.docs.tolist() == [1, 0]


def test_a_parquet_file_of_large_lists_and_narrow_integers_reads(tmp_path: Path) -> None:
    table = pa.table(
        {
            "qid": pa.array(["1", "2"], pa.large_string()),
            "docs": pa.array([[3, 1], [0]], pa.large_list(pa.uint16())),
            "clicks": pa.array([[1, 0], [1]], pa.list_(pa.int32())),
            "logger": pa.array(["a", "b"]),
        }
    )
    pq.write_table(table, tmp_path / "log.parquet")
    log = read_log(tmp_path / "log.parquet")
    assert log.docs.tolist() == [3, 1, 0] and log.loggers.tolist() == ["a", "b"]


def test_concat_logs_and_bad_arguments() -> None:
    a = ClickLog.from_rows([("1", [0, 1], [1, 0])])
    b = ClickLog.from_rows([("2", [2], [1]), ("3", [0, 2], [0, 0])])
    joined = concat_logs([a, b])
    assert joined.offsets.tolist() == [0, 2, 3, 5] and joined.docs.tolist() == [0, 1, 2, 0, 2]
    with pytest.raises(InputError, match="all have or all lack loggers"):
        concat_logs([a, ClickLog.from_rows([("2", [2], [1])], loggers=["x"])])
    with pytest.raises(InputError, match="batch_rows"):
        next(iter_log("x.jsonl", batch_rows=0))
    with pytest.raises(InputError, match="row_group_rows"):
        write_log(a, "x.parquet", row_group_rows=0)
