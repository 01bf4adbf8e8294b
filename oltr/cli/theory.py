"""``oltr theory``: partial-monitoring analysis of ranking games."""

from __future__ import annotations

import typer

app = typer.Typer(help="Loss/feedback matrices, observability and impossibility witnesses.",
                  no_args_is_help=True)
