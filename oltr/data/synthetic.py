"""A LETOR-like synthetic ranking data set with a known hidden scoring model.

The built-in default data of ``oltr`` and a test fixture: it looks like a
LETOR set (graded labels skewed towards 0, lists of varying length, features
min–max normalised per query, some queries without a relevant document) but
comes with the model that made the labels, so a test can check that a learner
approaches it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.data.dataset import LetorDataset, _read_only, normalize_per_query
from oltr.random import RNGLike, as_rng
from oltr.validation import check_memory

__all__ = ["GRADE_RATIO", "NONLINEARITY", "QUERY_SPREAD", "SyntheticLetor", "synthetic_letor"]

#: Each grade is this much rarer than the one below it: with 5 grades about
#: 60 / 24 / 10 / 4 / 1.5 % (MSLR-WEB30K has roughly 51 / 32 / 13 / 2 / 1 %).
GRADE_RATIO = 0.4

#: Spread of the per-query shift of the latent score, in units of the linear
#: score's standard deviation; it makes whole queries poor or rich in relevant
#: documents (MQ2008 has about a quarter of its queries with none).
QUERY_SPREAD = 1.0

#: Weight of the nonlinear term relative to the linear score's standard deviation.
NONLINEARITY = 0.5


@dataclass(frozen=True, eq=False, repr=False, kw_only=True)
class SyntheticLetor(LetorDataset):
    """A :class:`LetorDataset` that also carries the model its labels came from.

    Attributes
    ----------
    hidden_weights
        Array of shape (n_features,): the linear part ``w`` of the latent score.
    hidden_utility
        Array of shape (n_docs,): the noise-free latent score ``u`` of each
        document (linear plus nonlinear part, without query shift and noise).
    """

    hidden_weights: NDArray[np.float64]
    hidden_utility: NDArray[np.float64]

    def __post_init__(self, check_values: bool) -> None:
        super().__post_init__(check_values)
        weights = np.asarray(self.hidden_weights, dtype=np.float64)
        utility = np.asarray(self.hidden_utility, dtype=np.float64)
        if weights.shape != (self.n_features,):
            raise ValueError(
                f"hidden_weights must have shape ({self.n_features},), got {weights.shape}"
            )
        if utility.shape != (self.n_docs,):
            raise ValueError(
                f"hidden_utility must have shape ({self.n_docs},), got {utility.shape}"
            )
        object.__setattr__(self, "hidden_weights", _read_only(weights))
        object.__setattr__(self, "hidden_utility", _read_only(utility))

    def subset(self, query_indices: ArrayLike) -> SyntheticLetor:
        """A new data set holding queries ``query_indices`` in that order, with its hidden model."""
        base = super().subset(query_indices)
        rows, _ = self._rows_of(np.asarray(query_indices, dtype=np.int64).reshape(-1))
        return SyntheticLetor(
            features=base.features,
            relevance=base.relevance,
            qids=base.qids,
            offsets=base.offsets,
            source=base.source,
            check_values=False,
            hidden_weights=self.hidden_weights,
            hidden_utility=self.hidden_utility[rows],
        )


def _check_int(value: int, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _list_lengths(
    n_queries: int, min_docs: int, max_docs: int, rng: np.random.Generator
) -> NDArray[np.int64]:
    """Log-normal list lengths, median sqrt(min·max), ±2σ spanning [min, max], clipped."""
    median = np.sqrt(min_docs * max_docs)
    sigma = np.log(max_docs / min_docs) / 4
    lengths = np.rint(median * np.exp(sigma * rng.standard_normal(n_queries)))
    clipped: NDArray[np.int64] = np.clip(lengths, min_docs, max_docs).astype(np.int64)
    return clipped


def _standardised(values: NDArray[np.float64]) -> NDArray[np.float64]:
    sd = values.std()
    return (values - values.mean()) / sd if sd > 0 else np.zeros_like(values)


def synthetic_letor(
    *,
    n_queries: int = 200,
    n_features: int = 20,
    max_grade: int = 4,
    min_docs: int = 5,
    max_docs: int = 60,
    noise: float = 0.5,
    rng: RNGLike,
) -> SyntheticLetor:
    """A LETOR-like data set drawn from a hidden scoring model.

    For query ``q`` with ``m_q`` documents (log-normal, median
    ``sqrt(min_docs · max_docs)``, clipped to ``[min_docs, max_docs]``):

    1. raw features ``z A`` with ``z ~ N(0, I)`` and a random mixing matrix ``A``
       (correlated features); half of them exponentiated (heavy-tailed, like
       term counts and BM25); then min–max normalised per query, as LETOR's
       QueryLevelNorm does, giving the published features ``X``;
    2. latent utility ``u = (X − ½) w + c·σ·tanh(std(X v))`` with sparse
       Gaussian ``w`` (each weight nonzero with probability 0.6), Gaussian ``v``,
       ``σ = sd((X − ½) w)`` and ``c = NONLINEARITY`` (a mild nonlinearity);
    3. observed score ``t = u + b_q + ε`` with a query shift
       ``b_q ~ N(0, (QUERY_SPREAD·σ)²)`` and noise ``ε ~ N(0, (noise·σ)²)``;
    4. grades by cutting ``t`` at its empirical quantiles so that grade ``g``
       has share proportional to ``GRADE_RATIO**g`` (most documents 0, few at
       ``max_grade``, like MSLR).

    Ranking by ``X @ hidden_weights`` is far better than random, and ranking by
    ``hidden_utility`` better still, up to the noise.

    Parameters
    ----------
    n_queries
        Number of queries, >= 1.
    n_features
        Number of features, >= 1.
    max_grade
        Largest grade, >= 1.
    min_docs, max_docs
        List-length bounds, 1 <= min_docs <= max_docs.
    noise
        Standard deviation of the label noise relative to the linear score's, >= 0.
    rng
        Seed or Generator; the only source of randomness.

    Returns
    -------
    SyntheticLetor
        qids 1..n_queries, ``source=None``, and the hidden model.

    Examples
    --------
    >>> ds = synthetic_letor(n_queries=50, n_features=5, rng=0)
    >>> ds.n_queries, ds.n_features, int(ds.relevance.max()) <= 4
    (50, 5, True)
    >>> bool(ds.features.min() == 0.0 and ds.features.max() == 1.0)
    True
    """
    n_queries = _check_int(n_queries, "n_queries", 1)
    n_features = _check_int(n_features, "n_features", 1)
    max_grade = _check_int(max_grade, "max_grade", 1)
    min_docs = _check_int(min_docs, "min_docs", 1)
    max_docs = _check_int(max_docs, "max_docs", min_docs)
    if not np.isfinite(noise) or noise < 0:
        raise ValueError(f"noise must be a finite number >= 0, got {noise!r}")
    # Refused before allocating: the lists' lengths, the mixing matrix and its draws.
    check_memory(32 * n_queries, f"n_queries={n_queries} (the lengths of {n_queries} lists)")
    check_memory(
        16 * n_features**2, f"n_features={n_features} (a {n_features} x {n_features} mixing matrix)"
    )
    # One BLAS thread: a multi-threaded matrix product sums in an order that depends on the
    # thread count, and the data set must be the same bit for bit on every machine.
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        return _draw(n_queries, n_features, max_grade, min_docs, max_docs, noise, as_rng(rng))


def _draw(
    n_queries: int,
    n_features: int,
    max_grade: int,
    min_docs: int,
    max_docs: int,
    noise: float,
    rng: np.random.Generator,
) -> SyntheticLetor:
    """The draws of :func:`synthetic_letor`, its arguments checked."""
    lengths = _list_lengths(n_queries, min_docs, max_docs, rng)
    offsets = np.zeros(n_queries + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n_docs = int(offsets[-1])
    # The draws, the mixed features and their normalised copy, each n_docs x n_features.
    check_memory(
        16 * n_features**2 + 24 * n_docs * n_features,
        f"n_features={n_features} ({n_docs} documents x {n_features} features)",
    )

    mixing = np.eye(n_features) + rng.normal(
        0.0, 0.5 / np.sqrt(n_features), (n_features, n_features)
    )
    raw = rng.standard_normal((n_docs, n_features)) @ mixing
    heavy = rng.random(n_features) < 0.5
    raw[:, heavy] = np.exp(raw[:, heavy])
    qids = np.arange(1, n_queries + 1, dtype=np.int64)
    X = normalize_per_query(
        LetorDataset(features=raw, relevance=np.zeros(n_docs, np.int64), qids=qids, offsets=offsets)
    ).features

    weights = rng.standard_normal(n_features) * (rng.random(n_features) < 0.6)
    if not weights.any():
        weights[rng.integers(n_features)] = 1.0
    curve = rng.standard_normal(n_features)
    linear = (X - 0.5) @ weights
    scale = linear.std() if linear.std() > 0 else 1.0
    utility = linear + NONLINEARITY * scale * np.tanh(_standardised(X @ curve))
    shift = np.repeat(rng.normal(0.0, QUERY_SPREAD * scale, n_queries), lengths)
    observed = utility + shift + rng.normal(0.0, noise * scale, n_docs)

    shares = GRADE_RATIO ** np.arange(max_grade + 1)
    cuts = np.quantile(observed, np.cumsum(shares / shares.sum())[:-1])
    grades = np.searchsorted(cuts, observed, side="right").astype(np.int64)
    return SyntheticLetor(
        features=X,
        relevance=grades,
        qids=qids,
        offsets=offsets,
        check_values=False,
        hidden_weights=weights,
        hidden_utility=utility,
    )
