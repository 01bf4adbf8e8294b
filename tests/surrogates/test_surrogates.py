"""Ranking surrogates of Chaudhuri & Tewari (2016) §2–§4: values, gradients, directions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import check_grad

from oltr.surrogates import (
    SURROGATES,
    KLListNet,
    ListNet,
    RankSVMHinge,
    SmoothDCG,
    SquaredLoss,
    make_surrogate,
)

ALL = {
    "squared": SquaredLoss(),
    "ranksvm": RankSVMHinge(),
    "kl": KLListNet(),
    "smoothdcg": SmoothDCG(),
    "smoothdcg-0.5": SmoothDCG(eps=0.5),
    "listnet": ListNet(),
}


def numeric_grad(f, s, h=1e-6):
    out = np.zeros_like(s)
    for i in range(len(s)):
        e = np.zeros_like(s)
        e[i] = h
        out[i] = (f(s + e) - f(s - e)) / (2 * h)
    return out


# --------------------------------------------------------------------------- values


def test_hand_computed_values():
    # squared: (1 − 0)² + (0 − 2)²
    assert SquaredLoss().value([1.0, 0.0], [0, 2]) == 5.0
    # RankSVM: pairs (0,1): 1 + 0.5 − 0 = 1.5; (0,2): 1 + 2 − 0 = 3; (1,2): 1 + 2 − 0.5 = 2.5
    assert RankSVMHinge().value([0.0, 0.5, 2.0], [2, 1, 0]) == 7.0
    # ... and no loss once every pair is separated by a margin of 1
    assert RankSVMHinge().value([3.0, 1.5, 0.0], [2, 1, 0]) == 0.0
    # equal grades are not a pair
    assert RankSVMHinge().value([0.0, 5.0], [1, 1]) == 0.0
    # KL: Σ e^R R − e^R s − e^R + e^s at s = 0, R = (0, 1): e − (1 + e) + 2 = 1
    assert math.isclose(KLListNet().value([0.0, 0.0], [0, 1]), 1.0)
    # ListNet: uniform vs uniform is log m; P(R) one-hot-ish vs uniform scores likewise
    assert math.isclose(ListNet().value([0.0, 0.0, 0.0], [1, 1, 1]), math.log(3))
    p = np.exp([2.0, 0.0]) / np.exp([2.0, 0.0]).sum()
    assert math.isclose(
        ListNet().value([0.0, math.log(3)], [2, 0]),
        -(p[0] * math.log(1 / 4) + p[1] * math.log(3 / 4)),
    )
    # SmoothDCG, ε = 1: softmax(0, ln 3) = (1/4, 3/4), gains (2^2 − 1, 2^1 − 1) = (3, 1)
    assert math.isclose(SmoothDCG(eps=1.0).value([0.0, math.log(3)], [2, 1]), 3 / 4 + 3 / 4)


@pytest.mark.parametrize("case", ["kl", "listnet"])
def test_kl_and_listnet_are_minimised_at_the_relevance(case):
    # φ_KL is 0 exactly at s = R (§4.1); ListNet's gradient vanishes at s = R + c.
    sur = ALL[case]
    r = np.array([0.0, 3.0, 1.0, 4.0])
    np.testing.assert_allclose(sur.grad(r + (0.0 if case == "kl" else 2.5), r), 0.0, atol=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(20):
        s = r + rng.normal(size=4)
        assert sur.value(s, r) > sur.value(r, r)
    if case == "kl":
        assert KLListNet().value(r, r) == pytest.approx(0.0, abs=1e-12)


def test_smoothdcg_tends_to_dcg_at_1():
    r = np.array([1.0, 4.0, 2.0, 0.0])
    s = np.array([0.3, 0.9, 0.5, -0.2])
    top_gain = 2.0 ** r[np.argmax(s)] - 1
    values = [SmoothDCG(eps=e).value(s, r) for e in (1.0, 0.1, 0.01, 0.001)]
    assert all(0 <= v <= 15 for v in values)
    assert abs(values[-1] - top_gain) < 1e-100
    # large ε: the mean gain
    assert math.isclose(SmoothDCG(eps=1e8).value(s, r), np.mean(2.0**r - 1), rel_tol=1e-7)


def test_ranksvm_value_is_the_pair_sum():
    rng = np.random.default_rng(2)
    for _ in range(10):
        s = rng.normal(size=6)
        r = rng.integers(0, 5, size=6)
        want = sum(
            max(0.0, 1 + s[j] - s[i]) for i, j in itertools.permutations(range(6), 2) if r[i] > r[j]
        )
        assert math.isclose(RankSVMHinge().value(s, r), want, rel_tol=1e-12)


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("case", list(ALL))
def test_gradient_matches_finite_differences(case):
    sur = ALL[case]
    rng = np.random.default_rng(len(case))
    m = 6
    scale = 0.01 if case == "smoothdcg" else 1.0  # keep s/ε of order one
    for _ in range(10):
        s = rng.normal(scale=scale, size=m)
        r = rng.integers(0, 5, size=m).astype(float)
        if case == "ranksvm":
            # keep away from the hinge kinks 1 + s_j = s_i
            gaps = np.abs(1 + s[None, :] - s[:, None])
            if gaps.min() < 1e-3:
                continue
        g = sur.grad(s, r)
        err = check_grad(
            lambda x, r=r: float(sur.value(x, r)),
            lambda x, r=r: sur.grad(x, r),
            s,
            epsilon=1e-7 * scale,
        )
        assert err <= 1e-5 * max(1.0, np.linalg.norm(g)), err
        np.testing.assert_allclose(
            numeric_grad(lambda x, r=r: float(sur.value(x, r)), s, h=1e-6 * scale),
            g,
            rtol=1e-5,
            atol=1e-5 * max(1.0, np.abs(g).max()),
        )


@pytest.mark.parametrize("case", ["smoothdcg", "listnet"])
def test_shift_invariant_surrogates_have_zero_sum_gradients(case):
    rng = np.random.default_rng(4)
    s = rng.normal(scale=0.02, size=(5, 7))
    r = rng.integers(0, 5, size=(5, 7))
    np.testing.assert_allclose(ALL[case].grad(s, r).sum(axis=-1), 0.0, atol=1e-10)
    np.testing.assert_allclose(ALL[case].value(s + 3.0, r), ALL[case].value(s, r), rtol=1e-12)


@pytest.mark.parametrize("case", list(ALL))
def test_descent_direction_improves_the_objective(case):
    # The sign convention: stepping along −descent_grad lowers a loss and RAISES a gain.
    sur = ALL[case]
    rng = np.random.default_rng(9)
    s = rng.normal(scale=0.01 if case == "smoothdcg" else 1.0, size=5)
    r = np.array([4.0, 0.0, 2.0, 1.0, 3.0])
    d = sur.descent_grad(s, r)
    assert np.linalg.norm(d) > 1e-6
    np.testing.assert_array_equal(d, sur.sign * sur.grad(s, r))
    step = 1e-3 * (0.01 if case == "smoothdcg" else 1.0) / np.linalg.norm(d)
    before, after = sur.value(s, r), sur.value(s - step * d, r)
    if sur.kind == "loss":
        assert sur.sign == 1.0 and after < before
    else:
        assert sur.sign == -1.0 and after > before
    assert sur.objective(s - step * d, r) < sur.objective(s, r)
    assert sur.objective(s, r) == sur.sign * sur.loss(s, r)


# --------------------------------------------------------------------------- batching


@pytest.mark.parametrize("case", list(ALL))
def test_batched_values_and_gradients_equal_rows(case):
    sur = ALL[case]
    rng = np.random.default_rng(6)
    s = rng.normal(size=(3, 4, 5))
    r = rng.integers(0, 5, size=(4, 5))  # broadcasts against the leading axes of s
    values = sur.value(s, r)
    grads = sur.grad(s, r)
    assert values.shape == (3, 4) and grads.shape == (3, 4, 5)
    for a, b in itertools.product(range(3), range(4)):
        assert values[a, b] == sur.value(s[a, b], r[b])
        np.testing.assert_array_equal(grads[a, b], sur.grad(s[a, b], r[b]))
    assert isinstance(sur.value(s[0, 0], r[0]), np.floating)


# --------------------------------------------------------------------------- large scores

LARGE = {
    "plus": np.array([1e4, 1e4 - 1, 1e4, 9e3]),
    "minus": np.array([-1e4, -1e4, -1e4 + 1, -9e3]),
    "mixed": np.array([1e4, -1e4, 0.0, 5e3]),
}
R_LARGE = np.array([2.0, 4.0, 1.0, 0.0])


@pytest.mark.parametrize("which", list(LARGE))
@pytest.mark.parametrize("case", [c for c in ALL if c != "kl"])
def test_large_scores_stay_finite(case, which):
    sur = ALL[case]
    s = LARGE[which]
    assert np.isfinite(sur.value(s, R_LARGE))
    assert np.isfinite(sur.grad(s, R_LARGE)).all()
    orders = np.array(list(itertools.permutations(range(4))))
    k = sur.required_k(4)
    est = sur.estimate_grad(s, orders, R_LARGE[orders[:, :k]], 0.05)
    assert np.isfinite(est).all()


def test_large_score_values_are_right():
    s = LARGE["mixed"]
    # squared: (1e4 − 2)² + (−1e4 − 4)² + 1 + (5e3)²
    assert SquaredLoss().value(s, R_LARGE) == (1e4 - 2) ** 2 + (1e4 + 4) ** 2 + 1 + 25e6
    # SmoothDCG collapses onto the top-scored item: G(R_0) = 3
    assert SmoothDCG().value(s, R_LARGE) == 3.0
    np.testing.assert_array_equal(SmoothDCG().grad(s, R_LARGE), np.zeros(4))
    # ListNet: log P(s) = (0, −2e4, −1e4, −5e3) up to e^{-5000}; P(R) = softmax(R)
    p = np.exp(R_LARGE) / np.exp(R_LARGE).sum()
    assert math.isclose(ListNet().value(s, R_LARGE), p @ [0.0, 2e4, 1e4, 5e3], rel_tol=1e-12)
    np.testing.assert_allclose(ListNet().grad(s, R_LARGE), np.eye(4)[0] - p, atol=1e-15)
    # RankSVM: the violated pairs (1 above 0, 1 above 2, 2 above 3... ) hand-summed
    want = sum(
        max(0.0, 1 + s[j] - s[i])
        for i, j in itertools.permutations(range(4), 2)
        if R_LARGE[i] > R_LARGE[j]
    )
    assert RankSVMHinge().value(s, R_LARGE) == want


def test_kl_large_scores():
    kl = KLListNet()
    s = LARGE["minus"]
    # e^s underflows to 0, leaving Σ e^R (R − s − 1): finite
    assert math.isclose(
        kl.value(s, R_LARGE), np.sum(np.exp(R_LARGE) * (R_LARGE - s - 1)), rel_tol=1e-12
    )
    np.testing.assert_allclose(kl.grad(s, R_LARGE), -np.exp(R_LARGE))
    # e^{1e4} is not a float64: a clear error instead of inf or NaN
    for which in ("plus", "mixed"):
        with pytest.raises(ValueError, match="overflows float64"):
            kl.value(LARGE[which], R_LARGE)
        with pytest.raises(ValueError, match="overflows float64"):
            kl.grad(LARGE[which], R_LARGE)
    # the top-1 estimate only needs e^{s_σ(1)}: finite when that score is representable
    s = LARGE["mixed"]
    est = kl.estimate_grad(s, [1, 0, 2, 3], [4.0], 0.05)
    assert np.isfinite(est).all()
    with pytest.raises(ValueError, match="overflows float64"):
        kl.estimate_grad(s, [0, 1, 2, 3], [2.0], 0.05)


# --------------------------------------------------------------------------- errors, registry


@pytest.mark.parametrize(
    ("scores", "relevance", "error", "match"),
    [
        ([0.0, np.nan], [1, 0], ValueError, r"scores must be finite, got nan at index \(1,\)"),
        ([0.0, 1.0], [1, np.nan], ValueError, "relevance must be finite"),
        ([0.0, 1.0], [1, -2], ValueError, "relevance must be >= 0"),
        ([0.0, 1.0], [1, 0, 2], ValueError, "same number of items"),
        (np.zeros((2, 3)), np.zeros((4, 3)), ValueError, "do not broadcast"),
        ([], [], ValueError, "at least one item"),
        ([0.0, 1.0], ["a", "b"], TypeError, "relevance must hold real numbers"),
        (np.array([1 + 1j, 0]), [1, 0], TypeError, "scores must hold real numbers"),
    ],
)
@pytest.mark.parametrize("case", ["squared", "ranksvm", "listnet"])
def test_bad_inputs(case, scores, relevance, error, match):
    with pytest.raises(error, match=match):
        ALL[case].value(scores, relevance)
    with pytest.raises(error, match=match):
        ALL[case].grad(scores, relevance)


def test_registry():
    assert set(SURROGATES) == {"squared", "ranksvm", "kl", "smoothdcg", "listnet"}
    for name, cls in SURROGATES.items():
        sur = make_surrogate(name)
        assert isinstance(sur, cls) and sur.name == name
        assert sur.kind in ("loss", "gain")
    assert [SURROGATES[n].min_k for n in ("squared", "ranksvm", "kl", "smoothdcg", "listnet")] == [
        1,
        2,
        1,
        1,
        None,
    ]
    assert make_surrogate("smoothdcg").eps == 0.01  # the paper's ε (§6)
    assert make_surrogate("smoothdcg").kind == "gain"
    with pytest.raises(ValueError, match=r"unknown surrogate 'hinge'.*'ranksvm'"):
        make_surrogate("hinge")
    with pytest.raises(TypeError, match="bad parameters for surrogate 'squared'"):
        make_surrogate("squared", eps=0.1)
    for bad in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="eps must be finite and > 0"):
            SmoothDCG(eps=bad)
    with pytest.raises(TypeError, match="eps"):
        SmoothDCG(eps="0.1")
