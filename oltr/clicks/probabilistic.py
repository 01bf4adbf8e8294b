"""Probabilistic interleaving (Hofmann, Whiteson & de Rijke 2011).

Softmax lists from the two rankings and marginal credit for the clicks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.click_models import RNGs
from oltr.clicks.interleaving import (
    _TIE_TOL,
    TEAM_A,
    TEAM_B,
    _check_clicks,
    _draws,
    _prepare,
    _scalar_if_0d,
    _sign,
    _unflat,
)

__all__ = ["ProbabilisticInterleaving", "probabilistic_interleave", "softmax_weights"]


@dataclass(frozen=True)
class ProbabilisticInterleaving:
    """A probabilistically interleaved list with its sampled and inferred assignments.

    Attributes
    ----------
    shown
        Items by position, shape (..., n).
    assignment
        The ranker that was sampled to fill each position (−1 A, +1 B), shape (..., n).
    posterior_b
        P(position i was filled by B | shown list), shape (..., n). The list's
        likelihood factorises over positions, so these are independent:
        ``p_B(d_i | rest_i) / (p_A(d_i | rest_i) + p_B(d_i | rest_i))``, with
        ``rest_i`` the items not shown above position i.
    """

    shown: NDArray[np.intp]
    assignment: NDArray[np.int8]
    posterior_b: NDArray[np.float64]

    def expected_outcome(self, clicks: ArrayLike) -> Any:
        """E[o | shown, clicks] in [−1, 1], marginalised over assignments (Hofmann 2011 §4).

        ``o(a) = sign(#clicks credited to B − #clicks credited to A)``; the
        assignments at the clicked positions are independent given the list, so
        the count difference has a Poisson-binomial law, computed exactly by a
        convolution over positions (O(n²) per list instead of the 2^n sum).
        Returns float64 of the batch shape (a numpy scalar for a single list).
        """
        c = _check_clicks(clicks, self.shown.shape)
        q = self.posterior_b
        n = c.shape[-1]
        # dist[..., j] = P(difference = j − n), difference in [−n, n].
        dist = np.zeros(c.shape[:-1] + (2 * n + 1,))
        dist[..., n] = 1.0
        for t in range(n):
            qt = q[..., t, None]
            stepped = np.zeros_like(dist)
            stepped[..., 1:] += qt * dist[..., :-1]  # credited to B: +1
            stepped[..., :-1] += (1.0 - qt) * dist[..., 1:]  # credited to A: −1
            dist = np.where(c[..., t, None], stepped, dist)
        return _scalar_if_0d(dist[..., n + 1 :].sum(axis=-1) - dist[..., :n].sum(axis=-1))

    def outcome(self, clicks: ArrayLike, *, marginalize: bool = True) -> Any:
        """−1 A wins, 0 tie, +1 B wins.

        With ``marginalize`` (default) the sign of :meth:`expected_outcome`
        (|E| <= 1e-12 counts as a tie); otherwise the naive outcome of the
        sampled assignment, sign(clicks on B's positions − clicks on A's).
        """
        if marginalize:
            e = np.asarray(self.expected_outcome(clicks))
            return _scalar_if_0d(_sign(np.where(np.abs(e) <= _TIE_TOL, 0.0, e)))
        c = _check_clicks(clicks, self.shown.shape)
        return _scalar_if_0d(_sign((c * self.assignment).sum(axis=-1)))


def softmax_weights(ranks: ArrayLike, tau: float = 3.0) -> NDArray[np.float64]:
    """Unnormalised probabilistic-interleaving weights 1 / (rank + 1)^τ (0-based ranks)."""
    return np.asarray(
        (np.asarray(ranks, dtype=np.float64) + 1.0) ** (-float(tau)), dtype=np.float64
    )


def probabilistic_interleave(
    order_a: ArrayLike, order_b: ArrayLike, *, k: int = 10, tau: float = 3.0, rng: RNGs
) -> ProbabilisticInterleaving:
    """Probabilistic interleaving of two orders (Hofmann et al. 2011, §4).

    Each ranker s becomes a softmax over items, P_s(d) ∝ 1 / r_s(d)^τ (r 1-based).
    For each position a fair coin picks a ranker, which samples an item from its
    softmax restricted to the items not yet shown; the item is shown and removed
    from both rankers. Every order can produce every list, which makes the
    comparison fair and lets the outcome be marginalised over assignments.

    Parameters
    ----------
    order_a, order_b
        Orders of rankers A and B, shape (..., m), each row a permutation of
        ``0..m-1``, best first. Leading axes broadcast.
    k
        Length of the shown list, >= 1 (default 10).
    tau
        Softmax sharpness τ > 0 (default 3, Hofmann et al. 2011 §4).
    rng
        Seed/Generator, or a sequence of Generators, one per row of a 2-D batch.

    Returns
    -------
    ProbabilisticInterleaving
        ``shown``, ``assignment``, ``posterior_b``; ``outcome(clicks)`` and
        ``expected_outcome(clicks)``.

    References
    ----------
    Hofmann, Whiteson & de Rijke 2011, CIKM, §4 (softmax rankers; marginalising over assignments).

    Examples
    --------
    >>> il = probabilistic_interleave([0, 1, 2], [0, 1, 2], k=3, rng=0)
    >>> il.posterior_b                      # equal rankers: every position 50/50
    array([0.5, 0.5, 0.5])
    >>> float(il.expected_outcome(np.array([True, False, True])))
    0.0
    """
    tau = float(tau)
    if not np.isfinite(tau) or tau <= 0:
        raise ValueError(f"tau must be a finite number > 0, got {tau}")
    p = _prepare(order_a, order_b, k)
    n_rows, n = p.a.shape[0], p.n
    u = _draws(rng, p.batch, (2, n))
    from_b = u[:, 0, :] < 0.5
    w_a, w_b = softmax_weights(p.rank_a, tau), softmax_weights(p.rank_b, tau)
    rows = np.arange(n_rows)
    free = np.ones(p.a.shape, dtype=bool)
    shown = np.empty((n_rows, n), dtype=np.intp)
    posterior_b = np.empty((n_rows, n))
    for t in range(n):
        fa, fb = w_a * free, w_b * free
        weights = np.where(from_b[:, t, None], fb, fa)
        cdf = np.cumsum(weights, axis=1)
        # Threshold in (0, total]: 1 − u avoids picking a zero-weight item when u = 0.
        threshold = (1.0 - u[:, 1, t]) * cdf[:, -1]
        pick = np.minimum((cdf < threshold[:, None]).sum(axis=1), p.a.shape[1] - 1)
        pa = fa[rows, pick] / fa.sum(axis=1)
        pb = fb[rows, pick] / fb.sum(axis=1)
        posterior_b[:, t] = pb / (pa + pb)
        shown[:, t] = pick
        free[rows, pick] = False
    assignment = np.where(from_b, TEAM_B, TEAM_A).astype(np.int8)
    return ProbabilisticInterleaving(
        _unflat(shown, p.batch), _unflat(assignment, p.batch), _unflat(posterior_b, p.batch)
    )
