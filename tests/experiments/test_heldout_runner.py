"""Held-out evaluation wired into the engine: RunSetSpec.heldout, run_set, [heldout], reports."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from oltr.build import make_env, make_feedback, make_learner
from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor, write_letor
from oltr.data.synthetic import synthetic_letor
from oltr.experiments import report, storage, sweep
from oltr.experiments.config import load_config
from oltr.experiments.runner import RunSetSpec, check_heldout, run_set
from oltr.experiments.schema import ConfigError
from oltr.metrics import ndcg
from oltr.random import child_rng
from oltr.types import RunGenerators

SEED = 11
REPS = (0, 1, 2)
CHECKPOINTS = (1, 7, 30, 60)
COLUMN = "heldout:ndcg@10"
# (learner, params, feedback, feedback params): a top-1 learner, a full-feedback one, and a
# duelling one whose weights move only on won duels.
LEARNERS = [
    ("rtopk", {"surrogate": "squared"}, "full", {}),
    ("listnet", {}, "full", {}),
    ("dbgd", {"delta": 1.0, "gamma": 0.1}, "duel", {"measure": "ndcg@10", "scale": 10.0}),
]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # load_letor caches parsed files; keep this module's files out of the user's cache.
    monkeypatch.setenv("OLTR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A training stream and a held-out file of the same width (different queries)."""
    train, test = tmp_path / "train.txt", tmp_path / "test.txt.gz"
    write_letor(synthetic_letor(n_queries=25, n_features=6, min_docs=3, max_docs=25, rng=1), train)
    write_letor(synthetic_letor(n_queries=15, n_features=6, min_docs=2, max_docs=30, rng=2), test)
    return train, test


def _spec(
    train: Path,
    learner: str = "listnet",
    params: dict | None = None,
    feedback: str = "full",
    feedback_params: dict | None = None,
    heldout: dict | None = None,
) -> RunSetSpec:
    return RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(train)},
        feedback=feedback,
        feedback_params=feedback_params or {},
        learner=learner,
        learner_params=params or {},
        reps=REPS,
        seed=SEED,
        horizon=CHECKPOINTS[-1],
        measures=("ndcg@10",),
        checkpoints=CHECKPOINTS,
        heldout=heldout,
    )


def _ndcg_by_loop(w: np.ndarray, data: LetorDataset, k: int = 10) -> np.ndarray:
    """Mean NDCG@k over queries of each weight row, one query and one run at a time."""
    out = np.empty(w.shape[0])
    for b in range(w.shape[0]):
        values = []
        for q in range(data.n_queries):
            x, r = data.query(q)
            values.append(float(ndcg(r, np.argsort(-(x @ w[b]), kind="stable"), k=k)))
        out[b] = np.mean(values)
    return out


def _reference(spec: RunSetSpec, test: LetorDataset) -> np.ndarray:
    """The protocol by hand, with the learner's weights scored after each checkpoint's round.

    Returns (n_checkpoints, B). Streams are keyed as the runner documents them.
    """
    model = make_feedback(spec.feedback, spec.feedback_params)
    env = make_env(spec.env, spec.env_params, feedback=model)
    learner = make_learner(
        spec.learner,
        spec.learner_params,
        n_runs=len(spec.reps),
        rngs=RunGenerators.from_keys(spec.seed, "learner", spec.learner, reps=spec.reps),
        horizon=spec.horizon,
    )
    fb_rngs = RunGenerators.from_keys(spec.seed, "feedback", reps=spec.reps)
    env.reset(rng=child_rng(spec.seed, "env", spec.env))
    rows = []
    for t in range(1, spec.horizon + 1):
        context = env.observe(t)
        orders = learner.rank(context)
        fb = env.feedback(orders, fb_rngs)
        learner.update(context, orders, fb.restrict(learner.requires))
        if t in spec.checkpoints:
            reported = getattr(learner, "reported_weights_", None)  # DBGD reports its w_t
            weights = learner.weights_ if reported is None else reported
            rows.append(_ndcg_by_loop(np.array(weights), test))
    return np.array(rows)


# ----------------------------------------------------------------------------- the runner


@pytest.mark.parametrize(
    ("learner", "params", "feedback", "fb_params"), LEARNERS, ids=[entry[0] for entry in LEARNERS]
)
def test_heldout_column_is_the_ndcg_of_the_reported_weights(
    files, learner, params, feedback, fb_params
) -> None:
    train, test = files
    spec = _spec(train, learner, params, feedback, fb_params, heldout={"path": str(test)})
    df = run_set(spec)
    want = _reference(spec, load_letor(test, cache=False))  # (checkpoints, B)
    got = df.pivot(index="t", columns="rep", values=COLUMN).loc[list(CHECKPOINTS), list(REPS)]
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-12, atol=0)
    # The weights moved, so the recorded values are not one value repeated.
    assert np.unique(want.round(12)).size > 1


def test_heldout_leaves_the_rest_of_the_trace_unchanged(files) -> None:
    train, test = files
    plain = run_set(_spec(train))
    with_heldout = run_set(_spec(train, heldout={"path": str(test)}))
    assert list(with_heldout.columns) == [*plain.columns, COLUMN]
    pd.testing.assert_frame_equal(with_heldout[plain.columns], plain)


def test_cutoff_and_no_relevant_reach_the_evaluation(files, tmp_path: Path) -> None:
    train, _ = files
    # One held-out query whose single relevant document every run ranks last at round 1
    # (weights 0: ties keep file order, relevant document is the third of three).
    test = tmp_path / "one.txt"
    write_letor(
        LetorDataset(
            features=np.zeros((5, 6)),
            relevance=np.array([0, 0, 1, 0, 0]),
            qids=np.array([1, 2]),
            offsets=np.array([0, 3, 5]),
        ),
        test,
    )
    spec = dataclasses.replace(
        _spec(train, "rtopk", {"surrogate": "squared"}), horizon=1, checkpoints=(1,)
    )
    # All held-out features are 0, so every weight vector ties all documents.
    cut = run_set(
        dataclasses.replace(spec, heldout={"path": str(test), "k": 2, "no_relevant": 0.0})
    )
    full = run_set(
        dataclasses.replace(spec, heldout={"path": str(test), "k": 3, "no_relevant": 0.5})
    )
    # Query 1: relevant at position 3 -> NDCG@2 = 0, NDCG@3 = (1/log2 4)/1 = 0.5.
    # Query 2 has no relevant document: no_relevant.
    np.testing.assert_allclose(cut["heldout:ndcg@2"], 0.0)
    np.testing.assert_allclose(full["heldout:ndcg@3"], (0.5 + 0.5) / 2)


def test_learner_without_weights_gets_nan(files) -> None:
    train, test = files
    df = run_set(_spec(train, "random", heldout={"path": str(test)}))
    assert df[COLUMN].isna().all()
    assert df["ndcg@10"].notna().all()


def test_feature_count_mismatch_fails_before_round_one(files, tmp_path: Path) -> None:
    train, _ = files
    narrow = tmp_path / "narrow.txt"
    write_letor(synthetic_letor(n_queries=4, n_features=5, rng=3), narrow)
    rounds: list[int] = []
    with pytest.raises(ValueError, match=r"heldout\.path: .* has 5 features but the stream has 6"):
        run_set(_spec(train, heldout={"path": str(narrow)}), progress=rounds.append)
    assert rounds == []
    # A file that leaves out trailing features can be widened explicitly.
    df = run_set(_spec(train, heldout={"path": str(narrow), "n_features": 6}))
    assert df[COLUMN].notna().all()


def test_runner_rejects_missing_files_and_featureless_environments(files, tmp_path) -> None:
    train, test = files
    with pytest.raises(ValueError, match=r"heldout\.path: no such file: .*nope\.txt"):
        run_set(_spec(train, heldout={"path": str(tmp_path / "nope.txt")}))
    items = RunSetSpec(
        env="fixed-items-v1",
        env_params={"n_items": 3},
        feedback="full",
        feedback_params={},
        learner="random",
        learner_params={},
        reps=(0,),
        seed=1,
        horizon=2,
        measures=("dcg",),
        checkpoints=(2,),
        heldout={"path": str(test)},
    )
    with pytest.raises(ValueError, match="heldout: .*feature lists.*'items' contexts"):
        run_set(items)


@pytest.mark.parametrize(
    ("heldout", "error", "message"),
    [
        ({"path": "t.txt", "k": 0}, ValueError, r"heldout\.k must be >= 1, got 0"),
        ({"path": "t.txt", "k": 2.5}, TypeError, r"heldout\.k must be an int"),
        (
            {"path": "t.txt", "no_relevant": math.nan},
            ValueError,
            r"heldout\.no_relevant must be finite",
        ),
        ({"path": "t.txt", "normalize": 1}, TypeError, r"heldout\.normalize must be a bool"),
        ({"k": 10}, TypeError, r"heldout\.path must be a file path"),
        ({"path": "t.txt", "kk": 10}, ValueError, r"heldout: unknown key 'kk'"),
        (["t.txt"], TypeError, r"heldout must be a dict or None"),
    ],
)
def test_spec_validates_heldout(files, heldout, error, message) -> None:
    with pytest.raises(error, match=message):
        _spec(files[0], heldout=heldout)


def test_run_set_id_without_heldout_is_the_id_from_before(files) -> None:
    spec = _spec(files[0])
    # The id as defined before specs had optional fields: the canonical JSON of the
    # original ones (optional fields added later, all None here, must not change it).
    original = ("env", "env_params", "feedback", "feedback_params", "learner", "learner_params")
    original += ("reps", "seed", "horizon", "measures", "checkpoints")
    assert {f.name for f in dataclasses.fields(spec) if f.default is not None} == set(original)
    fields = {name: getattr(spec, name) for name in original}
    fields = json.loads(json.dumps(fields))  # tuples -> lists
    text = json.dumps(
        {"format": storage.FORMAT_VERSION, "spec": fields}, sort_keys=True, separators=(",", ":")
    )
    assert storage.run_set_id(spec) == hashlib.sha256(text.encode()).hexdigest()[:16]


def test_run_set_id_of_heldout_specs(files) -> None:
    train, test = files
    short = _spec(train, heldout={"path": str(test)})
    spelled = _spec(
        train, heldout={"path": str(test), "k": 10, "no_relevant": 1, "normalize": "auto"}
    )
    assert storage.run_set_id(short) == storage.run_set_id(spelled)  # defaults filled in
    assert storage.run_set_id(short) != storage.run_set_id(_spec(train))
    other_k = _spec(train, heldout={"path": str(test), "k": 5})
    assert storage.run_set_id(short) != storage.run_set_id(other_k)
    assert check_heldout(None) is None


# ----------------------------------------------------------------------------- configs

CONFIG = """
[experiment]
name = "heldout-demo"
seed = 3
horizon = 40
reps = 2
measures = ["ndcg@10"]
schedule = {{ every = 10 }}

[env]
name = "{env}"
params = {env_params}

[feedback]
name = "full"

[[learners]]
name = "listnet"

[[learners]]
name = "random"

{heldout}
"""


def _config(
    folder: Path,
    heldout: str,
    *,
    env: str = "letor-stream-v1",
    env_params: str = '{ path = "train.txt" }',
) -> Path:
    path = folder / "exp.toml"
    path.write_text(CONFIG.format(heldout=heldout, env=env, env_params=env_params))
    return path


def test_config_resolves_heldout_paths_against_its_folder(files, tmp_path: Path) -> None:
    exp = load_config(_config(tmp_path, '[heldout]\npath = "test.txt.gz"\nk = 5'))
    want = str((tmp_path / "test.txt.gz").resolve())
    for rs in exp.run_sets:
        assert rs.spec.heldout == {
            "path": want,
            "group_file": None,
            "n_features": None,
            "normalize": "auto",
            "drop_no_relevant": False,
            "k": 5,
            "no_relevant": 1.0,
        }
    assert exp.resolved["heldout"]["path"] == want


def test_config_without_heldout_has_none(files, tmp_path: Path) -> None:
    exp = load_config(_config(tmp_path, ""))
    assert all(rs.spec.heldout is None for rs in exp.run_sets)
    assert "heldout" not in exp.resolved


@pytest.mark.parametrize(
    ("heldout", "message"),
    [
        ('[heldout]\npath = "missing.txt"', "heldout.path: data file not found: "),
        (
            '[heldout]\npath = "test.txt.gz"\ngroup_file = "no.query"',
            "heldout.group_file: data file not found: ",
        ),
        (
            '[heldout]\npath = "test.txt.gz"\nk = 0',
            "heldout.k: Input should be greater than or equal",
        ),
        ('[heldout]\npath = "test.txt.gz"\nk = "10"', "heldout.k: Input should be a valid integer"),
        (
            '[heldout]\npath = "test.txt.gz"\nno_relevant = nan',
            "heldout.no_relevant: must be finite",
        ),
        ('[heldout]\npath = "test.txt.gz"\ncutoff = 5', "heldout.cutoff: unknown key"),
        ("[heldout]\nk = 5", "heldout.path: missing required key"),
    ],
)
def test_config_errors_name_the_key(files, tmp_path: Path, heldout: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(_config(tmp_path, heldout))
    assert any(p.startswith(message) for p in info.value.problems), info.value.problems


def test_config_rejects_heldout_on_a_featureless_environment(files, tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        '[heldout]\npath = "test.txt.gz"',
        env="fixed-items-v1",
        env_params="{ n_items = 3 }",
    )
    with pytest.raises(ConfigError, match=r"heldout: .*'fixed-items-v1' produces 'items'"):
        load_config(path)


# ----------------------------------------------------------------------------- report


def test_sweep_and_report_carry_the_heldout_column(files, tmp_path: Path) -> None:
    _, test = files
    exp = load_config(_config(tmp_path, '[heldout]\npath = "test.txt.gz"'))
    out = tmp_path / "res"
    sweep.run_experiment(exp, out=out, jobs=1, progress=False)
    df = storage.load_results(out)
    listnet = df[df["learner"] == "listnet"]
    assert listnet[COLUMN].notna().all() and df.loc[df["learner"] == "random", COLUMN].isna().all()
    # The stored values are the weights' held-out NDCG (checked against the by-hand protocol).
    spec = next(rs.spec for rs in exp.run_sets if rs.label == "listnet")
    want = _reference(spec, load_letor(test, cache=False))
    got = listnet.pivot(index="t", columns="rep", values=COLUMN).to_numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12)

    assert report.measures_in(df) == ["ndcg@10", COLUMN]
    q = report.quantity_for(df, COLUMN)
    assert (q.column, q.per_round, q.is_regret) == (COLUMN, False, False)

    rep = report.write_report(out)
    # Plotted as the value itself against t: the drawn line is the mean over reps.
    fig = rep.figures["heldout_ndcg_10_linear"]
    lines = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "listnet"]
    assert len(lines) == 1 and [ln.get_label() for ln in fig.axes[0].get_lines()] == ["listnet"]
    np.testing.assert_allclose(lines[0].get_xdata(), [10, 20, 30, 40])
    np.testing.assert_allclose(lines[0].get_ydata(), want.mean(axis=1), rtol=1e-12)
    assert (rep.out_dir / "heldout_ndcg_10_loglog.png").is_file()
    # Tabulated at T: mean over reps of the final weights' value; random has none.
    table = pd.read_csv(rep.table_csv).set_index("learner")
    assert table.loc["listnet", f"{COLUMN} mean"] == pytest.approx(want[-1].mean(), rel=1e-5)
    assert math.isnan(table.loc["random", f"{COLUMN} mean"])
    md = rep.table_md.read_text()
    assert COLUMN in md and "held-out" in md
    random_row = next(line for line in md.splitlines() if line.startswith("| random"))
    assert random_row.rstrip(" |").endswith("–")


def test_all_nan_heldout_column_is_not_a_measure() -> None:
    df = pd.DataFrame(
        {
            "learner": "random",
            "params": "{}",
            "rep": 0,
            "t": [1, 2],
            "m": 0.5,
            "m:cum": [0.5, 1.0],
            "m:avg": 0.5,
            "m:regret": np.nan,
            COLUMN: np.nan,
        }
    )
    assert report.measures_in(df) == ["m"]
    assert report.quantity_for(df, COLUMN).column == COLUMN  # still reachable by name


# ----------------------------------------------------------------------------- real data


@pytest.mark.shared_data
@pytest.mark.parametrize(
    "name",
    ["ct16-fig1-mq2008", "ct16-fig1-ohsumed", "ct16-fig1-lightgbm", "dbgd-clicks", "yj09-table3"],
)
def test_reproduction_heldout_files_fit_their_streams(shared_data: Path, name: str) -> None:
    from oltr.reproductions.reproduce import load_reproduction

    exp = load_reproduction(name, size="small")
    rs = exp.run_sets[0]
    assert rs.spec.heldout is not None and Path(rs.spec.heldout["path"]).is_file()
    df = run_set(dataclasses.replace(rs.spec, reps=(0,), horizon=3, checkpoints=(3,)))
    value = float(df[COLUMN].iloc[0])
    assert 0.0 < value <= 1.0


def test_heldout_column_of_a_neural_ranker_scores_its_network(files) -> None:
    # A learner without linear weights (pdgd-neural) is scored through score_features: the
    # column equals NDCG@10 of its networks' scores, query by query, recomputed by hand.
    train, test = files
    spec = _spec(
        train, "pdgd-neural", {}, "clicks", {"click_model": "perfect"}, {"path": str(test)}
    )
    got = run_set(spec).pivot(index="t", columns="rep", values=COLUMN)
    data = load_letor(test, cache=False)
    model = make_feedback(spec.feedback, spec.feedback_params)
    env = make_env(spec.env, spec.env_params, feedback=model)
    learner = make_learner(
        spec.learner,
        {},
        n_runs=len(REPS),
        rngs=RunGenerators.from_keys(SEED, "learner", spec.learner, reps=REPS),
        horizon=spec.horizon,
    )
    fb_rngs = RunGenerators.from_keys(SEED, "feedback", reps=REPS)
    env.reset(rng=child_rng(SEED, "env", spec.env))
    for t in range(1, spec.horizon + 1):
        context = env.observe(t)
        orders = learner.rank(context)
        learner.update(context, orders, env.feedback(orders, fb_rngs).restrict(learner.requires))
    want = [
        np.mean(
            [
                float(ndcg(r, np.argsort(-learner.score_features(x)[b], kind="stable"), k=10))
                for x, r in (data.query(q) for q in range(data.n_queries))
            ]
        )
        for b in range(len(REPS))
    ]
    np.testing.assert_allclose(got.loc[spec.horizon, list(REPS)].to_numpy(), want, rtol=1e-12)
