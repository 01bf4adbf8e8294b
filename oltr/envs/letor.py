"""Learning-to-rank data in the LETOR / SVMlight text format.

One line per (query, document) pair::

    <grade> qid:<Q> <i>:<v> <i>:<v> ... # optional comment

Feature indices are 1-based (feature ``i`` lands in column ``i - 1``), may be
dense or sparse (a missing feature is 0), and must increase along a line. Files
may be plain or gzip-compressed (detected from the content, not the name) and
may use LF or CRLF line endings. Files without ``qid:`` take their list sizes
from a group file (LightGBM ``.query``, XGBoost ``.group``: one size per line).

Parsing is compiled: files in the common grammar (decimal numbers, plain
indices) go through a numba tokeniser with exact float conversion, anything
else through scikit-learn's ``load_svmlight_file``, which stays the reference
for what is accepted (both give bit-identical arrays; the tests check it on
every real file). A Python loop over lines runs only on the error path, to name
the offending line. The parsed result is cached in a binary form keyed on the
file's content, so a second load is a memory map (see :func:`load_letor`).

This module also holds the dataset container (:class:`LetorDataset`), the
writer (:func:`write_letor`), a seeded stream of query indices
(:class:`QueryStream`) and the summary behind ``oltr data info``
(:func:`summarize`). The synthetic generator lives in :mod:`oltr.envs.synthetic`
and is re-exported here as :func:`synthetic_letor`.

References
----------
Qin, T., Liu, T.-Y., Xu, J. & Li, H. (2010). LETOR: A benchmark collection for
research on learning to rank for information retrieval. *Inf. Retr.* 13(4)
(format, QueryLevelNorm). Qin, T. & Liu, T.-Y. (2013). Introducing LETOR 4.0
datasets. arXiv:1306.2597. Clinger, W. D. (1990). How to read floating point
numbers accurately. *PLDI '90* (the exact fast path of the tokeniser).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import mmap
import os
import secrets
import shutil
import tempfile
import time
import warnings
import zlib
from collections.abc import Iterator
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, NoReturn

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.random import RNGLike, as_rng

if TYPE_CHECKING:
    from oltr.envs.synthetic import SyntheticLetor, synthetic_letor

__all__ = [
    "MAX_DENSE_BYTES",
    "PARSER_VERSION",
    "LetorDataset",
    "LetorFormatError",
    "QueryStream",
    "SyntheticLetor",
    "cache_root",
    "load_letor",
    "normalize_per_query",
    "summarize",
    "synthetic_letor",
    "write_letor",
]

#: Bumped whenever parsing changes what a file means; part of every cache key.
PARSER_VERSION = 1

#: Largest dense feature matrix :func:`load_letor` builds (bytes); guards against
#: a stray huge feature index turning a small file into a giant allocation.
MAX_DENSE_BYTES = 16 * 2**30

#: A remembered content digest is trusted only for files unchanged this long
#: before they were hashed (see :func:`_file_digest`).
_SETTLE_NS = 2_000_000_000

_GZIP_MAGIC = b"\x1f\x8b"


class LetorFormatError(ValueError):
    """A LETOR / SVMlight or group file is malformed; the message reads ``file:line: problem``."""


# ---------------------------------------------------------------------------
# The dataset


def _read_only(array: NDArray[Any]) -> NDArray[Any]:
    """A read-only view (the caller's array keeps its own flags)."""
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, eq=False, repr=False)
class LetorDataset:
    """Queries with their documents' features and relevance grades.

    Query ``i`` owns rows ``offsets[i]:offsets[i+1]`` of ``features`` and
    ``relevance``. Arrays are stored as read-only views (memory maps when they
    come from the cache); copy them to modify.

    Parameters
    ----------
    features
        Array of shape (n_docs, n_features), float64, finite.
    relevance
        Array of shape (n_docs,): integer grades >= 0 (stored as int64).
    qids
        Array of shape (n_queries,): the query ids, int64.
    offsets
        Array of shape (n_queries + 1,), int64: ``offsets[0] == 0``,
        ``offsets[-1] == n_docs``, strictly increasing (no empty query).
    source
        Where the data came from (a path), or None.
    check_values
        Scan ``features`` for NaN/inf (O(n_docs × n_features)); readers that
        have already checked pass False. Structure is always validated.

    Examples
    --------
    >>> ds = LetorDataset(features=np.eye(3), relevance=np.array([2, 0, 1]),
    ...                   qids=np.array([7, 9]), offsets=np.array([0, 2, 3]))
    >>> ds.n_queries, ds.n_docs, ds.n_features, ds.list_lengths.tolist()
    (2, 3, 3, [2, 1])
    >>> X, R = ds.query(1)
    >>> X.tolist(), R.tolist()
    ([[0.0, 0.0, 1.0]], [1])
    """

    features: NDArray[np.float64]
    relevance: NDArray[np.int64]
    qids: NDArray[np.int64]
    offsets: NDArray[np.int64]
    source: str | None = None
    check_values: InitVar[bool] = True

    def __post_init__(self, check_values: bool) -> None:
        features = np.asarray(self.features)
        if features.ndim != 2:
            raise ValueError(
                f"features must be 2-D (n_docs, n_features), got shape {features.shape}"
            )
        if not np.issubdtype(features.dtype, np.floating) and not np.issubdtype(
            features.dtype, np.integer
        ):
            raise TypeError(f"features must be numeric, got dtype {features.dtype}")
        features = np.ascontiguousarray(features, dtype=np.float64)
        if check_values and not np.isfinite(features).all():
            row = int(np.flatnonzero(~np.isfinite(features).all(axis=1))[0])
            raise ValueError(f"features must be finite; row {row} holds NaN or inf")
        n_docs = features.shape[0]
        relevance = _as_int64(self.relevance, "relevance")
        if relevance.shape != (n_docs,):
            raise ValueError(
                f"relevance must have shape ({n_docs},) to match features, got {relevance.shape}"
            )
        if n_docs and relevance.min() < 0:
            raise ValueError(f"relevance grades must be >= 0, got {int(relevance.min())}")
        offsets = _as_int64(self.offsets, "offsets")
        if offsets.ndim != 1 or offsets.size < 1:
            raise ValueError(
                f"offsets must be 1-D with n_queries + 1 >= 1 entries, got {offsets.shape}"
            )
        if offsets[0] != 0 or offsets[-1] != n_docs:
            raise ValueError(
                f"offsets must start at 0 and end at n_docs={n_docs}, "
                f"got {int(offsets[0])} .. {int(offsets[-1])}"
            )
        if np.any(np.diff(offsets) < 1):
            query = int(np.flatnonzero(np.diff(offsets) < 1)[0])
            raise ValueError(
                f"offsets must increase strictly (no empty query); query {query} is empty"
            )
        qids = _as_int64(self.qids, "qids")
        if qids.shape != (offsets.size - 1,):
            raise ValueError(
                f"qids must have shape ({offsets.size - 1},) to match offsets, got {qids.shape}"
            )
        object.__setattr__(self, "features", _read_only(features))
        object.__setattr__(self, "relevance", _read_only(relevance))
        object.__setattr__(self, "qids", _read_only(qids))
        object.__setattr__(self, "offsets", _read_only(offsets))
        if self.source is not None:
            object.__setattr__(self, "source", str(self.source))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(n_queries={self.n_queries}, n_docs={self.n_docs}, "
            f"n_features={self.n_features}, source={self.source!r})"
        )

    @property
    def n_queries(self) -> int:
        """Number of queries (lists)."""
        return int(self.offsets.size - 1)

    @property
    def n_docs(self) -> int:
        """Number of (query, document) rows."""
        return int(self.features.shape[0])

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.features.shape[1])

    @property
    def list_lengths(self) -> NDArray[np.int64]:
        """Documents per query, shape (n_queries,)."""
        return np.diff(self.offsets)

    def query(self, i: int) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Features (m, n_features) and grades (m,) of query ``i`` (read-only views)."""
        i = self._check_indices(np.asarray(i), "i").item()
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.features[lo:hi], self.relevance[lo:hi]

    def padded(
        self, indices: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.bool_]]:
        """Queries ``indices`` as one padded batch, for batched learners and metrics.

        Returns ``X`` of shape (q, m_max, n_features), ``R`` of shape (q, m_max)
        and ``mask`` of shape (q, m_max) (True = real document), where ``m_max``
        is the longest of the chosen lists. Padding rows hold zero features and
        grade 0 and are masked out.

        >>> ds = LetorDataset(features=np.arange(6.0).reshape(3, 2), relevance=np.array([1, 0, 2]),
        ...                   qids=np.array([1, 2]), offsets=np.array([0, 2, 3]))
        >>> X, R, mask = ds.padded([1, 0])
        >>> R.tolist(), mask.tolist()
        ([[2, 0], [1, 0]], [[True, False], [True, True]])
        """
        idx = self._check_indices(np.asarray(indices), "indices")
        if idx.ndim != 1:
            raise ValueError(f"indices must be 1-D, got shape {idx.shape}")
        lengths = self.list_lengths[idx]
        m_max = int(lengths.max()) if idx.size else 0
        mask = np.arange(m_max) < lengths[:, None]
        rows = (self.offsets[idx][:, None] + np.arange(m_max))[mask]
        X = np.zeros((idx.size, m_max, self.n_features))
        R = np.zeros((idx.size, m_max), dtype=np.int64)
        X[mask] = self.features[rows]
        R[mask] = self.relevance[rows]
        return X, R, mask

    def subset(self, query_indices: ArrayLike) -> LetorDataset:
        """A new dataset holding queries ``query_indices``, in that order (repeats allowed)."""
        idx = self._check_indices(np.asarray(query_indices), "query_indices")
        if idx.ndim != 1:
            raise ValueError(f"query_indices must be 1-D, got shape {idx.shape}")
        rows, offsets = self._rows_of(idx)
        return LetorDataset(
            features=self.features[rows],
            relevance=self.relevance[rows],
            qids=self.qids[idx],
            offsets=offsets,
            source=self.source,
            check_values=False,
        )

    def _rows_of(self, idx: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Row indices of queries ``idx`` (concatenated) and the offsets of the result."""
        lengths = self.list_lengths[idx]
        offsets = np.zeros(idx.size + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        rows = np.repeat(self.offsets[idx] - offsets[:-1], lengths) + np.arange(offsets[-1])
        return rows, offsets

    def _check_indices(self, idx: NDArray[Any], name: str) -> NDArray[np.int64]:
        if idx.size == 0:
            return idx.astype(np.int64)
        if not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"{name} must be integer query indices, got dtype {idx.dtype}")
        bad = (idx < 0) | (idx >= self.n_queries)
        if bad.any():
            raise ValueError(
                f"{name} must lie in [0, {self.n_queries}), got {int(idx[bad].flat[0])}"
            )
        return idx.astype(np.int64)


def _as_int64(values: ArrayLike, name: str) -> NDArray[np.int64]:
    """``values`` as int64, accepting floats only when they are whole numbers."""
    array = np.asarray(values)
    if np.issubdtype(array.dtype, np.integer):
        return array.astype(np.int64, copy=False)
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
            raise ValueError(f"{name} must hold whole numbers, got non-integer values")
        return array.astype(np.int64)
    raise TypeError(f"{name} must be integers, got dtype {array.dtype}")


def normalize_per_query(dataset: LetorDataset) -> LetorDataset:
    r"""LETOR "QueryLevelNorm": min–max scale every feature within every query.

    .. math:: x'_{ij} = \frac{x_{ij} - \min_{k \in q} x_{kj}}
                              {\max_{k \in q} x_{kj} - \min_{k \in q} x_{kj}}

    A feature constant within a query becomes 0 there. The result lies in
    [0, 1], with 0 and 1 attained by every non-constant (query, feature).

    >>> X = np.array([[1.0, 5.0], [3.0, 5.0], [2.0, 5.0], [7.0, 0.0]])
    >>> ds = LetorDataset(features=X, relevance=np.zeros(4, int), qids=np.array([1, 2]),
    ...                   offsets=np.array([0, 3, 4]))
    >>> normalize_per_query(ds).features.tolist()
    [[0.0, 0.0], [1.0, 0.0], [0.5, 0.0], [0.0, 0.0]]
    """
    X = dataset.features
    starts, lengths = dataset.offsets[:-1], dataset.list_lengths
    lo = np.minimum.reduceat(X, starts, axis=0)
    span = np.maximum.reduceat(X, starts, axis=0) - lo
    span_rows = np.repeat(span, lengths, axis=0)
    out = np.zeros_like(X)
    np.divide(X - np.repeat(lo, lengths, axis=0), span_rows, out=out, where=span_rows > 0)
    return LetorDataset(
        features=out,
        relevance=dataset.relevance,
        qids=dataset.qids,
        offsets=dataset.offsets,
        source=dataset.source,
        check_values=False,
    )


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


def _text(token: bytes) -> str:
    return token.decode("utf-8", errors="replace")


def _line_problem(tokens: list[bytes], n_features: int | None) -> str | None:
    """What is wrong with one data line, or None."""
    try:
        grade = float(tokens[0])
    except ValueError:
        return f"bad grade {_text(tokens[0])!r}: not a number"
    if not math.isfinite(grade):
        return f"grade {_text(tokens[0])!r} is not finite"
    if grade < 0 or grade != int(grade):
        return f"grade {_text(tokens[0])!r} is not a non-negative integer"
    rest = tokens[1:]
    if rest and rest[0].startswith(b"qid:"):
        try:
            int(rest[0][4:])
        except ValueError:
            return f"bad qid token {_text(rest[0])!r}: expected qid:<integer>"
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


def _line_of_row(path: Path, row: int) -> int:
    """1-based line number of data row ``row`` (error path only)."""
    for count, (number, _) in enumerate(_iter_data_lines(path)):
        if count == row:
            return number
    raise LookupError(f"{path} has no data row {row}")


# The compiled fast path. sklearn's parser, though compiled, converts every
# token through Python objects and runs barely faster than a plain Python loop
# (see benchmarks/bench_letor.py), so files in the common grammar are
# tokenised by the numba loop below; anything outside it goes to sklearn,
# whose acceptance (Python's int/float syntax) stays the reference.

# Whitespace is space, tab and CR (so CRLF ends a line like LF); byte codes:
_NEWLINE, _HASH, _COLON, _DOT, _PLUS, _MINUS = 10, 35, 58, 46, 43, 45

#: 10**k for k = 0..22: every one is exact in binary64.
_POW10 = np.array([10.0**k for k in range(23)])


@numba.njit(cache=True)
def _scan_number(buf: NDArray[np.uint8], i: int, n: int) -> tuple[int, int, float]:
    """Scan ``[+-]digits[.digits][(e|E)[+-]digits]`` from ``buf[i]``.

    Returns (end, status, value): status 0 = not in this grammar, 1 = value
    computed exactly, 2 = valid but to be converted by the exact slow path.
    The fast path is Clinger's (1990): a mantissa m <= 2**53 and 10**|e| with
    |e| <= 22 are exact doubles, so one multiplication or division rounds
    correctly, as Python's float() does.
    """
    negative = False
    if i < n and (buf[i] == _PLUS or buf[i] == _MINUS):
        negative = buf[i] == _MINUS
        i += 1
    mantissa = 0
    significant = 0
    exponent = 0
    digits = 0
    slow = False
    while i < n and 48 <= buf[i] <= 57:
        digits += 1
        if significant < 18:
            mantissa = mantissa * 10 + (buf[i] - 48)
            significant += mantissa > 0
        else:
            slow = True
        i += 1
    if i < n and buf[i] == _DOT:
        i += 1
        while i < n and 48 <= buf[i] <= 57:
            digits += 1
            if significant < 18:
                mantissa = mantissa * 10 + (buf[i] - 48)
                significant += mantissa > 0
                exponent -= 1
            else:
                slow = True
            i += 1
    if digits == 0:
        return i, 0, 0.0
    if i < n and (buf[i] == 101 or buf[i] == 69):  # e, E
        i += 1
        negative_exponent = False
        if i < n and (buf[i] == _PLUS or buf[i] == _MINUS):
            negative_exponent = buf[i] == _MINUS
            i += 1
        value = 0
        exponent_digits = 0
        while i < n and 48 <= buf[i] <= 57:
            if value < 100_000:
                value = value * 10 + (buf[i] - 48)
            exponent_digits += 1
            i += 1
        if exponent_digits == 0:
            return i, 0, 0.0
        exponent += -value if negative_exponent else value
    if slow or mantissa > 2**53 or exponent > 22 or exponent < -22:
        return i, 2, 0.0
    result = float(mantissa)
    result = result * _POW10[exponent] if exponent >= 0 else result / _POW10[-exponent]
    return i, 1, -result if negative else result


@numba.njit(cache=True)
def _ends_token(buf: NDArray[np.uint8], j: int, n: int) -> bool:
    if j >= n:
        return True
    c = buf[j]
    return bool(c == 32 or c == 9 or c == 13 or c == _NEWLINE or c == _HASH)


#: Status codes of :func:`_tokenize`.
_OK, _OUTSIDE_GRAMMAR, _TOO_SMALL = 0, 1, 2


@numba.njit(cache=True)
def _tokenize(
    buf: NDArray[np.uint8],
    fill: bool,
    X: NDArray[np.float64],
    grades: NDArray[np.float64],
    qids: NDArray[np.int64],
    slow: NDArray[np.int64],
) -> tuple[int, int, int, int, int]:
    """One pass over a LETOR buffer in the fast grammar.

    Returns (status, rows, largest feature index, lines with qid, tokens for
    the slow path). With ``fill=False`` it only measures. With ``fill=True``
    it also writes grades, qids and feature values into the arrays given and
    lists slow-path tokens in ``slow`` as (row, column or -1 for the grade,
    start, end); it stops with ``_TOO_SMALL`` when an array is too small.
    ``_OUTSIDE_GRAMMAR`` (rows = the line number) sends the file to sklearn.
    """
    n = buf.size
    i = 0
    line = 0
    row = 0
    largest = 0
    with_qid = 0
    n_slow = 0
    while i < n:
        line += 1
        while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
            i += 1
        if i < n and buf[i] == _HASH:
            while i < n and buf[i] != _NEWLINE:
                i += 1
        if i >= n:
            break
        if buf[i] == _NEWLINE:
            i += 1
            continue
        if fill and row >= grades.size:
            return _TOO_SMALL, row, largest, with_qid, n_slow
        j, status, value = _scan_number(buf, i, n)
        if status == 0 or not _ends_token(buf, j, n):
            return _OUTSIDE_GRAMMAR, line, 0, 0, 0
        if status == 2:
            if fill:
                if n_slow >= slow.shape[0]:
                    return _TOO_SMALL, row, largest, with_qid, n_slow
                slow[n_slow, 0], slow[n_slow, 1], slow[n_slow, 2], slow[n_slow, 3] = row, -1, i, j
            n_slow += 1
        elif fill:
            grades[row] = value
        i = j
        while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
            i += 1
        if (
            i + 4 <= n
            and buf[i] == 113  # q
            and buf[i + 1] == 105  # i
            and buf[i + 2] == 100  # d
            and buf[i + 3] == _COLON
        ):
            i += 4
            negative = i < n and buf[i] == _MINUS
            if i < n and (buf[i] == _PLUS or buf[i] == _MINUS):
                i += 1
            qid = 0
            digits = 0
            while i < n and 48 <= buf[i] <= 57 and digits < 18:
                qid = qid * 10 + (buf[i] - 48)
                digits += 1
                i += 1
            if digits == 0 or not _ends_token(buf, i, n):
                return _OUTSIDE_GRAMMAR, line, 0, 0, 0
            if fill:
                qids[row] = -qid if negative else qid
            with_qid += 1
        previous = 0
        while True:
            while i < n and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
                i += 1
            if i >= n:
                break
            if buf[i] == _NEWLINE or buf[i] == _HASH:
                while i < n and buf[i] != _NEWLINE:
                    i += 1
                break
            index = 0
            digits = 0
            while i < n and 48 <= buf[i] <= 57 and digits < 10:
                index = index * 10 + (buf[i] - 48)
                digits += 1
                i += 1
            # Also index 0 and indices that do not increase: sklearn decides.
            if digits == 0 or i >= n or buf[i] != _COLON or index <= previous:
                return _OUTSIDE_GRAMMAR, line, 0, 0, 0
            previous = index
            largest = max(largest, index)
            j, status, value = _scan_number(buf, i + 1, n)
            if status == 0 or not _ends_token(buf, j, n):
                return _OUTSIDE_GRAMMAR, line, 0, 0, 0
            if fill and index > X.shape[1]:
                return _TOO_SMALL, row, largest, with_qid, n_slow
            if status == 2:
                if fill:
                    if n_slow >= slow.shape[0]:
                        return _TOO_SMALL, row, largest, with_qid, n_slow
                    slow[n_slow, 0], slow[n_slow, 1] = row, index - 1
                    slow[n_slow, 2], slow[n_slow, 3] = i + 1, j
                n_slow += 1
            elif fill:
                X[row, index - 1] = value + 0.0  # -0.0 reads as 0, as after sklearn's toarray
            i = j
        row += 1
        i += 1  # past the newline
    return _OK, row, largest, with_qid, n_slow


#: Tokens converted per block by :func:`_exact_floats` (bounds its byte matrix).
_EXACT_BLOCK = 1 << 20


def _exact_floats(
    buf: NDArray[np.uint8], start: NDArray[np.int64], end: NDArray[np.int64]
) -> NDArray[np.float64]:
    """Tokens ``buf[start:end]`` as floats, by numpy's string cast.

    numpy converts bytes with Python's correctly rounded ``strtod``, the
    conversion ``float()`` (and so sklearn) uses.
    """
    out = np.empty(start.size)
    for lo in range(0, start.size, _EXACT_BLOCK):
        s, e = start[lo : lo + _EXACT_BLOCK], end[lo : lo + _EXACT_BLOCK]
        width = int((e - s).max())
        offsets = np.arange(width)
        inside = offsets < (e - s)[:, None]
        chars = np.zeros((s.size, width), dtype=np.uint8)
        chars[inside] = buf[(s[:, None] + offsets)[inside]]
        out[lo : lo + s.size] = chars.view(f"S{width}").ravel().astype(np.float64)
    return out


#: The width of the feature matrix is guessed from this many leading bytes ...
_PREFIX_BYTES = 1 << 20
#: ... and this many slow-path tokens are expected before a second pass.
_SLOW_CAPACITY = 1 << 16


def _measure(buf: NDArray[np.uint8]) -> tuple[int, int, int, int, int]:
    """:func:`_tokenize` without filling: (status, rows, largest index, qid lines, slow tokens)."""
    f, i = np.empty(0), np.empty(0, np.int64)
    return _tokenize(buf, False, f.reshape(0, 0), f, i, i.reshape(0, 4))


def _parse_fast(
    buf: NDArray[np.uint8], path: Path
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64], bool] | None:
    """(dense features, grades, per-line qids, all finite), or None outside the fast grammar.

    Usually one pass: the width and the rows per byte are read off the first
    MiB (LETOR files are dense, so every line shows the largest index), and
    the arrays allocated generously (untouched pages of ``np.zeros`` cost no
    memory). A wrong guess, or many slow-path tokens, costs a measuring pass
    and a second filling pass. Only slow-path tokens can be non-finite (the
    fast path's m·10^e with m <= 2**53, |e| <= 22 cannot overflow), so only
    they are checked.
    """
    newlines = np.flatnonzero(buf[:_PREFIX_BYTES] == _NEWLINE)
    cut = int(newlines[-1]) + 1 if newlines.size and buf.size > _PREFIX_BYTES else buf.size
    status, prefix_rows, width, _, _ = _measure(buf[:cut])
    if status == _OUTSIDE_GRAMMAR:
        return None  # sklearn decides, and the diagnosis names the line
    rows_bound = prefix_rows if cut == buf.size else int(1.5 * prefix_rows * buf.size / cut) + 64
    _check_dense_size(path, rows_bound, width)
    X = np.zeros((rows_bound, width))
    grades = np.empty(rows_bound)
    qids = np.empty(rows_bound, dtype=np.int64)
    slow = np.empty((_SLOW_CAPACITY, 4), dtype=np.int64)
    status, rows, largest, with_qid, n_slow = _tokenize(buf, True, X, grades, qids, slow)
    if status == _TOO_SMALL:
        status, rows, largest, with_qid, n_slow = _measure(buf)
        if status == _OK:
            _check_dense_size(path, rows, largest)
            X, grades = np.zeros((rows, largest)), np.empty(rows)
            qids, slow = np.empty(rows, dtype=np.int64), np.empty((n_slow, 4), dtype=np.int64)
            _tokenize(buf, True, X, grades, qids, slow)
    if status == _OUTSIDE_GRAMMAR or with_qid not in (0, rows):
        return None
    X, grades, qids = X[:rows, :largest], grades[:rows], qids[: rows if with_qid else 0]
    finite = True
    if n_slow:
        slow = slow[:n_slow]
        values = _exact_floats(buf, slow[:, 2], slow[:, 3])
        finite = bool(np.isfinite(values).all())
        is_grade = slow[:, 1] < 0
        grades[slow[is_grade, 0]] = values[is_grade]
        X[slow[~is_grade, 0], slow[~is_grade, 1]] = values[~is_grade] + 0.0  # no -0.0
    return np.ascontiguousarray(X), grades, qids, finite


def _check_dense_size(path: Path, n_docs: int, n_features: int) -> None:
    n_bytes = n_docs * n_features * 8
    if n_bytes > MAX_DENSE_BYTES:
        raise ValueError(
            f"{path}: a dense {n_docs} x {n_features} feature matrix needs "
            f"{n_bytes / 2**30:.1f} GiB (> MAX_DENSE_BYTES); "
            f"is the largest feature index {n_features} right?"
        )


def _parse_sklearn(
    source: BinaryIO | gzip.GzipFile, path: Path
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """sklearn's parser, one-based (never "auto": it can mis-detect), made dense."""
    # Imported here: only files outside the fast grammar need it, and it is slow to import.
    from sklearn.datasets import load_svmlight_file

    failure = None
    try:
        X, y, q = load_svmlight_file(source, zero_based=False, query_id=True, dtype=np.float64)
    except ValueError as exc:  # sklearn's messages name neither line nor token
        failure = str(exc)
    if failure is not None:
        _raise_malformed(path, f"unparsable ({failure})")
    # sklearn reports at least one column; the width is the largest index used.
    width = int(X.indices.max()) + 1 if X.nnz else 0
    _check_dense_size(path, X.shape[0], width)
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
    parsed = _parse_fast(buf, path) if engine == "auto" else None
    if parsed is not None:
        X, y, q, finite = parsed
    else:
        X, y, q = _parse_sklearn(io.BytesIO(buf.tobytes()), path)
        finite = bool(np.isfinite(X).all())
    if y.size == 0:
        raise LetorFormatError(f"{path}: empty file: no data lines")
    # Both parsers accept NaN/inf, fractional grades, and sklearn lines without
    # qid when others have one; we do not.
    grades_ok = np.all(np.isfinite(y)) and np.all(y >= 0) and np.all(y == np.round(y))
    if not (grades_ok and q.size in (0, y.size) and finite):
        _raise_malformed(path, "rejected values (NaN/inf, non-integer grade or missing qid)")
    return X, y, q


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


def _parse(
    path: Path,
    group_path: Path | None,
    group_explicit: bool,
    engine: Literal["auto", "sklearn"] = "auto",
) -> LetorDataset:
    """Parse ``path`` (and its group file) into a dataset, before any option."""
    features, y, q = _parse_svmlight(path, engine=engine)
    n_docs = y.size
    has_qid = q.size == n_docs
    perm = None
    if group_path is not None and (group_explicit or not has_qid):
        sizes = _read_group_sizes(group_path)
        if int(sizes.sum()) != n_docs:
            raise LetorFormatError(
                f"{group_path}: group sizes sum to {int(sizes.sum())} "
                f"but {path} has {n_docs} data lines"
            )
        offsets = np.zeros(sizes.size + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        if has_qid:
            _check_groups_match_qids(path, group_path, q, offsets)
            qids = q[offsets[:-1]]
        else:
            qids = np.arange(sizes.size, dtype=np.int64)
    elif has_qid:
        offsets, qids, perm = _group_by_qid(q)
    else:
        first = next(_iter_data_lines(path))[0]
        tried = ", ".join(c.name for c in _group_file_candidates(path))
        raise LetorFormatError(
            f"{path}:{first}: missing qid: no line carries 'qid:' and no group file "
            f"was given or found beside it (looked for {tried})"
        )
    relevance = y.astype(np.int64)
    if perm is not None:
        features, relevance = features[perm], relevance[perm]
    return LetorDataset(
        features=features,
        relevance=relevance,
        qids=qids,
        offsets=offsets,
        source=str(path),
        check_values=False,
    )


# ---------------------------------------------------------------------------
# Cache


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


def _cache_load(entry: Path, key: str) -> LetorDataset | None:
    """The dataset stored in ``entry``, or None when absent or unreadable (then removed)."""
    if not entry.is_dir():
        return None
    try:
        meta = json.loads((entry / "meta.json").read_text())
        if meta["key"] != key or meta["parser_version"] != PARSER_VERSION:
            raise ValueError("stale cache entry")
        arrays = {}
        for name, dtype in _CACHED_ARRAYS.items():
            array = np.load(entry / f"{name}.npy", mmap_mode="r" if meta[name] else None)
            if array.dtype != dtype or list(array.shape) != meta[f"{name}_shape"]:
                raise ValueError(f"cached {name} has the wrong dtype or shape")
            arrays[name] = array
        return LetorDataset(**arrays, source=meta["source"], check_values=False)
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
            "source": dataset.source,
        }
        for name in _CACHED_ARRAYS:
            array = getattr(dataset, name)
            np.save(tmp / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)
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


# ---------------------------------------------------------------------------
# Loading


def _existing_file(path: str | os.PathLike[str], name: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file ({name})")
    if not p.is_file():
        raise ValueError(f"{p}: not a regular file ({name})")
    return p


def load_letor(
    path: str | os.PathLike[str],
    *,
    group_file: str | os.PathLike[str] | None = None,
    n_features: int | None = None,
    normalize: bool = False,
    drop_no_relevant: bool = False,
    cache: bool = True,
    cache_dir: str | os.PathLike[str] | None = None,
) -> LetorDataset:
    """Read a LETOR / SVMlight ranking file into a :class:`LetorDataset`.

    Lines are ``<grade> [qid:<Q>] <i>:<v> ... [# comment]``; plain or gzip
    (recognised by content); LF or CRLF. Feature indices are 1-based (``i:v``
    goes to column ``i - 1``; an index 0 is an error), dense or sparse (missing
    features are 0), increasing along each line. The feature matrix is built
    dense (float64, C-contiguous): LETOR sets are dense or nearly so.

    Lists come from ``qid``: queries are ordered by their first line and a qid
    whose lines are not contiguous is merged into one list, keeping the file's
    line order within it. A file without ``qid`` needs a group file (one list
    size per line, plain or gzip): ``group_file``, or else one found beside the
    file — ``<name>.query``, ``<name>.query.gz``, ``<name>.group``,
    ``<name>.group.gz``, tried for ``<name>`` as given and then with ``.gz``
    stripped (or added) — so LightGBM's ``rank.train`` + ``rank.train.query`` and
    XGBoost's ``.group`` files load as they are. A group file found this way is
    used only when the lines carry no qid; an explicit one always defines the
    lists, and then each list must hold a single qid (qids become each list's
    qid, or 0, 1, ... without qid).

    Parameters
    ----------
    path
        The data file.
    group_file
        List sizes for a file without qid (see above).
    n_features
        Width of the feature matrix (>= 1); default: the largest index in the
        file. A file using a larger index is an error.
    normalize
        Min–max scale each feature within each query ("QueryLevelNorm",
        :func:`normalize_per_query`); constant features become 0.
    drop_no_relevant
        Drop queries whose documents all have grade 0.
    cache
        Keep the parsed result in a binary cache and reuse it.
    cache_dir
        Cache folder; default ``$OLTR_CACHE_DIR``, else ``~/.cache/oltr``.

    Returns
    -------
    LetorDataset
        With ``source`` set to ``path``.

    Raises
    ------
    LetorFormatError
        (a ValueError) for malformed input, as ``file:line: problem``: bad
        tokens, NaN/inf values, non-integer or negative grades, index 0 or
        decreasing indices, missing qid, group sizes that do not add up to the
        number of lines, an empty file.
    FileNotFoundError
        When ``path`` or ``group_file`` does not exist.

    Notes
    -----
    Parsing is compiled: a numba tokeniser reads files in the common grammar
    (plain decimal numbers and indices), converting values exactly (Clinger's
    fast path, else Python's correctly rounded ``strtod``); files with any
    other syntax go to scikit-learn's ``load_svmlight_file``, the reference.
    Both give bit-identical arrays (``-0`` reads as 0).

    The cache holds the *parsed* file (before ``n_features``, ``normalize`` and
    ``drop_no_relevant``, which are cheap array operations applied on every
    load) as ``.npy`` files in ``<cache>/letor-v<PARSER_VERSION>/<key>/``, loaded
    as read-only memory maps. The key is a BLAKE2b digest of the file's raw
    bytes, the group file's bytes and :data:`PARSER_VERSION`, so renaming or
    touching a file keeps its entry and any change of content makes a new one.
    Entries are written to a temporary folder and renamed into place; one that
    cannot be read is deleted and rebuilt. Digests of files unchanged for a
    while are remembered by (device, inode, size, mtime, ctime), see
    ``_file_digest``. Delete the folder to clear the cache.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.txt"
    >>> _ = path.write_text("2 qid:1 1:0.5 3:1 # doc a\\n0 qid:1 2:1\\n1 qid:7 1:1\\n")
    >>> ds = load_letor(path, cache=False)
    >>> ds.qids.tolist(), ds.offsets.tolist(), ds.features.tolist()
    ([1, 7], [0, 2, 3], [[0.5, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    >>> load_letor(path, cache=False, normalize=True).features[:2].tolist()
    [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    path = _existing_file(path, "LETOR file")
    if n_features is not None and (
        isinstance(n_features, bool)
        or not isinstance(n_features, int | np.integer)
        or n_features < 1
    ):
        raise ValueError(f"n_features must be an integer >= 1 or None, got {n_features!r}")
    if group_file is not None:
        group_path: Path | None = _existing_file(group_file, "group file")
    else:
        group_path = _find_group_file(path)
    explicit = group_file is not None

    dataset = None
    if cache:
        root = cache_root(cache_dir)
        key = _cache_key(path, group_path, explicit, root)
        dataset = _cache_load(root / key, key)
    if dataset is None:
        dataset = _parse(path, group_path, explicit)
        if cache:
            try:
                _cache_store(root / key, key, dataset)
            except OSError as exc:
                warnings.warn(f"could not write the LETOR cache in {root}: {exc}", stacklevel=2)
    return _apply_options(
        dataset, path, n_features=n_features, normalize=normalize, drop_no_relevant=drop_no_relevant
    )


def _apply_options(
    dataset: LetorDataset,
    path: Path,
    *,
    n_features: int | None,
    normalize: bool,
    drop_no_relevant: bool,
) -> LetorDataset:
    features = dataset.features
    if n_features is not None and n_features < dataset.n_features:
        _raise_malformed(
            path, f"uses feature indices above n_features={n_features}", n_features=n_features
        )
    if n_features is not None and n_features > dataset.n_features:
        features = np.zeros((dataset.n_docs, n_features))
        features[:, : dataset.n_features] = dataset.features
    dataset = LetorDataset(
        features=features,
        relevance=dataset.relevance,
        qids=dataset.qids,
        offsets=dataset.offsets,
        source=str(path),
        check_values=False,
    )
    if drop_no_relevant:
        keep = np.maximum.reduceat(dataset.relevance, dataset.offsets[:-1]) > 0
        if not keep.any():
            raise ValueError(f"{path}: drop_no_relevant=True leaves no query (every grade is 0)")
        if not keep.all():
            dataset = dataset.subset(np.flatnonzero(keep))
    if normalize:
        dataset = normalize_per_query(dataset)
    return dataset


# ---------------------------------------------------------------------------
# Writing


def write_letor(
    dataset: LetorDataset, path: str | os.PathLike[str], *, precision: int | None = None
) -> None:
    """Write ``dataset`` as LETOR text: ``<grade> qid:<Q> 1:<v> ... d:<v>``, every feature.

    Written to a temporary name beside ``path`` and renamed, so a reader never
    sees half a file; gzip-compressed (with a fixed header, so the bytes
    depend only on the data) when the name ends in ``.gz``.

    Parameters
    ----------
    dataset
        What to write.
    path
        Destination file.
    precision
        Significant digits per value (``%.<precision>g``, >= 1); default None
        writes the shortest text that reads back to the same float64 exactly.
    """
    if precision is not None and (
        isinstance(precision, bool) or not isinstance(precision, int) or precision < 1
    ):
        raise ValueError(f"precision must be an integer >= 1 or None, got {precision!r}")
    path = Path(path)
    value = "%r" if precision is None else f"%.{precision}g"
    line_format = (
        "%d qid:%d" + "".join(f" {j}:{value}" for j in range(1, dataset.n_features + 1)) + "\n"
    )
    qid_rows = np.repeat(dataset.qids, dataset.list_lengths)
    # Not mkstemp: its 0600 mode would stick to the data file; "xb" gets the umask's.
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with open(tmp, "xb") as raw:
            out: BinaryIO | gzip.GzipFile = (
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
                if path.name.endswith(".gz")
                else raw
            )
            with out:
                for lo in range(0, dataset.n_docs, 8192):
                    hi = min(lo + 8192, dataset.n_docs)
                    # tolist() gives Python floats, whose %r is the shortest exact text.
                    rows = zip(
                        dataset.relevance[lo:hi].tolist(),
                        qid_rows[lo:hi].tolist(),
                        dataset.features[lo:hi].tolist(),
                        strict=True,
                    )
                    out.write("".join(line_format % (g, q, *x) for g, q, x in rows).encode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------
# Streams of queries


class QueryStream:
    """A seeded, endless stream of query indices.

    ``order="uniform"`` draws each index uniformly with replacement;
    ``order="epochs"`` makes repeated passes over all queries, each pass in a
    freshly shuffled order (the data set is swept "multiple times", Chaudhuri &
    Tewari 2016 §6). Indices are drawn in blocks from ``rng``, so the stream
    does not depend on how it is consumed: ``take(3)`` then ``take(4)`` gives
    the same seven indices as ``take(7)``; the same seed gives the same stream.

    Parameters
    ----------
    dataset
        The dataset (or its number of queries, >= 1).
    order
        ``"uniform"`` or ``"epochs"``.
    rng
        Seed or Generator (:func:`oltr.random.as_rng`).

    Examples
    --------
    >>> stream = QueryStream(5, order="epochs", rng=0)
    >>> sorted(stream.take(5).tolist())
    [0, 1, 2, 3, 4]
    >>> QueryStream(5, rng=1).take(4).tolist() == QueryStream(5, rng=1).take(4).tolist()
    True
    """

    _UNIFORM_BLOCK = 4096

    def __init__(
        self,
        dataset: LetorDataset | int,
        *,
        order: Literal["uniform", "epochs"] = "uniform",
        rng: RNGLike,
    ) -> None:
        n_queries = dataset.n_queries if isinstance(dataset, LetorDataset) else dataset
        if (
            isinstance(n_queries, bool)
            or not isinstance(n_queries, int | np.integer)
            or n_queries < 1
        ):
            raise ValueError(f"the stream needs at least one query, got n_queries={n_queries!r}")
        if order not in ("uniform", "epochs"):
            raise ValueError(f"order must be 'uniform' or 'epochs', got {order!r}")
        self.n_queries = int(n_queries)
        self.order = order
        self._rng = as_rng(rng)
        self._block = np.empty(0, dtype=np.int64)
        self._position = 0
        self.n_taken = 0

    def _next_block(self) -> NDArray[np.int64]:
        if self.order == "uniform":
            return self._rng.integers(0, self.n_queries, size=self._UNIFORM_BLOCK, dtype=np.int64)
        return self._rng.permutation(self.n_queries).astype(np.int64)

    def take(self, n: int) -> NDArray[np.int64]:
        """The next ``n`` (>= 0) query indices, shape (n,)."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise ValueError(f"n must be an integer >= 0, got {n!r}")
        parts = []
        need = int(n)
        while need:
            if self._position == self._block.size:
                self._block, self._position = self._next_block(), 0
            part = self._block[self._position : self._position + need]
            self._position += part.size
            need -= part.size
            parts.append(part)
        self.n_taken += int(n)
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        # The per-round path of the learning loops: no array building.
        if self._position == self._block.size:
            self._block, self._position = self._next_block(), 0
        self._position += 1
        self.n_taken += 1
        return int(self._block[self._position - 1])


# ---------------------------------------------------------------------------
# Summary


def summarize(dataset: LetorDataset) -> dict[str, Any]:
    """What ``oltr data info`` prints: sizes, grades, list lengths, normalisation.

    Keys: ``source``, ``n_queries``, ``n_docs``, ``n_features``, ``grades``
    (grade -> count, every grade from 0 to the largest), ``list_length``
    (min/median/mean/max), ``zero_relevance_queries`` (queries whose documents
    all have grade 0), ``feature_range`` ([min, max]), ``minmax_fraction``
    (share of (query, feature) pairs not constant within the query whose
    values span exactly [0, 1]) and ``query_normalised`` (all values in [0, 1]
    and that share is 1, as after LETOR's QueryLevelNorm; 1e-6 tolerance for
    values printed with 6 decimals). Plain Python types, ready for JSON.

    >>> ds = LetorDataset(features=np.array([[0.0], [1.0], [0.3]]), relevance=np.array([1, 0, 0]),
    ...                   qids=np.array([1, 2]), offsets=np.array([0, 2, 3]))
    >>> s = summarize(ds)
    >>> s["grades"], s["zero_relevance_queries"], s["query_normalised"]
    ({0: 2, 1: 1}, 1, True)
    """
    X, lengths, starts = dataset.features, dataset.list_lengths, dataset.offsets[:-1]
    grades = np.bincount(dataset.relevance) if dataset.n_docs else np.zeros(0, np.int64)
    best = np.maximum.reduceat(dataset.relevance, starts) if dataset.n_queries else np.zeros(0)
    summary: dict[str, Any] = {
        "source": dataset.source,
        "n_queries": dataset.n_queries,
        "n_docs": dataset.n_docs,
        "n_features": dataset.n_features,
        "grades": {int(g): int(c) for g, c in enumerate(grades)},
        "list_length": {
            "min": int(lengths.min()) if lengths.size else 0,
            "median": float(np.median(lengths)) if lengths.size else 0.0,
            "mean": float(lengths.mean()) if lengths.size else 0.0,
            "max": int(lengths.max()) if lengths.size else 0,
        },
        "zero_relevance_queries": int(np.sum(best == 0)),
    }
    if X.size:
        lo = np.minimum.reduceat(X, starts, axis=0)
        hi = np.maximum.reduceat(X, starts, axis=0)
        varying = hi > lo
        spans_unit = (np.abs(lo) <= 1e-6) & (np.abs(hi - 1) <= 1e-6)
        fraction = float(spans_unit[varying].mean()) if varying.any() else 1.0
        in_unit = bool(lo.min() >= -1e-6 and hi.max() <= 1 + 1e-6)
        summary["feature_range"] = [float(lo.min()), float(hi.max())]
    else:
        fraction, in_unit = 1.0, True
        summary["feature_range"] = None
    summary["minmax_fraction"] = fraction
    summary["query_normalised"] = bool(in_unit and fraction == 1.0)
    return summary


# ---------------------------------------------------------------------------
# The synthetic generator lives in oltr.envs.synthetic (which imports this
# module); it is re-exported lazily to avoid an import cycle.


def __getattr__(name: str) -> Any:
    if name in ("synthetic_letor", "SyntheticLetor"):
        from oltr.envs import synthetic

        return getattr(synthetic, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
