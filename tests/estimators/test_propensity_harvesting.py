"""Intervention harvesting, AllPairs (Agarwal et al. 2019): counts, objective, recovery, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oltr.data import LetorDataset, load_letor, synthetic_letor
from oltr.errors import InputError
from oltr.estimators.harvesting import allpairs_objective, harvesting_problem, intervention_counts
from oltr.estimators.propensity import estimate_propensities
from oltr.logs import ClickLog, LogFormatError, PositionCounts, bind, position_counts
from oltr.logs.simulate import simulate_log, true_propensities

K = 10


def test_intervention_counts_match_a_loop_over_interventional_sets() -> None:
    rng = np.random.default_rng(0)
    shown = rng.integers(0, 4, size=(30, 4)).astype(float)
    clicks = np.floor(shown * rng.uniform(0, 1, size=shown.shape))
    weights = rng.uniform(0.5, 2.0, size=30)
    c, nc = intervention_counts(clicks, shown, weights)
    want_c = np.zeros((4, 4))
    want_nc = np.zeros((4, 4))
    for k in range(4):
        for k2 in range(4):
            if k == k2:
                continue
            for r in range(30):  # (q, d) in S_{k,k'}: shown at both k and k'
                if shown[r, k] > 0 and shown[r, k2] > 0:
                    want_c[k, k2] += weights[r] * clicks[r, k] / shown[r, k]
                    want_nc[k, k2] += weights[r] * (1 - clicks[r, k] / shown[r, k])
    # Sums of ~30 products in another order: equal to rounding.
    np.testing.assert_allclose(c, want_c, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(nc, want_nc, rtol=1e-12, atol=1e-12)


def test_allpairs_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(1)
    c = rng.uniform(0, 5, size=(3, 3))
    nc = rng.uniform(0, 20, size=(3, 3))
    np.fill_diagonal(c, 0)
    np.fill_diagonal(nc, 0)
    pairs = tuple(a.astype(np.intp) for a in np.nonzero(np.triu(np.ones((3, 3)), 1)))
    x = rng.normal(size=6)
    _, grad = allpairs_objective(x, c, nc, pairs)  # type: ignore[arg-type]
    h = 1e-6
    fd = [
        (
            allpairs_objective(x + h * e, c, nc, pairs)[0]  # type: ignore[arg-type]
            - allpairs_objective(x - h * e, c, nc, pairs)[0]
        )
        / (2 * h)  # type: ignore[arg-type]
        for e in np.eye(6)
    ]
    # Central differences of a smooth function of size ~30 with h = 1e-6: ~1e-8 accurate.
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_allpairs_recovers_theta_exactly_from_noise_free_rates() -> None:
    # Click rates exactly θ_k γ_d with every document at every position: the
    # AllPairs optimum reproduces every rate, so θ̂ = θ up to the optimiser.
    theta = np.array([1.0, 0.6, 0.35, 0.2])
    gamma = np.linspace(0.1, 0.9, 12)
    shown = np.full((12, 4), 100.0)
    clicks = 100.0 * gamma[:, None] * theta[None, :]
    counts = PositionCounts(clicks[None], shown[None], ("a",))
    fit = harvesting_problem(counts).fit(None, None)
    assert fit.converged
    # The optimum is exact; L-BFGS with gtol 1e-9 on a scaled objective gets within ~1e-5.
    np.testing.assert_allclose(fit.theta, theta, atol=1e-4)


def least_squares_logger(dataset: LetorDataset, seed: int) -> np.ndarray:
    """A deterministic linear logger: least squares on the grades of half the queries, perturbed."""
    rng = np.random.default_rng(seed)
    q = np.sort(rng.choice(dataset.n_queries, dataset.n_queries // 2, replace=False))
    rows = np.concatenate([np.arange(dataset.offsets[i], dataset.offsets[i + 1]) for i in q])
    X = dataset.features[rows] - dataset.features[rows].mean(axis=0)
    w = np.linalg.lstsq(X, dataset.relevance[rows].astype(float), rcond=None)[0]
    return w + 0.3 * np.abs(w).mean() * rng.standard_normal(w.shape)


@pytest.fixture(scope="module")
def mq2008(shared_data: Path) -> LetorDataset:
    return load_letor(shared_data / "LETOR4.0" / "MQ2008" / "Fold1" / "train.txt.gz")


@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_harvesting_recovers_theta_from_two_loggers(mq2008: LetorDataset, eta: float) -> None:
    loggers = [least_squares_logger(mq2008, s) for s in (0, 1)]
    log = simulate_log(mq2008, loggers, n_sessions=100_000, eta=eta, top_k=K, rng=21)
    est = estimate_propensities(bind(log, mq2008), "harvesting", n_bootstrap=40, rng=5)
    truth = true_propensities("pbm", eta, K)
    assert est.converged and est.theta[0] == 1.0 and est.ci[0].tolist() == [1.0, 1.0]
    # |θ̂ − θ| <= 4 SE per position (false alarm ~6e-5 per position for a normal
    # estimator, ~1e-3 over both η; SE from 40 replicates is within ~±25%).
    z = np.abs(est.theta[1:] - truth[1:]) / est.standard_error[1:]
    assert np.all(z <= 4.0), (est.theta, truth, est.standard_error)
    assert np.all(est.standard_error[1:] < 0.5 * truth[1:])


def test_harvesting_needs_a_logger_column() -> None:
    ds = synthetic_letor(n_queries=3, n_features=2, min_docs=3, max_docs=3, rng=0)
    log = ClickLog.from_rows([(str(ds.qids[0]), [0, 1], [1, 0]), (str(ds.qids[0]), [1, 0], [1, 0])])
    with pytest.raises(LogFormatError, match="logger"):
        estimate_propensities(bind(log, ds), "harvesting", n_bootstrap=0)
    with pytest.raises(LogFormatError, match="per logger"):
        estimate_propensities(position_counts(bind(log, ds)), "harvesting", n_bootstrap=0)


def test_harvesting_refuses_loggers_that_always_agree() -> None:
    ds = synthetic_letor(n_queries=3, n_features=2, min_docs=3, max_docs=3, rng=0)
    q = str(ds.qids[0])
    log = ClickLog.from_rows(
        [(q, [0, 1, 2], [1, 0, 1]), (q, [0, 1, 2], [0, 1, 0])], loggers=["a", "b"]
    )
    with pytest.raises(InputError, match="no \\(query, document\\) shown at two different"):
        estimate_propensities(bind(log, ds), "harvesting", n_bootstrap=0)


def test_harvesting_names_positions_not_linked_to_the_top() -> None:
    ds = synthetic_letor(n_queries=3, n_features=2, min_docs=4, max_docs=4, rng=0)
    q = str(ds.qids[0])
    # Documents swap between positions 3 and 4 only: θ_3 / θ_4 is identified, not θ_3 / θ_1.
    log = ClickLog.from_rows(
        [(q, [0, 1, 2, 3], [1, 1, 1, 0]), (q, [0, 1, 3, 2], [1, 0, 1, 1])], loggers=["a", "b"]
    )
    with pytest.raises(InputError, match=r"positions \[2, 3, 4\] are not linked"):
        estimate_propensities(bind(log, ds), "harvesting", n_bootstrap=0)
