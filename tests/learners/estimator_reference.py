"""Reference computations shared by the top-k estimator tests (``test_estimators_*.py``).

Expectations are computed EXACTLY: every one of the m! orders is enumerated with
its probability under RTop-kF's exploration distribution, written here from the
definition P(σ) = (1 − γ)·1(σ = σ_s) + γ/m! (Algorithm 1 step 6) and independent
of the closed-form marginals in ``oltr.surrogates.exploration``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from oltr.surrogates import KLListNet, ListNet, RankSVMHinge, SmoothDCG, SquaredLoss

GAMMAS = (0.05, 0.3, 1.0)
MAX_GRADE = 4

SURROGATE_CASES = {
    "squared": SquaredLoss(),
    "ranksvm": RankSVMHinge(),
    "kl": KLListNet(),
    "smoothdcg-0.01": SmoothDCG(eps=0.01),
    "smoothdcg-0.5": SmoothDCG(eps=0.5),
    "listnet": ListNet(),
}


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
    """Equal up to float64 rounding of sums over at most 720 orders (tol 1e-10)."""
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)
