"""What runs inside a sweep's worker: one run set, timed, with progress sent to the driver.

Used by every backend (in process, the local process pool, Ray). A worker
process runs one numerical thread (the pool already uses every core) and stops
when its driver dies, so a ``kill -9`` of the sweep leaves no orphan computing
results nobody stores.
"""

from __future__ import annotations

import os
import platform
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from oltr.experiments.runner import run_set

__all__ = ["RunSetFn"]


RunSetFn = Callable[..., pd.DataFrame]


#: Seconds between progress messages from a worker (keeps inter-process traffic small).
_FLUSH_EVERY = 0.25


def _default_run_set() -> RunSetFn:
    return run_set


def _compute(
    spec: Any, run_set_fn: RunSetFn | None, key: str
) -> tuple[str, pd.DataFrame, dict[str, Any]]:
    """Run one run set (in whichever process) and time it."""
    fn = run_set_fn if run_set_fn is not None else _default_run_set()
    started = datetime.now(UTC)
    t0 = time.perf_counter()
    reporter = _Reporter(key, len(spec.reps)) if _WORKER_QUEUE is not None else None
    trace = fn(spec, progress=reporter)
    if reporter is not None:
        reporter.flush()
    timing = {
        "wall_time_s": time.perf_counter() - t0,
        "started": started.isoformat(),
        "finished": datetime.now(UTC).isoformat(),
        "machine": platform.node(),
        "pid": os.getpid(),
    }
    return key, trace, timing


_WORKER_QUEUE: Any = None


class _Reporter:
    """Progress callback inside a worker: batches rounds and sends rounds x runs."""

    def __init__(self, key: str, n_runs: int) -> None:
        self.key, self.n_runs, self.pending, self.last = key, n_runs, 0, time.monotonic()

    def __call__(self, n_rounds: int) -> None:
        self.pending += int(n_rounds)
        now = time.monotonic()
        if now - self.last >= _FLUSH_EVERY:
            self.flush()
            self.last = now

    def flush(self) -> None:
        if self.pending:
            _WORKER_QUEUE.put((self.key, self.pending * self.n_runs))
            self.pending = 0


def _init_worker(progress_queue: Any, parent_pid: int) -> None:
    global _WORKER_QUEUE
    _WORKER_QUEUE = progress_queue
    _limit_threads()
    # An orphaned worker would compute results nobody stores: stop when the driver dies
    # (kill -9 gives it no chance to stop us itself).
    threading.Thread(target=_watch_parent, args=(parent_pid,), daemon=True).start()


def _watch_parent(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(0.5)
    os._exit(1)


def _limit_threads() -> None:
    # One numerical thread per worker process: the pool already uses every core.
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        return
    threadpool_limits(1)
