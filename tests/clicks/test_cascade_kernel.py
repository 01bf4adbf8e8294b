"""The cascade's compiled clicks against its numpy path, by exhaustive enumeration of the coins."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from oltr.clicks import STOP_RULES, click_model
from oltr.feedback.clicks import ClickFeedbackModel
from oltr.types import RunGenerators

N_SHOWN = 3


def _every_case(n_grades: int, tables: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every grade vector of a 3-item page with every outcome of its six coins.

    The relevance vector holds every grade once per position (item ``n_grades·i + g``
    has grade g), and a run with grades (g0, g1, g2) shows items g0, n_grades + g1 and
    2·n_grades + g2 first, the other items after them. A coin comes up (u < p) with
    u = p / 2 and not with u = (1 + p) / 2, which for p = 0 or 1 is the only outcome
    possible, as it is in both paths.
    """
    grades = np.array(list(itertools.product(range(n_grades), repeat=N_SHOWN)))
    coins = np.array(list(itertools.product((True, False), repeat=2 * N_SHOWN)))
    g = np.repeat(grades, len(coins), axis=0)  # (B, 3)
    up = np.tile(coins, (len(grades), 1)).reshape(-1, 2, N_SHOWN)  # (B, 2, 3)
    p = np.stack([tables[0][g], tables[1][g]], axis=1)
    uniforms = np.where(up, p / 2, (1 + p) / 2)
    relevance = np.tile(np.arange(n_grades, dtype=np.int64), N_SHOWN)
    shown = g + n_grades * np.arange(N_SHOWN)
    rest = np.ones((g.shape[0], relevance.size), dtype=bool)
    np.put_along_axis(rest, shown, False, axis=1)
    others = np.nonzero(rest)[1].reshape(g.shape[0], -1)
    orders = np.ascontiguousarray(np.concatenate([shown, others], axis=1), dtype=np.intp)
    return relevance, orders, uniforms


@pytest.mark.parametrize("stop_rule", STOP_RULES)
@pytest.mark.parametrize("name", ["perfect", "navigational", "informational"])
def test_compiled_clicks_equal_the_numpy_paths_for_every_grade_and_coin(
    name: str, stop_rule: str
) -> None:
    model = click_model(name, n_grades=3, stop_rule=stop_rule)
    relevance, orders, uniforms = _every_case(3, model._tables)
    fast = model.clicks_on_orders(relevance, orders, uniforms)
    shown = relevance[orders[:, :N_SHOWN]]
    slow = model.clicks_from_uniforms(shown, uniforms[:, 0], uniforms[:, 1])
    assert fast is not None
    assert fast.dtype == slow.dtype and np.array_equal(fast, slow)
    assert fast.any() and not fast.all()  # the cases do click and do not


def test_other_grades_and_forms_are_left_to_the_numpy_path() -> None:
    model = click_model("informational", n_grades=3)
    orders = np.array([[0, 1, 2]], dtype=np.intp)
    u = np.full((1, 2, 2), 0.5)
    assert model.clicks_on_orders(np.array([0, 1, 2]), orders, u) is not None
    assert model.clicks_on_orders(np.array([0, 3, 2]), orders, u) is None  # grade 3 of 0..2
    assert model.clicks_on_orders(np.array([0, -1, 2]), orders, u) is None
    assert model.clicks_on_orders(np.array([0.0, 1.0, 2.0]), orders, u) is None  # float grades
    assert model.clicks_on_orders(np.array([0, 1, 2]), np.array([[0, 5, 2]]), u) is None
    assert model.clicks_on_orders(np.array([0, 1, 2]), orders, u[:, :, ::-1]) is None


@pytest.mark.parametrize(
    ("relevance", "message"),
    [
        (np.array([0, 3, 2, 1]), "grades must lie in \\[0, 2\\]"),
        (np.array([0.0, 1.5, 2.0, 1.0]), "must hold integer grades"),
    ],
)
def test_the_feedback_model_reports_bad_grades_as_before(
    relevance: np.ndarray, message: str
) -> None:
    feedback = ClickFeedbackModel(click_model="informational", n_grades=3, k=3)
    orders = np.array([[3, 1, 0, 2]], dtype=np.intp)
    with pytest.raises((ValueError, TypeError), match=message):
        feedback.observe(orders, relevance, rngs=RunGenerators.from_rng(0, 1))


def test_float_grades_click_as_integer_grades_do() -> None:
    # Integral float grades take the numpy path; the same coins give the same clicks.
    feedback = ClickFeedbackModel(click_model="navigational", n_grades=3, k=4)
    rng = np.random.default_rng(5)
    relevance = rng.integers(0, 3, 30)
    orders = np.argsort(rng.random((16, 30)), axis=1)
    as_ints = feedback.observe(orders, relevance, rngs=RunGenerators.from_rng(1, 16))
    as_floats = feedback.observe(orders, relevance * 1.0, rngs=RunGenerators.from_rng(1, 16))
    assert np.array_equal(as_ints.clicks, as_floats.clicks)
    assert as_ints.clicks.any()
