"""Measures that count item pairs and positions: PairwiseLoss, AUC and SumLoss (CT15 §3)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.metrics.lists import _PAIR_CHUNK, Array, Value, _done, _Lists, _prepare, _ratio

__all__ = ["auc", "pairwise_loss", "sum_loss"]


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
