"""LETOR reader's cache: keyed on content, invalidated by rewrites, never half-written."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from letor_fixtures import DENSE_R, DENSE_X, FIXTURES, MALFORMED

import oltr.data.cache as letor_cache
import oltr.data.letor as letor
import oltr.data.svmlight as svmlight
from oltr.data.cache import cache_root
from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor
from oltr.data.svmlight import LetorFormatError


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


# ---------------------------------------------------------------------------
# Cache


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = letor._parse

    def counting(path: Path, *args: object) -> LetorDataset:
        calls.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(letor, "_parse", counting)
    return calls


def test_cache_hit_returns_identical_arrays_without_parsing(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_parses(monkeypatch)
    first = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    second = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    assert len(calls) == 1
    for name in ("features", "relevance", "qids", "offsets"):
        a, b = getattr(first, name), getattr(second, name)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert second.source == str(FIXTURES / "dense.txt")
    # The cached arrays are memory-mapped and read-only.
    base = second.features
    while not isinstance(base, np.memmap) and base.base is not None:
        base = base.base
    assert isinstance(base, np.memmap)
    assert not second.features.flags.writeable


def test_cache_is_keyed_on_content_not_name(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _count_parses(monkeypatch)
    shutil.copy(FIXTURES / "dense.txt", tmp_path / "a.txt")
    shutil.copy(FIXTURES / "dense.txt", tmp_path / "b.txt")
    load_letor(tmp_path / "a.txt", cache_dir=cache_dir)
    b = load_letor(tmp_path / "b.txt", cache_dir=cache_dir)
    assert len(calls) == 1  # same bytes, other name: a hit
    assert b.source == str(tmp_path / "b.txt")


def _rewrite_same_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    assert len(old) == len(new) and old != new
    st = path.stat()
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def test_same_size_same_mtime_rewrite_is_reloaded(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "d.txt"
    old = (FIXTURES / "dense.txt").read_bytes()
    path.write_bytes(old)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == DENSE_R
    new = old.replace(b"2 qid:10", b"1 qid:10", 1)
    _rewrite_same_size_and_mtime(path, old, new)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [1, 0, 1, 0, 0]


def test_remembered_digest_is_used_and_invalidated_by_a_rewrite(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Trust digests of files of any age, so that this fresh file's digest is remembered.
    monkeypatch.setattr(letor_cache, "_SETTLE_NS", 0)
    path = tmp_path / "d.txt"
    old = (FIXTURES / "dense.txt").read_bytes()
    path.write_bytes(old)
    time.sleep(0.05)  # let the clock pass the file's ctime tick
    load_letor(path, cache_dir=cache_dir)
    hashed: list[object] = []
    real = hashlib.file_digest

    def spy(*args: object, **kw: object) -> object:
        if getattr(args[0], "name", None) == str(path):  # not the cached arrays' digests
            hashed.append(args)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(hashlib, "file_digest", spy)
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == DENSE_R
    assert hashed == []  # unchanged file: the remembered digest served
    time.sleep(0.05)
    _rewrite_same_size_and_mtime(path, old, old.replace(b"2 qid:10", b"1 qid:10", 1))
    assert load_letor(path, cache_dir=cache_dir).relevance.tolist() == [1, 0, 1, 0, 0]
    assert len(hashed) == 1  # ctime moved: hashed again


def test_group_file_content_is_part_of_the_key(tmp_path: Path, cache_dir: Path) -> None:
    shutil.copy(FIXTURES / "nogroup.txt", tmp_path / "r.txt")
    (tmp_path / "r.txt.query").write_text("2\n3\n")
    assert load_letor(tmp_path / "r.txt", cache_dir=cache_dir).offsets.tolist() == [0, 2, 5]
    (tmp_path / "r.txt.query").write_text("4\n1\n")
    assert load_letor(tmp_path / "r.txt", cache_dir=cache_dir).offsets.tolist() == [0, 4, 5]


def _entries(cache_dir: Path) -> list[Path]:
    return [p for p in cache_root(cache_dir).iterdir() if p.name != "digests"]


@pytest.mark.parametrize(
    "damage", ["truncate_features", "garbage_meta", "missing_offsets", "wrong_shape"]
)
def test_corrupt_cache_entry_is_ignored_and_rewritten(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    (entry,) = _entries(cache_dir)
    good = (entry / "features.npy").read_bytes()
    if damage == "truncate_features":
        (entry / "features.npy").write_bytes(good[: len(good) - 16])
    elif damage == "garbage_meta":
        (entry / "meta.json").write_text("{not json")
    elif damage == "missing_offsets":
        (entry / "offsets.npy").unlink()
    else:
        np.save(entry / "relevance.npy", np.zeros(4, dtype=np.int64))
    calls = _count_parses(monkeypatch)
    ds = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    assert len(calls) == 1
    assert ds.features.tolist() == DENSE_X and ds.relevance.tolist() == DENSE_R
    assert (entry / "features.npy").read_bytes() == good  # rewritten
    load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    assert len(calls) == 1  # and used again


def test_cache_leaves_no_temporary_files(cache_dir: Path) -> None:
    load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    load_letor(FIXTURES / "sparse.txt", cache_dir=cache_dir)
    names = [p.name for p in _entries(cache_dir)]
    assert len(names) == 2 and not any(n.startswith(".") for n in names)


def test_options_are_applied_after_the_cache(cache_dir: Path) -> None:
    raw = load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir)
    ds = load_letor(
        FIXTURES / "dense.txt", cache_dir=cache_dir, normalize=True, drop_no_relevant=True
    )
    assert ds.features.tolist() == DENSE_X[:3] and ds.qids.tolist() == [10]
    assert (
        load_letor(FIXTURES / "dense.txt", cache_dir=cache_dir).features.tolist()
        == raw.features.tolist()
    )
    assert len(_entries(cache_dir)) == 2  # the parsed file, and its normalised form


@pytest.mark.parametrize("drop", [False, True])
@pytest.mark.parametrize("n_features", [None, 5])
def test_normalised_data_are_cached_and_memory_mapped(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch, drop: bool, n_features: int | None
) -> None:
    """A normalised load maps a cached normalised matrix: no private dense copy per load."""
    path = FIXTURES / "sparse.txt"
    options = {"normalize": True, "drop_no_relevant": drop, "n_features": n_features}
    expected = load_letor(path, cache=False, **options)  # type: ignore[arg-type]
    first = load_letor(path, cache_dir=cache_dir, **options)  # type: ignore[arg-type]
    calls = _count_parses(monkeypatch)
    normalize_calls: list[int] = []
    real = letor.normalize_per_query
    monkeypatch.setattr(
        letor, "normalize_per_query", lambda ds: normalize_calls.append(1) or real(ds)
    )
    second = load_letor(path, cache_dir=cache_dir, **options)  # type: ignore[arg-type]
    assert not calls and not normalize_calls
    for ds in (first, second):
        for name in ("features", "relevance", "qids", "offsets"):
            a, b = getattr(ds, name), getattr(expected, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    assert second.source == str(path)
    base = second.features
    while not isinstance(base, np.memmap) and base.base is not None:
        base = base.base
    assert isinstance(base, np.memmap)
    # other options make other entries; the plain load still reads the parsed file
    assert load_letor(path, cache_dir=cache_dir).features.tolist() == (
        load_letor(path, cache=False).features.tolist()
    )


def test_cache_false_writes_nothing(cache_dir: Path) -> None:
    load_letor(FIXTURES / "dense.txt", cache=False, cache_dir=cache_dir)
    assert not cache_dir.exists()


def test_cache_root_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    version = f"letor-v{svmlight.PARSER_VERSION}"
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root(tmp_path / "arg") == tmp_path / "arg" / version
    assert cache_root() == tmp_path / "env" / version
    monkeypatch.delenv("OLTR_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "oltr" / version


def test_errors_are_not_cached(tmp_path: Path, cache_dir: Path) -> None:
    with pytest.raises(LetorFormatError):
        load_letor(MALFORMED / "bad_value.txt", cache_dir=cache_dir)
    with pytest.raises(LetorFormatError):
        load_letor(MALFORMED / "bad_value.txt", cache_dir=cache_dir)
    assert not cache_root(cache_dir).exists() or _entries(cache_dir) == []


# ---------------------------------------------------------------------------
# The dataset
