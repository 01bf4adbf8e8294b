"""(N)DCG of whole lists, the runner's every-round measure, without the padding machinery.

:func:`oltr.metrics.ranking.ndcg` handles padded lists (a mask), broadcasting of any leading
axes and any gain and discount; most of its time on one list of 40 goes to that generality
(about 50 numpy calls). The runner evaluates, every round, B orders (two per run for duels)
of one unpadded relevance vector with the default gain and discount. For that case
:func:`ndcg_whole_lists` computes **the same sums of the same values in the same order** as
the general path, in a handful of numpy calls a round: each query's gains 2^r − 1 and ideal
DCG are computed once (a query's lists come back round after round), the shown lists' gains
are indexed from them (the gain is elementwise, so they are the values the general path
computes after indexing), the discounts of positions 1..m come from a cache with the
cutoff's mask folded in (zero beyond k), and the row sums are numpy's ``add.reduce``, what
``np.sum`` calls. Every value is bit for bit the general path's
(``tests/metrics/test_whole_lists.py`` compares them exactly; why the folded mask changes no
bit is said where the terms are formed).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from oltr.metrics.lists import Array, Value, exp2_gain, log2_discount

__all__ = ["dcg_whole_lists", "ndcg_whole_lists"]

#: Below this, m × max |gain| leaves float64 room for any sum of m discounted gains.
_QUIET_BOUND = 1e307


@functools.lru_cache(maxsize=64)
def _positions(shape: tuple[int, ...], k: int) -> Array:
    """The discounts of positions 1..m over ``shape`` as the general path computes them
    (``_dcg_sorted``), zero beyond the first ``k`` (none when k is 0)."""
    m = shape[-1]
    pos = np.broadcast_to(np.arange(1, m + 1, dtype=np.int64), shape).copy()
    discounts = log2_discount(np.maximum(pos, 1).astype(np.float64))
    if k:
        discounts = np.where(pos <= k, discounts, 0.0)
    discounts.flags.writeable = False
    return discounts


class _Query(NamedTuple):
    """What every evaluation of one query's grades shares."""

    gains: Array  # 2^r − 1 of each item, read-only
    ideal: np.float64  # the ideal DCG@k, as the general path computes it
    quiet: bool  # no product or sum of the evaluation can overflow (no errstate needed)


@functools.lru_cache(maxsize=4096)
def _query(dtype: str, grades: bytes, k: int) -> _Query | None:
    """The gains and ideal DCG@k (k: 1..m) of the grades given as bytes of ``dtype`` (a
    query's lists come back round after round: computed once); None when the ideal DCG is
    not finite (an overflowing sum is left to the general path)."""
    # The general path pads with np.where(mask, relevance, 0.0).astype(float64): the same values.
    rel0 = np.frombuffer(grades, dtype).astype(np.float64)
    gains = exp2_gain(rel0)
    gains.flags.writeable = False
    ideal = -np.sort(-gains, axis=-1)
    discounts = _positions(rel0.shape, k)
    with np.errstate(over="ignore"):
        top = np.where(discounts > 0, ideal, 0.0)
        z: np.float64 = np.sum(np.where(discounts > 0, top * discounts, 0.0), axis=-1)
    if not np.isfinite(z):
        return None
    # Every term is a gain times a discount <= 1, so m times the largest |gain| bounds every
    # partial sum of any m terms, in any order, whatever the orders (duplicates too).
    quiet = bool(np.abs(gains).max() < _QUIET_BOUND / gains.size)
    return _Query(gains, z, quiet)


def _shown_sums(
    relevance: NDArray[np.generic], orders: NDArray[np.generic], k: int
) -> tuple[_Query, Array] | None:
    """The query's cache entry and the DCG@k sums of each list of ``orders`` (B, m) — or
    (B, 2, m), the two lists of a duel — or None when the inputs are of another form or the
    ideal DCG is not finite."""
    if (
        relevance.ndim != 1
        or orders.ndim not in (2, 3)
        or orders.shape[-1] != relevance.shape[0]
        or relevance.dtype.kind not in "iuf"
        or orders.dtype.kind not in "iu"
        or relevance.shape[0] == 0
    ):
        return None
    m = relevance.shape[0]
    query = _query(relevance.dtype.str, relevance.tobytes(), min(m, k) if k else m)
    if query is None:
        return None
    # The general path's np.where(take, gains * discounts, 0.0), with the gains indexed after
    # 2^r − 1 (elementwise: the same values) and the mask in the discounts: beyond k a term is
    # gain × 0.0, which is the where's +0.0 for the grades >= 0 the general path accepts.
    # Each list's sum runs along its own contiguous row, whatever the leading axes.
    terms = query.gains[orders] * _positions(orders.shape, k)
    if query.quiet:
        return query, np.add.reduce(terms, axis=-1)  # what np.sum calls
    with np.errstate(over="ignore"):
        return query, np.add.reduce(terms, axis=-1)


def ndcg_whole_lists(
    relevance: NDArray[np.generic], orders: NDArray[np.generic], k: int, no_relevant: float
) -> Value | None:
    """NDCG@k (``k`` 0: whole list) of each list of ``orders`` (B, m) or (B, 2, m) under
    ``relevance`` (m,), gain 2^r − 1 and discount 1/log2(1 + i); None when the inputs are of another
    form or a sum overflows (the general path then answers, or says what is wrong).
    Inputs are not validated (``validate=False``)."""
    if not isinstance(no_relevant, float):  # np.float64 too; others: the general path
        return None
    found = _shown_sums(relevance, orders, k)
    if found is None:
        return None
    query, num = found
    # _ratio's np.divide(num, z, where=z > 0) over np.full(fill): the same divisions.
    z = query.ideal
    return num / z if z > 0 else np.full(num.shape, no_relevant, dtype=np.float64)


def dcg_whole_lists(
    relevance: NDArray[np.generic], orders: NDArray[np.generic], k: int
) -> Value | None:
    """DCG@k (``k`` 0: whole list) of each list of ``orders`` (B, m) or (B, 2, m), as
    :func:`ndcg_whole_lists` computes its numerator; None as there, or when a sum is not
    finite (the general path then refuses it)."""
    found = _shown_sums(relevance, orders, k)
    if found is None:
        return None
    query, num = found
    if not query.quiet and not np.isfinite(num).all():
        return None
    return num
