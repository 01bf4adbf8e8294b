"""Time LETOR parsing and cached loading against a plain Python line-loop parser.

Usage: ``python benchmarks/bench_letor.py [--lines N]``. Two inputs:

* the largest LETOR file in ``../shared/data`` (skipped, with a note, when absent);
* a synthetic LETOR file of at least ``N`` lines (default 1,000,000) with 46
  features, written with :func:`oltr.data.letor.write_letor` (6 significant
  digits) into a temporary folder that is removed afterwards.

For each it prints lines per second of :func:`load_letor` without the cache
(compiled tokeniser, dense matrix, grouping, validation), of the same load
through scikit-learn's ``load_svmlight_file`` (the reference parser), and of
the Python line-loop baseline below (wall and CPU time; the tokeniser is
compiled first and memory pre-touched, so neither cost is timed); the time
of a cached load (memory map; with the file's digest remembered, and with the
digest recomputed from the bytes); and the ratios. Targets: parsing >= 10x
the baseline; cached load >= 50x faster than parsing. Prints only; asserts
nothing.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from oltr.data import letor
from oltr.data.cache import cache_root
from oltr.data.letor import load_letor, write_letor
from oltr.data.svmlight import _find_group_file
from oltr.data.synthetic import synthetic_letor

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
MIN_LINES = 1_000_000
N_FEATURES = 46


def line_loop_parse(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The baseline: a Python loop over lines and tokens, then arrays.

    Splits each line, parses every ``i:v`` token into Python lists and builds
    a dense matrix, grades and per-line qids from them (in chunks, to bound
    the memory held in Python objects). No validation, no grouping.
    """
    with open(path, "rb") as probe:
        opener: Callable[..., Any] = gzip.open if probe.read(2) == b"\x1f\x8b" else open
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    labels: list[float] = []
    qids: list[int] = []
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []

    def flush() -> None:
        chunks.append(
            (np.array(labels), np.array(qids), np.array(rows), np.array(cols), np.array(vals))
        )
        for buffer in (labels, qids, rows, cols, vals):
            buffer.clear()

    n_lines = 0
    with opener(path, "rt") as f:
        for line in f:
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            labels.append(float(tokens[0]))
            qids.append(int(tokens[1][4:]))
            for token in tokens[2:]:
                index, value = token.split(":")
                rows.append(n_lines)
                cols.append(int(index) - 1)
                vals.append(float(value))
            n_lines += 1
            if len(labels) == 100_000:
                flush()
    flush()
    y = np.concatenate([c[0] for c in chunks])
    q = np.concatenate([c[1] for c in chunks]).astype(np.int64)
    r = np.concatenate([c[2] for c in chunks]).astype(np.int64)
    c = np.concatenate([c[3] for c in chunks]).astype(np.int64)
    X = np.zeros((n_lines, int(c.max()) + 1))
    X[r, c] = np.concatenate([c[4] for c in chunks])
    return X, y, q


def timed(fn: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Median wall time and median CPU time (this process) of ``repeats`` calls, last result.

    CPU time is reported beside wall time because on a shared machine other
    processes stretch wall time; the work a parser does shows in its CPU time.
    """
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus), result


def warm_memory(n_bytes: int) -> None:
    """Touch and free ``n_bytes`` once, so that no timed parser pays the first
    touch of fresh memory (slow on virtual machines; the allocator reuses it)."""
    np.ones(n_bytes // 8).sum()


def row(name: str, wall: float, cpu: float, n: int, note: str = "") -> None:
    print(
        f"  {name:<24}{wall:>9.3f} s {cpu:>9.3f} s {n / wall:>12,.0f} {n / cpu:>12,.0f}  {note}",
        flush=True,
    )


def bench(label: str, path: Path, cache_dir: Path, *, repeats: int) -> None:
    size_mb = path.stat().st_size / 1e6
    print(f"\n{label}: {path} ({size_mb:,.1f} MB on disk)", flush=True)
    print(f"  {'':<24}{'wall':>11} {'cpu':>11} {'lines/s wall':>12} {'lines/s cpu':>12}")
    ds = load_letor(path, cache=False)  # compile (or load) the tokeniser; warm the page cache
    n = ds.n_docs
    warm_memory(3 * ds.features.nbytes)
    wall, cpu, ds = timed(lambda: load_letor(path, cache=False), repeats)
    row("load_letor (no cache)", wall, cpu, n, "compiled tokeniser")
    group = _find_group_file(path)
    sk_wall, sk_cpu, _ = timed(
        lambda: letor._parse(path, group, False, engine="sklearn"), max(1, repeats // 2)
    )
    row("sklearn parser", sk_wall, sk_cpu, n, "load_svmlight_file + dense")
    base_wall, base_cpu, (X, y, q) = timed(lambda: line_loop_parse(path), max(1, repeats // 2))
    agree = np.array_equal(X, ds.features) and np.array_equal(y, ds.relevance)
    row("line-loop baseline", base_wall, base_cpu, n, f"same numbers: {agree}")
    del X, y, q
    shutil.rmtree(cache_dir, ignore_errors=True)
    first_wall, _, _ = timed(lambda: load_letor(path, cache_dir=cache_dir), 1)
    cached_wall, _, cached = timed(lambda: load_letor(path, cache_dir=cache_dir), 5)
    if not np.array_equal(cached.features, ds.features):
        print("  WARNING: the cached load differs from the parse")
    digests = cache_root(cache_dir) / "digests"

    def rehash_then_load() -> Any:
        shutil.rmtree(digests, ignore_errors=True)
        return load_letor(path, cache_dir=cache_dir)

    rehash_wall, _, _ = timed(rehash_then_load, 3)
    print(f"  first load, cache on : {first_wall:9.3f} s  (parse + hash + store)")
    print(f"  cached load          : {cached_wall * 1e3:9.2f} ms (digest remembered)")
    print(f"  cached load, rehash  : {rehash_wall * 1e3:9.2f} ms (digest recomputed from bytes)")
    print(
        f"  parse speed-up over the line loop : {base_cpu / cpu:6.1f}x cpu, "
        f"{base_wall / wall:6.1f}x wall  (target >= 10x)"
    )
    print(
        f"  sklearn over the line loop        : {base_cpu / sk_cpu:6.1f}x cpu, "
        f"{base_wall / sk_wall:6.1f}x wall"
    )
    print(f"  cached load vs parse              : {wall / cached_wall:6.0f}x wall  (target >= 50x)")
    print(f"  cached load (rehash) vs parse     : {wall / rehash_wall:6.0f}x wall", flush=True)


def largest_shared_file() -> Path | None:
    if not (SHARED_DATA / "MANIFEST.md").is_file():
        return None
    files = [
        p
        for p in SHARED_DATA.rglob("*.gz")
        if not p.name.endswith((".query.gz", ".qrel.gz", ".json.gz"))
    ]
    return max(files, key=lambda p: p.stat().st_size, default=None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=MIN_LINES, help="minimum synthetic lines")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="oltr-bench-letor-") as tmp:
        work = Path(tmp)
        real = largest_shared_file()
        if real is None:
            print(f"(real data skipped: {SHARED_DATA} not found)")
        else:
            bench("largest shared LETOR file", real, work / "cache-real", repeats=5)

        t0 = time.perf_counter()
        # Mean list length is about 20.3 documents (5..60, log-normal).
        n_queries = int(args.lines / 19.5) + 1
        ds = synthetic_letor(n_queries=n_queries, n_features=N_FEATURES, rng=0)
        if ds.n_docs < args.lines:
            ds = synthetic_letor(n_queries=int(n_queries * 1.1), n_features=N_FEATURES, rng=0)
        path = work / "synthetic.txt"
        write_letor(ds, path, precision=6)
        print(
            f"\nwrote {ds.n_docs:,} lines x {N_FEATURES} features ({ds.n_queries:,} queries) "
            f"in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        del ds
        bench("synthetic LETOR file", path, work / "cache-synth", repeats=3)


if __name__ == "__main__":
    main()
