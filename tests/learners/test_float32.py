"""``dtype="float32"`` linear learners: the scores' error bound and bad input.

That float32 learners learn as float64 ones do is tested in ``tests/learners/test_rtopk.py``.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from oltr.errors import InputError
from oltr.learners.linear import RUNS_MINOR_FROM
from oltr.learners.rtopk import RTopKF
from oltr.types import Context

U32 = 2.0**-24  # unit roundoff of float32


def exact_scores(weights: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ_j w_j x_j and Σ_j |w_j x_j| in exact rational arithmetic, rounded once to float64."""
    n_runs, m = weights.shape[0], x.shape[0]
    exact, size = np.empty((n_runs, m)), np.empty((n_runs, m))
    for b in range(n_runs):
        w = [Fraction(float(v)) for v in weights[b]]
        for i in range(m):
            terms = [wj * Fraction(float(xj)) for wj, xj in zip(w, x[i], strict=True)]
            exact[b, i] = float(sum(terms, Fraction(0)))
            size[b, i] = float(sum((abs(t) for t in terms), Fraction(0)))
    return exact, size


@pytest.mark.parametrize("n_runs", [1, 5, RUNS_MINOR_FROM + 1])
@pytest.mark.parametrize("m", [7, 70])
def test_float32_scores_are_within_the_derived_bound(n_runs: int, m: int):
    # The learner rounds each float64 feature to float32 (x̂ = x(1+δ), |δ| ≤ u) and sums
    # the d float32 products in index order (recursive summation: |ŝ − Σ w x̂| ≤ γ_d Σ|w x̂|,
    # γ_d = du/(1 − du), Higham 2002 §3.1). With Σ|w x̂| ≤ (1+u) Σ|w x|:
    #     |ŝ − Σ w x| ≤ (γ_d (1 + u) + u) Σ|w x|,   u = 2^−24.
    # Adding 5% to the bound covers rounding the exact values to float64 (2^−53 relative).
    gen = np.random.default_rng(m + n_runs)
    d = 200
    lrn = RTopKF(dtype="float32", n_runs=n_runs, rng=0)
    x = gen.normal(size=(m, d)) * np.exp(gen.normal(size=d))  # features of mixed scales
    lrn.rank(Context(t=1, n_items=m, features=x))  # sizes the weights
    assert lrn._weights is not None
    lrn._weights[:] = gen.normal(size=(n_runs, d)).astype(np.float32)
    scores, _ = lrn._scores(Context(t=2, n_items=m, features=x))
    exact, size = exact_scores(np.asarray(lrn.weights_, dtype=np.float64), x)
    gamma = d * U32 / (1 - d * U32)
    bound = (gamma * (1 + U32) + U32) * size * 1.05
    assert np.all(np.abs(scores - exact) <= bound)


def test_a_feature_beyond_float32_is_named():
    lrn = RTopKF(dtype="float32")
    x = np.ones((3, 2))
    x[1, 0] = 1e39
    with pytest.raises(InputError, match=r"document 1, feature 0 is 1e\+39 \(beyond float32\)"):
        lrn.rank(Context(t=1, n_items=3, features=x))


def test_unknown_dtype_is_refused():
    with pytest.raises(ValueError, match="dtype"):
        RTopKF(dtype="float16")
