"""Swap interventions (swap-1k, Joachims et al. 2017; RandPair, Wang et al. 2016).

Exact ratios on a hand-made log, recovery of θ on simulated logs, bad input.
"""

from __future__ import annotations

import numpy as np
import pytest

from oltr.data import LetorDataset, synthetic_letor
from oltr.errors import InputError
from oltr.estimators.propensity import estimate_propensities
from oltr.estimators.randomization import randomization_problem, swap_tables
from oltr.logs import ClickLog, LogFormatError, bind
from oltr.logs.simulate import simulate_log, true_propensities

K = 5


@pytest.fixture(scope="module")
def data() -> LetorDataset:
    """40 queries of 8..15 documents (every shown list of 5 is full), grades 0..2."""
    return synthetic_letor(n_queries=40, n_features=4, max_grade=2, min_docs=8, max_docs=15, rng=1)


def test_swap_1k_ratio_is_clicks_of_the_top_document_at_k_over_at_1(data: LetorDataset) -> None:
    # One query; the logger's list is [0, 1, 2]; d1 = document 0.
    q = str(data.qids[0])
    rows = [
        (q, [0, 1, 2], [1, 0, 0]),  # @swap1: d1 at 1, clicked
        (q, [0, 1, 2], [0, 0, 0]),  # @swap1: d1 at 1, not clicked   -> rate 1/2
        (q, [1, 0, 2], [0, 1, 0]),  # @swap2: d1 at 2, clicked       -> rate 1/1
        (q, [2, 1, 0], [0, 0, 0]),  # @swap3: d1 at 3, not clicked
        (q, [2, 1, 0], [1, 0, 1]),  # @swap3: d1 at 3, clicked       -> rate 1/2
    ]
    tags = ["s@swap1", "s@swap1", "s@swap2", "s@swap3", "s@swap3"]
    log = ClickLog.from_rows(rows, loggers=tags)
    problem = randomization_problem(bind(log, data))
    fit = problem.fit(None, None)
    assert problem.design == "swap-1k"
    # θ_2 = (1/1) / (1/2) = 2, θ_3 = (1/2) / (1/2) = 1: exact ratios of rates.
    assert fit.theta.tolist() == [1.0, 2.0, 1.0]
    clicks, shown, _ = swap_tables(bind(log, data))
    assert shown[0].sum() == 15 and clicks[0, 2, 2] == 1 and clicks[0, 2, 0] == 1


@pytest.mark.parametrize("swap", ["swap-1k", "randpair"])
@pytest.mark.parametrize("eta", [1.0, 2.0])
def test_swap_estimators_recover_theta(data: LetorDataset, swap: str, eta: float) -> None:
    w = np.linalg.lstsq(data.features, data.relevance.astype(float), rcond=None)[0]
    log = simulate_log(data, w, n_sessions=60_000, eta=eta, top_k=K, swap=swap, rng=7)
    est = estimate_propensities(bind(log, data), "randomization", n_bootstrap=100, rng=2)
    truth = true_propensities("pbm", eta, K)
    assert est.details["design"] == swap
    # 4-SE rule per position (false alarm ~6e-5 each, ~1e-3 over the 16 positions tested).
    z = np.abs(est.theta[1:] - truth[1:]) / est.standard_error[1:]
    assert np.all(z <= 4.0), (est.theta, truth, est.standard_error)


def test_randomization_needs_swap_tags(data: LetorDataset) -> None:
    q = str(data.qids[0])
    plain = ClickLog.from_rows([(q, [0, 1], [1, 0])])
    with pytest.raises(LogFormatError, match="logger"):
        estimate_propensities(bind(plain, data), "randomization", n_bootstrap=0)
    untagged = ClickLog.from_rows([(q, [0, 1], [1, 0])], loggers=["prod"])
    with pytest.raises(InputError, match="no impression carries a swap"):
        estimate_propensities(bind(untagged, data), "randomization", n_bootstrap=0)


def test_randomization_without_a_click_at_the_top_is_refused(data: LetorDataset) -> None:
    q = str(data.qids[0])
    log = ClickLog.from_rows(
        [(q, [0, 1], [0, 0]), (q, [1, 0], [0, 1])], loggers=["s@swap1", "s@swap2"]
    )
    with pytest.raises(InputError, match="position 2: no query has a click"):
        estimate_propensities(bind(log, data), "randomization", n_bootstrap=0)
