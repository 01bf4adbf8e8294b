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

A ranker without a model (the random ranker) is scored by drawing a uniformly
random permutation of every test list per run (:meth:`HeldoutSet.evaluate_random`,
from explicit per-run generators), through the same kernel.

The runner's held-out tables (``RunSetSpec.heldout`` and ``RunSetSpec.heldouts``)
are checked (:func:`check_heldout`), named (:func:`heldout_column`) and loaded
(:func:`load_heldout`) here, so every held-out number of the package comes from
this one module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.data.dataset import LetorDataset
from oltr.data.letor import load_letor
from oltr.data.normalization import check_normalize
from oltr.kernels import njit
from oltr.learners.base import FeatureScorer
from oltr.learners.linear import batch_scores
from oltr.metrics import exp2_gain, log2_discount
from oltr.permutations.counting import COUNTING_UP_TO, order_by_counting
from oltr.types import FloatArray, RunGenerators
from oltr.validation import check_scalar

__all__ = [
    "HELDOUT_DEFAULTS",
    "HeldoutSet",
    "check_heldout",
    "check_heldouts",
    "evaluate_learner",
    "heldout_column",
    "heldout_ndcg",
    "load_heldout",
]

#: Keys of a held-out table and their defaults: the keyword arguments of
#: :func:`oltr.data.letor.load_letor` (``path`` is required), the NDCG cutoff
#: ``k`` and the value ``no_relevant`` of a query without a relevant document.
HELDOUT_DEFAULTS: dict[str, Any] = {
    "path": None,
    "group_file": None,
    "n_features": None,
    "normalize": "auto",
    "drop_no_relevant": False,
    "k": 10,
    "no_relevant": 1.0,
}


def check_heldout(
    heldout: Mapping[str, Any] | None, *, where: str = "heldout"
) -> dict[str, Any] | None:
    """Validate a held-out table; return it with every default filled in (None stays None).

    Filling the defaults makes equal settings equal specs (and equal run-set
    ids), however they were written. Files are not opened here. ``where``
    prefixes the messages (``heldouts.test`` for a named table).

    >>> check_heldout({"path": "test.txt", "k": 5})["no_relevant"]
    1.0
    >>> check_heldout({"path": "test.txt", "K": 5})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: heldout: unknown key 'K'; valid: path, group_file, n_features, ...
    """
    if heldout is None:
        return None
    if not isinstance(heldout, Mapping):
        raise TypeError(f"{where} must be a dict or None, got {type(heldout).__name__}")
    unknown = [key for key in heldout if key not in HELDOUT_DEFAULTS]
    if unknown:
        raise ValueError(
            f"{where}: unknown key {unknown[0]!r}; valid: {', '.join(HELDOUT_DEFAULTS)}"
        )
    out = {**HELDOUT_DEFAULTS, **heldout}
    for key in ("path", "group_file"):
        value = out[key]
        if (value is not None or key == "path") and (not isinstance(value, str) or not value):
            raise TypeError(f"{where}.{key} must be a file path (a non-empty str), got {value!r}")
    if not isinstance(out["drop_no_relevant"], bool):
        raise TypeError(f"{where}.drop_no_relevant must be a bool, got {out['drop_no_relevant']!r}")
    out["normalize"] = check_normalize(out["normalize"], f"{where}.normalize")
    if out["n_features"] is not None:
        out["n_features"] = int(
            check_scalar(out["n_features"], f"{where}.n_features", low=1, integer=True)
        )
    out["k"] = int(check_scalar(out["k"], f"{where}.k", low=1, integer=True))
    out["no_relevant"] = float(check_scalar(out["no_relevant"], f"{where}.no_relevant"))
    return out


def check_heldouts(
    heldouts: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, dict[str, Any]] | None:
    """Validate named held-out tables (name -> table, see :func:`check_heldout`).

    Names are non-empty and hold no ``:`` (they become part of a column name).

    >>> sorted(check_heldouts({"test": {"path": "t.txt"}, "vali": {"path": "v.txt"}}))
    ['test', 'vali']
    """
    if heldouts is None:
        return None
    if not isinstance(heldouts, Mapping) or not heldouts:
        raise TypeError(f"heldouts must be a non-empty dict of name -> table, got {heldouts!r}")
    out: dict[str, dict[str, Any]] = {}
    for name, table in heldouts.items():
        if not isinstance(name, str) or not name or ":" in name:
            raise ValueError(f"heldouts: a name must be a non-empty str without ':', got {name!r}")
        checked = check_heldout(table, where=f"heldouts.{name}")
        if checked is None:
            raise TypeError(f"heldouts.{name} must be a table, got None")
        out[name] = checked
    return out


def heldout_column(k: int, name: str | None = None) -> str:
    """Name of a held-out trace column: ``heldout:ndcg@k``, or ``heldout:NAME:ndcg@k``.

    >>> heldout_column(10), heldout_column(10, "test")
    ('heldout:ndcg@10', 'heldout:test:ndcg@10')
    """
    return f"heldout:ndcg@{k}" if name is None else f"heldout:{name}:ndcg@{k}"


def load_heldout(table: Mapping[str, Any], *, where: str = "heldout") -> HeldoutSet:
    """The :class:`HeldoutSet` of a checked table (:func:`check_heldout`); files must exist."""
    for key in ("path", "group_file"):
        if table[key] is not None and not Path(table[key]).is_file():
            raise ValueError(f"{where}.{key}: no such file: {table[key]}")
    dataset = load_letor(
        table["path"],
        group_file=table["group_file"],
        n_features=table["n_features"],
        normalize=table["normalize"],
        drop_no_relevant=table["drop_no_relevant"],
    )
    return HeldoutSet(dataset, k=table["k"], no_relevant=table["no_relevant"])


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


@njit(nogil=True)
def _ndcg_kernel(
    scores: Any, offsets: Any, gains: Any, ideal: Any, disc: Any, no_relevant: float, out: Any
) -> None:  # pragma: no cover
    """NDCG@k of every run on every query: stable descending sort of each list's scores.

    Lists of up to :data:`~oltr.permutations.counting.COUNTING_UP_TO` items with
    comparable scores are ordered by counting, others by a merge sort (which puts
    NaN last); both give the stable order, ties by lower document index first.
    """
    n_runs = scores.shape[0]
    n_q = offsets.shape[0] - 1
    k = disc.shape[0]
    longest = 0
    for q in range(n_q):
        longest = max(longest, offsets[q + 1] - offsets[q])
    neg_buffer = np.empty(longest)
    order_buffer = np.empty(longest, dtype=np.intp)
    for b in range(n_runs):
        for q in range(n_q):
            lo, hi = offsets[q], offsets[q + 1]
            if ideal[q] <= 0.0:
                out[b, q] = no_relevant
                continue
            neg, comparable = neg_buffer[: hi - lo], True
            for i in range(hi - lo):
                neg[i] = -scores[b, lo + i]
                comparable &= neg[i] == neg[i]
            if comparable and hi - lo <= COUNTING_UP_TO:
                order = order_buffer[: hi - lo]
                order_by_counting(neg, order)
            else:
                order = np.argsort(neg, kind="mergesort")
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

    def evaluate_random(self, rngs: RunGenerators) -> FloatArray:
        """Mean NDCG@k of one uniformly random permutation of every list per run, shape (B,).

        Run ``b`` draws one uniform key per document from ``rngs[b]`` and ranks by
        it (ties have probability 0), so its value does not depend on its batch.
        """
        n = self.dataset.features.shape[0]
        keys = np.asarray(rngs.map(lambda g: g.random(n)), dtype=np.float64)
        mean: FloatArray = self._ndcg_of(keys).mean(axis=-1)
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


def evaluate_learner(
    evaluator: HeldoutSet,
    learner: Any,
    n_runs: int,
    *,
    weights: bool,
    rngs: RunGenerators | None = None,
) -> FloatArray:
    """Held-out mean NDCG@k of each run's current ranker, shape (B,).

    A :class:`~oltr.learners.base.FeatureScorer` is scored through its scoring
    function; a learner with ``weights`` through the weights it reports (its
    averaged iterate ``reported_weights_`` if it keeps one, else ``weights_``);
    with ``rngs``, a learner without a model by random permutations
    (:meth:`HeldoutSet.evaluate_random`); any other learner gets NaN.
    """
    if isinstance(learner, FeatureScorer):
        return evaluator.evaluate_scorer(learner.score_features)
    if weights:
        w = getattr(learner, "reported_weights_", None)
        w = learner.weights_ if w is None else w
        if w.shape[0] != n_runs:
            raise ValueError(
                f"{type(learner).__name__}.weights_ has {w.shape[0]} rows, "
                f"expected one per run ({n_runs})"
            )
        return evaluator.evaluate(w)
    if rngs is not None:
        return evaluator.evaluate_random(rngs)
    return np.full(n_runs, np.nan)
