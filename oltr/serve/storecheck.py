"""What an existing store file must pass before it is served: never serve a damaged store as new.

:func:`store_problems` looks at a store without writing to it and lists what is
wrong, in the order it checks:

1. the file: a folder, a missing or unreadable file, an empty (0-byte) file, a
   file that does not start with SQLite's header, a file shorter than its
   header says (truncated), when no write-ahead log (WAL) completes it;
2. the schema: the ``PRAGMA user_version`` and the tables of a store;
3. the clean-stop mark: a store records in its ``lifecycle`` table (written
   through to the database file at open) whether it is ``open`` or ``closed``.
   A store left ``open`` stopped uncleanly, so the commits since its last
   checkpoint live only in its WAL: when that file is missing (or shorter than a
   WAL header), they are lost, and the store is refused rather than served
   without them. A WAL deleted after a *clean* stop loses nothing (a clean stop
   copies it into the database file and removes it);
4. the pages: ``PRAGMA quick_check`` (``integrity_check`` with ``deep``);
5. the log: every ``rank`` event has its impression and every impression its
   ``rank`` event, the rounds ``t`` of a ranker are 1, 2, … without a gap, each
   ``done`` impression has one ``feedback`` event, no event belongs to an unknown
   ranker, a context has the size of its impression, a snapshot counts the
   feedback events before it; with ``deep``, every JSON text parses.

What it cannot see: a store copied back from an older backup together with its
WAL is a consistent older store; commits lost to a power cut with
``synchronous=NORMAL`` leave a consistent older store too (that is what
``NORMAL`` trades for speed); bytes overwritten inside a text or a blob that
keeps its length and stays valid JSON are found only by replaying the log
(``oltr serve --check`` does).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from oltr.errors import DataFormatError, StorageError

__all__ = [
    "SCHEMA_VERSION",
    "TABLES",
    "StoreDamagedError",
    "StoreOpenError",
    "check_store_path",
    "read_only_uri",
    "store_problems",
]

#: ``PRAGMA user_version`` of a store; a file of another version is refused.
SCHEMA_VERSION = 2
#: The tables every store has (``lifecycle`` is added at open when missing).
TABLES = frozenset({"rankers", "impressions", "contexts", "events", "snapshots"})
_HEADER = b"SQLite format 3\x00"
_WAL_HEADER_BYTES = 32


class StoreDamagedError(DataFormatError):
    """A store file that exists but cannot be served as it is (see :func:`store_problems`)."""


class StoreOpenError(StorageError):
    """A ``--store`` path that cannot hold a store: a folder, a missing or read-only folder."""


def check_store_path(path: Path) -> bool:
    """Raise :class:`StoreOpenError` for a path that cannot be a store; True when it exists."""
    if path.is_dir():
        raise StoreOpenError(f"store {path} is a folder; give the path of a file inside it")
    parent = path.parent
    if not parent.exists():
        raise StoreOpenError(f"store {path}: its folder {parent} does not exist; create it first")
    if not parent.is_dir():
        raise StoreOpenError(f"store {path}: {parent} is not a folder")
    if path.exists() and not path.is_file():
        raise StoreOpenError(f"store {path} is not a regular file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreOpenError(
            f"store {path}: the folder {parent} is not writable (a store writes its log and its "
            "lock beside it); choose another folder or fix its permissions"
        )
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise StoreOpenError(
            f"store {path} cannot be both read and written by this user (its permissions, "
            "or an immutable file)"
        )
    return path.exists()


def read_only_uri(path: str | Path) -> str:
    """The SQLite URI that opens ``path`` for reading only (any character in the name)."""
    return f"{Path(path).resolve().as_uri()}?mode=ro"


def _has_wal(path: Path) -> bool:
    """A WAL with at least its header (a reader leaves an empty one behind)."""
    wal = Path(f"{path}-wal")
    return wal.is_file() and wal.stat().st_size >= _WAL_HEADER_BYTES


def _file_problems(path: Path) -> list[str]:
    size = path.stat().st_size
    if size == 0:
        return ["the file is empty (0 bytes): its data is gone; restore it from a backup"]
    with open(path, "rb") as f:
        head = f.read(100)
    if not head.startswith(_HEADER):
        return ["the file is not a SQLite database"]
    if len(head) < 100:
        return [f"the file is truncated ({size} bytes, shorter than a SQLite header)"]
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    valid = head[24:28] == head[92:96]  # the header's page count is current
    if valid and pages and not _has_wal(path) and size < pages * page:
        return [f"the file is truncated ({size} bytes, its header says {pages * page})"]
    return []


def _schema_problems(db: sqlite3.Connection) -> list[str]:
    version = int(db.execute("PRAGMA user_version").fetchone()[0])
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if version != SCHEMA_VERSION:
        what = "without tables" if not tables else f"with tables {sorted(tables)}"
        return [
            f"schema version {version} ({what}), this oltr reads {SCHEMA_VERSION}: "
            "not a store of this oltr; serve it with the oltr that wrote it, or start a new store"
        ]
    if not TABLES <= tables:
        return [f"the tables {sorted(TABLES - tables)} of a store are missing"]
    return []


def _mark_problems(db: sqlite3.Connection, path: Path) -> list[str]:
    if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'lifecycle'").fetchall():
        return []
    row = db.execute("SELECT value FROM lifecycle WHERE key = 'state'").fetchone()
    wal = Path(f"{path}-wal")
    if row is not None and row[0] == "open" and not _has_wal(path):
        return [
            f"it was not stopped cleanly and its write-ahead log {wal.name} is missing or empty: "
            "the commits since its last checkpoint are lost; restore the store with its -wal "
            "file from a backup, or move it aside and start a new store"
        ]
    return []


# Each check is one pass over a table with index lookups (no per-row scan of another table):
# with the first, the counts of the second and third make rank events and impressions a
# one-to-one match; the same for feedback events and done impressions.
_LOG_CHECKS = (
    (
        "events without their impression",
        "SELECT COUNT(*) FROM events AS e LEFT JOIN impressions AS i "
        "ON i.ranker = e.ranker AND i.id = e.impression "
        "WHERE i.id IS NULL OR (e.kind = 'feedback' AND i.status != 'done')",
    ),
    (
        "impressions without their one rank event",
        "SELECT ABS((SELECT COUNT(*) FROM impressions) - (SELECT COUNT(*) FROM (SELECT DISTINCT "
        "ranker, impression FROM events WHERE kind = 'rank'))) + ABS((SELECT COUNT(*) FROM "
        "events WHERE kind = 'rank') - (SELECT COUNT(*) FROM impressions))",
    ),
    (
        "done impressions without their one feedback event",
        "SELECT ABS((SELECT COUNT(*) FROM impressions WHERE status = 'done') - (SELECT COUNT(*) "
        "FROM (SELECT DISTINCT ranker, impression FROM events WHERE kind = 'feedback'))) + "
        "ABS((SELECT COUNT(*) FROM events WHERE kind = 'feedback') - (SELECT COUNT(*) FROM "
        "impressions WHERE status = 'done'))",
    ),
    (
        "rankers whose rounds t have a gap",
        "SELECT COUNT(*) FROM (SELECT ranker FROM impressions GROUP BY ranker "
        "HAVING MIN(t) != 1 OR MAX(t) != COUNT(*) OR COUNT(DISTINCT t) != COUNT(*))",
    ),
    (
        "events of an unknown kind",
        "SELECT COUNT(*) FROM events WHERE kind NOT IN ('rank', 'feedback')",
    ),
    (
        "rows of rankers the store does not define",
        "SELECT (SELECT COUNT(*) FROM events WHERE ranker NOT IN (SELECT name FROM rankers)) + "
        "(SELECT COUNT(*) FROM impressions WHERE ranker NOT IN (SELECT name FROM rankers)) + "
        "(SELECT COUNT(*) FROM snapshots WHERE ranker NOT IN (SELECT name FROM rankers))",
    ),
    (
        "contexts of the wrong size",
        "SELECT COUNT(*) FROM impressions AS i LEFT JOIN contexts AS c ON c.impression = i.rowid "
        "WHERE i.n_features > 0 AND (c.features IS NULL "
        "OR length(c.features) != 8 * i.n_items * i.n_features)",
    ),
    (
        "snapshots that disagree with the log",
        "SELECT COUNT(*) FROM snapshots AS s WHERE s.rounds != (SELECT COUNT(*) FROM events AS e "
        "WHERE e.ranker = s.ranker AND e.seq <= s.seq AND e.kind = 'feedback') OR s.seq > "
        "(SELECT COALESCE(MAX(seq), 0) FROM events AS e WHERE e.ranker = s.ranker)",
    ),
)

_JSON_CHECKS = (
    ("rankers", "definition"),
    ("impressions", "orders"),
    ("impressions", "shown"),
    ("impressions", "extra"),
    ("impressions", "propensities"),
    ("events", "payload"),
    ("snapshots", "state"),
)


def _log_problems(db: sqlite3.Connection, deep: bool) -> list[str]:
    out = []
    for what, sql in _LOG_CHECKS:
        n = int(db.execute(sql).fetchone()[0])
        if n:
            out.append(f"its log is inconsistent: {n} {what}")
    if deep:
        for table, column in _JSON_CHECKS:
            sql = f"SELECT COUNT(*) FROM {table} WHERE NOT json_valid({column})"
            n = int(db.execute(sql).fetchone()[0])
            if n:
                out.append(f"{n} rows of {table}.{column} are not valid JSON")
    return out


def store_problems(path: str | Path, *, deep: bool = False) -> list[str]:
    """What is wrong with the existing store ``path`` (empty: nothing found); reads only.

    ``deep`` runs ``PRAGMA integrity_check`` instead of ``quick_check`` and parses every
    JSON text. Raises :class:`StoreOpenError` for a path that cannot be a store.
    """
    path = Path(path)
    if not check_store_path(path):
        raise StoreOpenError(f"store {path} does not exist")
    problems = _file_problems(path)
    if problems:
        return problems
    try:
        db = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error as exc:
        return [f"SQLite cannot open it: {exc}"]
    try:
        problems = _schema_problems(db) or _mark_problems(db, path)
        if problems:
            return problems
        pragma = "integrity_check" if deep else "quick_check"
        pages = [" ".join(str(r[0]).split()) for r in db.execute(f"PRAGMA {pragma}(5)")]
        if pages != ["ok"]:
            return [f"its pages are damaged ({pragma}: {'; '.join(pages)})"]
        return _log_problems(db, deep)
    except sqlite3.Error as exc:
        return [f"its pages are damaged (SQLite: {exc})"]
    finally:
        db.close()
