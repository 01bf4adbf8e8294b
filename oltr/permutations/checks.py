"""The runner's every-round check that a learner's orders are permutations, compiled.

:func:`oltr.validation.check_orders` sorts each row and compares it with
``0..m−1``: about ten numpy calls, which on one short list cost more than the
learner's whole round. :func:`checked_orders` answers the common case — a
C-ordered ``intp`` array of the expected shape, what every learner returns — in
one compiled pass (each row marks the items it has seen), and hands anything
else, and any row that fails, to :func:`~oltr.validation.check_orders`, which
converts what it can and says what is wrong in the same words as before.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from oltr.kernels import njit
from oltr.types import Orders
from oltr.validation import check_orders

__all__ = ["checked_orders", "first_non_permutation"]

_INTP = np.dtype(np.intp)


@njit(nogil=True)
def first_non_permutation(orders: Any) -> int:  # pragma: no cover
    """The first row of ``orders`` (n, m) that is not a permutation of ``0..m−1``, or −1.

    A row of m entries is a permutation exactly when every entry lies in
    ``0..m−1`` and none repeats (m distinct values from a set of m).
    """
    n, m = orders.shape
    seen = np.empty(m, np.bool_)
    for row in range(n):
        seen[:] = False
        for i in range(m):
            item = orders[row, i]
            if item < 0 or item >= m or seen[item]:
                return row
            seen[item] = True
    return -1


def checked_orders(
    orders: ArrayLike, n_items: int, n_runs: int | None = None, n_lists: int = 1
) -> Orders:
    """:func:`~oltr.validation.check_orders`, with one compiled pass for a learner's own arrays.

    Returns ``orders`` itself when it is a C-ordered ``intp`` array of shape
    (n_runs, m) — (n_runs, 2, m) for duels — whose rows are permutations, as
    ``check_orders`` does; anything else gets ``check_orders``'s conversion or
    its error.
    """
    if (
        type(orders) is np.ndarray
        and orders.dtype is _INTP
        and orders.ndim == n_lists + 1
        and orders.shape[-1] == n_items
        and orders.shape[0] >= 1
        and (n_runs is None or orders.shape[0] == n_runs)
        and (n_lists == 1 or orders.shape[1] == 2)
        and orders.flags.c_contiguous
        and first_non_permutation(orders.reshape(-1, n_items)) < 0
    ):
        return orders
    return check_orders(orders, n_items, n_runs, n_lists)
