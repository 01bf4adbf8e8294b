"""``oltr serve``: any learner behind an HTTP API with durable state, and replay of its log.

:func:`create_app` builds the FastAPI app from :class:`ServeSettings`; the
state lives in a SQLite :class:`Store`; :mod:`oltr.serve.replay` re-runs a log
and estimates a new ranker's value from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.serve.app import ServeSettings, create_app, freeze_long_lived
    from oltr.serve.protocol import RankerDefinition, RequestError
    from oltr.serve.rankers import Ranker, Rankers
    from oltr.serve.store import Store
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.serve.app": ["ServeSettings", "create_app", "freeze_long_lived"],
            "oltr.serve.protocol": ["RankerDefinition", "RequestError"],
            "oltr.serve.rankers": ["Ranker", "Rankers"],
            "oltr.serve.store": ["Store"],
        },
    )

__all__ = [
    "RankerDefinition",
    "Ranker",
    "Rankers",
    "RequestError",
    "ServeSettings",
    "Store",
    "create_app",
    "freeze_long_lived",
]
