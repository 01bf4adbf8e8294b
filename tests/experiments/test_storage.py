"""Results storage: content-hash ids, atomic writes, completion marker, loading."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from oltr.errors import StorageError
from oltr.experiments import storage
from oltr.experiments.runner import RunSetSpec


def _spec(**changes: object) -> RunSetSpec:
    base = dict(
        env="fixed-items-v1",
        env_params={"n_items": 4},
        feedback="top-k",
        feedback_params={"k": 1},
        learner="random",
        learner_params={},
        reps=(0, 1),
        seed=7,
        horizon=20,
        measures=("sumloss",),
        checkpoints=(1, 10, 20),
    )
    base.update(changes)
    return RunSetSpec(**base)  # type: ignore[arg-type]


def _trace(
    reps: tuple[int, ...] = (0, 1), checkpoints: tuple[int, ...] = (1, 10, 20)
) -> pd.DataFrame:
    rows = []
    for rep in reps:
        cum = 0.0
        for t in checkpoints:
            cum += rep + t
            rows.append(
                {
                    "rep": rep,
                    "t": t,
                    "sumloss": float(rep + t),
                    "sumloss:cum": cum,
                    "sumloss:avg": cum / t,
                    "sumloss:regret": np.nan,
                }
            )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- ids


CHANGES = {
    "env": "other-env-v1",
    "env_params": {"n_items": 5},
    "feedback": "full",
    "feedback_params": {"k": 2},
    "learner": "fixed",
    "learner_params": {"eta": 0.1},
    "reps": (0, 1, 2),
    "seed": 8,
    "horizon": 21,
    "measures": ("sumloss", "ndcg"),
    "checkpoints": (1, 20),
    "heldout": {"path": "/data/test.txt"},
    "heldouts": {"test": {"path": "/data/test.txt"}},
    "online_discount": 0.9995,
    "no_relevant": 0.0,
    "streams": "per-run",
}


def test_changes_cover_every_spec_field() -> None:
    assert set(CHANGES) == {f.name for f in dataclasses.fields(RunSetSpec)}


@pytest.mark.parametrize("field", sorted(CHANGES))
def test_run_set_id_changes_with_every_field(field: str) -> None:
    changed = _spec()
    # Set the one field directly: the spec's own checks tie horizon and checkpoints.
    object.__setattr__(changed, field, CHANGES[field])
    assert storage.run_set_id(changed) != storage.run_set_id(_spec())


def test_run_set_id_ignores_dict_key_order() -> None:
    a = _spec(learner_params={"eta": 0.1, "k": 2})
    b = _spec(learner_params={"k": 2, "eta": 0.1})
    assert storage.run_set_id(a) == storage.run_set_id(b)


def test_run_set_id_is_the_same_in_another_process() -> None:
    # Python's str hash is salted per process; the id must not depend on it.
    code = (
        "from oltr.experiments.runner import RunSetSpec; from oltr.experiments import storage;"
        "print(storage.run_set_id(RunSetSpec(env='fixed-items-v1', env_params={'n_items': 4},"
        " feedback='top-k', feedback_params={'k': 1}, learner='random', learner_params={},"
        " reps=(0, 1), seed=7, horizon=20, measures=('sumloss',), checkpoints=(1, 10, 20))))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == storage.run_set_id(_spec())


def test_run_set_id_shape() -> None:
    rid = storage.run_set_id(_spec())
    assert len(rid) == 16 and all(c in "0123456789abcdef" for c in rid)


# ----------------------------------------------------------------------------- writing and reading


def _record(label: str = "random", params: dict | None = None, index: int = 0) -> dict:
    return {"label": label, "params": params or {}, "learner_index": index, "spec": {}}


def test_round_trip(tmp_path: Path) -> None:
    spec = _spec()
    rid = storage.run_set_id(spec)
    trace = _trace()
    path = storage.write_run_set(tmp_path, rid, trace, _record("rnd", {"eta": 0.5}))
    assert path == tmp_path / "runs" / f"{rid}.parquet"
    assert json.loads((tmp_path / "runs" / f"{rid}.json").read_text())["label"] == "rnd"
    df = storage.load_results(tmp_path)
    assert list(df.columns[:3]) == ["run_set", "learner", "params"]
    assert (df["run_set"] == rid).all() and (df["learner"] == "rnd").all()
    assert json.loads(df["params"].iloc[0]) == {"eta": 0.5}
    pd.testing.assert_frame_equal(df.drop(columns=["run_set", "learner", "params"]), trace)
    # The Parquet file describes itself.
    meta = json.loads(pq.read_schema(path).metadata[b"oltr"])
    assert meta["label"] == "rnd"
    assert storage.finished_run_sets(tmp_path) == {rid}


def test_record_must_name_label_and_params(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="label"):
        storage.write_run_set(tmp_path, "abc", _trace(), {"params": {}})


def test_parquet_is_written_last(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    targets: list[str] = []
    real = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        targets.append(Path(dst).name)
        real(src, dst)

    monkeypatch.setattr(storage.os, "replace", spy)
    storage.write_run_set(tmp_path, "abc", _trace(), _record())
    assert targets == ["abc.json", "abc.parquet"]


def test_failed_write_leaves_no_trace_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(table: object, where: str | Path) -> None:
        Path(where).write_bytes(b"PAR1 half a file")
        raise OSError("disk full")

    monkeypatch.setattr(storage.pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        storage.write_run_set(tmp_path, "abc", _trace(), _record())
    runs = tmp_path / "runs"
    assert not (runs / "abc.parquet").exists()
    assert list(runs.iterdir()) == []  # neither the sidecar nor a temporary is left behind
    assert storage.finished_run_sets(tmp_path) == set()


def test_clean_stale_removes_only_temporaries(tmp_path: Path) -> None:
    storage.write_run_set(tmp_path, "abc", _trace(), _record())
    runs = tmp_path / "runs"
    stale = [runs / ".def.parquet.999.tmp", runs / ".def.json.999.tmp", tmp_path / ".x.json.1.tmp"]
    for p in stale:
        p.write_text("partial")
    removed = storage.clean_stale(tmp_path)
    assert sorted(removed) == sorted(stale)
    assert sorted(p.name for p in runs.iterdir()) == ["abc.json", "abc.parquet"]


def test_load_results_follows_the_manifest(tmp_path: Path) -> None:
    storage.write_run_set(tmp_path, "aaa", _trace(), _record("old"))
    storage.write_run_set(tmp_path, "bbb", _trace(), _record("new"))
    storage.write_manifest(tmp_path, {"run_sets": [{"run_set": "bbb", "label": "new"}]})
    assert set(storage.load_results(tmp_path)["learner"]) == {"new"}
    assert set(storage.load_results(tmp_path, include_all=True)["learner"]) == {"old", "new"}


def test_load_results_without_manifest_reads_everything(tmp_path: Path) -> None:
    storage.write_run_set(tmp_path, "aaa", _trace((0,)), _record("a"))
    storage.write_run_set(tmp_path, "bbb", _trace((1,)), _record("b"))
    df = storage.load_results(tmp_path)
    assert set(zip(df["learner"], df["rep"], strict=True)) == {("a", 0), ("b", 1)}
    assert len(df) == 6


def test_load_results_of_empty_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no finished run sets"):
        storage.load_results(tmp_path)


def test_unfinished_run_set_is_invisible(tmp_path: Path) -> None:
    # A JSON record without its Parquet file is a run set that died in flight.
    storage.write_json_atomic(tmp_path / "runs" / "zzz.json", _record())
    storage.write_run_set(tmp_path, "aaa", _trace(), _record())
    assert storage.finished_run_sets(tmp_path) == {"aaa"}
    assert set(storage.load_results(tmp_path)["run_set"]) == {"aaa"}


def test_bad_manifest_is_reported_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "experiment.json").write_text("{not json")
    with pytest.raises(ValueError, match="experiment.json"):
        storage.read_manifest(tmp_path)


@dataclass(frozen=True)
class _Other:
    a: int


def test_run_set_id_accepts_any_dataclass() -> None:
    assert storage.run_set_id(_Other(1)) != storage.run_set_id(_Other(2))


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:100] + bytes([b[100] ^ 0xFF]) + b[101:],  # one byte flipped
        lambda b: b"",  # emptied
    ],
    ids=["truncated", "flipped-byte", "empty"],
)
def test_a_damaged_trace_is_not_finished_and_reading_it_names_the_file(
    tmp_path: Path, damage: object
) -> None:
    path = storage.write_run_set(tmp_path, "abc", _trace(), _record())
    storage.write_run_set(tmp_path, "def", _trace(), _record())
    assert storage.finished_run_sets(tmp_path) == {"abc", "def"}
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert storage.finished_run_sets(tmp_path) == {"def"}
    assert set(storage.damaged_run_sets(tmp_path)) == {"abc"}
    with pytest.raises(StorageError, match=r"abc\.parquet: damaged trace .*oltr run"):
        storage.load_results(tmp_path)


def test_a_trace_without_a_recorded_checksum_is_checked_by_its_footer(tmp_path: Path) -> None:
    path = storage.write_run_set(tmp_path, "abc", _trace(), _record())
    sidecar = path.with_suffix(".json")
    record = json.loads(sidecar.read_text())
    del record["trace_file"]  # as written by an older version
    sidecar.write_text(json.dumps(record))
    assert storage.finished_run_sets(tmp_path) == {"abc"}
    path.write_bytes(path.read_bytes()[:-20])  # the footer is gone
    assert storage.finished_run_sets(tmp_path) == set()
