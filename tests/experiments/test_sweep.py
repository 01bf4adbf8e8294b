"""Sweeps: identical traces for any backend/jobs/batching, resuming, failures, progress."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from oltr.experiments import storage, sweep
from oltr.experiments.config import Experiment, parse_config
from oltr.experiments.runner import run_set

CONFIG = {
    "experiment": {
        "name": "sw",
        "seed": 5,
        "horizon": 60,
        "reps": 4,
        "batch_size": 2,
        "measures": ["sumloss", "ndcg@3"],
        "schedule": {"log": 8},
    },
    "env": {"name": "fixed-items-v1", "params": {"n_items": 4, "kind": "graded"}},
    "feedback": {"name": "top-k", "params": {"k": 1}},
    "learners": [
        {"name": "random"},
        {"name": "fixed", "label": "fixed"},
        {"name": "noop"},
    ],
}


def _experiment(**experiment: object) -> Experiment:
    doc = {**CONFIG, "experiment": {**CONFIG["experiment"], **experiment}}
    return parse_config(doc)


def _traces(results: Path) -> pd.DataFrame:
    df = storage.load_results(results)
    return df.sort_values(["learner", "rep", "t"], ignore_index=True)


def _logged_run_set(spec, *, progress=None):  # type: ignore[no-untyped-def]
    """The real task, logging each call to the file named by $OLTR_TEST_LOG."""
    with open(os.environ["OLTR_TEST_LOG"], "a") as fh:
        fh.write(f"{spec.learner} {','.join(map(str, spec.reps))}\n")
    return run_set(spec, progress=progress)


def _failing_run_set(spec, *, progress=None):  # type: ignore[no-untyped-def]
    if spec.learner == "fixed":
        raise RuntimeError("boom in fixed")
    return run_set(spec, progress=progress)


def _short_run_set(spec, *, progress=None):  # type: ignore[no-untyped-def]
    return run_set(spec, progress=progress).iloc[:-1]  # a row missing


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


# ----------------------------------------------------------------------------- determinism


def test_one_and_two_jobs_give_identical_traces(tmp_path: Path) -> None:
    exp = _experiment()
    one = sweep.run_experiment(exp, out=tmp_path / "one", jobs=1, progress=False)
    two = sweep.run_experiment(exp, out=tmp_path / "two", jobs=2, progress=False)
    assert (
        sorted(one.computed) == sorted(two.computed) == sorted(r.run_set_id for r in exp.run_sets)
    )
    a, b = _traces(tmp_path / "one"), _traces(tmp_path / "two")
    assert len(a) == 3 * 4 * len(exp.checkpoints)
    pd.testing.assert_frame_equal(a, b)


def test_batch_size_does_not_change_traces(tmp_path: Path) -> None:
    chunked = _experiment()
    whole = _experiment(batch_size=None)
    assert len(chunked.run_sets) == 6 and len(whole.run_sets) == 3
    sweep.run_experiment(chunked, out=tmp_path / "c", jobs=1, progress=False)
    sweep.run_experiment(whole, out=tmp_path / "w", jobs=1, progress=False)
    a = _traces(tmp_path / "c").drop(columns="run_set")
    b = _traces(tmp_path / "w").drop(columns="run_set")
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.slow
@pytest.mark.ray
def test_ray_backend_matches_local(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    exp = _experiment()
    sweep.run_experiment(exp, out=tmp_path / "local", jobs=2, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        result = sweep.run_experiment(exp, out=tmp_path / "ray", backend="ray", progress=False)
    finally:
        ray.shutdown()
    assert len(result.computed) == 6
    pd.testing.assert_frame_equal(_traces(tmp_path / "local"), _traces(tmp_path / "ray"))
    records = storage.load_metadata(tmp_path / "ray")
    assert {r["backend"] for r in records.values()} == {"ray"}


def test_missing_ray_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` fail
    with pytest.raises(RuntimeError, match=r"pip install 'oltr\[ray\]'"):
        sweep.run_experiment(_experiment(), out=tmp_path / "res", backend="ray", progress=False)
    assert not (tmp_path / "res").exists()  # refused before anything was written


# ----------------------------------------------------------------------------- resuming


@pytest.mark.parametrize("jobs", [1, 2])
def test_rerun_skips_finished_run_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("OLTR_TEST_LOG", str(log))
    exp = _experiment()
    out = tmp_path / "res"
    first = sweep.run_experiment(
        exp, out=out, jobs=jobs, progress=False, run_set_fn=_logged_run_set
    )
    assert len(_calls(log)) == 6 and len(first.computed) == 6
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}

    again = sweep.run_experiment(
        exp, out=out, jobs=jobs, progress=False, run_set_fn=_logged_run_set
    )
    assert again.computed == () and sorted(again.skipped) == sorted(first.computed)
    assert len(_calls(log)) == 6  # nothing recomputed

    # Lose one run set (as if it had been in flight): only it is computed again.
    victim = exp.run_sets[3]
    (out / "runs" / f"{victim.run_set_id}.parquet").unlink()
    third = sweep.run_experiment(
        exp, out=out, jobs=jobs, progress=False, run_set_fn=_logged_run_set
    )
    assert third.computed == (victim.run_set_id,)
    assert _calls(log)[6:] == [f"fixed {','.join(map(str, victim.spec.reps))}"]
    after = {p.name: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    unchanged = [n for n in before if not n.startswith(victim.run_set_id)]
    assert all(after[n] == before[n] for n in unchanged)


def test_a_damaged_trace_is_recomputed_and_the_rest_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "calls.log"
    monkeypatch.setenv("OLTR_TEST_LOG", str(log))
    exp, out = _experiment(), tmp_path / "res"
    sweep.run_experiment(exp, out=out, jobs=1, progress=False, run_set_fn=_logged_run_set)
    expected = _traces(out)
    victim = out / "runs" / f"{exp.run_sets[2].run_set_id}.parquet"
    victim.write_bytes(victim.read_bytes()[:-40])  # damaged: a partly overwritten footer
    again = sweep.run_experiment(exp, out=out, jobs=1, progress=False, run_set_fn=_logged_run_set)
    assert again.computed == (exp.run_sets[2].run_set_id,)
    assert len(_calls(log)) == 7
    pd.testing.assert_frame_equal(_traces(out), expected)


def test_stale_temporaries_are_cleaned(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir(parents=True)
    stale = runs / ".0123456789abcdef.parquet.4242.tmp"
    stale.write_bytes(b"PAR1 half")
    sweep.run_experiment(_experiment(reps=2), out=tmp_path, jobs=1, progress=False)
    assert not stale.exists()
    assert not list(tmp_path.rglob("*.tmp"))


# ----------------------------------------------------------------------------- failures


@pytest.mark.parametrize("jobs", [1, 2])
def test_failing_run_set_raises_naming_it_and_keeps_finished(tmp_path: Path, jobs: int) -> None:
    exp = _experiment(batch_size=None)
    with pytest.raises(sweep.SweepError, match=r"run set 'fixed' .* RuntimeError: boom in fixed"):
        sweep.run_experiment(
            exp, out=tmp_path, jobs=jobs, progress=False, run_set_fn=_failing_run_set
        )
    done = storage.finished_run_sets(tmp_path)
    assert exp.run_sets[1].run_set_id not in done
    assert exp.run_sets[0].run_set_id in done  # ran before the failure (in order)
    assert not list(tmp_path.rglob("*.tmp"))


def test_malformed_trace_is_refused(tmp_path: Path) -> None:
    with pytest.raises(sweep.SweepError, match=r"trace has \d+ rows .* expected"):
        sweep.run_experiment(
            _experiment(reps=2), out=tmp_path, jobs=1, progress=False, run_set_fn=_short_run_set
        )
    assert storage.finished_run_sets(tmp_path) == set()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"jobs": 0}, "jobs must be >= 1, got 0"),
        ({"backend": "dask"}, "backend must be 'local' or 'ray', got 'dask'"),
        ({"address": "auto"}, "address is only used by the ray backend"),
    ],
)
def test_bad_sweep_arguments(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sweep.run_sweep(_experiment().run_sets, tmp_path, progress=False, **kwargs)


# ----------------------------------------------------------------------------- progress


class _Bar:
    """Stands in for tqdm: records the total and every update."""

    last: _Bar | None = None

    def __init__(self, *, total: int, **_: object) -> None:
        self.total, self.updates = total, []
        _Bar.last = self

    def update(self, n: int) -> None:
        self.updates.append(n)

    def close(self) -> None:
        pass


@pytest.mark.parametrize("jobs", [1, 2])
def test_progress_counts_rounds_times_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    monkeypatch.setattr(sweep, "tqdm", _Bar)
    exp = _experiment(horizon=250)
    victim = exp.run_sets[0]
    sweep.run_sweep(exp.run_sets[:1], tmp_path, jobs=1, progress=False)  # one already done
    sweep.run_sweep(exp.run_sets, tmp_path, jobs=jobs)
    bar = _Bar.last
    assert bar is not None
    expected = sum(rs.spec.horizon * len(rs.spec.reps) for rs in exp.run_sets if rs is not victim)
    assert bar.total == expected == 5 * 250 * 2
    assert sum(bar.updates) == expected and all(n > 0 for n in bar.updates)
    if jobs == 1:  # in-process: the runner's own calls come through (it reports every 1%)
        assert len(bar.updates) > 5


@pytest.mark.ray
@pytest.mark.slow
def test_a_two_node_ray_cluster_gives_the_local_traces(tmp_path: Path) -> None:
    # A real multi-node cluster on this machine: a head and a second node, each with
    # one CPU, so run sets are spread over both nodes' worker processes.
    pytest.importorskip("ray", reason="the ray extra is not installed")
    import ray
    from ray.cluster_utils import Cluster

    exp = _experiment()
    sweep.run_experiment(exp, out=tmp_path / "local", jobs=1, progress=False)
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        ray.init(address=cluster.address, log_to_driver=False)
        result = sweep.run_experiment(exp, out=tmp_path / "ray", backend="ray", progress=False)
        nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    finally:
        ray.shutdown()
        cluster.shutdown()
    assert len(nodes) == 2 and len(result.computed) == 6
    # With one CPU per node and every run set submitted at once, both nodes' workers ran.
    pids = {r["pid"] for r in storage.load_metadata(tmp_path / "ray").values()}
    assert len(pids) >= 2
    pd.testing.assert_frame_equal(_traces(tmp_path / "local"), _traces(tmp_path / "ray"))
