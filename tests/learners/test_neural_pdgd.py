"""PDGD with a neural ranker: the back-propagated gradient, batch independence, learning."""

from __future__ import annotations

import numpy as np
import pytest
from click_runs import click_run, split

from oltr.feedback.clicks import ClickFeedback
from oltr.learners.neural_pdgd import NeuralPDGD, mlp_forward
from oltr.types import Context


def pl_probability(scores: np.ndarray, order: list[int]) -> float:
    """Plackett–Luce probability of a full order, factor by factor (eq. 2)."""
    e = np.exp(scores)
    p, left = 1.0, list(range(len(scores)))
    for d in order:
        p *= e[d] / e[left].sum()
        left.remove(d)
    return p


def net(params: np.ndarray, shapes: tuple, x: np.ndarray) -> np.ndarray:
    """The network's scores from a flat parameter vector, written out in numpy."""
    (d, h) = shapes
    w1 = params[: d * h].reshape(d, h)
    b1 = params[d * h : d * h + h]
    w2 = params[d * h + h :]
    return (1.0 / (1.0 + np.exp(-(x @ w1 + b1)))) @ w2


def test_update_is_eta_times_the_finite_difference_gradient() -> None:
    # 4 documents, 3 features, 5 hidden units; shown order R = (2, 0, 1, 3), page of 3, a click
    # on position 1 (doc 0): pairs 0 ≻ 2 (above the click) and 0 ≻ 1 (just below). The PDGD
    # objective with ρ held at its value, L(θ) = Σ ρ_kl σ(f_k(θ) − f_l(θ)), has gradient
    # Σ ρ ∇P(d_k ≻ d_l) (eq. 10); the update must be η times its central difference.
    rng = np.random.default_rng(11)
    x = rng.random((4, 3))
    lrn = NeuralPDGD(hidden=5, eta=0.1, n_runs=1, rng=2)
    ctx = Context(t=1, n_items=4, features=x)
    lrn.rank(ctx)
    w1, b1, w2 = (np.array(p[0]) for p in lrn.params_)
    theta = np.concatenate([w1.ravel(), b1, w2])
    f = net(theta, (3, 5), x)
    order = [2, 0, 1, 3]
    rho = {}
    for k, j in [(0, 2), (0, 1)]:
        flipped = [k if d == j else j if d == k else d for d in order]
        p, p_star = pl_probability(f, order), pl_probability(f, flipped)
        rho[k, j] = p_star / (p + p_star)

    def objective(th: np.ndarray) -> float:
        s = net(th, (3, 5), x)
        return sum(r / (1.0 + np.exp(-(s[k] - s[j]))) for (k, j), r in rho.items())

    eps = 1e-6
    grad = np.array(
        [
            (objective(theta + eps * e) - objective(theta - eps * e)) / (2 * eps)
            for e in np.eye(theta.size)
        ]
    )
    orders = np.array([order])
    clicks = np.array([[False, True, False]])
    lrn.update(ctx, orders, ClickFeedback(orders, clicks))
    after = np.concatenate([np.ravel(p[0]) for p in lrn.params_])
    # Central differences at ε = 1e-6 on O(1) values: error ~ε² + 1e-16/ε ≈ 1e-10.
    np.testing.assert_allclose((after - theta) / 0.1, grad, rtol=0, atol=1e-8)
    assert np.abs(grad).max() > 1e-3  # the check is not vacuous


def test_initialisation_follows_the_reference_scales() -> None:
    # W1, b1 ~ N(0, (1/d)²), w2 ~ N(0, (1/H)²): sample standard deviations over 200 runs.
    d, h = 46, 64
    lrn = NeuralPDGD(n_runs=200, rng=0)
    lrn.rank(Context(t=1, n_items=2, features=np.zeros((2, d))))
    w1, b1, w2 = lrn.params_
    assert abs(w1.std() * d - 1) < 0.01  # 588,800 draws: relative s.e. 0.1%
    assert abs(b1.std() * d - 1) < 0.03  # 12,800 draws: relative s.e. 0.6%
    assert abs(w2.std() * h - 1) < 0.03


def test_scores_are_the_numpy_network() -> None:
    x = np.random.default_rng(1).random((7, 4))
    lrn = NeuralPDGD(hidden=6, n_runs=3, rng=5)
    lrn.rank(Context(t=1, n_items=7, features=x))
    w1, b1, w2 = lrn.params_
    for b in range(3):
        want = net(np.concatenate([w1[b].ravel(), b1[b], w2[b]]), (4, 6), x)
        np.testing.assert_allclose(lrn.score_features(x)[b], want, rtol=1e-13)


def test_a_run_is_the_same_alone_or_batched(tmp_path) -> None:  # type: ignore[no-untyped-def]
    train, test = split(3)
    kw = {"horizon": 300, "checkpoints": [150, 300]}
    batched, batched_online = click_run(
        "pdgd-neural", {}, train, test, tmp_path, reps=range(3), **kw
    )
    for r in range(3):
        alone, alone_online = click_run("pdgd-neural", {}, train, test, tmp_path, reps=[r], **kw)
        np.testing.assert_array_equal(alone.loc[r], batched.loc[r])
        np.testing.assert_array_equal(alone_online.loc[r], batched_online.loc[r])


@pytest.mark.parametrize("seed", [3])
def test_learns_beats_the_random_ranker(seed: int, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Fixed seeds; the margin 0.05 NDCG@10 is far above the run-to-run spread of the mean
    # of 4 runs of the random ranker on 20 held-out queries.
    train, test = split(seed)
    kw = {"reps": range(4), "horizon": 1500, "checkpoints": [750, 1500]}
    learned, learned_online = click_run("pdgd-neural", {}, train, test, tmp_path, **kw)
    rand, rand_online = click_run("random", {}, train, test, tmp_path, **kw)
    assert learned[1500].mean() > rand[1500].mean() + 0.05
    assert learned_online.mean() > rand_online.mean()


def test_heldout_scorer_matches_weights_for_a_linear_scorer() -> None:
    _, test = split(3)
    w = np.random.default_rng(0).normal(size=(2, 8))
    np.testing.assert_array_equal(test.evaluate_scorer(lambda x: (x @ w.T).T), test.evaluate(w))
    s, _ = mlp_forward(np.zeros((1, 8, 2)), np.zeros((1, 2)), np.ones((1, 2)), np.eye(8))
    assert s.shape == (1, 8)
