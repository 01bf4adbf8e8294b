"""Unbiased top-k gradient estimators (Chaudhuri & Tewari 2016 §4, Lemmas 1–5).

Expectations are computed EXACTLY: every one of the m! orders is enumerated with
its probability under RTop-kF's exploration distribution, written here from the
definition P(σ) = (1 − γ)·1(σ = σ_s) + γ/m! (Algorithm 1 step 6) and independent
of the closed-form marginals in ``oltr.surrogates.exploration``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from oltr.surrogates import (
    DecomposedGradient,
    KLListNet,
    ListNet,
    RankSVMHinge,
    SmoothDCG,
    SquaredLoss,
    Surrogate,
    make_surrogate,
    position_probability,
    prefix_probability,
    sample_exploration_order,
    top_set_probability,
)

GAMMAS = (0.05, 0.3, 1.0)
SIZES = (2, 3, 5, 6)
MAX_GRADE = 4
#: Error rate of the one statistical test in this file (sampler goodness of fit).
ALPHA = 1e-3

SURROGATE_CASES = {
    "squared": SquaredLoss(),
    "ranksvm": RankSVMHinge(),
    "kl": KLListNet(),
    "smoothdcg-0.01": SmoothDCG(eps=0.01),
    "smoothdcg-0.5": SmoothDCG(eps=0.5),
    "listnet": ListNet(),
}


# --------------------------------------------------------------------------- reference


def own_order(s: np.ndarray) -> tuple[int, ...]:
    """Descending score, ties by lower index (written independently of oltr.permutations)."""
    return tuple(sorted(range(len(s)), key=lambda i: (-s[i], i)))


def exploration(own: tuple[int, ...], gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """All m! orders and their probabilities (1 − γ)·1(σ = own) + γ/m!."""
    orders = np.array(list(itertools.permutations(range(len(own)))))
    probs = np.full(len(orders), gamma / len(orders))
    probs[(orders == np.array(own)).all(axis=1)] += 1.0 - gamma
    assert math.isclose(probs.sum(), 1.0)
    return orders, probs


def moments(estimate, s, r, gamma, k, own=None, transform=None):
    """Exact E[estimate] and E‖transform(estimate)‖² over the exploration distribution."""
    orders, probs = exploration(own_order(s) if own is None else own, gamma)
    est = estimate(s, orders, r[orders[:, :k]], gamma)
    assert est.shape == (len(orders), len(s))
    z = est if transform is None else transform(est)
    return probs @ est, probs @ (z**2).sum(axis=-1)


def random_case(rng: np.random.Generator, m: int, *, ties: bool = False, scale: float = 1.0):
    """Random scores (optionally with ties) and graded relevance 0..4."""
    if ties:
        s = rng.integers(-1, 2, size=m).astype(float) * scale
    else:
        s = rng.normal(scale=scale, size=m)
    return s, rng.integers(0, MAX_GRADE + 1, size=m).astype(float)


def assert_close(actual, expected, tol=1e-10):
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


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


# --------------------------------------------------------------------------- Lemma 1


def table_components(table: np.ndarray, ell: int):
    """An arbitrary ℓ-ary component: h_{i..}(v..) = s_{i_1} · table[i_1..i_ℓ, v_1..v_ℓ]."""

    def h(s, items, values):
        idx = tuple(items[..., j] for j in range(ell)) + tuple(
            values[..., j].astype(int) for j in range(ell)
        )
        s_first = np.take_along_axis(
            np.broadcast_to(s, items.shape[:-1] + s.shape[-1:]), items[..., :1], axis=-1
        )
        return s_first * table[idx]

    return h


@pytest.mark.parametrize(("m", "ell"), [(3, 1), (4, 2), (5, 2), (4, 3), (5, 3), (4, 4)])
def test_lemma1_construction_is_unbiased_for_any_decomposable_function(m, ell):
    rng = np.random.default_rng([m, ell])
    a = 3  # output dimension, unrelated to m
    table = rng.normal(size=(m,) * ell + (MAX_GRADE + 1,) * ell + (a,))
    h = table_components(table, ell)
    with_known = DecomposedGradient(h, arity=ell, known=lambda s: np.stack([s.sum(-1)] * a, -1))
    without = DecomposedGradient(h, arity=ell)
    for gamma in GAMMAS:
        s, r = random_case(rng, m, ties=gamma == 0.3)
        ri = r.astype(int)
        # F(R) = Σ over ordered ℓ-tuples of distinct items (Eq. 2), summed by hand
        f = sum(
            s[t[0]] * table[t + tuple(ri[list(t)])] for t in itertools.permutations(range(m), ell)
        )
        np.testing.assert_allclose(without.exact(s, r), f, rtol=1e-12)
        for F, truth in ((without, f), (with_known, f + s.sum())):
            for k in range(ell, m + 1):
                orders, probs = exploration(own_order(s), gamma)
                est = F.estimate(s, orders, r[orders[:, :k]], gamma)
                assert est.shape == (len(orders), a)
                assert_close(probs @ est, truth)


def test_lemma1_needs_arity_observations():
    F = DecomposedGradient(lambda s, i, v: v, arity=2)
    with pytest.raises(ValueError, match=r"top-2 feedback.*Lemma 1.*top 1 of 4"):
        F.estimate(np.zeros(4), np.arange(4), [1.0], 0.5)


@pytest.mark.parametrize("case", [c for c in SURROGATE_CASES if c != "listnet"])
def test_decomposition_matches_gradient_and_specific_estimator(case):
    # Eq. 2 summed over all tuples is the gradient, and Lemma 1's generic estimator
    # built from the components is the paper's closed-form estimator, order by order.
    sur = SURROGATE_CASES[case]
    dec = sur.decomposition
    assert dec.arity == sur.min_k
    rng = np.random.default_rng(len(case))
    m = 5
    s, r = random_case(rng, m, scale=0.02 if case == "smoothdcg-0.01" else 1.0)
    np.testing.assert_allclose(dec.exact(s, r), sur.grad(s, r), rtol=1e-12, atol=1e-12)
    orders, _ = exploration(own_order(s), 0.3)
    for k in range(sur.min_k, m + 1):
        observed = r[orders[:, :k]]
        np.testing.assert_allclose(
            dec.estimate(s, orders, observed, 0.3),
            sur.estimate_grad(s, orders, observed, 0.3),
            rtol=1e-12,
            atol=1e-12,
        )
    assert ListNet().decomposition is None


def mixed_difference(f, base: np.ndarray, coords: tuple[int, ...], alt: np.ndarray) -> np.ndarray:
    """Σ_{S ⊆ coords} (−1)^{|coords|−|S|} f(base with coords in S set to alt): zero for every
    choice iff f decomposes over fewer than len(coords) coordinates at a time."""
    total = 0.0
    for size in range(len(coords) + 1):
        for subset in itertools.combinations(coords, size):
            x = base.copy()
            x[list(subset)] = alt[list(subset)]
            total = total + (-1) ** (len(coords) - size) * f(x)
    return total


@pytest.mark.parametrize("case", [c for c in SURROGATE_CASES])
def test_min_k_is_the_decomposition_order(case):
    # Lemma 1 (necessity) with Lemmas 2, 3: the gradient decomposes over min_k relevance
    # coordinates ((min_k + 1)-th mixed differences vanish) and not over fewer
    # (some min_k-th mixed difference does not).
    sur = SURROGATE_CASES[case]
    m = 4
    ell = sur.required_k(m)
    rng = np.random.default_rng(17)
    s = rng.normal(scale=0.02 if case == "smoothdcg-0.01" else 0.5, size=m)

    def grad(r):
        return sur.grad(s, r)

    def max_mixed(order):
        worst = 0.0
        for _ in range(20):
            base = rng.integers(0, 5, size=m).astype(float)
            alt = rng.integers(0, 5, size=m).astype(float)
            for coords in itertools.combinations(range(m), order):
                worst = max(worst, np.abs(mixed_difference(grad, base, coords, alt)).max())
        return worst

    if ell < m:
        assert max_mixed(ell + 1) < 1e-9
    assert max_mixed(ell) > 1e-3


def test_lemma2_counterexample():
    # The supplement's proof of Lemma 2: m = 3, s = (1, 0, 0); the e_1 coefficient of the
    # R_1 term changes by 0 between R = 000 and 100 but by 2 between 011 and 111.
    s = np.array([1.0, 0.0, 0.0])
    g = RankSVMHinge().grad
    d_low = g(s, [1, 0, 0]) - g(s, [0, 0, 0])
    d_high = g(s, [1, 1, 1]) - g(s, [0, 1, 1])
    assert d_low[0] == 0.0 and d_high[0] == -2.0


# --------------------------------------------------------------------------- probabilities


@pytest.mark.parametrize("gamma", GAMMAS)
def test_closed_form_probabilities_match_enumeration(gamma):
    m = 4
    s = np.array([0.5, 2.0, 0.5, -1.0])  # tie between items 0 and 2
    own = own_order(s)
    orders, probs = exploration(own, gamma)
    e = np.array(own)
    for pos in range(m):
        for item in range(m):
            want = probs[orders[:, pos] == item].sum()
            assert math.isclose(position_probability(e, item, pos, gamma), want, rel_tol=1e-12)
    for ell in range(1, m + 1):
        for prefix in itertools.permutations(range(m), ell):
            hit = (orders[:, :ell] == prefix).all(axis=1)
            assert math.isclose(
                prefix_probability(e, prefix, gamma), probs[hit].sum(), rel_tol=1e-12
            )
            as_set = np.sort(orders[:, :ell], axis=1) == np.sort(prefix)
            assert math.isclose(
                top_set_probability(e, prefix, gamma),
                probs[as_set.all(axis=1)].sum(),
                rel_tol=1e-12,
            )


def test_section_4_2_values():
    m, gamma = 6, 0.2
    e = np.array([3, 1, 4, 0, 5, 2])
    assert math.isclose(position_probability(e, 3, 0, gamma), 1 - gamma + gamma / m)
    assert math.isclose(position_probability(e, 1, 0, gamma), gamma / m)
    assert math.isclose(
        top_set_probability(e, [1, 3], gamma), 1 - gamma + 2 * gamma / (m * (m - 1))
    )
    assert math.isclose(top_set_probability(e, [1, 4], gamma), 2 * gamma / (m * (m - 1)))
    # batched: one exploit order, several prefixes
    np.testing.assert_allclose(
        prefix_probability(e, [[3, 1], [1, 3]], gamma),
        [1 - gamma + gamma / 30, gamma / 30],
    )


def test_probability_inputs_are_checked():
    e = np.arange(4)
    with pytest.raises(ValueError, match="position"):
        position_probability(e, 0, 4, 0.5)
    with pytest.raises(ValueError, match="distinct"):
        top_set_probability(e, [1, 1], 0.5)
    with pytest.raises(ValueError, match="item"):
        position_probability(e, 7, 0, 0.5)
    with pytest.raises(ValueError, match="not a permutation"):
        prefix_probability([0, 0, 1, 2], [0], 0.5)
    with pytest.raises(ValueError, match="gamma"):
        prefix_probability(e, [0], 0.0)


# --------------------------------------------------------------------------- sampler


def test_sampler_matches_the_exploration_distribution():
    m, gamma, n = 3, 0.3, 30_000
    s = np.array([0.1, 0.7, 0.7])  # own order (1, 2, 0)
    orders = sample_exploration_order(np.broadcast_to(s, (n, m)), gamma, rng=2024)
    ref_orders, probs = exploration(own_order(s), gamma)
    codes = (orders[:, None, :] == ref_orders[None]).all(axis=-1).argmax(axis=1)
    counts = np.bincount(codes, minlength=len(ref_orders))
    assert stats.chisquare(counts, probs * n).pvalue > ALPHA


def test_sampler_is_reproducible_and_pure_exploitation_at_gamma_zero():
    s = np.random.default_rng(0).normal(size=(10, 6))
    a = sample_exploration_order(s, 0.5, rng=7)
    np.testing.assert_array_equal(a, sample_exploration_order(s, 0.5, rng=7))
    own = np.array([own_order(row) for row in s])
    np.testing.assert_array_equal(sample_exploration_order(s, 0.0, rng=7), own)
    assert (np.sort(a, axis=1) == np.arange(6)).all()


# --------------------------------------------------------------------------- Lemma 5


def lemma5_instance(rng, m, d, feature_norm, radius):
    x = rng.normal(size=(m, d))
    x *= (
        feature_norm * rng.uniform(0.5, 1.0, size=(m, 1)) / np.linalg.norm(x, axis=1, keepdims=True)
    )
    w = rng.normal(size=d)
    w *= radius / np.linalg.norm(w)
    return x, x @ w


BOUND_CASES = [
    # (surrogate, feature_norm R_D, radius U, gammas); R_max = 4 throughout
    ("squared", 1.0, 2.0),  # (m R_D U - 2)(R_max - 2) >= 4: the paper's regime
    ("ranksvm", 1.0, 2.0),
    ("kl", 1.0, 5.0),  # R_max <= R_D U: the paper's regime
]


@pytest.mark.parametrize(("case", "rd", "u"), BOUND_CASES)
@pytest.mark.parametrize("m", [3, 5])
def test_lemma5_bound_as_stated_holds_in_its_regime(case, rd, u, m):
    sur = SURROGATE_CASES[case]
    rng = np.random.default_rng([m, len(case)])
    for gamma in GAMMAS:
        for _ in range(3):
            x, s = lemma5_instance(rng, m, 4, rd, u)
            r = rng.integers(0, MAX_GRADE + 1, size=m).astype(float)
            _, second = moments(
                sur.estimate_grad, s, r, gamma, sur.min_k, transform=lambda z, x=x: z @ x
            )
            bound = sur.second_moment_bound(
                m, gamma, feature_norm=rd, radius=u, max_grade=MAX_GRADE, form="paper"
            )
            assert second <= bound
            assert second <= sur.second_moment_bound(
                m, gamma, feature_norm=rd, radius=u, max_grade=MAX_GRADE, form="general"
            )


@pytest.mark.parametrize("case", ["squared", "ranksvm", "kl", "smoothdcg-0.5", "listnet"])
@pytest.mark.parametrize(("rd", "u"), [(1.0, 0.05), (0.3, 1.0), (2.0, 1.5)])
def test_lemma5_general_bound_holds_everywhere(case, rd, u):
    sur = SURROGATE_CASES[case]
    m = 4
    rng = np.random.default_rng([int(rd * 10), int(u * 100), len(case)])
    for gamma in GAMMAS:
        for max_grade in (1, MAX_GRADE):
            x, s = lemma5_instance(rng, m, 3, rd, u)
            r = rng.integers(0, max_grade + 1, size=m).astype(float)
            k = sur.required_k(m)
            _, second = moments(sur.estimate_grad, s, r, gamma, k, transform=lambda z, x=x: z @ x)
            assert second <= sur.second_moment_bound(
                m, gamma, feature_norm=rd, radius=u, max_grade=max_grade, form="general"
            )


def test_lemma5_bound_as_stated_fails_outside_its_regime():
    # X = I (R_D = 1), w = s = (0.1, 0), U = 0.1, R = (1, 1), R_max = 1, γ = 1: the
    # squared-loss estimate is 2(s − 2 e_i) for i = σ(1), so E‖z‖² = (3.8² + 0.2² + 4²)/2 =
    # 15.24 while C^sq/γ = m⁴ R_D⁴ U² R_max² = 0.16 (the proof drops the 2 and assumes
    # m R_D U + R_max/p <= m R_D U R_max/p).
    sq = SquaredLoss()
    s, r = np.array([0.1, 0.0]), np.array([1.0, 1.0])
    _, second = moments(sq.estimate_grad, s, r, 1.0, 1)
    assert math.isclose(second, 15.24, rel_tol=1e-12)
    kw = dict(feature_norm=1.0, radius=0.1, max_grade=1.0)
    assert math.isclose(sq.second_moment_bound(2, 1.0, **kw, form="paper"), 0.16)
    assert second > sq.second_moment_bound(2, 1.0, **kw, form="paper")
    assert second <= sq.second_moment_bound(2, 1.0, **kw, form="general")
    # KL: s ≈ 0 but R = 4 makes |e^s − e^R| ≈ e^4 > exp(R_D U).
    kl = KLListNet()
    s, r = np.array([0.05, 0.0]), np.array([4.0, 4.0])
    _, second = moments(kl.estimate_grad, s, r, 1.0, 1)
    kw = dict(feature_norm=1.0, radius=0.05, max_grade=4.0)
    assert second > kl.second_moment_bound(2, 1.0, **kw, form="paper")
    assert second <= kl.second_moment_bound(2, 1.0, **kw, form="general")


def test_lemma5_paper_constants():
    kw = dict(feature_norm=2.0, radius=3.0, max_grade=4.0)
    assert math.isclose(
        SquaredLoss().second_moment_bound(5, 0.1, **kw), 5**4 * 2**4 * 3**2 * 4**2 / 0.1
    )
    assert math.isclose(
        RankSVMHinge().second_moment_bound(5, 0.1, **kw),
        4 * 2**2 * math.comb(5, 2) * 5**2 / (2 * 0.1),
    )
    assert math.isclose(
        KLListNet().second_moment_bound(5, 0.1, **kw), 5**2 * 2**2 * math.exp(2 * 2 * 3) / 0.1
    )
    with pytest.raises(ValueError, match="Lemma 5 states no bound"):
        SmoothDCG().second_moment_bound(5, 0.1, **kw)
    with pytest.raises(ValueError, match="form"):
        SquaredLoss().second_moment_bound(5, 0.1, **kw, form="loose")
    with pytest.raises(ValueError, match="radius"):
        SquaredLoss().second_moment_bound(5, 0.1, feature_norm=1.0, radius=0.0, max_grade=4)


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
