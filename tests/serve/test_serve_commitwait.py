"""Awaiting store commits: every waiter gets its own write's outcome, one loop wake-up a batch."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

import pytest

from oltr.serve.commitwait import wait_commit


class _CountingLoop:
    """Counts the loop's ``call_soon_threadsafe`` calls (each one a wake-up of the loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.calls = 0
        self._original = loop.call_soon_threadsafe

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return self._original(*args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]


def _settle_in_thread(futures: list[Future[Any]], outcomes: list[Any]) -> None:
    """What the writer thread does after a commit: settle a whole batch in a row."""

    def settle() -> None:
        for future, outcome in zip(futures, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

    thread = threading.Thread(target=settle)
    thread.start()
    thread.join()


def test_a_batch_reaches_the_loop_with_one_wake_up_and_each_waiter_its_own_result() -> None:
    async def main() -> tuple[list[Any], int]:
        counter = _CountingLoop(asyncio.get_running_loop())
        futures: list[Future[Any]] = [Future() for _ in range(20)]
        waiters = [wait_commit(f) for f in futures]
        outcomes: list[Any] = [*range(10), ValueError("disk full"), *range(11, 20)]
        _settle_in_thread(futures, outcomes)
        got = await asyncio.gather(*waiters, return_exceptions=True)
        return got, counter.calls

    got, wake_ups = asyncio.run(main())
    assert got[:10] == list(range(10)) and got[11:] == list(range(11, 20))
    assert isinstance(got[10], ValueError) and str(got[10]) == "disk full"
    assert wake_ups == 1  # wrap_future would wake the loop 20 times


def test_batches_apart_in_time_each_wake_the_loop() -> None:
    async def main() -> list[int]:
        results = []
        for batch in range(3):  # a drain that ran must not leave later commits waiting
            future: Future[int] = Future()
            waiter = wait_commit(future)
            _settle_in_thread([future], [batch])
            results.append(await asyncio.wait_for(waiter, 10))
        return results

    assert asyncio.run(main()) == [0, 1, 2]


def test_a_request_that_stops_waiting_leaves_its_write_and_the_others_alone() -> None:
    async def main() -> tuple[Future[int], int]:
        gone, kept = Future[int](), Future[int]()
        task = asyncio.ensure_future(wait_commit(gone))
        other = wait_commit(kept)
        await asyncio.sleep(0)
        task.cancel()  # the client went away
        with pytest.raises(asyncio.CancelledError):
            await task
        _settle_in_thread([gone, kept], [1, 2])
        return gone, await asyncio.wait_for(other, 10)

    gone, other = asyncio.run(main())
    assert not gone.cancelled() and gone.result() == 1 and other == 2


def test_a_write_already_committed_is_awaited_at_once() -> None:
    async def main() -> int:
        done: Future[int] = Future()
        done.set_result(7)
        return int(await asyncio.wait_for(wait_commit(done), 10))

    assert asyncio.run(main()) == 7
