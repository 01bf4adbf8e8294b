"""Data paths in configs: ``{data}/`` resolved against ``$OLTR_DATA_DIR`` or ``../shared/data``."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oltr.validation import not_a_file

__all__ = ["DATA_PREFIX", "data_root"]


def _is_data_key(key: str) -> bool:
    return key == "path" or key.endswith(("_path", "_file"))


#: A data path starting with this prefix is relative to :func:`data_root`.
DATA_PREFIX = "{data}/"


def data_root() -> Path:
    """Folder that ``{data}/...`` paths in configs refer to.

    ``$OLTR_DATA_DIR`` when set; otherwise ``../shared/data`` relative to the current
    directory, where the real LETOR sets sit beside a checkout of this project. The
    packaged real-data reproductions use it, so they work from an installed package too.
    """
    return Path(os.environ.get("OLTR_DATA_DIR") or Path("..", "shared", "data"))


def _resolve_one(value: str, base: Path) -> tuple[Path, str]:
    """An absolute path for a config's data path, and how a relative one was resolved."""
    if value.startswith(DATA_PREFIX):
        return (
            (data_root() / value[len(DATA_PREFIX) :]).resolve(),
            "{data}/ is $OLTR_DATA_DIR, or ../shared/data from the current directory",
        )
    return (
        (base / Path(value).expanduser()).resolve(),
        "relative paths are resolved against the config file's folder",
    )


def _resolve_data_paths(
    params: Mapping[str, Any], base: Path, problems: list[str], where: str = "env.params"
) -> dict[str, Any]:
    out = copy.deepcopy(dict(params))
    for key, value in params.items():
        if not _is_data_key(key) or value is None:
            continue
        if not isinstance(value, str):
            problems.append(f"{where}.{key}: a data file path must be a string, got {value!r}")
            continue
        resolved, rule = _resolve_one(value, base)
        why = not_a_file(resolved)
        if why == "no such file":
            problems.append(f"{where}.{key}: data file not found: {resolved} ({rule})")
        elif why is not None:  # a folder or a FIFO: named, never opened
            problems.append(f"{where}.{key}: {resolved} {why}")
        out[key] = str(resolved)
    return out
