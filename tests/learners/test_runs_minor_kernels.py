"""Runs-minor kernels (weights stored as Wᵀ): the same bits as the row-major loops, any batch."""

from __future__ import annotations

import numpy as np
import pytest

from oltr.feedback import FullFeedback, TopKFeedback
from oltr.learners._linear_kernels import fused_step
from oltr.learners._runs_minor_kernels import (
    ROWS_FROM,
    scores_runs_minor,
    scratch_shape,
    step_runs_minor,
    transposed_times,
)
from oltr.learners.linear import RUNS_MINOR_FROM
from oltr.learners.listnet import OnlineListNet
from oltr.learners.rtopk import RTopKF
from oltr.permutations.counting import COUNTING_UP_TO
from oltr.types import Context, RunGenerators


def plain(a: np.ndarray, mat: np.ndarray) -> np.ndarray:
    """Every sum in k order from 0.0, one rounded product and one add a term."""
    out = np.zeros((a.shape[0], mat.shape[1]), dtype=a.dtype)
    for b in range(a.shape[0]):
        for n in range(mat.shape[1]):
            total = a.dtype.type(0.0)
            for k in range(a.shape[1]):
                total = total + a[b, k] * mat[k, n]
            out[b, n] = total
    return out


def features(gen: np.random.Generator, m: int, d: int) -> np.ndarray:
    """Dense features with zero blocks (the kernels skip them) and sparse columns."""
    x = gen.normal(size=(m, d))
    x[:8, :4] = 0.0
    x[:, 5::7] *= gen.random((m, len(range(5, d, 7)))) < 0.2
    return x


@pytest.mark.parametrize(("rows", "inner", "cols"), [(1, 3, 5), (4, 9, 8), (7, 13, 17), (9, 10, 3)])
def test_transposed_times_is_the_plain_loop_and_its_squares(rows: int, inner: int, cols: int):
    gen = np.random.default_rng(rows * inner + cols)
    at, mat = features(gen, inner, rows), gen.normal(size=(inner, cols))
    out, sumsq = np.empty((rows, cols)), np.empty(cols)
    transposed_times(at, mat, out, sumsq)
    expected = plain(np.ascontiguousarray(at.T), mat)
    np.testing.assert_array_equal(out, expected)
    squares = np.zeros(cols)
    for r in range(rows):
        squares = squares + expected[r] * expected[r]  # row order, one add a term
    np.testing.assert_array_equal(sumsq, squares)


@pytest.mark.parametrize("m", [5, ROWS_FROM - 1, ROWS_FROM, ROWS_FROM + 7, COUNTING_UP_TO + 1])
@pytest.mark.parametrize("n_runs", [8, 11])
def test_scores_are_the_plain_loop_in_both_layouts_of_the_sums(m: int, n_runs: int):
    gen = np.random.default_rng(m * n_runs)
    d = 13
    x, w = features(gen, m, d), gen.normal(size=(n_runs, d))
    out, neg = np.empty((n_runs, m)), np.empty((n_runs, m))
    order = np.full((n_runs, m), -1, dtype=np.intp)
    flag = scores_runs_minor(
        np.ascontiguousarray(w.T), x, np.empty(scratch_shape(m, d, n_runs)), out, neg, order
    )
    assert flag == -1
    np.testing.assert_array_equal(out, plain(w, np.ascontiguousarray(x.T)))
    np.testing.assert_array_equal(neg, -out)
    if m <= COUNTING_UP_TO:  # lists the kernel counts come back ordered: descending, ties by index
        np.testing.assert_array_equal(order, np.argsort(-out, axis=-1, kind="stable"))
    else:  # longer lists are sorted by the caller, from −S
        assert (order == -1).all()


def step_inputs(gen: np.random.Generator, n_runs: int, m: int, d: int, sparse: bool):
    weights = gen.normal(size=(n_runs, d)) * 0.5
    direction = gen.normal(size=(n_runs, m))
    if sparse:  # top-2 estimates: two non-zeros per run
        direction[:] = 0.0
        for b in range(n_runs):
            direction[b, gen.choice(m, 2, replace=False)] = gen.normal(size=2)
    direction[2] = 0.0  # a run that does not move (its AdaGrad sum stays 0)
    return weights, direction, features(gen, m, d)


@pytest.mark.parametrize("m", [6, ROWS_FROM + 3])
@pytest.mark.parametrize("adaptive", [True, False])
@pytest.mark.parametrize("radius", [0.7, np.inf])
@pytest.mark.parametrize("sparse", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_step_equals_the_row_major_step(
    m: int, adaptive: bool, radius: float, sparse: bool, dtype: type
):
    # float32: the same roundings too (products in float32, steps rounded once when stored).
    gen = np.random.default_rng(m + 10 * adaptive + 100 * sparse)
    n_runs, d = 9, 14
    weights, direction, x = (a.astype(dtype) for a in step_inputs(gen, n_runs, m, d, sparse))
    average = gen.normal(size=(n_runs, d)).astype(dtype)
    sumsq = np.zeros(n_runs)
    sumsq[::2] = gen.random(len(range(0, n_runs, 2)))
    sumsq[2] = 0.0  # with a zero direction, run 2 keeps G = 0 and does not move
    eta = 0.3
    rows = (weights.copy(), sumsq.copy(), average.copy())
    bad = fused_step(
        rows[0], direction, x, eta, adaptive, rows[1], radius, rows[2], 4.0, np.empty_like(weights)
    )
    cols = (np.ascontiguousarray(weights.T), sumsq.copy(), np.ascontiguousarray(average.T))
    bad_t = step_runs_minor(
        cols[0], direction, x, eta, adaptive, cols[1], radius, cols[2], 4.0, np.empty_like(cols[0])
    )
    assert bad == bad_t == -1
    np.testing.assert_array_equal(cols[0].T, rows[0])
    np.testing.assert_array_equal(cols[1], rows[1])
    np.testing.assert_array_equal(cols[2].T, rows[2])


@pytest.mark.parametrize("m", [6, ROWS_FROM + 3])
def test_step_names_the_same_overflowing_run_and_keeps_the_average(m: int):
    gen = np.random.default_rng(m)
    n_runs, d = 8, 5
    weights, direction, x = step_inputs(gen, n_runs, m, d, False)
    direction[5, 0] = np.inf  # run 5's weights stop being finite
    average = np.ascontiguousarray(gen.normal(size=(d, n_runs)))
    before = average.copy()
    bad = step_runs_minor(
        np.ascontiguousarray(weights.T), direction, x, 1.0, False, np.zeros(n_runs), np.inf,
        average, 2.0, np.empty((d, n_runs)),
    )  # fmt: skip
    assert bad == 5
    np.testing.assert_array_equal(average, before)


def stream(gen: np.random.Generator, rounds: int, d: int, start: int = 1):
    """Short and long lists in turn (both ways of summing and ordering, and their edges)."""
    lengths = (7, ROWS_FROM + 5, 2, ROWS_FROM - 1, ROWS_FROM, 3)
    for t in range(start, start + rounds):
        m = lengths[t % len(lengths)]
        yield Context(t=t, n_items=m, features=gen.random((m, d))), gen.integers(0, 5, m)


def play(learner, rounds: int = 40, d: int = 6) -> list[np.ndarray]:
    shown = []
    for ctx, grades in stream(np.random.default_rng(7), rounds, d):
        orders = learner.rank(ctx)
        shown.append(orders.copy())
        if isinstance(learner, OnlineListNet):
            rel = np.tile(grades, (learner.n_runs, 1))
            learner.update(ctx, orders, FullFeedback(orders, rel))
        else:
            k = learner.requires.k
            learner.update(ctx, orders, TopKFeedback(orders, grades[orders[:, :k]]))
    return shown


LEARNERS = {
    "squared": lambda b, s, dt: RTopKF(surrogate="squared", dtype=dt, n_runs=b, rng=s),
    "ranksvm": lambda b, s, dt: RTopKF(
        surrogate="ranksvm", eta=0.05, gamma=0.3, dtype=dt, n_runs=b, rng=s
    ),
    "smoothdcg": lambda b, s, dt: RTopKF(surrogate="smoothdcg", dtype=dt, n_runs=b, rng=s),
    "listnet": lambda b, s, dt: OnlineListNet(dtype=dt, n_runs=b, rng=s),
}


@pytest.mark.parametrize("name", list(LEARNERS))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n_runs", [2, 5, RUNS_MINOR_FROM + 1])
def test_a_batch_equals_its_runs_alone(name: str, dtype: str, n_runs: int):
    # Every way of summing (B < 4 direct, B < 8 transposed X, runs-minor) in both precisions.
    def make(b, s):
        return LEARNERS[name](b, s, dtype)

    reps = list(range(n_runs))
    batch = make(len(reps), RunGenerators.from_keys(9, "learner", reps=reps))
    shown = play(batch)
    assert batch.weights_.dtype == np.dtype(dtype)
    assert batch.weights_.flags.f_contiguous == (n_runs >= RUNS_MINOR_FROM)
    for b in reps:
        alone = make(1, RunGenerators.from_keys(9, "learner", reps=[b]))
        for together, single in zip(shown, play(alone), strict=True):
            np.testing.assert_array_equal(together[b], single[0])
        np.testing.assert_array_equal(batch.weights_[b], alone.weights_[0])
        np.testing.assert_array_equal(batch.averaged_weights_[b], alone.averaged_weights_[0])


def test_weights_restored_in_c_order_continue_the_same_trace():
    # A snapshot decodes arrays in C order; the learner goes back to runs-minor, same bits.
    first = RTopKF(surrogate="kl", n_runs=RUNS_MINOR_FROM, rng=3)
    second = RTopKF(surrogate="kl", n_runs=RUNS_MINOR_FROM, rng=3)
    gen1, gen2 = np.random.default_rng(1), np.random.default_rng(1)
    for learner, gen in ((first, gen1), (second, gen2)):
        for ctx, grades in stream(gen, 10, 5):
            orders = learner.rank(ctx)
            learner.update(ctx, orders, TopKFeedback(orders, grades[orders[:, :1]]))
    second._weights = np.ascontiguousarray(second._weights)
    second._average = np.ascontiguousarray(second._average)
    for learner, gen in ((first, gen1), (second, gen2)):
        for ctx, grades in stream(gen, 10, 5, start=11):
            orders = learner.rank(ctx)
            learner.update(ctx, orders, TopKFeedback(orders, grades[orders[:, :1]]))
    np.testing.assert_array_equal(first.weights_, second.weights_)
    assert second.weights_.flags.f_contiguous
