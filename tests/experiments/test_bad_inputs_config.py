"""Bad experiment configs are ConfigErrors listing every problem, found at load, before any work.

Each case was reproduced before the fix: a config that is not UTF-8 raised a
``UnicodeDecodeError`` traceback; an unknown learner parameter hid a bad value
of a known one; a malformed data file named by a config was found only when a
run set read it (and not at all at load when another problem was reported).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from oltr import build
from oltr.errors import EXIT_CODES, ConfigFileError
from oltr.experiments.config import load_config
from oltr.experiments.schema import ConfigError

BASE = """
[experiment]
name = "bad-inputs"
seed = 1
horizon = 20
reps = 1
measures = ["ndcg@1"]
schedule = { every = 10 }

[env]
name = "letor-stream-v1"
params = ENV_PARAMS

[feedback]
name = "top-k"
params = { k = 1 }

[[learners]]
name = LEARNER
params = LEARNER_PARAMS
"""

GOOD_DATA = "1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0.3\n2 qid:2 1:1 2:0\n0 qid:2 1:0 2:1\n"
BAD_DATA = "1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:abc\n"


def _config(
    tmp_path: Path,
    *,
    env_params: str = '{ path = "train.txt" }',
    learner: str = "random",
    learner_params: str = "{}",
    extra: str = "",
) -> Path:
    (tmp_path / "train.txt").write_text(GOOD_DATA)
    (tmp_path / "broken.txt").write_text(BAD_DATA)
    text = (
        BASE.replace("ENV_PARAMS", env_params)
        .replace("LEARNER_PARAMS", learner_params)
        .replace("LEARNER", f'"{learner}"')
    )
    path = tmp_path / "exp.toml"
    path.write_text(text + extra)
    return path


def _problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert isinstance(info.value, ConfigFileError)
    return info.value.problems


def test_valid_base_config_loads(tmp_path: Path) -> None:
    assert len(load_config(_config(tmp_path)).run_sets) == 1


# ----------------------------------------------------------------------------- not UTF-8


@pytest.mark.parametrize(
    ("bad", "offset_of"),
    [(b"\xe9", 'name = "caf'), (b"\xff\xfe", 'description = "'), (b"\xc3", 'name = "x')],
)
def test_non_utf8_config_names_file_and_byte_offset(
    tmp_path: Path, bad: bytes, offset_of: str
) -> None:
    head = b"# a comment\n[experiment]\n" + offset_of.encode()
    path = tmp_path / "latin1.toml"
    path.write_bytes(head + bad + b'"\nhorizon = 1\n')
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert str(path) in message
    assert f"byte offset {len(head)} (line 3)" in message
    assert f"byte 0x{bad[0]:02x}" in message and "not UTF-8" in message


def test_utf8_config_with_non_ascii_text_loads(tmp_path: Path) -> None:
    path = _config(tmp_path)
    path.write_text(
        path.read_text().replace('name = "bad-inputs"', 'name = "x"\ndescription = "café ü"'),
        encoding="utf-8",
    )
    assert load_config(path).description == "café ü"


# ----------------------------------------------------------------------------- learner settings


def test_unknown_parameter_does_not_hide_a_bad_surrogate(tmp_path: Path) -> None:
    path = _config(tmp_path, learner="rtopk", learner_params='{ bogus = 1, surrogate = "nosuch" }')
    problems = _problems(path)
    assert len(problems) == 2
    assert problems[0].startswith("learners[0].params: learner 'rtopk' has no parameter 'bogus'")
    assert problems[1].startswith("learners[0].params.surrogate: must be one of")
    assert "'nosuch'" in problems[1]


def test_every_bad_value_of_one_setting_is_reported(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        learner="rtopk",
        learner_params='{ surrogate = "nosuch", eta = -1, gamma = 7, other = 2, more = 3 }',
    )
    problems = _problems(path)
    keys = [p.split(":", 1)[0] for p in problems]
    assert keys == [
        "learners[0].params",
        "learners[0].params",
        "learners[0].params.surrogate",
        "learners[0].params.eta",
        "learners[0].params.gamma",
    ]
    assert "'other'" in problems[0] and "'more'" in problems[1]


def test_every_problem_of_each_grid_point_is_named_with_its_setting(tmp_path: Path) -> None:
    path = _config(tmp_path, learner="rtopk", learner_params="{ eta = [-1, 0.5], gamma = -2 }")
    problems = _problems(path)
    assert problems == [
        "learners[0].params.eta (setting eta=-1): must be > 0, got -1",
        "learners[0].params.gamma (setting eta=-1): must be > 0, got -2",
        "learners[0].params.gamma (setting eta=0.5): must be > 0, got -2",
    ]


class _Paired:
    """A stand-in learner: ``b`` is valid only with ``a = 1``, ``c`` must be >= 0."""

    def __init__(self, *, a: int = 0, b: int = 0, c: int = 0, n_runs: int = 1) -> None:
        del n_runs


def _fake_check(name: str, params: Mapping[str, Any], **_: Any) -> None:
    bound = inspect.signature(_Paired).bind(**params).arguments
    if bound.get("b", 0) and bound.get("a", 0) != 1:
        raise ValueError("b needs a = 1")
    if bound.get("c", 0) < 0:
        raise ValueError(f"c must be >= 0, got {bound['c']}")
    if bound.get("a", 0) == 1 and bound.get("c", 0) == 5:
        raise ValueError("a = 1 does not go with c = 5")


@pytest.fixture
def paired(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "learner_class", lambda name: _Paired)
    monkeypatch.setattr(build, "check_learner", _fake_check)


@pytest.mark.usefixtures("paired")
def test_a_value_valid_only_in_combination_is_not_blamed() -> None:
    assert build.learner_problems("paired", {"a": 1, "b": 1}) == []
    # b fails alone, but not beside a = 1: only c is named.
    assert build.learner_problems("paired", {"a": 1, "b": 1, "c": -1}) == ["c must be >= 0, got -1"]
    assert build.learner_problems("paired", {"b": 1, "c": -1, "zz": 0}) == [
        "learner 'paired' has no parameter 'zz'; valid parameters: a, b, c",
        "b needs a = 1",
        "c must be >= 0, got -1",
    ]
    # Only the whole setting shows this one; it is reported when nothing else is.
    assert build.learner_problems("paired", {"a": 1, "c": 5}) == ["a = 1 does not go with c = 5"]


# ----------------------------------------------------------------------------- data files


def test_malformed_env_data_file_is_reported_at_load(tmp_path: Path) -> None:
    path = _config(tmp_path, env_params='{ path = "broken.txt" }')
    problems = _problems(path)
    assert problems == [
        f"env.params.path: {tmp_path / 'broken.txt'}:2: bad value in token '2:abc': not a number"
    ]


def test_malformed_env_data_file_is_reported_beside_other_problems(tmp_path: Path) -> None:
    path = _config(tmp_path, env_params='{ path = "broken.txt" }', learner="no-such-learner")
    problems = _problems(path)
    assert any(p.startswith("learners[0].name: unknown learner") for p in problems)
    assert f"env.params.path: {tmp_path / 'broken.txt'}:2: bad value" in "\n".join(problems)


def test_bad_group_file_is_reported_under_its_key(tmp_path: Path) -> None:
    (tmp_path / "noqid.txt").write_text("1 1:0.5\n0 1:0.1\n2 1:1\n")
    (tmp_path / "sizes.query").write_text("2\nx\n")
    path = _config(tmp_path, env_params='{ path = "noqid.txt", group_file = "sizes.query" }')
    problems = _problems(path)
    assert problems == [
        f"env.params.group_file: {tmp_path / 'sizes.query'}:2: bad group size 'x': "
        "expected a positive integer"
    ]


def test_grade_too_large_in_a_data_file_is_reported_at_load(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("1e20 qid:1 1:1 2:1\n0 qid:1 1:0 2:1\n")
    problems = _problems(_config(tmp_path, env_params='{ path = "big.txt" }'))
    assert problems == [
        f"env.params.path: {tmp_path / 'big.txt'}:1: grade '1e20' is too large "
        "(at most 2**53 = 9007199254740992)"
    ]


def test_malformed_heldout_file_is_reported_at_load(tmp_path: Path) -> None:
    path = _config(tmp_path, extra='\n[heldout]\npath = "broken.txt"\n')
    problems = _problems(path)
    assert problems == [
        f"heldout.path: {tmp_path / 'broken.txt'}:2: bad value in token '2:abc': not a number"
    ]


def test_heldout_file_of_another_width_is_reported_at_load(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("1 qid:1 1:0.5 2:1 3:1\n0 qid:1 1:0 2:0 3:0\n")
    problems = _problems(_config(tmp_path, extra='\n[heldout]\npath = "wide.txt"\n'))
    assert len(problems) == 1
    assert problems[0].startswith("heldout.path: the held-out data")
    assert "has 3 features but the stream has 2" in problems[0]


def test_absurd_heldout_width_is_reported_at_load(tmp_path: Path) -> None:
    extra = '\n[heldout]\npath = "train.txt"\nn_features = 1_000_000_000_000\n'
    problems = _problems(_config(tmp_path, extra=extra))
    assert len(problems) == 1
    assert problems[0].startswith("heldout: n_features=1000000000000 would widen")


def test_missing_heldout_file_is_reported_once(tmp_path: Path) -> None:
    problems = _problems(_config(tmp_path, extra='\n[heldout]\npath = "absent.txt"\n'))
    assert len(problems) == 1 and "data file not found" in problems[0]


# ----------------------------------------------------------------------------- the command line


def _run_cli(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OLTR_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OLTR_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "oltr.cli", "run", str(config), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.parametrize("case", ["not-utf8", "learner-settings", "data-file"])
def test_cli_exit_code_for_bad_configs(tmp_path: Path, case: str) -> None:
    if case == "not-utf8":
        config = _config(tmp_path)
        config.write_bytes(config.read_bytes().replace(b"bad-inputs", b"bad-\xe9"))
        expected = ["not UTF-8 text: byte 0xe9 at byte offset"]
    elif case == "learner-settings":
        config = _config(tmp_path, learner="rtopk", learner_params="{ bogus = 1, eta = -1 }")
        expected = ["no parameter 'bogus'", "learners[0].params.eta: must be > 0, got -1"]
    else:
        config = _config(tmp_path, extra='\n[heldout]\npath = "broken.txt"\n')
        expected = [f"heldout.path: {tmp_path / 'broken.txt'}:2: bad value"]
    proc = _run_cli(tmp_path, config)
    assert proc.returncode == EXIT_CODES["config"] == ConfigFileError.exit_code == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: invalid experiment config {config}")
    for text in expected:
        assert text in proc.stderr
    assert not (tmp_path / "out").exists()  # no work started
