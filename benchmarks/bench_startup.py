"""How fast the command and the library start, and what the first run costs.

Usage: ``python benchmarks/bench_startup.py [--tree PATH] [--repeat N] [--no-demo | --demo-only]``.

Every figure is the wall time of a fresh process (best and median of ``--repeat``
runs) and its CPU time (user + system, median; it varies much less with the load
of a shared machine), printed with the machine's 1-minute load average when it
was taken:
``oltr --help``, a usage error, ``oltr --version``, ``import`` of the package and
of each subpackage (with the heavy libraries each one loads), and ``oltr demo``
twice on a fresh numba cache folder (the first run compiles the numerical
kernels, the second loads them). ``--tree PATH`` measures another checkout of
the package (put first on ``PYTHONPATH``), e.g. an older commit in a
``git worktree``. Prints only; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBPACKAGES = (
    "oltr",
    "oltr.metrics",
    "oltr.permutations",
    "oltr.surrogates",
    "oltr.theory",
    "oltr.data",
    "oltr.clicks",
    "oltr.feedback",
    "oltr.envs",
    "oltr.learners",
    "oltr.build",
    "oltr.experiments",
    "oltr.serve",
    "oltr.client",
    "oltr.cli",
)
HEAVY = (
    "numba",
    "scipy",
    "pandas",
    "pyarrow",
    "pydantic",
    "sklearn",
    "matplotlib",
    "fastapi",
    "uvicorn",
    "httpx",
    "rich",
    "tqdm",
)


def _env(tree: Path | None, **extra: str) -> dict[str, str]:
    env = dict(os.environ, **extra)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree), env.get("PYTHONPATH")]))
    return env


def _oltr() -> list[str]:
    script = Path(sys.executable).with_name("oltr")
    return [str(script)] if script.exists() else [sys.executable, "-m", "oltr.cli"]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(argv: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, output) of one run of ``argv``."""
    cpu, start = _cpu(), time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, _cpu() - cpu, done.stdout + done.stderr


def _row(label: str, argv: list[str], env: dict[str, str], repeat: int, note: str = "") -> str:
    walls, cpus, load = [], [], os.getloadavg()[0]
    for _ in range(repeat):
        wall, cpu, _ = _time(argv, env)
        walls.append(wall)
        cpus.append(cpu)
    best, median, cpu = min(walls), statistics.median(walls), statistics.median(cpus)
    return f"{label:<36} {best:>7.3f} {median:>7.3f} {cpu:>7.3f} {load:>6.2f}  {note}"


def _loaded(module: str, env: dict[str, str]) -> str:
    code = f"import sys, {module}; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode:
        return "(import failed: " + done.stderr.strip().splitlines()[-1] + ")"
    return done.stdout.strip() or "-"


def _startup(env: dict[str, str], oltr: list[str], repeat: int) -> None:
    print(_row("python -c pass", [sys.executable, "-c", "pass"], env, repeat))
    print(_row("import numpy", [sys.executable, "-c", "import numpy"], env, repeat))
    print(_row("oltr --help", [*oltr, "--help"], env, repeat))
    print(_row("oltr demo --no-such-option", [*oltr, "demo", "--no-such-option"], env, repeat))
    print(_row("oltr --version", [*oltr, "--version"], env, repeat))
    for module in SUBPACKAGES:
        argv = [sys.executable, "-c", f"import {module}"]
        print(_row(f"import {module}", argv, env, repeat, _loaded(module, env)))


def _demo(tree: Path | None, oltr: list[str]) -> None:
    """``oltr demo`` twice on one fresh numba cache folder: compiling, then loading."""
    cache = tempfile.mkdtemp(prefix="oltr-numba-")
    work = tempfile.mkdtemp(prefix="oltr-demo-")
    try:
        demo_env = _env(tree, NUMBA_CACHE_DIR=cache)
        for label in ("oltr demo, empty numba cache", "oltr demo, second run"):
            load = os.getloadavg()[0]
            out = str(Path(work) / label.split(",")[1].strip().replace(" ", "-"))
            wall, cpu, output = _time([*oltr, "demo", "--out", out], demo_env, cwd=work)
            notice = "notice printed" if "compiling" in output else "no notice"
            print(f"{label:<36} {wall:>7.1f} {'':>7} {cpu:>7.1f} {load:>6.2f}  {notice}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="Checkout of the package to measure instead.")
    parser.add_argument("--repeat", type=int, default=5, help="Runs per figure (default 5).")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--no-demo", action="store_true", help="Skip the two `oltr demo` runs.")
    which.add_argument("--demo-only", action="store_true", help="Only the two `oltr demo` runs.")
    args = parser.parse_args()
    env = _env(args.tree)
    oltr = _oltr()

    header = f"{'what':<36} {'best s':>7} {'median':>7} {'cpu s':>7} {'load':>6}  loads"
    print(header)
    print("-" * len(header))
    if not args.demo_only:
        _startup(env, oltr, args.repeat)
    if not args.no_demo:
        _demo(args.tree, oltr)


if __name__ == "__main__":
    main()
