"""A click log bound to the data set that holds its documents' features, and its counts.

:func:`bind` checks that every ``qid`` of the log is a query of the data set and
every document index is one of that query's documents, and maps every shown
document to its row of the data set. :func:`position_counts` sums clicks and
impressions per (document row, position): the sufficient statistics of the
position-based model, from which every propensity estimator and counterfactual
learner of :mod:`oltr.estimators` and :mod:`oltr.learners.counterfactual`
works, so their cost does not grow with the number of sessions. Counts of a
streamed log add up chunk by chunk (:meth:`PositionCounts.add`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.logs.schema import ClickLog, LogFormatError

__all__ = ["BoundLog", "PositionCounts", "bind", "position_counts"]


@dataclass(frozen=True, eq=False)
class BoundLog:
    """A :class:`ClickLog` whose impressions are mapped to a :class:`LetorDataset`.

    Attributes
    ----------
    log, dataset
        The log and the data set it was checked against.
    query_index
        Array (n_impressions,), int64: the data set's query of every impression.
    rows
        Array (log.offsets[-1],), int64: the data set's row of every shown document.
    """

    log: ClickLog
    dataset: LetorDataset
    query_index: NDArray[np.int64]
    rows: NDArray[np.int64]


def _query_index(log: ClickLog, dataset: LetorDataset) -> NDArray[np.int64]:
    known = np.array([str(q) for q in dataset.qids.tolist()])
    order = np.argsort(known, kind="stable")
    sorted_known = known[order]
    where = np.searchsorted(sorted_known, log.qids)
    where = np.minimum(where, sorted_known.size - 1)
    found = sorted_known[where] == log.qids
    if not found.all():
        row = int(np.flatnonzero(~found)[0])
        raise LogFormatError(
            f"qid {str(log.qids[row])!r} is not a query of {dataset.source or 'the data set'}",
            row=row,
            column="qid",
            source=log.source,
        )
    return np.asarray(order[where], dtype=np.int64)


def bind(log: ClickLog, dataset: LetorDataset) -> BoundLog:
    """Check ``log`` against ``dataset`` and map its documents to the data set's rows.

    Raises
    ------
    LogFormatError
        Naming the first row whose qid is unknown, whose document index is not
        one of its query's documents, or whose shown list repeats a document.

    Examples
    --------
    >>> ds = LetorDataset(features=np.eye(3), relevance=np.array([2, 0, 1]),
    ...                   qids=np.array([7, 9]), offsets=np.array([0, 2, 3]))
    >>> bind(ClickLog.from_rows([("9", [0], [1]), ("7", [1, 0], [0, 1])]), ds).rows.tolist()
    [2, 1, 0]
    >>> bind(ClickLog.from_rows([("7", [0, 2], [0, 1])]), ds)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    oltr.logs.schema.LogFormatError: row 0, column 'docs': document index 2 is out of range: ...
    """
    query_index = _query_index(log, dataset)
    entry_query = np.repeat(query_index, log.list_lengths)
    n_docs = np.diff(dataset.offsets)[entry_query]
    out_of_range = log.docs >= n_docs
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        row = int(log.impression_of_entry[i])
        raise LogFormatError(
            f"document index {int(log.docs[i])} is out of range: query {str(log.qids[row])!r}"
            f" has {int(n_docs[i])} documents",
            row=row,
            column="docs",
            source=log.source,
        )
    rows = dataset.offsets[:-1][entry_query] + log.docs
    _refuse_repeats(log, rows)
    return BoundLog(log=log, dataset=dataset, query_index=query_index, rows=rows)


def _refuse_repeats(log: ClickLog, rows: NDArray[np.int64]) -> None:
    # Sorting (impression, row) pairs puts a repeated document next to itself.
    impression = log.impression_of_entry
    order = np.lexsort((rows, impression))
    same = (np.diff(impression[order]) == 0) & (np.diff(rows[order]) == 0)
    if same.any():
        row = int(impression[order][int(np.flatnonzero(same)[0])])
        raise LogFormatError(
            "the shown list repeats a document", row=row, column="docs", source=log.source
        )


@dataclass(eq=False)
class PositionCounts:
    """Clicks and impressions per (document row, position), optionally per logger.

    Attributes
    ----------
    clicks, shown
        Float arrays of shape (n_docs, K), or (L, n_docs, K) when counted per
        logger: ``shown[..., r, k]`` impressions that showed row ``r`` at
        0-based position ``k``, ``clicks[..., r, k]`` how many of them clicked it.
    logger_names
        The loggers of the first axis (per-logger counts), else None.
    """

    clicks: NDArray[np.float64]
    shown: NDArray[np.float64]
    logger_names: tuple[str, ...] | None = None

    @property
    def n_positions(self) -> int:
        """K, the number of positions counted."""
        return int(self.clicks.shape[-1])

    def add(self, other: PositionCounts) -> None:
        """Add ``other``'s counts (another chunk of the same log) in place."""
        if other.clicks.shape != self.clicks.shape or other.logger_names != self.logger_names:
            raise ValueError("counts of different shapes or loggers cannot be added")
        self.clicks += other.clicks
        self.shown += other.shown

    def total(self) -> PositionCounts:
        """The counts summed over loggers (the counts themselves when not per logger)."""
        if self.logger_names is None:
            return self
        return PositionCounts(self.clicks.sum(axis=0), self.shown.sum(axis=0))


def position_counts(
    bound: BoundLog,
    n_positions: int | None = None,
    *,
    by_logger: bool = False,
    logger_names: Sequence[str] | None = None,
) -> PositionCounts:
    """Sum clicks and impressions per (row, position) of ``bound`` (positions >= K ignored).

    Parameters
    ----------
    bound
        The bound log.
    n_positions
        K; default the longest shown list.
    by_logger
        Count per logger (the log must have a ``logger`` column).
    logger_names
        The loggers to count, in this order (default: the log's, sorted);
        a logger outside the list is an error. Give it to add chunks of a stream.

    Examples
    --------
    >>> ds = LetorDataset(features=np.eye(3), relevance=np.array([2, 0, 1]),
    ...                   qids=np.array([7, 9]), offsets=np.array([0, 2, 3]))
    >>> log = ClickLog.from_rows([("7", [1, 0], [0, 1]), ("7", [0, 1], [1, 0])])
    >>> c = position_counts(bind(log, ds))
    >>> c.shown.tolist(), c.clicks.tolist()
    ([[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]], [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])
    """
    log = bound.log
    k = int(log.list_lengths.max()) if n_positions is None else int(n_positions)
    if k < 1:
        raise ValueError(f"n_positions must be >= 1, got {n_positions}")
    n_docs = bound.dataset.n_docs
    positions = log.positions
    keep = positions < k
    flat = bound.rows[keep] * k + positions[keep]
    clicks = log.clicks[keep].astype(np.float64)
    if not by_logger:
        size = n_docs * k
        return PositionCounts(
            np.bincount(flat, weights=clicks, minlength=size).astype(np.float64).reshape(n_docs, k),
            np.bincount(flat, minlength=size).astype(np.float64).reshape(n_docs, k),
        )
    if log.loggers is None:
        raise LogFormatError(
            "counting per logger needs a 'logger' column", column="logger", source=log.source
        )
    names, logger_of = _logger_indices(log, logger_names)
    flat = np.repeat(logger_of, log.list_lengths)[keep] * (n_docs * k) + flat
    size = len(names) * n_docs * k
    shape = (len(names), n_docs, k)
    return PositionCounts(
        np.bincount(flat, weights=clicks, minlength=size).astype(np.float64).reshape(shape),
        np.bincount(flat, minlength=size).astype(np.float64).reshape(shape),
        names,
    )


def _logger_indices(
    log: ClickLog, logger_names: Sequence[str] | None
) -> tuple[tuple[str, ...], NDArray[np.int64]]:
    """The loggers counted (sorted, or as given) and each impression's index among them."""
    assert log.loggers is not None
    if logger_names is None:
        names_array, logger_of = np.unique(log.loggers, return_inverse=True)
        return tuple(str(name) for name in names_array.tolist()), logger_of.astype(np.int64)
    names = tuple(logger_names)
    known = np.array(names, dtype=str)
    order = np.argsort(known, kind="stable")
    where = np.minimum(np.searchsorted(known[order], log.loggers), len(names) - 1)
    found = known[order][where] == log.loggers
    if not found.all():
        row = int(np.flatnonzero(~found)[0])
        raise LogFormatError(
            f"logger {str(log.loggers[row])!r} is not one of {names}",
            row=row,
            column="logger",
            source=log.source,
        )
    return names, order[where].astype(np.int64)
