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
queries are scored row by row (the same arithmetic for any number of runs) and
each list is sorted by a compiled loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numba
import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.data.dataset import LetorDataset
from oltr.learners.linear import batch_scores
from oltr.metrics import exp2_gain, log2_discount
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


@numba.njit(cache=True, nogil=True)
def _ndcg_kernel(
    scores: Any, offsets: Any, gains: Any, ideal: Any, disc: Any, no_relevant: float, out: Any
) -> None:  # pragma: no cover
    """NDCG@k of every run on every query: stable descending sort of each list's scores."""
    n_runs = scores.shape[0]
    n_q = offsets.shape[0] - 1
    k = disc.shape[0]
    for b in range(n_runs):
        for q in range(n_q):
            lo, hi = offsets[q], offsets[q + 1]
            if ideal[q] <= 0.0:
                out[b, q] = no_relevant
                continue
            neg = np.empty(hi - lo)
            for i in range(hi - lo):
                neg[i] = -scores[b, lo + i]
            order = np.argsort(neg, kind="mergesort")  # ties: lower document index first
            dcg = 0.0
            for i in range(min(k, hi - lo)):
                dcg += gains[lo + order[i]] * disc[i]
            out[b, q] = dcg / ideal[q]


@dataclass(frozen=True, eq=False)
class HeldoutSet:
    """A test set prepared once for repeated held-out evaluation.

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
    _lists: tuple[NDArray[np.int64], FloatArray, FloatArray, FloatArray] = field(
        init=False, repr=False
    )

    def __post_init__(self) -> None:
        if not isinstance(self.dataset, LetorDataset):
            raise TypeError(f"dataset must be a LetorDataset, got {type(self.dataset).__name__}")
        if isinstance(self.k, bool) or not isinstance(self.k, int | np.integer) or self.k < 1:
            raise ValueError(f"k must be an int >= 1, got {self.k!r}")
        if self.dataset.n_queries < 1:
            raise ValueError("the held-out data set has no queries")
        offsets = np.ascontiguousarray(self.dataset.offsets, dtype=np.int64)
        gains = np.asarray(exp2_gain(np.asarray(self.dataset.relevance, dtype=np.float64)))
        disc = np.asarray(log2_discount(np.arange(1, int(self.k) + 1, dtype=np.float64)))
        ideal = np.empty(offsets.size - 1)
        for q in range(ideal.size):
            top = np.sort(gains[offsets[q] : offsets[q + 1]])[::-1][: int(self.k)]
            ideal[q] = float(np.sum(top * disc[: top.size]))
        object.__setattr__(self, "_lists", (offsets, gains, ideal, disc))

    def per_query(self, weights: ArrayLike) -> FloatArray:
        """NDCG@k of each run's ranker on each query, shape (B, n_queries)."""
        features = np.asarray(self.dataset.features, dtype=np.float64)
        w = _weights(weights, features.shape[1])
        # Row by row (batch_scores), so a run's value does not depend on its batch.
        return self._ndcg_of(batch_scores(np.ascontiguousarray(w), features))

    def per_query_scorer(self, score: Callable[[FloatArray], FloatArray]) -> FloatArray:
        """NDCG@k per run and query of any scorer: ``score(X)`` maps (n, d) rows to (B, n)."""
        n = self.dataset.features.shape[0]
        s = np.asarray(score(np.asarray(self.dataset.features, dtype=np.float64)))
        if s.ndim != 2 or s.shape[1] != n:
            raise ValueError(f"score must return shape (B, {n}), got {s.shape}")
        if not np.isfinite(s).all():
            raise ValueError("scores must be finite")
        return self._ndcg_of(s.astype(np.float64))

    def evaluate(self, weights: ArrayLike) -> FloatArray:
        """Mean NDCG@k over the held-out queries for each run, shape (B,)."""
        mean: FloatArray = self.per_query(weights).mean(axis=-1)
        return mean

    def evaluate_scorer(self, score: Callable[[FloatArray], FloatArray]) -> FloatArray:
        """Mean NDCG@k over the held-out queries of a scorer (see :meth:`per_query_scorer`)."""
        mean: FloatArray = self.per_query_scorer(score).mean(axis=-1)
        return mean

    def _ndcg_of(self, scores: FloatArray) -> FloatArray:
        offsets, gains, ideal, disc = self._lists
        out = np.empty((scores.shape[0], ideal.size))
        _ndcg_kernel(
            np.ascontiguousarray(scores), offsets, gains, ideal, disc, float(self.no_relevant), out
        )
        return out


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
