"""Unbiased top-k gradient estimators (Chaudhuri & Tewari 2016 §4): mean, batching, input.

Expectations are exact: every order enumerated (``estimator_reference.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from estimator_reference import (
    GAMMAS,
    SURROGATE_CASES,
    assert_close,
    moments,
    own_order,
    random_case,
)

from oltr.surrogates import (
    KLListNet,
    ListNet,
    RankSVMHinge,
    SmoothDCG,
    SquaredLoss,
    Surrogate,
    make_surrogate,
    top_set_probability,
)

SIZES = (2, 3, 5, 6)


# --------------------------------------------------------------------------- reference


# --------------------------------------------------------------------------- unbiasedness


@pytest.mark.parametrize("gamma", GAMMAS)
@pytest.mark.parametrize("m", SIZES)
@pytest.mark.parametrize("case", list(SURROGATE_CASES))
def test_estimate_is_unbiased_for_every_admissible_k(case, m, gamma):
    sur: Surrogate = SURROGATE_CASES[case]
    rng = np.random.default_rng([m, int(gamma * 100), len(case)])
    for ties in (False, True):
        s, r = random_case(rng, m, ties=ties, scale=0.02 if case == "smoothdcg-0.01" else 1.0)
        truth = sur.grad(s, r)
        for k in range(sur.required_k(m), m + 1):
            mean, _ = moments(sur.estimate_grad, s, r, gamma, k)
            assert_close(mean, truth)


@pytest.mark.parametrize("case", ["squared", "ranksvm", "kl", "smoothdcg-0.5"])
def test_unbiasedness_test_detects_a_biased_estimator(case):
    # §4.2's p(σ(1)) = 1 − γ + γ/m (resp. 1 − γ + 2γ/(m(m−1)) for the top pair) is the
    # probability of the learner's OWN top items only; using it for whatever is shown
    # is biased — the exact enumeration must see that.
    sur = SURROGATE_CASES[case]
    m, gamma, ell = 4, 0.3, sur.min_k
    rng = np.random.default_rng(5)
    s, r = random_case(rng, m)
    r[:] = [4, 0, 3, 1]  # nonzero gradient information in every item
    own_p = 1 - gamma + gamma / math.comb(m, ell)

    def naive(s_, orders, observed, g):
        # Shift the exploit order so that the shown items always count as "own":
        # the estimator then divides by own_p for every shown order.
        return np.stack(
            [
                sur.estimate_grad(s_, o, obs, g, exploit_order=o)
                for o, obs in zip(orders, observed, strict=True)
            ]
        )

    naive_mean, _ = moments(naive, s, r, gamma, ell)
    good_mean, _ = moments(sur.estimate_grad, s, r, gamma, ell)
    assert_close(good_mean, sur.grad(s, r))
    assert np.abs(naive_mean - sur.grad(s, r)).max() > 1e-3
    # and the naive estimator really divided by §4.2's constant
    o = np.arange(m)
    assert math.isclose(float(top_set_probability(o, o[:ell], gamma)), own_p, rel_tol=1e-12)


def test_exploit_order_override_is_unbiased_under_that_order():
    # A learner that breaks score ties at random passes the order it would show;
    # conditional on that order the estimator must be unbiased.
    sur = RankSVMHinge()
    s = np.array([1.0, 1.0, 0.0, 1.0, -0.5])
    r = np.array([0.0, 3.0, 2.0, 4.0, 1.0])
    own = (3, 1, 0, 2, 4)  # a tie-broken order other than the default (0, 1, 3, 2, 4)

    def est(s_, orders, observed, g):
        return sur.estimate_grad(s_, orders, observed, g, exploit_order=own)

    for gamma in GAMMAS:
        mean, _ = moments(est, s, r, gamma, 2, own=own)
        assert_close(mean, sur.grad(s, r))


def test_own_top_items_follow_the_tie_rule():
    # The estimators find the learner's own top items without a full sort; they must
    # be those of order_from_scores: descending score, ties by lower index.
    from oltr.surrogates._validation import _top_of_scores

    rng = np.random.default_rng(8)
    s = rng.integers(0, 3, size=(50, 7)).astype(float)
    for ell in range(1, 8):
        want = np.array([own_order(row)[:ell] for row in s])
        np.testing.assert_array_equal(_top_of_scores(s, ell), want)


def test_full_feedback_gives_the_exact_gradient():
    rng = np.random.default_rng(11)
    s, r = random_case(rng, 5)
    order = rng.permutation(5)
    for sur in SURROGATE_CASES.values():
        np.testing.assert_array_equal(sur.estimate_grad(s, order, r[order], 0.3), sur.grad(s, r))


def test_paper_closed_forms_on_hand_computed_cases():
    # m = 3, s = (0.2, 0.9, 0.5): own order (1, 2, 0); γ = 0.3.
    s = np.array([0.2, 0.9, 0.5])
    gamma = 0.3
    own_p, other_p = 1 - gamma + gamma / 3, gamma / 3
    # squared, own top item 1 with R = 2: 2(s − 2 e_1 / 0.8)
    np.testing.assert_allclose(
        SquaredLoss().estimate_grad(s, [1, 0, 2], [2], gamma),
        2 * (s - np.array([0, 2 / own_p, 0])),
    )
    # squared, explored top item 0 with R = 3: 2(s − 3 e_0 / 0.1)
    np.testing.assert_allclose(
        SquaredLoss().estimate_grad(s, [0, 1, 2], [3], gamma),
        2 * (s - np.array([3 / other_p, 0, 0])),
    )
    # KL, explored top item 2 with R = 1: (e^0.5 − e) e_2 / 0.1
    np.testing.assert_allclose(
        KLListNet().estimate_grad(s, [2, 0, 1], [1], gamma),
        [0, 0, (np.exp(0.5) - np.e) / other_p],
    )
    # RankSVM, own pair {1, 2} shown as (2, 1), R_2 = 3 > R_1 = 0 and 1 + s_1 > s_2:
    # h_{2,1} = e_1 − e_2, divided by 1 − γ + γ/3.
    np.testing.assert_allclose(
        RankSVMHinge().estimate_grad(s, [2, 1, 0], [3, 0], gamma),
        np.array([0, 1, -1]) / (1 - gamma + gamma / 3),
    )
    # RankSVM, explored pair (0, 2), R_0 = 1 > R_2 = 0, 1 + s_2 > s_0: (e_2 − e_0) / (γ/3)
    np.testing.assert_allclose(
        RankSVMHinge().estimate_grad(s, [0, 2, 1], [1, 0], gamma),
        np.array([-1, 0, 1]) / (gamma / 3),
    )
    # RankSVM, tied relevances give no pair term
    np.testing.assert_array_equal(
        RankSVMHinge().estimate_grad(s, [0, 2, 1], [2, 2], gamma), np.zeros(3)
    )
    # SmoothDCG with ε = 1, own top item 1 with R = 2: G = 3, q = softmax(s)
    q = np.exp(s) / np.exp(s).sum()
    np.testing.assert_allclose(
        SmoothDCG(eps=1.0).estimate_grad(s, [1, 2, 0], [2], gamma),
        3 / own_p * q[1] * (np.eye(3)[1] - q),
    )


# --------------------------------------------------------------------------- batching


@pytest.mark.parametrize("case", list(SURROGATE_CASES))
def test_batched_estimate_equals_rows(case):
    sur = SURROGATE_CASES[case]
    rng = np.random.default_rng(3)
    b, m = 7, 5
    s = rng.normal(size=(b, m))
    r = rng.integers(0, 5, size=(b, m)).astype(float)
    orders = np.stack([rng.permutation(m) for _ in range(b)])
    gamma = rng.uniform(0.05, 1.0, size=b)
    k = sur.required_k(m)
    observed = np.take_along_axis(r, orders[:, :k], axis=1)
    batched = sur.estimate_grad(s, orders, observed, gamma)
    rows = np.stack([sur.estimate_grad(s[i], orders[i], observed[i], gamma[i]) for i in range(b)])
    np.testing.assert_array_equal(batched, rows)
    np.testing.assert_array_equal(
        sur.estimate_descent_grad(s, orders, observed, gamma), sur.sign * batched
    )


# --------------------------------------------------------------------------- errors


def test_insufficient_feedback_says_why():
    s, order = np.zeros(5), np.arange(5)
    with pytest.raises(ValueError, match=r"top-2 feedback, got top-1.*Lemma 2"):
        RankSVMHinge().estimate_grad(s, order, [3.0], 0.3)
    with pytest.raises(ValueError, match=r"full relevance vector.*top-2 of 5.*Lemma 3.*'kl'"):
        ListNet().estimate_grad(s, order, [3.0, 1.0], 0.3)
    with pytest.raises(ValueError, match="full relevance vector"):
        ListNet().check_k(1)
    ListNet().check_k(None)
    ListNet().check_k(5, n_items=5)
    RankSVMHinge().check_k(1, n_items=1)  # a one-item list is fully observed by top-1
    with pytest.raises(ValueError, match="exceeds"):
        SquaredLoss().check_k(6, n_items=5)
    assert make_surrogate("listnet").required_k(7) == 7
    assert make_surrogate("ranksvm").required_k(7) == 2


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(scores=[0.0, np.nan, 1.0]), ValueError, r"scores must be finite.*\(1,\)"),
        (dict(scores=[0.0, np.inf, 1.0]), ValueError, "scores must be finite"),
        (dict(scores=["a", "b", "c"]), TypeError, "scores must hold real numbers"),
        (dict(scores=1.0), ValueError, "at least one axis"),
        (dict(order=[0, 1, 1]), ValueError, "not a permutation"),
        (dict(order=[-1, 0, 1]), ValueError, "not a permutation"),
        (dict(order=[0, 1, 3]), ValueError, "not a permutation"),
        (dict(order=[[0, 1, 2], [2, 2, 0]]), ValueError, r"row \(1,\) is not a permutation"),
        (dict(order=[0, 1]), ValueError, r"shape \(\.\.\., 3\)"),
        (dict(order=[0.0, 1.0, 2.0]), TypeError, "integer"),
        (dict(observed=[np.nan, 1.0]), ValueError, "observed must be finite"),
        (dict(observed=[-1.0, 1.0]), ValueError, "observed must be >= 0"),
        (dict(observed=[1.0, 1.0, 1.0, 1.0]), ValueError, "k <= n_items"),
        (dict(gamma=0.0), ValueError, r"gamma must lie in \(0, 1\].*Lemma 1"),
        (dict(gamma=1.5), ValueError, "gamma"),
        (dict(gamma=np.nan), ValueError, "gamma"),
        (dict(exploit_order=[2, 2, 0]), ValueError, "exploit_order"),
        (
            dict(scores=np.zeros((2, 3)), order=np.zeros((3, 3), int) + [0, 1, 2]),
            ValueError,
            "do not broadcast",
        ),
    ],
)
def test_bad_estimator_inputs(kwargs, error, match):
    call = dict(scores=[0.0, 1.0, 2.0], order=[2, 1, 0], observed=[1.0, 0.0], gamma=0.3)
    call.update(kwargs)
    with pytest.raises(error, match=match):
        RankSVMHinge().estimate_grad(
            call["scores"],
            call["order"],
            call["observed"],
            call["gamma"],
            exploit_order=call.get("exploit_order"),
        )
