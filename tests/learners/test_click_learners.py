"""PDGD, P-MGD, P-DBGD and TD-DBGD: hand-computed updates and learning from simulated clicks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from click_runs import click_run, split

from oltr.clicks.multileaving import preference_vs_first, probabilistic_multileave
from oltr.feedback.clicks import ClickFeedback
from oltr.learners.pdgd import PDGD, pdgd_score_gradient
from oltr.learners.pmgd import PMGD, fill_order
from oltr.types import Context, RunGenerators


def pl_probability(scores: np.ndarray, order: list[int]) -> float:
    """Plackett–Luce probability of a full order, factor by factor (eq. 2)."""
    e = np.exp(scores)
    p, left = 1.0, list(range(len(scores)))
    for d in order:
        p *= e[d] / e[left].sum()
        left.remove(d)
    return p


def test_pdgd_gradient_matches_hand_computation() -> None:
    # Scores f = (0.5, 0, −1, 0.3); shown order R = (2, 0, 1, 3), page of 3, click on position 1
    # (doc 0). Inferred: doc 0 ≻ doc 2 (above the click) and doc 0 ≻ doc 1 (just below it).
    f = np.array([0.5, 0.0, -1.0, 0.3])
    order = [2, 0, 1, 3]
    clicks = np.array([[False, True, False]])
    want = np.zeros(4)
    for k, j in [(0, 2), (0, 1)]:
        flipped = [k if d == j else j if d == k else d for d in order]
        p, p_star = pl_probability(f, order), pl_probability(f, flipped)
        rho = p_star / (p + p_star)
        grad_p = np.exp(f[k]) * np.exp(f[j]) / (np.exp(f[k]) + np.exp(f[j])) ** 2
        want[k] += rho * grad_p
        want[j] -= rho * grad_p
    coef, pairs = pdgd_score_gradient(f[None], np.array([order]), clicks)
    assert pairs.tolist() == [2]
    # A few dozen flops on O(1) numbers: round-off well below 1e-12.
    np.testing.assert_allclose(coef[0], want, rtol=0, atol=1e-12)


def test_pdgd_update_is_eta_times_feature_gradient() -> None:
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    lrn = PDGD(eta=0.1, n_runs=1, rng=0)
    ctx = Context(t=1, n_items=3, features=x)
    orders = lrn.rank(ctx)
    clicks = np.zeros((1, 3), dtype=bool)
    clicks[0, 1] = True
    coef, _ = pdgd_score_gradient(np.zeros((1, 3)), orders, clicks)
    lrn.update(ctx, orders, ClickFeedback(orders, clicks))
    np.testing.assert_allclose(lrn.weights_[0], 0.1 * coef[0] @ x, rtol=0, atol=1e-15)


def test_pdgd_samples_plackett_luce() -> None:
    # 30,000 draws of a 3-document list; each of the 6 orders' frequency lies within 5 sd
    # of its PL probability (family-wise error < 1e-5 by Bonferroni over 6 normal tails).
    lrn = PDGD(n_runs=1, rng=4)
    lrn._weights = np.array([[1.0, -0.5]])
    x = np.array([[1.0, 0.0], [0.0, 1.0], [0.3, 0.3]])
    f = x @ lrn._weights[0]
    counts: dict[tuple[int, ...], int] = {}
    n = 30_000
    for t in range(n):
        o = tuple(int(v) for v in lrn.rank(Context(t=t + 1, n_items=3, features=x))[0])
        counts[o] = counts.get(o, 0) + 1
    for perm in itertools.permutations(range(3)):
        p = pl_probability(f, list(perm))
        assert abs(counts.get(perm, 0) / n - p) <= 5 * np.sqrt(p * (1 - p) / n)


def test_multileave_credit_is_the_paper_rule() -> None:
    # Two rankers over 3 docs: A = (0, 1, 2), B = (2, 1, 0); softmax 1/(r+1)^3.
    ranks = np.array([[[0, 1, 2], [2, 1, 0]]])
    shown, q = probabilistic_multileave(ranks, np.array([[[0.1, 0.9, 0.1], [0.5, 0.5, 0.5]]]), k=3)
    w = np.array([1.0, 1 / 8, 1 / 27])
    pa, pb = {0: w[0], 1: w[1], 2: w[2]}, {0: w[2], 1: w[1], 2: w[0]}
    free = [0, 1, 2]
    for t, d in enumerate(shown[0]):
        a = pa[d] / sum(pa[x] for x in free)
        b = pb[d] / sum(pb[x] for x in free)
        np.testing.assert_allclose(q[0, t], [a / (a + b), b / (a + b)], atol=1e-15)
        free.remove(int(d))


def test_multileave_preference_is_unbiased_under_random_clicks() -> None:
    # Exact: enumerate every multileaved list (ranker choices × documents) of 3 rankers over
    # 3 docs and every click vector with clicks i.i.d. Bernoulli(0.5) (clicks independent of
    # the rankers); E[pref(r vs 0)] must vanish (fairness; Schuth et al. 2015 §3).
    ranks = np.array([[0, 1, 2], [2, 0, 1], [1, 2, 0]])
    weights = (ranks + 1.0) ** -3.0
    expected = np.zeros(3)
    for perm in itertools.permutations(range(3)):
        prob, free, post = 1.0, [0, 1, 2], []
        for d in perm:
            per = weights[:, d] / weights[:, free].sum(axis=1)
            prob *= per.mean()
            post.append(per / per.sum())
            free.remove(d)
        q = np.array(post)[None]
        for clicks in itertools.product([False, True], repeat=3):
            pref = preference_vs_first(q, np.array([clicks]))[0]
            expected += prob / 8 * pref
    np.testing.assert_allclose(expected, 0.0, atol=1e-12)


def test_mgd_moves_to_the_mean_winner() -> None:
    lrn = PMGD(n_candidates=3, eta=0.5, delta=1.0, k=2, n_runs=1, rng=1)
    x = np.eye(3)
    ctx = Context(t=1, n_items=3, features=x)
    orders = lrn.rank(ctx)
    _, u, q = lrn._round  # type: ignore[misc]
    clicks = np.array([[True, False]])
    winners = preference_vs_first(q, clicks)[0, 1:] > 0
    lrn.update(ctx, orders, ClickFeedback(orders, clicks))
    want = 0.5 * u[0, winners].mean(axis=0) if winners.any() else np.zeros(3)
    np.testing.assert_allclose(lrn.weights_[0], want, atol=1e-15)


def test_team_draft_needs_one_candidate() -> None:
    with pytest.raises(ValueError, match="n_candidates must be 1"):
        PMGD(method="team_draft", n_candidates=3)


@pytest.mark.parametrize(
    ("name", "params"),
    [("pdgd", {}), ("p-mgd", {"n_candidates": 9}), ("p-dbgd", {}), ("td-dbgd", {})],
    ids=["pdgd", "p-mgd", "p-dbgd", "td-dbgd"],
)
def test_learners_beat_the_random_ranker(name, params, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Fixed seeds; the margin 0.05 NDCG@10 is far above the run-to-run spread of the mean
    # of 4 runs of the random ranker on 20 held-out queries.
    train, test = split(3)
    kw = {"reps": range(4), "horizon": 1500, "checkpoints": [1500]}
    learned, learned_online = click_run(name, params, train, test, tmp_path, **kw)
    rand, rand_online = click_run("random", {}, train, test, tmp_path, **kw)
    assert learned[1500].mean() > rand[1500].mean() + 0.05
    assert learned_online.mean() > rand_online.mean()


@pytest.mark.parametrize("m", [30, 300], ids=["counted", "sorted"])
def test_mgd_page_matches_sorting_and_multileaving(m: int) -> None:
    # The compiled rank-and-multileave kernel against numpy: stable descending sorts of each
    # candidate's scores (duplicate documents make ties), then probabilistic_multileave with
    # the same per-run draws. Short lists are ranked by counting, long ones by sorting.
    rng = np.random.default_rng(5)
    x = rng.random((m, 6))
    x[1] = x[0]
    x[m - 1] = x[2]
    lrn = PMGD(n_candidates=7, k=10, n_runs=3, rng=RunGenerators.from_keys(8, reps=range(3)))
    lrn._weights = rng.normal(size=(3, 6))
    orders = lrn.rank(Context(t=1, n_items=m, features=x))
    gens = RunGenerators.from_keys(8, reps=range(3))
    z = gens.standard_normal((7, 6))
    u = z / np.linalg.norm(z, axis=-1, keepdims=True)
    rankers = np.concatenate([lrn._weights[:, None], lrn._weights[:, None] + u], 1)
    scores = np.einsum("brd,md->brm", rankers, x)
    own = np.argsort(-scores, axis=-1, kind="stable")
    ranks = np.empty_like(own)
    np.put_along_axis(ranks, own, np.arange(m), axis=-1)
    shown, q = probabilistic_multileave(ranks, gens.random((2, 10)), k=10)
    np.testing.assert_array_equal(orders, fill_order(shown, own[:, 0]))
    np.testing.assert_allclose(lrn._round[2], q, rtol=1e-15)  # type: ignore[index]
