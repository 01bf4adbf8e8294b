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

The ranker's softmax runs over the displayed list, and so, by default
(``per_list=True``), does the propensity softmax: a list of ``L`` documents
spreads ``softmax(g)`` over its own ``L`` positions. With calibrated relevance
ratios (the premise of the paper's unbiasedness argument, §4) each list's
expected term is then a cross-entropy whose minimiser is ``softmax(g) ∝ θ`` on
its own positions, so ``g = log θ`` minimises every list's term at once,
whatever the lengths. ``per_list=False`` runs one softmax over all ``K``
positions, as ULTRA's ``DenoisingNet`` does over lists padded to the cutoff:
it counts a deep position's clicks against every list, also those that never
reach it, and scales θ_k down by the share of the mass in lists that reach
``k``. On MQ2008 (about half of every fold's training queries have at most 8
documents) with the true relevance ratios at η = 0.5 it gives θ_9 ≈ 0.17 for
the true 0.33 (per list: 0.33). In the alternation the too-small deep
propensities inflate the ranker's weights there, whose flatter softmax
steepens θ further, down to a self-consistent wrong point (θ_10 ≈ 0.10 for
0.32) where the ranker falls below the naive one (ULTR reproduction, MQ2008, 5
folds × 3 runs, 10^5 sessions, NDCG@10: 0.587 against naive 0.663 at η = 0.5,
0.600 against 0.638 at η = 1; per list: 0.691 and 0.689, IPS with the true θ
0.693 and 0.694).

Started from θ = 1, the per-list alternation has another wrong fixed point:
when the naive ranker is sharp its relevance ratios are too large and make θ
too flat, the ranker then stays near the naive one, and the two agree on θ ≈
naive. Measured on MQ2008 at η = 2 and 10^6 sessions (τ = 0.01): one of two
logs of Fold 2 stopped at θ_2 ≈ 0.74 (true 0.25; NDCG@10 0.611, naive 0.601),
and the reproduction closed 0.49 and 0.23 of the naive-to-skyline gap on Folds
1 and 2 (3 runs each). So the per-list alternation starts, unless given
``start``, from the θ of the all-``K`` alternation (20 rounds), which lies on
the steep side: that closed 0.83 and 1.04 of the gap there (all-``K`` alone:
0.67 and 0.98), and in the reproduction above (η = 0.5, 1, 2; 10^4 and 10^5)
it was never below naive and within 0.01 of the all-``K`` result at η = 2.

Where the true θ_k fall below τ the clipped ranker also under-corrects the
deep positions and biases θ towards 1 (a synthetic world whose linear ranker
can represent the click probabilities, η = 2, N = 10^5: θ_2 18 % too high at τ
= 0.03, within 3 % at τ = 0.01). Both are the propensity overestimation that
Luo et al. 2023 (arXiv:2305.09918, "Unconfounded Propensity Estimation for
Unbiased Ranking") attribute to the relevance confounder under a strong
logger.

The paper runs both losses through stochastic gradient steps together; here
the two minimisations alternate (block coordinate descent on the same pair of
objectives): the ranker by L-BFGS from the previous ranker, the propensities
by the minimiser of ``l_IPM`` over per-position logits
(:func:`dla_propensity_step`). Both weights are clipped at ``1/τ`` (ULTRA's
``max_propensity_weight``). It stops when θ moves less than ``tol`` or after
``rounds`` rounds. The alternation converges linearly and can be slow: per
list from θ = 1, in the synthetic world above at η = 0.5, 20 rounds left θ_10
25 % too high and 200 reached it within 5 %.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.errors import InputError, NumericalError
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
#: Rounds of the alternation over all K and per list (slower to converge; module docstring).
DEFAULT_ROUNDS = 20
PER_LIST_ROUNDS = 200
#: Fixed-point iterations of the propensity step and their stopping change in θ.
PROPENSITY_ITERATIONS = 1000
PROPENSITY_TOL = 1e-10


def dla_propensity_step(
    table: ClickTable, scores: FloatArray, clip: float, *, per_list: bool = False
) -> FloatArray:
    """The minimiser of ``l_IPM`` given the ranker's scores: θ (K,), θ_1 = 1.

    ``per_list=False`` (the default): one softmax over all ``K`` positions, as
    ULTRA's ``DenoisingNet`` over lists padded to the cutoff, whose minimiser
    is ``θ_k ∝ Σ_q W[q, k]``. ``per_list=True``: each list's softmax over its
    own positions, as follows.

    With ``W[q, k] = Σ_{d ∈ q} c[d, k] · min(r_1/r_d, 1/τ)`` (``r_1/r_d`` as in
    the module docstring) and ``L_q`` the length of query ``q``'s displayed
    list (its deepest position with an impression), the loss is

    ``l_IPM(g) = −Σ_q Σ_{k ≤ L_q} W[q, k] log( exp(g_k) / Σ_{j ≤ L_q} exp(g_j) )``,

    convex in ``g``. Its stationary condition ``Σ_q W[q, k] = θ_k Σ_{q: L_q ≥ k}
    M_q / Z_{L_q}`` (``M_q = Σ_k W[q, k]``, ``Z_L = Σ_{j ≤ L} θ_j``, ``θ = exp(g)``)
    is solved by the fixed-point iteration ``θ_k ← Σ_q W[q, k] / Σ_{q: L_q ≥ k}
    M_q / Z_{L_q}(θ)``: the minorise-maximise iteration of a Luce choice model
    whose choice sets are the lists' positions (Hunter 2004, Ann. Statist.,
    "MM algorithms for generalized Bradley-Terry models"), which never
    increases the loss. When every list has ``K`` positions the first step is
    already the minimiser, ``θ_k ∝ Σ_q W[q, k]``.
    """
    blocks = table.blocks
    seg = blocks.segment
    top = np.maximum.reduceat(scores, blocks.starts)
    rel = np.exp(scores - top[seg])
    first = np.add.reduceat(table.shown[:, 0] * rel, blocks.starts) / table.impressions
    ratio = first[seg] / rel
    if clip > 0:
        ratio = np.minimum(ratio, 1.0 / clip)
    if not per_list:
        mass = ratio @ table.clicks
        if mass[0] <= 0:
            return np.ones_like(mass)
        theta = mass / mass[0]
    else:
        theta = _per_list_minimiser(table, ratio)
    positive = theta[theta > 0]
    if not np.isfinite(theta).all() or positive.size == 0:
        raise NumericalError(
            "dla: the propensity step left no finite positive propensity (the ranker's "
            "scores overflow exp: raise l2 or the clipping threshold)"
        )
    # A position without clicks keeps the smallest positive estimate, never 0.
    return np.asarray(np.where(theta > 0, theta, positive.min()), dtype=np.float64)


def _per_list_minimiser(table: ClickTable, ratio: FloatArray) -> FloatArray:
    """θ minimising ``l_IPM`` with each list's softmax over its own positions (MM iteration)."""
    blocks = table.blocks
    n_pos = table.n_positions
    weights = np.zeros((blocks.starts.size, n_pos))
    np.add.at(weights, blocks.segment, ratio[:, None] * table.clicks)
    reached = np.add.reduceat(table.shown, blocks.starts, axis=0) > 0
    lengths = np.where(reached.any(axis=1), n_pos - np.argmax(reached[:, ::-1], axis=1), 0)
    by_length = np.zeros((n_pos + 1, n_pos))  # row L: the W of the lists of length L
    np.add.at(by_length, lengths, weights)
    mass = by_length.sum(axis=0)
    if mass[0] <= 0:
        return np.ones(n_pos)
    list_mass = by_length.sum(axis=1)[1:]  # M summed per length 1..K
    theta = mass / mass[0]
    for _ in range(PROPENSITY_ITERATIONS):
        per_length = list_mass / np.cumsum(theta)  # M_L / Z_L, L = 1..K
        reach = np.cumsum(per_length[::-1])[::-1]  # Σ over lengths L ≥ k
        new = np.divide(mass, reach, out=np.zeros(n_pos), where=reach > 0)
        new = new / new[0]
        moved = float(np.abs(new - theta).max())
        theta = new
        if moved < PROPENSITY_TOL:
            break
    return np.asarray(theta, dtype=np.float64)


def check_start(start: Any, n_positions: int) -> FloatArray:
    """A starting θ: finite, positive, ``n_positions`` long (longer is cut), scaled to θ_1 = 1."""
    theta = np.asarray(start, dtype=np.float64).ravel()
    if theta.size < n_positions or not (np.isfinite(theta) & (theta > 0)).all():
        raise InputError(
            f"dla: start must hold {n_positions} finite positive propensities, got {theta.size}"
            " values" + ("" if np.isfinite(theta).all() else " with non-finite ones")
        )
    return np.asarray(theta[:n_positions] / theta[0], dtype=np.float64)


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
    rounds: int | None = None,
    tol: float = 1e-4,
    per_list: bool = True,
    start: FloatArray | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> tuple[RankingModel, FloatArray]:
    """Fit a ranker and the examination propensities with DLA (see the module docstring).

    Parameters
    ----------
    clip
        τ: both inverse weights are capped at ``1/τ``; default ``10/√N``
        (:func:`~oltr.learners.counterfactual.training.default_clip`).
    rounds, tol
        The alternation stops after ``rounds`` rounds (default 200 per list,
        20 over all ``K``), or once no θ_k moved by more than ``tol`` in a round.
    per_list
        Normalise the propensity softmax over each list's own positions
        (:func:`dla_propensity_step`) rather than over all ``K``; see the
        module docstring for what each does on lists shorter than ``K``.
        Without ``start`` it starts from the θ of the all-``K`` alternation
        (20 rounds, the same options), which lies on the steep side of its
        flat fixed point.
    start
        θ (K,) to start the alternation from; over all ``K`` the default is
        θ = 1 (the naive ranker).

    Returns
    -------
    model, theta
        The ranker (its ``propensities`` are ``theta``) and θ (K,), θ_1 = 1.
    """
    if per_list and start is None:
        start = fit_dla(
            bound_or_counts, dataset, scorer=scorer, rng=rng, l2=l2, max_iter=max_iter,
            clip=clip, hidden=hidden, rounds=DEFAULT_ROUNDS, tol=tol, per_list=False,
        )[1]  # fmt: skip
    if rounds is None:
        rounds = PER_LIST_ROUNDS if per_list else DEFAULT_ROUNDS
    gen = as_rng(rng)
    table = click_table(bound_or_counts, dataset, shown_only=True)
    tau = default_clip(table.n_sessions) if clip is None else float(clip)
    net = make_scorer(scorer, dataset.n_features, hidden=hidden)
    params = net.init(gen)
    theta = np.ones(table.n_positions) if start is None else check_start(start, table.n_positions)
    theta0 = theta
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
        scores = net.scores(params, table.features)
        new_theta = dla_propensity_step(table, scores, tau, per_list=per_list)
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
        "per_list": per_list,
        **({"start": [float(t) for t in theta0]} if start is not None else {}),
        **dict(provenance or {}),
    }
    return RankingModel(net, params, "dla", theta, data), theta
