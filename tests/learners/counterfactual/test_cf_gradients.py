"""Gradients of the counterfactual objectives against finite differences and exact expectations."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import check_grad, minimize
from scipy.special import logsumexp

from oltr.data.dataset import LetorDataset
from oltr.errors import InputError
from oltr.learners.counterfactual import make_scorer
from oltr.learners.counterfactual.dla import dla_propensity_step, fit_dla
from oltr.learners.counterfactual.fit import training_objective
from oltr.learners.counterfactual.objectives import (
    Blocks,
    plackett_luce_gradient,
    smooth_hinge,
    weighted_logistic,
)
from oltr.learners.counterfactual.training import ClickTable, click_table, regularised
from oltr.logs import PositionCounts


def _problem(seed: int) -> tuple[LetorDataset, PositionCounts]:
    """Three queries of 3–5 documents, 4 features, random clicks on 3 positions."""
    rng = np.random.default_rng(seed)
    lengths = np.array([3, 5, 4])
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = int(offsets[-1])
    ds = LetorDataset(
        features=rng.uniform(size=(n, 4)), relevance=rng.integers(0, 3, size=n),
        qids=np.array([1, 2, 3]), offsets=offsets,
    )  # fmt: skip
    shown = np.zeros((n, 3))
    for q in range(3):
        for _ in range(5):
            docs = rng.permutation(lengths[q])[:3] + offsets[q]
            shown[docs, np.arange(3)] += 1
    clicks = rng.binomial(shown.astype(np.int64), 0.4).astype(np.float64)
    return ds, PositionCounts(clicks, shown)


# check_grad's forward differences (step 1.5e-8) carry an error of about
# sqrt(machine eps) × |curvature| ≈ 1e-7 on these O(1) objectives; 1e-5 leaves margin
# while a wrong term in a gradient (an O(0.1) change) cannot pass.
TOL = 1e-5


@pytest.mark.parametrize("learner", ["naive", "ips", "naive-pairwise", "ips-pairwise"])
@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_objective_gradients(learner: str, kind: str) -> None:
    ds, counts = _problem(0)
    scorer = make_scorer(kind, 4, hidden=5)
    theta = np.array([1.0, 0.4, 0.2])
    fun, _ = training_objective(
        counts, ds, learner=learner, scorer=scorer, propensities=theta, clip=0.0, l2=0.01
    )
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.normal(size=scorer.n_params)
        err = check_grad(lambda p: fun(p)[0], lambda p: fun(p)[1], x)
        assert err < TOL * max(1.0, float(np.linalg.norm(fun(x)[1])))


@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_regression_loss_gradient(kind: str) -> None:
    rng = np.random.default_rng(2)
    x_all = rng.uniform(size=(12, 4))
    pos, neg = rng.uniform(0, 2, 12), rng.uniform(-0.2, 1, 12)  # b < 0 occurs (noisy ctr > ρ)
    scorer = make_scorer(kind, 4, hidden=3)
    fun = regularised(lambda s: weighted_logistic(s, pos, neg), scorer, x_all, 0.0)
    for _ in range(3):
        x = rng.normal(size=scorer.n_params)
        assert check_grad(lambda p: fun(p)[0], lambda p: fun(p)[1], x) < TOL


def test_smooth_hinge_is_continuously_differentiable() -> None:
    z = np.array([-1e-9, 1e-9, 1 - 1e-9, 1 + 1e-9])
    value, slope = smooth_hinge(z)
    np.testing.assert_allclose(value, [0.5, 0.5, 0.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(slope, [-1.0, -1.0, 0.0, 0.0], atol=1e-8)


def _pl_value(scores: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> float:
    """E_{y ~ PL(s)}[Σ_k λ_k labels_{y_k}], by enumerating every top-K prefix."""
    total = 0.0
    e = np.exp(scores)
    for prefix in itertools.permutations(range(scores.size), weights.size):
        p, left = 1.0, e.sum()
        for d in prefix:
            p *= e[d] / left
            left -= e[d]
        total += p * float(weights @ labels[list(prefix)])
    return total


def test_plackett_luce_gradient_is_unbiased() -> None:
    # Exact gradient: central differences of the enumerated value (error ~1e-10).
    scores = np.array([0.4, -0.3, 1.1, 0.0, -0.8])
    labels = np.array([1.0, 0.0, 0.5, -0.2, 0.8])  # DR labels may be negative
    weights = np.array([1.0, 0.5, 0.25])
    h = 1e-5
    exact = np.array(
        [
            (
                _pl_value(scores + h * e, labels, weights)
                - _pl_value(scores - h * e, labels, weights)
            )
            / (2 * h)
            for e in np.eye(5)
        ]
    )
    # Two padded rows: the same list, and the same list with an extra padded cell.
    padded = np.array([np.append(scores, 0.0), np.append(scores, 0.0)])
    lab = np.array([np.append(labels, 0.0), np.append(labels, 0.0)])
    mask = np.ones((2, 6), dtype=bool)
    mask[:, 5] = False
    rng = np.random.default_rng(3)
    runs = np.stack(
        [plackett_luce_gradient(padded, lab, mask, weights, 200, rng)[0] for _ in range(200)]
    )  # 200 independent estimates, each the mean of 200 rankings
    assert (runs[..., 5] == 0).all()
    mean = runs.mean(axis=0)[:, :5]
    se = runs.std(axis=0, ddof=1)[:, :5] / np.sqrt(runs.shape[0])
    # z-test per coordinate at 5 standard errors: a false alarm has probability < 1e-5 in
    # all 10 coordinates together (normal approximation over 200 means), while a bias of
    # the size of a wrong term (≥ 0.02 here) is >> 5 × se (~0.003).
    assert (np.abs(mean - exact[None, :]) < 5 * se + 1e-12).all()
    assert se.max() < 0.004


def _ipm_inputs(table: ClickTable, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-list weights W[q, k] = Σ_d c[d, k] r_1/r_d and list lengths L_q, written out."""
    w = np.zeros((table.blocks.starts.size, table.n_positions))
    lengths = np.zeros(table.blocks.starts.size, dtype=np.int64)
    for q, (a, n) in enumerate(zip(table.blocks.starts, table.blocks.lengths, strict=True)):
        r = np.exp(scores[a : a + n])
        r_top = (table.shown[a : a + n, 0] @ r) / table.impressions[q]
        w[q] = (r_top / r) @ table.clicks[a : a + n]
        lengths[q] = np.flatnonzero(table.shown[a : a + n].sum(axis=0) > 0).max() + 1
    return w, lengths


def _ipm_loss(g: np.ndarray, w: np.ndarray, lengths: np.ndarray) -> float:
    """l_IPM(g) = −Σ_q Σ_{k ≤ L_q} W[q, k] log softmax(g_1..g_{L_q})_k, list by list."""
    return float(sum(-(w[q, :n] @ (g[:n] - logsumexp(g[:n]))) for q, n in enumerate(lengths)))


@pytest.mark.parametrize("short", [False, True])
def test_dla_propensity_step_minimises_the_propensity_loss(short: bool) -> None:
    # The per-list step's θ against a generic minimiser (BFGS) of l_IPM written list by
    # list, the softmax of each list over its own positions. With short=True one query's lists stop
    # at position 2 of 3, where a softmax over all K positions has another minimiser.
    ds, counts = _problem(4)
    clicks, shown = counts.clicks.copy(), counts.shown.copy()
    if short:
        clicks[:3, 2] = 0.0  # query 1 (rows 0-2) never shows a third position
        shown[:3, 2] = 0.0
    table = click_table(PositionCounts(clicks, shown), ds)
    scores = np.random.default_rng(5).normal(size=table.rows.size)
    theta = dla_propensity_step(table, scores, clip=0.0, per_list=True)
    assert theta[0] == 1.0
    w, lengths = _ipm_inputs(table, scores)
    assert (lengths == (np.array([2, 3, 3]) if short else 3)).all()
    best = minimize(_ipm_loss, np.zeros(3), args=(w, lengths), method="BFGS", tol=1e-12)
    # g is determined up to a constant: compare θ_k = exp(g_k − g_1). BFGS stops at a
    # gradient of ~1e-9 on an O(10) loss of curvature O(1): θ agrees to ~1e-7.
    np.testing.assert_allclose(theta, np.exp(best.x - best.x[0]), rtol=1e-6)
    all_k = w.sum(axis=0) / w.sum(axis=0)[0]  # the minimiser of one softmax over all K
    assert np.allclose(theta, all_k, rtol=1e-9) != short
    # The default: one softmax over all K positions (ULTRA's padded lists).
    np.testing.assert_allclose(dla_propensity_step(table, scores, clip=0.0), all_k, rtol=1e-12)


def test_blocks_padding_round_trip() -> None:
    blocks = Blocks(np.array([0, 2, 3]), np.array([2, 1, 3]))
    values = np.arange(6, dtype=np.float64)
    padded = blocks.padded(values, -1.0)
    assert padded.tolist() == [[0, 1, -1], [2, -1, -1], [3, 4, 5]]
    assert (padded[blocks.mask] == values).all()


def test_plackett_luce_gradient_stays_finite_for_far_apart_scores() -> None:
    # A gap of 1000 underflows e^s. Documented approximation: scores more than SPREAD below
    # the best are raised to -SPREAD, so the last two documents become equally likely at
    # position 2 (the value is 1/2, not e/(1+e)) and the estimate stays finite.
    scores = np.array([[0.0, -1000.0, -1001.0]])
    labels = np.array([[0.0, 1.0, 0.0]])
    mask = np.ones((1, 3), dtype=bool)
    grad, value = plackett_luce_gradient(
        scores, labels, mask, np.array([1.0, 1.0]), 4000, np.random.default_rng(6)
    )
    assert np.isfinite(grad).all()
    assert abs(value[0] - 0.5) < 5 * np.sqrt(0.25 / 4000)  # 5 standard errors
    # Within the spread nothing is approximated: a gap of 500 keeps e/(1+e).
    _, value = plackett_luce_gradient(
        scores / 2, labels, mask, np.array([1.0, 1.0]), 4000, np.random.default_rng(6)
    )
    p = np.exp(0.5) / (1 + np.exp(0.5))
    assert abs(value[0] - p) < 5 * np.sqrt(p * (1 - p) / 4000)


def test_dla_start_is_checked_and_used() -> None:
    ds, counts = _problem(4)
    with pytest.raises(InputError, match="start must hold 3"):
        fit_dla(counts, ds, rng=0, start=[1.0, 0.5])
    with pytest.raises(InputError, match="non-finite"):
        fit_dla(counts, ds, rng=0, start=[1.0, np.nan, 0.5])
    # One round from a given θ fits the ranker with that θ's weights (no clipping here:
    # the default τ is 1 on 15 impressions), so it differs from one round from θ = 1.
    plain = fit_dla(counts, ds, rng=0, rounds=1, clip=0.0)[1]
    started = fit_dla(counts, ds, rng=0, rounds=1, clip=0.0, start=[2.0, 1.0, 0.2])[1]
    assert not np.allclose(plain, started)
    model = fit_dla(counts, ds, rng=0, rounds=0, start=[2.0, 1.0, 0.2])[0]
    np.testing.assert_array_equal(model.propensities, [1.0, 0.5, 0.1])
