"""Run every benchmark in this folder (or those named) and print their reports.

Usage: ``python benchmarks/run.py [NAME ...]`` where NAME is e.g. ``letor`` for
``bench_letor.py``; each runs with its default options (run a script directly to
pass its own, e.g. ``python benchmarks/bench_stream.py --gb 2``). Benchmarks
print tables; they assert nothing.
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(names: list[str]) -> None:
    scripts = sorted(HERE.glob("bench_*.py"))
    if names:
        wanted = {f"bench_{n.removeprefix('bench_').removesuffix('.py')}.py" for n in names}
        unknown = wanted - {s.name for s in scripts}
        if unknown:
            have = [s.name for s in scripts]
            raise SystemExit(f"unknown benchmark(s): {sorted(unknown)}; have {have}")
        scripts = [s for s in scripts if s.name in wanted]
    for script in scripts:
        print(f"\n=== {script.name}", flush=True)
        start = time.perf_counter()
        argv, sys.argv = sys.argv, [str(script)]  # each benchmark runs with its defaults
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            sys.argv = argv
        print(f"--- {script.name} took {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
