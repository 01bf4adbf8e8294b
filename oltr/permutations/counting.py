"""Stable orders of short lists by counting: no sort, no data-dependent branch in the counts.

A stable sort of ``m`` keys has a unique result. Item ``i`` lands at position
``#{j: k_j < k_i} + #{j < i: k_j == k_i}``: after every smaller key, and after the
equal keys of lower index. The first count is a compare-and-add loop over the
row, which vectorises; four items are counted in one pass over the row, so each
key loaded serves four compares. Equal keys share their first count ``c`` and own
the positions ``c, c + 1, …`` exactly, so placing the items in index order, each
at the first free position from its count, puts ties in index order without a
second count.

That is ``m²`` compares against the ``m log m`` of a merge sort, but without a
branch that depends on the data they run faster for the list lengths of learning
to rank (docs/benchmarks.md): 2.5–4× a compiled merge sort of one list of 120–400
items (level at 40), 1.6–4× numpy's vectorised ``argsort`` with a tie pass for 64
lists of 24–120 items, and level with it near 300 items (:data:`COUNTING_UP_TO`
leaves longer lists to a sort). The keys must be comparable: NaN compares false
both ways, so a row with NaN gets *a* permutation, not a meaningful one; callers
check first (:func:`stable_orders` hands such rows to numpy's sort).
"""

from __future__ import annotations

import numpy as np

from oltr.kernels import njit
from oltr.types import FloatArray, Orders

__all__ = ["COUNTING_UP_TO", "order_by_counting", "orders_by_counting", "stable_orders"]

#: Lists up to this length are ordered by counting; longer ones by a sort.
COUNTING_UP_TO = 256


@njit(nogil=True)
def _place(out: Orders, position: int, item: int) -> None:  # pragma: no cover
    # The first free position from ``position``, wrapping round: a permutation
    # comes back even when NaN keys make the counts inconsistent.
    m = out.shape[0]
    while out[position] != -1:
        position = position + 1 if position + 1 < m else 0
    out[position] = item


@njit(nogil=True)
def order_by_counting(keys: FloatArray, out: Orders) -> None:  # pragma: no cover
    """The stable increasing order of one row of keys (m,), into ``out`` (m,).

    ``out[p]`` is the item at position p: smaller keys first, equal keys by
    lower index first, as ``np.argsort(keys, kind="stable")`` (module docstring).
    """
    m = keys.shape[0]
    for p in range(m):
        out[p] = -1
    i = 0
    while i + 4 <= m:  # four items a pass: each key loaded serves four compares
        k0, k1, k2, k3 = keys[i], keys[i + 1], keys[i + 2], keys[i + 3]
        c0 = c1 = c2 = c3 = 0
        for j in range(m):
            k = keys[j]
            c0 += k < k0
            c1 += k < k1
            c2 += k < k2
            c3 += k < k3
        _place(out, c0, i)
        _place(out, c1, i + 1)
        _place(out, c2, i + 2)
        _place(out, c3, i + 3)
        i += 4
    while i < m:
        key, c = keys[i], 0
        for j in range(m):
            c += keys[j] < key
        _place(out, c, i)
        i += 1


@njit(nogil=True)
def orders_by_counting(keys: FloatArray, out: Orders) -> None:  # pragma: no cover
    """:func:`order_by_counting` of every row of ``keys`` (B, m), into ``out`` (B, m)."""
    for b in range(keys.shape[0]):
        order_by_counting(keys[b], out[b])


@njit(nogil=True)
def _orders_of_comparable(keys: FloatArray, out: Orders) -> bool:  # pragma: no cover
    # orders_by_counting where no key is NaN (False, nothing written, otherwise)
    for b in range(keys.shape[0]):
        for i in range(keys.shape[1]):
            if keys[b, i] != keys[b, i]:
                return False
    orders_by_counting(keys, out)
    return True


def stable_orders(keys: FloatArray) -> Orders:
    """``np.argsort(keys, axis=-1, kind="stable")`` as ``intp``, by counting where it can.

    Float keys of up to :data:`COUNTING_UP_TO` items along the last axis, none
    NaN, are ordered by :func:`orders_by_counting` (the same order: a stable
    order is unique); anything else by numpy's stable sort, which puts NaN last.
    """
    m = keys.shape[-1] if keys.ndim else 0
    if keys.dtype.char in "fd" and 0 < m <= COUNTING_UP_TO:
        rows = np.ascontiguousarray(keys).reshape(-1, m)
        out = np.empty(rows.shape, dtype=np.intp)
        if _orders_of_comparable(rows, out):
            return out.reshape(keys.shape)
    return np.argsort(keys, axis=-1, kind="stable").astype(np.intp, copy=False)
