"""Learning-to-rank data sets in the LETOR / SVMlight format.

One line per (query, document) pair::

    <grade> qid:<Q> <i>:<v> <i>:<v> ... # optional comment

:func:`load_letor` reads such a file (plain or gzip, with or without a group
file) into a :class:`LetorDataset` and applies the options (width, per-query
normalisation, dropping queries without a relevant document); :func:`write_letor`
writes one.

The parts live beside it in :mod:`oltr.data`: the text parser (a compiled
tokeniser, :mod:`oltr.data.tokenizer`, with scikit-learn's parser as fallback and
reference, :mod:`oltr.data.svmlight`), the binary cache of parsed files
(:mod:`oltr.data.cache`), the data set (:mod:`oltr.data.dataset`) and the
query stream (:mod:`oltr.data.stream`).

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
import hashlib
import os
import secrets
import warnings
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np

from oltr.data.cache import _cache_key, _cache_load, _cache_store, cache_root
from oltr.data.dataset import LetorDataset, normalize_per_query
from oltr.data.normalization import Normalize, check_normalize, resolve_normalize
from oltr.data.svmlight import (
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
from oltr.data.tokenizer import MAX_DENSE_BYTES, MAX_FEATURE_INDEX
from oltr.errors import InputError

__all__ = ["load_letor", "write_letor"]


# ---------------------------------------------------------------------------
# The dataset


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
    normalize: Normalize = False,
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
        True: min–max scale each feature within each query ("QueryLevelNorm",
        :func:`normalize_per_query`; constant features become 0). False (the
        default here: a reader returns the file's values): keep them.
        ``"auto"``: scale exactly when some value of the file lies outside
        [0, 1], so data already in [0, 1] comes back unchanged
        (:mod:`oltr.data.normalization`; the default of the learning pipeline:
        the ``letor-stream-v1`` environment and ``[heldout]`` tables).
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
        tokens, NaN/inf values, non-integer or negative grades, grades above
        2**53 (:data:`~oltr.data.svmlight.MAX_GRADE`: the text of a larger one
        need not name one integer), index 0 or decreasing indices, a feature
        index above 2**31 - 1, a qid beyond 64 bits, missing qid, group sizes
        that do not add up to the number of lines, an empty file; and, before
        anything is allocated, a dense feature matrix over 16 GiB, or over 2**26
        cells (512 MiB) with more than 256 cells per byte of text — fewer than one
        stored value in 1,024 cells, as a stray index like ``300000000:1`` in a
        30-byte file gives (:func:`oltr.data.tokenizer.check_dense_size`); the
        line named is the first that uses the largest index.
    FileNotFoundError
        When ``path`` or ``group_file`` does not exist.

    Notes
    -----
    Parsing is compiled (:mod:`oltr.data.svmlight`): a numba tokeniser reads
    files in the common grammar (plain decimal numbers and indices), converting
    values exactly (Clinger's fast path, else Python's correctly rounded
    ``strtod``); files with any other syntax go to scikit-learn's
    ``load_svmlight_file``, the reference. Both give bit-identical arrays
    (``-0`` reads as 0).

    The cache holds the *parsed* file (before ``n_features``, ``normalize`` and
    ``drop_no_relevant``, which are cheap array operations applied on every
    load) as ``.npy`` files in ``<cache>/letor-v<PARSER_VERSION>/<key>/``, loaded
    as read-only memory maps. A normalised data set is a new dense matrix as
    large as the data, so it is cached as well, in an entry of its own keyed by
    the parsed file's key and the options: a later ``normalize=True`` load maps
    it rather than holding a private copy in memory. The key is a BLAKE2b digest of the file's raw
    bytes, the group file's bytes and :data:`PARSER_VERSION`, so renaming or
    touching a file keeps its entry and any change of content makes a new one.
    Entries are written to a temporary folder and renamed into place; one that
    cannot be read, or whose arrays no longer match the BLAKE2b digests
    recorded when it was stored (a rewritten ``relevance.npy``), is deleted
    and rebuilt from the file. Digests of files unchanged for a
    while are remembered by (device, inode, size, mtime, ctime), see
    :mod:`oltr.data.cache`. Delete the folder to clear the cache.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = pathlib.Path(folder.name) / "tiny.txt"
    >>> _ = path.write_text("2 qid:1 1:0.5 3:1 # doc a\\n0 qid:1 2:1\\n1 qid:7 1:1\\n")
    >>> ds = load_letor(path, cache=False)
    >>> ds.qids.tolist(), ds.offsets.tolist(), ds.features.tolist()
    ([1, 7], [0, 2, 3], [[0.5, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    >>> load_letor(path, cache=False, normalize=True).features[:2].tolist()
    [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    >>> load_letor(path, cache=False, normalize="auto").features[:2].tolist()  # all in [0, 1]
    [[0.5, 0.0, 1.0], [0.0, 1.0, 0.0]]
    >>> folder.cleanup()
    """
    path = _existing_file(path, "LETOR file")
    if n_features is not None and (
        isinstance(n_features, bool)
        or not isinstance(n_features, int | np.integer)
        or n_features < 1
    ):
        raise ValueError(f"n_features must be an integer >= 1 or None, got {n_features!r}")
    normalize = check_normalize(normalize)
    if group_file is not None:
        group_path: Path | None = _existing_file(group_file, "group file")
    else:
        group_path = _find_group_file(path)
    explicit = group_file is not None

    dataset = None
    if cache:
        root = cache_root(cache_dir)
        key = _cache_key(path, group_path, explicit, root)
        if normalize is not False:
            # Normalising writes a new dense matrix as large as the data: cache it too, so a
            # later load maps it instead of holding a private copy in memory. An "auto" entry
            # exists only where "auto" chose to normalise, a choice fixed by the file's bytes.
            derived = _derived_key(key, n_features, drop_no_relevant, normalize)
            normalized = _cache_load(root / derived, derived, LetorDataset)
            if normalized is not None:
                return _with_source(normalized, path)
        dataset = _cache_load(root / key, key, LetorDataset)
    if dataset is None:
        dataset = _parse(path, group_path, explicit)
        if cache:
            _store(root, key, dataset)
    # Decided on the whole file as parsed, as `oltr data info FILE` reports it.
    apply = resolve_normalize(normalize, dataset.features)
    dataset = _apply_options(
        dataset, path, n_features=n_features, normalize=apply, drop_no_relevant=drop_no_relevant
    )
    if cache and apply:
        _store(root, derived, dataset)
    return dataset


def _store(root: Path, key: str, dataset: LetorDataset) -> None:
    try:
        _cache_store(root / key, key, dataset)
    except OSError as exc:
        warnings.warn(f"could not write the LETOR cache in {root}: {exc}", stacklevel=3)


def _derived_key(
    key: str, n_features: int | None, drop_no_relevant: bool, normalize: Normalize = True
) -> str:
    """Cache key of the normalised data set made from entry ``key`` with these options."""
    # normalize=True keeps the key it always had, so existing entries stay valid.
    mode = "normalize-v1" if normalize is True else "normalize-auto-v1"
    options = f"{key}\n{mode}\nn_features={n_features}\ndrop={bool(drop_no_relevant)}"
    return hashlib.blake2b(options.encode(), digest_size=20).hexdigest()


def _with_source(dataset: LetorDataset, path: Path) -> LetorDataset:
    """``dataset`` (its arrays shared, not copied) with ``source`` set to ``path``."""
    return LetorDataset(
        features=dataset.features,
        relevance=dataset.relevance,
        qids=dataset.qids,
        offsets=dataset.offsets,
        source=str(path),
        check_values=False,
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
        if n_features > MAX_FEATURE_INDEX or dataset.n_docs * n_features * 8 > MAX_DENSE_BYTES:
            raise InputError(
                f"n_features={n_features} would widen {path} to a dense {dataset.n_docs} x "
                f"{n_features} matrix ({dataset.n_docs * n_features * 8 / 2**30:.1f} GiB); "
                f"at most {MAX_FEATURE_INDEX} features and MAX_DENSE_BYTES "
                f"({MAX_DENSE_BYTES / 2**30:.0f} GiB)"
            )
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


# ---------------------------------------------------------------------------
# Summary
