"""The service's durable state in SQLite (standard library, WAL journal).

Four tables:

``rankers``      name → definition (JSON) of every live ranker;
``impressions``  every ranked list: its round ``t``, the context (features as
                 raw float64 bytes, so they come back bit for bit), the shown
                 orders, what the interleaving needs, the logged propensities,
                 and its status (``pending`` → ``done`` or ``expired``);
``events``       the log the learner state is a function of: one ``rank`` or
                 ``feedback`` row per acknowledged request, in the order the
                 ranker applied them (``seq``);
``snapshots``    the latest learner snapshot of each ranker and the last
                 event ``seq`` it includes.

Every write is one transaction committed before the service answers; with
``synchronous=FULL`` (the default) a commit survives a power cut, with
``NORMAL`` it survives the process being killed (WAL). One connection is shared
by the service's threads behind a lock: each transaction is short, and the
rankers' own locks order the requests to one ranker.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Impression", "Store", "StoredEvent"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rankers (
    name TEXT PRIMARY KEY,
    definition TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS impressions (
    ranker TEXT NOT NULL,
    id TEXT NOT NULL,
    t INTEGER NOT NULL,
    created REAL NOT NULL,
    n_items INTEGER NOT NULL,
    features BLOB,
    n_features INTEGER NOT NULL,
    orders TEXT NOT NULL,
    shown TEXT NOT NULL,
    extra TEXT NOT NULL,
    propensities TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    PRIMARY KEY (ranker, id)
);
CREATE INDEX IF NOT EXISTS impressions_pending ON impressions (ranker, status, created);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ranker TEXT NOT NULL,
    kind TEXT NOT NULL,
    impression TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_ranker ON events (ranker, seq);
CREATE TABLE IF NOT EXISTS snapshots (
    ranker TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    rounds INTEGER NOT NULL,
    version TEXT NOT NULL,
    state TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Impression:
    """One ranked list as logged: what the learner saw and what was shown."""

    ranker: str
    id: str
    t: int
    created: float
    n_items: int
    features: np.ndarray[Any, Any] | None
    orders: list[Any]
    shown: list[int]
    extra: dict[str, Any]
    propensities: dict[str, Any]
    status: str


@dataclass(frozen=True)
class StoredEvent:
    """One row of the event log."""

    seq: int
    kind: str
    impression: str
    payload: dict[str, Any]


def _impression(row: sqlite3.Row) -> Impression:
    features = None
    if row["features"] is not None:
        flat = np.frombuffer(row["features"], dtype="<f8")
        features = flat.reshape(row["n_items"], row["n_features"]).copy()
    return Impression(
        ranker=row["ranker"],
        id=row["id"],
        t=row["t"],
        created=row["created"],
        n_items=row["n_items"],
        features=features,
        orders=json.loads(row["orders"]),
        shown=json.loads(row["shown"]),
        extra=json.loads(row["extra"]),
        propensities=json.loads(row["propensities"]),
        status=row["status"],
    )


class Store:
    """The SQLite file behind ``oltr serve`` (see the module docstring).

    Parameters
    ----------
    path
        The database file (created with its tables when missing); ``":memory:"`` for tests.
    synchronous
        ``"FULL"`` (a commit survives a power cut) or ``"NORMAL"`` (it survives a
        crash of the process; faster).
    """

    def __init__(self, path: str | Path, *, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, got {synchronous!r}")
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One transaction, committed on exit (rolled back on an exception)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._db.execute(sql, args))

    # -- rankers ------------------------------------------------------------------

    def rankers(self) -> dict[str, dict[str, Any]]:
        """Every stored ranker's definition, by name."""
        rows = self._query("SELECT name, definition FROM rankers ORDER BY name")
        return {r["name"]: json.loads(r["definition"]) for r in rows}

    def add_ranker(self, name: str, definition: dict[str, Any]) -> None:
        """Store a new ranker's definition."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO rankers (name, definition, created) VALUES (?, ?, ?)",
                (name, json.dumps(definition, sort_keys=True), time.time()),
            )

    def delete_ranker(self, name: str) -> None:
        """Remove a ranker with its impressions, events and snapshot."""
        with self._tx() as db:
            for table, key in (
                ("rankers", "name"),
                ("impressions", "ranker"),
                ("events", "ranker"),
                ("snapshots", "ranker"),
            ):
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (name,))

    # -- impressions and events --------------------------------------------------------

    def log_rank(
        self,
        impression: Impression,
        payload: dict[str, Any],
    ) -> int:
        """Log a ranked list and its ``rank`` event in one transaction; return the event seq."""
        imp = impression
        feats = None if imp.features is None else np.ascontiguousarray(imp.features, "<f8")
        with self._tx() as db:
            db.execute(
                "INSERT INTO impressions (ranker, id, t, created, n_items, features, n_features,"
                " orders, shown, extra, propensities) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    imp.ranker,
                    imp.id,
                    imp.t,
                    imp.created,
                    imp.n_items,
                    None if feats is None else feats.tobytes(),
                    0 if feats is None else int(feats.shape[1]),
                    json.dumps(imp.orders),
                    json.dumps(imp.shown),
                    json.dumps(imp.extra),
                    json.dumps(imp.propensities),
                ),
            )
            return self._event(db, imp.ranker, "rank", imp.id, payload)

    def log_feedback(self, ranker: str, impression: str, payload: dict[str, Any]) -> int:
        """Mark an impression done and log its ``feedback`` event; return the event seq."""
        with self._tx() as db:
            db.execute(
                "UPDATE impressions SET status = 'done' WHERE ranker = ? AND id = ?",
                (ranker, impression),
            )
            return self._event(db, ranker, "feedback", impression, payload)

    @staticmethod
    def _event(
        db: sqlite3.Connection, ranker: str, kind: str, impression: str, payload: dict[str, Any]
    ) -> int:
        cur = db.execute(
            "INSERT INTO events (ranker, kind, impression, payload, created) "
            "VALUES (?, ?, ?, ?, ?)",
            (ranker, kind, impression, json.dumps(payload), time.time()),
        )
        return int(cur.lastrowid or 0)

    def impression(self, ranker: str, impression: str) -> Impression | None:
        """One impression, or None."""
        rows = self._query(
            "SELECT * FROM impressions WHERE ranker = ? AND id = ?", (ranker, impression)
        )
        return _impression(rows[0]) if rows else None

    def impressions(self, ranker: str) -> Iterator[Impression]:
        """Every impression of ``ranker`` in round order."""
        for row in self._query("SELECT * FROM impressions WHERE ranker = ? ORDER BY t", (ranker,)):
            yield _impression(row)

    def events(self, ranker: str, after: int = 0) -> list[StoredEvent]:
        """The events of ``ranker`` with ``seq > after``, in order."""
        rows = self._query(
            "SELECT seq, kind, impression, payload FROM events WHERE ranker = ? AND seq > ? "
            "ORDER BY seq",
            (ranker, after),
        )
        return [
            StoredEvent(r["seq"], r["kind"], r["impression"], json.loads(r["payload"]))
            for r in rows
        ]

    def last_t(self, ranker: str) -> int:
        """The largest impression round of ``ranker`` (0 when none)."""
        rows = self._query("SELECT MAX(t) AS t FROM impressions WHERE ranker = ?", (ranker,))
        return int(rows[0]["t"] or 0)

    def expire(self, ranker: str, older_than: float) -> int:
        """Mark pending impressions created before ``older_than`` expired; return how many."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE impressions SET status = 'expired' "
                "WHERE ranker = ? AND status = 'pending' AND created < ?",
                (ranker, older_than),
            )
            return int(cur.rowcount)

    def counts(self, ranker: str) -> dict[str, int]:
        """Impressions of ``ranker`` by status."""
        rows = self._query(
            "SELECT status, COUNT(*) AS n FROM impressions WHERE ranker = ? GROUP BY status",
            (ranker,),
        )
        out = {"pending": 0, "done": 0, "expired": 0}
        out.update({r["status"]: int(r["n"]) for r in rows})
        return out

    # -- snapshots --------------------------------------------------------------------

    def save_snapshot(self, ranker: str, seq: int, rounds: int, version: str, state: str) -> None:
        """Replace ``ranker``'s snapshot by one that includes the events up to ``seq``."""
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO snapshots (ranker, seq, rounds, version, state) "
                "VALUES (?, ?, ?, ?, ?)",
                (ranker, seq, rounds, version, state),
            )

    def snapshot(self, ranker: str) -> tuple[int, int, str] | None:
        """``(seq, rounds, state)`` of ``ranker``'s latest snapshot, or None."""
        rows = self._query("SELECT seq, rounds, state FROM snapshots WHERE ranker = ?", (ranker,))
        return (int(rows[0]["seq"]), int(rows[0]["rounds"]), rows[0]["state"]) if rows else None
