"""The compiled SVMlight tokeniser: the fast path of the SVMlight parser.

sklearn's parser, though compiled, converts every token through Python objects
and runs barely faster than a plain Python loop (see benchmarks/bench_letor.py),
so files in the common grammar (decimal numbers, plain indices) are tokenised
by the numba loop here; anything outside it goes back to sklearn
(:mod:`oltr.data.svmlight`), whose acceptance (Python's int/float syntax)
stays the reference.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from oltr.errors import DataFormatError
from oltr.kernels import njit

__all__ = ["MAX_DENSE_BYTES", "MAX_FEATURE_INDEX", "SPARSE_CELLS", "SPARSE_CELLS_PER_BYTE"]

#: Largest dense feature matrix :func:`~oltr.data.letor.load_letor` builds
#: (bytes), however dense the file.
MAX_DENSE_BYTES = 16 * 2**30

#: Largest feature index accepted: scikit-learn's parser (the reference)
#: stores column indices as 32-bit integers.
MAX_FEATURE_INDEX = 2**31 - 1

#: A dense matrix of more cells than this (512 MiB of float64) ...
SPARSE_CELLS = 2**26

#: ... is refused when it also has more cells than this per byte of text.
#: Every stored value takes at least 4 bytes (``i:v`` and a separator), so such
#: a matrix would be at least 1,023 parts in 1,024 zeros: almost always one
#: stray feature index, and a dense matrix the data do not justify.
SPARSE_CELLS_PER_BYTE = 256


class DenseSizeError(DataFormatError):
    """The dense feature matrix a file asks for is refused; ``largest_index`` caused it.

    Raised before anything is allocated; :mod:`oltr.data.svmlight` adds the
    file and the line that uses ``largest_index``.
    """

    def __init__(self, message: str, largest_index: int) -> None:
        super().__init__(message)
        self.largest_index = largest_index


# Whitespace is space, tab and CR (so CRLF ends a line like LF); byte codes:
_NEWLINE, _HASH, _COLON, _DOT, _PLUS, _MINUS = 10, 35, 58, 46, 43, 45


#: 10**k for k = 0..22: every one is exact in binary64.
_POW10 = np.array([10.0**k for k in range(23)])


@njit
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


@njit
def _ends_token(buf: NDArray[np.uint8], j: int, n: int) -> bool:
    if j >= n:
        return True
    c = buf[j]
    return bool(c == 32 or c == 9 or c == 13 or c == _NEWLINE or c == _HASH)


#: Status codes of :func:`_tokenize`.
_OK, _OUTSIDE_GRAMMAR, _TOO_SMALL = 0, 1, 2


@njit
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
    buf: NDArray[np.uint8],
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
    check_dense_size(prefix_rows, width, cut)
    rows_bound = prefix_rows if cut == buf.size else int(1.5 * prefix_rows * buf.size / cut) + 64
    if rows_bound * width * 8 > MAX_DENSE_BYTES:
        rows_bound = 0  # too generous a guess: measure the whole file first
    X = np.zeros((rows_bound, width))
    grades = np.empty(rows_bound)
    qids = np.empty(rows_bound, dtype=np.int64)
    slow = np.empty((_SLOW_CAPACITY, 4), dtype=np.int64)
    status, rows, largest, with_qid, n_slow = _tokenize(buf, True, X, grades, qids, slow)
    if status == _TOO_SMALL:
        status, rows, largest, with_qid, n_slow = _measure(buf)
        if status == _OK:
            check_dense_size(rows, largest, buf.size)
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


def check_dense_size(n_docs: int, largest_index: int, n_bytes: int) -> None:
    """Refuse a dense ``n_docs x largest_index`` matrix parsed from ``n_bytes`` of text.

    The rule, checked before anything is allocated:

    - a feature index above :data:`MAX_FEATURE_INDEX` (2**31 - 1) is refused;
    - a matrix over :data:`MAX_DENSE_BYTES` (16 GiB) is refused, however dense;
    - a matrix over :data:`SPARSE_CELLS` cells (512 MiB) that also has more than
      :data:`SPARSE_CELLS_PER_BYTE` (256) cells per byte of (decompressed) text is
      refused: the text cannot hold more than one value in 1,024 of its cells,
      so a stray feature index (``3e8`` in a 30-byte file) would turn a tiny
      file into gigabytes of zeros.

    Raises
    ------
    DenseSizeError
        Naming the size and the feature index that caused it.

    >>> check_dense_size(10, 46, 4000)
    >>> check_dense_size(1, 300_000_000, 30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    oltr.data.tokenizer.DenseSizeError: feature index 300000000 asks for a dense 1 x 300000000 ...
    """
    if largest_index > MAX_FEATURE_INDEX:
        raise DenseSizeError(
            f"feature index {largest_index} is too large (at most {MAX_FEATURE_INDEX})",
            largest_index,
        )
    cells = n_docs * largest_index
    size = f"a dense {n_docs} x {largest_index} feature matrix ({cells * 8 / 2**30:.1f} GiB)"
    if cells * 8 > MAX_DENSE_BYTES:
        raise DenseSizeError(
            f"feature index {largest_index} asks for {size}, over MAX_DENSE_BYTES "
            f"({MAX_DENSE_BYTES / 2**30:.0f} GiB); is it right?",
            largest_index,
        )
    if cells > SPARSE_CELLS and cells > SPARSE_CELLS_PER_BYTE * max(n_bytes, 1):
        raise DenseSizeError(
            f"feature index {largest_index} asks for {size} from {n_bytes} bytes of text, "
            f"at least 1,023 zeros in every 1,024 cells; is it right?",
            largest_index,
        )
