"""The compiled loops of the linear learners: exact sums, batch independence, derived bounds."""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy.special import softmax

from oltr.errors import InputError
from oltr.feedback import TopKFeedback
from oltr.learners._linear_kernels import fused_step, rows_times, stable_ties
from oltr.learners.linear import batch_scores, own_order, project_rows
from oltr.learners.rtopk import RTopKF
from oltr.surrogates import ListNet
from oltr.surrogates.listwise import _softmax
from oltr.types import Context

U = 2.0**-53  # unit roundoff of float64


def plain(a: np.ndarray, mat: np.ndarray) -> np.ndarray:
    """The reference: every sum in k order from 0.0, one rounded product and one add a term."""
    out = np.zeros((a.shape[0], mat.shape[1]))
    for b in range(a.shape[0]):
        for n in range(mat.shape[1]):
            total = 0.0
            for k in range(a.shape[1]):
                total = total + float(a[b, k]) * float(mat[k, n])
            out[b, n] = total
    return out


def coefficients(gen: np.random.Generator, rows: int, inner: int) -> np.ndarray:
    """Dense rows, rows with two non-zeros (top-k estimates), and blocks of zeros."""
    a = gen.normal(size=(rows, inner))
    a[1::3] = 0.0
    for r in range(1, rows, 3):
        a[r, gen.choice(inner, 2, replace=False)] = gen.normal(size=2)
    a[:, 4:8] = 0.0
    return a


@pytest.mark.parametrize("skip", [True, False])
@pytest.mark.parametrize(
    ("rows", "inner", "cols"), [(1, 3, 5), (4, 9, 7), (5, 13, 17), (11, 10, 3)]
)
def test_rows_times_is_the_plain_loop_bit_for_bit(skip: bool, rows: int, inner: int, cols: int):
    gen = np.random.default_rng(rows * inner * cols)
    a, mat = coefficients(gen, rows, inner), gen.normal(size=(inner, cols))
    out = np.empty((rows, cols))
    rows_times(a, mat, out, skip)
    np.testing.assert_array_equal(out, plain(a, mat))


def test_a_row_is_the_same_bits_alone_and_in_any_block():
    # The four-run blocks, the tail, the sparse loop: one row, one sequence of roundings.
    gen = np.random.default_rng(1)
    a, mat = coefficients(gen, 9, 37), gen.normal(size=(37, 29))
    out = np.empty((9, 29))
    rows_times(a, mat, out, True)
    for b in range(9):
        alone = np.empty((1, 29))
        rows_times(a[b : b + 1], mat, alone, True)
        np.testing.assert_array_equal(alone[0], out[b])


@pytest.mark.parametrize("n_runs", [1, 3, 4, 5, 8, 9])
def test_scores_of_a_run_do_not_depend_on_the_batch_size(n_runs: int):
    # Fewer than four runs score from X directly, more from its transposed copy.
    gen = np.random.default_rng(n_runs)
    w, x = gen.normal(size=(9, 31)), gen.normal(size=(13, 31))
    np.testing.assert_array_equal(batch_scores(w[:n_runs], x), plain(w[:n_runs], x.T))


def exact_projection(row: np.ndarray, radius: float) -> tuple[np.ndarray, float]:
    """Π_U(row) to 60 digits (exact sum of squares), rounded once to float64; and ‖row‖."""
    with localcontext() as ctx:
        ctx.prec = 60
        total = sum(Fraction(float(v)) ** 2 for v in row)
        norm = (Decimal(total.numerator) / Decimal(total.denominator)).sqrt()
        scale = min(Decimal(1), Decimal(radius) / norm)
        return np.array([float(Decimal(float(v)) * scale) for v in row]), float(norm)


def test_projection_is_within_the_derived_bound_of_the_exact_one():
    # Π_U(w) = w · U/‖w‖ with ‖w‖² summed in index order: |fl(Σw²) − Σw²| ≤ γ_d Σw²
    # (γ_d = d u / (1 − d u), Higham Thm 3.1: d rounded squares, d − 1 additions); the
    # square root halves that relative error and adds u, the quotient U/‖w‖ and the
    # product w · (U/‖w‖) add u each: every entry is within (γ_d/2 + 3u)(1 + O(u)) of
    # w_j U/‖w‖, relatively, plus u/2 for rounding the reference once. Any other order
    # (numpy's einsum, used before) obeys the same bound, so the two differ by at most
    # twice it per projection. Rows inside the ball stay untouched, bit for bit.
    gen = np.random.default_rng(2)
    scales = np.array([[1e-3], [0.05], [1.0], [3.0], [1e5], [1e160]])  # the last overflows
    for d in (1, 7, 46, 700):
        w = gen.normal(size=(6, d)) * scales
        got = project_rows(w.copy(), 1.0)
        gamma_d = d * U / (1 - d * U)
        bound = (gamma_d / 2 + 3.5 * U) * (1 + 1e-9)
        for row, new in zip(w, got, strict=True):
            want, norm = exact_projection(row, 1.0)
            if norm <= 1.0:
                np.testing.assert_array_equal(new, row)
            else:
                assert (np.abs(new - want) <= bound * np.abs(want)).all(), (d, norm)


def test_fused_step_is_step_then_projection_then_average():
    gen = np.random.default_rng(3)
    w, x, direction = gen.normal(size=(6, 11)), gen.normal(size=(8, 11)), gen.normal(size=(6, 8))
    average = gen.normal(size=(6, 11))
    want_w = project_rows(w - plain(0.3 * direction, x), 2.0)
    want_avg = average + (want_w - average) / 4.0
    sums = np.zeros(6)
    bad = fused_step(w, direction, x, 0.3, False, sums, 2.0, average, 4.0, np.empty((6, 11)))
    assert bad == -1
    np.testing.assert_array_equal(w, want_w)
    np.testing.assert_array_equal(average, want_avg)


def test_fused_step_names_the_first_run_that_overflowed_and_keeps_the_average():
    w, x = np.ones((5, 2)), np.ones((1, 2))
    direction = np.array([[0.0], [0.0], [-1e308], [-1e308], [0.0]])
    average = np.zeros((5, 2))
    bad = fused_step(
        w, direction, x, 10.0, False, np.zeros(5), np.inf, average, 2.0, np.empty((5, 2))
    )
    assert bad == 2
    np.testing.assert_array_equal(average, 0.0)


@pytest.mark.parametrize("n_runs", [2, 6])
def test_own_order_is_the_stable_descending_order_with_ties(n_runs: int):
    # Round 1 (w = 0): every score ties; later, integer features make many ties.
    lrn = RTopKF(eta=0.5, gamma=1e-9, n_runs=n_runs, rng=0, horizon=10)
    gen = np.random.default_rng(4)
    for t in range(1, 6):
        x = gen.integers(-2, 3, size=(70, 3)).astype(float)
        ctx = Context(t=t, n_items=70, features=x)
        orders = lrn.rank(ctx)
        scores = lrn._cached_scores(ctx)[0]
        np.testing.assert_array_equal(lrn._cached_scores(ctx)[1], own_order(scores))
        labels = np.take_along_axis(np.tile(np.arange(70.0) % 3, (n_runs, 1)), orders, axis=1)
        lrn.update(ctx, orders, TopKFeedback(orders, labels[:, :1]))


@pytest.mark.parametrize("n_runs", [1, 5])
def test_non_finite_features_are_found_by_the_scores_kernel(n_runs: int):
    lrn = RTopKF(eta=0.5, n_runs=n_runs, rng=0, horizon=10)
    x = np.ones((9, 4))
    x[6, 1] = np.nan
    x[7, 0] = np.inf
    with pytest.raises(InputError, match=r"round 3 are not finite \(document 6, feature 1 is nan"):
        lrn.rank(Context(t=3, n_items=9, features=x))


def test_overflowing_scores_fall_back_to_numpys_order():
    # Finite features, finite (unbounded) weights, scores beyond float64: NaN last, no error.
    lrn = RTopKF(eta=0.5, radius=float("inf"), n_runs=5, rng=0, horizon=10)
    x = np.array([[1e300, 1e300], [1.0, 2.0], [-1e300, 1e300]])
    lrn.rank(Context(t=1, n_items=3, features=x))
    assert lrn._weights is not None
    lrn._weights[:] = [1e300, -1e300]
    ctx = Context(t=2, n_items=3, features=x)
    orders = lrn.rank(ctx)
    scores = lrn._cached_scores(ctx)[0]
    assert not np.isfinite(scores).all()
    np.testing.assert_array_equal(lrn._cached_scores(ctx)[1], own_order(scores))
    assert orders.shape == (5, 3)


def test_listnet_softmax_is_scipys_bit_for_bit():
    gen = np.random.default_rng(5)
    for shape in [(1, 1), (3, 7), (64, 120), (2, 300)]:
        v = gen.normal(size=shape) * 20
        np.testing.assert_array_equal(_softmax(v), softmax(v, axis=-1))


def test_unstable_sort_then_tie_pass_is_the_stable_sort():
    gen = np.random.default_rng(6)
    for m in (1, 2, 5, 40, 130):
        keys = gen.integers(-2, 3, size=(9, m)).astype(float)
        keys[0] = 0.0  # one group of m
        keys[1, ::2] = -0.0  # -0.0 and 0.0 tie
        keys[2] = gen.normal(size=m)  # no ties
        order = np.argsort(keys, axis=-1)
        stable_ties(keys, order)
        np.testing.assert_array_equal(order, np.argsort(keys, axis=-1, kind="stable"))


def test_listnet_gradient_is_scipys_softmax_difference_bit_for_bit():
    gen = np.random.default_rng(7)
    for shape in [(5,), (3, 7), (64, 120), (2, 3, 9)]:
        s, r = gen.normal(size=shape) * 4, gen.integers(0, 5, size=shape)
        want = softmax(s, axis=-1) - softmax(r.astype(float), axis=-1)
        np.testing.assert_array_equal(ListNet().grad(s, r), want)
        np.testing.assert_array_equal(ListNet().trusted_descent_grad(s, r), want)


@pytest.mark.parametrize("n_runs", [1, 5])
def test_batch_scores_leaves_non_finite_features_to_the_caller(n_runs: int):
    # The learners check features (InputError); the bare product only propagates NaN.
    x = np.ones((3, 2))
    x[1, 0] = np.nan
    scores = batch_scores(np.ones((n_runs, 2)), x)
    assert np.isnan(scores[:, 1]).all() and (scores[:, [0, 2]] == 2.0).all()
