"""``oltr data``: inspect learning-to-rank data files."""

from __future__ import annotations

import typer

app = typer.Typer(help="Inspect LETOR / SVMlight data files.", no_args_is_help=True)
