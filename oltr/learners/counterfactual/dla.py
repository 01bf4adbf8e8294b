"""The Dual Learning Algorithm: a ranker and per-position propensities learned together.

Ai, Bi, Luo, Guo & Croft 2018 (SIGIR, "Unbiased Learning to Rank with
Unbiased Propensity Estimation", §4) observe that estimating examination
from clicks is the mirror image of estimating relevance from clicks: clicks
are ``P(e) · P(r)`` and either factor, divided out, leaves the other. DLA
minimises two inverse-weighted softmax losses at once:

``l_IRM(f)`` (ranker)
    ``−Σ_{clicks (d, k)} (θ_1/θ_k) log softmax_q(f)_d``: the IPS listwise
    loss, propensities ``θ_k = softmax(g)_k / softmax(g)_1``.
``l_IPM(g)`` (propensity model, here one logit ``g_k`` per position)
    ``−Σ_{clicks (d, k)} (r_1/r_d) log softmax(g)_k``, with relevance ratios
    from the ranker, ``r_1/r_d = exp(f(x_top) − f(x_d))``, ``x_top`` the
    document at the first position of the same list.

The softmax runs over the documents the log showed for the query (the
displayed list). This implementation works from counts, which do not say
which document each clicked list had at the top: ``r_1`` is the mean over the
query's impressions
of the top document's ``exp(f)`` (exact when the logger shows the same top
document for a query, as the deterministic loggers of the field do). The
ratios do not depend on the softmax's normaliser, so ``r`` is ``exp(f)``.

The paper runs both losses through stochastic gradient steps together; here
the two minimisations alternate to convergence (block coordinate descent on
the same pair of objectives): the ranker by L-BFGS from the previous ranker,
the propensities in closed form, because with per-position logits ``l_IPM``
is a weighted multinomial likelihood whose minimiser is
``softmax(g)_k ∝ Σ_d c[d, k] · r_1/r_d``. Both weights are clipped at
``1/τ`` (ULTRA's ``max_propensity_weight``). It starts from θ = 1 (the naive
ranker) and stops when θ moves less than ``tol`` or after ``rounds`` rounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.learners.counterfactual.model import RankingModel, make_scorer
from oltr.learners.counterfactual.objectives import listwise_softmax
from oltr.learners.counterfactual.training import (
    ClickTable,
    click_table,
    default_clip,
    minimize_scores,
)
from oltr.logs import BoundLog, PositionCounts
from oltr.random import RNGLike, as_rng

__all__ = ["dla_propensity_step", "fit_dla"]

FloatArray = NDArray[np.float64]


def dla_propensity_step(table: ClickTable, scores: FloatArray, clip: float) -> FloatArray:
    """The minimiser of ``l_IPM`` given the ranker's scores: θ (K,), θ_1 = 1.

    ``θ_k ∝ Σ_d c[d, k] · min(r_1/r_d, 1/τ)``, ``r_1/r_d`` as in the module docstring.
    """
    blocks = table.blocks
    seg = blocks.segment
    top = np.maximum.reduceat(scores, blocks.starts)
    rel = np.exp(scores - top[seg])
    first = np.add.reduceat(table.shown[:, 0] * rel, blocks.starts) / table.impressions
    ratio = first[seg] / rel
    if clip > 0:
        ratio = np.minimum(ratio, 1.0 / clip)
    mass = ratio @ table.clicks
    if mass[0] <= 0:
        return np.ones_like(mass)
    theta = mass / mass[0]
    # A position without clicks keeps the smallest positive estimate, never 0.
    positive = theta[theta > 0]
    return np.asarray(np.where(theta > 0, theta, positive.min()), dtype=np.float64)


def fit_dla(
    bound_or_counts: BoundLog | PositionCounts,
    dataset: LetorDataset,
    *,
    scorer: str = "linear",
    rng: RNGLike,
    l2: float = 1e-4,
    max_iter: int = 500,
    clip: float | None = None,
    hidden: int = 32,
    rounds: int = 20,
    tol: float = 1e-4,
    provenance: Mapping[str, Any] | None = None,
) -> tuple[RankingModel, FloatArray]:
    """Fit a ranker and the examination propensities with DLA (see the module docstring).

    Returns
    -------
    model, theta
        The ranker (its ``propensities`` are ``theta``) and θ (K,), θ_1 = 1.
    """
    gen = as_rng(rng)
    table = click_table(bound_or_counts, dataset, shown_only=True)
    tau = default_clip(table.n_sessions) if clip is None else float(clip)
    net = make_scorer(scorer, dataset.n_features, hidden=hidden)
    params = net.init(gen)
    theta = np.ones(table.n_positions)
    scale = 1.0 / table.n_sessions
    done = 0
    while done < rounds:
        done += 1
        weights = table.clicks @ (1.0 / np.maximum(theta, tau))

        def objective(
            scores: FloatArray, weights: FloatArray = weights
        ) -> tuple[float, FloatArray]:
            value, grad = listwise_softmax(scores, weights, table.blocks)
            return value * scale, grad * scale

        params = minimize_scores(
            objective, net, table.features, params, l2=l2, max_iter=max_iter, what="dla"
        )
        new_theta = dla_propensity_step(table, net.scores(params, table.features), tau)
        moved = float(np.abs(new_theta - theta).max())
        theta = new_theta
        if moved < tol:
            break
    data = {
        "sessions": table.n_sessions,
        "queries": int(table.query_index.size),
        "positions": table.n_positions,
        "clip": tau,
        "l2": l2,
        "rounds": done,
        **dict(provenance or {}),
    }
    return RankingModel(net, params, "dla", theta, data), theta
