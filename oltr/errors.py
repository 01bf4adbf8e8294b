"""The failures oltr expects, typed: each says what went wrong, where, and how to fix it.

Library code raises these (or the ``ValueError``/``TypeError`` of argument
checks); the command line prints their one-line message without a traceback
and exits with the kind's code (:data:`EXIT_CODES`). ``oltr --debug`` (or
``OLTR_DEBUG=1``) shows the traceback instead, for bug reports.

Each class also derives from the built-in exception it refines, so code that
catches ``ValueError`` or ``OSError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "EXIT_CODES",
    "ConfigFileError",
    "DataFormatError",
    "InputError",
    "MemoryLimitError",
    "NumericalError",
    "OltrError",
    "RunFailedError",
    "StorageError",
    "StoreInUseError",
]


class OltrError(Exception):
    """Base of every expected failure; ``exit_code`` is what the command line returns."""

    exit_code = 1


class InputError(OltrError, ValueError):
    """A bad argument or value (a shape, a range, an unknown name)."""

    exit_code = 2


class MemoryLimitError(InputError, MemoryError):
    """A size that would need more memory than the machine has, refused before allocating."""


class DataFormatError(OltrError, ValueError):
    """A malformed or damaged data file, named with its line where there is one."""

    exit_code = 3


class ConfigFileError(OltrError, ValueError):
    """An experiment file that cannot be run, every problem named by its key."""

    exit_code = 4


class StorageError(OltrError, OSError):
    """A results folder or file that cannot be written or read back intact."""

    exit_code = 5


class NumericalError(OltrError, FloatingPointError):
    """A learner's state stopped being finite: names the learner, the round and the cause."""

    exit_code = 6


class RunFailedError(OltrError, RuntimeError):
    """A run set failed inside a worker; what finished before it is kept."""

    exit_code = 7


class StoreInUseError(StorageError):
    """A service store already held by another ``oltr serve`` process (one writer per store)."""

    exit_code = 8


#: Exit codes of the command line, by kind of failure (usage errors are 2, as in click).
EXIT_CODES = {
    "input": InputError.exit_code,
    "data": DataFormatError.exit_code,
    "config": ConfigFileError.exit_code,
    "file system": StorageError.exit_code,
    "numerical": NumericalError.exit_code,
    "run": RunFailedError.exit_code,
    "store in use": StoreInUseError.exit_code,
    "interrupted": 130,
}
