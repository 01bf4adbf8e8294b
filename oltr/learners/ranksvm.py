"""Offline Ranking SVM: the supervised reference of Yue & Joachims (2009) Table 3.

The ranking SVM (Joachims 2002; Herbrich et al. 2000) learns a linear scorer w
from pairwise preferences within each query: for documents i, j of one query
with grades r_i > r_j it asks w·x_i > w·x_j, by the soft-margin problem

    min_w  ½‖w‖² + C Σ_{(i, j)} max(0, 1 − w·(x_i − x_j))²      (squared hinge)

or with the plain hinge. That is a linear SVM without intercept on the
difference vectors x_i − x_j labelled +1 — solved here by scikit-learn's
:class:`~sklearn.svm.LinearSVC` (liblinear). Half of the pairs, chosen at
random, are presented as (x_j − x_i, −1) so that both classes appear; the
problem is unchanged (each pair's hinge term is symmetric under the flip).

The learned w is returned normalised to unit length: only its direction
matters for ranking, and DBGD (§5.2) works on the unit sphere.

References
----------
Yue & Joachims 2009, ICML, §5.2 and Table 3 (ranking SVM vs DBGD).
Joachims 2002, "Optimizing search engines using clickthrough data", KDD, §4.
Herbrich, Graepel & Obermayer 2000, "Large margin rank boundaries for ordinal
regression", in Advances in Large Margin Classifiers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.random import RNGLike, as_rng
from oltr.validation import check_choice, check_scalar

__all__ = ["fit_ranksvm", "pairwise_differences"]


def pairwise_differences(
    dataset: Any, *, max_pairs_per_query: int | None = None, rng: RNGLike = None
) -> NDArray[np.float64]:
    """Differences x_i − x_j for every pair of one query with grade r_i > r_j.

    Parameters
    ----------
    dataset
        A :class:`~oltr.data.letor.LetorDataset`.
    max_pairs_per_query
        Keep at most this many pairs per query (drawn without replacement with
        ``rng``); None keeps all.
    rng
        Seed or Generator (used only to subsample).

    Returns
    -------
    Array of shape (n_pairs, n_features), preferred document first.

    Examples
    --------
    >>> from oltr.data.letor import LetorDataset
    >>> ds = LetorDataset(features=np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]),
    ...                   relevance=np.array([2, 1, 1]), qids=np.array([7]),
    ...                   offsets=np.array([0, 3]))
    >>> pairwise_differences(ds).tolist()     # doc 0 over docs 1 and 2; 1 and 2 tie
    [[1.0, -1.0], [1.0, 0.0]]
    """
    gen = as_rng(rng) if max_pairs_per_query is not None else None
    out = []
    for q in range(dataset.n_queries):
        x, r = dataset.query(q)
        i, j = np.nonzero(r[:, None] > r[None, :])
        if gen is not None and i.size > int(max_pairs_per_query):  # type: ignore[arg-type]
            keep = np.sort(gen.choice(i.size, int(max_pairs_per_query), replace=False))  # type: ignore[arg-type]
            i, j = i[keep], j[keep]
        out.append(x[i] - x[j])
    if not out:
        return np.empty((0, dataset.n_features))
    return np.concatenate(out, axis=0)


def fit_ranksvm(
    dataset: Any,
    *,
    c: float = 1.0,
    loss: str = "squared_hinge",
    max_pairs_per_query: int | None = None,
    max_iter: int = 10_000,
    rng: RNGLike = 0,
) -> NDArray[np.float64]:
    """Fit a linear ranking SVM on a training data set; the unit-length weight vector.

    Parameters
    ----------
    dataset
        A :class:`~oltr.data.letor.LetorDataset` with graded relevance.
    c
        Regularisation constant C > 0 of the soft margin.
    loss
        ``"squared_hinge"`` (liblinear's default primal solver) or ``"hinge"``.
    max_pairs_per_query
        Subsample pairs per query (None: all).
    max_iter
        Solver iterations.
    rng
        Seed or Generator for the pair flips and subsampling.

    Returns
    -------
    w
        Array of shape (n_features,), ‖w‖ = 1.

    Raises
    ------
    ValueError
        If no query has two documents of different grades.

    Examples
    --------
    >>> from oltr.data.synthetic import synthetic_letor
    >>> ds = synthetic_letor(n_queries=30, n_features=5, rng=0)
    >>> w = fit_ranksvm(ds)
    >>> w.shape, bool(np.isclose(np.linalg.norm(w), 1.0))
    ((5,), True)
    """
    from sklearn.svm import LinearSVC

    check_scalar(c, "c", low=0, include_low=False)
    check_choice(loss, "loss", ("squared_hinge", "hinge"))
    check_scalar(max_iter, "max_iter", low=1, integer=True)
    gen = as_rng(rng)
    diffs = pairwise_differences(dataset, max_pairs_per_query=max_pairs_per_query, rng=gen)
    if diffs.shape[0] == 0:
        raise ValueError("fit_ranksvm: no query has two documents of different grades")
    sign = np.where(gen.random(diffs.shape[0]) < 0.5, 1.0, -1.0)
    if (sign > 0).all() or (sign < 0).all():
        sign[0] = -sign[0]  # LinearSVC needs both classes
    svm = LinearSVC(
        C=c,
        loss=loss,
        fit_intercept=False,
        dual=loss == "hinge",
        max_iter=max_iter,
        random_state=int(gen.integers(2**31 - 1)),
    )
    svm.fit(diffs * sign[:, None], sign)
    w = np.asarray(svm.coef_[0], dtype=np.float64)
    norm = np.linalg.norm(w)
    return w / norm if norm > 0 else w
