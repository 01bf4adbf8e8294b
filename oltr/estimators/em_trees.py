"""Regression EM with gradient-boosted trees as the relevance model (Wang et al. 2018, §4.3).

Wang, Golbandi, Bendersky, Metzler & Najork 2018 (WSDM), Algorithm 1, model
γ_{q,d} = σ(F(x_{q,d})) with F a gradient-boosted decision tree (GBDT): every EM
iteration samples binary relevance labels r ~ Bernoulli(P(R=1 | c, q, d, k))
from the E-step and fits F to them. Here F is fitted to the *expected* labels
instead: a (document, position) cell with C clicks out of N impressions
contributes ``a = C + (N − C) P(R=1 | C=0)`` positive and ``N − a`` negative
labels, so a classifier with the log loss fitted to each document twice — label
1 with weight Σ_k a_dk, label 0 with weight Σ_k (N_dk − a_dk) — maximises the
expectation, over the sampled labels, of the log likelihood the paper's GBDT
fits (the deterministic equivalent of the sampling, without its Monte-Carlo noise).
The weights are divided by their mean per document so the trees' regularisation
(minimum leaf size, leaf-value shrinkage) does not depend on the log's size.

The trees are scikit-learn's :class:`~sklearn.ensemble.HistGradientBoostingClassifier`
(``max_iter=trees`` boosting rounds of ``max_leaf_nodes``-leaf trees, learning
rate 0.1, no early stopping, fixed ``random_state``: a deterministic function of
the weights), refitted from scratch at every outer step:

1. E-step under (θ, γ = σ(F)), labels, refit F (the relevance M-step);
2. θ ← the maximiser of the likelihood given the new γ, by the closed-form θ
   M-step of :mod:`oltr.estimators.em` iterated to a relative change below 1e-7.

Start. From the flat start (θ_k = 0.9 for all k) a GBDT fits the first labels,
position effect included, so closely that θ barely leaves the start: boosting
50–100 trees along the EM iterations from there, on MQ2008 logs of 10^6
sessions of one or two Ranking SVM loggers, left θ_k/θ_1 at 2 to 55 times the
truth at deep positions. The steps therefore start from the
logistic-regression EM's fixed point (:mod:`oltr.estimators.em`) and refine
it; ``steps`` bounds the refits (each costs one GBDT fit) and the estimate is
the state after ``steps`` refits or when θ_k/θ_1 change by less than ``tol``
(relative, default 1e-3) in one refit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.errors import InputError

__all__ = ["TREE_DEFAULTS", "check_tree_options", "tree_steps"]

#: Options of the trees and of the outer loop (see the module docstring).
TREE_DEFAULTS: dict[str, Any] = {
    "trees": 30,
    "max_leaf_nodes": 7,
    "min_samples_leaf": 50,
    "learning_rate": 0.1,
    "steps": 10,
    "bootstrap_steps": 2,
    "tol": 1e-3,
}
_EPS = 1e-9


def check_tree_options(options: dict[str, Any] | None) -> dict[str, Any]:
    """:data:`TREE_DEFAULTS` updated by ``options``, checked (InputError naming the option)."""
    out = dict(TREE_DEFAULTS)
    for name, value in (options or {}).items():
        if name not in TREE_DEFAULTS:
            raise InputError(f"unknown tree option {name!r}; choose among {sorted(TREE_DEFAULTS)}")
        out[name] = value
    for name in ("trees", "max_leaf_nodes", "min_samples_leaf", "steps", "bootstrap_steps"):
        v = out[name]
        least = 2 if name == "max_leaf_nodes" else 1
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise InputError(f"tree option {name} must be an int >= {least}, got {v!r}")
    if not (isinstance(out["tol"], int | float) and out["tol"] > 0):
        raise InputError(f"tree option tol must be > 0, got {out['tol']!r}")
    lr = out["learning_rate"]
    if not (isinstance(lr, int | float) and 0.0 < lr <= 1.0):
        raise InputError(f"tree option learning_rate must be in (0, 1], got {lr!r}")
    return out


def _theta_given_gamma(
    cc: NDArray[np.float64],
    skips: NDArray[np.float64],
    row: NDArray[np.int64],
    pos: NDArray[np.int64],
    nk: NDArray[np.float64],
    theta: NDArray[np.float64],
    gamma: NDArray[np.float64],
) -> NDArray[np.float64]:
    """θ-only EM (Wang et al. 2018 §4.2's θ update) with γ fixed, to 1e-7 relative."""
    k = theta.shape[0]
    g = gamma[row]
    for _ in range(10_000):
        t = theta[pos]
        pe = t * (1.0 - g) / (1.0 - t * g)
        new = np.clip(np.bincount(pos, weights=cc + skips * pe, minlength=k) / nk, _EPS, 1.0)
        done = np.max(np.abs(new / new[0] - theta / theta[0]) / (theta / theta[0])) < 1e-7
        theta = new
        if done:
            break
    return theta


def tree_steps(
    clicks: NDArray[np.float64],
    shown: NDArray[np.float64],
    features: NDArray[np.float64],
    theta: NDArray[np.float64],
    score: NDArray[np.float64],
    options: dict[str, Any],
    *,
    bootstrap: bool,
) -> tuple[NDArray[np.float64], NDArray[np.float64], int, bool]:
    """Refine (θ, F) by GBDT refits (module docstring); returns (θ, F, refits, converged).

    ``clicks``, ``shown``: (n_docs, K) counts of the shown documents; ``features``
    (n_docs, d); ``theta`` (K,) raw θ and ``score`` (n_docs,) F of the start;
    ``options`` from :func:`check_tree_options`; ``bootstrap`` picks
    ``bootstrap_steps`` instead of ``steps``.
    """
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    n_docs, k = shown.shape
    row, pos = np.nonzero(shown > 0)
    cc, nn = clicks[row, pos], shown[row, pos]
    skips = nn - cc
    nk = np.bincount(pos, weights=nn, minlength=k).astype(np.float64)
    nd = np.bincount(row, weights=nn, minlength=n_docs).astype(np.float64)
    seen = nd > 0
    X = np.vstack([features[seen], features[seen]])
    y = np.concatenate([np.ones(int(seen.sum())), np.zeros(int(seen.sum()))])
    scale = float(nd[seen].mean())
    steps = int(options["bootstrap_steps"] if bootstrap else options["steps"])
    theta = np.asarray(theta, dtype=np.float64).copy()
    score = np.asarray(score, dtype=np.float64).copy()
    converged = False
    refits = 0
    while refits < steps:
        refits += 1
        gamma = np.clip(0.5 * (1.0 + np.tanh(0.5 * score)), _EPS, 1 - _EPS)
        t, g = theta[pos], gamma[row]
        pr = (1.0 - t) * g / (1.0 - t * g)
        a = np.bincount(row, weights=cc + skips * pr, minlength=n_docs)
        w = np.concatenate([a[seen], np.maximum(nd[seen] - a[seen], 0.0)]) / scale
        model = HistGradientBoostingClassifier(
            max_iter=options["trees"],
            learning_rate=options["learning_rate"],
            max_leaf_nodes=options["max_leaf_nodes"],
            min_samples_leaf=options["min_samples_leaf"],
            early_stopping=False,
            random_state=0,
        )
        with threadpool_limits(1):  # small fits: threads only contend on shared machines
            model.fit(X, y, sample_weight=w)
            score[seen] = model.decision_function(features[seen])
        gamma = np.clip(0.5 * (1.0 + np.tanh(0.5 * score)), _EPS, 1 - _EPS)
        new = _theta_given_gamma(cc, skips, row, pos, nk, theta, gamma)
        a_, b_ = new / new[0], theta / theta[0]
        theta = new
        if np.max(np.abs(a_ - b_) / b_) < options["tol"]:
            converged = True
            break
    return theta, score, refits, converged
