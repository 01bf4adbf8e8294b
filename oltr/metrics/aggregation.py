"""Ailon's (2014) rank-aggregation losses: the position loss ℓ_z and Spearman's ρ."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from numpy.typing import ArrayLike

from oltr.metrics.pairwise import sum_loss
from oltr.types import FloatArray
from oltr.validation import check_choice, check_scalar

__all__ = ["POSITION_WEIGHTS", "position_loss", "position_weights", "spearman_rho"]


def _linear(pos: FloatArray) -> FloatArray:
    return pos - 1.0


def _quadratic(pos: FloatArray) -> FloatArray:
    return (pos - 1.0) ** 2


def _dcg(pos: FloatArray) -> FloatArray:
    return 1.0 - 1.0 / np.log2(1.0 + pos)


#: Nondecreasing position weights ``z(i)``, positions ``i`` from 1 (Ailon 2014 §8):
#: ``linear`` ``i − 1`` (eq. 2.1, positions from 0), ``quadratic`` ``(i − 1)²``
#: (Theorem 8.1 with d = 2), ``dcg`` ``1 − 1/log2(1 + i)`` (one minus the DCG
#: discount, §8's ``z_NDCG`` turned into a nondecreasing loss weight).
POSITION_WEIGHTS: Mapping[str, Callable[[FloatArray], FloatArray]] = {
    "linear": _linear,
    "quadratic": _quadratic,
    "dcg": _dcg,
}


def position_weights(z: str, n_items: int) -> FloatArray:
    """The vector ``(z(1), …, z(n_items))`` of a named position weight.

    >>> position_weights("linear", 4).tolist()
    [0.0, 1.0, 2.0, 3.0]
    """
    check_choice(z, "z", tuple(POSITION_WEIGHTS))
    return POSITION_WEIGHTS[z](np.arange(1, n_items + 1, dtype=np.float64))


def position_loss(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    z: str = "linear",
    validate: bool = True,
) -> np.float64 | FloatArray:
    """Ailon's position-weighted loss ``ℓ_z(π, s) = Σ_u z(π(u)) s(u)`` (a loss).

    ``π(u)`` is the 1-based position of item ``u`` among the real items and
    ``s = relevance``. With ``z = "linear"`` (``z(i) = i − 1``) this is eq. (2.1)
    with positions counted from 0: for a single choice, the position of the
    chosen item (0 on top); it equals ``sumloss − Σ_u s(u)``.

    Parameters
    ----------
    relevance
        Grades ``s``, shape (..., m), finite and >= 0.
    order
        Item indices by position, shape (..., m).
    k
        Optional cutoff >= 1: positions below ``k`` are charged as position
        ``k + 1`` (``z(min(i, k + 1))``), a user who scans at most ``k`` items.
        None: no cutoff.
    mask
        Boolean (..., m), True = real item.
    z
        Name of the position weight in :data:`POSITION_WEIGHTS`.
    validate
        Check shapes and values (as :mod:`oltr.metrics` does).

    References
    ----------
    Ailon 2014, eq. (2.1) and §8 (``ℓ_z``).

    Examples
    --------
    >>> print(position_loss([0, 1, 0], [0, 1, 2]))  # the chosen item is second: loss 1
    1.0
    >>> print(position_loss([1, 0, 1], [1, 2, 0], z="quadratic"))  # positions 1, 2 from 0
    5.0
    """
    check_choice(z, "z", tuple(POSITION_WEIGHTS))
    if validate:
        sum_loss(relevance, order, mask=mask)  # the measures' own shape and value checks
    if k is not None:
        check_scalar(k, "k", low=1, integer=True)
    rel, ordr = np.asarray(relevance, dtype=np.float64), np.asarray(order, dtype=np.intp)
    m = rel.shape[-1]
    msk = np.ones((m,), bool) if mask is None else np.asarray(mask, dtype=bool)
    lead = np.broadcast_shapes(rel.shape[:-1], msk.shape[:-1], ordr.shape[:-1])
    idx = np.broadcast_to(ordr, lead + (m,))
    real = np.take_along_axis(np.broadcast_to(msk, lead + (m,)), idx, axis=-1)
    rel_s = np.take_along_axis(np.broadcast_to(np.where(msk, rel, 0.0), lead + (m,)), idx, axis=-1)
    pos = np.cumsum(real, axis=-1).astype(np.float64)
    if k is not None:
        pos = np.minimum(pos, k + 1.0)
    weight = POSITION_WEIGHTS[z](np.maximum(pos, 1.0))
    return np.asarray(np.sum(np.where(real, weight * rel_s, 0.0), axis=-1), np.float64)[()]


def spearman_rho(
    relevance: ArrayLike,
    order: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    validate: bool = True,
) -> np.float64 | FloatArray:
    """Ailon's unnormalised Spearman correlation ``ρ(π, σ) = Σ_u π(u) σ(u)`` (a gain).

    The reference ranking is read from the grades as ``σ(u) = m − r(u)``, ``m``
    the number of real items: a ranking ``σ`` is stored as ``r(u) = m − σ(u)``
    (grades ``0..m−1``), as :class:`RankAggregationEnv` does. ``π(u)`` is the
    1-based position of ``u`` in ``order``. Since ``ρ = m Σ_u π(u) − Σ_u π(u) r(u)``,
    ``−ρ`` and ``sumloss`` differ by ``m²(m+1)/2`` and have the same regret.

    Parameters
    ----------
    relevance, order, mask, validate
        As in :func:`position_loss`.
    k
        Must be None (the correlation has no cutoff).

    References
    ----------
    Ailon 2014, §5 (online rank aggregation over the Spearman correlation).

    Examples
    --------
    >>> print(spearman_rho([2, 1, 0], [0, 1, 2]))  # σ = π = identity: 1 + 4 + 9
    14.0
    >>> print(spearman_rho([2, 1, 0], [2, 1, 0]))  # reversed: 1·3 + 2·2 + 3·1
    10.0
    """
    if k is not None:
        raise ValueError(f"spearman_rho takes no cutoff, got k={k}")
    if validate:
        sum_loss(relevance, order, mask=mask)
    rel = np.asarray(relevance, dtype=np.float64)
    m_real = (
        np.full(rel.shape[:-1], rel.shape[-1], dtype=np.float64)
        if mask is None
        else np.asarray(mask, dtype=bool).sum(axis=-1).astype(np.float64)
    )
    n_pos = m_real * (m_real + 1.0) / 2.0  # Σ_u π(u) over real items
    s_loss = np.asarray(sum_loss(relevance, order, mask=mask, validate=False))
    return np.asarray(m_real * n_pos - s_loss, dtype=np.float64)[()]
