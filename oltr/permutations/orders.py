"""Orders and ranks: conversions, ranking by scores (the tie rule), all and random permutations."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.random import RNGLike, as_rng

__all__ = [
    "MAX_ENUMERATED_ITEMS",
    "all_orders",
    "order_from_ranks",
    "order_from_scores",
    "random_order",
    "ranks_from_order",
    "ranks_from_scores",
]

#: Largest ``n_items`` :func:`all_orders` enumerates (10! × 10 indices ≈ 290 MB).
MAX_ENUMERATED_ITEMS = 10


# ---------------------------------------------------------------------------
# validation


def _check_n_items(n_items: int, name: str = "n_items") -> int:
    if isinstance(n_items, bool) or not isinstance(n_items, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(n_items).__name__}")
    if n_items < 1:
        raise ValueError(f"{name} must be >= 1, got {n_items}")
    return int(n_items)


def _check_last_axis(a: NDArray[np.generic], name: str) -> None:
    if a.ndim < 1:
        raise ValueError(
            f"{name} must have at least one axis (items along the last axis), got a scalar"
        )
    if a.shape[-1] < 1:
        raise ValueError(
            f"{name} must hold at least one item along its last axis, got shape {a.shape}"
        )


def _check_permutation_array(perm: ArrayLike, name: str) -> NDArray[np.intp]:
    p = np.asarray(perm)
    if p.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer indices, got dtype {p.dtype}")
    _check_last_axis(p, name)
    m = p.shape[-1]
    if p.size and (p.min() < 0 or p.max() >= m):
        bad = np.argwhere((p < 0) | (p >= m))[0]
        raise ValueError(
            f"{name} values must lie in [0, {m - 1}] (last axis has {m} items), "
            f"got {p[tuple(bad)]} at index {tuple(int(i) for i in bad)}"
        )
    return p.astype(np.intp, copy=False)


def _check_real(a: ArrayLike, name: str) -> NDArray[np.generic]:
    arr = np.asarray(a)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    _check_last_axis(arr, name)
    return arr


def _check_scores(scores: ArrayLike) -> NDArray[np.generic]:
    s = _check_real(scores, "scores")
    if s.dtype.kind == "f":
        nan = np.isnan(s)
        if nan.any():
            where = tuple(int(i) for i in np.argwhere(nan)[0])
            raise ValueError(
                f"scores contains NaN at index {where}; scores must be comparable "
                "(use -inf to pad unequal lists, it sorts last)"
            )
    return s


# ---------------------------------------------------------------------------
# orders and ranks


def _invert(perm: NDArray[np.intp]) -> NDArray[np.intp]:
    """Inverse permutations along the last axis: one scatter ``inv[perm[i]] = i``."""
    inv = np.full(perm.shape, -1, dtype=np.intp)
    np.put_along_axis(inv, perm, np.arange(perm.shape[-1], dtype=np.intp), axis=-1)
    return inv


def _checked_invert(perm: ArrayLike, name: str) -> NDArray[np.intp]:
    p = _check_permutation_array(perm, name)
    inv = _invert(p)
    # Values are in range, so a repeated value leaves some slot unwritten (pigeonhole):
    # the scatter itself detects every non-permutation.
    if inv.size and inv.min() < 0:
        bad = tuple(int(i) for i in np.argwhere(inv < 0)[0])
        raise ValueError(
            f"{name} row {bad[:-1]} is not a permutation of 0..{p.shape[-1] - 1}: "
            f"value {bad[-1]} is missing (another value repeats)"
        )
    return inv


def ranks_from_order(order: ArrayLike) -> NDArray[np.intp]:
    """Position of every item, given the items by position.

    ``ranks[..., order[..., i]] = i``: the inverse permutation along the last axis
    (σ from σ⁻¹ in Chaudhuri & Tewari 2015 §2).

    Parameters
    ----------
    order
        Integer array of shape (..., n_items); each row a permutation of
        ``0..n_items-1``, item indices best first.

    Returns
    -------
    ranks
        Array of the same shape, ``ranks[..., u]`` the 0-based position of item ``u``.

    Raises
    ------
    TypeError
        If ``order`` is not an integer array.
    ValueError
        If it is a scalar, empty along the last axis, or a row is not a permutation.

    Examples
    --------
    >>> ranks_from_order([2, 0, 1])
    array([1, 2, 0])
    >>> ranks_from_order([[0, 1, 2], [1, 2, 0]])
    array([[0, 1, 2],
           [2, 0, 1]])
    """
    return _checked_invert(order, "order")


def order_from_ranks(ranks: ArrayLike) -> NDArray[np.intp]:
    """Items by position, given the position of every item.

    ``order[..., ranks[..., u]] = u``: the inverse of :func:`ranks_from_order`.

    Parameters
    ----------
    ranks
        Integer array of shape (..., n_items); each row a permutation of
        ``0..n_items-1``, ``ranks[..., u]`` the 0-based position of item ``u``.

    Returns
    -------
    order
        Array of the same shape, ``order[..., 0]`` the top item.

    Raises
    ------
    TypeError
        If ``ranks`` is not an integer array.
    ValueError
        If it is a scalar, empty along the last axis, or a row is not a permutation.

    Examples
    --------
    >>> order_from_ranks([1, 2, 0])
    array([2, 0, 1])
    """
    return _checked_invert(ranks, "ranks")


def _descending_stable(s: NDArray[np.generic]) -> NDArray[np.intp]:
    """Argsort by descending value, ties by lower index first, for any real dtype.

    Negating would overflow unsigned and minimum signed integers, so sort the
    reversed row ascending (stable) and read the result backwards: equal values
    then come out by increasing original index.
    """
    m = s.shape[-1]
    ascending_of_reversed: NDArray[np.intp] = np.argsort(s[..., ::-1], axis=-1, kind="stable")
    descending: NDArray[np.intp] = (m - 1) - ascending_of_reversed[..., ::-1]
    return descending


def order_from_scores(scores: ArrayLike, *, rng: RNGLike = None) -> NDArray[np.intp]:
    """Items sorted by descending score.

    Ties: without ``rng``, the lower item index comes first (a stable sort on
    −score), so the result is deterministic. With ``rng``, tied items are put in
    a uniformly random order: the items are first shuffled by a uniform random
    permutation, then sorted stably, so any tie set keeps the shuffled — hence
    uniform — relative order. ``-inf`` sorts last (use it to pad unequal lists),
    ``+inf`` first.

    Parameters
    ----------
    scores
        Real array of shape (..., n_items), n_items >= 1, no NaN.
    rng
        ``None`` for the deterministic tie rule; otherwise a seed or Generator
        that breaks ties at random.

    Returns
    -------
    order
        Integer array of shape (..., n_items), ``order[..., 0]`` the top item.

    Raises
    ------
    TypeError
        If ``scores`` is not real-valued.
    ValueError
        If it is a scalar, empty along the last axis, or contains NaN.

    Examples
    --------
    >>> order_from_scores([0.5, 2.0, 0.5, -np.inf, 3.0])
    array([4, 1, 0, 2, 3])
    >>> sorted(order_from_scores([1.0, 1.0, 1.0], rng=0).tolist())
    [0, 1, 2]
    """
    s = _check_scores(scores)
    if rng is None:
        return _descending_stable(s)
    shuffle = random_order(s.shape[-1], rng, size=s.shape[:-1])
    by_score = _descending_stable(np.take_along_axis(s, shuffle, axis=-1))
    return np.take_along_axis(shuffle, by_score, axis=-1)


def ranks_from_scores(scores: ArrayLike, *, rng: RNGLike = None) -> NDArray[np.intp]:
    """Position of every item when sorted by descending score.

    ``ranks_from_order(order_from_scores(scores, rng=rng))``: the same tie rule
    as :func:`order_from_scores`.

    Parameters
    ----------
    scores
        Real array of shape (..., n_items), n_items >= 1, no NaN.
    rng
        ``None`` for the deterministic tie rule (lower index first); otherwise a
        seed or Generator that breaks ties uniformly at random.

    Returns
    -------
    ranks
        Integer array of shape (..., n_items), ``ranks[..., u]`` the 0-based
        position of item ``u``.

    Examples
    --------
    >>> ranks_from_scores([0.5, 2.0, 0.5])
    array([1, 0, 2])
    """
    return _invert(order_from_scores(scores, rng=rng))


# ---------------------------------------------------------------------------
# sampling


def _check_size(size: int | Sequence[int]) -> tuple[int, ...]:
    shape = (size,) if isinstance(size, int | np.integer) else tuple(size)
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0:
            raise ValueError(f"size must be a non-negative int or a tuple of them, got {size!r}")
    return tuple(int(d) for d in shape)


def random_order(n_items: int, rng: RNGLike, size: int | Sequence[int] = ()) -> NDArray[np.intp]:
    """Uniformly random orders of ``n_items`` items.

    Each row is a Fisher–Yates shuffle of ``0..n_items-1`` (``Generator.permuted``
    along the last axis): exactly uniform over the n! orders and O(n) per row.
    Sorting uniforms (``argsort(rng.random(...))``) would be O(n log n), slightly
    non-uniform when two uniforms collide, and was measured 1.4× slower for 100
    rows of 10 000 items and 3.5× slower for 10⁵ rows of 4 items (though 1.5×
    faster for 100 rows of 100 items).

    Parameters
    ----------
    n_items
        Number of items, >= 1.
    rng
        Seed or Generator.
    size
        Leading shape (int or tuple); the result has shape ``size + (n_items,)``.

    Returns
    -------
    order
        Integer array of shape ``size + (n_items,)``.

    Examples
    --------
    >>> o = random_order(5, rng=0, size=3)
    >>> o.shape, bool((np.sort(o, axis=-1) == np.arange(5)).all())
    ((3, 5), True)
    """
    m = _check_n_items(n_items)
    shape = _check_size(size) + (m,)
    return as_rng(rng).permuted(np.broadcast_to(np.arange(m, dtype=np.intp), shape), axis=-1)


# ---------------------------------------------------------------------------
# enumeration


def all_orders(n_items: int) -> NDArray[np.intp]:
    """Every order of ``n_items`` items, in ``itertools.permutations`` order.

    Row ``i`` equals ``list(itertools.permutations(range(n_items)))[i]``, i.e.
    lexicographic order. Built block by block without a Python loop per order:
    the orders starting with item ``f`` are ``f`` followed by the orders of
    ``n_items - 1`` items relabelled increasingly onto the remaining items, which
    keeps lexicographic order.

    Parameters
    ----------
    n_items
        Number of items, 1 <= n_items <= 10 (10! × 10 indices is about 290 MB).

    Returns
    -------
    orders
        Integer array of shape (n_items!, n_items).

    Raises
    ------
    ValueError
        If ``n_items`` is below 1 or above :data:`MAX_ENUMERATED_ITEMS`.

    Examples
    --------
    >>> all_orders(3)
    array([[0, 1, 2],
           [0, 2, 1],
           [1, 0, 2],
           [1, 2, 0],
           [2, 0, 1],
           [2, 1, 0]])
    """
    m = _check_n_items(n_items)
    if m > MAX_ENUMERATED_ITEMS:
        raise ValueError(
            f"n_items must be <= {MAX_ENUMERATED_ITEMS} to enumerate all orders "
            f"({m}! = {math.factorial(m)} rows is too many), got {m}"
        )
    orders = np.zeros((1, 0), dtype=np.intp)
    for k in range(1, m + 1):
        items = np.arange(k, dtype=np.intp)
        blocks = [
            np.column_stack([np.full(len(orders), f, dtype=np.intp), np.delete(items, f)[orders]])
            for f in range(k)
        ]
        orders = np.concatenate(blocks)
    return orders
