"""NDCG of whole lists, the runner's every-round measure, without the padding machinery.

:func:`oltr.metrics.ranking.ndcg` handles padded lists (a mask), broadcasting
of any leading axes and any gain and discount; most of its time on one list of
40 goes to that generality (about 50 numpy calls). The runner evaluates, every
round, B orders of one unpadded relevance vector with the default gain and
discount. For that case :func:`ndcg_whole_lists` makes **the same numpy calls
on arrays of the same shapes and values** as the general path where a result
depends on them (the gains of the shown grades, the discounted sums, the ideal
order), and takes the rest from a small cache: the discounts of positions
1..m for a (B, m) and an (m,) array, computed once by the general path's own
expression, and the cutoff's masks. An array of all-True masks and its
cumulative sum (the general path's positions) are exactly 1..m, so they are
not built. Every value is bit for bit the general path's
(``tests/metrics/test_whole_lists.py`` compares them exactly).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from oltr.metrics.lists import Array, Value, exp2_gain, log2_discount

__all__ = ["ndcg_whole_lists"]


@functools.lru_cache(maxsize=64)
def _positions(shape: tuple[int, ...], k: int) -> tuple[Array, NDArray[np.bool_]]:
    """The discounts of positions 1..m over ``shape`` and the mask of the first ``k``
    (all when k is 0), as the general path computes them (``_dcg_sorted``, ``_top``)."""
    m = shape[-1]
    pos = np.broadcast_to(np.arange(1, m + 1, dtype=np.int64), shape).copy()
    discounts = log2_discount(np.maximum(pos, 1).astype(np.float64))
    take = pos <= k if k else np.ones(shape, bool)
    discounts.flags.writeable = take.flags.writeable = False
    return discounts, take


@functools.lru_cache(maxsize=4096)
def _ideal_dcg(grades: bytes, k: int) -> np.float64:
    """The ideal DCG@k (k: 1..m) of float64 grades given as bytes, as the general path
    computes it (a query's lists come back round after round: computed once)."""
    rel0 = np.frombuffer(grades, np.float64)
    ideal = -np.sort(-exp2_gain(rel0), axis=-1)
    discounts, take = _positions(rel0.shape, k)
    with np.errstate(over="ignore"):  # an overflowing sum is left to the general path
        top = np.where(take, ideal, 0.0)
        z: np.float64 = np.sum(np.where(take, top * discounts, 0.0), axis=-1)
    return z


def ndcg_whole_lists(
    relevance: NDArray[np.generic], orders: NDArray[np.generic], k: int, no_relevant: float
) -> Value | None:
    """NDCG@k (``k`` 0: whole list) of each row of ``orders`` (B, m) under ``relevance``
    (m,), gain 2^r − 1 and discount 1/log2(1 + i); None when the inputs are of another
    form or a sum overflows (the general path then answers, or says what is wrong).
    Inputs are not validated (``validate=False``)."""
    if (
        relevance.ndim != 1
        or orders.ndim != 2
        or orders.shape[1] != relevance.shape[0]
        or relevance.dtype.kind not in "iuf"
        or orders.dtype.kind not in "iu"
        or relevance.shape[0] == 0
        or not isinstance(no_relevant, float)  # np.float64 too; others: the general path
    ):
        return None
    m = relevance.shape[0]
    # The general path pads with np.where(mask, relevance, 0.0).astype(float64): the same values.
    rel0 = relevance if relevance.dtype == np.float64 else relevance.astype(np.float64)
    z = _ideal_dcg(rel0.tobytes(), min(m, k) if k else m)
    if not np.isfinite(z):
        return None
    discounts, take = _positions(orders.shape, k)
    gains = exp2_gain(rel0[orders])
    with np.errstate(over="ignore"):
        num = np.sum(np.where(take, gains * discounts, 0.0), axis=-1)
    # _ratio's np.divide(num, z, where=z > 0) over np.full(fill): the same divisions.
    out = num / z if z > 0 else np.full(num.shape, no_relevant, dtype=np.float64)
    return np.asarray(out, dtype=np.float64)[()]
