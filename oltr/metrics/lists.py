"""What every ranking measure shares: gains and discounts, input checks, padded lists."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError

__all__ = ["EXP2_GRADE_BOUND", "Array", "Value", "exp2_gain", "linear_gain", "log2_discount"]

Array = NDArray[np.float64]
Value = np.float64 | Array


_PAIR_CHUNK = 1 << 22  # cells (rows × m × L) per chunk of the pairwise count

# The largest float64 is (2 − 2^-52)·2^1023 < 2^1024 = 2^maxexp: 2^g is finite exactly for
# g < 1024 (np.exp2 of the float64 just below 1024 is finite, of 1024 is inf).
EXP2_GRADE_BOUND = float(np.finfo(np.float64).maxexp)
"""Grades of the exponential gain ``2^g − 1`` must be below this (1024) in float64."""


def exp2_gain(relevance: Array) -> Array:
    """Exponential gain ``2^r − 1`` (Burges et al. 2005; CT15 §3, CT16 §2 ``G``).

    Grades of :data:`EXP2_GRADE_BOUND` (1024) or more, whose gain overflows
    float64, raise :class:`~oltr.errors.InputError`.
    """
    rel = np.asarray(relevance)
    if rel.size and rel.max() >= EXP2_GRADE_BOUND:
        raise InputError(
            f"grade {rel.max()} is too large for the exponential gain 2^g − 1: it overflows "
            f"float64 from g = {EXP2_GRADE_BOUND:.0f} on; rescale the grades or use linear_gain"
        )
    return np.exp2(relevance) - 1.0


def _check_gain_sum(values: Array, what: str, lists: _Lists) -> Array:
    """``values`` (sums of gains), refused with an InputError where a sum overflowed float64.

    Each gain may be finite while their discounted sum is not: a list's DCG with
    ``2^g − 1`` stays finite only while ``Σ_i D(i)·(2^{g_i} − 1) < 2^1024``.
    """
    if np.isfinite(values).all():
        return values
    top = lists.rel0.max(initial=0.0, where=lists.mask0)
    raise InputError(
        f"the {what} of grades up to {top} overflows float64: the discounted sum of gains "
        f"must stay below 2^{EXP2_GRADE_BOUND:.0f} (about 1.8e308); rescale the grades or use "
        "linear_gain"
    )


def linear_gain(relevance: Array) -> Array:
    """Linear gain ``r`` (Järvelin & Kekäläinen 2002; scikit-learn's default)."""
    return np.asarray(relevance, dtype=np.float64)


def log2_discount(position: Array) -> Array:
    """Discount ``1 / log2(1 + position)``, positions from 1 (CT16 §2 ``D``)."""
    return 1.0 / np.log2(1.0 + position)


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
