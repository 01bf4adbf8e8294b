"""The ``oltr`` command.

One module per command group; this module only assembles them. Every command
goes through one error path (:mod:`oltr.cli.errors`): an expected failure is one
line, ``error: ...``, with a distinct exit code; ``oltr --debug ...`` shows the
traceback instead.

The command modules hold only the commands' signatures; each imports the library
(numba kernels, pandas, the web stack) inside its function, so ``oltr --help``,
``oltr --version`` and usage errors answer at once. ``tests/cli/test_startup.py``
keeps it so.
"""

from __future__ import annotations

from typing import Annotated

import typer

from oltr.cli import catalog as _catalog
from oltr.cli import check as _check
from oltr.cli import data as _data
from oltr.cli import demo as _demo
from oltr.cli import experiments as _experiments
from oltr.cli import logs as _logs
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


def _print_version(value: bool) -> None:
    if value:
        from oltr.version import __version__

        typer.echo(f"oltr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error (for bug reports).")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    set_debug(debug)


app.command("demo")(_demo.demo)
app.command("list")(_catalog.list_components)
app.add_typer(_data.app, name="data")
app.add_typer(_theory.app, name="theory")
app.add_typer(_logs.app, name="logs")
app.command("check")(_check.check)
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
