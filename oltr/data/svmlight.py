"""The SVMlight / LETOR text parser: a compiled tokeniser with sklearn as fallback.

One line per (query, document) pair::

    <grade> qid:<Q> <i>:<v> <i>:<v> ... # optional comment

Feature indices are 1-based (feature ``i`` lands in column ``i - 1``), may be
dense or sparse (a missing feature is 0), and must increase along a line. Files
may be plain or gzip-compressed (detected from the content, not the name) and
may use LF or CRLF line endings. Files without ``qid:`` take their list sizes
from a group file (LightGBM ``.query``, XGBoost ``.group``: one size per line),
also read here.

Why a compiled tokeniser and not scikit-learn's ``load_svmlight_file`` alone:
sklearn's parser, though compiled, converts every token through Python objects.
Measured with ``benchmarks/bench_letor.py``, it reads 70k lines/s on MQ2008
against 333k for the tokeniser below, and on a 1M-line dense file 9k lines/s
against 539k (a plain Python loop over lines: 45k). So files in the common
grammar (decimal numbers, plain indices) go through a numba tokeniser that
converts values exactly (Clinger's fast path, else Python's correctly rounded
``strtod``). sklearn stays the fallback for any syntax outside that grammar and
the reference for what is accepted: both give bit-identical arrays, which the
tests check on every fixture and real file. A Python loop over lines runs only
on the error path, to name the offending line (:class:`LetorFormatError` reads
``file:line: problem``).

The dataset container and :func:`~oltr.data.letor.load_letor` live in
:mod:`oltr.data.letor`; the binary cache of parsed files in
:mod:`oltr.data.cache`, keyed on :data:`PARSER_VERSION`.

References
----------
Qin, T., Liu, T.-Y., Xu, J. & Li, H. (2010). LETOR: A benchmark collection for
research on learning to rank for information retrieval. *Inf. Retr.* 13(4)
(format). Qin, T. & Liu, T.-Y. (2013). Introducing LETOR 4.0 datasets.
arXiv:1306.2597. Clinger, W. D. (1990). How to read floating point numbers
accurately. *PLDI '90* (the exact fast path of the tokeniser).
"""

from __future__ import annotations

import gzip
import io
import math
import mmap
import os
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Literal, NoReturn

import numpy as np
from numpy.typing import NDArray

from oltr.data.tokenizer import MAX_FEATURE_INDEX, DenseSizeError, _parse_fast, check_dense_size
from oltr.errors import DataFormatError

__all__ = ["MAX_GRADE", "PARSER_VERSION", "LetorFormatError"]

#: Bumped whenever parsing changes what a file means; part of every cache key.
PARSER_VERSION = 1

#: Largest grade accepted: 2**53, the largest integer below which every integer
#: is exact in float64 (grades are read as floats, then stored as int64), so a
#: grade's text always names one integer.
MAX_GRADE = 2**53

_INT64_MAX = 2**63 - 1


_GZIP_MAGIC = b"\x1f\x8b"


class LetorFormatError(DataFormatError):
    """A LETOR / SVMlight or group file is malformed; the message reads ``file:line: problem``."""


# ---------------------------------------------------------------------------
# Reading


def _open_binary(path: Path) -> BinaryIO | gzip.GzipFile:
    """Open ``path`` for binary reading, decompressing gzip (recognised by its magic bytes)."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return gzip.open(path, "rb")
    return open(path, "rb")


def _read_buffer(path: Path) -> NDArray[np.uint8]:
    """The file's bytes, decompressed: a read-only memory map for a plain file."""
    with open(path, "rb") as f:
        if f.read(2) != _GZIP_MAGIC:
            if os.fstat(f.fileno()).st_size == 0:
                return np.empty(0, dtype=np.uint8)
            # The map outlives the file object; the array keeps it alive.
            return np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
    with gzip.open(path, "rb") as g:
        return np.frombuffer(g.read(), dtype=np.uint8)


def _iter_data_lines(path: Path) -> Iterator[tuple[int, list[bytes]]]:
    """Yield (1-based line number, tokens) for every data line, as sklearn sees them.

    Like sklearn's parser: lines split on ``\\n``; ``#`` starts a comment; lines
    empty after that are skipped; tokens split on whitespace (so a CR is dropped).
    Only the error path uses this Python loop.
    """
    with _open_binary(path) as f:
        for number, line in enumerate(f, start=1):
            tokens = line.split(b"#", 1)[0].split()
            if tokens:
                yield number, tokens


# ---------------------------------------------------------------------------
# Diagnosis: the error path names the first malformed line


def _text(token: bytes) -> str:
    return token.decode("utf-8", errors="replace")


def _line_problem(tokens: list[bytes], n_features: int | None) -> str | None:
    """What is wrong with one data line, or None.

    >>> _line_problem([b"1", b"qid:3", b"1:0.5", b"2:1"], None) is None
    True
    >>> _line_problem([b"1", b"qid:3", b"2:0.5", b"1:1"], None)
    'feature indices must increase along a line: 1 after 2'
    >>> _line_problem([b"0.5", b"qid:3", b"1:1"], None)
    "grade '0.5' is not a non-negative integer"
    """
    try:
        grade = float(tokens[0])
    except ValueError:
        return f"bad grade {_text(tokens[0])!r}: not a number"
    if not math.isfinite(grade):
        return f"grade {_text(tokens[0])!r} is not finite"
    if grade < 0 or grade != int(grade):
        return f"grade {_text(tokens[0])!r} is not a non-negative integer"
    if grade > MAX_GRADE:
        return f"grade {_text(tokens[0])!r} is too large (at most 2**53 = {MAX_GRADE})"
    rest = tokens[1:]
    if rest and rest[0].startswith(b"qid:"):
        try:
            qid = int(rest[0][4:])
        except ValueError:
            return f"bad qid token {_text(rest[0])!r}: expected qid:<integer>"
        if abs(qid) > _INT64_MAX:
            return f"qid in token {_text(rest[0])!r} does not fit a 64-bit integer"
        rest = rest[1:]
    previous = 0
    for token in rest:
        index_text, sep, value_text = token.partition(b":")
        if not sep:
            return f"bad token {_text(token)!r}: expected <index>:<value>"
        if index_text == b"qid":
            return f"misplaced {_text(token)!r}: qid must directly follow the grade"
        try:
            index = int(index_text)
        except ValueError:
            return f"bad feature index in token {_text(token)!r}"
        if index < 1:
            return f"feature index {index} in token {_text(token)!r}: indices are 1-based"
        if index > MAX_FEATURE_INDEX:
            return (
                f"feature index {index} in token {_text(token)!r} is too large "
                f"(at most {MAX_FEATURE_INDEX})"
            )
        try:
            value = float(value_text)
        except ValueError:
            return f"bad value in token {_text(token)!r}: not a number"
        if not math.isfinite(value):
            return f"non-finite value in token {_text(token)!r}"
        if index <= previous:
            return f"feature indices must increase along a line: {index} after {previous}"
        if n_features is not None and index > n_features:
            return f"feature index {index} exceeds n_features={n_features}"
        previous = index
    return None


def _diagnose(path: Path, *, n_features: int | None = None) -> tuple[int, str] | None:
    """The first malformed line of ``path`` as (line number, problem), or None.

    A deliberate Python loop over lines: it runs only after the compiled parser
    has failed or returned values we reject, to say where and why.
    """
    with_qid = without_qid = None
    for number, tokens in _iter_data_lines(path):
        problem = _line_problem(tokens, n_features)
        if problem is not None:
            return number, problem
        has_qid = len(tokens) > 1 and tokens[1].startswith(b"qid:")
        if has_qid and with_qid is None:
            with_qid = number
        if not has_qid and without_qid is None:
            without_qid = number
        if with_qid is not None and without_qid is not None:
            if has_qid:
                return without_qid, f"missing qid (line {number} has one)"
            return number, f"missing qid (line {with_qid} has one)"
    return None


def _raise_malformed(path: Path, fallback: str, *, n_features: int | None = None) -> NoReturn:
    """Raise :class:`LetorFormatError` naming the first bad line of ``path``."""
    found = _diagnose(path, n_features=n_features)
    if found is None:
        raise LetorFormatError(f"{path}: {fallback}")
    line, problem = found
    raise LetorFormatError(f"{path}:{line}: {problem}")


def _line_using_index(path: Path, index: int) -> int | None:
    """1-based number of the first line that uses feature ``index`` (error path only)."""
    for number, tokens in _iter_data_lines(path):
        for token in tokens[1:]:
            index_text, sep, _ = token.partition(b":")
            if sep and index_text.isdigit() and int(index_text) == index:
                return number
    return None


def _raise_dense_size(path: Path, exc: DenseSizeError) -> NoReturn:
    """Re-raise a refused dense size as ``file:line: problem``, naming the line."""
    line = _line_using_index(path, exc.largest_index)
    where = f"{path}:{line}" if line is not None else str(path)
    raise LetorFormatError(f"{where}: {exc}") from None


def _line_of_row(path: Path, row: int) -> int:
    """1-based line number of data row ``row`` (error path only)."""
    for count, (number, _) in enumerate(_iter_data_lines(path)):
        if count == row:
            return number
    raise LookupError(f"{path} has no data row {row}")


# ---------------------------------------------------------------------------
# The compiled fast path. sklearn's parser, though compiled, converts every
# token through Python objects and runs barely faster than a plain Python loop
# (see the module docstring and benchmarks/bench_letor.py), so files in the
# common grammar are tokenised by the numba loop below; anything outside it
# goes to sklearn, whose acceptance (Python's int/float syntax) stays the
# reference.


def _parse_sklearn(
    source: BinaryIO | gzip.GzipFile, path: Path, n_bytes: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """sklearn's parser, one-based (never "auto": it can mis-detect), made dense.

    ``n_bytes`` is the length of the text, for :func:`check_dense_size`.
    """
    # Imported here: only files outside the fast grammar need it, and it is slow to import.
    from sklearn.datasets import load_svmlight_file

    failure = None
    try:
        X, y, q = load_svmlight_file(source, zero_based=False, query_id=True, dtype=np.float64)
    except (ValueError, OverflowError) as exc:  # naming neither line nor token
        # OverflowError: an index or qid beyond sklearn's integer types.
        failure = str(exc)
    if failure is not None:
        _raise_malformed(path, f"unparsable ({failure})")
    # sklearn reports at least one column; the width is the largest index used.
    width = int(X.indices.max()) + 1 if X.nnz else 0
    check_dense_size(X.shape[0], width, n_bytes)
    # LETOR sets are dense or nearly so (MQ2008: 46 of 46 features per line), so
    # a dense C-contiguous matrix costs little and makes every row slice a view.
    return X[:, :width].toarray(), y, np.asarray(q, dtype=np.int64)


def _parse_svmlight(
    path: Path, *, engine: Literal["auto", "sklearn"] = "auto"
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """(dense features, grades, per-line qids) of ``path``, validated.

    ``engine="auto"`` tries the compiled fast path and falls back to sklearn;
    ``"sklearn"`` uses sklearn only (the reference, used by the tests).
    """
    try:
        buf = _read_buffer(path)
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise LetorFormatError(f"{path}: corrupt gzip data: {exc}") from None
    try:
        parsed = _parse_fast(buf) if engine == "auto" else None
        if parsed is not None:
            X, y, q, finite = parsed
        else:
            X, y, q = _parse_sklearn(io.BytesIO(buf.tobytes()), path, buf.size)
            finite = bool(np.isfinite(X).all())
    except DenseSizeError as exc:
        _raise_dense_size(path, exc)
    if y.size == 0:
        raise LetorFormatError(f"{path}: empty file: no data lines")
    # Both parsers accept NaN/inf, fractional grades, grades beyond int64, and
    # sklearn lines without qid when others have one; we do not.
    grades_ok = (
        np.all(np.isfinite(y))
        and np.all(y >= 0)
        and np.all(y <= MAX_GRADE)
        and np.all(y == np.round(y))
    )
    if not (grades_ok and q.size in (0, y.size) and finite):
        _raise_malformed(
            path, "rejected values (NaN/inf, non-integer or too large grade, or missing qid)"
        )
    return X, y, q


# ---------------------------------------------------------------------------
# Lists: group files and qids


def _read_group_sizes(path: Path) -> NDArray[np.int64]:
    """List sizes from a LightGBM ``.query`` / XGBoost ``.group`` file, one per line."""
    with _open_binary(path) as f:
        data = f.read()
    sizes = []
    # One line per query (not per document), so this loop is short.
    for number, line in enumerate(data.split(b"\n"), start=1):
        text = line.strip()
        if not text:
            continue
        try:
            size = int(text)
        except ValueError:
            raise LetorFormatError(
                f"{path}:{number}: bad group size {_text(text)!r}: expected a positive integer"
            ) from None
        if size < 1:
            raise LetorFormatError(f"{path}:{number}: group size {size} must be >= 1")
        sizes.append(size)
    if not sizes:
        raise LetorFormatError(f"{path}: empty group file: no group sizes")
    return np.asarray(sizes, dtype=np.int64)


def _group_file_candidates(path: Path) -> list[Path]:
    """Group files looked for beside ``path``, in order of preference."""
    name = path.name
    bases = [name, name[:-3] if name.endswith(".gz") else name + ".gz"]
    return [
        path.with_name(base + suffix + gz)
        for base in bases
        for suffix in (".query", ".group")
        for gz in ("", ".gz")
    ]


def _find_group_file(path: Path) -> Path | None:
    return next((c for c in _group_file_candidates(path) if c.is_file()), None)


def _group_by_qid(
    q: NDArray[np.int64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64] | None]:
    """(offsets, qids, row permutation or None) grouping lines by qid.

    Queries appear in order of their first line; within a query the file's
    line order is kept (a stable sort), so non-contiguous qids are merged.
    """
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    run_qids = q[starts]
    if np.unique(run_qids).size == run_qids.size:  # contiguous: no reordering
        return np.r_[starts, q.size].astype(np.int64), run_qids, None
    unique, first, inverse = np.unique(q, return_index=True, return_inverse=True)
    by_appearance = np.argsort(first, kind="stable")
    group_of_unique = np.empty_like(by_appearance)
    group_of_unique[by_appearance] = np.arange(by_appearance.size)
    group = group_of_unique[inverse.ravel()]
    perm = np.argsort(group, kind="stable")
    offsets = np.zeros(unique.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(group), out=offsets[1:])
    return offsets, unique[by_appearance], perm


def _check_groups_match_qids(
    path: Path, group_path: Path, q: NDArray[np.int64], offsets: NDArray[np.int64]
) -> None:
    """With both qids and a group file, every group must hold a single qid."""
    lengths = np.diff(offsets)
    expected = np.repeat(q[offsets[:-1]], lengths)
    bad = np.flatnonzero(q != expected)
    if bad.size:
        row = int(bad[0])
        group = int(np.searchsorted(offsets, row, side="right") - 1)
        raise LetorFormatError(
            f"{path}:{_line_of_row(path, row)}: qid {int(q[row])} differs from qid "
            f"{int(expected[row])} earlier in the same group (group {group + 1} of {group_path})"
        )
