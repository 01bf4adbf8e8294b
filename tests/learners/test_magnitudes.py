"""Magnitudes a linear learner's arithmetic cannot hold are refused before they change anything."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from oltr.errors import InputError, NumericalError
from oltr.feedback import FullFeedback, TopKFeedback
from oltr.learners import OnlineListNet, RTopKF
from oltr.learners._step_bound import FLOAT64_MAX, check_step, largest_abs
from oltr.types import Context

ROOT_MAX = math.sqrt(FLOAT64_MAX)  # ≈ 1.34e154: ‖g‖ beyond it makes ‖g‖² overflow


@pytest.mark.parametrize("accumulated", [0.0, FLOAT64_MAX / 2, FLOAT64_MAX * 0.99])
def test_adaptive_step_bound_is_the_root_of_what_the_accumulator_has_left(
    accumulated: float,
) -> None:
    # d = (1, 0), x = (a, 0)ᵀ, one feature: the bound ‖d‖₁·√1·max|x| is a itself.
    limit = math.sqrt(FLOAT64_MAX - accumulated)
    direction = np.array([[1.0, 0.0]])
    sumsq = np.array([accumulated])
    for a, refused in ((limit, False), (np.nextafter(limit, np.inf), True)):
        x = np.array([[a], [0.0]])
        if refused:
            with pytest.raises(InputError, match=r"Σ‖g‖² overflows"):
                check_step("L", 1, direction, x, sumsq, adaptive=True)
        else:
            check_step("L", 1, direction, x, sumsq, adaptive=True)
            g = direction @ x  # what the step adds to the accumulator stays finite
            assert math.isfinite(accumulated + float(g[0] @ g[0]))
    check_step("L", 1, direction, np.array([[1e300], [0.0]]), sumsq, adaptive=False)


def test_float32_steps_are_bounded_by_float32() -> None:
    # g = d·x is held in float32: with x = (top, top) its bound is ‖d‖₁·top.
    top = np.finfo(np.float32).max
    x = np.array([[top], [top]], dtype=np.float32)
    half = np.array([[0.5, 0.5]], dtype=np.float32)  # g = top: representable
    check_step("L", 1, half, x, np.zeros(1), True)
    with pytest.raises(InputError, match=r"exceeds 3\.4e\+38"):  # g = 2·top: not
        check_step("L", 1, half * 2, x, np.zeros(1), True)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_a_direction_that_overflowed_is_refused_naming_the_grades(bad: float) -> None:
    with pytest.raises(InputError, match=r"run 1 overflowed in round 4: the grades"):
        check_step("L", 4, np.array([[0.0, 1.0], [bad, 0.0]]), np.ones((2, 1)), np.zeros(2), False)


def _listnet_round(learner: OnlineListNet, t: int, a: float) -> None:
    ctx = Context(t=t, n_items=2, features=np.array([[a], [0.0]]))
    orders = learner.rank(ctx)
    learner.update(ctx, orders, FullFeedback(orders, np.array([[1.0, 0.0]])))


@pytest.mark.parametrize(("factor", "refused"), [(1 - 1e-9, False), (1 + 1e-9, True)])
def test_listnet_learns_just_below_the_bound_and_is_refused_just_above(
    factor: float, refused: bool
) -> None:
    # Weights 0: both scores 0, P(S) = (1/2, 1/2), P(R) = softmax(1, 0): ‖d‖₁ = 2·|1/2 − σ(1)|.
    l1 = 2 * abs(0.5 - 1 / (1 + math.exp(-1)))
    learner = OnlineListNet(n_runs=1, rng=0)
    a = ROOT_MAX / l1 * factor
    if refused:
        with pytest.raises(InputError, match=r"round 1 is too large"):
            _listnet_round(learner, 1, a)
        _listnet_round(learner, 1, 1.0)  # nothing had changed: round 1 is still to come
    else:
        _listnet_round(learner, 1, a)
        w = learner.weights_
        assert np.isfinite(w).all() and w[0, 0] != 0.0


def _rtopk(surrogate: str, rounds: int = 3) -> RTopKF:
    learner = RTopKF(surrogate=surrogate, gamma=0.5, n_runs=2, rng=3)
    for t in range(1, rounds + 1):
        _rtopk_round(learner, t, np.random.default_rng(t).random((5, 3)), 1.0)
    return learner


def _rtopk_round(learner: RTopKF, t: int, x: np.ndarray[Any, Any], label: float) -> None:
    ctx = Context(t=t, n_items=5, features=x)
    orders = learner.rank(ctx)
    k = int(learner.requires.k or 1)
    learner.update(ctx, orders, TopKFeedback(orders, np.full((2, k), label)))


X = np.random.default_rng(0).random((5, 3))


@pytest.mark.parametrize(
    ("surrogate", "x", "label", "message"),
    [
        ("squared", X * 1e300, 1.0, "too large for the adaptive step"),
        ("kl", X * 1e300, 1.0, "above 709.78"),  # the scores s = w·x overflow exp
        ("squared", np.full((5, 3), 1e308), 1.0, "direction of run 0 overflowed"),
        ("squared", X, 1e308, "direction of run 0 overflowed"),
        ("kl", X, 1000.0, "above 709.78"),
        ("smoothdcg", X, 1e6, "overflows float64 from g = 1024"),
    ],
)
def test_rtopk_refuses_what_overflows_and_keeps_its_state(
    surrogate: str, x: np.ndarray[Any, Any], label: float, message: str
) -> None:
    learner = _rtopk(surrogate)
    before = learner.weights_.copy(), learner.averaged_weights_.copy()
    with pytest.raises(InputError, match=message):
        _rtopk_round(learner, 4, x, label)
    assert np.array_equal(learner.weights_, before[0])
    assert np.array_equal(learner.averaged_weights_, before[1])


def _entries() -> list[float]:
    """Every kind of float64 the bit comparison must order: zeros, subnormals, normals, inf."""
    tiny = np.nextafter(0.0, 1.0)
    return [0.0, -0.0, tiny, -tiny, 2.2e-308, 1.0, -1.5, 3e300, FLOAT64_MAX, -np.inf, np.inf]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_largest_abs_equals_numpy_on_every_kind_of_number(dtype: type) -> None:
    # Exhaustive over ordered pairs of the special values, at every position of a 3 × 4
    # array of random entries: the largest |x| exactly, or NaN as soon as one is there.
    rng = np.random.default_rng(5)
    base = (rng.standard_normal((3, 4)) * 10.0).astype(dtype)
    with np.errstate(over="ignore"):
        values = [dtype(v) for v in _entries()]
    for a in values:
        for b in values:
            for pos in range(base.size):
                x = base.copy()
                x.flat[pos], x.flat[(pos + 5) % base.size] = a, b
                assert largest_abs(x) == float(np.abs(x).max())
                assert largest_abs(x.T) == float(np.abs(x).max())  # not C-contiguous
    for pos in range(base.size):
        x = base.copy()
        x.flat[pos] = np.nan
        assert math.isnan(largest_abs(x))
    assert largest_abs(np.empty((0, 3), dtype)) == 0.0


def _make(name: str, n_runs: int) -> RTopKF | OnlineListNet:
    if name == "listnet-fixed":  # radius ∞ and a huge η: the weights themselves overflow
        return OnlineListNet(eta=1e300, radius=float("inf"), n_runs=n_runs, rng=3)
    if name == "listnet":
        return OnlineListNet(n_runs=n_runs, rng=3)
    return RTopKF(surrogate=name, gamma=0.5, n_runs=n_runs, rng=3)


def _round(
    learner: RTopKF | OnlineListNet, t: int, x: np.ndarray[Any, Any], trusted: bool, flat: bool
) -> None:
    rank = learner.trusted_rank if trusted else learner.rank
    update = learner.trusted_update if trusted else learner.update
    ctx = Context(t=t, n_items=x.shape[0], features=x)
    orders = rank(ctx)
    grades = np.zeros(x.shape[0]) if flat else np.arange(x.shape[0], dtype=np.float64)[::-1] % 3
    full = FullFeedback(orders, np.tile(grades, (learner.n_runs, 1)))
    update(ctx, orders, full.restrict(learner.requires))  # type: ignore[arg-type]


@pytest.mark.parametrize("n_runs", [1, 3])
@pytest.mark.parametrize(
    ("name", "scale", "error"),
    [
        ("squared", 1e300, InputError),  # the adaptive step's bound fails, then its full check
        ("listnet", 1e300, InputError),
        ("listnet-fixed", 1e10, NumericalError),  # a fixed step: the weights stop being finite
    ],
)
def test_trusted_rounds_refuse_what_overflows_as_checked_rounds_do(
    name: str, scale: float, error: type[Exception], n_runs: int
) -> None:
    # Three ordinary rounds of one list size (the trusted path reuses its buffers from the
    # second on), then the same list size at a scale the arithmetic cannot hold. With η = 1e300
    # the first rounds' grades are all equal, so that ListNet's weights stay 0 until then.
    messages, states = [], []
    flat = name == "listnet-fixed"
    for trusted in (False, True):
        learner = _make(name, n_runs)
        for t in (1, 2, 3):
            _round(learner, t, np.random.default_rng(t).random((6, 3)), trusted, flat)
        before = learner.weights_.copy(), learner.averaged_weights_.copy()
        with pytest.raises(error) as caught:
            x = np.random.default_rng(4).random((6, 3)) * scale
            _round(learner, 4, x, trusted, flat=False)
        messages.append(str(caught.value))
        if error is InputError:  # refused before anything changed
            assert np.array_equal(learner.weights_, before[0])
            assert np.array_equal(learner.averaged_weights_, before[1])
        states.append(before)
    assert messages[0] == messages[1]
    assert all(np.array_equal(a, b) for a, b in zip(*states, strict=True))
