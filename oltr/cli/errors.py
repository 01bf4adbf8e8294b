"""The command line's one error path.

Every command is wrapped by :func:`handle_errors`: an expected failure
(:mod:`oltr.errors`, the ``ValueError``/``TypeError`` of argument checks, a file
system fault) is printed as one line, ``error: ...``, and the command exits with
the kind's code (:data:`oltr.errors.EXIT_CODES`), without a traceback.
``oltr --debug ...`` or ``OLTR_DEBUG=1`` re-raises instead, for bug reports.
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import typer

from oltr.errors import EXIT_CODES, OltrError

__all__ = ["describe_os_error", "handle_errors", "set_debug"]

F = TypeVar("F", bound=Callable[..., Any])
_DEBUG = {"on": False}

_OS_HINTS = {
    "EACCES": "check the folder's permissions or choose another folder",
    "EPERM": "check the folder's permissions or choose another folder",
    "EROFS": "the file system is read-only; choose another folder",
    "ENOTDIR": "a file stands where a folder is needed; move it or choose another folder",
    "EEXIST": "a file stands where a folder is needed; move it or choose another folder",
    "ENOSPC": "the disk is full; free space and run again (finished work is kept)",
    "ENOENT": "check the path",
    "EISDIR": "a folder stands where a file is needed",
}


def set_debug(on: bool) -> None:
    """Show tracebacks instead of one-line errors (``--debug``)."""
    _DEBUG["on"] = on


def _debugging() -> bool:
    return _DEBUG["on"] or os.environ.get("OLTR_DEBUG", "") not in ("", "0")


def describe_os_error(exc: OSError) -> str:
    """One line for a file-system fault: the path, what happened, and what to check."""
    path = exc.filename if exc.filename is not None else "(unknown path)"
    reason = exc.strerror or str(exc)
    name = errno.errorcode.get(exc.errno or 0, "")
    hint = f"; {_OS_HINTS[name]}" if name in _OS_HINTS else ""
    return f"{path}: {reason}{hint}"


def _message_and_code(exc: BaseException) -> tuple[str, int]:
    if isinstance(exc, OltrError):
        return str(exc), exc.exit_code
    if isinstance(exc, OSError):
        return describe_os_error(exc), EXIT_CODES["file system"]
    return str(exc), EXIT_CODES["input"]


def handle_errors(command: F) -> F:
    """Wrap a command so that expected failures become one line and an exit code."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (OltrError, OSError, ValueError, TypeError) as exc:
            if _debugging():
                raise
            message, code = _message_and_code(exc)
            typer.echo(f"error: {message}", err=True)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]
