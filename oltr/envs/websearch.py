"""Yue & Joachims' (2009) §5.2 web-search oracle: NDCG@10 of linear scorers and the logistic duel.

``P(w ≻ w') = σ(10 · (NDCG@10(w) − NDCG@10(w')))`` on a query's documents.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from oltr.clicks.click_models import RNGs
from oltr.envs.valuefns import Array, _draw_outcome, _float, logistic
from oltr.metrics import ndcg
from oltr.permutations import order_from_scores

__all__ = ["web_search_duel", "web_search_ndcg", "web_search_preference"]


def _scores(features: ArrayLike, w: ArrayLike) -> Array:
    x = np.asarray(features, dtype=np.float64)
    wt = np.asarray(w, dtype=np.float64)
    if x.ndim < 2:
        raise ValueError(f"features must have shape (..., n_docs, n_features), got {x.shape}")
    if wt.ndim < 1 or wt.shape[-1] != x.shape[-1]:
        raise ValueError(
            f"w must have shape (..., {x.shape[-1]}) to score features of shape "
            f"{x.shape}, got {wt.shape}"
        )
    for arr, name in ((x, "features"), (wt, "w")):
        if not np.isfinite(arr).all():
            raise ValueError(f"{name} must be finite")
    return _float(np.einsum("...md,...d->...m", x, wt))


def web_search_ndcg(
    features: ArrayLike,
    relevance: ArrayLike,
    w: ArrayLike,
    *,
    k: int = 10,
    mask: ArrayLike | None = None,
) -> Any:
    """NDCG@k of the ranking by descending score ``X·w`` (§5.2).

    NDCG@K = (1/N_K) Σ_{k<=K} (2^{r_k} − 1) / log(k + 1), as in §5.2 (the log
    base cancels in the ratio); ties in score go to the lower document index,
    a query without relevant documents scores 1 (``oltr.metrics.ndcg``).

    Parameters
    ----------
    features
        Document features of one query (n_docs, n_features), or a batch (..., n_docs, n_features).
    relevance
        Grades (..., n_docs).
    w
        Linear rankers (..., n_features).
    k
        Cutoff (default 10).
    mask
        Optional bool (..., n_docs), False marks padded documents.

    Returns
    -------
    ndcg
        Float array of the broadcast leading shape (a numpy scalar for one ranker).
    """
    # Padded documents may sit anywhere in the order: ndcg counts positions among real ones.
    order = order_from_scores(_scores(features, w))
    return ndcg(relevance, order, k=k, mask=mask)


def web_search_preference(
    features: ArrayLike,
    relevance: ArrayLike,
    w: ArrayLike,
    w_prime: ArrayLike,
    *,
    k: int = 10,
    scale: float = 10.0,
    mask: ArrayLike | None = None,
) -> Any:
    """P(w ≻ w') = σ(scale · (NDCG@k(w) − NDCG@k(w'))) on one query (§5.2: scale 10, k 10).

    Parameters
    ----------
    features, relevance, k, mask
        As in :func:`web_search_ndcg`.
    w, w_prime
        The two linear rankers, shape (..., n_features).
    scale
        Multiplier of the NDCG difference inside the logistic link (default 10).

    Returns
    -------
    probability
        Float array of the broadcast leading shape.

    Examples
    --------
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])          # doc 0 relevant, doc 1 not
    >>> p = web_search_preference(X, [1, 0], [1.0, 0.0], [0.0, 1.0])
    >>> bool(np.isclose(p, logistic(10 * (1 - 1 / np.log2(3)))))
    True
    """
    gap = np.asarray(web_search_ndcg(features, relevance, w, k=k, mask=mask)) - np.asarray(
        web_search_ndcg(features, relevance, w_prime, k=k, mask=mask)
    )
    return logistic(float(scale) * gap)[()]


def web_search_duel(
    features: ArrayLike,
    relevance: ArrayLike,
    w: ArrayLike,
    w_prime: ArrayLike,
    rng: RNGs,
    *,
    k: int = 10,
    scale: float = 10.0,
    mask: ArrayLike | None = None,
) -> Any:
    """One comparison under the §5.2 oracle: +1 if w' wins, −1 if w wins.

    Parameters
    ----------
    features, relevance, w, w_prime, k, scale, mask
        As in :func:`web_search_preference`.
    rng
        Seed/Generator, or one Generator per row of a 2-D batch.

    Returns
    -------
    outcome
        int8 of the batch shape (a numpy scalar for single rankers).
    """
    return _draw_outcome(
        np.asarray(
            web_search_preference(features, relevance, w, w_prime, k=k, scale=scale, mask=mask)
        ),
        rng,
    )
