"""RTop-kF's exploration: closed-form probabilities, the sampler, Lemma 5's second moments.

Expectations are exact: every order enumerated (``estimator_reference.py``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from estimator_reference import (
    GAMMAS,
    MAX_GRADE,
    SURROGATE_CASES,
    exploration,
    moments,
    own_order,
)
from scipy import stats

from oltr.surrogates import (
    KLListNet,
    RankSVMHinge,
    SmoothDCG,
    SquaredLoss,
    position_probability,
    prefix_probability,
    sample_exploration_order,
    top_set_probability,
)

#: Error rate of the one statistical test in this file (sampler goodness of fit).
ALPHA = 1e-3


# --------------------------------------------------------------------------- reference


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
