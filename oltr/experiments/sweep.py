"""Sweeps: run an experiment's run sets in parallel and store each one as it finishes.

Two backends run the same pure task, ``run_set(spec) -> trace``:

``local`` (default)
    A :class:`concurrent.futures.ProcessPoolExecutor` with ``jobs`` workers (all
    cores by default); ``jobs=1`` runs in this process, which is handy under a
    debugger. Workers report rounds done to a progress bar over rounds × runs.
``ray``
    Ray tasks (optional extra ``pip install "oltr[ray]"``, imported only when
    asked for), on a local Ray instance or on a cluster given by ``address``
    (``"auto"`` or ``"ray://host:10001"``; the workers need oltr installed). The
    progress bar advances as run sets finish.

Only this (driving) process writes results, so a worker on another machine needs
no shared disk. Each run set's randomness is keyed by the root seed and the
repetition index (``oltr.experiments.runner``), never by execution order, so the
traces are identical for any backend, number of workers or ``batch_size``.

Resuming: run sets whose trace already exists in the results folder are skipped,
and temporaries of an interrupted sweep are cleaned first (see
:mod:`oltr.experiments.storage`). Interrupting a sweep (Ctrl-C, ``kill -9``) loses
at most the run sets in flight: local workers stop when the driving process dies.
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import platform
import queue as queue_mod
import sys
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from oltr.errors import RunFailedError
from oltr.experiments import storage
from oltr.experiments.config import Experiment, PlannedRunSet
from oltr.experiments.workers import RunSetFn, _compute, _default_run_set, _init_worker
from oltr.version import __version__

__all__ = ["Backend", "SweepError", "SweepResult", "default_jobs", "run_experiment", "run_sweep"]

Backend = Literal["local", "ray"]


class SweepError(RunFailedError):
    """A run set raised while running; finished run sets were kept."""


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a sweep did: run sets computed now and run sets found finished."""

    results_dir: Path
    computed: tuple[str, ...]
    skipped: tuple[str, ...]


def default_jobs() -> int:
    """Worker processes used by default: the cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run_experiment(
    experiment: Experiment,
    *,
    out: str | Path | None = None,
    jobs: int | None = None,
    backend: Backend = "local",
    address: str | None = None,
    progress: bool = True,
    run_set_fn: RunSetFn | None = None,
) -> SweepResult:
    """Run a loaded experiment into ``out`` (default: its configured output folder).

    Writes the manifest (resolved config and run-set list) first, then runs every
    run set not yet finished; see :func:`run_sweep`.
    """
    _check_arguments(jobs, backend, address)  # before anything is written
    results_dir = Path(out) if out is not None else experiment.output
    storage.prepare_dir(results_dir)
    storage.prepare_dir(storage.runs_dir(results_dir), what="runs folder")
    manifest = {
        "format": storage.FORMAT_VERSION,
        "name": experiment.name,
        "description": experiment.description,
        "source": experiment.source,
        "size": experiment.size,
        "seed": experiment.seed,
        "seed_drawn": experiment.seed_drawn,
        "config": experiment.resolved,
        "run_sets": [
            {
                "run_set": rs.run_set_id,
                "label": rs.label,
                "params": rs.params,
                "reps": list(rs.spec.reps),
                **({} if rs.group is None else {"group": rs.group}),
            }
            for rs in experiment.run_sets
        ],
    }
    if experiment.reproduction is not None:
        manifest["reproduction"] = experiment.reproduction
    storage.write_manifest(results_dir, manifest)
    return run_sweep(
        experiment.run_sets,
        results_dir,
        config=experiment.resolved,
        jobs=jobs,
        backend=backend,
        address=address,
        progress=progress,
        run_set_fn=run_set_fn,
        description=experiment.name,
    )


def run_sweep(
    run_sets: Sequence[PlannedRunSet],
    results_dir: str | Path,
    *,
    config: dict[str, Any] | None = None,
    jobs: int | None = None,
    backend: Backend = "local",
    address: str | None = None,
    progress: bool = True,
    run_set_fn: RunSetFn | None = None,
    description: str = "sweep",
) -> SweepResult:
    """Run the unfinished ``run_sets`` and store each trace as it completes.

    Parameters
    ----------
    run_sets
        Planned run sets (from :func:`oltr.experiments.config.load_config`).
    results_dir
        Results folder; finished run sets found there are skipped.
    config
        Resolved config stored in every run set's record.
    jobs
        Worker processes (local) or run sets in flight (ray); default all cores
        (local) or as many as Ray schedules. Must be >= 1.
    backend
        ``"local"`` or ``"ray"``.
    address
        Ray cluster address (ray backend only); default: start a local instance.
    progress
        Show a tqdm progress bar (on stderr).
    run_set_fn
        The task, ``run_set(spec, *, progress=None) -> trace``; default
        :func:`oltr.experiments.runner.run_set`. Must be picklable.
    description
        Progress-bar label.

    Raises
    ------
    SweepError
        When a run set fails; run sets finished before (or in flight then) are kept.
    """
    _check_arguments(jobs, backend, address)
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    storage.clean_stale(results_dir)
    done = storage.finished_run_sets(results_dir)
    pending = [rs for rs in run_sets if rs.run_set_id not in done]
    skipped = tuple(rs.run_set_id for rs in run_sets if rs.run_set_id in done)
    if not pending:
        return SweepResult(results_dir, (), skipped)

    total = sum(rs.spec.horizon * len(rs.spec.reps) for rs in pending)
    bar = tqdm(
        total=total,
        desc=description,
        unit="round",
        unit_scale=True,
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    tracker = _Tracker(bar, {rs.run_set_id: rs for rs in pending}, results_dir, config, backend)
    tracker.positions = {rs.run_set_id: i for i, rs in enumerate(run_sets)}
    try:
        if backend == "ray":
            _run_ray(pending, tracker, jobs, address, run_set_fn)
        elif (workers := min(jobs or default_jobs(), len(pending))) == 1:
            _run_serial(pending, tracker, run_set_fn)
        else:
            _run_pool(pending, tracker, workers, run_set_fn)
    finally:
        bar.close()
    if tracker.error is not None:
        item, exc = tracker.error
        raise SweepError(
            f"run set {item.label!r} ({item.run_set_id}, reps {list(item.spec.reps)}) failed: "
            f"{type(exc).__name__}: {exc}; {len(tracker.computed)} run set(s) finished and were"
            " kept"
        ) from exc
    return SweepResult(results_dir, tuple(tracker.computed), skipped)


def _check_arguments(jobs: int | None, backend: str, address: str | None) -> None:
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if address is not None and backend != "ray":
        raise ValueError("address is only used by the ray backend (use backend='ray')")
    if backend == "ray":
        _import_ray()


# ----------------------------------------------------------------------------- bookkeeping


class _Tracker:
    """Progress and storage of finished run sets, in the driving process."""

    def __init__(
        self,
        bar: Any,
        items: dict[str, PlannedRunSet],
        results_dir: Path,
        config: dict[str, Any] | None,
        backend: str,
    ) -> None:
        self.bar = bar
        self.items = items
        self.results_dir = results_dir
        self.config = config
        self.backend = backend
        self.shown = dict.fromkeys(items, 0)
        self.positions: dict[str, int] = {}
        self.computed: list[str] = []
        self.error: tuple[PlannedRunSet, BaseException] | None = None

    def advance(self, key: str, n: int) -> None:
        size = self.items[key].spec.horizon * len(self.items[key].spec.reps)
        n = min(n, size - self.shown[key])  # never run past the run set's own share
        if n > 0:
            self.shown[key] += n
            self.bar.update(n)

    def finish(self, key: str, trace: pd.DataFrame, timing: dict[str, Any]) -> None:
        item = self.items[key]
        try:
            _check_trace(item, trace)
        except (TypeError, ValueError) as exc:
            self.fail(key, exc)
            return
        record = {
            "format": storage.FORMAT_VERSION,
            "run_set": key,
            "label": item.label,
            "params": item.params,
            "learner_index": item.learner_index,
            **({} if item.group is None else {"group": item.group}),
            "position": self.positions.get(key, 0),  # place in the config: report order
            "spec": dataclasses.asdict(item.spec),
            "seed": item.spec.seed,
            "config": self.config,
            "backend": self.backend,
            "versions": _versions(),
            **timing,
        }
        storage.write_run_set(self.results_dir, key, trace, record)
        self.computed.append(key)
        self.advance(key, item.spec.horizon * len(item.spec.reps))

    def fail(self, key: str, exc: BaseException) -> None:
        if self.error is None:
            self.error = (self.items[key], exc)


def _check_trace(item: PlannedRunSet, trace: pd.DataFrame) -> None:
    # A malformed trace stored once would count as finished forever: refuse it.
    if not isinstance(trace, pd.DataFrame) or not {"rep", "t"} <= set(trace.columns):
        raise TypeError(
            f"run set {item.run_set_id}: the task must return a DataFrame with"
            " 'rep' and 't' columns"
        )
    expected = len(item.spec.reps) * len(item.spec.checkpoints)
    if len(trace) != expected or set(trace["rep"].tolist()) != set(item.spec.reps):
        raise ValueError(
            f"run set {item.run_set_id}: trace has {len(trace)} rows for reps"
            f" {sorted(set(trace['rep'].tolist()))}; expected {expected} rows for reps"
            f" {list(item.spec.reps)}"
        )


def _versions() -> dict[str, str]:
    import pyarrow

    return {
        "oltr": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": pd.__version__,
        "pyarrow": pyarrow.__version__,
        "platform": platform.platform(),
    }


# ----------------------------------------------------------------------------- the task


# ----------------------------------------------------------------------------- local backend


def _run_serial(pending: Sequence[PlannedRunSet], tracker: _Tracker, fn: RunSetFn | None) -> None:
    for item in pending:
        key = item.run_set_id
        n_runs = len(item.spec.reps)
        run = fn if fn is not None else _default_run_set()
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        try:
            trace = run(item.spec, progress=lambda n, k=key, b=n_runs: tracker.advance(k, n * b))
        except Exception as exc:  # noqa: BLE001 - reported as a SweepError by the caller
            tracker.fail(key, exc)
            return
        timing = {
            "wall_time_s": time.perf_counter() - t0,
            "started": started.isoformat(),
            "finished": datetime.now(UTC).isoformat(),
            "machine": platform.node(),
            "pid": os.getpid(),
        }
        tracker.finish(key, trace, timing)


def _run_pool(
    pending: Sequence[PlannedRunSet], tracker: _Tracker, jobs: int, fn: RunSetFn | None
) -> None:
    ctx = mp.get_context()
    progress_queue = ctx.Queue()
    executor = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(progress_queue, os.getpid()),
    )
    futures: dict[Future[Any], str] = {
        executor.submit(_compute, item.spec, fn, item.run_set_id): item.run_set_id
        for item in pending
    }
    try:
        while futures:
            finished, _ = wait(futures, timeout=0.2, return_when=FIRST_COMPLETED)
            _drain(progress_queue, tracker)
            for future in finished:
                key = futures.pop(future)
                if future.cancelled():
                    continue
                exc = future.exception()
                if exc is not None:
                    tracker.fail(key, exc)
                    for other in futures:  # stop what has not started; let the rest finish
                        other.cancel()
                    continue
                tracker.finish(*future.result())
        executor.shutdown(wait=True)
    except BaseException:
        # Ctrl-C (or a storage error): stop the workers now instead of waiting for
        # their run sets; what they were computing is lost, everything stored stays.
        for process in list(getattr(executor, "_processes", {}).values()):
            process.terminate()
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        progress_queue.close()
        progress_queue.cancel_join_thread()


def _drain(progress_queue: Any, tracker: _Tracker) -> None:
    while True:
        try:
            key, n = progress_queue.get_nowait()
        except queue_mod.Empty:
            return
        if key in tracker.shown:
            tracker.advance(key, n)


# ----------------------------------------------------------------------------- ray backend


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError(
            "the ray backend needs Ray, which is not installed: pip install 'oltr[ray]'"
            " (or pip install 'ray>=2.9'), or use the local backend"
        ) from None
    return ray


def _run_ray(
    pending: Sequence[PlannedRunSet],
    tracker: _Tracker,
    jobs: int | None,
    address: str | None,
    fn: RunSetFn | None,
) -> None:
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None and jobs is not None:
            kwargs["num_cpus"] = jobs
        ray.init(address=address, **kwargs)
    task = ray.remote(num_cpus=1)(_compute)
    queue_items = list(pending)
    limit = jobs if jobs is not None else len(queue_items)
    in_flight: dict[Any, str] = {}
    try:
        while queue_items or in_flight:
            while queue_items and len(in_flight) < limit and tracker.error is None:
                item = queue_items.pop(0)
                in_flight[task.remote(item.spec, fn, item.run_set_id)] = item.run_set_id
            if not in_flight:
                break
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=0.5)
            for ref in ready:
                key = in_flight.pop(ref)
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - RayTaskError wraps the cause
                    tracker.fail(key, getattr(exc, "cause", None) or exc)
                    queue_items.clear()
                    continue
                tracker.finish(*result)
    except BaseException:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
