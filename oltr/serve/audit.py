"""``oltr serve --check``: every check of a store, down to replaying each ranker's whole log.

Beyond :func:`~oltr.serve.storecheck.store_problems` with ``deep`` (the file,
the schema, the clean-stop mark, ``integrity_check``, the log's consistency,
every JSON text), each ranker is rebuilt twice, from its whole log and from its
snapshot plus the events after it, the way a restart does; the two must agree
bit for bit. Damage inside a logged payload or a snapshot shows there.
"""

from __future__ import annotations

from pathlib import Path

from oltr.serve.protocol import RankerDefinition
from oltr.serve.rankers import restore
from oltr.serve.replay import replay_log
from oltr.serve.state import dumps_state
from oltr.serve.store import Store
from oltr.serve.storecheck import store_problems
from oltr.version import __version__

__all__ = ["audit_store"]


def audit_store(path: str | Path) -> tuple[list[str], str]:
    """``(problems, summary)`` of the store ``path``; reads only (beside a server too)."""
    problems = store_problems(path, deep=True)
    if problems:
        return problems, ""
    db = Store(path, readonly=True)
    try:
        rankers = db.rankers()
        rounds = 0
        for name, raw in rankers.items():
            try:
                full, _, n = replay_log(db, name)
                again = restore(db, name, RankerDefinition(**raw), 1).learner
                if dumps_state(full, __version__) != dumps_state(again, __version__):
                    problems.append(
                        f"ranker {name!r}: its snapshot disagrees with a replay of its log"
                    )
                rounds += n
            except Exception as exc:  # damage can break a replay anywhere: report, go on
                problems.append(f"ranker {name!r}: its log does not replay: {exc}")
    finally:
        db.close()
    return problems, f"{len(rankers)} rankers, {rounds} feedback rounds replayed"
