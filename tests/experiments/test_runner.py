"""The runner: hand-checked traces, determinism, batch invariance, refusals before work."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import oltr.registry as registry
from oltr.experiments.regret import log_checkpoints
from oltr.experiments.runner import RunSetSpec, run_set, trace_columns
from oltr.feedback import Feedback, FeedbackRequirement
from oltr.learners.base import Learner
from oltr.types import Context

REL = [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]]  # rounds 1..4, items 0..2


def spec(**overrides: Any) -> RunSetSpec:
    base: dict[str, Any] = dict(
        env="fixed-items-v1",
        env_params={"relevance": REL},
        feedback="full",
        feedback_params={},
        learner="fixed",
        learner_params={},
        reps=(0,),
        seed=11,
        horizon=4,
        measures=("dcg", "sumloss"),
        checkpoints=(1, 2, 3, 4),
    )
    base.update(overrides)
    return RunSetSpec(**base)


@pytest.fixture
def extra_learner(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Register a test-only learner for one test (the registry is restored afterwards)."""
    list(registry.LEARNERS)  # complete discovery first

    def add(name: str, cls: type) -> None:
        monkeypatch.setitem(registry.LEARNERS._table, name, cls)

    return add


# ---------------------------------------------------------------------------
# a run small enough to check by hand


def test_fixed_ranker_trace_by_hand() -> None:
    """Identity order: items 0, 1, 2 at positions 1, 2, 3 (DCG discounts 1, 1/log2 3, 1/2)."""
    df = run_set(spec())
    d2 = 1 / math.log2(3)
    assert df["rep"].tolist() == [0, 0, 0, 0]
    assert df["t"].tolist() == [1, 2, 3, 4]
    # per round: the relevant item sits at position 1, 3, 2, 3
    np.testing.assert_allclose(df["dcg"], [1.0, 0.5, d2, 0.5], rtol=1e-12)
    np.testing.assert_allclose(df["dcg:cum"], [1.0, 1.5, 1.5 + d2, 2 + d2], rtol=1e-12)
    np.testing.assert_allclose(
        df["dcg:avg"], [1.0, 1.5 / 2, (1.5 + d2) / 3, (2 + d2) / 4], rtol=1e-12
    )
    # best fixed order in hindsight: 1; 1 + d2; 1 + d2 + 1/2; 2·1 + d2 + 1/2 (item 2 twice)
    np.testing.assert_allclose(
        df["dcg:regret"], [0.0, 1 + d2 - 1.5, 0.0, 2 + d2 + 0.5 - (2 + d2)], atol=1e-12
    )
    assert df["sumloss"].tolist() == [1.0, 3.0, 2.0, 3.0]
    assert df["sumloss:cum"].tolist() == [1.0, 4.0, 6.0, 9.0]
    # best fixed order: 1; 1 + 2; 1 + 2 + 3; 2·1 + 2 + 3 — regret is learner minus comparator
    np.testing.assert_allclose(df["sumloss:regret"], [0.0, 4 - 3, 6 - 6, 9 - 7], atol=1e-12)


def test_trace_columns_and_row_order() -> None:
    df = run_set(spec(reps=(3, 1), checkpoints=(2, 4)))
    assert list(df.columns) == trace_columns(("dcg", "sumloss"))
    assert list(df.columns) == [
        "rep",
        "t",
        "dcg",
        "dcg:cum",
        "dcg:avg",
        "dcg:regret",
        "sumloss",
        "sumloss:cum",
        "sumloss:avg",
        "sumloss:regret",
    ]
    assert df["rep"].tolist() == [3, 3, 1, 1]
    assert df["t"].tolist() == [2, 4, 2, 4]
    assert df["rep"].dtype == np.int64 and df["t"].dtype == np.int64


def test_contextual_stream_has_no_comparator() -> None:
    df = run_set(
        spec(
            env="letor-stream-v1",
            env_params={"n_queries": 10, "n_features": 3},
            learner="random",
            horizon=20,
            measures=("ndcg@5",),
            checkpoints=(10, 20),
        )
    )
    assert df["ndcg@5:regret"].isna().all()
    assert df["ndcg@5"].between(0, 1).all()


# ---------------------------------------------------------------------------
# determinism and batch invariance

RANDOM_FIXED = dict(
    env="fixed-items-v1",
    env_params={"n_items": 5, "kind": "graded", "max_grade": 3},
    feedback="top-k",
    feedback_params={"k": 2},
    learner="random",
    horizon=100,
    measures=("dcg", "ndcg@3", "err", "pairwise", "ap"),
    checkpoints=log_checkpoints(100, 12),
)
RANDOM_STREAM = dict(
    env="letor-stream-v1",
    env_params={"n_queries": 30, "n_features": 5, "min_docs": 2, "max_docs": 40},
    feedback="full",
    feedback_params={},
    learner="random",
    horizon=100,
    measures=("ndcg@10", "dcg", "precision@3", "auc"),
    checkpoints=log_checkpoints(100, 10),
)


@pytest.mark.parametrize("setup", [RANDOM_FIXED, RANDOM_STREAM], ids=["fixed", "stream"])
def test_same_seed_same_trace_bit_for_bit(setup: dict[str, Any]) -> None:
    a = run_set(spec(**setup, reps=(0, 1, 2), seed=5))
    b = run_set(spec(**setup, reps=(0, 1, 2), seed=5))
    pd.testing.assert_frame_equal(a, b, check_exact=True)


@pytest.mark.parametrize("setup", [RANDOM_FIXED, RANDOM_STREAM], ids=["fixed", "stream"])
def test_batch_of_ten_equals_ten_single_runs_exactly(setup: dict[str, Any]) -> None:
    """Per-run streams keyed by rep, per-row arithmetic: B = 10 and B = 1 agree bit for bit.

    The stream case has lists of up to 40 items, so per-row sums that numpy might
    reorder with the batch size would show up here.
    """
    reps = tuple(range(10))
    batch = run_set(spec(**setup, reps=reps, seed=8))
    singles = pd.concat(
        [run_set(spec(**setup, reps=(r,), seed=8)) for r in reps], ignore_index=True
    )
    pd.testing.assert_frame_equal(batch, singles, check_exact=True)
    # and a run does not depend on its neighbours: rep 7 alone equals rep 7 among (3, 7)
    pair = run_set(spec(**setup, reps=(3, 7), seed=8))
    pd.testing.assert_frame_equal(
        pair[pair["rep"] == 7].reset_index(drop=True),
        singles[singles["rep"] == 7].reset_index(drop=True),
        check_exact=True,
    )


def test_seeds_and_reps_change_the_random_streams() -> None:
    a = run_set(spec(**RANDOM_FIXED, reps=(0, 1), seed=1))
    b = run_set(spec(**RANDOM_FIXED, reps=(0, 1), seed=2))
    assert not np.array_equal(a["dcg:cum"], b["dcg:cum"])
    rep0, rep1 = (a[a["rep"] == r]["dcg:cum"].to_numpy() for r in (0, 1))
    assert not np.array_equal(rep0, rep1)


def test_learners_share_the_environment_stream() -> None:
    """Common random numbers: the comparator (cum + regret for a gain) is learner-independent."""
    setup = {**RANDOM_FIXED, "learner": "random"}
    a = run_set(spec(**setup, reps=(0, 1), seed=4))
    b = run_set(spec(**{**setup, "learner": "fixed"}, reps=(0, 1), seed=4))
    comp_a = (a["dcg:cum"] + a["dcg:regret"]).to_numpy()
    comp_b = (b["dcg:cum"] + b["dcg:regret"]).to_numpy()
    np.testing.assert_allclose(comp_a, comp_b, rtol=1e-12)
    assert not np.allclose(a["dcg:cum"], b["dcg:cum"])  # but the learners did differ


def test_progress_reports_add_up_to_the_horizon() -> None:
    calls: list[int] = []
    run_set(spec(**RANDOM_FIXED, reps=(0,)), progress=calls.append)
    assert sum(calls) == 100
    assert len(calls) >= 10


# ---------------------------------------------------------------------------
# duels: two lists per round, each evaluated


class ShowBoth(Learner):
    """Duels the identity order against its reverse and counts the challenger's wins."""

    requires = FeedbackRequirement("duel")

    def __init__(self, *, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self.wins = np.zeros(n_runs)

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}

    def rank(self, context: Context) -> np.ndarray:
        ident = np.arange(context.n_items)
        return np.tile(np.stack([ident, ident[::-1]]), (self.n_runs, 1, 1))

    def update(self, context: Context, orders: np.ndarray, feedback: Feedback) -> None:
        self.wins += feedback.outcome > 0  # type: ignore[attr-defined]


def test_duel_rounds_evaluate_the_mean_of_both_lists(extra_learner: Any) -> None:
    extra_learner("test-show-both", ShowBoth)
    df = run_set(
        spec(
            learner="test-show-both",
            feedback="duel",
            feedback_params={"measure": "dcg", "link": "sign"},
            measures=("sumloss",),
        )
    )
    # SumLoss of identity / reversed: round 1 (item 0 relevant): 1 / 3; round 2 (item 2): 3 / 1;
    # round 3 (item 1): 2 / 2; round 4 (item 2): 3 / 1.
    assert df["sumloss"].tolist() == [(1 + 3) / 2, (3 + 1) / 2, (2 + 2) / 2, (3 + 1) / 2]
    with pytest.raises(ValueError, match="requires the outcome of a duel"):
        run_set(spec(learner="test-show-both", feedback="full"))


# ---------------------------------------------------------------------------
# refusals before any work


class Broken(Learner):
    """Returns a list with a repeated item."""

    def __init__(self, *, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)

    def rank(self, context: Context) -> np.ndarray:
        return np.zeros((self.n_runs, context.n_items), dtype=np.intp)

    def update(self, context: Context, orders: np.ndarray, feedback: Feedback) -> None:
        pass


def test_invalid_rankings_are_caught(extra_learner: Any) -> None:
    extra_learner("test-broken", Broken)
    with pytest.raises(ValueError, match="orders must be permutations of 0..2.*run 0"):
        run_set(spec(learner="test-broken"))


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"feedback": "duel"}, ValueError, "requires no feedback"),
        ({"horizon": 5, "checkpoints": (5,)}, ValueError, "horizon 5 exceeds the 4 rounds"),
        ({"learner": "rtop0"}, ValueError, "unknown learner 'rtop0'; valid: .*fixed"),
        ({"env": "mq2099"}, ValueError, "unknown environment 'mq2099'"),
        ({"learner_params": {"feature": -1}}, ValueError, "feature must be >= 0, got -1"),
        ({"learner_params": {"eta": 1}}, TypeError, "learner 'fixed' has no parameter 'eta'"),
        ({"learner_params": {"n_runs": 3}}, ValueError, "'n_runs' is set by the runner"),
        ({"env_params": {"n_items": 0}}, ValueError, "n_items must be >= 1"),
        ({"measures": ("ndcg@x",)}, ValueError, "cannot parse measure"),
    ],
)
def test_misconfiguration_fails_before_the_first_round(
    overrides: dict[str, Any], error: type, match: str
) -> None:
    calls: list[int] = []
    with pytest.raises(error, match=match):
        run_set(spec(**overrides), progress=calls.append)
    assert calls == []


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"reps": ()}, ValueError, "reps must be non-empty and distinct"),
        ({"reps": (1, 1)}, ValueError, "reps must be non-empty and distinct"),
        ({"reps": (-1,)}, ValueError, r"reps\[\] must be >= 0"),
        ({"seed": -2}, ValueError, "seed must be >= 0"),
        ({"horizon": 0}, ValueError, "horizon must be >= 1"),
        ({"checkpoints": (1, 3)}, ValueError, "end at the horizon 4"),
        ({"checkpoints": (2, 2, 4)}, ValueError, "increase strictly"),
        ({"measures": "dcg"}, ValueError, "non-empty sequence of strings"),
        ({"measures": ("dcg", "dcg")}, ValueError, "measures must be distinct"),
        ({"env_params": None}, TypeError, "env_params must be a dict"),
        ({"learner": ""}, TypeError, "learner must be a registry name"),
    ],
)
def test_spec_validation(overrides: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        spec(**overrides)


def test_spec_normalises_sequences_to_tuples() -> None:
    s = spec(reps=[0, 2], measures=["dcg"], checkpoints=[2, 4])
    assert s.reps == (0, 2) and s.measures == ("dcg",) and s.checkpoints == (2, 4)


# ---------------------------------------------------------------------------
# what the runner hands the learner


class Top1Spy(Learner):
    """Records every argument the runner passes; needs the top-1 grade only."""

    requires = FeedbackRequirement("topk", k=1)
    seen: list[tuple[Any, ...]] = []

    def __init__(self, *, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)

    def rank(self, context: Context) -> np.ndarray:
        return self.rngs.permutations(context.n_items)

    def update(self, *args: Any, **kwargs: Any) -> None:
        Top1Spy.seen.append((args, kwargs))


def test_runner_hands_update_only_the_declared_feedback(extra_learner: Any) -> None:
    extra_learner("test-top1-spy", Top1Spy)
    Top1Spy.seen = []
    run_set(spec(learner="test-top1-spy", feedback="full", reps=(0, 1)))  # the model reveals more
    assert len(Top1Spy.seen) == 4
    rel = np.asarray(REL)
    for t, (args, kwargs) in enumerate(Top1Spy.seen, start=1):
        assert kwargs == {} and len(args) == 3
        context, orders, fb = args
        assert type(context) is Context and context.t == t and context.features is None
        assert type(fb).__name__ == "TopKFeedback" and fb.labels.shape == (2, 1)
        # exactly the grade of each run's top item in round t, nothing else
        assert fb.labels[:, 0].tolist() == rel[t - 1, orders[:, 0]].tolist()


@pytest.mark.shared_data
def test_stream_of_a_real_letor_file(shared_data: Any) -> None:
    path = shared_data / "LETOR4.0" / "MQ2008" / "Fold1" / "vali.txt.gz"
    df = run_set(
        spec(
            env="letor-stream-v1",
            env_params={"path": str(path)},
            learner="fixed",
            learner_params={"feature": 0},
            feedback="top-k",
            feedback_params={"k": 1},
            horizon=50,
            measures=("ndcg@10", "precision@1"),
            checkpoints=(10, 50),
        )
    )
    assert df["ndcg@10"].between(0, 1).all()
    assert df["ndcg@10:regret"].isna().all()
    assert df["precision@1:avg"].between(0, 1).all()


class NeedsHorizon(Learner):
    """Remembers the horizon the runner gave it (it declares the contract)."""

    horizon_dependent = True
    last: Any = None

    def __init__(self, *, horizon: int | None = None, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self.horizon = horizon
        NeedsHorizon.last = horizon

    def rank(self, context: Context) -> np.ndarray:
        return np.tile(np.arange(context.n_items), (self.n_runs, 1))

    def update(self, context: Context, orders: np.ndarray, feedback: Feedback) -> None:
        pass


def test_learners_that_take_a_horizon_get_the_runs_horizon(extra_learner: Any) -> None:
    extra_learner("test-horizon", NeedsHorizon)
    run_set(spec(learner="test-horizon"))
    assert NeedsHorizon.last == 4
    run_set(spec(learner="test-horizon", learner_params={"horizon": 99}))  # explicit wins
    assert NeedsHorizon.last == 99


class HorizonByNameOnly(NeedsHorizon):
    """Has a ``horizon`` parameter but does not declare the contract."""

    horizon_dependent = False


def test_the_horizon_goes_only_to_learners_that_declare_it(extra_learner: Any) -> None:
    extra_learner("test-horizon-undeclared", HorizonByNameOnly)
    run_set(spec(learner="test-horizon-undeclared"))
    assert HorizonByNameOnly.last is None


# ---------------------------------------------------------------------------
# protocol options: discounted online measure, no_relevant, per-run streams

STREAM = dict(
    env="letor-stream-v1",
    env_params={"n_queries": 40, "n_features": 4, "min_docs": 2, "max_docs": 12},
    feedback="full",
    feedback_params={},
    learner="listnet",
    horizon=60,
    measures=("ndcg@10", "dcg@3"),
)


def test_online_column_is_the_discounted_sum_of_the_per_round_values() -> None:
    # Recorded every round, the per-round values give Σ_{s<=t} γ^(s-1) M_s directly.
    gamma = 0.9
    every = tuple(range(1, 61))
    df = run_set(spec(**STREAM, reps=(0, 1), checkpoints=every, online_discount=gamma))
    assert list(df.columns) == trace_columns(("ndcg@10", "dcg@3"), online=True)
    for m in ("ndcg@10", "dcg@3"):
        values = df.pivot(index="t", columns="rep", values=m).to_numpy()
        want = np.cumsum(gamma ** np.arange(60)[:, None] * values, axis=0)
        got = df.pivot(index="t", columns="rep", values=f"online:{m}").to_numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    # γ = 1 is the plain cumulative sum; the option changes no other column.
    plain = run_set(spec(**STREAM, reps=(0, 1), checkpoints=every))
    one = run_set(spec(**STREAM, reps=(0, 1), checkpoints=every, online_discount=1.0))
    np.testing.assert_allclose(one["online:dcg@3"], one["dcg@3:cum"], rtol=1e-12)
    pd.testing.assert_frame_equal(one[list(plain.columns)], plain, check_exact=True)


def test_no_relevant_sets_the_value_of_lists_without_a_relevant_item() -> None:
    # Items with grade 0 in rounds 1 and 3: NDCG takes no_relevant there, 1 by default.
    rel = [[0, 0, 0], [0, 0, 1], [0, 0, 0], [1, 0, 0]]
    kw = dict(env_params={"relevance": rel}, measures=("ndcg",), checkpoints=(1, 2, 3, 4))
    default = run_set(spec(**kw))["ndcg"].to_numpy()
    zero = run_set(spec(**kw, no_relevant=0.0))["ndcg"].to_numpy()
    np.testing.assert_allclose(default, [1.0, 0.5, 1.0, 1.0])
    np.testing.assert_allclose(zero, [0.0, 0.5, 0.0, 1.0])


def test_per_run_streams_give_each_run_its_own_queries() -> None:
    cps = (1, 5, 60)
    fixed = {**STREAM, "learner": "fixed", "checkpoints": cps}
    # A shared stream shows every run the same queries: a deterministic learner's runs agree.
    shared = run_set(spec(**fixed, reps=(0, 1, 2)))
    per_run = run_set(spec(**fixed, reps=(0, 1, 2), streams="per-run"))
    by_rep = per_run.pivot(index="t", columns="rep", values="dcg@3:cum").to_numpy()
    assert (shared.pivot(index="t", columns="rep", values="dcg@3:cum").nunique(axis=1) == 1).all()
    assert len(np.unique(by_rep[-1])) == 3
    # Run r's stream is child_rng(seed, "env", env, r): the same run alone, or among others,
    # and run 0 under "shared" is not a special case of it.
    alone = run_set(spec(**{**STREAM, "checkpoints": cps}, reps=(2,), streams="per-run"))
    among = run_set(spec(**{**STREAM, "checkpoints": cps}, reps=(4, 2, 0), streams="per-run"))
    pd.testing.assert_frame_equal(
        among[among["rep"] == 2].reset_index(drop=True), alone, check_exact=True
    )
    assert list(among["rep"].unique()) == [4, 2, 0]
    assert not np.array_equal(shared["dcg@3:cum"][:3], per_run["dcg@3:cum"][:3])
    calls: list[int] = []
    run_set(spec(**fixed, reps=(0, 1, 2), streams="per-run"), progress=calls.append)
    assert sum(calls) == 60


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"online_discount": 0.0}, ValueError, r"online_discount must lie in \(0, 1\]"),
        ({"online_discount": 1.5}, ValueError, r"online_discount must lie in \(0, 1\]"),
        ({"no_relevant": float("nan")}, ValueError, "no_relevant must be finite"),
        ({"streams": "each"}, ValueError, "streams must be one of shared, per-run"),
    ],
)
def test_protocol_options_are_validated(overrides: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        spec(**overrides)


def test_config_keys_reach_the_spec() -> None:
    from oltr.experiments.config import parse_config

    doc: dict[str, Any] = {
        "experiment": {"name": "x", "seed": 1, "horizon": 4, "reps": 2, "measures": ["ndcg"]},
        "env": {"name": "fixed-items-v1", "params": {"relevance": REL}},
        "feedback": {"name": "full"},
        "learners": [{"name": "fixed"}],
    }
    plain = parse_config(doc)
    assert "streams" not in plain.resolved["experiment"]  # unset: the document is unchanged
    doc["experiment"] |= {"online_discount": 0.5, "no_relevant": 0.0, "streams": "per-run"}
    spec_ = parse_config(doc).run_sets[0].spec
    assert (spec_.online_discount, spec_.no_relevant, spec_.streams) == (0.5, 0.0, "per-run")
    assert plain.run_sets[0].spec.streams is None
