"""Interleaved clicks on a learner's own orders: the same outcomes and draws as compare()."""

from __future__ import annotations

import numpy as np
import pytest

from oltr.clicks.methods import compare
from oltr.feedback.interleaved import InterleavedClickFeedback
from oltr.types import RunGenerators


def _duels(seed: int, n_runs: int, m: int, n_grades: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    orders = np.argsort(rng.random((n_runs, 2, m)), axis=-1)
    orders[: n_runs // 2, 1] = orders[: n_runs // 2, 0]  # some duels of a ranker with itself
    return orders, rng.integers(0, n_grades, m)


@pytest.mark.parametrize("click_model", ["perfect", "navigational", "informational"])
@pytest.mark.parametrize(("n_grades", "m", "k"), [(3, 12, 10), (5, 40, 10), (5, 7, 10), (3, 9, 4)])
def test_team_draft_cascade_duels_are_compares_outcomes_with_the_same_draws(
    click_model: str, n_grades: int, m: int, k: int
) -> None:
    model = InterleavedClickFeedback(click_model=click_model, n_grades=n_grades, k=k)
    for seed in range(10):
        orders, grades = _duels(seed, 6, m, n_grades)
        gens, twins = RunGenerators.from_rng(seed, 6), RunGenerators.from_rng(seed, 6)
        fast = model._team_draft_outcomes(orders, grades, gens)  # the path observe() takes
        assert fast is not None
        general = compare(orders[:, 0], orders[:, 1], grades, model._model, k=k, rng=list(twins))
        assert fast.dtype == np.int8 and np.array_equal(fast, general)
        assert [g.random() for g in gens] == [g.random() for g in twins]  # the same draws


def test_observe_answers_with_the_fast_outcomes() -> None:
    model = InterleavedClickFeedback(click_model="informational", n_grades=5)
    orders, grades = _duels(7, 8, 25, 5)
    seen = model.observe(orders, grades, rngs=RunGenerators.from_rng(2, 8))
    fast = model._team_draft_outcomes(orders, grades, RunGenerators.from_rng(2, 8))
    assert fast is not None and np.array_equal(seen.outcome, fast)
    assert not seen.outcome.flags.writeable and np.array_equal(seen.orders, orders)


def test_other_grades_and_methods_take_compare_with_the_same_result() -> None:
    model = InterleavedClickFeedback(click_model="navigational", n_grades=5)
    orders, grades = _duels(3, 32, 30, 5)
    as_int64 = model.observe(orders, grades, rngs=RunGenerators.from_rng(1, 32)).outcome
    as_int32 = model.observe(orders, grades.astype(np.int32), rngs=RunGenerators.from_rng(1, 32))
    assert np.array_equal(as_int64, as_int32.outcome)
    assert (as_int64 != 0).any()  # some duels are decided


def test_orders_that_are_not_permutations_are_refused_as_before() -> None:
    model = InterleavedClickFeedback(click_model="perfect", n_grades=3)
    orders, grades = _duels(0, 2, 5, 3)
    orders[1, 0, 2] = orders[1, 0, 3]  # a repeated item in run 1's first list
    with pytest.raises(ValueError, match="permutation"):
        model.observe(orders, grades, rngs=RunGenerators.from_rng(0, 2))
