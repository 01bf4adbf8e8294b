"""The click-based online learning-to-rank protocol: offline and online NDCG@10 per impression.

For one training set, one held-out set, one feedback model and one learner batched
over ``B`` runs, each impression ``t = 1..T``:

1. a training query is drawn uniformly (one query stream shared by the runs);
2. the learner ranks it (``(B, m)`` orders; the top 10 are the shown page);
3. the feedback model reveals what it reveals (clicks, or top-k labels);
4. the learner updates.

Two measures, as in Schuth et al. 2016 §5 and Oosterhuis & de Rijke 2018 §6:

* **offline**: held-out NDCG@10 of the current ranker (``learner.weights_``, or
  ``learner.score_features`` for a :class:`~oltr.learners.base.FeatureScorer` such as
  a neural ranker) on the test queries, at the given checkpoints;
* **online**: the discounted cumulative NDCG@10 of the shown pages,
  ``Σ_t 0.9995^{t−1} NDCG@10_t`` (Hofmann et al. 2013's discount).

A learner without weights (the random ranker) is evaluated offline by random
permutations of the test lists, one per run and checkpoint.

References
----------
Schuth, Oosterhuis, Whiteson & de Rijke 2016, WSDM, §5; Oosterhuis & de Rijke 2018,
CIKM, §6; Hofmann, Whiteson & de Rijke 2013, Information Retrieval 16(1), §5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.experiments.heldout import HeldoutSet
from oltr.feedback import FeedbackModel
from oltr.learners.base import FeatureScorer, Learner
from oltr.types import Context, FloatArray, RunGenerators

__all__ = ["ONLINE_DISCOUNT", "ClickRunResult", "log_checkpoints", "run_click_protocol"]

#: Discount of the online (cumulative) NDCG@10 (Hofmann et al. 2013; Oosterhuis & de Rijke 2018).
ONLINE_DISCOUNT = 0.9995


@dataclass(frozen=True)
class ClickRunResult:
    """Per-run results of one learner: offline NDCG@10 at checkpoints and online NDCG@10."""

    checkpoints: NDArray[np.int64]
    offline: FloatArray  # (B, n_checkpoints)
    online: FloatArray  # (B,)


def log_checkpoints(horizon: int, n: int = 20) -> NDArray[np.int64]:
    """About ``n`` log-spaced impressions in ``[1, horizon]``, always including the last.

    >>> log_checkpoints(10_000, 5).tolist()
    [1, 10, 100, 1000, 10000]
    """
    pts = np.unique(np.round(np.logspace(0, np.log10(horizon), n)).astype(np.int64))
    return np.asarray(pts, dtype=np.int64)


def _ideal_dcg(relevance: NDArray[Any], offsets: NDArray[Any], k: int) -> FloatArray:
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    out = np.empty(offsets.size - 1)
    for q in range(out.size):
        g = np.sort(2.0 ** relevance[offsets[q] : offsets[q + 1]] - 1.0)[::-1][:k]
        out[q] = float(g @ disc[: g.size])
    return out


def _random_offline(test: HeldoutSet, rngs: RunGenerators) -> FloatArray:
    """Held-out NDCG@10 of a uniformly random permutation per run (the random ranker)."""
    x, r, mask = test.dataset.padded(np.arange(test.dataset.n_queries))
    keys = rngs.map(lambda g: g.random(mask.shape))
    keys[:, ~mask] = np.inf
    order = np.argsort(keys, axis=-1)
    rel = np.take_along_axis(np.broadcast_to(r, order.shape), order, axis=-1)[..., : test.k]
    disc = 1.0 / np.log2(np.arange(2, rel.shape[-1] + 2))
    dcg = ((2.0**rel - 1.0) * disc).sum(-1)
    ideal = np.sort(2.0**r - 1.0, axis=-1)[:, ::-1][:, : test.k] @ disc
    return np.asarray((dcg / ideal).mean(-1), dtype=np.float64)


def run_click_protocol(
    learner: Learner[Any],
    train: LetorDataset,
    test: HeldoutSet,
    feedback: FeedbackModel,
    *,
    horizon: int,
    checkpoints: NDArray[np.int64],
    query_rng: np.random.Generator,
    feedback_rngs: RunGenerators,
    eval_rngs: RunGenerators | None = None,
    k: int = 10,
) -> ClickRunResult:
    """Run ``learner`` (B runs) for ``horizon`` impressions; see the module docstring.

    Parameters
    ----------
    learner
        A fresh learner with ``n_runs = B``; its feedback requirement must be met by
        ``feedback``.
    train, test
        Training queries (every query needs a relevant document) and the held-out set.
    feedback
        The feedback model (e.g. ``ClickFeedbackModel``), drawing from ``feedback_rngs``.
    horizon
        Number of impressions T >= 1.
    checkpoints
        Increasing impressions in ``[1, T]`` at which the offline NDCG is taken.
    query_rng
        Draws the shared query stream.
    feedback_rngs
        One generator per run for the user's clicks.
    eval_rngs
        Per-run generators for the random ranker's offline evaluation.
    k
        NDCG cutoff and page length (10).
    """
    if not learner.requires.satisfied_by(feedback.provides):
        raise ValueError(f"{type(learner).__name__} needs {learner.requires.describe()}")
    cps = np.asarray(checkpoints, dtype=np.int64)
    if cps.size == 0 or cps[0] < 1 or cps[-1] > horizon or (np.diff(cps) <= 0).any():
        raise ValueError(f"checkpoints must increase within [1, {horizon}], got {cps.tolist()}")
    b = learner.n_runs
    ideal = _ideal_dcg(np.asarray(train.relevance), np.asarray(train.offsets), k)
    if (ideal <= 0).any():
        raise ValueError("every training query needs a relevant document (drop_no_relevant)")
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    queries = query_rng.integers(train.n_queries, size=horizon)
    offline = np.empty((b, cps.size))
    online = np.zeros(b)
    has_weights = hasattr(type(learner), "weights_")
    weight = 1.0
    ci = 0
    for t in range(1, horizon + 1):
        q = int(queries[t - 1])
        x, rel = train.query(q)
        ctx = Context(t=t, n_items=x.shape[0], features=x, qid=q)
        orders = learner.rank(ctx)
        fb = feedback.observe(orders, rel, rngs=feedback_rngs).restrict(learner.requires)
        learner.update(ctx, orders, fb)
        top = rel[orders[:, :k]]
        # Row by row (not a matrix-vector product, whose BLAS kernel depends on B).
        online += weight * (((2.0**top - 1.0) * disc[: top.shape[1]]).sum(axis=1) / ideal[q])
        weight *= ONLINE_DISCOUNT
        if t == cps[ci]:
            if isinstance(learner, FeatureScorer):
                offline[:, ci] = test.evaluate_scorer(learner.score_features)
            elif has_weights:
                offline[:, ci] = test.evaluate(np.asarray(learner.weights_))  # type: ignore[attr-defined]
            else:
                offline[:, ci] = _random_offline(test, eval_rngs or feedback_rngs)
            ci = min(ci + 1, cps.size - 1)
    return ClickRunResult(cps, offline, online)
