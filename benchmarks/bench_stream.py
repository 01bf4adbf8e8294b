"""Stream a LETOR file larger than memory should need: cached load, rate and resident memory.

Usage: ``python benchmarks/bench_stream.py [--gb 0.25] [--rounds 3000] [--dir TMP]``.

Writes a synthetic LETOR text file of about ``--gb`` GB (46 features, MQ2008-like
lists; :func:`oltr.data.synthetic.synthetic_letor` in chunks of 5,000 queries,
:func:`oltr.data.letor.write_letor`) and a small one (300 queries, whose parsed
data fit in the CPU caches) into a temporary folder under ``--dir``, with a
private LETOR cache beside them, and deletes it all at the end. Each
measurement runs in a fresh process, so its memory figures are its own:

* ``parse``: the first load (parse + cache store);
* ``first cached``: the next load, which also checks the cached arrays' digests
  (and remembers them, see :mod:`oltr.data.cache`);
* ``cached``: a load as every later one is, then ``--rounds`` rounds of
  ``letor-stream-v1`` (uniform query order) with top-1 feedback to RTop-kF
  (squared surrogate) at B = 64: rate in rounds × runs per second;

each without and with per-query normalisation (``normalize=True``, whose
result the cache keeps too). Resident memory is read from ``/proc``:
``RssAnon`` (the process's own memory: what a copy of the data would grow),
``RssData`` (resident pages of the memory-mapped cache files: the data pages
touched so far, page cache that is shared and reclaimable) and ``VmHWM``
(peak resident), against the size of the data a load maps (the cached
``.npy`` files). Prints only; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

N_FEATURES = 46
N_RUNS = 64
CHUNK_QUERIES = 5_000
SMALL_QUERIES = 300  # the small file: about 6 MB of text, 3 MB parsed, in the CPU caches


def status_mb() -> dict[str, float]:
    """RssAnon, RssFile and VmHWM of this process in MB (/proc/self/status), and RssData.

    ``RssData`` is the resident part of the mappings of the LETOR cache's files
    (``/proc/self/smaps``): the data pages this process has touched.
    """
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024  # kB
    cache, data_kb, in_cache = os.environ.get("OLTR_CACHE_DIR", "\0"), 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and not fields[0].endswith(":"):  # a mapping's header
            in_cache = len(fields) >= 6 and fields[5].startswith(cache)
        elif in_cache and fields[:1] == ["Rss:"]:
            data_kb += int(fields[1])
    out["RssData"] = data_kb / 1024
    return out


def write_file(path: Path, target_bytes: float, seed: int) -> int:
    """Append synthetic chunks (distinct qids) to ``path`` until it holds ``target_bytes``."""
    from oltr.data import LetorDataset, synthetic_letor, write_letor

    n_queries, part = 0, path.with_name(path.name + ".part")
    with open(path, "wb") as out:
        while out.tell() < target_bytes:
            size = min(CHUNK_QUERIES, max(1, int(target_bytes // 21_000)))
            chunk = synthetic_letor(
                n_queries=size, n_features=N_FEATURES, min_docs=5, max_docs=60, rng=seed
            )
            seed += 1
            shifted = LetorDataset(
                features=chunk.features,
                relevance=chunk.relevance,
                qids=chunk.qids + n_queries,
                offsets=chunk.offsets,
                check_values=False,
            )
            write_letor(shifted, part)
            out.write(part.read_bytes())
            n_queries += size
    part.unlink()
    return n_queries


def child(path: str, rounds: int, normalize: bool) -> None:
    """One measurement in this fresh process; prints a JSON line."""
    from oltr.data import load_letor
    from oltr.envs.stream import LetorStreamEnv
    from oltr.feedback.feedback_models import TopKFeedbackModel
    from oltr.learners.base import Learner
    from oltr.learners.rtopk import RTopKF

    before = status_mb()
    start = time.perf_counter()
    data = load_letor(path, normalize=normalize)
    load_s = time.perf_counter() - start
    loaded = status_mb()
    result: dict[str, object] = {"load_s": load_s, "before": before, "loaded": loaded}
    if rounds:
        env = LetorStreamEnv(dataset=data, feedback=TopKFeedbackModel(k=1))
        env.reset(rng=0)
        lrn: Learner[Any] = RTopKF(surrogate="squared", n_runs=N_RUNS, rng=1)  # any feedback
        for t in range(1, 51):  # warm-up: compiled kernels, first allocations
            ctx = env.observe(t)
            orders = lrn.rank(ctx)
            lrn.update(ctx, orders, env.feedback(orders).restrict(lrn.requires))
        start = time.perf_counter()
        for t in range(51, 51 + rounds):
            ctx = env.observe(t)
            orders = lrn.rank(ctx)
            lrn.update(ctx, orders, env.feedback(orders).restrict(lrn.requires))
        result["rate"] = rounds * N_RUNS / (time.perf_counter() - start)
        result["streamed"] = status_mb()
    print(json.dumps(result))


def measure(path: Path, cache: Path, rounds: int, normalize: bool) -> dict[str, object]:
    env = dict(os.environ, OLTR_CACHE_DIR=str(cache))
    cmd = [sys.executable, __file__, "--child", str(path), "--rounds", str(rounds)]
    cmd += ["--normalize"] if normalize else []
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def cached_bytes(cache: Path, name: str, normalize: bool) -> int:
    """Size of the data a load maps: the ``.npy`` files of the entry it reads.

    The parsed file's entry without ``normalize``; its normalised entry (the
    larger ``features.npy`` written second) with it.
    """
    entries = [
        meta.parent
        for meta in cache.rglob("meta.json")
        if json.loads(meta.read_text())["source"].endswith(name)
    ]
    entries.sort(key=lambda e: (e / "meta.json").stat().st_mtime_ns)
    entry = entries[-1] if normalize else entries[0]
    return sum(f.stat().st_size for f in entry.glob("*.npy"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=0.25, help="size of the large file, GB")
    parser.add_argument("--rounds", type=int, default=3000, help="rounds streamed per file")
    parser.add_argument("--dir", default=None, help="folder for the temporary files")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--normalize", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child, args.rounds, args.normalize)
        return
    with tempfile.TemporaryDirectory(prefix="oltr-bench-stream-", dir=args.dir) as tmp:
        folder, cache = Path(tmp), Path(tmp) / "cache"
        rows = []
        for name, target in (("small", SMALL_QUERIES * 21_000), ("large", args.gb * 1e9)):
            path = folder / f"{name}.txt"
            start = time.perf_counter()
            n_queries = write_file(path, target, seed=0)
            write_s = time.perf_counter() - start
            print(
                f"{name}: {path.stat().st_size / 1e9:.2f} GB, {n_queries} queries, "
                f"written in {write_s:.0f} s",
                flush=True,
            )
            for normalize in (False, True):
                parse = measure(path, cache, 0, normalize)
                time.sleep(2.5)  # let the cached files settle, so their digests are remembered
                first = measure(path, cache, 0, normalize)
                run = measure(path, cache, args.rounds, normalize)
                rows.append((name, normalize, path.stat().st_size, parse, first, run))
        print(f"\nRTop-kF (squared, top-1 feedback), B = {N_RUNS}, {args.rounds} rounds per file")
        header = (
            f"{'file':<6} {'norm':>5} {'text GB':>8} {'data MB':>8} | {'parse s':>8} "
            f"{'1st cached s':>13} {'cached s':>9} | {'rounds*B/s':>11} {'ratio':>6} | "
            f"{'RssAnon MB':>11} {'+load':>6} {'RssData MB':>11} {'VmHWM MB':>9}"
        )
        print(header)
        print("-" * len(header))
        base: dict[bool, float] = {}
        for name, normalize, size, parse, first, run in rows:
            rate = float(run["rate"])  # type: ignore[arg-type]
            base.setdefault(normalize, rate)
            before, mem = run["before"], run["streamed"]
            assert isinstance(before, dict) and isinstance(mem, dict)
            data_mb = cached_bytes(cache, f"{name}.txt", normalize) / 1e6
            print(
                f"{name:<6} {'yes' if normalize else 'no':>5} {size / 1e9:>8.2f} {data_mb:>8.0f} | "
                f"{parse['load_s']:>8.2f} {first['load_s']:>13.2f} {run['load_s']:>9.3f} | "
                f"{rate:>11,.0f} {rate / base[normalize]:>6.2f} | {mem['RssAnon']:>11.0f} "
                f"{mem['RssAnon'] - before['RssAnon']:>+6.0f} {mem['RssData']:>11.0f} "
                f"{mem['VmHWM']:>9.0f}",
                flush=True,
            )
        print(
            "memory after streaming; +load: RssAnon growth from before the load; "
            f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )


if __name__ == "__main__":
    main()
