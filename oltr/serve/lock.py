"""One writer per store: an exclusive lock on ``<store>.lock``, held while a store is open.

The lock is an ``flock`` on a file beside the store, so the kernel releases it
when its process ends, however it ends (``kill -9`` included): a store is never
left locked by a dead process, and no stale lock needs breaking by hand. The
file holds who took it (pid, host, start time) so that a second opener is told
who holds the store. It stays in place after the holder stops; only the lock on
it means anything. The store file itself is not locked this way, because SQLite
holds POSIX locks on it that closing any other descriptor of that file in the
same process would drop.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import IO

from oltr.errors import StoreInUseError

__all__ = ["StoreLock", "StoreLockedError"]


class StoreLockedError(StoreInUseError):
    """The store is open in another process (or elsewhere in this one)."""


def _holder(text: str) -> str:
    try:
        who = json.loads(text)
        return f"pid {who['pid']} on {who['host']} since {who['started']}"
    except (ValueError, KeyError, TypeError):
        return "another process"


class StoreLock:
    """The exclusive lock of one store; :meth:`acquire` takes it, :meth:`release` drops it."""

    def __init__(self, path: Path, file: IO[str]) -> None:
        self.path, self._file = path, file

    @classmethod
    def acquire(cls, store: Path) -> StoreLock:
        """Lock ``store`` (through ``<store>.lock``), or raise :class:`StoreLockedError`.

        An :class:`OSError` of the lock file (a missing or read-only folder) is raised as is.
        """
        real = store.resolve()  # two names of one file share one lock
        path = real.with_name(real.name + ".lock")
        file = open(path, "a+", encoding="utf-8")  # noqa: SIM115 (held until release)
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = _holder(file.read())
            file.close()
            raise StoreLockedError(
                f"store {store} is in use by {holder}: one server per store; "
                "stop that one first or give this one another --store"
            ) from None
        except BaseException:
            file.close()
            raise
        started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        who = {"pid": os.getpid(), "host": socket.gethostname(), "started": started}
        file.seek(0)
        file.truncate()
        file.write(json.dumps(who) + "\n")
        file.flush()
        return cls(path, file)

    def release(self) -> None:
        """Drop the lock (closing the file drops it); idempotent."""
        if not self._file.closed:
            self._file.close()
