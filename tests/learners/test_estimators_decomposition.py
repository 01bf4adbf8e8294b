"""Lemma 1 of Chaudhuri & Tewari 2016: decomposed gradients, their estimators, and min_k.

Expectations are exact: every order enumerated (``estimator_reference.py``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from estimator_reference import (
    GAMMAS,
    MAX_GRADE,
    SURROGATE_CASES,
    assert_close,
    exploration,
    own_order,
    random_case,
)

from oltr.surrogates import (
    DecomposedGradient,
    ListNet,
    RankSVMHinge,
)

# --------------------------------------------------------------------------- reference


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
