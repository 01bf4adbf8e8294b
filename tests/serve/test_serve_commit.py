"""Group commit: shared commits in submission order, failures, stale writes, the ranker on top."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oltr.serve.groupcommit import Checkpointer, GroupCommit, StaleWrite, WriteGuard
from oltr.serve.protocol import RankerDefinition, RequestError
from oltr.serve.rankers import RECENT_IMPRESSIONS, Ranker, Rankers, restore
from oltr.serve.store import Store


@pytest.fixture
def db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(tmp_path / "g.db", check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (seq INTEGER PRIMARY KEY, v INTEGER NOT NULL)")
    yield conn
    conn.close()


class _Gate:
    """A write that holds the writer thread until released, so that others queue behind it."""

    def __init__(self) -> None:
        self.started, self.release = threading.Event(), threading.Event()

    def __call__(self, _: sqlite3.Connection) -> None:
        self.started.set()
        assert self.release.wait(10)


def _insert(v: int) -> Any:
    return lambda db: db.execute("INSERT INTO t (v) VALUES (?)", (v,)).lastrowid


def _hold(writer: GroupCommit) -> _Gate:
    gate = _Gate()
    writer.submit(gate)
    assert gate.started.wait(10)
    return gate


def _values(db: sqlite3.Connection) -> list[int]:
    return [v for (v,) in db.execute("SELECT v FROM t ORDER BY seq")]


def test_queued_writes_share_one_commit_in_submission_order(db: sqlite3.Connection) -> None:
    writer = GroupCommit(db)
    gate = _hold(writer)
    futures = [writer.submit(_insert(v)) for v in range(20)]
    assert not any(f.done() for f in futures)  # nothing is answered before its commit
    gate.release.set()
    seqs = [f.result(timeout=10) for f in futures]
    assert seqs == sorted(seqs)
    assert (writer.batches, writer.writes) == (2, 21)  # the gate alone, then all 20 in one
    writer.close()
    assert _values(db) == list(range(20))


def test_a_failed_write_fails_its_batch_and_its_rankers_later_writes(
    db: sqlite3.Connection,
) -> None:
    writer = GroupCommit(db, max_batch=3)
    guard, other, third = WriteGuard(), WriteGuard(), WriteGuard()

    def boom(_: sqlite3.Connection) -> None:
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    gate = _hold(writer)
    first = [writer.submit(_insert(1), guard), writer.submit(boom, guard)]
    first.append(writer.submit(_insert(2), other))  # same batch: rolled back with it
    later = [writer.submit(_insert(v), g) for v, g in ((3, guard), (4, other), (6, third))]
    gate.release.set()
    for f in first:
        with pytest.raises(sqlite3.OperationalError):
            f.result(timeout=10)
    for f in later[:2]:  # computed from a state that held a failed write: refused
        with pytest.raises(StaleWrite):
            f.result(timeout=10)
    assert later[2].result(timeout=10) > 0  # a ranker that was not in the failed batch
    assert guard.stale and other.stale and not third.stale
    guard.generation = guard.valid_from  # what a ranker does once it has reloaded
    assert writer.submit(_insert(5), guard).result(timeout=10) > 0
    writer.close()
    assert _values(db) == [6, 5]


RTOPK = RankerDefinition(
    learner="rtopk",
    params={"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    feedback="top-k",
    feedback_params={"k": 1},
    n_features=4,
    seed=1,
)


def _x(seed: int) -> list[list[float]]:
    return np.random.default_rng(seed).random((5, 4)).tolist()


@pytest.fixture
def ranker(tmp_path: Path) -> Iterator[Ranker]:
    store = Store(tmp_path / "s.db", synchronous="NORMAL")
    rankers = Rankers(store, snapshot_every=3)
    rankers.put("r", RTOPK)
    yield rankers.get("r")
    store.close()


def _weights(r: Ranker) -> np.ndarray[Any, Any]:
    return np.asarray(r.learner.weights_)  # type: ignore[attr-defined]


def test_a_second_feedback_while_the_first_is_in_flight_is_409(ranker: Ranker) -> None:
    imp = ranker.rank(_x(0))["impression"]
    gate = _hold(ranker.store._writer)
    with ranker.lock:
        answer, done = ranker.feedback_locked(imp, {"labels": [1]}, 3600)
    assert answer == {"round": 1} and not done.done()
    with ranker.lock, pytest.raises(RequestError, match="already has") as err:
        ranker.feedback_locked(imp, {"labels": [0]}, 3600)
    assert err.value.status == 409
    gate.release.set()
    assert done.result(timeout=10) > 0
    with ranker.lock, pytest.raises(RequestError, match="already has"):
        ranker.feedback_locked(imp, {"labels": [0]}, 3600)


def test_a_write_that_fails_to_commit_leaves_the_ranker_as_the_store_has_it(
    ranker: Ranker, monkeypatch: pytest.MonkeyPatch
) -> None:
    for s in range(4):
        ranker.feedback(ranker.rank(_x(s))["impression"], {"labels": [1]}, 3600)
    committed = _weights(ranker).copy()
    imp = ranker.rank(_x(10))["impression"]
    writer = ranker.store._writer
    submit = writer.submit

    def failing(write: Any, guard: WriteGuard | None = None) -> Any:
        def broken(db: sqlite3.Connection) -> Any:
            write(db)
            raise sqlite3.OperationalError("disk I/O error (simulated)")

        monkeypatch.setattr(writer, "submit", submit)  # only this one write fails
        return submit(broken, guard)

    monkeypatch.setattr(writer, "submit", failing)
    with pytest.raises(sqlite3.OperationalError):
        ranker.feedback(imp, {"labels": [2]}, 3600)
    assert ranker.guard.stale
    # The next request rebuilds the ranker from the store: the failed round is not in it,
    # and the impression still takes its one feedback.
    assert ranker.feedback(imp, {"labels": [2]}, 3600) == {"round": 5}
    fresh = restore(ranker.store, "r", RTOPK, 3)
    assert fresh.rounds == ranker.rounds == 5
    assert np.array_equal(_weights(fresh), _weights(ranker))
    assert not np.array_equal(committed, _weights(ranker))


def test_a_store_of_another_schema_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE impressions (ranker TEXT, id TEXT, features BLOB)")
    old.close()
    with pytest.raises(ValueError, match="schema version 0"):
        Store(path)


def test_feedback_on_lists_older_than_the_recent_ones_reads_them_from_the_store(
    ranker: Ranker,
) -> None:
    n = RECENT_IMPRESSIONS + 4
    shown = [ranker.rank(_x(s))["impression"] for s in range(n)]
    assert len(ranker._recent) == RECENT_IMPRESSIONS
    for imp in shown:  # the first four from the store, the rest from memory
        ranker.feedback(imp, {"labels": [int(imp.split("-")[0]) % 2]}, 3600)
    fresh = restore(ranker.store, "r", RTOPK, 3)
    assert fresh.rounds == ranker.rounds == n and not ranker._recent
    assert np.array_equal(_weights(fresh), _weights(ranker))


def test_the_wal_starts_over_once_it_is_large(db: sqlite3.Connection, tmp_path: Path) -> None:
    db.execute("PRAGMA wal_autocheckpoint=0")
    writer = GroupCommit(db)
    other = sqlite3.connect(tmp_path / "g.db", check_same_thread=False, isolation_level=None)
    cp = Checkpointer(other, writer, str(tmp_path / "g.db-wal"), interval=0.01, reset_bytes=1 << 16)
    n = 0
    while cp.resets < 2 and n < 20_000:  # each commit adds a page or two to the WAL
        writer.submit(_insert(n)).result()
        n += 1
    writer.close()
    cp.close()
    other.close()
    assert cp.resets >= 2 and cp.checkpoints >= cp.resets
    assert db.execute("SELECT COUNT(*) FROM t").fetchone()[0] == n
