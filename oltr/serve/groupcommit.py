"""Group commit: one writer thread commits the writes of many requests in one transaction.

Every write of the service is a function of a SQLite connection, submitted
with :meth:`GroupCommit.submit`, which returns a future at once. A single
writer thread owns the write connection; it takes every write waiting in the
queue (in submission order), runs them in one ``BEGIN IMMEDIATE … COMMIT``,
and only then completes their futures. A request answers after its future
completes, so the rule "committed before acknowledged" holds, while
concurrent requests share one commit (one ``fsync`` with ``synchronous=FULL``)
instead of paying one each. The classic design (DeWitt et al. 1984,
"Implementation techniques for main memory database systems", §4; Gawlick &
Kinkade 1985) is the same: a transaction's log record is forced together
with its neighbours', and none is acknowledged before the force.

Order: writes are applied in submission order, and a write submitted after
another is never committed before it (a later batch commits after an earlier
one; a batch commits all its writes at once). A ranker submits its writes
under its own lock in the order it applied its requests, so its log is in
that order.

Failure: should a write raise, or the commit fail, the whole batch is rolled
back and every future of it gets the exception. A ranker's later writes were
computed from a state that included the failed one, so they must not commit
either: each write carries the :class:`WriteGuard` of its ranker and the
guard's generation at submission; after a failed batch the guards of its
writes are raised past those generations, and every write of an older
generation still in the queue is refused (:class:`StaleWrite`). The ranker
sees its guard ``stale`` at its next request and rebuilds itself from the
store (after a :meth:`GroupCommit.barrier`, so nothing of the old generation
is still in flight).

Checkpoints: SQLite copies the WAL back into the database file every 1000
pages by default, inside the commit that crosses the mark, which then takes
milliseconds (``fsync`` of the WAL and of the database file, with ``NORMAL``
too). The writer connection turns that off (``wal_autocheckpoint=0``); a
:class:`Checkpointer` thread on a connection of its own runs passive
checkpoints a few times a second instead (a passive checkpoint waits for no
writer and no reader, so commits go on while it copies and syncs). A WAL file
can only start over once a checkpoint has copied all of it before the next
commit, which never happens under steady load while the checkpoints run
beside the commits; so when the file has grown past ``reset_bytes``, the
writer thread asks for a background checkpoint at once and, right after it has
finished, runs one itself between two batches: it has only the last few
commits left to copy (and two ``fsync`` calls), and the next commit starts the
WAL over. Commits wait during that one, so it is kept rare (every 64 MB of
WAL by default, a few seconds under full load).
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Checkpointer", "GroupCommit", "StaleWrite", "WriteGuard"]

Write = Callable[[sqlite3.Connection], Any]


class StaleWrite(RuntimeError):
    """A write refused because an earlier write of the same ranker failed."""


@dataclass
class WriteGuard:
    """The generation of one ranker's writes (see the module docstring)."""

    generation: int = 0
    valid_from: int = 0

    @property
    def stale(self) -> bool:
        """True when a write of the current generation failed: the ranker must reload."""
        return self.generation < self.valid_from


@dataclass
class _Item:
    write: Write
    future: Future[Any] = field(default_factory=Future)
    guard: WriteGuard | None = None
    generation: int = 0


def _settle(future: Future[Any], result: Any = None, error: BaseException | None = None) -> None:
    if future.done():  # cancelled by a waiter that gave up: the write is done all the same
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)


class GroupCommit:
    """The writer thread of one SQLite connection (see the module docstring).

    Parameters
    ----------
    db
        The write connection, used by the writer thread only from now on
        (opened with ``check_same_thread=False``, ``isolation_level=None``).
    max_batch
        The most writes committed in one transaction.
    """

    def __init__(self, db: sqlite3.Connection, *, max_batch: int = 256) -> None:
        self._db = db
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._closed = False
        self._close_lock = threading.Lock()
        self.batches = 0  # commits made, and writes they held (for tests and metrics)
        self.writes = 0
        #: Called by the writer thread with its connection after each commit.
        self.after_commit: Callable[[sqlite3.Connection], None] | None = None
        self._thread = threading.Thread(target=self._run, name="oltr-store-writer", daemon=True)
        self._thread.start()

    def submit(self, write: Write, guard: WriteGuard | None = None) -> Future[Any]:
        """Queue ``write``; its future completes once it is committed (or failed)."""
        item = _Item(write, guard=guard, generation=0 if guard is None else guard.generation)
        with self._close_lock:
            if self._closed:
                raise RuntimeError("the store is closed")
            self._queue.put(item)
        return item.future

    def barrier(self) -> None:
        """Wait until every write submitted before this call is committed or failed."""
        self.submit(lambda _: None).result()

    def close(self) -> None:
        """Commit what is queued, then stop the writer thread."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch, stop = [first], False
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    stop = True
                    break
                batch.append(item)
            try:
                self._commit(batch)
            except Exception as exc:  # a bug here must not leave requests waiting forever
                for item in batch:
                    _settle(item.future, error=exc)
            if stop:
                return

    def _commit(self, batch: list[_Item]) -> None:
        live, results = [], []
        for item in batch:
            guard = item.guard
            if guard is not None and item.generation < guard.valid_from:
                _settle(item.future, error=StaleWrite("an earlier write of this ranker failed"))
            else:
                live.append(item)
        if not live:
            return
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for item in live:
                    results.append(item.write(db))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except BaseException as exc:  # nothing of the batch is committed
            for item in live:
                if item.guard is not None:
                    item.guard.valid_from = max(item.guard.valid_from, item.generation + 1)
            for item in live:
                _settle(item.future, error=exc)
            return
        self.batches += 1
        self.writes += len(live)
        for item, result in zip(live, results, strict=True):
            _settle(item.future, result)
        if self.after_commit is not None:
            try:
                self.after_commit(db)
            except Exception:  # housekeeping (checkpoints): the next commit tries again
                pass


class Checkpointer:
    """Passive WAL checkpoints beside the commits, and a reset of a large WAL between them.

    Parameters
    ----------
    db
        A connection of its own to the database file (``check_same_thread=False``).
    writer
        The group commit whose commits it follows; its writer thread calls
        :meth:`after_commit`.
    wal
        Path of the WAL file (the database path + ``-wal``).
    interval
        Seconds between background checkpoints (when there were commits).
    reset_bytes
        WAL size past which the writer thread checkpoints so that the WAL starts over.
    """

    def __init__(
        self,
        db: sqlite3.Connection,
        writer: GroupCommit,
        wal: str,
        *,
        interval: float = 0.25,
        reset_bytes: int = 64 << 20,
    ) -> None:
        self._db, self._writer, self._wal = db, writer, wal
        self._interval, self._reset_bytes = interval, reset_bytes
        self._stop, self._wake = threading.Event(), threading.Event()
        self.checkpoints = 0  # background passes completed
        self.resets = 0  # checkpoints the writer ran to start the WAL over
        self._reset_after = -1  # >= 0: reset once a pass after this one has completed
        writer.after_commit = self.after_commit
        self._thread = threading.Thread(target=self._run, name="oltr-store-checkpoint", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seen = -1
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                return
            if self._writer.batches != seen:
                seen = self._writer.batches
                if _checkpoint(self._db):
                    self.checkpoints += 1

    def after_commit(self, db: sqlite3.Connection) -> None:
        """Writer thread, after each commit: start the WAL over when it is large (see above)."""
        if self._reset_after >= 0:
            if self.checkpoints > self._reset_after and _checkpoint(db):
                self.resets += 1
                self._reset_after = -1
            return
        if self._writer.batches % 64:
            return
        try:
            size = os.path.getsize(self._wal)
        except OSError:
            return
        if size > self._reset_bytes:
            self._reset_after = self.checkpoints
            self._wake.set()  # a background pass now; the writer resets right after it

    def close(self) -> None:
        """Stop the thread (after the writer; SQLite checkpoints as the last connection closes)."""
        self._stop.set()
        self._wake.set()
        self._thread.join()


def _checkpoint(db: sqlite3.Connection) -> bool:
    """One passive checkpoint; False when another one was running (the next catches up)."""
    try:
        busy = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[0]
    except sqlite3.Error:
        return False
    return not busy
