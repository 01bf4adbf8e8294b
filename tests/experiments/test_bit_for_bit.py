"""Traces are equal bit for bit whatever the number of BLAS threads or worker processes.

A multi-threaded matrix product sums in an order that depends on its thread
count: the best fixed order in hindsight, computed by enumeration as a product
of round counts and a table of values, differed in its last bits between one
and two BLAS threads (1.8e-12 in ``ndcg@3:regret``), so ``-j 1`` (in process,
every BLAS thread) and ``-j 2`` (workers at one thread each) disagreed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from oltr.envs.base import hindsight_comparator
from oltr.experiments import storage, sweep
from oltr.experiments.config import parse_config
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.metrics import get_measure
from oltr.permutations import all_orders

# Six items with grades 0..2 make the comparator of NDCG@3 and AP enumerate 720 orders
# over hundreds of distinct relevance vectors: a matrix product large enough to be split.
HORIZON = 2_000
CHECKPOINTS = tuple(range(20, HORIZON + 1, 20))
MEASURES = ("ndcg@3", "ap", "dcg")


def _blas_threads() -> int:
    libs = threadpool_info()
    return max((lib["num_threads"] for lib in libs if lib["user_api"] == "blas"), default=1)


def _relevance() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 3, (HORIZON, 6)) * (rng.random((HORIZON, 6)) < 0.5)


@pytest.mark.parametrize("measure", MEASURES)
def test_comparator_is_the_same_at_one_and_two_blas_threads(measure: str) -> None:
    relevance = _relevance()
    with threadpool_limits(2, user_api="blas"):
        two = hindsight_comparator(relevance, measure, CHECKPOINTS)
    with threadpool_limits(1, user_api="blas"):
        one = hindsight_comparator(relevance, measure, CHECKPOINTS)
    assert one is not None and two is not None
    np.testing.assert_array_equal(one, two)


def test_comparator_is_the_best_order_summed_in_any_order() -> None:
    # The pinned product is still the comparator: equal (to rounding) to a sum over rounds.
    relevance = _relevance()[:400]
    measure = get_measure("ndcg@3")
    orders = all_orders(6)
    totals = np.zeros(len(orders))
    for row in relevance:
        totals += measure(np.broadcast_to(row, orders.shape), orders)
    best = hindsight_comparator(relevance, "ndcg@3", [400])
    assert best is not None
    np.testing.assert_allclose(best, [totals.max()], rtol=1e-12)


def _spec() -> RunSetSpec:
    return RunSetSpec(
        env="fixed-items-v1",
        env_params={"relevance": _relevance().tolist()},
        feedback="top-k",
        feedback_params={"k": 1},
        learner="fixed",
        learner_params={},
        reps=(0,),
        seed=3,
        horizon=HORIZON,
        measures=MEASURES,
        checkpoints=CHECKPOINTS,
    )


def test_run_set_is_the_same_at_one_and_two_blas_threads() -> None:
    spec = _spec()
    with threadpool_limits(2, user_api="blas"):
        before = _blas_threads()
        two = run_set(spec)
        assert _blas_threads() == before  # the runner gives the caller's threads back
    with threadpool_limits(1, user_api="blas"):
        one = run_set(spec)
    assert not one["ndcg@3:regret"].isna().any()
    pd.testing.assert_frame_equal(one, two, check_exact=True)


def test_one_and_two_jobs_store_identical_parquet(tmp_path: Path) -> None:
    doc = {
        "experiment": {
            "name": "bits",
            "seed": 3,
            "horizon": HORIZON,
            "reps": 1,
            "measures": list(MEASURES),
            "schedule": {"every": 20},
        },
        "env": {"name": "fixed-items-v1", "params": {"relevance": _relevance().tolist()}},
        "feedback": {"name": "top-k", "params": {"k": 1}},
        "learners": [{"name": "fixed"}, {"name": "random"}],
    }
    exp = parse_config(doc)
    sweep.run_experiment(exp, out=tmp_path / "one", jobs=1, progress=False)
    sweep.run_experiment(exp, out=tmp_path / "two", jobs=2, progress=False)
    for item in exp.run_sets:
        name = f"{item.run_set_id}.parquet"
        one = pd.read_parquet(storage.runs_dir(tmp_path / "one") / name)
        two = pd.read_parquet(storage.runs_dir(tmp_path / "two") / name)
        pd.testing.assert_frame_equal(one, two, check_exact=True)
