"""The installed package's version (recorded with every result and snapshot)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = []

try:
    __version__ = version("oltr")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"
