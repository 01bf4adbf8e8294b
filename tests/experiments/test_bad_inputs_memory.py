"""Sizes that cannot fit in memory are refused before anything is allocated, naming the key.

Each case was reproduced before the fix: ``horizon = 10**12`` with
``schedule = { every = 100 }`` (the checkpoint list), ``n_items = 10**7`` for a
fixed-item environment (its blocks of rounds) and a synthetic data set of
``n_features = 10**6`` (its mixing matrix) ended in a ``MemoryError``
traceback; ``horizon = 2**70`` in an ``OverflowError`` traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oltr.build import make_env
from oltr.data.synthetic import synthetic_letor
from oltr.errors import EXIT_CODES, InputError, MemoryLimitError
from oltr.experiments.config import load_config
from oltr.experiments.schema import MAX_HORIZON, ConfigError
from oltr.validation import check_memory, physical_memory

CONFIG = """
[experiment]
name = "too-big"
seed = 1
horizon = HORIZON
reps = 1
measures = ["ndcg@1"]
schedule = { every = 100 }

[env]
name = "ENV"
params = PARAMS

[feedback]
name = "top-k"
params = { k = 1 }

[[learners]]
name = "random"
"""


def _fits(n_bytes: int) -> bool:
    """Whether this machine could hold ``n_bytes`` (then the case is not refused here)."""
    memory = physical_memory()
    return memory is None or memory >= n_bytes


def _write(tmp_path: Path, horizon: int, env: str, params: str) -> Path:
    text = CONFIG.replace("HORIZON", str(horizon)).replace("ENV", env).replace("PARAMS", params)
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


# Config, the smallest ask it makes (bytes), and what its one problem says.
CONFIG_CASES = {
    "checkpoints": (
        (10**12, "fixed-items-v1", "{ n_items = 5 }"),
        10**10 * 8,
        "experiment: schedule.every = 100 over horizon 1000000000000 (10000000000 checkpoints, "
        "a trace of 10000000000 rows) asks for ",
    ),
    "fixed-items": (
        (100, "fixed-items-v1", "{ n_items = 10_000_000 }"),
        1024 * 10**7 * 8,
        "env.params: n_items=10000000 (rounds are drawn 1024 at a time, 1024 x 10000000 values) "
        "asks for ",
    ),
    "choice-items": (
        (100, "ailon-choice-v1", "{ n_items = 10_000_000 }"),
        1024 * 10**7 * 8,
        "env.params: n_items=10000000 (rounds are drawn 1024 at a time",
    ),
    "synthetic-features": (
        (100, "letor-stream-v1", "{ n_features = 1_000_000 }"),
        10**12 * 8,
        "env: n_features=1000000 (a 1000000 x 1000000 mixing matrix) asks for 14.6 TiB, ",
    ),
}


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_oversized_config_is_refused_at_load_naming_the_key(tmp_path: Path, case: str) -> None:
    (horizon, env, params), smallest, expected = CONFIG_CASES[case]
    if _fits(smallest):
        pytest.skip("this machine has the memory the case asks for")
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, horizon, env, params))
    assert len(info.value.problems) == 1
    problem = info.value.problems[0]
    assert problem.startswith(expected), problem
    assert problem.endswith("; ask for less") and "more than this machine's memory" in problem


def test_horizon_beyond_exact_float_counting_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, 2**70, "fixed-items-v1", "{ n_items = 5 }"))
    assert info.value.problems == [
        f"experiment.horizon: Input should be less than or equal to {MAX_HORIZON}, got {2**70}"
    ]
    assert MAX_HORIZON == 2**53  # float64 counts every integer up to here exactly
    assert float(MAX_HORIZON) + 1 == MAX_HORIZON and float(MAX_HORIZON - 1) + 1 == MAX_HORIZON


def test_a_schedule_that_fits_is_not_refused(tmp_path: Path) -> None:
    loaded = load_config(_write(tmp_path, 10**6, "fixed-items-v1", "{ n_items = 5 }"))
    assert loaded.checkpoints[-2:] == (999_900, 10**6) and len(loaded.checkpoints) == 10**4


# ----------------------------------------------------------------------------- the library

LIBRARY_CASES: dict[str, tuple[Callable[[], Any], int, str]] = {
    "fixed-items": (
        lambda: make_env("fixed-items-v1", {"n_items": 10**7}),
        1024 * 10**7 * 8,
        "n_items=10000000",
    ),
    "fixed-items-graded": (
        lambda: make_env(
            "fixed-items-v1", {"n_items": 10**5, "kind": "graded", "max_grade": 10**4}
        ),
        1024 * 10**5 * 10**4,
        "n_items=100000 with max_grade=10000",
    ),
    "ct15-sim": (lambda: make_env("ct15-sim-v1", {"n_items": 10**7}), 8 * 10**10, "n_items="),
    "ailon-choice": (
        lambda: make_env("ailon-choice-v1", {"n_items": 10**7}),
        8 * 10**10,
        "n_items=",
    ),
    "spearman": (
        lambda: make_env("spearman-aggregation-v1", {"n_items": 10**7}),
        8 * 10**10,
        "n_items=",
    ),
    "synthetic-features": (
        lambda: synthetic_letor(n_features=10**6, rng=0),
        8 * 10**12,
        "n_features=1000000",
    ),
    "synthetic-queries": (
        lambda: synthetic_letor(n_queries=10**12, rng=0),
        8 * 10**12,
        "n_queries=1000000000000",
    ),
}


@pytest.mark.parametrize("case", list(LIBRARY_CASES))
def test_library_refuses_oversized_asks_with_a_typed_error(case: str) -> None:
    build, smallest, key = LIBRARY_CASES[case]
    if _fits(smallest):
        pytest.skip("this machine has the memory the case asks for")
    with pytest.raises(MemoryLimitError) as info:
        build()
    assert isinstance(info.value, InputError) and isinstance(info.value, MemoryError)
    assert str(info.value).startswith(key)
    assert "more than this machine's memory" in str(info.value)


def test_check_memory_names_both_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("oltr.validation.physical_memory", lambda: 2**30)
    check_memory(2**30, "exactly the memory")  # not refused
    with pytest.raises(MemoryLimitError, match=r"^k=3 asks for 1\.5 GiB, .*\(1\.0 GiB\)"):
        check_memory(3 * 2**29, "k=3")


# ----------------------------------------------------------------------------- the command line


@pytest.mark.parametrize("case", ["checkpoints", "fixed-items", "synthetic-features"])
def test_cli_refuses_oversized_configs_with_the_config_exit_code(tmp_path: Path, case: str) -> None:
    (horizon, env_name, params), smallest, expected = CONFIG_CASES[case]
    if _fits(smallest):
        pytest.skip("this machine has the memory the case asks for")
    config = _write(tmp_path, horizon, env_name, params)
    env = {**os.environ, "OLTR_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OLTR_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "oltr.cli", "run", str(config), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == EXIT_CODES["config"], proc.stderr
    assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    assert expected in proc.stderr
    assert not (tmp_path / "out").exists()
