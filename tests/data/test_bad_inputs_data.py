"""Bad LETOR input is refused with a DataFormatError naming file:line, and the cache is verified.

Each case was reproduced before the fix: an uncaught ``OverflowError``, a grade
silently wrapped to a negative integer, a 30-byte file allocating gigabytes,
and a rewritten cached array served as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from oltr.data import cache as letor_cache
from oltr.data import letor
from oltr.data.cache import cache_root
from oltr.data.letor import load_letor
from oltr.data.svmlight import MAX_GRADE, LetorFormatError
from oltr.data.tokenizer import (
    MAX_FEATURE_INDEX,
    SPARSE_CELLS,
    SPARSE_CELLS_PER_BYTE,
    DenseSizeError,
    check_dense_size,
)
from oltr.errors import EXIT_CODES, DataFormatError, InputError

ENGINES: list[Literal["auto", "sklearn"]] = ["auto", "sklearn"]


def _write(tmp_path: Path, text: bytes, name: str = "bad.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text)
    return path


def _parse(path: Path, engine: Literal["auto", "sklearn"]) -> object:
    return letor._parse(path, None, False, engine)


# ---------------------------------------------------------------------------
# Feature indices beyond 32 bits


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("index", [5_000_000_000, 50_000_000_000, MAX_FEATURE_INDEX + 1])
def test_feature_index_beyond_int32_is_a_data_error_naming_the_line(
    tmp_path: Path, engine: Literal["auto", "sklearn"], index: int
) -> None:
    path = _write(tmp_path, f"0 qid:1 1:1\n1 qid:1 {index}:1.0\n".encode())
    with pytest.raises(LetorFormatError) as info:
        _parse(path, engine)
    message = str(info.value)
    assert message.startswith(f"{path}:2: feature index {index}")
    assert "too large" in message and str(MAX_FEATURE_INDEX) in message


def test_feature_index_beyond_int32_on_a_line_sklearn_must_read(tmp_path: Path) -> None:
    # 0x1 sends the file to sklearn, whose int32 indices overflowed uncaught.
    path = _write(tmp_path, b"1 qid:1 1:0x1\n1 qid:1 5000000000:1.0\n")
    with pytest.raises(LetorFormatError, match=r"bad.txt:1: bad value in token '1:0x1'"):
        load_letor(path, cache=False)
    path = _write(tmp_path, b"1 qid:1 5000000000:1.0\n1 qid:1 1:nan\n")
    with pytest.raises(LetorFormatError, match=r"bad.txt:1: feature index 5000000000"):
        load_letor(path, cache=False)


def test_qid_beyond_int64_is_a_data_error(tmp_path: Path) -> None:
    path = _write(tmp_path, b"0 qid:1 1:1\n1 qid:99999999999999999999 1:1\n")
    with pytest.raises(LetorFormatError, match=r"bad.txt:2: qid .* does not fit a 64-bit integer"):
        load_letor(path, cache=False)


# ---------------------------------------------------------------------------
# Grades too large for the integer type


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("grade", ["1e20", "9223372036854775808", "9007199254740994"])
def test_grade_too_large_is_a_data_error_naming_file_line_and_value(
    tmp_path: Path, engine: Literal["auto", "sklearn"], grade: str
) -> None:
    path = _write(tmp_path, f"0 qid:1 1:1\n{grade} qid:1 1:1.0\n".encode())
    with pytest.raises(LetorFormatError) as info:
        _parse(path, engine)
    message = str(info.value)
    assert message == f"{path}:2: grade {grade!r} is too large (at most 2**53 = {MAX_GRADE})"
    assert "-9223372036854775808" not in message


def test_largest_grade_is_read_exactly(tmp_path: Path) -> None:
    path = _write(tmp_path, f"{MAX_GRADE} qid:1 1:1\n0 qid:1 1:2\n".encode())
    assert load_letor(path, cache=False).relevance.tolist() == [MAX_GRADE, 0]


# ---------------------------------------------------------------------------
# Absurd dense sizes, refused before allocating


def test_dense_size_rule() -> None:
    check_dense_size(100_000, 136, 100_000 * 800)  # MSLR-like: dense, fine
    check_dense_size(1, SPARSE_CELLS, 1)  # small enough, however sparse
    rows = 1000
    width = SPARSE_CELLS // rows + 1  # just over the cells limit
    enough = -(-rows * width // SPARSE_CELLS_PER_BYTE)  # bytes for 256 cells per byte
    check_dense_size(rows, width, enough)
    with pytest.raises(DenseSizeError, match=r"feature index \d+ asks for a dense 1000 x"):
        check_dense_size(rows, width, enough - 1)
    with pytest.raises(DenseSizeError, match="MAX_DENSE_BYTES"):
        check_dense_size(2**20, 2**14, 2**40)
    with pytest.raises(DenseSizeError, match="too large"):
        check_dense_size(1, MAX_FEATURE_INDEX + 1, 2**40)


@pytest.mark.parametrize("engine", ENGINES)
def test_tiny_file_with_a_huge_feature_index_is_refused_before_allocating(
    tmp_path: Path, engine: Literal["auto", "sklearn"]
) -> None:
    path = _write(tmp_path, b"0 qid:1 1:1\n1 qid:1 300000000:1\n")
    assert path.stat().st_size < 40
    tracemalloc.start()
    try:
        with pytest.raises(LetorFormatError) as info:
            _parse(path, engine)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # the dense matrix would take 4.5 GiB
    message = str(info.value)
    assert message.startswith(f"{path}:2: feature index 300000000 asks for a dense 2 x 300000000")
    assert "bytes of text" in message


def test_sparse_but_reasonable_files_still_load(tmp_path: Path) -> None:
    path = _write(tmp_path, b"1 qid:1 1:1 5000:2\n0 qid:1 3:1\n")
    ds = load_letor(path, cache=False)
    assert ds.features.shape == (2, 5000) and ds.features[0, 4999] == 2.0


def test_absurd_n_features_argument_is_an_input_error(tmp_path: Path) -> None:
    path = _write(tmp_path, b"1 qid:1 1:1\n0 qid:1 2:1\n")
    with pytest.raises(InputError, match=r"n_features=1000000000000 would widen .* 2 x"):
        load_letor(path, cache=False, n_features=10**12)
    assert load_letor(path, cache=False, n_features=4).features.shape == (2, 4)


# ---------------------------------------------------------------------------
# The cache: keyed on content, every array verified on load


DENSE = b"2 qid:10 1:0.5 2:1 3:0\n0 qid:10 1:0.1 2:0 3:1\n1 qid:11 1:1 2:1 3:1\n"


def _entry(cache_dir: Path) -> Path:
    (entry,) = [p for p in cache_root(cache_dir).iterdir() if p.name != "digests"]
    return entry


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = letor._parse

    def counting(path: Path, *args: object) -> object:
        calls.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(letor, "_parse", counting)
    return calls


@pytest.mark.parametrize("settle_ns", [0, 2_000_000_000])
def test_tampered_cached_array_is_detected_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settle_ns: int
) -> None:
    # settle_ns=0 lets the digest of each array be remembered, so the tampering
    # is caught by the changed file identity, not only by a fresh hash.
    monkeypatch.setattr(letor_cache, "_SETTLE_NS", settle_ns)
    cache_dir = tmp_path / "cache"
    path = _write(tmp_path, DENSE, "d.txt")
    calls = _count_parses(monkeypatch)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [2, 0, 1]
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [2, 0, 1]
    assert len(calls) == 1
    entry = _entry(cache_dir)
    # Same dtype and shape, other values: only the digest can tell.
    np.save(entry / "relevance.npy", np.array([4, 4, 4], dtype=np.int64))
    ds = load_letor(path, cache_dir=cache_dir)
    assert ds.relevance.tolist() == [2, 0, 1]
    assert len(calls) == 2  # rebuilt from the source file
    assert np.load(entry / "relevance.npy").tolist() == [2, 0, 1]
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [2, 0, 1]
    assert len(calls) == 2  # and the rebuilt entry is used again


def test_in_place_change_of_a_cached_array_is_detected(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    path = _write(tmp_path, DENSE, "d.txt")
    load_letor(path, cache_dir=cache_dir)
    features = _entry(cache_dir) / "features.npy"
    data = bytearray(features.read_bytes())
    data[-8:] = np.float64(123.0).tobytes()
    with open(features, "r+b") as f:  # same inode, same size
        f.write(data)
    assert load_letor(path, cache_dir=cache_dir).features[-1].tolist() == [1.0, 1.0, 1.0]


def test_cache_metadata_records_a_digest_of_every_array(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    load_letor(_write(tmp_path, DENSE, "d.txt"), cache_dir=cache_dir)
    meta = json.loads((_entry(cache_dir) / "meta.json").read_text())
    assert meta["cache_format"] == letor_cache.CACHE_FORMAT == 2
    for name in ("features", "relevance", "qids", "offsets"):
        assert len(meta[f"{name}_digest"]) == 64


def test_entry_of_an_older_cache_format_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    path = _write(tmp_path, DENSE, "d.txt")
    load_letor(path, cache_dir=cache_dir)
    meta_path = _entry(cache_dir) / "meta.json"
    meta = json.loads(meta_path.read_text())
    old = {k: v for k, v in meta.items() if k != "cache_format" and not k.endswith("_digest")}
    meta_path.write_text(json.dumps(old))
    calls = _count_parses(monkeypatch)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [2, 0, 1]
    assert len(calls) == 1
    assert json.loads(meta_path.read_text())["cache_format"] == 2


# ---------------------------------------------------------------------------
# The command line: exit code 3, one line, no traceback


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"1 qid:1 5000000000:1.0\n", "bad.txt:1: feature index 5000000000"),
        (b"1e20 qid:1 1:1.0\n", "bad.txt:1: grade '1e20' is too large"),
        (b"0 qid:1 300000000:1\n", "bad.txt:1: feature index 300000000 asks for a dense"),
    ],
)
def test_cli_exit_code_for_bad_data(tmp_path: Path, text: bytes, expected: str) -> None:
    path = _write(tmp_path, text)
    env = {**os.environ, "OLTR_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OLTR_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "oltr.cli", "data", "info", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == EXIT_CODES["data"] == DataFormatError.exit_code == 3, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: ") and expected in proc.stderr
