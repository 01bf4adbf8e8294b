"""The learner-quality reproduction: its references, its summary, and learning at the defaults."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from oltr import RunSetSpec, run_set
from oltr.data import LetorDataset, synthetic_letor, write_letor
from oltr.experiments.runner import heldout_column
from oltr.learners.rtopk import RTopKF
from oltr.reproductions.learner_quality import CT16_PAPER_SETTINGS, _floor, summarize


def test_the_floor_is_the_expected_ndcg_of_a_random_order() -> None:
    # One query, grades (1, 0): the relevant item is on top with probability 1/2
    # (NDCG 1), else second (NDCG = (1/log2 3) / 1). Monte Carlo with 40,000 draws has
    # standard error < 0.0024; the tolerance is 5 standard errors (false alarm < 1e-6).
    data = LetorDataset(
        features=np.zeros((2, 1)),
        relevance=np.array([1, 0]),
        qids=np.array([1]),
        offsets=np.array([0, 2]),
    )
    exact = 0.5 * (1.0 + 1.0 / np.log2(3.0))
    assert _floor(data, np.random.default_rng(0), draws=40_000) == pytest.approx(exact, abs=0.012)


def test_summary_gap_closed_and_interval_by_hand() -> None:
    curves = pd.DataFrame(
        {
            "dataset": ["A/Fold1"] * 4 + ["A/Fold2"] * 4,
            "learner": ["L"] * 8,
            "rep": [0, 0, 1, 1] * 2,
            "t": [1, 10] * 4,
            "heldout": [0.1, 0.6, 0.1, 0.8, 0.1, 0.5, 0.1, 0.5],
            "floor": [0.4] * 4 + [0.3] * 4,
            "ceiling": [0.9] * 4 + [0.7] * 4,
        }
    )
    table = summarize(curves).set_index("data")
    # Fold1 at t = 10: mean 0.7, gaps (0.6-0.4)/0.5 = 0.4 and (0.8-0.4)/0.5 = 0.8.
    assert table.loc["A/Fold1", "heldout NDCG@10"] == pytest.approx(0.7)
    assert table.loc["A/Fold1", "gap closed"] == pytest.approx(0.6)
    assert table.loc["A/Fold1", "±95%"] == pytest.approx(
        stats.t.ppf(0.975, 1) * np.std([0.6, 0.8], ddof=1) / np.sqrt(2)
    )
    # Fold2: both 0.5, gap (0.5-0.3)/0.4 = 0.5; pooled: four runs, min over folds 0.5.
    pooled = table.loc["A (all folds)"]
    assert pooled["gap closed"] == pytest.approx((0.4 + 0.8 + 0.5 + 0.5) / 4)
    assert pooled["min gap closed (fold)"] == pytest.approx(0.5)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("learner", "params", "feedback", "feedback_params"),
    [
        ("rtopk", {"surrogate": "squared"}, "top-k", {"k": 1}),
        ("rtopk", {"surrogate": "ranksvm"}, "top-k", {"k": 2}),
        ("listnet", {}, "full", {}),
    ],
)
def test_defaults_learn_on_held_out_queries(
    tmp_path: Path, learner: str, params: dict, feedback: str, feedback_params: dict
) -> None:
    # Train on 300 synthetic queries, score on 150 others of the same hidden model. The
    # random orders' NDCG@10 there is about 0.44; each of 4 runs must beat it, and the mean
    # must exceed it by one-sided t-test at alpha = 0.001.
    data = synthetic_letor(n_queries=450, n_features=20, rng=7)
    write_letor(data.subset(np.arange(300)), tmp_path / "train.txt")
    write_letor(data.subset(np.arange(300, 450)), tmp_path / "test.txt")
    floor = _floor(data.subset(np.arange(300, 450)), np.random.default_rng(1))
    horizon = 5000
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"path": str(tmp_path / "train.txt")},
        feedback=feedback,
        feedback_params=feedback_params,
        learner=learner,
        learner_params=params,
        reps=(0, 1, 2, 3),
        seed=3,
        horizon=horizon,
        measures=("ndcg@10",),
        checkpoints=(horizon,),
        heldout={"path": str(tmp_path / "test.txt"), "k": 10},
    )
    final = run_set(spec)[heldout_column(10)].to_numpy()
    assert (final > floor).all(), (final, floor)
    if np.ptp(final) > 0:  # ListNet draws nothing: its runs are identical and the check exact
        assert stats.ttest_1samp(final, floor, alternative="greater").pvalue < 0.001


def test_the_paper_setting_is_ct16_section_6s() -> None:
    # η = T^(-2/3), γ = T^(-1/3), the last iterate and, for SmoothDCG, ε = 0.01 (§6).
    assert len(CT16_PAPER_SETTINGS) == 4
    for _, learner, params, _, _ in CT16_PAPER_SETTINGS:
        lrn = RTopKF(**params, horizon=1000)
        assert learner == "rtopk" and lrn.report == "last"
        assert lrn.eta_ == pytest.approx(1000 ** (-2 / 3)) and lrn.gamma_at(5) == pytest.approx(0.1)
        assert lrn.eps == (0.01 if params["surrogate"] == "smoothdcg" else "auto")
