"""Awaiting store commits on the event loop, one wake-up of the loop per group commit.

The store's writer thread completes one :class:`concurrent.futures.Future` per
write, a whole batch at a time (:mod:`oltr.serve.groupcommit`).
``asyncio.wrap_future`` would hand each of them to the loop with its own
``call_soon_threadsafe``: a write to the loop's self-pipe and a wake-up per
request, and the writer thread and the loop trading the GIL for each.
:func:`wait_commit` instead queues the completed futures and schedules one
drain on the loop while none is pending, so the n writes of a commit reach the
loop together.

A request whose task is cancelled (its client went away) stops waiting; its
write is never cancelled: it was applied to the ranker and commits all the
same, as with ``asyncio.shield``.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import weakref
from concurrent.futures import Future
from typing import Any

__all__ = ["wait_commit"]


class _Waiters:
    """The commits one event loop is waiting on."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._ready: collections.deque[tuple[asyncio.Future[Any], Future[Any]]] = (
            collections.deque()
        )
        self._scheduled = False

    def wait(self, done: Future[Any]) -> asyncio.Future[Any]:
        waiter = self._loop.create_future()
        done.add_done_callback(functools.partial(self._completed, waiter))
        return waiter

    def _completed(self, waiter: asyncio.Future[Any], done: Future[Any]) -> None:
        """Any thread: queue ``done``; wake the loop unless a drain is already due.

        The entry is queued before the flag is read, so a drain that clears the
        flag after this read still finds it.
        """
        self._ready.append((waiter, done))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        """The loop: hand every completed commit to its waiter."""
        self._scheduled = False
        ready = self._ready
        while ready:
            waiter, done = ready.popleft()
            if waiter.done():  # cancelled: its request is gone, its write stands
                continue
            if done.cancelled():
                waiter.cancel()
            elif (error := done.exception()) is not None:
                waiter.set_exception(error)
            else:
                waiter.set_result(done.result())


_BY_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Waiters] = (
    weakref.WeakKeyDictionary()
)


def wait_commit(done: Future[Any]) -> asyncio.Future[Any]:
    """An awaitable of the running loop that completes as ``done`` (a store write) does."""
    loop = asyncio.get_running_loop()
    waiters = _BY_LOOP.get(loop)
    if waiters is None:
        waiters = _BY_LOOP[loop] = _Waiters(loop)
    return waiters.wait(done)
