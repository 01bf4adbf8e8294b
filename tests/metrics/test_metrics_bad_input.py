"""Ranking measures reject bad input with a clear message, grades past the exp2 bound too."""

from __future__ import annotations

import re

import numpy as np
import pytest

from oltr.metrics import (
    MEASURES,
    Measure,
    auc,
    dcg,
    err,
    from_scores,
    get_measure,
    ndcg,
    pairwise_loss,
    precision,
    sum_loss,
)

# ---------------------------------------------------------------------------
# bad input

OK_R, OK_O = np.array([1, 0, 2]), np.array([2, 0, 1])
BAD_INPUT = [
    (ndcg, ([1, np.nan, 0], OK_O), {}, ValueError, r"finite and >= 0 .* got nan at \(1,\)"),
    (dcg, ([1, -1, 0], OK_O), {}, ValueError, r"finite and >= 0 .* got -1 at \(1,\)"),
    (sum_loss, (["a", "b", "c"], OK_O), {}, TypeError, "relevance must be a real numeric"),
    (sum_loss, ([True, False, True], OK_O), {}, TypeError, "relevance"),
    (auc, (OK_R, [0, 0, 1]), {}, ValueError, "permutation"),
    (auc, (OK_R, [[0, 1, 2], [0, 2, 2]]), {}, ValueError, r"permutation.*\(1,\)"),
    (pairwise_loss, (OK_R, [0, 1, 3]), {}, ValueError, r"\[0, 2\]"),
    (pairwise_loss, (OK_R, [0.0, 1.0, 2.0]), {}, TypeError, "order must be an integer"),
    (dcg, (OK_R, [0, 1]), {}, ValueError, "order has 2 items"),
    (dcg, (np.zeros((2, 3)), np.tile(OK_O, (3, 1))), {}, ValueError, "broadcast"),
    (dcg, (np.zeros((0,)), np.zeros((0,), int)), {}, ValueError, "at least one item"),
    (dcg, (1.0, 0), {}, ValueError, "at least one axis"),
    (ndcg, (OK_R, OK_O), {"mask": [1, 1, 0]}, TypeError, "mask must be a boolean"),
    (ndcg, (OK_R, OK_O), {"mask": [True, False]}, ValueError, "mask must have shape"),
    (ndcg, (OK_R, OK_O), {"k": 0}, ValueError, "k must be >= 1, got 0"),
    (ndcg, (OK_R, OK_O), {"k": 1.5}, TypeError, "k must be an int"),
    (err, (OK_R, OK_O), {"k": True}, TypeError, "k must be an int"),
    (precision, (OK_R, OK_O), {"k": None}, TypeError, "k must be an int"),
    (err, (OK_R, OK_O), {"max_grade": 1}, ValueError, "max_grade must be"),
    (ndcg, (OK_R, OK_O), {"no_relevant": "one"}, TypeError, "no_relevant"),
    (get_measure, ("foo@3",), {}, ValueError, "unknown measure 'foo'.*ap, auc, dcg, err, ndcg"),
    (get_measure, ("auc@5",), {}, ValueError, "takes no cutoff"),
    (get_measure, ("ndcg@",), {}, ValueError, "cannot parse"),
    (get_measure, ("ndcg@0",), {}, ValueError, "k must be >= 1"),
    (get_measure, (3,), {}, TypeError, "a measure is a str"),
    (MEASURES["precision"], (OK_R, OK_O), {}, ValueError, "needs a cutoff"),
    (from_scores, ("ndcg", OK_R, [0.1, np.nan, 0.3]), {}, ValueError, "scores contain NaN"),
    (from_scores, ("ndcg", OK_R, ["a", "b", "c"]), {}, TypeError, "scores must be"),
    (Measure, ("x", "reward", ndcg), {}, ValueError, "kind must be"),
]


@pytest.mark.parametrize(
    ("func", "args", "kwargs", "error", "message"),
    BAD_INPUT,
    ids=[f"{i}-{row[4][:20]}" for i, row in enumerate(BAD_INPUT)],
)
def test_bad_input_is_rejected_with_a_clear_message(func, args, kwargs, error, message):
    with pytest.raises(error, match=message):
        func(*args, **kwargs)


BELOW_BOUND = float(np.nextafter(1024.0, 0.0))  # the largest float64 grade with a finite 2^g


def test_exp2_gain_bound_is_float64s_max_exponent():
    from oltr.errors import InputError
    from oltr.metrics.lists import EXP2_GRADE_BOUND, exp2_gain

    assert EXP2_GRADE_BOUND == 1024.0 and np.finfo(np.float64).max == (2 - 2.0**-52) * 2.0**1023
    # at the bound: the grade just below it has a finite gain (within 2^-40 of the largest
    # float64), the bound itself none
    gain = exp2_gain(np.array([BELOW_BOUND]))[0]
    assert np.isfinite(gain) and gain > np.finfo(np.float64).max * (1 - 2.0**-40)
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp2(EXP2_GRADE_BOUND))
    with pytest.raises(InputError, match="grade 1024.0 is too large .* from g = 1024"):
        exp2_gain(np.array([0.0, EXP2_GRADE_BOUND]))


@pytest.mark.parametrize(
    ("func", "grades", "message"),
    [
        (ndcg, [2000, 1, 0], "grade 2000.0 is too large for the exponential gain"),
        (get_measure("ndcg"), [2000, 1, 0], "grade 2000.0 is too large"),
        (dcg, [1100, 0, 0], "grade 1100.0 is too large"),
        (dcg, [1024, 0, 0], "grade 1024.0 is too large"),
        # each gain finite, their discounted sum not: 2^1023.5 (1 + 1/log2 3) > 2^1024
        (dcg, [1023.5, 1023.5, 0], "DCG of grades up to 1023.5 overflows float64"),
        (ndcg, [1023.5, 0, 1023.5], "ideal DCG of grades up to 1023.5 overflows"),
        (err, [1024, 1, 0], "max_grade 1024.0 is too large for ERR"),
    ],
)
def test_grades_beyond_the_exp2_bound_raise_instead_of_inf_or_nan(func, grades, message):
    from oltr.errors import InputError

    with pytest.raises(InputError, match=message):
        func(np.array(grades, dtype=np.float64), np.array([0, 1, 2]))


def test_grades_just_below_the_exp2_bound_give_finite_measures():
    rel, order = np.array([BELOW_BOUND, 0.0, 0.0]), np.array([0, 1, 2])
    assert dcg(rel, order) == np.exp2(BELOW_BOUND) - 1.0  # one gain, discount 1
    assert ndcg(rel, order) == 1.0
    assert ndcg(rel, np.array([1, 0, 2])) == pytest.approx(1 / np.log2(3), rel=1e-15)
    # the largest two-item DCG that fits: 2^g (1 + 1/log2 3) just below 2^1024
    g = 1024 - np.log2(1 + 1 / np.log2(3)) - 1e-9
    assert np.isfinite(dcg(np.array([g, g, 0.0]), order))


def test_error_names_the_bad_position():
    rel = np.array([[0, 1, 2], [1, -3, 0]])
    with pytest.raises(ValueError, match=re.escape("(1, 1)")):
        ndcg(rel, OK_O)
