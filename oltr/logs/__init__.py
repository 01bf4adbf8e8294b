"""Click logs: the schema, reading and writing (Parquet or JSON Lines), binding to a data set.

See :mod:`oltr.logs.schema` for the columns and ``docs/guides/logs.md`` for
the format as users write it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

__all__ = [
    "COLUMNS",
    "SCHEMA_VERSION",
    "BoundLog",
    "ClickLog",
    "LogFormatError",
    "PositionCounts",
    "bind",
    "concat_logs",
    "iter_log",
    "position_counts",
    "read_log",
    "write_log",
]

if TYPE_CHECKING:
    from oltr.logs.binding import BoundLog, PositionCounts, bind, position_counts
    from oltr.logs.io import concat_logs, iter_log, read_log, write_log
    from oltr.logs.schema import COLUMNS, SCHEMA_VERSION, ClickLog, LogFormatError
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.logs.schema": ["COLUMNS", "SCHEMA_VERSION", "ClickLog", "LogFormatError"],
            "oltr.logs.io": ["concat_logs", "iter_log", "read_log", "write_log"],
            "oltr.logs.binding": ["BoundLog", "PositionCounts", "bind", "position_counts"],
        },
    )
