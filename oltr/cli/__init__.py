"""The ``oltr`` command.

One module per command group; this module only assembles them. Commands parse
arguments, call library functions and print: they hold no logic of their own.
"""

from __future__ import annotations

import typer

from oltr.cli import catalog as _catalog
from oltr.cli import data as _data
from oltr.cli import demo as _demo
from oltr.cli import experiments as _experiments
from oltr.cli import theory as _theory

app = typer.Typer(
    name="oltr",
    help="Online learning to rank from restricted feedback.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("demo")(_demo.demo)
app.command("list")(_catalog.list_components)
app.add_typer(_data.app, name="data")
app.add_typer(_theory.app, name="theory")
_experiments.register(app)


def main() -> None:
    """Entry point of the console script."""
    app()
