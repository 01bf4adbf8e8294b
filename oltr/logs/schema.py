"""The click-log schema, version 1: one impression per row, held as columns.

A click log is what a ranking system records: for every impression, the query,
the list it showed (top first) and which of those positions were clicked,
optionally which ranker showed it and the probability the (stochastic) ranker
had of showing exactly that list. :class:`ClickLog` holds a log in memory as
flat columns (a ragged ``docs``/``clicks`` pair with ``offsets``), so a log of
10^6 impressions of 10 documents costs about 100 MB and every estimator works
on whole arrays.

=============  =================  ==============================================
column         type               meaning
=============  =================  ==============================================
``qid``        string             query id, as in the LETOR data file
``docs``       list of int        the shown list, top first: 0-based index of the
                                  document among its query's documents, in file
                                  order
``clicks``     list of 0/1        same length as ``docs``
``logger``     string, optional   which ranker showed the list
``propensity`` float, optional    probability of the shown list under a
                                  stochastic logger, in (0, 1]
=============  =================  ==============================================

Structure and values are checked when a log is built; that the qids and
document indices exist in a data set is checked when the log is bound to one
(:func:`oltr.logs.bind`). Every problem raises :class:`LogFormatError`, which
names the row (0-based impression number, the line number minus one in a JSON
Lines file) and the column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import DataFormatError

__all__ = ["COLUMNS", "SCHEMA_VERSION", "ClickLog", "LogFormatError"]

#: The version of the click-log schema this module reads and writes.
SCHEMA_VERSION = 1
#: The schema's columns, required first.
COLUMNS = ("qid", "docs", "clicks", "logger", "propensity")


class LogFormatError(DataFormatError):
    """A click log that breaks the schema: names the file, row and column."""

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        column: str | None = None,
        source: str | None = None,
    ) -> None:
        where = []
        if source is not None:
            where.append(str(source))
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.row = row
        self.column = column
        self.source = source


def _first_bad(mask: NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True, eq=False)
class ClickLog:
    """A click log in memory, as columns (schema version :data:`SCHEMA_VERSION`).

    Impression ``i`` showed ``docs[offsets[i]:offsets[i+1]]`` (top first) for
    query ``qids[i]`` and got ``clicks`` over the same slice.

    Parameters
    ----------
    qids
        Array of shape (n,), str: the query of every impression.
    offsets
        Array of shape (n + 1,), int64, starting at 0 and strictly increasing:
        an impression shows at least one document.
    docs
        Array of shape (offsets[-1],), int64 >= 0: document indices within the query.
    clicks
        Array of shape (offsets[-1],), int8 in {0, 1}.
    loggers
        Array of shape (n,), str, or None when the log does not say.
    propensities
        Array of shape (n,), float64 in (0, 1], or None.
    source
        Where the log came from (a path), used in error messages.

    Examples
    --------
    >>> log = ClickLog.from_rows([("7", [2, 0, 1], [0, 1, 0]), ("9", [0], [1])])
    >>> log.n_impressions, log.list_lengths.tolist(), log.positions.tolist()
    (2, [3, 1], [0, 1, 2, 0])
    """

    qids: NDArray[np.str_]
    offsets: NDArray[np.int64]
    docs: NDArray[np.int64]
    clicks: NDArray[np.int8]
    loggers: NDArray[np.str_] | None = None
    propensities: NDArray[np.float64] | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        for name, dtype in (("offsets", np.int64), ("docs", np.int64), ("clicks", np.int8)):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=dtype))
        object.__setattr__(self, "qids", np.asarray(self.qids, dtype=str))
        if self.loggers is not None:
            object.__setattr__(self, "loggers", np.asarray(self.loggers, dtype=str))
        if self.propensities is not None:
            object.__setattr__(self, "propensities", np.asarray(self.propensities, dtype=float))
        self._check_structure()
        self._check_values()

    def _error(self, message: str, row: int | None, column: str) -> LogFormatError:
        return LogFormatError(message, row=row, column=column, source=self.source)

    def _check_structure(self) -> None:
        offsets = np.asarray(self.offsets)
        if offsets.ndim != 1 or offsets.size == 0 or offsets[0] != 0:
            raise self._error("offsets must be 1-D and start at 0", None, "docs")
        n = offsets.size - 1
        if n == 0:
            raise self._error("the log has no impression", None, "qid")
        lengths = np.diff(offsets)
        if np.any(lengths <= 0):
            raise self._error("the shown list is empty", _first_bad(lengths <= 0), "docs")
        for name in ("docs", "clicks"):
            if np.asarray(getattr(self, name)).shape != (int(offsets[-1]),):
                raise self._error(f"{name} must have one entry per shown document", None, name)
        if np.asarray(self.qids).shape != (n,):
            raise self._error("one qid per impression is required", None, "qid")
        for name, column in (("loggers", "logger"), ("propensities", "propensity")):
            value = getattr(self, name)
            if value is not None and np.asarray(value).shape != (n,):
                raise self._error(f"one {column} per impression is required", None, column)

    def _check_values(self) -> None:
        rows = self.impression_of_entry
        bad_doc = self.docs < 0
        if bad_doc.any():
            raise self._error("document index must be >= 0", int(rows[_first_bad(bad_doc)]), "docs")
        bad_click = (self.clicks != 0) & (self.clicks != 1)
        if bad_click.any():
            raise self._error("clicks must be 0 or 1", int(rows[_first_bad(bad_click)]), "clicks")
        p = self.propensities
        if p is not None:
            bad = ~(np.isfinite(p) & (p > 0) & (p <= 1))
            if bad.any():
                i = _first_bad(bad)
                raise self._error(f"propensity must be in (0, 1], got {p[i]!r}", i, "propensity")

    @classmethod
    def from_rows(
        cls,
        rows: list[tuple[str, ArrayLike, ArrayLike]],
        *,
        loggers: list[str] | None = None,
        propensities: ArrayLike | None = None,
        source: str | None = None,
    ) -> ClickLog:
        """A log from ``(qid, docs, clicks)`` triples (small logs, tests, examples)."""
        lengths = [len(np.atleast_1d(docs)) for _, docs, _ in rows]
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        docs = np.concatenate([np.atleast_1d(d) for _, d, _ in rows]) if rows else np.zeros(0)
        clicks = np.concatenate([np.atleast_1d(c) for _, _, c in rows]) if rows else np.zeros(0)
        return cls(
            qids=np.array([str(q) for q, _, _ in rows], dtype=str),
            offsets=offsets,
            docs=np.asarray(docs, dtype=np.int64),
            clicks=np.asarray(clicks, dtype=np.int8),
            loggers=None if loggers is None else np.array(loggers, dtype=str),
            propensities=None if propensities is None else np.asarray(propensities, dtype=float),
            source=source,
        )

    @property
    def n_impressions(self) -> int:
        """Number of impressions (rows)."""
        return int(self.offsets.size - 1)

    @property
    def list_lengths(self) -> NDArray[np.int64]:
        """Length of every shown list, shape (n,)."""
        return np.diff(self.offsets)

    @property
    def impression_of_entry(self) -> NDArray[np.int64]:
        """The impression (row) of every entry of ``docs``/``clicks``, shape (offsets[-1],)."""
        return np.repeat(np.arange(self.n_impressions, dtype=np.int64), self.list_lengths)

    @property
    def positions(self) -> NDArray[np.int64]:
        """The 0-based position of every entry of ``docs``/``clicks`` in its list."""
        return np.arange(self.offsets[-1], dtype=np.int64) - np.repeat(
            self.offsets[:-1], self.list_lengths
        )

    def impression(self, i: int) -> tuple[str, NDArray[np.int64], NDArray[np.int8]]:
        """``(qid, docs, clicks)`` of impression ``i``."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return str(self.qids[i]), self.docs[lo:hi], self.clicks[lo:hi]

    def take(self, rows: ArrayLike) -> ClickLog:
        """The impressions ``rows`` (indices or a boolean mask), in that order."""
        idx = np.arange(self.n_impressions)[np.asarray(rows)]
        lengths = self.list_lengths[idx]
        starts = self.offsets[:-1][idx]
        entries = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        entries = entries + np.arange(int(lengths.sum()))
        return ClickLog(
            qids=self.qids[idx],
            offsets=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
            docs=self.docs[entries],
            clicks=self.clicks[entries],
            loggers=None if self.loggers is None else self.loggers[idx],
            propensities=None if self.propensities is None else self.propensities[idx],
            source=self.source,
        )
