"""The service's store on its own: CPU per rank + feedback pair, no HTTP, no learner.

:class:`oltr.serve.store.Store` at its default durability (``synchronous=FULL``, WAL), driven
directly: each pair is a ranked list of ``m`` items with 46 features (``submit_rank``: the
impression, its features and its ``rank`` event) and then its feedback (``submit_feedback``: the
status change and the ``feedback`` event). The pairs are submitted ``batch`` at a time, as
concurrent requests would be, so one group commit (one ``fsync``) carries a batch's writes.
Reports this process's CPU (user + system, every thread: the caller and the writer) and wall
time per pair. It is the floor under ``oltr serve``'s CPU per pair that no HTTP stack or
learner work can remove (:mod:`bench_serve` measures the service whole).

Usage: ``python benchmarks/bench_store.py [--pairs N]`` (or ``python benchmarks/run.py store``).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from oltr.serve.store import Impression, Store

SIZES = (10, 50, 200)
BATCHES = (1, 8, 32)
N_FEATURES = 46


def cpu_seconds() -> float:
    """User + system CPU of this process (all its threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def per_pair(m: int, batch: int, pairs: int, folder: Path) -> tuple[float, float]:
    """(CPU ms, wall ms) per pair for ``pairs`` pairs of lists of ``m`` items."""
    rng = np.random.default_rng(0)
    features = rng.random((m, N_FEATURES))
    store = Store(folder / f"store-{m}-{batch}.db")
    try:
        store.add_ranker("r", {"learner": "rtopk"})

        def impression(t: int) -> Impression:
            order = rng.permutation(m).tolist()
            return Impression(
                "r", uuid.uuid4().hex, t, time.time(), m, features, [order], order,
                {}, {"pbm": [0.1] * 10}, "pending",
            )  # fmt: skip

        cpu, wall = cpu_seconds(), time.perf_counter()
        for start in range(0, pairs, batch):
            shown = [impression(t) for t in range(start, start + batch)]
            for done in [store.submit_rank(imp, {}) for imp in shown]:
                done.result()
            for done in [store.submit_feedback("r", imp.id, {"labels": [1]}) for imp in shown]:
                done.result()
        n = (pairs + batch - 1) // batch * batch
        return (cpu_seconds() - cpu) / n * 1e3, (time.perf_counter() - wall) / n * 1e3
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="pairs per row (default 2000)")
    pairs = parser.parse_args().pairs
    print(f"store alone, synchronous=FULL, {pairs} pairs per row; ms per rank + feedback pair")
    print(f"{'m':>4} {'batch':>6} {'CPU':>8} {'wall':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for m in SIZES:
            for batch in BATCHES:
                cpu, wall = per_pair(m, batch, pairs, Path(tmp))
                print(f"{m:>4} {batch:>6} {cpu:>8.3f} {wall:>8.3f}", flush=True)


if __name__ == "__main__":
    main()
