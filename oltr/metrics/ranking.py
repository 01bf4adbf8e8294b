"""Position-discounted measures of one ranked list: DCG, NDCG, Precision, AP and ERR."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError
from oltr.metrics.lists import (
    EXP2_GRADE_BOUND,
    Array,
    Value,
    _check_gain_sum,
    _check_k,
    _done,
    _prepare,
    _ratio,
    _top,
    exp2_gain,
    log2_discount,
)
from oltr.metrics.whole_lists import dcg_whole_lists, ndcg_whole_lists

__all__ = ["average_precision", "dcg", "err", "ndcg", "precision"]


def _dcg_sorted(
    gains: Array,
    take: NDArray[np.bool_],
    pos: NDArray[np.int64],
    discount: Callable[[Array], Array],
) -> Array:
    d = discount(np.maximum(pos, 1).astype(np.float64))  # max(.,1): padded slots before item 1
    with np.errstate(over="ignore"):  # a sum beyond float64 is refused by _check_gain_sum
        out: Array = np.sum(np.where(take, gains * d, 0.0), axis=-1)
    return out


def dcg(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    gain: Callable[[Array], Array] = exp2_gain,
    discount: Callable[[Array], Array] = log2_discount,
    validate: bool = True,
) -> Value:
    """Discounted cumulative gain at cutoff ``k`` (a gain).

    ``DCG@k(σ, R) = Σ_{i=1}^{k} G(R_{σ⁻¹(i)}) D(i)`` with ``G(r) = 2^r − 1`` and
    ``D(i) = 1 / log2(1 + i)``; ``k = None`` (or ``k ≥ m``) sums all positions.

    Parameters
    ----------
    relevance : array of shape (..., m), grades >= 0.
    order : array of shape (..., m), item indices by position.
    k : cutoff >= 1, counted among real items; None for the whole list.
    mask : boolean array of shape (..., m), True = real item; None = all real.
    gain, discount : vectorised functions of the grades and of the 1-based positions.
        Burges et al. (2005) use ``2^r − 1`` (:func:`exp2_gain`, the papers' choice);
        Järvelin & Kekäläinen (2002) use ``r`` (:func:`linear_gain`).
    validate : check shapes, values and that ``order`` is a permutation (O(m log m)).

    References
    ----------
    Chaudhuri & Tewari 2015 §3 (DCG); Chaudhuri & Tewari 2016 §2 (``G``, ``D``).

    Examples
    --------
    >>> print(f"{dcg([3, 0, 1], [0, 2, 1]):.4f}")  # 7/log2(2) + 1/log2(3)
    7.6309
    """
    if mask is None and not validate and gain is exp2_gain and discount is log2_discount:
        fast = dcg_whole_lists(np.asarray(relevance), np.asarray(order), _check_k(k))
        if fast is not None:  # the runner's case: the same values, without the padding
            return fast
    lists = _prepare(relevance, order, mask, validate)
    k = _check_k(k)
    out = _dcg_sorted(gain(lists.rel), _top(lists, k), lists.pos, discount)
    return _done(_check_gain_sum(out, "DCG", lists))


def ndcg(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    no_relevant: float = 1.0,
    gain: Callable[[Array], Array] = exp2_gain,
    discount: Callable[[Array], Array] = log2_discount,
    validate: bool = True,
) -> Value:
    """Normalised DCG at cutoff ``k`` (a gain in [0, 1]).

    ``NDCG@k(σ, R) = DCG@k(σ, R) / Z_k(R)`` with ``Z_k(R) = max_π DCG@k(π, R)``,
    attained by sorting items by decreasing gain (the discount is non-increasing).
    A list with ``Z_k(R) = 0`` (no relevant real item) gets ``no_relevant``.

    Parameters
    ----------
    relevance, order, k, mask, gain, discount, validate : as in :func:`dcg`.
    no_relevant : value for lists without a relevant item; default 1 (CT15 §15).

    References
    ----------
    Chaudhuri & Tewari 2016 §2 (``NDCG_k``, ``Z_k``); Chaudhuri & Tewari 2015 §3, §15.

    Examples
    --------
    >>> print(f"{ndcg([0, 1, 0], [0, 1, 2]):.4f}", ndcg([0, 0, 0], [0, 1, 2]))
    0.6309 1.0
    """
    k = _check_k(k)
    if mask is None and not validate and gain is exp2_gain and discount is log2_discount:
        fast = ndcg_whole_lists(np.asarray(relevance), np.asarray(order), k, no_relevant)
        if fast is not None:  # the runner's case: the same values, without the padding
            return fast
    lists = _prepare(relevance, order, mask, validate)
    num = _dcg_sorted(gain(lists.rel), _top(lists, k), lists.pos, discount)
    # Ideal order from the unbroadcast relevance: one Z per relevance vector, not per order.
    ideal = -np.sort(-np.where(lists.mask0, gain(lists.rel0), -np.inf), axis=-1)
    n_real = lists.mask0.sum(axis=-1, keepdims=True)
    pos = np.broadcast_to(np.arange(1, ideal.shape[-1] + 1), ideal.shape)
    take = (pos <= np.minimum(n_real, k)) if k else (pos <= n_real)
    z = _dcg_sorted(np.where(take, ideal, 0.0), take, pos, discount)
    _check_gain_sum(z, "ideal DCG", lists)  # the largest DCG: if it is finite, so is num
    return _done(_ratio(num, z, no_relevant))


def precision(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    k: int,
    mask: ArrayLike | None = None,
    normalize: bool = True,
    validate: bool = True,
) -> Value:
    """Precision at cutoff ``k`` (a gain): the share of relevant items in the top ``k``.

    ``Prec@k(σ, R) = (1/k) Σ_{i=1}^{m} 1(σ(i) ≤ k) 1(R_i > 0)``. Graded relevance is
    binarised: an item is relevant when its grade is > 0. The divisor is ``k`` even
    when a list has fewer than ``k`` real items (trec_eval's convention).

    Parameters
    ----------
    relevance, order, mask, validate : as in :func:`dcg`.
    k : cutoff >= 1 (required), counted among real items.
    normalize : divide by ``k`` (LETOR, Liu et al. 2007). ``False`` gives the count
        ``Σ 1(σ(i) ≤ k) r(i)`` of Chaudhuri & Tewari 2015 §3 (binary ``r``), whose
        regret bounds (Thm. 10) are stated for it.

    References
    ----------
    Chaudhuri & Tewari 2015 §3 (Precision@k gain).

    Examples
    --------
    >>> r = [2, 0, 1, 0]
    >>> print(precision(r, [0, 1, 3, 2], k=2), precision(r, [0, 2, 1, 3], k=3))
    0.5 0.6666666666666666
    """
    lists = _prepare(relevance, order, mask, validate)
    k = _check_k(k, required=True)
    count = np.sum(_top(lists, k) & (lists.rel > 0), axis=-1).astype(np.float64)
    return _done(count / k if normalize else count)


def average_precision(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    no_relevant: float = 1.0,
    validate: bool = True,
) -> Value:
    """Average precision (a gain in [0, 1]); MAP is its mean over queries.

    ``AP(σ, r) = (1/‖r‖₁) Σ_i 1(r(σ⁻¹(i)) = 1) · (Σ_{j≤i} 1(r(σ⁻¹(j)) = 1)) / i``,
    with graded relevance binarised as ``r = 1(R > 0)`` (the LETOR convention).
    A list without a relevant real item gets ``no_relevant``.

    Parameters
    ----------
    relevance, order, mask, validate : as in :func:`dcg`.
    no_relevant : value for lists without a relevant item; default 1 (CT15 §15).

    References
    ----------
    Chaudhuri & Tewari 2015 §3 (MAP) and §15 (its values for m = 3).

    Examples
    --------
    >>> print(average_precision([1, 0, 1], [0, 1, 2]))  # (1/1 + 2/3) / 2
    0.8333333333333333
    """
    lists = _prepare(relevance, order, mask, validate)
    hit = lists.real & (lists.rel > 0)
    hits_so_far = np.cumsum(hit, axis=-1)
    num = np.sum(np.where(hit, hits_so_far / np.maximum(lists.pos, 1), 0.0), axis=-1)
    return _done(_ratio(num, hits_so_far[..., -1].astype(np.float64), no_relevant))


def err(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    max_grade: float | None = None,
    validate: bool = True,
) -> Value:
    """Expected reciprocal rank at cutoff ``k`` (a gain in [0, 1]).

    Cascade model: the user stops at position i with probability
    ``R_i = (2^{g_i} − 1) / 2^{max_grade}``, so
    ``ERR@k = Σ_{i=1}^{k} (1/i) R_i Π_{j<i} (1 − R_j)``.

    Parameters
    ----------
    relevance, order, k, mask, validate : as in :func:`dcg`.
    max_grade : top grade of the scale (e.g. 4 for MSLR/Yahoo, 2 for MQ2007), >= every
        grade present. None takes the largest real grade in this call; that keeps
        ``R_i ≤ 1`` and one scale for every list of the call, but a call without the
        top grade gets a different scale, so pass it explicitly to compare calls.

    References
    ----------
    Chapelle, Metzler, Zhang & Grinspan 2009 (ERR: cascade model, utility φ(r) = 1/r).

    Examples
    --------
    >>> print(err([2, 1, 0], [0, 1, 2]))  # 3/4 + (1/2)(1/4)(1/4)
    0.78125
    """
    lists = _prepare(relevance, order, mask, validate)
    k = _check_k(k)
    top = float(lists.rel0.max(initial=0.0, where=lists.mask0))
    if max_grade is None:
        max_grade = top
    elif not np.isfinite(max_grade) or max_grade < top:
        raise ValueError(
            f"max_grade must be finite and >= the largest grade {top}, got {max_grade}"
        )
    if max_grade >= EXP2_GRADE_BOUND:
        raise InputError(
            f"max_grade {max_grade} is too large for ERR's 2^g: it overflows float64 from "
            f"g = {EXP2_GRADE_BOUND:.0f} on; rescale the grades"
        )
    stop = np.where(_top(lists, k), (np.exp2(lists.rel) - 1.0) / np.exp2(max_grade), 0.0)
    go_on = np.cumprod(1.0 - stop, axis=-1)
    reach = np.concatenate([np.ones_like(go_on[..., :1]), go_on[..., :-1]], axis=-1)
    return _done(np.sum(reach * stop / np.maximum(lists.pos, 1), axis=-1))
