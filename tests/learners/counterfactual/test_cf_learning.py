"""Learning from a simulated position-biased log (synthetic data): IPS and DLA beat naive.

Protocol of Joachims et al. 2017 §6 / Ai et al. 2018 §6.1 (``oltr.logs.simulate``):
a Ranking SVM trained on a few queries logs its top 10, users click under the
position-based model with θ_k = (1/k)^η, η = 2. Learners fit on 200 training
queries; NDCG@10 is measured on 100 held-out queries, for three seeds (three
data sets, loggers and logs). Claims are tested on the 300 pooled per-query
differences with a one-sided Wilcoxon signed-rank test at level 0.01 (the
false-alarm rate of each claim; seeds are fixed, so the test is deterministic).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np
import pytest
from scipy.stats import wilcoxon

from oltr.data import synthetic_letor
from oltr.data.dataset import LetorDataset
from oltr.learners.counterfactual import RankingModel, fit_counterfactual, fit_dla, fit_skyline
from oltr.logs import PositionCounts, bind, position_counts
from oltr.logs.simulate import (
    graded_click_probability,
    simulate_log,
    train_logger,
    true_propensities,
)
from oltr.metrics.ranking import ndcg

SEEDS = (0, 1, 2)
ETA = 2.0
SESSIONS = 100_000
LEVEL = 0.01
THETA = true_propensities("pbm", eta=ETA, top_k=10)

Fit = Callable[[LetorDataset, PositionCounts], RankingModel]


def per_query_ndcg(model: RankingModel, ds: LetorDataset) -> np.ndarray:
    """NDCG@10 of every query of ``ds`` ranked by ``model`` (ties: lower index first)."""
    scores = model.scores(ds.features)
    out = []
    for q in range(ds.n_queries):
        a, b = ds.offsets[q], ds.offsets[q + 1]
        order = np.argsort(-scores[a:b], kind="stable")
        out.append(float(ndcg(ds.relevance[a:b], order, k=10)))
    return np.array(out)


@cache
def _world(seed: int) -> tuple[LetorDataset, LetorDataset, PositionCounts]:
    ds = synthetic_letor(n_queries=300, n_features=20, rng=seed)
    train, test = ds.subset(np.arange(200)), ds.subset(np.arange(200, 300))
    logger = train_logger(train, rng=seed)
    log = simulate_log(train, logger, n_sessions=SESSIONS, eta=ETA, rng=seed)
    return train, test, position_counts(bind(log, train))


@cache
def _pooled(name: str) -> np.ndarray:
    fits: dict[str, Fit] = {
        "naive": lambda tr, c: fit_counterfactual(c, tr, learner="naive", rng=0),
        "ips": lambda tr, c: fit_counterfactual(c, tr, learner="ips", propensities=THETA, rng=0),
        "dla": lambda tr, c: fit_dla(c, tr, rng=0)[0],
        "skyline": lambda tr, c: fit_skyline(tr, rng=0),
    }
    results = []
    for seed in SEEDS:
        train, test, counts = _world(seed)
        results.append(per_query_ndcg(fits[name](train, counts), test))
    return np.concatenate(results)


def test_ips_beats_naive_and_closes_much_of_the_gap_to_the_skyline() -> None:
    naive, ips, skyline = _pooled("naive"), _pooled("ips"), _pooled("skyline")
    assert wilcoxon(ips - naive, alternative="greater").pvalue < LEVEL
    # "Much of the gap": at least half of the skyline's lead over naive (measured: 78%).
    assert (ips - naive).sum() >= (skyline - naive).sum() / 2
    assert (skyline - naive).sum() > 0


def test_dla_beats_naive() -> None:
    naive, dla = _pooled("naive"), _pooled("dla")
    assert wilcoxon(dla - naive, alternative="greater").pvalue < LEVEL


def test_dla_propensities_fall_with_the_position() -> None:
    # DLA's estimate from the first log: decreasing over the first five positions, and
    # biased towards 1 (measured θ_2 ≈ 0.32 for the true 0.25: with θ_k below the clipping
    # threshold τ ≈ 0.03 from k = 6 the ranker under-corrects the deep positions and its
    # relevance ratios come out too steep; see fit_dla): between the truth and no correction.
    train, _, counts = _world(0)
    _, theta = fit_dla(counts, train, rng=0)
    assert theta[0] == 1.0
    assert (np.diff(theta[:5]) < 0).all()
    assert ((theta[1:] >= THETA[1:]) & (theta[1:] < 1.0)).all()


def _calibrated_world(seed: int, eta: float) -> tuple[LetorDataset, PositionCounts]:
    """Lists of 4 to 14 documents whose first feature is log P(click | examined).

    A linear ranker can then put ``exp(f) ∝ P(click | examined)`` in every list,
    the premise of DLA's relevance ratios (Ai et al. 2018, §4), so the truth is a
    fixed point of the alternation. Grades are uniform on 0-2; three more
    features are noise, the first of which the logger also ranks by (an
    imperfect logger). Half of the lists are shorter than the 10 positions.
    """
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 15, size=300)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    grades = rng.integers(0, 3, size=int(offsets[-1]))
    log_p = np.log(graded_click_probability(grades, max_grade=2))
    features = np.column_stack([log_p, rng.normal(size=(grades.size, 3))])
    ds = LetorDataset(features=features, relevance=grades, qids=np.arange(300), offsets=offsets)
    log = simulate_log(ds, np.array([1.0, 1.0, 0.0, 0.0]), n_sessions=SESSIONS, eta=eta, rng=seed)
    return ds, position_counts(bind(log, ds))


@pytest.mark.parametrize(("eta", "clip"), [(0.5, None), (2.0, 0.01)])
def test_dla_per_list_recovers_the_propensities_when_the_ranker_can_be_calibrated(
    eta: float, clip: float | None
) -> None:
    # At η = 2 the default τ = 10/√N ≈ 0.03 exceeds θ_k from k = 6 and biases θ (see
    # fit_dla); τ = 0.01 (≤ every θ_k) leaves the estimator unbiased.
    truth = true_propensities("pbm", eta=eta, top_k=10)
    ds, counts = _calibrated_world(0, eta)
    _, theta = fit_dla(counts, ds, rng=0, clip=clip, per_list=True)
    # Positions with at least 2000 clicks: θ_k's sampling error is about 1/√clicks ≤ 2.2 %
    # (a little more with the relevance ratios' spread); 10 % is > 4 standard errors.
    # The softmax over all K positions (per_list=False) fails this by far (measured: θ_10
    # −92 % at η = 0.5).
    # Measured: within 1.9 % at η = 0.5, 4.4 % at η = 2.
    well = counts.clicks.sum(axis=0) >= 2000
    assert well[:4].all()
    np.testing.assert_allclose(theta[well], truth[well], rtol=0.10)
    # Deep positions with few clicks at η = 2: the right size, not a factor off.
    np.testing.assert_allclose(theta, truth, rtol=0.35)
