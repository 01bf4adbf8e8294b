"""The ``oltr`` command.

One module per command group; this module only assembles them. Every command
goes through one error path (:mod:`oltr.cli.errors`): an expected failure is one
line, ``error: ...``, with a distinct exit code; ``oltr --debug ...`` shows the
traceback instead.
"""

from __future__ import annotations

from typing import Annotated

import typer

from oltr.cli import catalog as _catalog
from oltr.cli import data as _data
from oltr.cli import demo as _demo
from oltr.cli import experiments as _experiments
from oltr.cli import serve as _serve
from oltr.cli import theory as _theory
from oltr.cli.errors import handle_errors, set_debug

app = typer.Typer(
    rich_markup_mode=None,  # plain help: no "<bool>" metavar on flags
    name="oltr",
    help="Online learning to rank from restricted feedback.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error (for bug reports).")
    ] = False,
) -> None:
    set_debug(debug)


app.command("demo")(_demo.demo)
app.command("list")(_catalog.list_components)
app.add_typer(_data.app, name="data")
app.add_typer(_theory.app, name="theory")
_experiments.register(app)
_serve.register(app)


def _wrap_commands(root: typer.Typer) -> None:
    for info in root.registered_commands:
        if info.callback is not None:
            info.callback = handle_errors(info.callback)
    for group in root.registered_groups:
        if group.typer_instance is not None:
            _wrap_commands(group.typer_instance)


_wrap_commands(app)


def main() -> None:
    """Entry point of the console script."""
    app()
