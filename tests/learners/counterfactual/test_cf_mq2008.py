"""Learning from a simulated position-biased log on real data: LETOR 4.0 MQ2008, Fold 1.

The semi-synthetic protocol (``oltr.logs.simulate``: Ranking SVM logger trained
on 1% of the training queries, top 10 shown, position-based clicks with
η = 2, 10^5 sessions), two seeds of the log. NDCG@10 on the 156 test queries of the fold;
claims are one-sided Wilcoxon signed-rank tests at level 0.01 on the 312
pooled per-query differences. Skipped when ../shared/data is absent.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wilcoxon

from oltr.data import load_letor
from oltr.data.dataset import LetorDataset
from oltr.learners.counterfactual import (
    RankingModel,
    fit_counterfactual,
    fit_dla,
    fit_dr,
    fit_skyline,
)
from oltr.logs import PositionCounts, bind, position_counts
from oltr.logs.simulate import simulate_log, train_logger, true_propensities
from oltr.metrics.ranking import ndcg

pytestmark = pytest.mark.shared_data

SEEDS = (0, 1)
THETA = true_propensities("pbm", eta=2.0, top_k=10)
LEVEL = 0.01


def _per_query(model: RankingModel, ds: LetorDataset) -> np.ndarray:
    scores = model.scores(ds.features)
    out = []
    for q in range(ds.n_queries):
        a, b = ds.offsets[q], ds.offsets[q + 1]
        out.append(float(ndcg(ds.relevance[a:b], np.argsort(-scores[a:b], kind="stable"), k=10)))
    return np.array(out)


@cache
def _fold(root: Path) -> tuple[LetorDataset, LetorDataset]:
    fold = root / "LETOR4.0" / "MQ2008" / "Fold1"
    return load_letor(fold / "train.txt.gz"), load_letor(fold / "test.txt.gz")


@cache
def _logger(root: Path) -> np.ndarray:
    # One production ranker; the seeds draw its logs.
    return train_logger(_fold(root)[0], rng=0)


@cache
def _counts(root: Path, seed: int) -> PositionCounts:
    train, _ = _fold(root)
    log = simulate_log(train, _logger(root), n_sessions=100_000, eta=2.0, rng=seed)
    return position_counts(bind(log, train))


@cache
def _pooled(root: Path, name: str) -> np.ndarray:
    train, test = _fold(root)
    if name == "skyline":  # full information: the same model for every seed
        return np.tile(_per_query(fit_skyline(train, rng=0), test), len(SEEDS))
    out = []
    for seed in SEEDS:
        counts = _counts(root, seed)
        if name == "dr":
            model = fit_dr(counts, train, propensities=THETA, rng=seed, steps=50)
        else:
            model = fit_counterfactual(counts, train, learner=name, propensities=THETA, rng=0)
        out.append(_per_query(model, test))
    return np.concatenate(out)


def test_ips_beats_naive_and_closes_much_of_the_gap(shared_data: Path) -> None:
    naive, ips = _pooled(shared_data, "naive"), _pooled(shared_data, "ips")
    skyline = _pooled(shared_data, "skyline")
    assert wilcoxon(ips - naive, alternative="greater").pvalue < LEVEL
    # At least half of the skyline's lead over naive (measured: 77% at 10^5 sessions).
    assert (ips - naive).sum() >= (skyline - naive).sum() / 2


def test_dr_beats_naive(shared_data: Path) -> None:
    # Measured at 10^5 sessions (two seeds): NDCG@10 0.797 (DR), 0.721 (naive), 0.793 (IPS).
    naive, dr = _pooled(shared_data, "naive"), _pooled(shared_data, "dr")
    assert wilcoxon(dr - naive, alternative="greater").pvalue < LEVEL


@cache
def _mild(root: Path, name: str) -> np.ndarray:
    """Naive and DLA at η = 0.5 (mild position bias), 10^5 sessions, pooled over SEEDS."""
    train, test = _fold(root)
    out = []
    for seed in SEEDS:
        log = simulate_log(train, _logger(root), n_sessions=100_000, eta=0.5, rng=seed)
        counts = position_counts(bind(log, train))
        if name == "dla":
            model = fit_dla(counts, train, rng=0, per_list=True)[0]
        else:
            model = fit_counterfactual(counts, train, learner=name, rng=0)
        out.append(_per_query(model, test))
    return np.concatenate(out)


def test_dla_per_list_beats_naive_under_mild_position_bias(shared_data: Path) -> None:
    # About half of MQ2008's queries have at most 8 documents: a propensity softmax over
    # all 10 positions (per_list=False) underestimates the deep θ_k (see fit_dla), and the
    # alternation then settled below naive in the ULTR reproduction (MQ2008, five folds,
    # 10^5 sessions: NDCG@10 0.59 against 0.66) and was not significantly above it here
    # (0.794 against 0.777, p = 0.17). Measured per list: 0.807, p = 0.003.
    naive, dla = _mild(shared_data, "naive"), _mild(shared_data, "dla")
    assert wilcoxon(dla - naive, alternative="greater").pvalue < LEVEL
