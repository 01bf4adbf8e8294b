"""Config files, data paths and results records that are not what they seem, named as such.

Each case was reproduced before the fix: a config with a UTF-8 byte-order mark
was refused as "Invalid statement (at line 1, column 1)"; a config or an
``[env] path`` that is a folder or a FIFO was reported as "file not found"
(or "no such file"); a damaged ``runs/<id>.json`` beside an intact Parquet
trace was ignored, the trace counted as finished and read as if checked.
"""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from oltr.errors import EXIT_CODES, StorageError
from oltr.experiments import storage, sweep
from oltr.experiments.config import load_config, parse_config
from oltr.experiments.schema import ConfigError

CONFIG = """
[experiment]
name = "files"
seed = 1
horizon = 20
reps = 1
measures = ["ndcg@1"]
schedule = { every = 10 }

[env]
name = "letor-stream-v1"
params = { path = "PATH" }

[feedback]
name = "top-k"
params = { k = 1 }

[[learners]]
name = "random"
"""

DATA = "1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0.3\n2 qid:2 1:1 2:0\n0 qid:2 1:0 2:1\n"


def _config(tmp_path: Path, data_path: str = "train.txt") -> Path:
    (tmp_path / "train.txt").write_text(DATA)
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG.replace("PATH", data_path), encoding="utf-8")
    return path


def _not_a_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"odd-{kind}"
    if kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)  # opening it for reading would block: it must never be opened
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return info.value.problems


# ----------------------------------------------------------------------------- byte-order mark


def test_config_with_a_byte_order_mark_is_read_as_without(tmp_path: Path) -> None:
    plain = _config(tmp_path)
    marked = tmp_path / "marked.toml"
    marked.write_bytes(codecs.BOM_UTF8 + plain.read_bytes())
    assert load_config(marked).resolved == load_config(plain).resolved


def test_bad_byte_after_a_byte_order_mark_is_named_at_its_file_offset(tmp_path: Path) -> None:
    path = tmp_path / "marked.toml"
    head = codecs.BOM_UTF8 + b'[experiment]\nname = "caf'
    path.write_bytes(head + b'\xe9"\n')
    (problem,) = _problems(path)
    assert f"byte 0xe9 at byte offset {len(head)} (line 2)" in problem


def test_a_byte_order_mark_inside_the_file_is_still_a_syntax_error(tmp_path: Path) -> None:
    path = _config(tmp_path)
    path.write_bytes(b"\n" + codecs.BOM_UTF8 + path.read_bytes())
    (problem,) = _problems(path)
    assert problem.startswith("TOML syntax error")


# ----------------------------------------------------------------------------- not regular files

CASES: dict[str, tuple[str, str]] = {
    "folder": ("folder", "is a folder, not a file"),
    "fifo": ("fifo", "is not a regular file (a FIFO)"),
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("case", list(CASES))
def test_config_path_that_is_not_a_file_is_named_as_such(tmp_path: Path, case: str) -> None:
    kind, said = CASES[case]
    assert _problems(_not_a_file(tmp_path, kind)) == [said]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("where", ["env", "heldout"])
@pytest.mark.parametrize("case", list(CASES))
def test_data_path_that_is_not_a_file_is_named_under_its_key(
    tmp_path: Path, case: str, where: str
) -> None:
    kind, said = CASES[case]
    odd = _not_a_file(tmp_path, kind)
    if where == "env":
        config = _config(tmp_path, odd.name)
    else:
        config = _config(tmp_path)
        config.write_text(config.read_text() + f'\n[heldout]\npath = "{odd.name}"\n')
    key = "env.params.path" if where == "env" else "heldout.path"
    assert _problems(config) == [f"{key}: {odd} {said}"]


def test_missing_config_is_still_not_found(tmp_path: Path) -> None:
    assert _problems(tmp_path / "absent.toml") == ["file not found"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("what", ["config", "env-path"])
def test_cli_names_a_fifo_without_blocking(tmp_path: Path, what: str) -> None:
    fifo = _not_a_file(tmp_path, "fifo")
    config = fifo if what == "config" else _config(tmp_path, fifo.name)
    env = {**os.environ, "OLTR_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OLTR_DEBUG", None)
    proc = subprocess.run(  # a reader blocked on the FIFO would run into the timeout
        [sys.executable, "-m", "oltr.cli", "run", str(config), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == EXIT_CODES["config"], proc.stderr
    assert "is not a regular file (a FIFO)" in proc.stderr and "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- results records

DAMAGES: dict[str, tuple[Callable[[bytes], bytes], str]] = {
    "truncated": (lambda b: b[: len(b) // 2], "not valid JSON at line"),
    "emptied": (lambda b: b"", "not valid JSON at line 1"),
    "not-utf8": (lambda b: b"\xff" + b[1:], "can't decode byte 0xff"),
    "a-list": (lambda b: b"[1, 2]\n", "a JSON list, not an object"),
    "bad-checksum-entry": (
        lambda b: json.dumps({**json.loads(b), "trace_file": {"size": "12"}}).encode(),
        "its trace_file entry is not a size and a SHA-256",
    ),
}

EXPERIMENT = {
    "experiment": {
        "name": "rec",
        "seed": 2,
        "horizon": 30,
        "reps": 2,
        "measures": ["ndcg@3"],
        "schedule": {"every": 10},
    },
    "env": {"name": "fixed-items-v1", "params": {"n_items": 4}},
    "feedback": {"name": "top-k", "params": {"k": 1}},
    "learners": [{"name": "random"}, {"name": "fixed"}],
}


@pytest.mark.parametrize("case", list(DAMAGES))
def test_damaged_record_beside_intact_trace_is_reported_and_recomputed(
    tmp_path: Path, case: str
) -> None:
    damage, said = DAMAGES[case]
    exp = parse_config(EXPERIMENT)
    sweep.run_experiment(exp, out=tmp_path, jobs=1, progress=False)
    rid = exp.run_sets[0].run_set_id
    sidecar = storage.runs_dir(tmp_path) / f"{rid}.json"
    trace = sidecar.with_suffix(".parquet")
    before, good_record = pd.read_parquet(trace), sidecar.read_bytes()
    sidecar.write_bytes(damage(good_record))

    damaged = storage.damaged_run_sets(tmp_path)
    assert list(damaged) == [rid]
    assert damaged[rid].startswith(f"its record {rid}.json is damaged (")
    assert said in damaged[rid] and damaged[rid].endswith("so the trace cannot be checked")
    assert storage.finished_run_sets(tmp_path) == {exp.run_sets[1].run_set_id}
    with pytest.raises(StorageError, match=rf"{rid}\.parquet: damaged trace .*oltr run"):
        storage.load_results(tmp_path)

    result = sweep.run_experiment(exp, out=tmp_path, jobs=1, progress=False)
    assert result.computed == (rid,)  # only the unchecked run set is recomputed ...
    pd.testing.assert_frame_equal(pd.read_parquet(trace), before, check_exact=True)
    assert json.loads(sidecar.read_bytes())["label"] == json.loads(good_record)["label"]
    assert storage.damaged_run_sets(tmp_path) == {}


def test_trace_without_a_record_is_still_read_from_its_own_metadata(tmp_path: Path) -> None:
    exp = parse_config(EXPERIMENT)
    sweep.run_experiment(exp, out=tmp_path, jobs=1, progress=False)
    rid = exp.run_sets[0].run_set_id
    (storage.runs_dir(tmp_path) / f"{rid}.json").unlink()
    assert storage.damaged_run_sets(tmp_path) == {}
    assert rid in set(storage.load_results(tmp_path)["run_set"])
