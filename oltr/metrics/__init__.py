"""Ranking measures as pure functions of ``(relevance, order)``.

Truth first: ``relevance`` (..., m) holds each item's grade (integers ``0..n``;
non-negative floats accepted); ``order`` (..., m) lists item indices by position,
``order[..., 0]`` on top (the papers' σ⁻¹ or π); positions count from 1. Leading
axes of ``relevance``, ``order`` and ``mask`` broadcast, so one relevance vector
against ``B`` orders is one call. Results: float64 of the broadcast leading shape
(a numpy scalar for 1-D inputs). Padded lists carry ``mask`` (True = real item):
positions count real items only, padded indices may sit anywhere in an order, and
padded grades are ignored (NaN or -1 are fine there).

Gains are to be maximised, losses minimised; :data:`MEASURES` records which.
A list without the information a normalised measure needs (no relevant item for
NDCG and AP, no pair of different grades for AUC) gets the value ``no_relevant``.
The defaults give such a list the value of a perfect ranking (1 for the gains,
0 for the AUC loss), as Chaudhuri & Tewari (2015, §15) print: every order is
then optimal, so it adds no regret. Field conventions differ (Lerot, RankLib and
pyltr give 0; allRank and xgboost 1; the Yahoo tools 0.5); pass ``no_relevant=0.0``
for the first group, or ``np.nan`` to drop such lists with ``np.nanmean``.

Costs: O(m log m) per list to validate, O(m) to evaluate, except the pairwise
measures: O(m L) time and memory per list, L the number of distinct grades in the
call (n + 1 for integer grades, m at worst), in chunks of about 4M cells.

References: Chaudhuri & Tewari 2015 (AISTATS) §2–3, §15; Chaudhuri & Tewari 2016 §2;
Chapelle, Metzler, Zhang & Grinspan 2009 (CIKM) for ERR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.metrics.aggregation import (
        POSITION_WEIGHTS,
        position_loss,
        position_weights,
        spearman_rho,
    )
    from oltr.metrics.lists import exp2_gain, linear_gain, log2_discount
    from oltr.metrics.measures import MEASURES, Measure, from_scores, get_measure, resolve_measures
    from oltr.metrics.pairwise import auc, pairwise_loss, sum_loss
    from oltr.metrics.ranking import average_precision, dcg, err, ndcg, precision
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.metrics.aggregation": [
                "POSITION_WEIGHTS",
                "position_loss",
                "position_weights",
                "spearman_rho",
            ],
            "oltr.metrics.lists": ["exp2_gain", "linear_gain", "log2_discount"],
            "oltr.metrics.measures": [
                "MEASURES",
                "Measure",
                "from_scores",
                "get_measure",
                "resolve_measures",
            ],
            "oltr.metrics.pairwise": ["auc", "pairwise_loss", "sum_loss"],
            "oltr.metrics.ranking": ["average_precision", "dcg", "err", "ndcg", "precision"],
        },
    )

__all__ = [
    "MEASURES",
    "POSITION_WEIGHTS",
    "Measure",
    "auc",
    "average_precision",
    "dcg",
    "err",
    "exp2_gain",
    "from_scores",
    "get_measure",
    "linear_gain",
    "log2_discount",
    "ndcg",
    "pairwise_loss",
    "position_loss",
    "position_weights",
    "precision",
    "resolve_measures",
    "spearman_rho",
    "sum_loss",
]
