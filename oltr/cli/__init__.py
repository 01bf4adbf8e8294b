"""The ``oltr`` command.

One module per command group; this module only assembles them and owns the one
error path: every expected failure (:mod:`oltr.errors`, argument checks, file
system faults) is printed as one line, ``error: ...``, with a distinct exit code
(:data:`oltr.errors.EXIT_CODES`) and no traceback. ``oltr --debug ...`` or
``OLTR_DEBUG=1`` shows the traceback instead, for bug reports.
"""

from __future__ import annotations

import errno
import os
import sys

import typer

from oltr.cli import catalog as _catalog
from oltr.cli import data as _data
from oltr.cli import demo as _demo
from oltr.cli import experiments as _experiments
from oltr.cli import theory as _theory
from oltr.errors import EXIT_CODES, OltrError

app = typer.Typer(
    name="oltr",
    help="Online learning to rank from restricted feedback. "
    "Add --debug (first) to see a traceback on errors.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("demo")(_demo.demo)
app.command("list")(_catalog.list_components)
app.add_typer(_data.app, name="data")
app.add_typer(_theory.app, name="theory")
_experiments.register(app)


def describe_os_error(exc: OSError) -> str:
    """One line for a file-system fault: the path, what happened, and what to check."""
    path = exc.filename if exc.filename is not None else "(unknown path)"
    reason = exc.strerror or str(exc)
    hints = {
        "EACCES": "check the folder's permissions or choose another --out",
        "EROFS": "the file system is read-only; choose another --out",
        "ENOTDIR": "a file stands where a folder is needed; move it or choose another --out",
        "EEXIST": "a file stands where a folder is needed; move it or choose another --out",
        "ENOSPC": "the disk is full; free space and run again (finished work is kept)",
        "ENOENT": "check the path",
        "EISDIR": "a folder stands where a file is needed",
    }
    name = errno.errorcode.get(exc.errno or 0, "")
    hint = f"; {hints[name]}" if name in hints else ""
    return f"{path}: {reason}{hint}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script: run the command, turn expected failures into one line."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get("OLTR_DEBUG", "") not in ("", "0")
    if args and args[0] == "--debug":
        debug, args = True, args[1:]
    try:
        app(args=args, prog_name="oltr")
    except (OltrError, OSError, ValueError, TypeError) as exc:
        if debug:
            raise
        if isinstance(exc, OltrError):
            code = exc.exit_code
            message = str(exc)
        elif isinstance(exc, OSError):
            code = EXIT_CODES["file system"]
            message = describe_os_error(exc)
        else:
            code = EXIT_CODES["input"]
            message = str(exc)
        typer.echo(f"error: {message}", err=True)
        sys.exit(code)
