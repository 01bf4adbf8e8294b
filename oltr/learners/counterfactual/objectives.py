"""The objectives of the counterfactual learners, as functions of the documents' scores.

Every objective here is a sum over documents (or document pairs) of one
query of a per-document weight times a function of the scores; the weights
come from click and impression counts (:mod:`oltr.learners.counterfactual.fit`),
so the cost does not depend on the number of logged sessions. Each function
returns the value and its gradient with respect to the scores; the chain rule
through the scorer is the caller's.

Documents are held as *blocks*: the entries of one query are contiguous,
query ``q`` owning entries ``starts[q]:starts[q] + lengths[q]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Blocks",
    "listwise_softmax",
    "pairs_against_query",
    "pairwise_hinge",
    "plackett_luce_gradient",
    "smooth_hinge",
    "weighted_logistic",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Largest score gap kept by :func:`plackett_luce_gradient` (e^-600 is far above underflow).
SPREAD = 600.0


@dataclass(frozen=True)
class Blocks:
    """Contiguous per-query blocks of ``n`` entries.

    Attributes
    ----------
    starts, lengths
        Arrays (n_queries,): first entry and number of entries of every query (lengths >= 1).
    """

    starts: IntArray
    lengths: IntArray

    @property
    def segment(self) -> IntArray:
        """Array (n,): the block of every entry."""
        return np.repeat(np.arange(self.starts.size), self.lengths)

    @classmethod
    def from_offsets(cls, offsets: IntArray) -> Blocks:
        """Blocks of a data set's ``offsets`` (n_queries + 1,)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        return cls(offsets[:-1].copy(), np.diff(offsets))

    def padded(self, values: FloatArray, fill: float) -> FloatArray:
        """Array (n_queries, max length): the blocks' values, padded with ``fill``."""
        width = int(self.lengths.max())
        out = np.full((self.starts.size, width), fill, dtype=np.float64)
        out[self.mask] = values
        return out

    @property
    def mask(self) -> NDArray[np.bool_]:
        """Array (n_queries, max length): True where a padded cell holds an entry."""
        width = int(self.lengths.max())
        return np.arange(width)[None, :] < self.lengths[:, None]


def listwise_softmax(
    scores: FloatArray, weights: FloatArray, blocks: Blocks
) -> tuple[float, FloatArray]:
    """Weighted softmax cross-entropy of every block, summed.

    ``L(s) = −Σ_q Σ_{d ∈ q} w_d log( exp(s_d) / Σ_{z ∈ q} exp(s_z) )``: the
    listwise loss of ListNet's top-one form (Cao et al. 2007, ICML, eq. 2)
    with the per-document weights of the inverse-propensity-weighted loss
    ``l_IRM`` of Ai, Bi, Luo, Guo & Croft 2018 (SIGIR, §4: a softmax over the
    list, clicked documents weighted by the inverse of their position's
    propensity).

    Returns the loss and ``∂L/∂s_d = −w_d + W_q softmax_q(s)_d``, ``W_q = Σ_{d ∈ q} w_d``.
    """
    starts = blocks.starts
    seg = blocks.segment
    top = np.maximum.reduceat(scores, starts)
    z = np.exp(scores - top[seg])
    total = np.add.reduceat(z, starts)
    lse = top + np.log(total)
    mass = np.add.reduceat(weights, starts)
    loss = float(mass @ lse - weights @ scores)
    grad = mass[seg] * z / total[seg] - weights
    return loss, grad


def smooth_hinge(margin: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The smooth hinge of Rennie & Srebro 2005 and its derivative.

    ``h(z) = 1/2 − z`` for ``z <= 0``, ``(1 − z)²/2`` for ``0 < z < 1``, ``0``
    for ``z >= 1``: the hinge ``max(0, 1 − z)`` with its kink rounded, so that
    a quasi-Newton method (L-BFGS) sees a continuous gradient. It is within
    1/2 of the hinge everywhere and equal to it outside ``(0, 1)``.
    """
    value = np.where(margin <= 0, 0.5 - margin, np.where(margin < 1, 0.5 * (1 - margin) ** 2, 0.0))
    slope = np.where(margin <= 0, -1.0, np.where(margin < 1, margin - 1.0, 0.0))
    return value, slope


def pairs_against_query(weights: FloatArray, blocks: Blocks) -> tuple[IntArray, IntArray]:
    """Every (i, j) with ``weights[i] > 0`` and ``j != i`` another entry of i's block.

    The constraints of the Propensity SVM-Rank (Joachims, Swaminathan &
    Schnabel 2017, WSDM, §4 "Propensity-Weighted Ranking SVM"): a clicked
    document against every other document of its list,
    ``rank(y | ȳ) = Σ_{y'} 1[s_{y'} > s_y] + 1``.
    """
    seg = blocks.segment
    first = np.flatnonzero(weights > 0)
    count = blocks.lengths[seg[first]]
    i = np.repeat(first, count)
    within = np.arange(i.size) - np.repeat(np.cumsum(count) - count, count)
    j = blocks.starts[seg[i]] + within
    keep = j != i
    return i[keep], j[keep]


def pairwise_hinge(
    scores: FloatArray, weights: FloatArray, i: IntArray, j: IntArray
) -> tuple[float, FloatArray]:
    """``L(s) = Σ_{(i, j)} w_i h(s_i − s_j)`` with the smooth hinge ``h``, and ``∂L/∂s``.

    With ``w_i = Σ_k clicks[i, k] / θ_k`` this is the empirical risk of the
    Propensity SVM-Rank (Joachims et al. 2017, §4: the IPS-weighted
    hinge bound on the rank of every clicked document), summed over sessions.
    """
    value, slope = smooth_hinge(scores[i] - scores[j])
    w = weights[i]
    grad = np.bincount(i, weights=w * slope, minlength=scores.size) - np.bincount(
        j, weights=w * slope, minlength=scores.size
    )
    return float(w @ value), np.asarray(grad, dtype=np.float64)


def weighted_logistic(
    scores: FloatArray, positive: FloatArray, negative: FloatArray
) -> tuple[float, FloatArray]:
    """``L(s) = −Σ_d [a_d log σ(s_d) + b_d log(1 − σ(s_d))]`` and ``∂L/∂s = (a + b)σ(s) − a``.

    The unbiased regression loss of Oosterhuis 2023 (TOIS; the regression
    model of its DR estimator, as in the author's code): with
    ``a_d = ctr_d / ρ_d`` and ``b_d = (ρ_d − ctr_d) / ρ_d`` its expectation is
    the cross-entropy between the true relevance and ``σ(s_d)``.
    """
    log_p = -np.logaddexp(0.0, -scores)
    log_q = -np.logaddexp(0.0, scores)
    loss = float(-(positive @ log_p + negative @ log_q))
    grad = (positive + negative) * np.exp(log_p) - positive
    return loss, grad


def plackett_luce_gradient(
    scores: FloatArray,
    labels: FloatArray,
    mask: NDArray[np.bool_],
    rank_weights: FloatArray,
    n_samples: int,
    rng: np.random.Generator,
) -> tuple[FloatArray, FloatArray]:
    """PL-Rank-2 estimate of ``∇_s E_{y ~ PL(s)}[Σ_k λ_k labels_{y_k}]`` for padded lists.

    The Plackett–Luce policy ``π(y | s)`` places documents one by one, each
    with probability ``exp(s_d) / Σ_{unplaced} exp(s_z)``. Its value with
    metric weights ``λ_1..λ_K`` (positions past ``K`` weigh 0) has gradient
    (Oosterhuis 2021, SIGIR, "Computationally Efficient Optimization of
    Plackett–Luce Ranking Models", §4, PL-Rank-2)::

        ∂/∂s_d ≈ 1/N Σ_{y^(i)} [ PR_{rank(d)+1} + e^{s_d} Σ_{k ≤ rank(d)} (λ_k r_d − PR_k) / D_k ]

    with ``PR_k = Σ_{x >= k} λ_x r_{y_x}`` the reward placed from rank ``k``
    on and ``D_k`` the sum of ``e^s`` over the documents not placed before
    ``k``; ``N`` rankings are drawn with the Gumbel-max trick. This is the
    gradient with which Oosterhuis 2023 (TOIS) optimises the DR estimate,
    written for a batch of queries.

    Parameters
    ----------
    scores, labels, mask
        Arrays (Q, n): padded scores, per-document rewards and the real cells.
    rank_weights
        λ, array (K,).
    n_samples, rng
        Rankings drawn per query and their source.

    Returns
    -------
    gradient, value
        Arrays (Q, n) (0 in padding) and (Q,): the gradient estimate and the
        sampled estimate of each query's value.
    """
    n_queries, width = scores.shape
    k = min(rank_weights.size, width)
    lengths = mask.sum(axis=1)
    shifted = np.where(mask, scores, -np.inf)
    # Scores more than SPREAD below the query's best are raised to it, so that e^s never
    # underflows to 0 (a policy that far apart is deterministic to e^-SPREAD anyway).
    shifted = np.maximum(shifted - shifted.max(axis=1, keepdims=True), -SPREAD)
    exp_s = np.where(mask, np.exp(shifted), 0.0)
    keys = shifted[:, None, :] + rng.gumbel(size=(n_queries, n_samples, width))
    if k < width:
        top = np.argpartition(-keys, k - 1, axis=2)[..., :k]
    else:
        top = np.broadcast_to(np.arange(width), keys.shape).copy()
    order = np.argsort(-np.take_along_axis(keys, top, axis=2), axis=2, kind="stable")
    ranking = np.take_along_axis(top, order, axis=2)
    valid = (np.arange(k)[None, :] < lengths[:, None])[:, None, :]
    lam = np.where(valid, rank_weights[None, None, :k], 0.0)
    lab = np.take_along_axis(np.broadcast_to(labels[:, None, :], keys.shape), ranking, axis=2)
    lab = np.where(valid, lab, 0.0)
    reward = np.cumsum((lab * lam)[..., ::-1], axis=2)[..., ::-1]
    placed = np.take_along_axis(np.broadcast_to(exp_s[:, None, :], keys.shape), ranking, axis=2)
    placed = np.where(valid, placed, 0.0)
    # D_k = Σ of e^s not placed before k, as a sum of positive terms (no cancellation): the
    # documents left after the top k, plus those placed at k and below.
    rest = np.broadcast_to(exp_s[:, None, :], keys.shape).copy()
    np.put_along_axis(rest, ranking, 0.0, axis=2)
    tail = np.cumsum(placed[..., ::-1], axis=2)[..., ::-1]
    denom = np.where(valid, rest.sum(axis=2, keepdims=True) + tail, 1.0)
    weight_sum = np.cumsum(lam / denom, axis=2)
    reward_sum = np.cumsum(reward / denom, axis=2)
    after = np.concatenate([reward[..., 1:], np.zeros_like(reward[..., :1])], axis=2)
    grad = exp_s[:, None, :] * (labels[:, None, :] * weight_sum[..., -1:] - reward_sum[..., -1:])
    at_placed = after + placed * (lab * weight_sum - reward_sum)
    np.put_along_axis(grad, ranking, np.where(valid, at_placed, 0.0), axis=2)
    gradient = np.where(mask, grad.mean(axis=1), 0.0)
    return gradient, reward[..., 0].mean(axis=1)
