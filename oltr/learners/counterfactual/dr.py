"""Doubly robust counterfactual learning to rank (Oosterhuis 2023, ACM TOIS; arXiv 2203.17118).

Position bias hides the treatment (examination), so the DR estimator of
Oosterhuis 2023 uses its *expectation per rank*: a document's expected
exposure under the logging policy ``ρ_d = E_{k ~ π_0}[θ_k]``. With a
regression model's relevance prediction ``R̂_d`` and the document's
click-through rate ``ctr_d = Σ_k c[d, k] / n_q`` (``n_q`` impressions of its
query), the DR relevance estimate is::

    R̂_DR(d) = R̂_d + (ctr_d − ρ_d R̂_d) / max(ρ_d, τ)

(the direct-method prediction, corrected by the IPS estimate of its error;
with the affine trust-bias model's ``β`` set to 0, the position-based model).
The learned policy's value is ``Σ_q Σ_d ω(d | π) R̂_DR(d)`` with the
policy's expected exposure ``ω(d | π) = E_{y ~ π}[θ_{rank(d, y)}]`` (the
expected number of clicks of a user who follows θ); it is maximised over a
Plackett–Luce policy ``π(· | f(x))`` with PL-Rank-2 gradients (Oosterhuis 2021).

Choices, following the author's code (``utils/estimators.py``,
``utils/optimization.py`` and ``run.py`` of the paper's repository):

- ``ρ_d`` is the empirical exposure ``Σ_k shown[d, k] θ_k / n_q`` (the code's
  frequency estimate). For documents the logger never showed ρ = 0 and,
  with τ > 0, ``R̂_DR = R̂``: DR falls back on the regression there, where
  IPS has no information.
- τ defaults to ``min(1, 10/√N)`` (``alpha_clip`` of ``run.py``).
- The regression model ``R̂ = σ(g(x))`` (same scorer kind as the ranker) is
  fit on the shown documents by the unbiased cross-entropy
  ``−Σ_d [ctr_d/ρ̃_d log R̂_d + (ρ_d − ctr_d)/ρ̃_d log(1 − R̂_d)]``,
  ``ρ̃ = max(ρ, τ)`` — here by L-BFGS with ``l2`` instead of Adam with early
  stopping on validation clicks.
- Each logged query weighs the same (the code's loop over queries). The
  ranker starts from the regression model's ``g`` (ranking by ``R̂``, the
  direct method's ranker; the code starts from a random or pretrained
  network) and takes ``steps`` full-batch Adam steps (learning rate
  ``learning_rate``) with ``n_samples`` rankings per query per step, instead
  of per-query SGD with early stopping on validation clicks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.errors import InputError, NumericalError
from oltr.learners.counterfactual.model import RankingModel, Scorer, make_scorer
from oltr.learners.counterfactual.objectives import (
    Blocks,
    plackett_luce_gradient,
    weighted_logistic,
)
from oltr.learners.counterfactual.training import (
    ClickTable,
    click_table,
    default_clip,
    minimize_scores,
    propensity_vector,
)
from oltr.logs import BoundLog, PositionCounts
from oltr.random import RNGLike, as_rng

__all__ = ["dr_relevance", "fit_dr", "optimize_plackett_luce"]

FloatArray = NDArray[np.float64]


def _exposure(table: ClickTable, theta: FloatArray) -> tuple[FloatArray, FloatArray]:
    per_doc = table.impressions[table.blocks.segment]
    return table.shown @ theta / per_doc, table.clicks.sum(axis=1) / per_doc


def dr_relevance(
    table: ClickTable, theta: FloatArray, clip: float, regression: FloatArray
) -> FloatArray:
    """``R̂_DR(d) = R̂_d + (ctr_d − ρ_d R̂_d) / max(ρ_d, τ)`` for every document of ``table``.

    A document with ``max(ρ_d, τ) = 0`` (never shown, no clipping) gets 0, as
    in the author's code (``compute_weights``).
    """
    rho, ctr = _exposure(table, theta)
    clipped = np.maximum(rho, clip)
    safe = np.where(clipped > 0, clipped, 1.0)
    return np.where(clipped > 0, regression + (ctr - rho * regression) / safe, 0.0)


def _without_constant(net: Scorer, params: FloatArray) -> FloatArray:
    """The same function of the features without the last, constant, one (exactly)."""
    layers = net.unpack(params)
    w, b = layers[0]
    if not net.hidden:
        return np.asarray(w[:-1, 0], dtype=np.float64)
    parts = [w[:-1].ravel(), b + w[-1]]
    for w_l, b_l in layers[1:]:
        parts += [w_l.ravel(), b_l]
    return np.concatenate(parts)


def _fit_regression(
    table: ClickTable,
    theta: FloatArray,
    clip: float,
    net: Scorer,
    features: FloatArray,
    start: FloatArray,
    l2: float,
    max_iter: int,
) -> FloatArray:
    rho, ctr = _exposure(table, theta)
    seen = rho > 0
    clipped = np.maximum(rho[seen], clip)
    positive = ctr[seen] / clipped
    negative = (rho[seen] - ctr[seen]) / clipped
    scale = 1.0 / max(int(seen.sum()), 1)

    def objective(scores: FloatArray) -> tuple[float, FloatArray]:
        value, grad = weighted_logistic(scores, positive, negative)
        return value * scale, grad * scale

    return minimize_scores(
        objective, net, features[seen], start, l2=l2, max_iter=max_iter, what="dr regression"
    )


def _buckets(blocks: Blocks) -> list[NDArray[np.int64]]:
    # Queries grouped by the power of two above their length, to pad little.
    width = np.ceil(np.log2(np.maximum(blocks.lengths, 1))).astype(np.int64)
    return [np.flatnonzero(width == w) for w in np.unique(width)]


def optimize_plackett_luce(
    net: Scorer,
    params: FloatArray,
    features: FloatArray,
    labels: FloatArray,
    blocks: Blocks,
    rank_weights: FloatArray,
    *,
    rng: np.random.Generator,
    steps: int,
    n_samples: int,
    learning_rate: float,
    l2: float,
) -> FloatArray:
    """Maximise ``mean_q E_{y ~ PL(f(x_q))}[Σ_k λ_k labels_{y_k}] − l2/2 ‖params‖²`` by Adam.

    The gradient of each step is PL-Rank-2's estimate
    (:func:`~oltr.learners.counterfactual.objectives.plackett_luce_gradient`)
    from ``n_samples`` rankings per query; Adam (Kingma & Ba 2015, Algorithm 1,
    β₁ = 0.9, β₂ = 0.999, ε = 1e-8).
    """
    groups = _buckets(blocks)
    index = []
    for group in groups:
        sub = Blocks(blocks.starts[group], blocks.lengths[group])
        entries = np.repeat(sub.starts - np.cumsum(sub.lengths) + sub.lengths, sub.lengths)
        entries = entries + np.arange(int(sub.lengths.sum()))
        index.append((sub, entries))
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        return _adam(
            net,
            params,
            features,
            labels,
            index,
            rank_weights,
            rng=rng,
            steps=steps,
            n_samples=n_samples,
            learning_rate=learning_rate,
            l2=l2,
            n_queries=blocks.starts.size,
        )


def _adam(
    net: Scorer,
    params: FloatArray,
    features: FloatArray,
    labels: FloatArray,
    index: list[tuple[Blocks, NDArray[np.int64]]],
    rank_weights: FloatArray,
    *,
    rng: np.random.Generator,
    steps: int,
    n_samples: int,
    learning_rate: float,
    l2: float,
    n_queries: int,
) -> FloatArray:
    m = np.zeros_like(params)
    v = np.zeros_like(params)
    for t in range(1, steps + 1):
        scores, backward = net.forward(params, features)
        d_scores = np.zeros_like(scores)
        for sub, entries in index:
            mask = sub.mask
            grad, _ = plackett_luce_gradient(
                sub.padded(scores[entries], 0.0),
                sub.padded(labels[entries], 0.0),
                mask,
                rank_weights,
                n_samples,
                rng,
            )
            d_scores[entries] = grad[mask]
        gradient = l2 * params - backward(d_scores / n_queries)
        if not np.isfinite(gradient).all():
            raise NumericalError(f"dr: the policy gradient stopped being finite at step {t}")
        m = 0.9 * m + 0.1 * gradient
        v = 0.999 * v + 0.001 * gradient**2
        step = learning_rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
        params = params - step
    return params


def fit_dr(
    bound_or_counts: BoundLog | PositionCounts,
    dataset: LetorDataset,
    *,
    propensities: Any,
    scorer: str = "linear",
    rng: RNGLike,
    l2: float = 1e-4,
    max_iter: int = 500,
    clip: float | None = None,
    hidden: int = 32,
    steps: int = 100,
    n_samples: int = 16,
    learning_rate: float = 0.05,
    provenance: Mapping[str, Any] | None = None,
) -> RankingModel:
    """Fit a ranker to the DR estimate of Oosterhuis 2023 (see the module docstring).

    ``max_iter`` caps the regression's L-BFGS iterations; ``steps``,
    ``n_samples`` and ``learning_rate`` set the policy optimisation.
    """
    if steps < 1 or n_samples < 1 or not learning_rate > 0:
        raise InputError(
            f"steps, n_samples and learning_rate must be positive, got {steps}, {n_samples}, "
            f"{learning_rate}"
        )
    gen = as_rng(rng)
    table = click_table(bound_or_counts, dataset)
    theta = propensity_vector(propensities, table.n_positions, learner="dr")
    tau = default_clip(table.n_sessions) if clip is None else float(clip)
    # The regression has an intercept (a constant feature): click rates are far from 1/2.
    augmented = np.hstack([table.features, np.ones((table.features.shape[0], 1))])
    regressor = make_scorer(scorer, dataset.n_features + 1, hidden=hidden)
    reg_params = _fit_regression(
        table, theta, tau, regressor, augmented, regressor.init(gen), l2, max_iter
    )
    predicted = 1.0 / (1.0 + np.exp(-regressor.scores(reg_params, augmented)))
    labels = dr_relevance(table, theta, tau, predicted)
    net = make_scorer(scorer, dataset.n_features, hidden=hidden)
    params = optimize_plackett_luce(
        net,
        _without_constant(regressor, reg_params),
        table.features,
        labels,
        table.blocks,
        theta,
        rng=gen,
        steps=steps,
        n_samples=n_samples,
        learning_rate=learning_rate,
        l2=l2,
    )
    data = {
        "sessions": table.n_sessions,
        "queries": int(table.query_index.size),
        "positions": table.n_positions,
        "clip": tau,
        "l2": l2,
        "steps": steps,
        "n_samples": n_samples,
        "learning_rate": learning_rate,
        **dict(provenance or {}),
    }
    return RankingModel(net, params, "dr", theta, data)
