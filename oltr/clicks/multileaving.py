"""Probabilistic multileaving of n rankers, with exact credit marginalisation (Schuth et al. 2015).

Each ranker ``r`` with ranks ``rank_r(d)`` (0-based) is a softmax over documents,
``P_r(d) ∝ 1 / (rank_r(d) + 1)^τ`` (Hofmann et al. 2011's probabilistic
interleaving, τ = 3). For each of the ``k`` positions a ranker is picked uniformly
and places a document drawn from its softmax restricted to the documents not yet
placed; the document leaves every ranker. (Picking a ranker uniformly and then a
document is the mixture ``(1/n) Σ_r P_r(d | free)`` that the reference
implementation samples from.)

Credit (Schuth et al. 2015, §3): the ranker that placed the document at position
``t`` is unknown to the comparison; given the list, the rankers' contributions are
independent across positions with posterior

    q_t(r) = P_r(d_t | free_t) / Σ_{r'} P_{r'}(d_t | free_t).

Ranker ``a`` beats ``b`` on a result page when more clicks are credited to ``a``
than to ``b``; the preference is its expectation over the posterior,
``E[sign(C_a − C_b)]``. The reference implementation estimates this by sampling
10,000 assignments; here it is computed exactly — ``C_a − C_b`` is a sum of
independent {+1, 0, −1} steps over the clicked positions, whose law is one
convolution per click (O(c²) per pair).

References
----------
Schuth, Bruintjes, Büttner, van Doorn, Groenland, Oosterhuis, Tran, Veeling, van
der Velde, Wechsler, Woudenberg & de Rijke 2015, "Probabilistic multileave for
online retrieval evaluation", SIGIR, §3.
Hofmann, Whiteson & de Rijke 2011, "A probabilistic method for inferring preferences
from clicks", CIKM, §4 (the softmax, τ = 3).
Schuth, Oosterhuis, Whiteson & de Rijke 2016, "Multileave gradient descent for fast
online learning to rank", WSDM, §4.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.kernels import njit
from oltr.types import FloatArray

__all__ = [
    "multileave_credit",
    "multileave_one",
    "preference_vs_first",
    "probabilistic_multileave",
    "rank_weights",
]


@njit(nogil=True)
def rank_weights(m: int, tau: float) -> Any:  # pragma: no cover
    """The softmax numerators ``(r + 1)^{−τ}`` of ranks ``r = 0..m−1``, shape (m,)."""
    table = np.empty(m)
    for r in range(m):
        table[r] = (r + 1.0) ** (-tau)
    return table


@njit(nogil=True)
def multileave_one(
    ranks: Any, u_ranker: Any, u_doc: Any, table: Any, shown: Any, q: Any
) -> None:  # pragma: no cover
    """Multileave one run's rankers (``ranks`` (n, m)) into ``shown`` (k,) and ``q`` (k, n).

    ``table`` is :func:`rank_weights` of at least ``m`` ranks. Compiled; a building
    block of batched learners that rank and multileave in one kernel.
    """
    n_rankers, m = ranks.shape
    k = shown.shape[0]
    w = np.empty((n_rankers, m))
    total = np.zeros(n_rankers)
    for r in range(n_rankers):
        for d in range(m):
            w[r, d] = table[ranks[r, d]]
            total[r] += w[r, d]
    for t in range(k):
        r = min(int(u_ranker[t] * n_rankers), n_rankers - 1)
        threshold = (1.0 - u_doc[t]) * total[r]  # in (0, total]: never a placed (0-weight) doc
        acc = 0.0
        pick = -1
        for d in range(m):
            if w[r, d] > 0.0:
                acc += w[r, d]
                pick = d
                if acc >= threshold:
                    break
        shown[t] = pick
        norm = 0.0
        for s in range(n_rankers):
            q[t, s] = w[s, pick] / total[s]
            norm += q[t, s]
        for s in range(n_rankers):
            q[t, s] /= norm
            total[s] -= w[s, pick]
            w[s, pick] = 0.0


def probabilistic_multileave(
    ranks: NDArray[np.intp], uniforms: FloatArray, *, k: int = 10, tau: float = 3.0
) -> tuple[NDArray[np.intp], FloatArray]:
    """Multileave ``n`` rankers per run; returns the shown lists and the credit posteriors.

    Parameters
    ----------
    ranks
        (B, n, m): ``ranks[b, r, d]`` is the 0-based position of document ``d`` in
        ranker ``r`` of run ``b``.
    uniforms
        (B, 2, k') per-run uniforms, ``k' >= min(k, m)``: row 0 picks the ranker,
        row 1 the document.
    k
        Page length (the first ``min(k, m)`` positions are filled).
    tau
        Softmax sharpness τ > 0.

    Returns
    -------
    shown
        (B, min(k, m)) documents by position.
    posterior
        (B, min(k, m), n): ``q_t(r)``, the probability that ranker ``r`` placed the
        document at position ``t`` given the list.

    Examples
    --------
    >>> ranks = np.array([[[0, 1, 2], [0, 1, 2]]])          # two identical rankers
    >>> shown, q = probabilistic_multileave(ranks, np.full((1, 2, 3), 0.5), k=3)
    >>> q[0].tolist()                                        # every position 50/50
    [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]
    """
    if not np.isfinite(tau) or tau <= 0:
        raise ValueError(f"tau must be a finite number > 0, got {tau}")
    b, n, m = ranks.shape
    kk = min(int(k), m)
    if uniforms.shape[0] != b or uniforms.shape[1] != 2 or uniforms.shape[2] < kk:
        raise ValueError(f"uniforms must have shape ({b}, 2, >= {kk}), got {uniforms.shape}")
    shown = np.empty((b, kk), dtype=np.intp)
    q = np.empty((b, kk, n))
    _multileave_runs(
        np.ascontiguousarray(ranks, dtype=np.intp),
        np.ascontiguousarray(uniforms, dtype=np.float64),
        rank_weights(m, float(tau)),
        shown,
        q,
    )
    return shown, q


@njit(nogil=True)
def _multileave_runs(
    ranks: Any, uniforms: Any, table: Any, shown: Any, q: Any
) -> None:  # pragma: no cover
    for r in range(ranks.shape[0]):
        multileave_one(ranks[r], uniforms[r, 0], uniforms[r, 1], table, shown[r], q[r])


@njit(nogil=True)
def _prefs_one(q: Any, clicks: Any, out: Any) -> None:  # pragma: no cover
    k, n = q.shape
    c = 0
    for t in range(k):
        if clicks[t]:
            c += 1
    dist = np.empty(2 * c + 1)
    nxt = np.empty(2 * c + 1)
    out[0] = 0.0
    for a in range(1, n):
        for j in range(2 * c + 1):
            dist[j] = 0.0
        dist[c] = 1.0  # dist[j] = P(C_a − C_0 = j − c)
        for t in range(k):
            if not clicks[t]:
                continue
            up, down = q[t, a], q[t, 0]
            still = 1.0 - up - down
            for j in range(2 * c + 1):
                v = still * dist[j]
                if j > 0:
                    v += up * dist[j - 1]
                if j < 2 * c:
                    v += down * dist[j + 1]
                nxt[j] = v
            for j in range(2 * c + 1):
                dist[j] = nxt[j]
        win = 0.0
        lose = 0.0
        for j in range(c):
            lose += dist[j]
            win += dist[2 * c - j]
        out[a] = win - lose


def preference_vs_first(posterior: FloatArray, clicks: NDArray[np.bool_]) -> FloatArray:
    """E[sign(C_r − C_0)] for every ranker r against ranker 0, shape (B, n) (entry 0 is 0).

    Parameters
    ----------
    posterior
        (B, k, n) credit posteriors from :func:`probabilistic_multileave`.
    clicks
        (B, k) clicks on the shown positions.

    Examples
    --------
    >>> q = np.array([[[0.8, 0.2], [0.5, 0.5]]])             # position 0 mostly ranker 0's
    >>> preference_vs_first(q, np.array([[True, False]])).round(6).tolist()
    [[0.0, -0.6]]
    """
    b, k, n = posterior.shape
    if clicks.shape != (b, k):
        raise ValueError(
            f"clicks must have shape ({b}, {k}) like the posterior, got {clicks.shape}"
        )
    out = np.empty((b, n))
    _prefs_runs(
        np.ascontiguousarray(posterior, dtype=np.float64),
        np.ascontiguousarray(clicks, dtype=np.bool_),
        out,
    )
    return out


@njit(nogil=True)
def _prefs_runs(q: Any, clicks: Any, out: Any) -> None:  # pragma: no cover
    for r in range(q.shape[0]):
        _prefs_one(q[r], clicks[r], out[r])


def multileave_credit(posterior: FloatArray, clicks: NDArray[np.bool_]) -> FloatArray:
    """Expected clicks credited to each ranker, Σ_t clicks_t q_t(r), shape (B, n)."""
    credit: FloatArray = np.einsum("bkn,bk->bn", posterior, clicks.astype(np.float64))
    return credit
