"""JSON Lines click logs (plain or gzip), and the value checks every reader applies to a chunk.

The format and its rules are described in :mod:`oltr.logs.io`, which chooses
the reader and writer by the file name.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, BinaryIO

import numpy as np
from numpy.typing import NDArray

from oltr.logs.schema import COLUMNS, SCHEMA_VERSION, ClickLog, LogFormatError

__all__ = ["checked_chunk", "iter_jsonl", "log_chunks", "write_jsonl"]

_REQUIRED = COLUMNS[:3]
_OPTIONAL = COLUMNS[3:]


def _first_repeat(rows: NDArray[np.int64], docs: NDArray[np.int64]) -> int | None:
    """An entry whose (row, doc) pair occurs earlier too, in the first row that has one."""
    if docs.size == 0:
        return None
    width = int(docs.max()) + 1
    if rows.size and int(rows[-1]) < (1 << 62) // width:  # one int64 key: a plain sort is faster
        key = rows * width + docs
        order = np.argsort(key, kind="stable")
        same = np.diff(key[order]) == 0
    else:
        order = np.lexsort((docs, rows))
        same = (np.diff(rows[order]) == 0) & (np.diff(docs[order]) == 0)
    if not same.any():
        return None
    return int(order[int(np.flatnonzero(same)[0])])


def _check_values(
    columns: dict[str, Any],
    offsets: NDArray[np.int64],
    start: int,
    source: str,
    where: Callable[[int], str],
) -> None:
    """The value checks of one chunk, with rows counted from the file's start.

    ``where(i)`` is the suffix naming chunk row ``i`` in a message (its line in JSON Lines).
    """

    def fail(message: str, i: int, column: str) -> None:
        raise LogFormatError(message + where(i), row=start + i, column=column, source=source)

    lengths = np.diff(offsets)
    if (lengths == 0).any():
        fail("the shown list is empty", int(np.flatnonzero(lengths == 0)[0]), "docs")
    rows = np.repeat(np.arange(lengths.size), lengths)
    docs, clicks = columns["docs"], columns["clicks"]
    if (docs < 0).any():
        i = int(np.flatnonzero(docs < 0)[0])
        fail(f"document index must be >= 0, got {int(docs[i])}", int(rows[i]), "docs")
    bad = (clicks != 0) & (clicks != 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        fail(f"clicks must be 0 or 1, got {int(clicks[i])}", int(rows[i]), "clicks")
    repeat = _first_repeat(rows, docs)
    if repeat is not None:
        fail(f"the shown list repeats document {int(docs[repeat])}", int(rows[repeat]), "docs")
    p = columns.get("propensity")
    if p is not None:
        bad = ~(np.isfinite(p) & (p > 0) & (p <= 1))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            fail(f"propensity must be in (0, 1], got {float(p[i])!r}", i, "propensity")


def checked_chunk(
    columns: dict[str, Any],
    offsets: NDArray[np.int64],
    start: int,
    source: str,
    where: Callable[[int], str] = lambda i: "",
) -> ClickLog:
    """A :class:`ClickLog` of one chunk's columns, checked, rows named from the file's start.

    ``columns`` holds ``qid`` (str), ``docs`` and ``clicks`` (flat int64, cut by
    ``offsets``) and the optional ``logger`` and ``propensity``; ``start`` is the
    chunk's first row in the file.
    """
    _check_values(columns, offsets, start, source, where)
    return ClickLog(
        qids=columns["qid"],
        offsets=offsets,
        docs=columns["docs"],
        clicks=columns["clicks"].astype(np.int8),
        loggers=columns.get("logger"),
        propensities=columns.get("propensity"),
        source=source,
    )


def log_chunks(log: ClickLog, rows: int) -> Iterator[ClickLog]:
    """``log`` in consecutive pieces of at most ``rows`` impressions."""
    for lo in range(0, log.n_impressions, rows):
        yield log.take(np.arange(lo, min(lo + rows, log.n_impressions)))


def _open_bytes(path: Path) -> IO[bytes] | gzip.GzipFile:
    if path.name.lower().endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def _as_float(value: float) -> float:
    """``value`` as a float; an integer too large for one is infinite (and refused later)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


_INT_TYPE = {int}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _JsonRows:
    """Accumulates the checked rows of one chunk of a JSON Lines file."""

    def __init__(self, source: str, optional: frozenset[str]) -> None:
        self.source, self.optional = source, optional
        self.qids: list[str] = []
        self.docs: list[list[int]] = []
        self.clicks: list[list[int]] = []
        self.lines: list[int] = []
        self.extra: dict[str, list[Any]] = {name: [] for name in sorted(optional)}

    def fail(self, message: str, row: int, line: int, column: str | None) -> LogFormatError:
        return LogFormatError(
            f"{message} (line {line})", row=row, column=column, source=self.source
        )

    def add(self, obj: Any, row: int, line: int) -> None:
        if not isinstance(obj, dict):
            raise self.fail(
                f"a row must be a JSON object, got {type(obj).__name__}", row, line, None
            )
        for key in obj:
            if key not in COLUMNS and key != "version":
                known = ", ".join(COLUMNS)
                raise self.fail(f"unknown column (the schema has {known}, version)", row, line, key)
        if "version" in obj and not (_is_int(obj["version"]) and obj["version"] == SCHEMA_VERSION):
            raise self.fail(
                f"schema version {obj['version']!r}, this oltr reads version {SCHEMA_VERSION}",
                row,
                line,
                "version",
            )
        for name in _REQUIRED:
            if name not in obj:
                raise self.fail("a required column is missing", row, line, name)
        for name in _OPTIONAL:
            if (name in obj) != (name in self.optional):
                has = "has" if name in obj else "lacks"
                first = "lacks" if name in obj else "has"
                msg = f"this row {has} the column and the first row {first} it (all or nothing)"
                raise self.fail(msg, row, line, name)
        qid, docs, clicks = obj["qid"], obj["docs"], obj["clicks"]
        if not isinstance(qid, str):
            msg = f'qid must be a string (write "{qid}", not {json.dumps(qid)})'
            raise self.fail(msg, row, line, "qid")
        for name, values in (("docs", docs), ("clicks", clicks)):
            # type(v) is int: JSON integers, not booleans (a subclass) nor floats.
            if not isinstance(values, list) or not {*map(type, values)} <= _INT_TYPE:
                raise self.fail(f"{name} must be a list of integers", row, line, name)
        if len(docs) != len(clicks):
            msg = f"clicks has {len(clicks)} entries and docs {len(docs)}: one click per shown doc"
            raise self.fail(msg, row, line, "clicks")
        if "logger" in obj and not isinstance(obj["logger"], str):
            raise self.fail("logger must be a string", row, line, "logger")
        if "propensity" in obj:
            p = obj["propensity"]
            if isinstance(p, bool) or not isinstance(p, int | float):
                raise self.fail(f"propensity must be a number, got {p!r}", row, line, "propensity")
        self.qids.append(qid)
        self.docs.append(docs)
        self.clicks.append(clicks)
        self.lines.append(line)
        for name in self.extra:
            self.extra[name].append(obj[name])

    def build(self, start: int) -> ClickLog:
        lengths = [len(d) for d in self.docs]
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        columns: dict[str, Any] = {"qid": np.array(self.qids, dtype=str)}
        for name, lists in (("docs", self.docs), ("clicks", self.clicks)):
            try:
                flat = itertools.chain.from_iterable(lists)
                columns[name] = np.fromiter(flat, dtype=np.int64, count=int(offsets[-1]))
            except OverflowError:
                i = next(i for i, v in enumerate(lists) if any(abs(x) >= 2**63 for x in v))
                raise self.fail(
                    f"{name} holds an integer beyond 64 bits", start + i, self.lines[i], name
                ) from None
        if "logger" in self.extra:
            columns["logger"] = np.array(self.extra["logger"], dtype=str)
        if "propensity" in self.extra:
            values = self.extra["propensity"]
            columns["propensity"] = np.array([_as_float(v) for v in values], dtype=np.float64)
        lines = self.lines
        return checked_chunk(columns, offsets, start, self.source, lambda i: f" (line {lines[i]})")


def _decoded(raw: bytes, row: int, line: int, source: str) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text: {exc.reason} at byte {exc.start} (line {line})"
        raise LogFormatError(msg, row=row, source=source) from None
    return text[1:] if line == 1 and text.startswith("\ufeff") else text  # a byte-order mark


def iter_jsonl(path: Path, source: str, batch_rows: int) -> Iterator[ClickLog]:
    """The JSON Lines log at ``path`` in chunks of ``batch_rows`` impressions (see io)."""
    rows: _JsonRows | None = None
    optional: frozenset[str] | None = None
    row = start = 0
    with _open_bytes(path) as f:
        lines = enumerate(f, start=1)
        while True:
            try:
                line, raw = next(lines)
            except StopIteration:
                break
            except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
                msg = f"not a readable gzip file: {exc}"
                raise LogFormatError(msg, row=row, source=source) from None
            text = _decoded(raw, row, line, source)
            if not text.strip():
                continue
            try:
                obj = json.loads(text)
            except ValueError as exc:
                msg = f"not JSON: {exc} (line {line})"
                raise LogFormatError(msg, row=row, source=source) from None
            if optional is None:
                keys = obj if isinstance(obj, dict) else {}
                optional = frozenset(k for k in _OPTIONAL if k in keys)
            if rows is None:
                rows, start = _JsonRows(source, optional), row
            rows.add(obj, row, line)
            row += 1
            if row - start == batch_rows:
                yield rows.build(start)
                rows = None
    if rows is not None:
        yield rows.build(start)
    elif row == 0:
        raise LogFormatError("the file holds no impression (only blank lines)", source=source)


def _json_lines(part: ClickLog) -> str:
    out = []
    offsets, docs, clicks = part.offsets.tolist(), part.docs.tolist(), part.clicks.tolist()
    loggers = None if part.loggers is None else part.loggers.tolist()
    props = None if part.propensities is None else part.propensities.tolist()
    for i, qid in enumerate(part.qids.tolist()):
        lo, hi = offsets[i], offsets[i + 1]
        row: dict[str, Any] = {"qid": qid, "docs": docs[lo:hi], "clicks": clicks[lo:hi]}
        if loggers is not None:
            row["logger"] = loggers[i]
        if props is not None:
            row["propensity"] = props[i]
        row["version"] = SCHEMA_VERSION
        out.append(json.dumps(row, ensure_ascii=False))
    return "\n".join(out) + "\n"


def write_jsonl(log: ClickLog, tmp: Path, *, gz: bool) -> None:
    with open(tmp, "xb") as raw:
        out: BinaryIO | gzip.GzipFile = (
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if gz else raw
        )
        for part in log_chunks(log, 8192):
            out.write(_json_lines(part).encode("utf-8"))
        if gz:
            out.close()  # writes the gzip trailer; the file itself stays open
        raw.flush()
        os.fsync(raw.fileno())
