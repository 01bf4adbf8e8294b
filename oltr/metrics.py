"""Ranking measures as pure functions of ``(relevance, order)``.

Truth first: ``relevance`` (..., m) holds each item's grade (integers ``0..n``;
non-negative floats accepted); ``order`` (..., m) lists item indices by position,
``order[..., 0]`` on top (the papers' σ⁻¹ or π); positions count from 1. Leading
axes of ``relevance``, ``order`` and ``mask`` broadcast, so one relevance vector
against ``B`` orders is one call. Results: float64 of the broadcast leading shape
(a numpy scalar for 1-D inputs). Padded lists carry ``mask`` (True = real item):
positions count real items only, padded indices may sit anywhere in an order, and
padded grades are ignored (NaN or -1 are fine there).

Gains are to be maximised, losses minimised; :data:`MEASURES` records which.
A list without the information a normalised measure needs (no relevant item for
NDCG and AP, no pair of different grades for AUC) gets the value ``no_relevant``.
The defaults give such a list the value of a perfect ranking (1 for the gains,
0 for the AUC loss), as Chaudhuri & Tewari (2015, §15) print: every order is
then optimal, so it adds no regret. Field conventions differ (Lerot, RankLib and
pyltr give 0; allRank and xgboost 1; the Yahoo tools 0.5); pass ``no_relevant=0.0``
for the first group, or ``np.nan`` to drop such lists with ``np.nanmean``.

Costs: O(m log m) per list to validate, O(m) to evaluate, except the pairwise
measures: O(m L) time and memory per list, L the number of distinct grades in the
call (n + 1 for integer grades, m at worst), in chunks of about 4M cells.

References: Chaudhuri & Tewari 2015 (AISTATS) §2–3, §15; Chaudhuri & Tewari 2016 §2;
Chapelle, Metzler, Zhang & Grinspan 2009 (CIKM) for ERR.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MEASURES",
    "Measure",
    "auc",
    "average_precision",
    "dcg",
    "err",
    "exp2_gain",
    "from_scores",
    "get_measure",
    "linear_gain",
    "log2_discount",
    "ndcg",
    "pairwise_loss",
    "precision",
    "sum_loss",
]

Array = NDArray[np.float64]
Value = np.float64 | Array
_PAIR_CHUNK = 1 << 22  # cells (rows × m × L) per chunk of the pairwise count


# ---------------------------------------------------------------------------
# gains and discounts, injected as functions so the Burges-vs-Järvelin choice reads as code


def exp2_gain(relevance: Array) -> Array:
    """Exponential gain ``2^r − 1`` (Burges et al. 2005; CT15 §3, CT16 §2 ``G``)."""
    return np.exp2(relevance) - 1.0


def linear_gain(relevance: Array) -> Array:
    """Linear gain ``r`` (Järvelin & Kekäläinen 2002; scikit-learn's default)."""
    return np.asarray(relevance, dtype=np.float64)


def log2_discount(position: Array) -> Array:
    """Discount ``1 / log2(1 + position)``, positions from 1 (CT16 §2 ``D``)."""
    return 1.0 / np.log2(1.0 + position)


# ---------------------------------------------------------------------------
# input handling


class _Lists(NamedTuple):
    rel: Array  # (lead, m) grades in position order, 0 at padded entries
    real: NDArray[np.bool_]  # (lead, m) True where the position holds a real item
    pos: NDArray[np.int64]  # (lead, m) 1-based position among real items
    rel0: Array  # (lead0, m) grades by item, relevance and mask broadcast only
    mask0: NDArray[np.bool_]  # (lead0, m)
    lead: tuple[int, ...]


def _first(bad: NDArray[np.bool_]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _check_types(rel: NDArray[Any], order: NDArray[Any], mask: NDArray[Any] | None) -> None:
    if rel.ndim == 0 or order.ndim == 0:
        raise ValueError("relevance and order must have at least one axis (items last)")
    if rel.dtype == np.bool_ or not np.issubdtype(rel.dtype, np.number) or np.iscomplexobj(rel):
        raise TypeError(f"relevance must be a real numeric array, got dtype {rel.dtype}")
    if not np.issubdtype(order.dtype, np.integer):
        raise TypeError(f"order must be an integer array of item indices, got dtype {order.dtype}")
    m = rel.shape[-1]
    if m == 0:
        raise ValueError("relevance must hold at least one item (last axis is empty)")
    if order.shape[-1] != m:
        raise ValueError(f"order has {order.shape[-1]} items on its last axis, relevance has {m}")
    if mask is not None:
        if mask.dtype != np.bool_:
            raise TypeError(f"mask must be a boolean array (True = real item), got {mask.dtype}")
        if mask.ndim == 0 or mask.shape[-1] != m:
            raise ValueError(f"mask must have shape (..., {m}), got {mask.shape}")


def _check_values(rel: NDArray[Any], order: NDArray[Any], mask: NDArray[np.bool_]) -> None:
    for bad in (~np.isfinite(rel) & mask, (rel < 0) & mask):
        if bad.any():
            at = _first(bad)
            raise ValueError(
                f"relevance must be finite and >= 0 at real items, got "
                f"{np.broadcast_to(rel, bad.shape)[at]} at {at}"
            )
    m = order.shape[-1]
    if order.min() < 0 or order.max() >= m:
        raise ValueError(
            f"order entries must lie in [0, {m - 1}], got {order.min()}...{order.max()}"
        )
    bad = (np.sort(order, axis=-1) != np.arange(m)).any(axis=-1)
    if bad.any():
        where = f" (leading index {_first(bad)})" if bad.ndim else ""
        raise ValueError(f"order must be a permutation of 0..{m - 1} along the last axis{where}")


def _prepare(
    relevance: ArrayLike, order: ArrayLike, mask: ArrayLike | None, validate: bool
) -> _Lists:
    rel, ordr = np.asarray(relevance), np.asarray(order)
    msk = None if mask is None else np.asarray(mask)
    if validate:
        _check_types(rel, ordr, msk)
    m = rel.shape[-1]
    msk = np.ones((m,), bool) if msk is None else msk
    try:
        lead0 = np.broadcast_shapes(rel.shape[:-1], msk.shape[:-1])
        lead = np.broadcast_shapes(lead0, ordr.shape[:-1])
    except ValueError:
        raise ValueError(
            f"leading axes do not broadcast: relevance {rel.shape}, order {ordr.shape}, "
            f"mask {msk.shape}"
        ) from None
    mask0 = np.broadcast_to(msk, lead0 + (m,))
    if validate:
        _check_values(rel, ordr, mask0)
    rel0 = np.where(mask0, rel, 0.0).astype(np.float64)  # padded grades are ignored
    idx = np.broadcast_to(ordr, lead + (m,)).astype(np.intp, copy=False)
    rel_s = np.take_along_axis(np.broadcast_to(rel0, lead + (m,)), idx, axis=-1)
    real = np.take_along_axis(np.broadcast_to(mask0, lead + (m,)), idx, axis=-1)
    return _Lists(rel_s, real, np.cumsum(real, axis=-1), rel0, mask0, lead)


def _check_k(k: int | None, *, required: bool = False) -> int:
    """The cutoff as an int; 0 stands for "no cutoff" internally."""
    if k is None and not required:
        return 0
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise TypeError(f"k must be an int >= 1 or None, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return int(k)


def _top(lists: _Lists, k: int) -> NDArray[np.bool_]:
    """Positions that count: real items, within the cutoff ``k`` unless it is 0."""
    return lists.real & (lists.pos <= k) if k else lists.real


def _ratio(num: Array, den: Array, fill: float) -> Array:
    """``num / den``, and ``fill`` (the ``no_relevant`` value) where ``den`` is 0."""
    if isinstance(fill, bool) or not isinstance(fill, int | float | np.number):
        raise TypeError(f"no_relevant must be a float (NaN allowed), got {fill!r}")
    den = np.broadcast_to(den, num.shape)
    out = np.full(num.shape, fill)
    np.divide(num, den, out=out, where=den > 0)
    return out


def _done(values: Array) -> Value:
    return np.asarray(values, dtype=np.float64)[()]  # numpy scalar for 0-d


# ---------------------------------------------------------------------------
# measures


def _dcg_sorted(
    gains: Array,
    take: NDArray[np.bool_],
    pos: NDArray[np.int64],
    discount: Callable[[Array], Array],
) -> Array:
    d = discount(np.maximum(pos, 1).astype(np.float64))  # max(.,1): padded slots before item 1
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
    lists = _prepare(relevance, order, mask, validate)
    k = _check_k(k)
    return _done(_dcg_sorted(gain(lists.rel), _top(lists, k), lists.pos, discount))


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
    lists = _prepare(relevance, order, mask, validate)
    k = _check_k(k)
    num = _dcg_sorted(gain(lists.rel), _top(lists, k), lists.pos, discount)
    # Ideal order from the unbroadcast relevance: one Z per relevance vector, not per order.
    ideal = -np.sort(-np.where(lists.mask0, gain(lists.rel0), -np.inf), axis=-1)
    n_real = lists.mask0.sum(axis=-1, keepdims=True)
    pos = np.broadcast_to(np.arange(1, ideal.shape[-1] + 1), ideal.shape)
    take = (pos <= np.minimum(n_real, k)) if k else (pos <= n_real)
    z = _dcg_sorted(np.where(take, ideal, 0.0), take, pos, discount)
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


def _misordered(lists: _Lists) -> tuple[Array, Array]:
    """Misordered pairs Σ 1(σ(i) < σ(j)) 1(R_i < R_j), and N(R) = Σ 1(R_i < R_j).

    Grades become levels among the L distinct grades; running counts per level of the
    real items above each position give, in O(m L), how many have a lower grade.
    """
    levels, inv = np.unique(lists.rel, return_inverse=True)
    m, n_lev = lists.rel.shape[-1], levels.size
    lev = inv.reshape(-1, m)
    real = lists.real.reshape(-1, m)
    out = np.empty((2, lev.shape[0]))
    step = max(1, _PAIR_CHUNK // (m * n_lev))
    for a in range(0, lev.shape[0], step):
        lv, rl = lev[a : a + step, :, None], real[a : a + step]
        lower = (lv < np.arange(n_lev)) & rl[..., None]  # [p, g]: real item at p has level < g
        above: NDArray[np.int64] = np.cumsum(lower, axis=1) - lower  # real, above p, level < g
        picked: NDArray[np.int64] = np.take_along_axis(above, lv, axis=2)[..., 0]
        out[0, a : a + step] = np.sum(np.where(rl, picked, 0), axis=-1)
        n_lower = np.take_along_axis(lower.sum(axis=1), lv[..., 0], axis=1)  # lower-graded items
        out[1, a : a + step] = np.sum(np.where(rl, n_lower, 0), axis=-1)
    return out[0].reshape(lists.lead), out[1].reshape(lists.lead)


def pairwise_loss(
    relevance: ArrayLike, order: ArrayLike, *, mask: ArrayLike | None = None, validate: bool = True
) -> Value:
    """Number of misordered pairs (a loss).

    ``PL(σ, R) = Σ_i Σ_j 1(σ(i) < σ(j)) 1(R_i < R_j)``: pairs whose higher-placed item
    has the strictly lower grade. CT15 §3's formula, read as is for graded relevance:
    each misordered pair counts 1, whatever the grade gap.

    Parameters
    ----------
    relevance, order, mask, validate : as in :func:`dcg`.

    References
    ----------
    Chaudhuri & Tewari 2015 §3 (PairwiseLoss; Duchi et al. 2010).

    Examples
    --------
    >>> print(pairwise_loss([0, 1, 2], [0, 1, 2]), pairwise_loss([0, 1, 2], [2, 1, 0]))
    3.0 0.0
    """
    return _done(_misordered(_prepare(relevance, order, mask, validate))[0])


def auc(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    no_relevant: float = 0.0,
    validate: bool = True,
) -> Value:
    """Normalised pairwise misordering, the AUC loss of CT15 §3 (a loss in [0, 1]).

    ``AUC(σ, R) = PL(σ, R) / N(R)`` with ``N(R) = Σ_i Σ_j 1(R_i < R_j)``, which for
    binary relevance is CT15's ``N(r) = (#relevant)(m − #relevant)``. ``1 − AUC`` is
    the usual area under the ROC curve. A list with ``N(R) = 0`` (all real grades
    equal, e.g. no relevant item) gets ``no_relevant``, by default 0, the loss of a
    perfect ranking, as CT15 §15 prints for ``0000`` and ``1111``.

    Parameters
    ----------
    relevance, order, mask, validate : as in :func:`dcg`.
    no_relevant : value for lists with ``N(R) = 0``; default 0.

    References
    ----------
    Chaudhuri & Tewari 2015 §3 (AUC; Cortes & Mohri 2004) and §15 (m = 4 values).

    Examples
    --------
    >>> print(auc([0, 1, 0, 1], [0, 1, 2, 3]))  # 3 of the 2·2 relevant/irrelevant pairs
    0.75
    """
    misordered, pairs = _misordered(_prepare(relevance, order, mask, validate))
    return _done(_ratio(misordered, pairs, no_relevant))


def sum_loss(
    relevance: ArrayLike, order: ArrayLike, *, mask: ArrayLike | None = None, validate: bool = True
) -> Value:
    """SumLoss ``Σ_i σ(i) R_i`` (a loss), σ(i) the 1-based position of item i.

    For binary relevance ``SumLoss − PL`` depends on ``r`` only (CT15 eq. 2), so both
    have the same regret. For graded relevance that holds for the grade-gap weighted
    count ``Σ 1(σ(i) < σ(j)) (R_j − R_i)⁺`` instead, not for :func:`pairwise_loss`.

    Parameters
    ----------
    relevance, order, mask, validate : as in :func:`dcg`.

    References
    ----------
    Chaudhuri & Tewari 2015 §3 (SumLoss), §5 and Table 1 (its loss matrix for m = 3).

    Examples
    --------
    >>> print(sum_loss([1, 0, 1], [1, 2, 0]))  # item 0 at position 3, item 2 at 2
    5.0
    """
    lists = _prepare(relevance, order, mask, validate)
    return _done(np.sum(np.where(lists.real, lists.pos * lists.rel, 0.0), axis=-1))


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
    stop = np.where(_top(lists, k), (np.exp2(lists.rel) - 1.0) / np.exp2(max_grade), 0.0)
    go_on = np.cumprod(1.0 - stop, axis=-1)
    reach = np.concatenate([np.ones_like(go_on[..., :1]), go_on[..., :-1]], axis=-1)
    return _done(np.sum(reach * stop / np.maximum(lists.pos, 1), axis=-1))


# ---------------------------------------------------------------------------
# registry


@dataclass(frozen=True)
class Measure:
    """A ranking measure, marked gain or loss, with its cutoff and keywords bound.

    Calling it calls ``fn(relevance, order, k=k, **kwargs, **call_keywords)``;
    ``sign * value`` (``sign`` = +1 for gains, −1 for losses) is higher when better.

    Examples
    --------
    >>> m = get_measure("ndcg@2")
    >>> m.kind, m.label, m.sign, round(float(m([0, 1, 0], [0, 1, 2])), 4)
    ('gain', 'ndcg@2', 1.0, 0.6309)
    """

    name: str
    kind: Literal["gain", "loss"]
    fn: Callable[..., Value] = field(repr=False)
    k: int | None = None
    takes_k: bool = False
    needs_k: bool = False
    kwargs: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kwargs", MappingProxyType(dict(self.kwargs)))  # read-only
        if self.kind not in ("gain", "loss"):
            raise ValueError(f"kind must be 'gain' or 'loss', got {self.kind!r}")
        if self.k is not None and not self.takes_k:
            raise ValueError(f"measure {self.name!r} takes no cutoff k, got k={self.k}")
        _check_k(self.k)

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only kwargs view cannot be pickled; rebuild from a plain dict
        # (worker processes receive measures this way).
        return (
            Measure,
            (self.name, self.kind, self.fn, self.k, self.takes_k, self.needs_k, dict(self.kwargs)),
        )

    @property
    def label(self) -> str:
        """The string that :func:`get_measure` parses back, e.g. ``"ndcg@10"``."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def sign(self) -> float:
        """+1.0 for a gain, −1.0 for a loss."""
        return 1.0 if self.kind == "gain" else -1.0

    def __call__(self, relevance: ArrayLike, order: ArrayLike, **kw: Any) -> Value:
        args = dict(self.kwargs)
        if self.k is not None:
            args["k"] = self.k
        args.update(kw)
        if self.needs_k and args.get("k") is None:
            raise ValueError(f"measure {self.name!r} needs a cutoff: use '{self.name}@k'")
        return self.fn(relevance, order, **args)


def _position_loss(relevance: ArrayLike, order: ArrayLike, **kw: Any) -> Value:
    # Ailon's ℓ_z lives with the choice adversaries it scores; imported here on
    # use because that module itself builds on this one.
    from oltr.envs.choice import position_loss

    return position_loss(relevance, order, **kw)


def _spearman_rho(relevance: ArrayLike, order: ArrayLike, **kw: Any) -> Value:
    from oltr.envs.choice import spearman_rho

    return spearman_rho(relevance, order, **kw)


MEASURES: dict[str, Measure] = {
    "dcg": Measure("dcg", "gain", dcg, takes_k=True),
    "ndcg": Measure("ndcg", "gain", ndcg, takes_k=True),
    "precision": Measure("precision", "gain", precision, takes_k=True, needs_k=True),
    "ap": Measure("ap", "gain", average_precision),
    "auc": Measure("auc", "loss", auc),
    "sumloss": Measure("sumloss", "loss", sum_loss),
    "pairwise": Measure("pairwise", "loss", pairwise_loss),
    "err": Measure("err", "gain", err, takes_k=True),
    # Ailon 2014: position-weighted loss ℓ_z (eq. 2.1, §8) and Spearman's ρ (§5).
    "position": Measure("position", "loss", _position_loss, takes_k=True),
    "spearman": Measure("spearman", "gain", _spearman_rho),
}
_ALIASES = {"map": "ap", "p": "precision", "prec": "precision", "pairwiseloss": "pairwise"}
_GRAMMAR = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*(\d+))?\s*$")


def get_measure(spec: str | Measure) -> Measure:
    """Resolve ``"name"`` or ``"name@k"`` (case-insensitive) to a :class:`Measure`.

    Names are the keys of :data:`MEASURES`, plus the aliases ``map`` (= ``ap``; MAP is
    the mean of AP over queries), ``p``/``prec`` (= ``precision``) and ``pairwiseloss``.

    Examples
    --------
    >>> get_measure("NDCG@10").label, get_measure("map").name
    ('ndcg@10', 'ap')
    """
    if isinstance(spec, Measure):
        return spec
    if not isinstance(spec, str):
        raise TypeError(
            f"a measure is a str like 'ndcg@10' or a Measure, got {type(spec).__name__}"
        )
    match = _GRAMMAR.match(spec.lower())
    valid = ", ".join(sorted(MEASURES))
    if match is None:
        raise ValueError(
            f"cannot parse measure {spec!r}: expected 'name' or 'name@k' with name in {valid}"
        )
    name, k = _ALIASES.get(match[1], match[1]), match[2]
    if name not in MEASURES:
        raise ValueError(
            f"unknown measure {match[1]!r} in {spec!r}; valid names: {valid} "
            f"(aliases: {', '.join(sorted(_ALIASES))})"
        )
    measure = MEASURES[name]
    if k is None:
        return measure
    if not measure.takes_k:
        raise ValueError(f"measure {name!r} takes no cutoff, got {spec!r}")
    return replace(measure, k=int(k))


def from_scores(
    measure: str | Measure,
    relevance: ArrayLike,
    scores: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    **kw: Any,
) -> Value:
    """Evaluate ``measure`` on the order of decreasing ``scores``.

    Ties are broken by the lower item index first (a stable sort of ``-scores``),
    the same rule as :func:`oltr.permutations.order_from_scores` without ``rng``.

    Parameters
    ----------
    measure : a :class:`Measure` or a string for :func:`get_measure`.
    relevance, mask : as in :func:`dcg`.
    scores : real array of shape (..., m); NaN only at padded entries.
    **kw : passed to the measure (``k``, ``no_relevant``, ...).

    Examples
    --------
    >>> print(from_scores("precision@1", [0, 1, 0], [0.5, 0.9, 0.9]))  # item 1 wins the tie
    1.0
    """
    s = np.asarray(scores)
    if s.dtype == np.bool_ or not np.issubdtype(s.dtype, np.number) or np.iscomplexobj(s):
        raise TypeError(f"scores must be a real numeric array, got dtype {s.dtype}")
    if s.ndim == 0:
        raise ValueError("scores must have at least one axis (items last)")
    if s.shape[-1] != np.shape(relevance)[-1]:
        raise ValueError(f"scores has {s.shape[-1]} items, relevance {np.shape(relevance)[-1]}")
    s = s.astype(np.float64)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)  # padded items sink
    if np.isnan(s).any():
        raise ValueError(f"scores contain NaN at real item {_first(np.isnan(s))}")
    order = np.argsort(-s, axis=-1, kind="stable")
    return get_measure(measure)(relevance, order, mask=mask, **kw)
