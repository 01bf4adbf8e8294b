"""``oltr demo``: the main job on built-in data."""

from __future__ import annotations

import typer


def demo() -> None:
    """Run the built-in demonstration on synthetic data."""
    typer.echo("oltr demo: not yet assembled")
