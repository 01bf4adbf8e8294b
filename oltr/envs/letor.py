"""Learning-to-rank data sets in the LETOR / SVMlight format.

One line per (query, document) pair::

    <grade> qid:<Q> <i>:<v> <i>:<v> ... # optional comment

:func:`load_letor` reads such a file (plain or gzip, with or without a group
file) into a :class:`LetorDataset` and applies the options (width, per-query
normalisation, dropping queries without a relevant document). This module also
holds the writer (:func:`write_letor`), a seeded stream of query indices
(:class:`QueryStream`) and the summary behind ``oltr data info``
(:func:`summarize`).

The text parser (a compiled tokeniser with scikit-learn's parser as fallback
and reference) lives in :mod:`oltr.envs.svmlight`, the binary cache of parsed
files in :mod:`oltr.envs.letor_cache`, and the synthetic generator in
:mod:`oltr.envs.synthetic`; their public names (:class:`LetorFormatError`,
:data:`PARSER_VERSION`, :data:`MAX_DENSE_BYTES`, :func:`cache_root`,
:func:`synthetic_letor`) are re-exported here.

References
----------
Qin, T., Liu, T.-Y., Xu, J. & Li, H. (2010). LETOR: A benchmark collection for
research on learning to rank for information retrieval. *Inf. Retr.* 13(4)
(format, QueryLevelNorm). Qin, T. & Liu, T.-Y. (2013). Introducing LETOR 4.0
datasets. arXiv:1306.2597.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import secrets
import warnings
from collections.abc import Iterator
from dataclasses import InitVar, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.envs.letor_cache import _SETTLE_NS as _SETTLE_NS
from oltr.envs.letor_cache import _cache_key, _cache_load, _cache_store, cache_root
from oltr.envs.svmlight import _EXACT_BLOCK as _EXACT_BLOCK
from oltr.envs.svmlight import _PREFIX_BYTES as _PREFIX_BYTES
from oltr.envs.svmlight import _SLOW_CAPACITY as _SLOW_CAPACITY
from oltr.envs.svmlight import (
    MAX_DENSE_BYTES,
    PARSER_VERSION,
    LetorFormatError,
    _check_groups_match_qids,
    _find_group_file,
    _group_by_qid,
    _group_file_candidates,
    _iter_data_lines,
    _parse_svmlight,
    _raise_malformed,
    _read_group_sizes,
)
from oltr.envs.svmlight import _measure as _measure
from oltr.envs.svmlight import _parse_fast as _parse_fast
from oltr.envs.svmlight import _read_buffer as _read_buffer
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
# Parsing into a dataset


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
    Parsing is compiled (:mod:`oltr.envs.svmlight`): a numba tokeniser reads
    files in the common grammar (plain decimal numbers and indices), converting
    values exactly (Clinger's fast path, else Python's correctly rounded
    ``strtod``); files with any other syntax go to scikit-learn's
    ``load_svmlight_file``, the reference. Both give bit-identical arrays
    (``-0`` reads as 0).

    The cache holds the *parsed* file (before ``n_features``, ``normalize`` and
    ``drop_no_relevant``, which are cheap array operations applied on every
    load) as ``.npy`` files in ``<cache>/letor-v<PARSER_VERSION>/<key>/``, loaded
    as read-only memory maps. The key is a BLAKE2b digest of the file's raw
    bytes, the group file's bytes and :data:`PARSER_VERSION`, so renaming or
    touching a file keeps its entry and any change of content makes a new one.
    Entries are written to a temporary folder and renamed into place; one that
    cannot be read is deleted and rebuilt. Digests of files unchanged for a
    while are remembered by (device, inode, size, mtime, ctime), see
    :mod:`oltr.envs.letor_cache`. Delete the folder to clear the cache.

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
        dataset = _cache_load(root / key, key, LetorDataset)
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
