"""The probability of each shown list under the policy that drew it, logged with the list.

Every impression the service answers carries ``propensities``, stored with the
impression (the store's ``propensities`` column) and returned by ``rank``, for
off-policy estimators to read. The shape is one JSON object::

    {"method": name, "list": p, "prefix": [p_1, ..., p_n]}

``prefix[j - 1] = p_j`` is the probability, given the round's context and the
ranker's state before the round, that the first ``j`` shown positions hold
exactly the shown items in the shown order; ``n`` is the length of the logged
page (the first ``k`` of a ``top-k`` or ``clicks`` model, the interleaved page of
a duel, the whole list for ``full``), and ``list = p_n`` is the probability of
the page. Each is exact (a product of the policy's own factors in float64), not
a sample estimate. What each policy logs:

* ``"plackett-luce"`` (PDGD, neural PDGD): the list is a Plackett–Luce sample
  of the scores ``f``, ``p_j = Π_{i<=j} e^{f(d_i)} / Σ_{d not above i} e^{f(d)}``
  (Oosterhuis & de Rijke 2018, eq. 2), with the scores the learner sampled
  with; the remaining items enter every denominator, not only the page's.
* ``"epsilon-greedy"`` (RTop-kF): its own order with probability 1 − γ, a
  uniform one with probability γ (Chaudhuri & Tewari 2016, Algorithm 1 steps
  5–6; :func:`oltr.serve.protocol.exploration_propensities`, which also logs
  ``gamma``).
* ``"team-draft"`` (TD-DBGD; duel learners interleaving with ``team_draft``):
  the sum of ``2^{-P}`` over the ``P = ⌈n/2⌉`` pair coins whose picks give
  the shown prefix (Radlinski, Kurup & Joachims 2008, §4, with the two
  rankers' orders of the round).
* ``"probabilistic"`` (P-MGD, P-DBGD; duel learners interleaving with
  ``probabilistic``): a ranker picked uniformly at each position places item
  ``d`` with probability ``(rank_r(d) + 1)^{-τ}`` over the items not placed, so
  ``p_j = Π_{t<=j} (1/R) Σ_r P_r(d_t | free_t)`` (Hofmann, Whiteson & de Rijke
  2011, §4; Schuth et al. 2015, §3), with the ``R`` rankers of the round.

Deterministic rankers and balanced interleaving log ``{}`` (balanced
interleaving's list depends on one coin and on the credit depth, and is not
logged). The page probabilities say nothing about clicks.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.clicks.interleaving import TeamDraftInterleaving
from oltr.clicks.multileaving import rank_weights
from oltr.clicks.probabilistic import ProbabilisticInterleaving
from oltr.feedback import FeedbackModel
from oltr.learners.base import Learner
from oltr.learners.linear import batch_scores
from oltr.learners.neural_pdgd import NeuralPDGD
from oltr.learners.pdgd import PDGD
from oltr.learners.pmgd import PMGD
from oltr.serve.clickfeedback import page_length
from oltr.serve.protocol import exploration_propensities
from oltr.types import Context

__all__ = [
    "PROBABILISTIC_TAU",
    "multileave_prefix",
    "plackett_luce_prefix",
    "shown_propensities",
    "team_draft_prefix",
]

#: τ of the duel path's probabilistic interleaving (its default; Hofmann et al. 2011 §4).
PROBABILISTIC_TAU = 3.0


def plackett_luce_prefix(scores: NDArray[Any], order: NDArray[Any], depth: int) -> list[float]:
    """``p_j`` of the first ``j = 1..depth`` items of ``order`` under Plackett–Luce on ``scores``.

    ``P(d_1..d_j) = Π_{i<=j} e^{s(d_i)} / Σ_{u>=i} e^{s(d_u)}`` over the whole
    ``order`` (Plackett 1975; Oosterhuis & de Rijke 2018, eq. 2), computed in log
    space: the log-denominators are a running ``logaddexp`` from the bottom, so
    scores hundreds apart (whose exponentials underflow) still give finite
    probabilities instead of 0/0.

    >>> [round(p, 12) for p in plackett_luce_prefix(np.zeros(3), np.array([2, 0, 1]), 3)]
    [0.333333333333, 0.166666666667, 0.166666666667]
    >>> plackett_luce_prefix(np.array([0.0, -800.0, -1600.0]), np.array([0, 1, 2]), 3)
    [1.0, 1.0, 1.0]
    """
    s = np.asarray(scores, dtype=np.float64)[np.asarray(order)]
    log_suffix = np.logaddexp.accumulate(s[::-1])[::-1]  # log Σ_{u >= i} e^{s_u}
    logs = np.cumsum(s[:depth] - log_suffix[:depth])
    return [float(v) for v in np.exp(logs)]


def team_draft_prefix(
    order_a: NDArray[Any], order_b: NDArray[Any], shown: NDArray[Any]
) -> list[float]:
    """``p_j`` of ``shown[:j]`` under team-draft interleaving of two orders, ``j = 1..n``.

    :func:`oltr.clicks.interleaving.team_draft_interleave` draws one fair coin
    per pair of positions (who picks first) and each team then adds its best
    item not yet shown (Radlinski et al. 2008, §4); the list is a function of
    the ``P = ⌈n/2⌉`` coins, so ``p_j`` counts the coin vectors that give
    ``shown[:j]``, each of probability ``2^{-P}``.

    >>> team_draft_prefix(np.array([0, 1]), np.array([1, 0]), np.array([0, 1]))
    [0.5, 0.5]
    """
    page = [int(v) for v in shown]
    n = len(page)
    a, b = [int(v) for v in order_a[:n]], [int(v) for v in order_b[:n]]
    n_pairs = (n + 1) // 2
    hits = [0] * n
    for coins in product((True, False), repeat=n_pairs):
        used: set[int] = set()
        for t in range(n):
            a_picks = coins[t // 2] == (t % 2 == 0)  # pair (A, B) if A first, else (B, A)
            item = next(d for d in (a if a_picks else b) if d not in used)
            if item != page[t]:
                break
            used.add(item)
            hits[t] += 1
    return [h / 2**n_pairs for h in hits]


def multileave_prefix(ranks: NDArray[Any], shown: NDArray[Any], tau: float) -> list[float]:
    """``p_j`` of ``shown[:j]`` under probabilistic multileaving of ``R`` rankers.

    ``ranks`` (R, m): ``ranks[r, d]`` the 0-based position of item ``d`` in
    ranker ``r``. Each position picks a ranker uniformly, which places ``d`` with
    probability ``(ranks[r, d] + 1)^{-τ}`` over the items not yet placed
    (:func:`oltr.clicks.multileaving.multileave_one`; Schuth et al. 2015, §3),
    so ``p_j = Π_{t<=j} (1/R) Σ_r w_r(d_t) / Σ_{d free} w_r(d)``.

    >>> multileave_prefix(np.array([[0, 1], [1, 0]]), np.array([0, 1]), 1.0)
    [0.5, 0.5]
    """
    ranks = np.asarray(ranks, dtype=np.intp)
    w = rank_weights(ranks.shape[1], float(tau))[ranks]  # (R, m)
    total = w.sum(axis=1)
    p, out = 1.0, []
    for d in (int(v) for v in shown):
        p *= float(np.mean(w[:, d] / total))
        out.append(p)
        total = total - w[:, d]
        w[:, d] = 0.0
    return out


def _entry(method: str, prefix: list[float], **more: Any) -> dict[str, Any]:
    return {"method": method, "list": prefix[-1], "prefix": prefix, **more}


def _stable_ranks(scores: NDArray[Any]) -> NDArray[np.intp]:
    """Ranks (R, m) of a stable descending sort of each row (ties by lower index)."""
    order = np.argsort(-scores, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(scores.shape[-1])[None], axis=-1)
    return ranks.astype(np.intp)


def _multileave_rankers(learner: PMGD, x: NDArray[Any], u: NDArray[Any]) -> NDArray[Any]:
    """Scores (R, m) of the current ranker and its candidates ``w + δ u_j``, as ``rank`` made them.

    The candidates' weights are ``w + δ u_j`` and each score sums its feature
    terms in index order, skipping zero features (the arithmetic of the learner's
    kernel), so the ranks are those it multileaved.
    """
    w = np.asarray(learner.weights_, dtype=np.float64)[0]
    wt = np.concatenate([w[None], w[None] + float(learner.delta) * u[0]], axis=0)  # (R, d)
    s = np.zeros((wt.shape[0], x.shape[0]))
    for j in range(x.shape[1]):
        col = x[:, j]
        nz = col != 0.0
        s[:, nz] += wt[:, j, None] * col[None, nz]
    return s


def _click_learner(learner: Learner[Any], ctx: Context, orders: Any, n: int) -> dict[str, Any]:
    state = learner.round_state()  # type: ignore[attr-defined]
    if isinstance(learner, PDGD | NeuralPDGD):
        return _entry("plackett-luce", plackett_luce_prefix(state[1][0], orders[0], n))
    assert isinstance(learner, PMGD) and ctx.features is not None
    x = np.asarray(ctx.features, dtype=np.float64)
    u, credit = state[1], state[2]
    if learner.method == "team_draft":
        w = np.asarray(learner.weights_)
        rankers = np.concatenate([w[:, None], w[:, None] + learner.delta * u], 1)
        b, r, d = rankers.shape
        scores = batch_scores(rankers.reshape(b * r, d), x).reshape(b, r, -1)
        both = np.argsort(-scores, axis=-1, kind="stable")[0]
        method, prefix = "team-draft", team_draft_prefix(both[0], both[1], credit.shown[0])
    else:
        ranks = _stable_ranks(_multileave_rankers(learner, x, u))
        page = orders[0, : credit.shape[1]]
        method, prefix = "probabilistic", multileave_prefix(ranks, page, float(learner.tau))
    # Below the multileaved page the list is the current ranker's own order: no more chance.
    return _entry(method, (prefix + [prefix[-1]] * n)[:n])


def shown_propensities(
    learner: Learner[Any],
    model: FeedbackModel,
    context: Context,
    orders: NDArray[Any],
    shown: NDArray[Any],
    interleaving: Any,
    depth: int,
) -> dict[str, Any]:
    """The ``propensities`` of one impression (see the module docstring), right after ``rank``.

    ``orders`` is what ``learner.rank(context)`` returned, ``shown`` and
    ``interleaving`` what :func:`oltr.serve.protocol.shown_list` made of it, and
    ``depth`` the page a ``top-k`` or ``full`` model reveals; a ``clicks``
    model's page is its first ``min(k, m)`` items.
    """
    state = getattr(learner, "round_state", None)
    if state is not None and state() is not None:
        n = page_length(model, int(orders.shape[-1]))
        return _click_learner(learner, context, orders, n)
    if isinstance(interleaving, TeamDraftInterleaving):
        prefix = team_draft_prefix(orders[0, 0], orders[0, 1], interleaving.shown)
        return _entry("team-draft", prefix)
    if isinstance(interleaving, ProbabilisticInterleaving):
        ranks = np.argsort(orders[0], axis=-1)  # (2, m): the inverse of each order
        prefix = multileave_prefix(ranks, interleaving.shown, PROBABILISTIC_TAU)
        return _entry("probabilistic", prefix)
    if interleaving is not None:
        return {}
    props = exploration_propensities(learner, context, shown, depth)
    if not props:
        return {}
    return _entry("epsilon-greedy", props["prefix"], gamma=props["gamma"])
