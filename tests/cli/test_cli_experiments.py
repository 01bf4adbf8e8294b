"""``oltr run``, ``oltr report``, ``oltr reproduce``: end to end, with a real kill -9."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from oltr.cli import app
from oltr.errors import EXIT_CODES
from oltr.experiments import storage, sweep
from oltr.experiments.config import load_config

runner = CliRunner()

CONFIG = """
[experiment]
name = "three"
seed = 17
horizon = {horizon}
reps = 10
measures = ["sumloss", "ndcg@3"]
schedule = {{ log = 12 }}
{extra}

[env]
name = "fixed-items-v1"
params = {{ n_items = 4, kind = "graded" }}

[feedback]
name = "top-k"
params = {{ k = 1 }}

[[learners]]
name = "random"

[[learners]]
name = "fixed"

[[learners]]
name = "noop"
label = "identity (noop)"
"""


def _config(tmp_path: Path, *, horizon: int = 80, extra: str = "") -> Path:
    path = tmp_path / "three.toml"
    path.write_text(CONFIG.format(horizon=horizon, extra=extra))
    return path


def test_run_writes_traces_and_report(tmp_path: Path) -> None:
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", str(_config(tmp_path)), "--out", str(out), "-j", "2", "-q"])
    assert result.exit_code == 0, result.output
    assert "3 run set(s), 3 to run, 0 already finished" in result.output
    assert len(list((out / "runs").glob("*.parquet"))) == 3
    df = storage.load_results(out)
    assert sorted(df["learner"].unique()) == ["fixed", "identity (noop)", "random"]
    assert df.groupby("learner")["rep"].nunique().tolist() == [10, 10, 10]
    report = out / "report"
    assert f"report: {report / 'index.html'}" in result.output
    for name in ("sumloss_linear", "sumloss_loglog", "ndcg_3_linear", "ndcg_3_loglog"):
        assert (report / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert b"<svg" in (report / f"{name}.svg").read_bytes()[:1000]
    table = pd.read_csv(report / "final.csv")
    assert table["learner"].tolist() == ["random", "fixed", "identity (noop)"]
    # fixed and noop both show the identity order every round: same values.
    assert table.loc[1, "sumloss:avg mean"] == table.loc[2, "sumloss:avg mean"]

    again = runner.invoke(
        app, ["run", str(_config(tmp_path)), "--out", str(out), "-q", "--no-report"]
    )
    assert again.exit_code == 0, again.output
    assert "3 run set(s), 0 to run, 3 already finished" in again.output
    assert f"oltr report {out}" in again.output


def _session_processes(sid: int) -> list[int]:
    """Pids of live processes in session ``sid`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
            pids.append(int(entry.name))
    return pids


@pytest.mark.slow
def test_killed_run_resumes_without_recomputing(tmp_path: Path) -> None:
    # 30 run sets (3 learners x 10 reps, one rep each), two worker processes.
    config = _config(tmp_path, horizon=600, extra="batch_size = 1")
    out = tmp_path / "res"
    cmd = [
        sys.executable,
        "-m",
        "oltr.cli",
        "run",
        str(config),
        "--out",
        str(out),
        "-j",
        "2",
        "-q",
        "--no-report",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 120
        while not storage.finished_run_sets(out):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no run set finished in time"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)  # the driver only: its workers must notice
        proc.wait()
        if Path("/proc").is_dir():
            deadline = time.monotonic() + 15
            while _session_processes(proc.pid):
                assert time.monotonic() < deadline, "orphaned workers kept running"
                time.sleep(0.1)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    finished = storage.finished_run_sets(out)
    print("finished at kill:", len(finished), "stale:", list(out.rglob("*.tmp")))
    assert 0 < len(finished) < 30, "the kill came too late to interrupt anything"
    snapshot = {
        rid: (
            (out / "runs" / f"{rid}.parquet").stat().st_mtime_ns,
            (out / "runs" / f"{rid}.json").read_text(),
        )
        for rid in finished
    }

    resumed = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"30 run set(s), {30 - len(finished)} to run, {len(finished)} already finished" in (
        resumed.stdout
    )
    assert len(storage.finished_run_sets(out)) == 30
    for rid, (mtime, record) in snapshot.items():  # not recomputed, not rewritten
        assert (out / "runs" / f"{rid}.parquet").stat().st_mtime_ns == mtime
        assert (out / "runs" / f"{rid}.json").read_text() == record
    assert not list(out.rglob("*.tmp"))

    reference = tmp_path / "reference"
    sweep.run_experiment(load_config(config), out=reference, jobs=2, progress=False)
    pd.testing.assert_frame_equal(storage.load_results(out), storage.load_results(reference))


BAD = [
    ('name = "noop"', 'name = "nop"', r"learners[2].name: unknown learner 'nop'"),
    ("reps = 10", "reps = 10.0", "experiment.reps: Input should be a valid integer, got 10.0"),
    (
        'name = "top-k"\nparams = { k = 1 }',
        'name = "duel"',
        "learners[0]: learner 'random' requires no feedback",
    ),
    (
        'name = "fixed-items-v1"\nparams = { n_items = 4, kind = "graded" }',
        'name = "letor-stream-v1"\nparams = { path = "missing/train.txt" }',
        "env.params.path: data file not found",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "message"), BAD, ids=["learner", "type", "feedback", "file"]
)
def test_bad_config_fails_before_any_work(tmp_path: Path, old: str, new: str, message: str) -> None:
    text = CONFIG.format(horizon=50, extra="").replace(old, new)
    assert old in CONFIG.format(horizon=50, extra="")
    path = tmp_path / "bad.toml"
    path.write_text(text)
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", str(path), "--out", str(out)])
    assert result.exit_code == EXIT_CODES["config"]
    assert message in result.stderr
    assert result.stderr.startswith(f"error: invalid experiment config {path}")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml"]


def test_run_missing_config(tmp_path: Path) -> None:
    result = runner.invoke(app, ["run", str(tmp_path / "nope.toml")])
    assert result.exit_code == EXIT_CODES["config"] and "file not found" in result.stderr


def test_report_command(tmp_path: Path) -> None:
    out = tmp_path / "res"
    assert (
        runner.invoke(
            app,
            [
                "run",
                str(_config(tmp_path, horizon=30)),
                "--out",
                str(out),
                "-q",
                "-j",
                "1",
                "--no-report",
            ],
        ).exit_code
        == 0
    )
    result = runner.invoke(
        app, ["report", str(out), "--measure", "ndcg@3", "--out", str(tmp_path / "rep")]
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "rep").glob("*.png")) == [
        "ndcg_3_linear.png",
        "ndcg_3_loglog.png",
    ]
    bad = runner.invoke(app, ["report", str(out), "--measure", "map"])
    assert bad.exit_code == 2 and "'map' is not in the results" in bad.stderr
    empty = runner.invoke(app, ["report", str(tmp_path / "empty")])
    assert empty.exit_code == 2 and "no finished run sets" in empty.stderr


def test_reproduce_list() -> None:
    result = runner.invoke(app, ["reproduce", "--list"])
    assert result.exit_code == 0
    lines = dict(line.split(None, 1) for line in result.output.splitlines())
    assert lines["baselines-synthetic"].startswith("Random ranker vs the best fixed order")


def test_reproduce_errors() -> None:
    unknown = runner.invoke(app, ["reproduce", "nope"])
    assert unknown.exit_code == 2 and "available: " in unknown.stderr
    assert "baselines-synthetic" in unknown.stderr
    missing = runner.invoke(app, ["reproduce"])
    assert missing.exit_code == 2 and "--list" in missing.stderr


@pytest.mark.slow
def test_reproduce_small_runs_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "repro"
    result = runner.invoke(
        app,
        ["reproduce", "baselines-synthetic", "--size", "small", "--out", str(out), "-q", "-j", "2"],
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "experiment.json").read_text())
    assert manifest["name"] == "baselines-synthetic" and manifest["size"] == "small"
    table = pd.read_csv(out / "report" / "final.csv").set_index("learner")
    # A uniformly random order cannot beat the best fixed order in hindsight, and the
    # fixed order that is best in expectation is nearly the hindsight comparator.
    assert table.loc["random ranker", "sumloss:regret mean"] > 0
    assert table.loc["random ranker", "sumloss:regret mean"] > 10 * abs(
        table.loc["fixed order (best)", "sumloss:regret mean"]
    )


# ----------------------------------------------------------------------------- file-system faults


def _file_at(tmp_path: Path) -> Path:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return blocker


FS_FAULTS = [
    # (id, arguments given the config path and tmp_path, message regex)
    ("out-is-a-file", lambda c, t: ["run", str(c), "--out", str(_file_at(t))], r"is a file"),
    (
        "out-under-a-file",
        lambda c, t: ["run", str(c), "--out", str(_file_at(t) / "r")],
        r"is a file",
    ),
    (
        "report-out-under-a-file",
        lambda c, t: ["report", str(t / "res"), "--out", str(_file_at(t) / "rep")],
        r"is a file",
    ),
]


@pytest.mark.parametrize(
    ("make_args", "message"), [f[1:] for f in FS_FAULTS], ids=[f[0] for f in FS_FAULTS]
)
def test_file_system_faults_are_one_line_with_their_exit_code(
    tmp_path: Path, make_args: object, message: str
) -> None:
    config = _config(tmp_path)
    if "report" in make_args(config, tmp_path)[0]:  # type: ignore[operator]
        assert (
            runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "res"), "-q"]).exit_code
            == 0
        )
        (tmp_path / "a-file").unlink(missing_ok=True)
    result = runner.invoke(app, make_args(config, tmp_path))  # type: ignore[operator]
    assert result.exit_code == EXIT_CODES["file system"], result.output
    assert re.search(message, result.stderr) and result.stderr.count("\n") == 1
    assert "Traceback" not in result.output


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_an_unwritable_results_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        result = runner.invoke(app, ["run", str(_config(tmp_path)), "--out", str(locked / "r")])
    finally:
        locked.chmod(0o700)
    assert result.exit_code == EXIT_CODES["file system"]
    assert "not writable" in result.stderr or "Permission denied" in result.stderr


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--debug", "run", str(tmp_path / "nope.toml")])
    assert result.exit_code != 0 and result.exception is not None
    assert type(result.exception).__name__ == "ConfigError"


def test_a_learner_of_your_own_runs_from_a_config_by_module_and_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_rankers.py").write_text(
        "import numpy as np\n"
        "from oltr.learners import Learner\n"
        "class Reverse(Learner):\n"
        '    """Shows the items in reverse index order."""\n'
        "    def rank(self, context):\n"
        "        return np.tile(np.arange(context.n_items)[::-1], (self.n_runs, 1))\n"
        "    def update(self, context, orders, feedback):\n"
        "        pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = _config(tmp_path, horizon=20)
    text = config.read_text()
    first_learner = text.index('name = "', text.index("[[learners]]"))
    end = text.index("\n", first_learner)
    config.write_text(text[:first_learner] + 'name = "my_rankers:Reverse"' + text[end:])
    out = tmp_path / "res"
    result = runner.invoke(app, ["run", str(config), "--out", str(out), "-j", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert "my_rankers:Reverse" in set(storage.load_results(out)["learner"])

    config.write_text(config.read_text().replace("my_rankers:Reverse", "my_rankers:Nope"))
    bad = runner.invoke(app, ["run", str(config), "--out", str(out)])
    assert bad.exit_code == EXIT_CODES["config"]
    assert "my_rankers.Nope is not a Learner subclass (no such name in the module)" in bad.stderr
