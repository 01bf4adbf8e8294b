"""A content-keyed binary cache of parsed LETOR files.

:func:`~oltr.data.letor.load_letor` keeps the *parsed* file (before its
options, which are cheap array operations applied on every load) as ``.npy``
files in ``<cache>/letor-v<PARSER_VERSION>/<key>/``, loaded back as read-only
memory maps, so a second load of a large file costs a memory map instead of a
parse. The key is a BLAKE2b digest of the file's raw bytes, the group file's
bytes and :data:`~oltr.data.svmlight.PARSER_VERSION`: renaming or touching a
file keeps its entry, any change of content makes a new one. Entries are
written to a temporary folder and renamed into place, so a reader never sees
half an entry; one that cannot be read is deleted and rebuilt. Digests of
files unchanged for a while are remembered by (device, inode, size, mtime,
ctime), see :func:`_file_digest`. Delete the folder to clear the cache.

Each entry's ``meta.json`` also holds the BLAKE2b digest of every cached
``.npy`` file, checked on every load (with the same remembered digests, so an
unchanged entry is not re-read): an entry whose arrays were rewritten or
damaged after it was stored is deleted and rebuilt from the source file, never
served. :data:`CACHE_FORMAT` is bumped whenever the layout of an entry changes,
so entries written by an older oltr are rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from oltr.data.svmlight import PARSER_VERSION

if TYPE_CHECKING:
    from oltr.data.dataset import LetorDataset

__all__ = ["CACHE_FORMAT", "cache_root"]

#: Layout of a cache entry; an entry of another format is rebuilt.
#: 2: ``meta.json`` holds a digest of every array file, verified on load.
CACHE_FORMAT = 2

#: A remembered content digest is trusted only for files unchanged this long
#: before they were hashed (see :func:`_file_digest`).
_SETTLE_NS = 2_000_000_000


def cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The LETOR cache folder: ``cache_dir``, else ``$OLTR_CACHE_DIR``, else ``~/.cache/oltr``."""
    base = cache_dir or os.environ.get("OLTR_CACHE_DIR") or "~/.cache/oltr"
    return Path(base).expanduser() / f"letor-v{PARSER_VERSION}"


def _stat_identity(path: Path) -> list[int]:
    st = os.stat(path)
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _file_digest(path: Path, memo_dir: Path | None) -> str:
    """BLAKE2b of the file's raw bytes.

    Re-reading a large unchanged file on every load would dominate a cached
    load, so the digest is remembered in ``memo_dir`` together with the file's
    (device, inode, size, mtime, ctime) and reused only while all five match.
    Any write changes ctime, which no user call can set back (unlike mtime), so
    even a same-size rewrite with a restored mtime forces a re-hash. To rule out
    coarse timestamp ticks, a digest is remembered only when the file's ctime was
    at least two seconds old at hashing time.
    """
    memo = None
    if memo_dir is not None:
        memo = memo_dir / (
            hashlib.blake2b(str(path.resolve()).encode(), digest_size=16).hexdigest() + ".json"
        )
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            entry = json.loads(memo.read_text())
            if entry["stat"] == _stat_identity(path):
                return str(entry["digest"])
    before = _stat_identity(path)
    started = time.time_ns()
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, lambda: hashlib.blake2b(digest_size=32)).hexdigest()
    if memo is not None and _stat_identity(path) == before and before[4] < started - _SETTLE_NS:
        with contextlib.suppress(OSError):
            memo.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(memo, json.dumps({"stat": before, "digest": digest}).encode())
    return digest


def _cache_key(path: Path, group_path: Path | None, group_explicit: bool, root: Path) -> str:
    memo_dir = root / "digests"
    parts = [
        f"oltr-letor-parser-v{PARSER_VERSION}",
        _file_digest(path, memo_dir),
        "explicit" if group_explicit else "auto",
        _file_digest(group_path, memo_dir) if group_path is not None else "-",
    ]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=20).hexdigest()


_CACHED_ARRAYS = {
    "features": np.float64,
    "relevance": np.int64,
    "qids": np.int64,
    "offsets": np.int64,
}


def _cache_load(entry: Path, key: str, build: Callable[..., LetorDataset]) -> LetorDataset | None:
    """The dataset stored in ``entry``, or None when absent, unreadable or altered (then removed).

    Every array file must have the digest recorded in ``meta.json`` when the
    entry was stored; one that differs (rewritten, truncated, damaged) makes
    the whole entry invalid, so the caller parses the source file again.
    ``build`` makes the dataset from the stored arrays (keywords ``features``,
    ``relevance``, ``qids``, ``offsets``, ``source``, ``check_values``): the
    :class:`~oltr.data.letor.LetorDataset` class, passed in because that module
    imports this one. A ValueError or TypeError from it marks the entry unreadable.
    """
    if not entry.is_dir():
        return None
    try:
        meta = json.loads((entry / "meta.json").read_text())
        if (
            meta["key"] != key
            or meta["parser_version"] != PARSER_VERSION
            or meta.get("cache_format") != CACHE_FORMAT
        ):
            raise ValueError("stale cache entry")
        memo_dir = entry.parent / "digests"
        arrays = {}
        for name, dtype in _CACHED_ARRAYS.items():
            file = entry / f"{name}.npy"
            if _file_digest(file, memo_dir) != meta[f"{name}_digest"]:
                raise ValueError(f"cached {name} does not match its digest")
            array = np.load(file, mmap_mode="r" if meta[name] else None)
            if array.dtype != dtype or list(array.shape) != meta[f"{name}_shape"]:
                raise ValueError(f"cached {name} has the wrong dtype or shape")
            arrays[name] = array
        return build(**arrays, source=meta["source"], check_values=False)
    except (OSError, ValueError, KeyError, TypeError):
        shutil.rmtree(entry, ignore_errors=True)
        return None


def _cache_store(entry: Path, key: str, dataset: LetorDataset) -> None:
    """Write ``dataset`` to ``entry`` atomically: a temporary folder, then one rename."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=entry.parent))
    try:
        meta: dict[str, Any] = {
            "key": key,
            "parser_version": PARSER_VERSION,
            "cache_format": CACHE_FORMAT,
            "source": dataset.source,
        }
        for name in _CACHED_ARRAYS:
            array = getattr(dataset, name)
            file = tmp / f"{name}.npy"
            np.save(file, np.ascontiguousarray(array), allow_pickle=False)
            meta[f"{name}_digest"] = _file_digest(file, None)
            meta[name] = bool(array.size)  # numpy cannot memory-map an empty array
            meta[f"{name}_shape"] = list(array.shape)
        (tmp / "meta.json").write_text(json.dumps(meta))
        try:
            os.replace(tmp, entry)
        except OSError:  # a concurrent load stored the same entry first
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
