"""ListNet's trusted gradient computes a grade softmax shared by every run once, bit for bit.

Under full feedback every run of a batch sees the same query's grades, so
``ListNet.trusted_grad_into`` takes P(R) once instead of once per run. Its
result must be the checked gradient's (``trusted_descent_grad``, one softmax
per row) to the last bit, which these tests compare as int64 bit patterns, on
a seeded grid of batch sizes, list lengths (below and above numpy's pairwise
summation block of 128) and score scales (up to e^-700-small terms); a
reordered or reciprocal-multiplied division fails them.
"""

from __future__ import annotations

import numpy as np
import pytest

from oltr.surrogates._kernels import shifted_pair_shared
from oltr.surrogates.listwise import ListNet

SHAPES = [(2, 1), (2, 7), (3, 40), (9, 129), (64, 120), (5, 300)]
SCALES = [1e-3, 1.0, 30.0, 700.0]


def _trusted(s: np.ndarray, r: np.ndarray) -> tuple[bool, np.ndarray]:
    both, out = np.empty((2, *s.shape)), np.full(s.shape, np.nan)
    return ListNet().trusted_grad_into(s, r, both, out), out


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("scale", SCALES)
def test_shared_grades_give_the_per_run_softmax_bits(shape: tuple[int, int], scale: float) -> None:
    rng = np.random.default_rng([shape[0], shape[1], int(scale * 1000)])
    s = rng.standard_normal(shape) * scale
    for row in (rng.integers(0, 5, shape[1]).astype(float), rng.random(shape[1]) * 3.0):
        r = np.tile(row, (shape[0], 1))
        assert shifted_pair_shared(s, r, np.empty((2, *shape))) == 1
        ok, out = _trusted(s, r)
        assert ok
        assert np.array_equal(_bits(out), _bits(ListNet().trusted_descent_grad(s, r)))


@pytest.mark.parametrize("shape", SHAPES)
def test_differing_rows_take_the_full_path_with_the_same_bits(shape: tuple[int, int]) -> None:
    n, m = shape
    rng = np.random.default_rng([n, m])
    s = rng.standard_normal(shape)
    r = np.tile(rng.integers(0, 5, m).astype(float), (n, 1))
    r[-1, -1] += 1.0  # the last run's last grade differs
    assert shifted_pair_shared(s, r, np.empty((2, *shape))) == 0
    ok, out = _trusted(s, r)
    assert ok
    assert np.array_equal(_bits(out), _bits(ListNet().trusted_descent_grad(s, r)))


def test_the_sign_of_a_zero_grade_changes_no_bit() -> None:
    rng = np.random.default_rng(3)
    s = rng.standard_normal((4, 9))
    r = np.tile(np.array([0.0, 2.0, 0.0, 1.0, 0.0, 0.0, 3.0, 0.0, 0.0]), (4, 1))
    r[1, 0] = r[3, 2] = -0.0
    zeros = np.zeros((3, 5))
    zeros[1, 4] = -0.0  # every grade zero: the row's maximum is a zero of either sign
    for s_, r_ in ((s, r), (s[:3, :5], zeros)):
        assert shifted_pair_shared(s_, r_, np.empty((2, *s_.shape))) == 1
        ok, out = _trusted(s_, r_)
        assert ok
        assert np.array_equal(_bits(out), _bits(ListNet().trusted_descent_grad(s_, r_)))


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
@pytest.mark.parametrize("where", ["every run", "first run", "last run"])
def test_a_bad_grade_is_refused_on_either_path(bad: float, where: str) -> None:
    s = np.zeros((3, 4))
    r = np.ones((3, 4))
    if where == "every run":
        r[:, 2] = bad
    else:
        r[0 if where == "first run" else -1, 2] = bad
    ok, _ = _trusted(s, r)
    assert not ok
    with pytest.raises(ValueError):
        ListNet().trusted_descent_grad(s, r)


def test_one_run_keeps_the_single_pass() -> None:
    # One row is trivially shared, but splitting its softmax would cost a numpy call.
    s = np.random.default_rng(4).standard_normal((1, 6))
    assert shifted_pair_shared(s, np.ones((1, 6)), np.empty((2, 1, 6))) == 0
