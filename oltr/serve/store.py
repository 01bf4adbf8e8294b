"""The service's durable state in SQLite (standard library, WAL journal).

Six tables:

``rankers``      name → definition (JSON) of every live ranker;
``impressions``  every ranked list: its round ``t``, the shown orders, what the
                 interleaving needs, the logged propensities, and its status
                 (``pending`` → ``done`` or ``expired``);
``contexts``     the features of each impression (by its rowid) as raw float64
                 bytes, so they come back bit for bit; a table of their own, so
                 that a status change rewrites a row of a few hundred bytes and
                 not the 18 KB of a (50, 46) context;
``events``       the log the learner state is a function of: one ``rank`` or
                 ``feedback`` row per acknowledged request, in the order the
                 ranker applied them (``seq``);
``snapshots``    each ranker's latest learner snapshot and the last event it includes;
``lifecycle``    whether the store is ``open`` or was ``closed`` cleanly.

A store is created only where no file exists; an existing one is checked and refused
when damaged (:mod:`oltr.serve.storecheck`), and locked while open (:mod:`oltr.serve.lock`).

Writes go through one writer thread with **group commit**
(:mod:`oltr.serve.groupcommit`): the ``submit_*`` methods queue a write and
return a future that completes once the write is committed, so the service
answers a request only after its events are durable, while the writes of
concurrent requests share one transaction (one ``fsync``). A request is one
write: a ranked list with its ``rank`` event, or a feedback with its status
change, its ``feedback`` event and, every so many rounds, the snapshot. The
blocking methods (``log_rank``, ``add_ranker``, …) submit and wait. With
``synchronous=FULL`` (the default) a commit survives a power cut, with
``NORMAL`` it survives the process being killed (WAL). Reads use a second
connection (WAL readers do not wait for the writer) shared behind a lock.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from oltr.errors import StorageError
from oltr.serve.groupcommit import Checkpointer, GroupCommit, WriteGuard
from oltr.serve.lock import StoreLock
from oltr.serve.storecheck import (
    SCHEMA_VERSION,
    StoreDamagedError,
    StoreOpenError,
    check_store_path,
    read_only_uri,
    store_problems,
)
from oltr.serve.storesql import (
    DECISIONS,
    EXPIRE,
    INSERT_CONTEXT,
    INSERT_EVENT,
    INSERT_IMPRESSION,
    LIFECYCLE,
    MARK_DONE,
    SAVE_SNAPSHOT,
    SCHEMA,
    SELECT_IMPRESSION,
    SET_STATE,
)

__all__ = ["SCHEMA_VERSION", "Impression", "Store", "StoredEvent"]

Guard = WriteGuard | None
_ENCODE = msgspec.json.Encoder().encode


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


def impression_from_row(row: sqlite3.Row) -> Impression:
    """The :class:`Impression` of a row of ``SELECT_IMPRESSION`` (features bit for bit)."""
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


def _create_new(path: Path) -> None:
    """Create a store at ``path`` (which does not exist) in one step: written beside it,
    synced, then renamed into place, so that a crash never leaves a half-made store."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.new")
    tmp.unlink(missing_ok=True)
    try:
        db = sqlite3.connect(tmp, isolation_level=None)
        try:
            db.executescript(
                f"BEGIN; {SCHEMA} {LIFECYCLE} INSERT INTO lifecycle VALUES ('state', 'closed');"
                f" PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
            )
        finally:
            db.close()
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store:
    """The SQLite file behind ``oltr serve`` (see the module docstring).

    Parameters
    ----------
    path
        The database file: created with its tables when the path does not exist; an
        existing file is checked first (:func:`~oltr.serve.storecheck.store_problems`) and
        refused when damaged. The store is locked while open (:mod:`oltr.serve.lock`).
    synchronous
        ``"FULL"`` (a commit survives a power cut) or ``"NORMAL"`` (it survives a
        crash of the process; faster).
    readonly
        Open for reading beside a running server (``oltr replay``): no lock, no writes.
    """

    def __init__(
        self, path: str | Path, *, synchronous: str = "FULL", readonly: bool = False
    ) -> None:
        if synchronous.upper() not in ("FULL", "NORMAL"):
            raise ValueError(f"synchronous must be FULL or NORMAL, got {synchronous!r}")
        if str(path) == ":memory:" or str(path).startswith("file:"):
            raise ValueError("the store needs a file path (a reader and a writer share it)")
        self.path = str(path)
        self._lock = threading.Lock()
        self._writer: GroupCommit | None = None
        exists = check_store_path(Path(path))
        if readonly:  # beside a running server: reads only, no lock, no mark
            if not exists:
                raise StoreOpenError(f"store {path} does not exist")
            problems = store_problems(path)
            if problems:
                raise StoreDamagedError(f"store {path} cannot be read: {problems[0]}")
            self._db = sqlite3.connect(
                read_only_uri(path), uri=True, check_same_thread=False, isolation_level=None
            )
            self._db.row_factory = sqlite3.Row
            return
        try:
            self._file_lock = StoreLock.acquire(Path(path))
        except OSError as exc:
            if isinstance(exc, StorageError):
                raise
            raise StoreOpenError(f"store {path}: cannot create its lock file: {exc}") from None
        try:
            self._open(Path(path), exists, synchronous)
        except BaseException:
            self._file_lock.release()
            raise

    def _open(self, path: Path, exists: bool, synchronous: str) -> None:
        if exists:
            problems = store_problems(path)
            if problems:
                raise StoreDamagedError(f"store {path} cannot be served: {problems[0]}")
        else:
            try:
                _create_new(path)
            except (OSError, sqlite3.Error) as exc:
                raise StoreOpenError(f"store {path}: cannot create it: {exc}") from None
        conns: list[sqlite3.Connection] = []
        try:
            conns += [self._connect(synchronous) for _ in range(3)]
            writer = conns[0]
            writer.execute(LIFECYCLE)
            writer.execute(SET_STATE, ("open",))
            writer.execute(DECISIONS)
            # Through to the database file: a missing WAL after a crash then shows.
            writer.execute("PRAGMA wal_checkpoint(FULL)")
            writer.execute("PRAGMA wal_autocheckpoint=0")  # the checkpointer's job
        except sqlite3.Error as exc:
            for db in conns:
                db.close()
            raise StoreOpenError(f"store {path}: SQLite cannot write it: {exc}") from None
        self._write_db, self._db, self._checkpoint_db = conns
        self._writer = GroupCommit(writer)
        self._checkpointer = Checkpointer(self._checkpoint_db, self._writer, f"{self.path}-wal")

    def _connect(self, synchronous: str) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA journal_size_limit=67108864")  # a WAL that starts over: 64 MB at most
        db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        return db

    @property
    def _group(self) -> GroupCommit:
        if self._writer is None:
            raise StorageError(f"store {self.path} is open read-only")
        return self._writer

    def close(self) -> None:
        """Commit every queued write, stop the writer and close the connections."""
        if self._writer is None:
            with self._lock:
                self._db.close()
            return
        self._writer.close()
        self._checkpointer.close()
        self._checkpoint_db.close()
        with self._lock:
            self._db.close()
        try:  # every commit is in; the last close copies the WAL into the file
            self._write_db.execute(SET_STATE, ("closed",))
        finally:
            self._write_db.close()
            self._file_lock.release()

    def submit_write(self, write: Callable[..., Any], guard: Guard = None) -> Future[Any]:
        """Queue ``write`` (a function of the write connection) after every queued write."""
        return self._group.submit(write, guard)

    def barrier(self) -> None:
        """Wait until every write submitted so far is committed (or failed)."""
        self._group.barrier()

    @property
    def commits(self) -> tuple[int, int]:
        """``(transactions, writes)`` committed so far by the writer."""
        return self._group.batches, self._group.writes

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
        text, now = json.dumps(definition, sort_keys=True), time.time()
        self._group.submit(
            lambda db: db.execute(
                "INSERT INTO rankers (name, definition, created) VALUES (?, ?, ?)",
                (name, text, now),
            )
        ).result()

    def delete_ranker(self, name: str) -> None:
        """Remove a ranker with its impressions, events and snapshot (after its queued writes)."""

        def write(db: sqlite3.Connection) -> None:
            db.execute(
                "DELETE FROM contexts WHERE impression IN "
                "(SELECT rowid FROM impressions WHERE ranker = ?)",
                (name,),
            )
            for table, key in (
                ("rankers", "name"),
                ("impressions", "ranker"),
                ("events", "ranker"),
                ("snapshots", "ranker"),
                ("decisions", "ranker"),
            ):
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (name,))

        self._group.submit(write).result()

    # -- impressions and events --------------------------------------------------------

    def submit_rank(
        self, impression: Impression, payload: dict[str, Any], guard: WriteGuard | None = None
    ) -> Future[int]:
        """Queue a ranked list and its ``rank`` event (one write); the future gives the seq."""
        imp = impression
        feats = None if imp.features is None else np.ascontiguousarray(imp.features, "<f8")
        blob = None if feats is None else feats.tobytes()
        row = (
            imp.ranker,
            imp.id,
            imp.t,
            imp.created,
            imp.n_items,
            0 if feats is None else int(feats.shape[1]),
            _ENCODE(imp.orders).decode(),  # lists of ints: msgspec, several times faster
            _ENCODE(imp.shown).decode(),
            json.dumps(imp.extra),
            json.dumps(imp.propensities),
        )
        event = (imp.ranker, "rank", imp.id, json.dumps(payload), time.time())

        def write(db: sqlite3.Connection) -> int:
            rowid = db.execute(INSERT_IMPRESSION, row).lastrowid
            if blob is not None:  # apart from the row, so a status change does not rewrite it
                db.execute(INSERT_CONTEXT, (rowid, blob))
            return int(db.execute(INSERT_EVENT, event).lastrowid or 0)

        return self._group.submit(write, guard)

    def log_rank(self, impression: Impression, payload: dict[str, Any]) -> int:
        """Log a ranked list and its ``rank`` event in one transaction; return the event seq."""
        return self.submit_rank(impression, payload).result()

    def submit_feedback(
        self,
        ranker: str,
        impression: str,
        payload: dict[str, Any],
        guard: WriteGuard | None = None,
        snapshot: tuple[int, str, str] | None = None,
    ) -> Future[int]:
        """Queue: mark an impression done, log its ``feedback`` event and, if given, the
        snapshot ``(rounds, version, state)`` of the learner after it (one write).
        The future gives the event seq."""
        event = (ranker, "feedback", impression, json.dumps(payload), time.time())

        def write(db: sqlite3.Connection) -> int:
            db.execute(MARK_DONE, (ranker, impression))
            seq = int(db.execute(INSERT_EVENT, event).lastrowid or 0)
            if snapshot is not None:
                db.execute(SAVE_SNAPSHOT, (ranker, seq, *snapshot))
            return seq

        return self._group.submit(write, guard)

    def log_feedback(self, ranker: str, impression: str, payload: dict[str, Any]) -> int:
        """Mark an impression done and log its ``feedback`` event; return the event seq."""
        return self.submit_feedback(ranker, impression, payload).result()

    def impression(self, ranker: str, impression: str) -> Impression | None:
        """One impression, or None."""
        rows = self._query(f"{SELECT_IMPRESSION} AND i.id = ?", (ranker, impression))
        return impression_from_row(rows[0]) if rows else None

    def impressions(self, ranker: str) -> Iterator[Impression]:
        """Every impression of ``ranker`` in round order."""
        for row in self._query(f"{SELECT_IMPRESSION} ORDER BY i.t", (ranker,)):
            yield impression_from_row(row)

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

    def submit_expire(self, ranker: str, older_than: float) -> Future[int]:
        """Queue: mark pending impressions created before ``older_than`` expired (how many)."""
        return self._group.submit(lambda db: int(db.execute(EXPIRE, (ranker, older_than)).rowcount))

    def expire(self, ranker: str, older_than: float) -> int:
        """Mark pending impressions created before ``older_than`` expired; return how many."""
        return self.submit_expire(ranker, older_than).result()

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

    def save_snapshot(self, ranker: str, rounds: int, version: str, state: str) -> None:
        """Replace ``ranker``'s snapshot by one that includes every event logged before it."""
        self._group.submit(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO snapshots (ranker, seq, rounds, version, state) "
                "VALUES (?, (SELECT COALESCE(MAX(seq), 0) FROM events WHERE ranker = ?), ?, ?, ?)",
                (ranker, ranker, rounds, version, state),
            )
        ).result()

    def snapshot(self, ranker: str) -> tuple[int, int, str] | None:
        """``(seq, rounds, state)`` of ``ranker``'s latest snapshot, or None."""
        rows = self._query("SELECT seq, rounds, state FROM snapshots WHERE ranker = ?", (ranker,))
        return (int(rows[0]["seq"]), int(rows[0]["rounds"]), rows[0]["state"]) if rows else None
