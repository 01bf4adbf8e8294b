"""SmoothDCG's default ε follows each list's score scale (``eps="auto"``).

ε_t = 10 U σ_X with σ_X = √(mean_j Var_i X_ij): checked by hand, through a step
computed from the surrogate at that ε, and through its defining property: scaling
the features by c changes ε by c and the scores by c, so a whole run is the same
whatever the units. With c a power of two every operation scales exactly (no
rounding changes), so the invariance is bit for bit; at the paper's fixed
ε = 0.01 the same run changes (the softmax sharpens by c).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from oltr.feedback import TopKFeedback, TopKFeedbackModel
from oltr.learners.rtopk import RTopKF
from oltr.surrogates import SCORE_SCALE_EPS, SmoothDCG, score_scale_eps
from oltr.types import Context, RunGenerators


def test_score_scale_eps_by_hand() -> None:
    # Columns (0, 2) and (1, 1): variances 1 and 0, σ_X = √(1/2); ε = 10 · U · σ_X.
    x = np.array([[0.0, 1.0], [2.0, 1.0]])
    assert SCORE_SCALE_EPS == 10.0
    assert score_scale_eps(x, 1.0) == pytest.approx(10.0 * math.sqrt(0.5), rel=1e-15)
    assert score_scale_eps(x, 3.0) == pytest.approx(30.0 * math.sqrt(0.5), rel=1e-15)
    assert score_scale_eps(x, math.inf) == score_scale_eps(x, 1.0)  # no ball: U taken as 1


def test_identical_items_take_unit_spread() -> None:
    # Every ε gives such a list the same zero step, so any positive value will do.
    assert score_scale_eps(np.ones((4, 3)), 1.0) == SCORE_SCALE_EPS
    assert score_scale_eps(np.ones((1, 3)), 2.0) == 2.0 * SCORE_SCALE_EPS


@pytest.mark.parametrize(
    ("features", "match"),
    [
        (np.ones(3), r"shape \(m, d\)"),
        (np.ones((0, 3)), "m >= 1"),
        (np.array([[0.0, np.nan], [1.0, 2.0]]), "finite"),
    ],
)
def test_score_scale_eps_refuses_bad_features(features: np.ndarray, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        score_scale_eps(features, 1.0)


def test_bad_eps_names_the_choices() -> None:
    with pytest.raises(ValueError, match="eps must be one of 'auto'"):
        RTopKF(surrogate="smoothdcg", eps="paper")


def test_the_step_uses_this_lists_eps() -> None:
    # From w = 0 (s = 0, q uniform), no exploration: top item 0 with grade 2 (G = 3),
    # p = 1 − γ + γ/m; the gain ascends: w = η G q_0 (e_0 − q)ᵀ X / (ε p).
    x = np.array([[1.0, 2.0], [0.5, -1.0], [3.0, 0.0]])
    gamma, eta = 1e-12, 0.5
    lrn = RTopKF(surrogate="smoothdcg", eta=eta, gamma=gamma, radius=math.inf, rng=0)
    ctx = Context(t=1, n_items=3, features=x)
    orders = lrn.rank(ctx)
    assert orders[0].tolist() == [0, 1, 2]
    lrn.update(ctx, orders, TopKFeedback(orders, np.array([[2.0]])))
    eps = 10.0 * np.sqrt(x.var(axis=0).mean())
    p = 1.0 - gamma + gamma / 3.0
    q = np.full(3, 1.0 / 3.0)
    want = eta * 3.0 * q[0] * ((np.array([1.0, 0.0, 0.0]) - q) @ x) / (eps * p)
    np.testing.assert_allclose(lrn.weights_[0], want, rtol=1e-12)
    # and that is the surrogate the learner names for this round
    assert lrn.round_surrogate(ctx) == SmoothDCG(eps=score_scale_eps(x, math.inf))


def _run(scale: float, eps: float | str, rounds: int = 60) -> tuple[list[list[int]], np.ndarray]:
    """A SmoothDCG run on features × scale: every shown order and the final weights."""
    rng = np.random.default_rng(7)
    lists = [(rng.random((12, 5)), rng.integers(0, 5, 12)) for _ in range(8)]
    lrn = RTopKF(surrogate="smoothdcg", eps=eps, gamma=0.2, n_runs=3, rng=1)
    model, rngs = TopKFeedbackModel(k=1), RunGenerators.from_rng(2, 3)
    shown = []
    for t in range(1, rounds + 1):
        x, grades = lists[t % len(lists)]
        ctx = Context(t=t, n_items=12, features=x * scale)
        orders = lrn.rank(ctx)
        lrn.update(ctx, orders, model.observe(orders, grades, rngs=rngs))
        shown.append(orders.tolist())
    return shown, np.array(lrn.weights_)


def test_auto_eps_makes_a_run_independent_of_the_feature_units() -> None:
    shown, weights = _run(1.0, "auto")
    for scale in (2.0**-20, 2.0**10, 2.0**30):
        other_shown, other_weights = _run(scale, "auto")
        assert other_shown == shown
        assert np.array_equal(other_weights, weights)  # bit for bit
    # the paper's fixed ε does depend on the units: the softmax sharpens by the scale
    fixed, _ = _run(1.0, 0.01)
    fixed_scaled, _ = _run(2.0**10, 0.01)
    assert fixed_scaled != fixed
