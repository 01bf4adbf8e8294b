"""Click logs: the schema, reading and writing (Parquet or JSON Lines), binding to a data set.

See :mod:`oltr.logs.schema` for the columns and ``docs/guides/logs.md`` for
the format as users write it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

__all__ = ["COLUMNS", "SCHEMA_VERSION", "ClickLog", "LogFormatError"]

if TYPE_CHECKING:
    from oltr.logs.schema import COLUMNS, SCHEMA_VERSION, ClickLog, LogFormatError
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {"oltr.logs.schema": ["COLUMNS", "SCHEMA_VERSION", "ClickLog", "LogFormatError"]},
    )
