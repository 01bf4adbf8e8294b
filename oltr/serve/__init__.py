"""``oltr serve``: any learner behind an HTTP API with durable state, and replay of its log.

:func:`create_app` builds the FastAPI app from :class:`ServeSettings`; the
state lives in a SQLite :class:`Store`; :mod:`oltr.serve.replay` re-runs a log
and estimates a new ranker's value from it.
"""

from oltr.serve.app import ServeSettings, create_app, freeze_long_lived
from oltr.serve.protocol import RankerDefinition, RequestError
from oltr.serve.rankers import Ranker, Rankers
from oltr.serve.store import Store

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
