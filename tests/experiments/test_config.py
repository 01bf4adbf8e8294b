"""Experiment configs: schedule, grids, chunking, sizes, and validation before any work."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from oltr.experiments.config import load_config, parse_config
from oltr.experiments.datapaths import data_root
from oltr.experiments.grid import checkpoint_schedule, expand_grid
from oltr.experiments.schema import ConfigError
from oltr.reproductions.reproduce import SIZES, list_reproductions, load_reproduction

GOOD = """
[experiment]
name = "demo"
seed = 11
horizon = 50
reps = 10
measures = ["sumloss", "ndcg@3"]
schedule = { every = 20 }
batch_size = 4

[env]
name = "fixed-items-v1"
params = { n_items = 4 }

[feedback]
name = "top-k"
params = { k = 1 }

[[learners]]
name = "random"

[[learners]]
name = "fixed"
label = "by feature"
params = { feature = [0, 1] }

[sizes.small]
experiment.horizon = 10
experiment.reps = 2
env.params.n_items = 3
"""


def _write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _doc(text: str = GOOD) -> dict:
    return tomllib.loads(text)


# ----------------------------------------------------------------------------- schedule and grid


def test_every_schedule_by_hand() -> None:
    assert checkpoint_schedule(10, every=4) == (4, 8, 10)
    assert checkpoint_schedule(12, every=4) == (4, 8, 12)
    assert checkpoint_schedule(3, every=5) == (3,)


def test_log_schedule_is_log_spaced_and_ends_at_horizon() -> None:
    assert checkpoint_schedule(10_000, log=5) == (1, 10, 100, 1000, 10_000)
    cps = checkpoint_schedule(777, log=30)
    assert len(cps) == 30 and cps[0] == 1 and cps[-1] == 777
    assert all(b > a for a, b in zip(cps, cps[1:], strict=False))


def test_grid_is_the_product_in_written_order() -> None:
    grid = expand_grid({"a": [1, 2], "b": "x", "c": [True, False]})
    assert grid == [
        {"a": 1, "b": "x", "c": True},
        {"a": 1, "b": "x", "c": False},
        {"a": 2, "b": "x", "c": True},
        {"a": 2, "b": "x", "c": False},
    ]


def test_wrapped_list_is_one_list_valued_setting() -> None:
    assert expand_grid({"w": [[0.5, 0.5]]}) == [{"w": [0.5, 0.5]}]
    assert expand_grid({"w": [[1, 0], [0, 1]]}) == [{"w": [1, 0]}, {"w": [0, 1]}]
    assert expand_grid({"w": [[]]}) == [{"w": []}]
    assert expand_grid({}) == [{}]


def test_empty_list_is_refused() -> None:
    with pytest.raises(ValueError, match=r"eta: an empty list"):
        expand_grid({"eta": []})


# ----------------------------------------------------------------------------- expansion


def test_expansion_into_run_sets(tmp_path: Path) -> None:
    exp = load_config(_write(tmp_path, GOOD))
    # 3 settings (random, feature 0, feature 1) x 3 chunks of at most 4 reps
    assert len(exp.run_sets) == 9
    labels = [rs.label for rs in exp.run_sets]
    assert (
        labels == ["random"] * 3 + ["by feature (feature=0)"] * 3 + ["by feature (feature=1)"] * 3
    )
    assert [rs.spec.reps for rs in exp.run_sets[:3]] == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)]
    spec = exp.run_sets[4].spec
    assert (spec.learner, spec.learner_params, spec.env, spec.env_params) == (
        "fixed",
        {"feature": 0},
        "fixed-items-v1",
        {"n_items": 4},
    )
    assert (spec.feedback, spec.feedback_params, spec.seed, spec.horizon) == (
        "top-k",
        {"k": 1},
        11,
        50,
    )
    assert spec.measures == ("sumloss", "ndcg@3") and spec.checkpoints == (20, 40, 50)
    assert len({rs.run_set_id for rs in exp.run_sets}) == 9
    assert exp.output == Path("results/demo")
    assert exp.resolved["experiment"]["seed"] == 11 and "sizes" not in exp.resolved


def test_without_batch_size_one_run_set_per_setting() -> None:
    exp = parse_config(_doc(GOOD.replace("batch_size = 4\n", "")))
    assert [rs.spec.reps for rs in exp.run_sets] == [tuple(range(10))] * 3


def test_ids_are_stable_and_independent_of_labels_and_other_learners() -> None:
    a = parse_config(_doc())
    b = parse_config(_doc(GOOD.replace('label = "by feature"', 'label = "renamed"')))
    assert [r.run_set_id for r in a.run_sets] == [r.run_set_id for r in b.run_sets]
    c = parse_config(_doc(GOOD + '\n[[learners]]\nname = "noop"\n'))
    assert {r.run_set_id for r in a.run_sets} < {r.run_set_id for r in c.run_sets}


def test_size_overrides_merge_into_the_document() -> None:
    exp = parse_config(_doc(), size="small")
    spec = exp.run_sets[0].spec
    assert (spec.horizon, spec.env_params, exp.size) == (10, {"n_items": 3}, "small")
    assert [rs.spec.reps for rs in exp.run_sets[:1]] == [(0, 1)]
    assert spec.env_params == {"n_items": 3} and spec.feedback_params == {"k": 1}


def test_unknown_size_names_the_defined_ones() -> None:
    with pytest.raises(ConfigError, match=r"no \[sizes.huge\] table \(sizes defined: small\)"):
        parse_config(_doc(), size="huge")


def test_missing_seed_draws_and_records_fresh_entropy() -> None:
    text = GOOD.replace("seed = 11\n", "")
    a, b = parse_config(_doc(text)), parse_config(_doc(text))
    assert a.seed_drawn and a.seed != b.seed
    assert a.resolved["experiment"]["seed"] == a.seed == a.run_sets[0].spec.seed


def test_relative_data_path_is_resolved_against_the_config_folder(tmp_path: Path) -> None:
    data = tmp_path / "data" / "train.txt"
    data.parent.mkdir()
    data.write_text(
        "1 qid:1 1:0.5 2:0.3\n0 qid:1 1:0.1 2:0.2\n"
    )  # two features: GOOD sorts by 0, 1
    sub = tmp_path / "configs"
    sub.mkdir()
    text = GOOD.replace(
        'name = "fixed-items-v1"\nparams = { n_items = 4 }',
        'name = "letor-stream-v1"\nparams = { path = "../data/train.txt" }',
    )
    exp = load_config(_write(sub, text.replace("[sizes.small]", "[sizes.x]")))
    assert exp.run_sets[0].spec.env_params["path"] == str(data.resolve())


# ----------------------------------------------------------------------------- bad configs

BAD = [
    # (replace this, with that, message regex)
    (
        'name = "random"',
        'name = "randum"',
        r"learners\[0\]\.name: unknown learner 'randum' \(did you mean 'random'\?\); valid: ",
    ),
    (
        "horizon = 50",
        'horizon = "50"',
        r"experiment\.horizon: Input should be a valid integer, got '50'",
    ),
    (
        "horizon = 50",
        "horizon = 0",
        r"experiment\.horizon: Input should be greater than or equal to 1",
    ),
    (
        "horizon = 50",
        "horizn = 50",
        r"experiment\.horizn: unknown key \(did you mean 'horizon'\?\)",
    ),
    ("reps = 10", "", r"experiment\.reps: missing required key"),
    (
        "schedule = { every = 20 }",
        "schedule = { every = 20, log = 3 }",
        r"experiment\.schedule: give exactly one of 'every'",
    ),
    (
        'measures = ["sumloss", "ndcg@3"]',
        'measures = ["sumloss", "ndgc@3"]',
        r"experiment\.measures\[1\]: unknown measure 'ndgc'",
    ),
    (
        'name = "top-k"\nparams = { k = 1 }',
        'name = "duel"',
        r"learners\[0\]: learner 'random' requires no feedback .* 'duel'",
    ),
    ('name = "top-k"', 'name = "topk"', r"feedback\.name: unknown feedback model 'topk'"),
    (
        'name = "fixed-items-v1"',
        'name = "fixed-items"',
        r"env\.name: unknown environment 'fixed-items' \(did you mean 'fixed-items-v1'\?\)",
    ),
    ("params = { n_items = 4 }", "params = { n_items = 0 }", r"env\.params: n_items must be >= 1"),
    (
        "params = { feature = [0, 1] }",
        "params = { feature = [0, -1] }",
        r"learners\[1\]\.params\.feature \(setting feature=-1\): must be >= 0, got -1",
    ),
    (
        "params = { feature = [0, 1] }",
        "params = { eta = 0.1 }",
        r"learners\[1\]\.params: learner 'fixed' has no parameter 'eta'",
    ),
    (
        "params = { feature = [0, 1] }",
        "params = { feature = [] }",
        r"learners\[1\]\.params\.feature: an empty list gives no settings",
    ),
    (
        'label = "by feature"\nparams = { feature = [0, 1] }',
        'label = "random"\nparams = { feature = 0 }',
        r"learners\[1\]\.label: 'random' is also the label of learners\[0\]",
    ),
    (
        '[[learners]]\nname = "fixed"',
        '[[learners]]\nname = "random"\nlabel = "r2"\n[[xx]]\nname = "fixed"',
        r"xx: unknown key",
    ),
    ('name = "demo"', 'name = "a/b"', r"experiment\.name: String should match pattern"),
    ("[env]", "[env]\ncolour = 1", r"env\.colour: unknown key \(valid: name, params\)"),
]


@pytest.mark.parametrize(("old", "new", "message"), BAD, ids=[b[2][:40] for b in BAD])
def test_bad_config_fails_on_load_naming_the_key(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    assert old in GOOD
    path = _write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.toml"]  # nothing written


def test_missing_data_file_is_named(tmp_path: Path) -> None:
    text = GOOD.replace(
        'name = "fixed-items-v1"\nparams = { n_items = 4 }',
        'name = "letor-stream-v1"\nparams = { path = "no/such.txt" }',
    )
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text))
    expected = f"env.params.path: data file not found: {tmp_path / 'no' / 'such.txt'}"
    assert info.value.problems == [
        expected + " (relative paths are resolved against the config file's folder)"
    ]


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = (
        GOOD.replace('name = "random"', 'name = "randum"')
        .replace('"ndcg@3"]', '"ndgc@3"]')
        .replace("n_items = 4", "n_items = 0")
    )
    with pytest.raises(ConfigError) as info:
        load_config(_write(tmp_path, text))
    keys = [p.split(":")[0] for p in info.value.problems]
    assert keys == ["experiment.measures[1]", "env.params", "learners[0].name"]


def test_toml_syntax_error_gives_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, GOOD.replace("reps = 10", "reps = = 10"))
    with pytest.raises(ConfigError, match=r"TOML syntax error: .*line 6"):
        load_config(path)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.toml")


def test_duplicate_run_sets_are_refused() -> None:
    text = GOOD + '\n[[learners]]\nname = "random"\nlabel = "again"\n'
    with pytest.raises(
        ConfigError, match=r"learners\[2\]: same learner and parameters as learners\[0\]"
    ):
        parse_config(_doc(text))


def test_size_table_with_unknown_section() -> None:
    doc = _doc()
    doc["sizes"]["small"]["horizon"] = 3  # belongs under experiment.
    with pytest.raises(ConfigError, match=r"sizes\.small\.horizon: unknown section"):
        parse_config(doc, size="small")


# ------------------------------------------------------------------------ packaged reproductions


def test_reproductions_are_listed_with_descriptions() -> None:
    entries = {r.name: r.description for r in list_reproductions()}
    assert "baselines-synthetic" in entries
    assert all(d and not d.startswith("(no") for d in entries.values())


# Recipes (run sets built in Python, tests/reproductions) may write data when loaded.
CONFIG_REPRODUCTIONS = [r for r in list_reproductions() if r.resource is not None]


def _load_or_skip(name: str, size: str):
    """Load a packaged reproduction; skip when it needs real data that is absent here."""
    try:
        return load_reproduction(name, size=size)
    except ConfigError as exc:
        if "data file not found" in str(exc) and not (data_root() / "MANIFEST.md").is_file():
            pytest.skip(f"{name} needs the real LETOR data in {data_root()}, which is absent")
        raise


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", [r.name for r in CONFIG_REPRODUCTIONS])
def test_every_reproduction_loads_at_every_size(name: str, size: str) -> None:
    exp = _load_or_skip(name, size)
    assert exp.name == name and exp.output == Path("results") / f"{name}-{size}"
    assert exp.description and exp.run_sets


def test_small_is_smaller_than_full() -> None:
    checked = 0
    for r in CONFIG_REPRODUCTIONS:
        try:
            small, full = (_load_or_skip(r.name, "small"), _load_or_skip(r.name, "full"))
        except pytest.skip.Exception:
            continue  # needs real data that is absent here
        work = [
            sum(rs.spec.horizon * len(rs.spec.reps) for rs in e.run_sets) for e in (small, full)
        ]
        assert work[0] < work[1], r.name
        checked += 1
    assert checked >= 5  # the synthetic reproductions always load


def test_data_prefix_resolves_against_the_data_root(tmp_path, monkeypatch) -> None:
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "train.txt").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    doc = tomllib.loads(
        '[experiment]\nname = "d"\nseed = 1\nhorizon = 10\nreps = 1\nmeasures = ["ndcg@10"]\n'
        '[env]\nname = "letor-stream-v1"\nparams = { path = "{data}/set/train.txt" }\n'
        '[feedback]\nname = "full"\n[[learners]]\nname = "random"\n'
    )
    monkeypatch.setenv("OLTR_DATA_DIR", str(tmp_path))
    exp = parse_config(doc, source="d.toml", base_dir=tmp_path / "elsewhere")
    assert exp.run_sets[0].spec.env_params["path"] == str(tmp_path / "set" / "train.txt")
    monkeypatch.setenv("OLTR_DATA_DIR", str(tmp_path / "missing"))
    with pytest.raises(ConfigError, match=r"env.params.path: data file not found: .*OLTR_DATA_DIR"):
        parse_config(doc, source="d.toml", base_dir=tmp_path)


def test_unknown_reproduction_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=re.escape("unknown reproduction 'nope'; available: ")):
        load_reproduction("nope")


def test_a_learner_that_would_fail_at_round_one_is_refused_before_any_work(tmp_path: Path) -> None:
    # RTop-1F needs blocks long enough for m exploration rounds: with m = 5 items and
    # T = 4 rounds it fails at round 1, so the config is refused while being read.
    text = """
[experiment]
name = "too-short"
horizon = 4
reps = 1
measures = ["dcg"]
[env]
name = "fixed-items-v1"
params = {n_items = 5}
[feedback]
name = "top-k"
params = {k = 1}
[[learners]]
name = "rtop1f"
"""
    with pytest.raises(ConfigError, match=r"learners\[0\]\.params: blocks of 4 rounds"):
        load_config(_write(tmp_path, text))


def test_feature_learners_are_tried_on_the_first_context(tmp_path: Path) -> None:
    # A fixed ranker sorting by feature 30 of a 20-feature stream fails at round 1.
    text = """
[experiment]
name = "bad-feature"
horizon = 10
reps = 1
measures = ["ndcg@5"]
[env]
name = "letor-stream-v1"
params = {n_features = 20}
[feedback]
name = "full"
[[learners]]
name = "fixed"
params = {feature = 30}
"""
    with pytest.raises(ConfigError, match=r"learners\[0\]\.params"):
        load_config(_write(tmp_path, text))
