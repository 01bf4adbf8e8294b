"""The SQL of the service's store (:mod:`oltr.serve.store`): its tables and the statements
the hot path runs, kept apart from the code that runs them.

The tables are described in :mod:`oltr.serve.store`; :mod:`oltr.serve.storecheck` checks an
existing file against them.
"""

__all__ = [
    "DECISIONS",
    "EXPIRE",
    "INSERT_CONTEXT",
    "INSERT_EVENT",
    "INSERT_IMPRESSION",
    "LIFECYCLE",
    "MARK_DONE",
    "SAVE_SNAPSHOT",
    "SCHEMA",
    "SELECT_IMPRESSION",
    "SET_STATE",
]

SCHEMA = """
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
    n_features INTEGER NOT NULL,
    orders TEXT NOT NULL,
    shown TEXT NOT NULL,
    extra TEXT NOT NULL,
    propensities TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    PRIMARY KEY (ranker, id)
);
CREATE INDEX IF NOT EXISTS impressions_pending ON impressions (ranker, status, created);
CREATE TABLE IF NOT EXISTS contexts (
    impression INTEGER PRIMARY KEY,
    features BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
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
#: Whether the store is ``open`` or was ``closed`` cleanly (see :mod:`oltr.serve.storecheck`).
LIFECYCLE = "CREATE TABLE IF NOT EXISTS lifecycle (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
SET_STATE = "INSERT OR REPLACE INTO lifecycle (key, value) VALUES ('state', ?)"
DECISIONS = "CREATE TABLE IF NOT EXISTS decisions (ranker TEXT, kind TEXT, event_seq, payload)"

INSERT_IMPRESSION = (
    "INSERT INTO impressions (ranker, id, t, created, n_items, n_features,"
    " orders, shown, extra, propensities) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_CONTEXT = "INSERT INTO contexts (impression, features) VALUES (?, ?)"
SELECT_IMPRESSION = (
    "SELECT i.*, c.features FROM impressions AS i LEFT JOIN contexts AS c "
    "ON c.impression = i.rowid WHERE i.ranker = ?"
)
INSERT_EVENT = (
    "INSERT INTO events (ranker, kind, impression, payload, created) VALUES (?, ?, ?, ?, ?)"
)
MARK_DONE = "UPDATE impressions SET status = 'done' WHERE ranker = ? AND id = ?"
SAVE_SNAPSHOT = (
    "INSERT OR REPLACE INTO snapshots (ranker, seq, rounds, version, state) VALUES (?, ?, ?, ?, ?)"
)
EXPIRE = (
    "UPDATE impressions SET status = 'expired' "
    "WHERE ranker = ? AND status = 'pending' AND created < ?"
)
