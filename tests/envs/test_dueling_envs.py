"""Duel environments: parameter duels on value functions, interleaved clicks, offline NDCG."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from oltr.data import write_letor
from oltr.data.dataset import LetorDataset
from oltr.data.synthetic import synthetic_letor
from oltr.envs.duels import CoinStream, ValueFunctionDuel
from oltr.experiments.heldout import HeldoutSet, heldout_column
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import InterleavedClickFeedback
from oltr.learners.dbgd import DBGD
from oltr.metrics import ndcg
from oltr.reproductions.synthetic_duels import (
    TABLE1,
    TABLE1_DELTA_L,
    run_parameter_duels,
    simulate_synthetic,
)
from oltr.types import RunGenerators

ALPHA = 1e-3


# ---------------------------------------------------------------------------
# parameter duels


def test_assess_hand_values() -> None:
    # P1 in d = 2: v(w) = −‖w‖², w* = 0. w = (1, 0), w' = (0, 2): v = −1 and −4.
    env = ValueFunctionDuel("P1", dim=2)
    p, reg = env.assess(np.array([[[1.0, 0.0], [0.0, 2.0]]]))
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    assert p[0] == pytest.approx(sig(3.0))  # σ(−1 − (−4))
    assert reg[0] == pytest.approx(sig(1.0) - 0.5 + sig(4.0) - 0.5)


def test_duel_outcomes_follow_the_link() -> None:
    # w' wins with probability 1 − P(w ≻ w'); a binomial test per run (Bonferroni, ALPHA).
    env = ValueFunctionDuel("P4", dim=3)
    pts = np.array([[[0.5, 0.0, 0.0], [0.0, 0.2, 0.1]], [[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])
    p_first, _ = env.assess(pts)
    coins = CoinStream(RunGenerators.from_rng(0, 2))
    n = 4000
    wins = sum((env.outcome(p_first, coins.next()) == 1).astype(int) for _ in range(n))
    for b in range(2):
        assert stats.binomtest(int(wins[b]), n, 1 - p_first[b]).pvalue > ALPHA / 2


def test_run_parameter_duels_rejects_unknown_feedback_and_bad_checkpoints() -> None:
    env = ValueFunctionDuel("P1", dim=2)
    lrn = DBGD(space="ball", radius=10.0, dim=2)
    with pytest.raises(ValueError, match="checkpoints must increase"):
        run_parameter_duels(
            env, lrn, horizon=5, checkpoints=[3, 2], rngs=RunGenerators.from_rng(0, 1)
        )
    with pytest.raises(ValueError, match="parameter_feedback"):
        run_parameter_duels(
            env, object(), horizon=5, checkpoints=[5], rngs=RunGenerators.from_rng(0, 1)
        )
    with pytest.raises(ValueError, match=r"shape \(B, 2, 2\)"):
        env.assess(np.zeros((1, 2, 3)))


def test_simulate_synthetic_validates() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        simulate_synthetic("P1", method="sgd", horizon=10)
    with pytest.raises(ValueError, match="unknown synthetic problem"):
        simulate_synthetic("P9", horizon=10)
    with pytest.raises(ValueError, match="reps must be distinct"):
        simulate_synthetic("P1", reps=[0, 0], horizon=10)


def test_table1_small_size_reproduces_the_shape_of_the_rows() -> None:
    """A small Table 1 (d = 50, T = 2·10⁴, 3 runs): regret is below the ~1 of a random point,
    with the best δ_L every problem's average regret falls with t, and P2 (the hardest, a
    pure L1 cone) stays worse than the smooth P1 and P4.
    The full table (T = 10⁶, 10 runs) is in the README; its cells match the paper's within 0.06.
    """
    means = {}
    for name in TABLE1:
        reg = simulate_synthetic(
            name,
            delta_l=TABLE1_DELTA_L,
            reps=range(3),
            seed=2009,
            horizon=20_000,
            checkpoints=[2_000, 20_000],
        )
        best = int(np.argmin(reg[..., 1].mean(axis=1)))
        assert (reg[best, :, 1] < reg[best, :, 0]).all()
        means[name] = reg[..., 1].mean(axis=1)
        assert (means[name] < 1.0).all()
    assert means["P2"].min() > max(means[p].min() for p in ("P1", "P4"))


# ---------------------------------------------------------------------------
# interleaved clicks


def test_interleaved_clicks_prefer_the_better_ranking() -> None:
    # A ranks the relevant documents first, B last; a perfect cascade user clicks only
    # relevant ones, so under team-draft A never loses and wins whenever a click lands.
    fb = InterleavedClickFeedback(click_model="perfect", n_grades=3, k=4)
    rel = np.array([2, 1, 0, 0, 0, 0])
    orders = np.tile(np.array([[0, 1, 2, 3, 4, 5], [5, 4, 3, 2, 1, 0]]), (200, 1, 1))
    out = fb.observe(orders, rel, rngs=RunGenerators.from_rng(0, 200)).outcome
    assert set(np.unique(out)) <= {-1, 0}
    assert (out == -1).mean() > 0.9


@pytest.mark.parametrize("method", ["team_draft", "balanced", "probabilistic"])
def test_interleaved_clicks_are_fair_between_equal_rankings(method: str) -> None:
    # Equal orders: no ranker can be preferred in expectation (z-test on the mean, ALPHA).
    fb = InterleavedClickFeedback(method=method, click_model="informational", n_grades=3, k=5)
    rel = np.array([2, 0, 1, 0, 2, 1, 0, 0])
    orders = np.tile(np.arange(8), (3000, 2, 1))
    out = fb.observe(orders, rel, rngs=RunGenerators.from_rng(1, 3000)).outcome.astype(float)
    se = max(out.std(ddof=1), 1e-12) / np.sqrt(out.size)
    assert abs(out.mean()) / se < stats.norm.ppf(1 - ALPHA / 2)


def test_interleaved_clicks_validate() -> None:
    with pytest.raises(ValueError, match="method must be one of"):
        InterleavedClickFeedback(method="zipper")
    with pytest.raises(ValueError, match="click_model 'sleepy'"):
        InterleavedClickFeedback(click_model="sleepy")
    fb = InterleavedClickFeedback(n_grades=3)
    with pytest.raises(ValueError, match="grades must lie in 0..2"):
        fb.observe(
            np.array([[[0, 1], [1, 0]]]), np.array([0, 4]), rngs=RunGenerators.from_rng(0, 1)
        )
    with pytest.raises(ValueError, match="pass rngs"):
        fb.observe(np.array([[[0, 1], [1, 0]]]), np.array([0, 1]))


# ---------------------------------------------------------------------------
# offline evaluation and the LETOR duel loop


def test_heldout_ndcg_of_linear_rankers_by_hand() -> None:
    ds = LetorDataset(
        features=np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [1.0, 1.0], [0.0, 0.0]]),
        relevance=np.array([0, 2, 1, 1, 0]),
        qids=np.array([1, 2]),
        offsets=np.array([0, 3, 5]),
    )
    w = np.array([[0.0, 1.0], [1.0, 0.0]])
    got = HeldoutSet(ds, k=2).per_query(w)
    # w = e_2: query 1 order (1, 2, 0) is ideal; query 2 order (3, 4) is ideal.
    # w = e_1: query 1 order (0, 2, 1): DCG@2 = (2^1 − 1)/log2(3), IDCG@2 = 3 + 1/log2(3).
    np.testing.assert_allclose(got[0], [1.0, 1.0])
    np.testing.assert_allclose(got[1, 0], (1 / np.log2(3)) / (3 + 1 / np.log2(3)))
    np.testing.assert_allclose(got[1, 1], float(ndcg(np.array([1, 0]), np.array([0, 1]), k=2)))
    np.testing.assert_allclose(HeldoutSet(ds, k=2).evaluate(w), got.mean(axis=1))


def test_dbgd_on_a_query_stream_improves_its_heldout_ndcg(tmp_path: Path) -> None:
    # The runner's held-out column scores the current w_t (§5.2's "training NDCG").
    write_letor(synthetic_letor(n_queries=40, n_features=6, rng=3), tmp_path / "train.txt")
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(tmp_path / "train.txt")},
        feedback="duel",
        feedback_params={},
        learner="dbgd",
        learner_params={"delta": 1.0, "gamma": 0.1},
        reps=(0, 1),
        seed=4,
        horizon=1500,
        measures=("ndcg@10",),
        checkpoints=(1, 1500),
        heldout={"path": str(tmp_path / "train.txt")},
    )
    df = run_set(spec)
    first, last = df[df.t == 1], df[df.t == 1500]
    column = heldout_column(10)
    assert (last[column].to_numpy() > first[column].to_numpy() + 0.02).all()
