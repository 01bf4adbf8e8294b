"""The built-in demonstration: synthetic data, fixed rankers under every measure, an online run.

``oltr demo`` calls these functions; they need no downloads and no data files.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from oltr.data.synthetic import SyntheticLetor
from oltr.metrics import get_measure
from oltr.permutations import order_from_scores
from oltr.random import RNGLike, as_rng

__all__ = [
    "DEMO_MEASURES",
    "DEMO_REPRODUCTION",
    "Scorer",
    "fixed_ranker_scores",
    "score_fixed_rankers",
]

#: Every measure of :mod:`oltr.metrics`, with the cut-offs LTR papers report.
DEMO_MEASURES = ("ndcg@10", "dcg@10", "precision@5", "ap", "err@10", "auc", "sumloss", "pairwise")

#: The online part of the demo: a small, quick reproduction on synthetic data.
DEMO_REPRODUCTION = "learner-quality"

Scorer = Callable[[NDArray[np.float64]], NDArray[np.float64]]


def fixed_ranker_scores(dataset: SyntheticLetor, rng: RNGLike) -> dict[str, Scorer]:
    """Fixed (non-learning) rankers as scoring functions of a feature matrix ``(..., m, d)``.

    * ``random``: uniform noise (a uniformly random order);
    * ``best single feature``: the one feature whose ranking has the highest mean NDCG@10;
    * ``hidden linear model``: the linear part of the generator's latent score;
    * ``ideal`` is not a scorer (it sorts by the true relevance) and is added by
      :func:`score_fixed_rankers`.
    """
    gen = as_rng(rng)
    features, relevance, mask = dataset.padded(np.arange(dataset.n_queries))
    ndcg10 = get_measure("ndcg@10")
    per_feature = [
        float(np.mean(ndcg10(relevance, _order(features[..., j], mask), mask=mask)))
        for j in range(dataset.n_features)
    ]
    best = int(np.argmax(per_feature))
    return {
        "random": lambda x: gen.random(x.shape[:-1]),
        f"best single feature (#{best})": lambda x: x[..., best],
        "hidden linear model": lambda x: x @ dataset.hidden_weights,
    }


def _order(scores: NDArray[np.float64], mask: NDArray[np.bool_]) -> NDArray[np.intp]:
    # Padded documents get -inf so they sort last; the measures skip them anyway.
    return order_from_scores(np.where(mask, scores, -np.inf))


def score_fixed_rankers(dataset: SyntheticLetor, *, rng: RNGLike = 0) -> pd.DataFrame:
    """Mean of every demo measure over the queries, for each fixed ranker and the ideal order.

    Returns a table with one row per ranker and one column per measure
    (``get_measure(name).kind`` says whether higher or lower is better).
    """
    features, relevance, mask = dataset.padded(np.arange(dataset.n_queries))
    orders = {
        name: _order(score(features), mask)
        for name, score in fixed_ranker_scores(dataset, rng).items()
    }
    orders["ideal (sort by true relevance)"] = _order(relevance.astype(np.float64), mask)
    rows = {}
    for name, order in orders.items():
        rows[name] = {
            m: float(np.mean(get_measure(m)(relevance, order, mask=mask))) for m in DEMO_MEASURES
        }
    return pd.DataFrame.from_dict(rows, orient="index")
