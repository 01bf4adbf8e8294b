"""Fit a ranker from a click log: naive, IPS (listwise and pairwise), DLA, DR, and the skyline.

Every learner works from the click and impression counts per (document,
position) (:func:`oltr.logs.position_counts`), so a fit over 10^6 sessions
costs what one over 10^4 does. With ``c[d, k]`` the clicks on document ``d``
at 0-based position ``k``, ``θ_k`` the examination propensities (θ_1 = 1),
``τ`` the clipping threshold and ``N`` the number of sessions:

``"naive"``
    clicks as relevance labels, no correction: the listwise loss with
    ``w_d = Σ_k c[d, k]`` (the baseline of Joachims et al. 2017 and Ai et al. 2018).
``"ips"``
    the listwise IPS loss of Ai, Bi, Luo, Guo & Croft 2018 (SIGIR, §4,
    ``l_IRM``): a softmax cross-entropy over the shown documents with
    ``w_d = Σ_k c[d, k] / max(θ_k, τ)``. Its expectation under the
    position-based model, ``E[c[d, k]] = shown[d, k] θ_k γ_d``, is the same loss
    with the true click probabilities ``γ`` as labels (exactly, for τ <= min θ).
``"ips-pairwise"``
    the Propensity SVM-Rank of Joachims, Swaminathan & Schnabel 2017 (WSDM,
    §4): every clicked document against every other shown document of its
    query, hinge weighted by ``1 / max(θ_k, τ)`` (the smooth hinge, for L-BFGS).
``"naive-pairwise"``
    the same without the weights.
``"dla"``
    the Dual Learning Algorithm (:mod:`oltr.learners.counterfactual.dla`).
``"dr"``
    the doubly robust estimator of Oosterhuis 2023 (:mod:`oltr.learners.counterfactual.dr`).

Counts do not say which documents each impression showed together, so a
query's list is every document the log showed for it: the displayed list of
the papers when the logger is deterministic, the union of its lists when it
is not. Documents never shown carry no click information and are left out
(DR, which has a regression model for them, keeps them).

The losses are divided by ``N`` (the skyline's by the number of queries), so
``l2`` means the same at every log size. Clipping (Strehl, Langford, Li &
Kakade 2010, NeurIPS: importance weights capped, trading bias for variance):
``clip=None`` takes τ = min(1, 10/√N), the threshold of Oosterhuis 2023's
experiments; ``clip=0`` turns it off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.errors import InputError
from oltr.learners.counterfactual.model import RankingModel, Scorer, make_scorer
from oltr.learners.counterfactual.objectives import (
    Blocks,
    listwise_softmax,
    pairs_against_query,
    pairwise_hinge,
)
from oltr.learners.counterfactual.training import (
    ClickTable,
    ScoreObjective,
    click_table,
    default_clip,
    minimize_scores,
    propensity_vector,
    regularised,
)
from oltr.logs import BoundLog, PositionCounts
from oltr.random import RNGLike, as_rng

__all__ = [
    "DEFAULT_L2",
    "DEFAULT_MAX_ITER",
    "LEARNERS",
    "fit_counterfactual",
    "fit_skyline",
    "ips_weights",
    "training_objective",
]

FloatArray = NDArray[np.float64]

#: The learners :func:`fit_counterfactual` knows.
LEARNERS = ("naive", "naive-pairwise", "ips", "ips-pairwise", "dla", "dr")
#: Default L2 penalty on the parameters (the losses are per session).
DEFAULT_L2 = 1e-4
#: Default iteration cap of L-BFGS.
DEFAULT_MAX_ITER = 500


def _check_options(l2: float, max_iter: int, clip: float | None) -> None:
    if not np.isfinite(l2) or l2 < 0:
        raise InputError(f"l2 must be >= 0, got {l2}")
    if max_iter < 1:
        raise InputError(f"max_iter must be >= 1, got {max_iter}")
    if clip is not None and not (0 <= clip <= 1):
        raise InputError(f"clip must be in [0, 1] (a lower bound on θ), got {clip}")


def ips_weights(clicks: FloatArray, theta: FloatArray, clip: float) -> FloatArray:
    """``w_d = Σ_k clicks[d, k] / max(θ_k, τ)``: a document's inverse-propensity-weighted clicks."""
    return clicks @ (1.0 / np.maximum(theta, clip))


def _loss(weights: FloatArray, blocks: Blocks, pairwise: bool, scale: float) -> ScoreObjective:
    if pairwise:
        i, j = pairs_against_query(weights, blocks)

        def pair_objective(scores: FloatArray) -> tuple[float, FloatArray]:
            value, grad = pairwise_hinge(scores, weights, i, j)
            return value * scale, grad * scale

        return pair_objective

    def list_objective(scores: FloatArray) -> tuple[float, FloatArray]:
        value, grad = listwise_softmax(scores, weights, blocks)
        return value * scale, grad * scale

    return list_objective


def _weights(
    table: ClickTable, learner: str, propensities: Any, clip: float | None
) -> tuple[FloatArray, FloatArray | None, float]:
    if learner.startswith("naive"):
        return table.clicks.sum(axis=1), None, 0.0
    theta = propensity_vector(propensities, table.n_positions, learner=learner)
    tau = default_clip(table.n_sessions) if clip is None else float(clip)
    return ips_weights(table.clicks, theta, tau), theta, tau


def training_objective(
    bound_or_counts: BoundLog | PositionCounts,
    dataset: LetorDataset,
    *,
    learner: str,
    scorer: Scorer,
    propensities: Any = None,
    clip: float | None = None,
    l2: float = DEFAULT_L2,
) -> tuple[Any, FloatArray]:
    """The function L-BFGS minimises for ``learner`` (naive/ips, listwise or pairwise).

    Returns ``fun(params) -> (value, gradient)`` and the documents' features it scores.
    """
    if learner not in ("naive", "naive-pairwise", "ips", "ips-pairwise"):
        raise InputError(f"learner {learner!r} has no single deterministic objective")
    table = click_table(bound_or_counts, dataset, shown_only=True)
    weights, _, _ = _weights(table, learner, propensities, clip)
    objective = _loss(weights, table.blocks, learner.endswith("pairwise"), 1 / table.n_sessions)
    return regularised(objective, scorer, table.features, l2), table.features


def fit_counterfactual(
    bound_or_counts: BoundLog | PositionCounts,
    dataset: LetorDataset,
    *,
    learner: str,
    propensities: Any = None,
    scorer: str = "linear",
    rng: RNGLike,
    l2: float = DEFAULT_L2,
    max_iter: int = DEFAULT_MAX_ITER,
    clip: float | None = None,
    hidden: int = 32,
    provenance: Mapping[str, Any] | None = None,
) -> RankingModel:
    """Fit a ranker to a click log with ``learner`` (see the module docstring).

    Parameters
    ----------
    bound_or_counts
        The log bound to ``dataset`` (:func:`oltr.logs.bind`) or its
        :class:`~oltr.logs.PositionCounts` on ``dataset``.
    dataset
        The data set holding the documents' features (its grades are not used).
    learner
        One of :data:`LEARNERS`.
    propensities
        θ per position: an array, a :class:`~oltr.estimators.PropensityEstimate`
        (its ``theta``), or None (only for ``"naive"``, ``"naive-pairwise"``
        and ``"dla"``, which estimates its own). Normalised so θ_1 = 1.
    scorer, hidden
        ``"linear"`` or ``"mlp"`` (one tanh layer of ``hidden`` units).
    rng
        Seed or generator: the MLP's initial weights, DR's sampled rankings.
    l2, max_iter, clip
        L2 penalty, L-BFGS iterations, propensity clipping τ (None: min(1, 10/√N)).
    provenance
        Extra entries for the model's ``data`` (log and data set names, ...).

    Returns
    -------
    RankingModel
        ``propensities`` holds the θ the learner used (DLA's estimate for "dla").
    """
    _check_options(l2, max_iter, clip)
    if learner not in LEARNERS:
        raise InputError(f"unknown learner {learner!r}; choose one of {', '.join(LEARNERS)}")
    gen = as_rng(rng)
    if learner == "dla":
        from oltr.learners.counterfactual.dla import fit_dla

        return fit_dla(
            bound_or_counts,
            dataset,
            scorer=scorer,
            rng=gen,
            l2=l2,
            max_iter=max_iter,
            clip=clip,
            hidden=hidden,
            provenance=provenance,
        )[0]
    if learner == "dr":
        from oltr.learners.counterfactual.dr import fit_dr

        return fit_dr(
            bound_or_counts,
            dataset,
            propensities=propensities,
            scorer=scorer,
            rng=gen,
            l2=l2,
            max_iter=max_iter,
            clip=clip,
            hidden=hidden,
            provenance=provenance,
        )
    table = click_table(bound_or_counts, dataset, shown_only=True)
    weights, theta, tau = _weights(table, learner, propensities, clip)
    net = make_scorer(scorer, dataset.n_features, hidden=hidden)
    objective = _loss(weights, table.blocks, learner.endswith("pairwise"), 1 / table.n_sessions)
    params = minimize_scores(
        objective, net, table.features, net.init(gen), l2=l2, max_iter=max_iter, what=learner
    )
    data = {
        "sessions": table.n_sessions,
        "queries": int(table.query_index.size),
        "positions": table.n_positions,
        "clip": tau,
        "l2": l2,
        **dict(provenance or {}),
    }
    return RankingModel(net, params, learner, theta, data)


def fit_skyline(
    dataset: LetorDataset,
    *,
    scorer: str = "linear",
    rng: RNGLike,
    l2: float = DEFAULT_L2,
    max_iter: int = DEFAULT_MAX_ITER,
    hidden: int = 32,
    provenance: Mapping[str, Any] | None = None,
) -> RankingModel:
    """The full-information ranker: the listwise softmax loss on the true grades.

    ``w_d = 2^{y_d} − 1`` (the gain of DCG), one list per query, divided by
    the number of queries: the "skyline" that counterfactual learners are
    measured against in Ai et al. 2018 and Oosterhuis 2023.
    """
    _check_options(l2, max_iter, None)
    gen = as_rng(rng)
    net = make_scorer(scorer, dataset.n_features, hidden=hidden)
    gains = np.exp2(np.asarray(dataset.relevance, dtype=np.float64)) - 1.0
    blocks = Blocks.from_offsets(dataset.offsets)
    objective = _loss(gains, blocks, False, 1 / dataset.n_queries)
    features = np.asarray(dataset.features, dtype=np.float64)
    params = minimize_scores(
        objective, net, features, net.init(gen), l2=l2, max_iter=max_iter, what="skyline"
    )
    data = {"queries": dataset.n_queries, "l2": l2, **dict(provenance or {})}
    return RankingModel(net, params, "skyline", None, data)
