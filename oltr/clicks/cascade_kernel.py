"""The cascade user's clicks on the top of each shown order, in one compiled pass.

:meth:`oltr.clicks.cascade.StopRuleCascade.clicks_from_uniforms` computes the
clicks from all coins at once with about ten numpy calls (the probabilities of
the shown grades, two comparisons, an exclusive running "any" of the stops);
on one result page of ten that costs more than a learner's round.
:func:`cascade_clicks` walks each page top-down instead, reading the same
coins: position ``j`` is clicked when no stop came up above it and
``u_click[j] < c[g_j]``; its stop coin comes up when ``u_stop[j] < s[g_j]``
(and, with the after-click rule, it was clicked). The comparisons are the numpy
path's, so the clicks are the same, bit for bit (``tests/clicks`` compares
them). It is imported only where clicks are simulated, so that importing
:mod:`oltr.clicks` does not load numba.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.kernels import njit

__all__ = ["BAD_GRADE", "BAD_ITEM", "cascade_clicks", "clicks_on_orders"]

#: :func:`cascade_clicks`'s answer when a shown item is not an index of the relevance vector.
BAD_ITEM = -2
#: :func:`cascade_clicks`'s answer when a shown grade is not one the model knows.
BAD_GRADE = -3


@njit(nogil=True)
def cascade_clicks(
    relevance: Any,
    orders: Any,
    uniforms: Any,
    click_prob: Any,
    stop_prob: Any,
    after_click: bool,
    out: Any,
) -> int:  # pragma: no cover
    """``out[b, j]``: the click at position ``j`` of run ``b``'s page, ``orders[b, :n]``.

    ``relevance`` (m,) holds integer grades, ``uniforms`` (B, 2, n) each run's
    click coins (row 0) and stop coins (row 1), ``out`` is (B, n). Returns −1,
    or :data:`BAD_ITEM` / :data:`BAD_GRADE` when a shown item is not in
    ``0..m−1`` or its grade not in ``0..len(click_prob)−1`` (every shown
    position is checked, stopped or not, as the numpy path checks them all).
    """
    n_runs, n = out.shape
    m, n_grades = relevance.shape[0], click_prob.shape[0]
    for b in range(n_runs):
        stopped = False
        for j in range(n):
            item = orders[b, j]
            if item < 0 or item >= m:
                return BAD_ITEM
            grade = relevance[item]
            if grade < 0 or grade >= n_grades:
                return BAD_GRADE
            click = not stopped and uniforms[b, 0, j] < click_prob[grade]
            out[b, j] = click
            if not stopped:
                stop = uniforms[b, 1, j] < stop_prob[grade]
                stopped = stop and click if after_click else stop
    return -1


def clicks_on_orders(
    relevance: NDArray[Any],
    orders: NDArray[np.intp],
    uniforms: NDArray[np.float64],
    tables: NDArray[np.float64],
    after_click: bool,
) -> NDArray[np.bool_] | None:
    """Clicks (B, n) on the first ``n = uniforms.shape[-1]`` items of each order (B, m) by a
    cascade user with ``tables = [click_prob, stop_prob]`` and each run's coins ``uniforms``
    (B, 2, n): :func:`cascade_clicks` for int64 grades and C-ordered arrays; None for anything
    else, or for an item or grade out of range, which the caller's numpy path then reports."""
    if not (
        relevance.dtype == np.int64
        and relevance.ndim == 1
        and orders.dtype == np.intp
        and orders.ndim == 2
        and orders.flags.c_contiguous
        and uniforms.dtype == np.float64
        and uniforms.ndim == 3
        and uniforms.shape[:2] == (orders.shape[0], 2)
        and uniforms.shape[2] <= orders.shape[1]
        and uniforms.flags.c_contiguous
    ):
        return None
    out = np.empty((orders.shape[0], uniforms.shape[2]), dtype=np.bool_)
    if cascade_clicks(relevance, orders, uniforms, tables[0], tables[1], after_click, out) != -1:
        return None
    return out
