"""estimate_propensities: result type, JSON, determinism, counts vs bound log, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

import oltr.estimators as estimators
from oltr.data import LetorDataset, synthetic_letor
from oltr.errors import InputError
from oltr.estimators import PropensityEstimate, estimate_propensities
from oltr.logs import ClickLog, bind, position_counts
from oltr.logs.simulate import simulate_log

K = 5


@pytest.fixture(scope="module")
def data() -> LetorDataset:
    return synthetic_letor(n_queries=30, n_features=4, max_grade=2, min_docs=8, max_docs=12, rng=3)


@pytest.fixture(scope="module")
def log(data: LetorDataset) -> ClickLog:
    rng = np.random.default_rng(0)
    loggers = [rng.standard_normal(data.n_features) for _ in range(3)]
    return simulate_log(data, loggers, n_sessions=20_000, eta=1.0, top_k=K, rng=1)


def test_the_package_exports_the_api() -> None:
    assert estimators.estimate_propensities is estimate_propensities
    assert set(estimators.METHODS) >= {"em", "harvesting", "randomization"}


@pytest.mark.parametrize("method", ["em", "harvesting"])
def test_result_shape_json_and_determinism(data: LetorDataset, log: ClickLog, method: str) -> None:
    bound = bind(log, data)
    a = estimate_propensities(bound, method, n_bootstrap=10, rng=9)
    b = estimate_propensities(bound, method, n_bootstrap=10, rng=9)
    assert isinstance(a, PropensityEstimate)
    assert a.theta.shape == (K,) and a.ci.shape == (K, 2) and a.theta[0] == 1.0
    assert a.ci[0].tolist() == [1.0, 1.0] and a.n_impressions == 20_000
    assert np.all(a.ci[:, 0] <= a.ci[:, 1])
    # Same seed, same log: bit for bit.
    assert a.theta.tolist() == b.theta.tolist() and a.ci.tolist() == b.ci.tolist()
    out = json.loads(json.dumps(a.to_json()))
    assert out["method"] == method
    assert out["propensities"] == a.theta.tolist()
    assert out["ci"] == a.ci.tolist()


def test_counts_with_the_data_set_give_the_bound_logs_estimate(
    data: LetorDataset, log: ClickLog
) -> None:
    bound = bind(log, data)
    from_bound = estimate_propensities(bound, "harvesting", n_bootstrap=5, rng=1)
    # Counts of two halves of the log, added as a stream's chunks would be.
    names = sorted(set(log.loggers.tolist()))  # type: ignore[union-attr]
    half = log.n_impressions // 2
    counts = position_counts(
        bind(log.take(np.arange(half)), data), K, by_logger=True, logger_names=names
    )
    counts.add(
        position_counts(
            bind(log.take(np.arange(half, log.n_impressions)), data),
            K,
            by_logger=True,
            logger_names=names,
        )
    )
    from_counts = estimate_propensities(counts, "harvesting", dataset=data, n_bootstrap=5, rng=1)
    # Sums of the same integers in another order: identical counts, identical estimates.
    assert from_counts.theta.tolist() == from_bound.theta.tolist()
    assert from_counts.ci.tolist() == from_bound.ci.tolist()


def test_k_larger_than_any_list_is_refused(data: LetorDataset, log: ClickLog) -> None:
    with pytest.raises(InputError, match="larger than any shown list"):
        estimate_propensities(bind(log, data), "em", n_positions=K + 1, n_bootstrap=0)
    counts = position_counts(bind(log, data), K + 3)
    with pytest.raises(InputError, match="no impression shows a document at position 6"):
        estimate_propensities(counts, "em", dataset=data, n_bootstrap=0)


def test_a_log_without_clicks_is_refused(data: LetorDataset) -> None:
    q = str(data.qids[0])
    rows = [(q, [0, 1, 2], [0, 0, 0]), (q, [2, 1, 0], [0, 0, 0])]
    bound = bind(ClickLog.from_rows(rows, loggers=["a", "b"]), data)
    for method in ("em", "harvesting"):
        with pytest.raises(InputError, match="the log has no click"):
            estimate_propensities(bound, method, n_bootstrap=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "ctr"}, "unknown propensity method"),
        ({"method": "em", "n_positions": 1}, "n_positions must be an int >= 2"),
        ({"method": "em", "n_bootstrap": -1}, "n_bootstrap must be an int >= 0"),
        ({"method": "em", "relevance": "tree"}, "unknown relevance model"),
    ],
)
def test_bad_arguments_are_named(
    data: LetorDataset, log: ClickLog, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        estimate_propensities(bind(log, data), **kwargs)  # type: ignore[arg-type]


def test_regression_em_on_counts_needs_features(data: LetorDataset, log: ClickLog) -> None:
    counts = position_counts(bind(log, data))
    with pytest.raises(InputError, match="needs the documents' features"):
        estimate_propensities(counts, "em", n_bootstrap=0)
    est = estimate_propensities(counts, "em", relevance="per-document", n_bootstrap=3, rng=0)
    assert est.details["bootstrap_unit"] == "row"
