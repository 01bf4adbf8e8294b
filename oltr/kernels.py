"""Compiled kernels: numba's ``njit`` with an on-disk cache, and one notice while compiling.

Every compiled loop in the package is decorated with :func:`njit`, numba's
``njit`` with ``cache=True``: a kernel is compiled once per machine (per numba
version and kernel source) and later processes load it from numba's cache,
the ``__pycache__`` folder beside the module or ``NUMBA_CACHE_DIR`` when set.

Compiling takes from seconds to minutes, so the first compilation in a
process prints one line on stderr::

    oltr: compiling numerical kernels (once; cached in ...) ...

The line comes from numba's compile event, which fires only when a kernel is
compiled, never when it is loaded from the cache: the warm path pays nothing.
Worker processes of one pool print it at most once between them (and not at
all when their parent already did).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar, overload

import numba
from numba.core import config, event

__all__ = ["NOTICE", "Decorator", "njit"]

F = TypeVar("F", bound=Callable[..., Any])

#: The line printed (with the cache folder filled in) before the first compilation.
NOTICE = "oltr: compiling numerical kernels (once; cached in {where}) ..."


class Decorator(Protocol):
    """What ``njit(**options)`` returns: a decorator that keeps the kernel's signature."""

    def __call__(self, function: F, /) -> F: ...


@overload
def njit(function: F, /) -> F: ...
@overload
def njit(function: None = None, /, **options: Any) -> Decorator: ...
def njit(function: F | None = None, /, **options: Any) -> F | Decorator:
    """``numba.njit`` with ``cache=True``; as ``@njit`` or ``@njit(nogil=True, ...)``.

    Type checkers see the decorated kernel as the plain function it compiles.
    """
    if "cache" in options:
        raise TypeError("oltr.kernels.njit always caches; leave 'cache' out")
    decorate: Decorator = numba.njit(cache=True, **options)
    return decorate if function is None else decorate(function)


def _claim(pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"oltr-kernels-notice-{pid}"


def _first_of_family() -> bool:
    """Whether this process announces: once per process tree of a multiprocessing pool."""
    parent = multiprocessing.parent_process()
    owner = os.getpid() if parent is None else parent.pid
    if owner is None:
        return True
    try:
        os.close(os.open(_claim(owner), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:  # no writable temporary folder: announce anyway
        return True
    return True


def _where(dispatcher: Any) -> str:
    folder = getattr(config, "CACHE_DIR", "")
    if folder:
        return str(folder)
    cache = getattr(dispatcher, "_cache", None)
    path = getattr(cache, "cache_path", None)
    if path is None:
        return "numba's cache folder"
    if Path(path).name == "__pycache__":  # beside the sources: one folder per subpackage
        return f"{path} and oltr's other __pycache__ folders"
    return str(path)


class _Notice(event.Listener):
    """Prints :data:`NOTICE` when the first oltr kernel of the process starts compiling."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done = False

    def on_start(self, ev: Any) -> None:
        dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if self.done or not module.startswith("oltr."):
            return
        with self._lock:
            if self.done:
                return
            self.done = True
            if _first_of_family():
                print(NOTICE.format(where=_where(dispatcher)), file=sys.stderr, flush=True)

    def on_end(self, ev: Any) -> None:
        pass


def _forget_claim(pid: int) -> None:
    _claim(pid).unlink(missing_ok=True)


event.register("numba:compile", _Notice())  # type: ignore[no-untyped-call]
if multiprocessing.parent_process() is None:
    atexit.register(_forget_claim, os.getpid())
