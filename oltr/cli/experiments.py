"""``oltr run``, ``oltr report``, ``oltr reproduce``: experiments through the engine."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the experiment commands (run, report, reproduce) to the root app."""
