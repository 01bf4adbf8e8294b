"""Time Ailon's two noisy sorts: Plackett–Luce (Gumbel-max) and noisy QuickSort.

Usage: ``python benchmarks/bench_sorts.py``. For n items and B rows per call it
prints the median wall time of one call and the time per row. The first
QuickSort call loads (or compiles) the numba kernel; that one-off cost is
printed separately and kept out of the table. Prints only; asserts nothing.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from oltr.permutations import noisy_quicksort, plackett_luce

SIZES = (10, 100, 1_000, 10_000)
BATCHES = (1, 100)
MIN_SECONDS = 0.25  # per cell: repeat until this much time has passed ...
MIN_REPEATS = 5  # ... and at least this many calls


def median_seconds(
    sort: Callable[[np.ndarray, np.random.Generator], np.ndarray], w: np.ndarray
) -> float:
    """Median wall time of ``sort(w, rng)`` over repeated calls with one Generator."""
    rng = np.random.default_rng(0)
    sort(w, rng)  # warm caches
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MIN_REPEATS or time.perf_counter() - start < MIN_SECONDS:
        t0 = time.perf_counter()
        sort(w, rng)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    t0 = time.perf_counter()
    noisy_quicksort(np.zeros(3), 0)
    print(f"noisy_quicksort first call (numba load/compile): {time.perf_counter() - t0:.2f} s\n")

    header = f"{'n':>6} {'B':>4} | {'sort':<16} {'ms / call':>10} {'us / row':>10}"
    print(header)
    print("-" * len(header))
    weights = np.random.default_rng(1)
    for n in SIZES:
        for b in BATCHES:
            w = weights.normal(size=(b, n))
            for sort in (plackett_luce, noisy_quicksort):
                sec = median_seconds(sort, w)
                print(
                    f"{n:>6} {b:>4} | {sort.__name__:<16} {sec * 1e3:>10.3f} "
                    f"{sec * 1e6 / b:>10.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
