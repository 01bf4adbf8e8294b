"""What a served ranker has done, read from the store: the numbers behind ``/ui``.

Per ranker: its rounds and impressions, the impressions per second over a
recent window, what its feedback revealed at each shown position, and an
online quality curve, the mean of one measure over consecutive buckets of
``bucket`` feedback rounds. The feedback kind decides what is counted
(:data:`SIGNALS`):

========  ===================================  ==================================================
kind      by position                          quality per feedback round
========  ===================================  ==================================================
top-k,    revealed labels above 0 (relevant)   revealed DCG, ``Σ_j (2^{l_j} − 1) / log2(1 + j)``
full                                           over the revealed labels ``l_1, l_2, …``
choice    chosen items (at their position)     chosen DCG, ``Σ_{chosen} 1 / log2(1 + position)``
duel      clicks on the interleaved list       clicks per round
clicks    clicks on the result page            clicks per round
========  ===================================  ==================================================

DCG is Järvelin & Kekäläinen's (2002, "Cumulated gain-based evaluation of IR
techniques", ACM TOIS 20(4), §2.2: the gain discounted by ``log2`` of the
position) with the exponential gain ``2^g − 1`` of Burges et al. (2005, "Learning
to rank using gradient descent", ICML, §6), the reward ``oltr replay`` estimates
(:func:`oltr.serve.replay.dcg`); a choice counts each chosen item as gain 1. A
round is a feedback event: impressions that expired without feedback are not
in the curve. A measure whose sum overflows float64 (grades of 1024 and more) is
reported as null.

Reading is bounded per request: the feedback events are tallied
incrementally (SQL aggregation over ``events`` joined to ``impressions`` where
the position of a chosen item or the length of the shown list is needed), at
most :data:`CHUNK_CELLS` list positions' worth per request, and the running
tally is cached per ranker and bucket size; a tally that has not reached the
latest event says so (``caught_up``: false) and goes on at the next request.
The rate counts the impressions created in the window through the index on
``(ranker, status, created)``. Reads use their own read-only SQLite connection
(a WAL reader, which neither waits for the writer nor holds it up).
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from oltr.metrics.lists import log2_discount
from oltr.serve.clickfeedback import page_length
from oltr.serve.rankers import Ranker
from oltr.serve.storecheck import read_only_uri

__all__ = [
    "CHUNK_CELLS",
    "CHUNK_EVENTS",
    "MAX_POSITIONS",
    "SIGNALS",
    "PositionCounts",
    "QualityCurve",
    "QualityPoint",
    "RankerStats",
    "RankerSummary",
    "ServeStats",
    "StatsOverview",
]

#: Positions counted one by one; the feedback at later positions is summed in ``beyond``.
MAX_POSITIONS = 100
#: List positions (events × positions each reads) tallied per request at most (about 0.25 s
#: of SQLite's JSON reading), and events at most.
CHUNK_CELLS = 500_000
CHUNK_EVENTS = 10_000
#: Buckets a tally keeps (the curve's latest), and tallies the cache keeps.
_KEEP_BUCKETS = 10_000
_CACHED = 64

#: Per feedback kind: what is counted by position, and the quality measure of a round.
SIGNALS: dict[str, tuple[str, str]] = {
    "topk": ("relevant labels", "revealed DCG"),
    "full": ("relevant labels", "revealed DCG"),
    "choice": ("chosen items", "chosen DCG"),
    "duel": ("clicks", "clicks per round"),
    "clicks": ("clicks", "clicks per round"),
}


class PositionCounts(BaseModel):
    """What the feedback revealed at each shown position (0 is the top)."""

    signal: str | None = Field(
        description="what is counted: 'relevant labels' (a revealed label above 0), "
        "'chosen items' or 'clicks'; null when the feedback kind reveals none"
    )
    counts: list[int] = Field(
        description="per position from the top, up to the deepest position feedback reached "
        f"(at most {MAX_POSITIONS})"
    )
    beyond: int = Field(description=f"the count at positions {MAX_POSITIONS} and deeper")
    rounds: int = Field(description="feedback rounds counted")


class QualityPoint(BaseModel):
    """The mean quality of one bucket of consecutive feedback rounds."""

    round: int = Field(description="the last feedback round of the bucket (1-based)")
    value: float | None = Field(description="mean per round; null when it overflows float64")
    n: int = Field(description="rounds in the bucket (the latest may be partly filled)")


class QualityCurve(BaseModel):
    """The online quality curve: the measure's mean per bucket of rounds, oldest first."""

    measure: str | None = Field(
        description="'revealed DCG' (labels), 'chosen DCG' (choice), 'clicks per round' "
        "(duels); null when the feedback kind reveals none"
    )
    bucket: int = Field(description="feedback rounds per point")
    points: list[QualityPoint]


class RankerStats(BaseModel):
    """``GET /rankers/{name}/stats``: what a ranker has done, from the store."""

    name: str
    feedback: str = Field(description="the feedback kind: topk, full, choice, duel, none, ...")
    time: float = Field(description="server time of the reading (seconds since the epoch)")
    rounds: int = Field(description="feedback rounds the learner has learned from")
    impressions: int = Field(description="lists ranked")
    pending: int = Field(description="impressions waiting for their feedback")
    expired: int = Field(description="impressions that expired without feedback")
    feedback_events: int = Field(description="feedback events tallied in by_position and quality")
    caught_up: bool = Field(description="whether the tally reached the latest logged event")
    window: float = Field(description="seconds of the rate's window")
    impressions_per_second: float = Field(description="impressions created in the window / window")
    by_position: PositionCounts
    quality: QualityCurve
    comparison: dict[str, Any] | None = Field(
        default=None, description="a live comparison of a candidate against this ranker (none yet)"
    )
    rollout: list[dict[str, Any]] = Field(
        default_factory=list, description="the rollout history of this ranker (none yet)"
    )


class RankerSummary(BaseModel):
    """One ranker in ``GET /stats``."""

    name: str
    learner: str
    feedback: str
    rounds: int
    impressions: int
    impressions_per_second: float


class StatsOverview(BaseModel):
    """``GET /stats``: every ranker's counters and rate, by name."""

    time: float
    window: float
    rankers: list[RankerSummary]


@dataclass
class _Tally:
    """The running tally of one ranker's feedback events, for one bucket size."""

    owner: Ranker  # the ranker object it counts for: a ranker made anew starts a new tally
    bucket: int
    last_seq: int = 0
    rounds: int = 0
    span: int = 0  # the deepest position feedback reached, + 1
    counts: np.ndarray[Any, Any] = field(default_factory=lambda: np.zeros(MAX_POSITIONS + 1))
    sums: dict[int, float] = field(default_factory=dict)  # bucket index -> sum of the measure


_CHUNK = (
    "WITH r AS (SELECT seq, impression, payload, ROW_NUMBER() OVER (ORDER BY seq) AS rn "
    "FROM events WHERE ranker = :ranker AND kind = 'feedback' AND seq > :lo AND seq <= :hi) "
)
_BUCKET = "(:offset + r.rn - 1) / :bucket AS b"
#: Per feedback kind: rows (bucket, position, label, rounds) of the chunk's feedback events.
_GROUPS = {
    "labels": f"{_CHUNK} SELECT {_BUCKET}, CAST(j.key AS INTEGER) AS pos, j.value AS label, "
    "COUNT(*) AS n FROM r, json_each(r.payload, '$.labels') AS j GROUP BY b, pos, label",
    "clicks": f"{_CHUNK} SELECT {_BUCKET}, j.value AS pos, 1.0 AS label, COUNT(*) AS n "
    "FROM r, json_each(r.payload, '$.clicks') AS j GROUP BY b, pos",
    # A chosen item's position: where it stands in the shown list of its impression.
    "choice": f"{_CHUNK} SELECT {_BUCKET}, s.key AS pos, 1.0 AS label, COUNT(*) AS n "
    "FROM r JOIN impressions AS i ON i.ranker = :ranker AND i.id = r.impression, "
    "json_each(r.payload, '$.chosen') AS c, json_each(i.shown) AS s "
    "WHERE s.value = c.value GROUP BY b, pos",
}
_ROUNDS = f"{_CHUNK} SELECT COUNT(*) FROM r"
_SHOWN = (
    f"{_CHUNK} SELECT MAX(json_array_length(i.shown)) FROM r JOIN impressions AS i "
    "ON i.ranker = :ranker AND i.id = r.impression"
)
_SOURCE = {
    "topk": "labels",
    "full": "labels",
    "choice": "choice",
    "duel": "clicks",
    "clicks": "clicks",
}


def _since(db: sqlite3.Connection, ranker: str, after: float) -> int:
    """Impressions of ``ranker`` created after ``after``: one index range per status."""
    total = 0
    for status in ("pending", "done", "expired"):
        row = db.execute(
            "SELECT COUNT(*) FROM impressions WHERE ranker = ? AND status = ? AND created >= ?",
            (ranker, status, after),
        ).fetchone()
        total += int(row[0])
    return total


def _status_count(db: sqlite3.Connection, ranker: str, status: str) -> int:
    row = db.execute(
        "SELECT COUNT(*) FROM impressions WHERE ranker = ? AND status = ?", (ranker, status)
    ).fetchone()
    return int(row[0])


def _chunk_end(db: sqlite3.Connection, ranker: str, after: int, events: int) -> int:
    """The seq of the ``events``-th event of ``ranker`` after seq ``after`` (or the last one)."""
    row = db.execute(
        "SELECT seq FROM events WHERE ranker = ? AND seq > ? ORDER BY seq LIMIT 1 OFFSET ?",
        (ranker, after, events - 1),
    ).fetchone()
    if row is None:
        row = db.execute("SELECT MAX(seq) FROM events WHERE ranker = ?", (ranker,)).fetchone()
    return int(row[0] or after)


def _terms(kind: str, pos: np.ndarray[Any, Any], label: np.ndarray[Any, Any]) -> Any:
    """One feedback entry's contribution to its round's quality (see the module docstring)."""
    if kind in ("duel", "clicks"):
        return np.ones(pos.shape)
    discount = log2_discount(pos + 1.0)  # positions from 1
    if kind == "choice":
        return discount
    with np.errstate(over="ignore"):  # 2^g of a grade of 1024 or more: inf, reported as null
        return (np.exp2(label) - 1.0) * discount


def _width(ranker: Ranker, kind: str) -> int:
    """List positions a feedback event of ``ranker`` makes the tally read (at most)."""
    items = ranker.definition.n_items or MAX_POSITIONS  # a feature list's length: a guess
    k = ranker.model.provides.k
    if kind == "topk" and k is not None:
        return max(1, min(int(k), items))  # the labels only
    return max(1, items)  # the shown list (choices, duels) or a label per item (full)


class ServeStats:
    """The numbers of ``/ui`` for the rankers of one store (see the module docstring).

    Parameters
    ----------
    store
        Path of the service's SQLite store (read through a read-only connection).
    """

    def __init__(self, store: str) -> None:
        self.path = store
        self._lock = threading.Lock()
        self._tallies: OrderedDict[tuple[str, int], _Tally] = OrderedDict()

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(read_only_uri(self.path), uri=True, isolation_level=None)
        db.execute("PRAGMA busy_timeout=10000")
        return db

    def overview(self, rankers: Iterable[Ranker], window: float) -> StatsOverview:
        """Every ranker's counters and impressions per second over the last ``window`` s."""
        now = time.time()
        out = []
        with closing(self._connect()) as db:
            for r in rankers:
                rate = _since(db, r.name, now - window) / window
                out.append(
                    RankerSummary(
                        name=r.name,
                        learner=r.definition.learner,
                        feedback=r.model.provides.kind,
                        rounds=r.rounds,
                        impressions=r.t,
                        impressions_per_second=rate,
                    )
                )
        return StatsOverview(time=now, window=window, rankers=out)

    def ranker(self, ranker: Ranker, *, window: float, bucket: int, points: int) -> RankerStats:
        """The statistics of ``ranker``: rate over ``window`` s, the latest ``points`` points
        of its quality curve in buckets of ``bucket`` feedback rounds."""
        kind = ranker.model.provides.kind
        rounds, impressions = ranker.rounds, ranker.t  # read before the store: never behind it
        now = time.time()
        with closing(self._connect()) as db:
            db.execute("BEGIN")  # one snapshot of the store for every number
            rate = _since(db, ranker.name, now - window) / window
            pending = _status_count(db, ranker.name, "pending")
            expired = _status_count(db, ranker.name, "expired")
            with self._lock:
                tally = self._tally(ranker, bucket)
                caught_up = self._advance(db, tally, kind)
                curve, counts = self._curve(tally, points), tally.counts.copy()
                span, tallied = tally.span, tally.rounds
            db.execute("COMMIT")
        signal, measure = SIGNALS.get(kind, (None, None))
        shown = min(span, MAX_POSITIONS)
        return RankerStats(
            name=ranker.name,
            feedback=kind,
            time=now,
            rounds=rounds,
            impressions=impressions,
            pending=pending,
            expired=expired,
            feedback_events=tallied,
            caught_up=caught_up,
            window=window,
            impressions_per_second=rate,
            by_position=PositionCounts(
                signal=signal,
                counts=[int(c) for c in counts[:shown]],
                beyond=int(counts[MAX_POSITIONS]),
                rounds=tallied,
            ),
            quality=QualityCurve(measure=measure, bucket=bucket, points=curve),
        )

    def _tally(self, ranker: Ranker, bucket: int) -> _Tally:
        key = (ranker.name, bucket)
        tally = self._tallies.get(key)
        if tally is None or tally.owner is not ranker:
            tally = _Tally(owner=ranker, bucket=bucket)
            for gone in [k for k, t in self._tallies.items() if t.owner.deleted]:
                del self._tallies[gone]  # nor hold on to a deleted ranker's learner
        self._tallies[key] = tally
        self._tallies.move_to_end(key)
        while len(self._tallies) > _CACHED:
            self._tallies.popitem(last=False)
        return tally

    def _advance(self, db: sqlite3.Connection, tally: _Tally, kind: str) -> bool:
        """Tally the events after ``tally.last_seq``, a bounded chunk; whether all are in."""
        name = tally.owner.name
        width = _width(tally.owner, kind)
        events = max(1, min(CHUNK_EVENTS, CHUNK_CELLS // width))
        hi = _chunk_end(db, name, tally.last_seq, events)
        if hi <= tally.last_seq:
            return True
        args = {
            "ranker": name,
            "lo": tally.last_seq,
            "hi": hi,
            "offset": tally.rounds,
            "bucket": tally.bucket,
        }
        new = int(db.execute(_ROUNDS, args).fetchone()[0])
        source = _SOURCE.get(kind)
        if new and source is not None:
            rows = db.execute(_GROUPS[source], args).fetchall()
            self._add(tally, kind, rows)
            if source == "labels":
                span = max((int(r[1]) + 1 for r in rows), default=0)
            else:  # clicks and choices may fall anywhere in the shown list (or page)
                span = int(db.execute(_SHOWN, args).fetchone()[0] or 0)
                if kind == "clicks":  # the result page: the first min(k, m) shown
                    span = page_length(tally.owner.model, span)
            tally.span = max(tally.span, span)
        tally.rounds += new
        tally.last_seq = hi
        keep_from = (tally.rounds - 1) // tally.bucket - _KEEP_BUCKETS
        for b in [b for b in tally.sums if b <= keep_from]:
            del tally.sums[b]
        last = db.execute("SELECT MAX(seq) FROM events WHERE ranker = ?", (name,)).fetchone()[0]
        return hi >= int(last or 0)

    @staticmethod
    def _add(tally: _Tally, kind: str, rows: list[Any]) -> None:
        if not rows:
            return
        data = np.array([(r[0], r[1], r[2], r[3]) for r in rows], dtype=np.float64)
        b, pos, label, n = data.T
        hits = n * (label > 0)
        np.add.at(tally.counts, np.minimum(pos, MAX_POSITIONS).astype(np.intp), hits)
        terms = n * _terms(kind, pos, label)
        keys, where = np.unique(b.astype(np.int64), return_inverse=True)
        sums = np.zeros(keys.size)
        np.add.at(sums, where, terms)
        for key, value in zip(keys.tolist(), sums.tolist(), strict=True):
            tally.sums[key] = tally.sums.get(key, 0.0) + value

    @staticmethod
    def _curve(tally: _Tally, points: int) -> list[QualityPoint]:
        if tally.rounds == 0 or tally.owner.model.provides.kind not in SIGNALS:
            return []
        size, last = tally.bucket, (tally.rounds - 1) // tally.bucket
        out = []
        for b in range(max(0, last - points + 1), last + 1):
            n = min(size, tally.rounds - b * size)
            mean = tally.sums.get(b, 0.0) / n
            out.append(
                QualityPoint(round=b * size + n, value=mean if math.isfinite(mean) else None, n=n)
            )
        return out
