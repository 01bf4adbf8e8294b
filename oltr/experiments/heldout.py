"""Held-out evaluation of rankers: NDCG@k of weight vectors (or any scorer) on a test set.

Online learning-to-rank papers report two curves: the quality of the lists
*shown* during learning (the runner's ``ndcg@10:avg``, Chaudhuri & Tewari 2016
§6 "average NDCG@10") and the quality of the *current* ranker on held-out
queries it never saw (the usual offline test NDCG). The second needs only the
learner's weights, never its feedback, so it is a pure function of
``(weights, data set)``:

.. math::
    \\text{heldout}(w) = \\frac{1}{|Q|}\\sum_{q ∈ Q}
        \\text{NDCG@}k(\\text{argsort}(−X_q w), R_q)

with the same tie rule as the learners (lower document index first) and the
same NDCG convention as the online trace (:func:`oltr.metrics.ndcg`, queries
without a relevant document score ``no_relevant``). All ``B`` runs and all
queries are scored with one matrix product.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.data.dataset import LetorDataset
from oltr.metrics import ndcg
from oltr.types import FloatArray

__all__ = ["HeldoutSet", "heldout_ndcg"]


def _weights(weights: ArrayLike, n_features: int) -> FloatArray:
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != n_features:
        raise ValueError(
            f"weights must have shape (B, {n_features}) (one row per run, one "
            f"column per feature of the data set), got {w.shape}"
        )
    if not np.isfinite(w).all():
        raise ValueError("weights must be finite")
    return w


@dataclass(frozen=True, eq=False)
class HeldoutSet:
    """A test set prepared once for repeated held-out evaluation (padded lists).

    Parameters
    ----------
    dataset
        The held-out queries (e.g. a LETOR fold's ``test.txt``, loaded with
        :func:`oltr.data.letor.load_letor`).
    k
        NDCG cutoff >= 1.
    no_relevant
        Value of a query without a relevant document (:func:`oltr.metrics.ndcg`).

    Examples
    --------
    >>> from oltr.data.synthetic import synthetic_letor
    >>> test = HeldoutSet(synthetic_letor(n_queries=20, n_features=5, rng=0))
    >>> test.evaluate(np.zeros((3, 5))).shape
    (3,)
    """

    dataset: LetorDataset
    k: int = 10
    no_relevant: float = 1.0
    _padded: tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.bool_]] = field(
        init=False, repr=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.dataset, LetorDataset):
            raise TypeError(f"dataset must be a LetorDataset, got {type(self.dataset).__name__}")
        if isinstance(self.k, bool) or not isinstance(self.k, int | np.integer) or self.k < 1:
            raise ValueError(f"k must be an int >= 1, got {self.k!r}")
        if self.dataset.n_queries < 1:
            raise ValueError("the held-out data set has no queries")
        object.__setattr__(self, "_padded", self.dataset.padded(np.arange(self.dataset.n_queries)))

    def per_query(self, weights: ArrayLike) -> FloatArray:
        """NDCG@k of each run's ranker on each query, shape (B, n_queries)."""
        x, _, _ = self._padded
        q, m, d = x.shape
        w = _weights(weights, d)
        return self._ndcg_of((x.reshape(q * m, d) @ w.T).T.reshape(w.shape[0], q, m))

    def per_query_scorer(self, score: Callable[[FloatArray], FloatArray]) -> FloatArray:
        """NDCG@k per run and query of any scorer: ``score(X)`` maps (n, d) rows to (B, n)."""
        x, _, _ = self._padded
        q, m, d = x.shape
        s = np.asarray(score(x.reshape(q * m, d)), dtype=np.float64)
        if s.ndim != 2 or s.shape[1] != q * m:
            raise ValueError(f"score must return shape (B, {q * m}), got {s.shape}")
        if not np.isfinite(s).all():
            raise ValueError("scores must be finite")
        return self._ndcg_of(s.reshape(s.shape[0], q, m))

    def evaluate_scorer(self, score: Callable[[FloatArray], FloatArray]) -> FloatArray:
        """Mean NDCG@k over the held-out queries of a scorer (see :meth:`per_query_scorer`)."""
        mean: FloatArray = self.per_query_scorer(score).mean(axis=-1)
        return mean

    def _ndcg_of(self, scores: FloatArray) -> FloatArray:
        _, r, mask = self._padded
        scores[:, ~mask] = -np.inf  # padding sorts last (and is masked out anyway)
        order = np.argsort(-scores, axis=-1, kind="stable")
        return np.asarray(
            ndcg(r, order, k=self.k, mask=mask, no_relevant=self.no_relevant), dtype=np.float64
        )

    def evaluate(self, weights: ArrayLike) -> FloatArray:
        """Mean NDCG@k over the held-out queries for each run, shape (B,)."""
        mean: FloatArray = self.per_query(weights).mean(axis=-1)
        return mean


def heldout_ndcg(
    weights: ArrayLike, dataset: LetorDataset, k: int = 10, *, no_relevant: float = 1.0
) -> FloatArray:
    """Mean NDCG@k over the queries of ``dataset`` of each linear ranker ``X w``.

    Parameters
    ----------
    weights
        Array of shape (B, d): one weight vector per run (``learner.weights_``).
    dataset
        The held-out queries, with ``d`` features.
    k
        NDCG cutoff >= 1.
    no_relevant
        Value of a query without a relevant document.

    Returns
    -------
    Array of shape (B,).

    References
    ----------
    Chaudhuri & Tewari (2016), §2 (NDCG_k with G(r) = 2^r − 1, D(i) = 1/log2(i + 1))
    and §6 (NDCG@10).

    Examples
    --------
    >>> ds = LetorDataset(features=np.array([[1.0], [0.0], [0.5]]),
    ...                   relevance=np.array([0, 1, 0]), qids=np.array([7]),
    ...                   offsets=np.array([0, 3]))
    >>> heldout_ndcg([[-1.0], [1.0]], ds).round(4).tolist()  # relevant doc first, then last
    [1.0, 0.5]
    """
    return HeldoutSet(dataset, k=k, no_relevant=no_relevant).evaluate(weights)
