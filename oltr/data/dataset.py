"""A learning-to-rank data set in memory: queries, their documents' features and grades.

:class:`LetorDataset` holds what :func:`oltr.data.load_letor` reads (or the
synthetic generator makes); :func:`normalize_per_query` is LETOR's
QueryLevelNorm and :func:`summarize` the statistics behind ``oltr data info``.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["LetorDataset", "normalize_per_query", "summarize"]


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
