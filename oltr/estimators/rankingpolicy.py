"""Propensities of ranking policies for off-policy estimation, and the Cascade-DR regression.

For a **Plackett–Luce** logger (PDGD samples its list this way: Oosterhuis &
de Rijke 2018, CIKM, §4.1, eq. 2 — each next item is drawn with probability
softmax of the scores over the items not yet placed), with scores ``s`` of shape
``(n, m)`` (``-inf`` for absent items):

- :func:`plackett_luce_prefix_probabilities` gives the exact probability of each
  logged prefix, ``P(a(1..l)) = Π_{j≤l} e^{s_{a(j)}} / Σ_{d ∉ a(1..j−1)} e^{s_d}``
  (Plackett 1975; Luce 1959), vectorised over impressions (a loop over the K
  positions only). The last shown position gives the list probability.
- :func:`plackett_luce_marginals` gives ``P(item d at position l)``. ``"exact"``
  sums over the sets of items that can fill the positions above by dynamic
  programming over subsets, ``f(S ∪ {d}) += f(S) · e^{s_d}/Σ_{e∉S} e^{s_e}`` with
  ``f(∅) = 1``, ``P(d at |S|+1) = Σ_{|S|=l−1, d∉S} f(S) e^{s_d}/Σ_{e∉S} e^{s_e}``:
  O(2^m m) per impression, for m ≤ 14 items. ``"monte-carlo"`` draws
  ``n_samples`` rankings by the Gumbel-max trick (argsort of ``s + Gumbel``
  samples a Plackett–Luce ranking: Yellott 1977) from a seeded Generator; each
  marginal is an unbiased frequency with standard error
  ``√(p(1−p)/n_samples) ≤ 0.5/√n_samples``. Its reciprocal, used as a
  propensity, is *not* unbiased (Jensen): the relative bias is about
  ``(1 − p)/(p · n_samples)``, so choose ``n_samples ≫ 1/p_min``.

For a **deterministic** candidate (a linear scorer ``X w``, ties to the lower
index as :func:`oltr.permutations.order_from_scores`):
:func:`linear_orders` is its list; :func:`deterministic_prefix_probabilities`
and :func:`deterministic_marginals` its 0/1 probabilities of the logged prefixes
and (item, position) pairs.

For **Cascade-DR**, :func:`click_rate_table` fits the simple regression the
estimator needs — the mean per-position reward of each (query, item, position)
on the log, falling back to the position's mean where a pair was never shown —
and :func:`cascade_baselines` turns it into ``Q̂`` for a deterministic candidate:
``Q̂_l(x, σ(1..l)) = Σ_{l' ≥ l} q̂(x, σ(l'), l')`` (the candidate fills the positions
below). This regression is a position-based model of the reward; it is a
simplification of the paper's learned ``Q̂`` and enough for the estimator's
unbiasedness, which does not depend on ``Q̂``. Fitted on the impressions it then
corrects, ``Q̂`` absorbs part of their own rewards and pulls the estimate toward
the direct method (the correction ``w (r − Q̂)`` shrinks), a bias the bootstrap
does not see; :func:`cross_fitted_baselines` avoids it by cross-fitting
(Chernozhukov et al. 2018, "Double/debiased machine learning for treatment
and structural parameters", Econometrics Journal 21(1), §3): impression i's
``Q̂`` comes from a table fitted on the other folds (fold = i mod ``folds``), so
it is independent of i's own clicks and the estimator's terms stay unbiased
given the other folds.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError
from oltr.estimators.loggedlists import LoggedLists
from oltr.permutations import order_from_scores
from oltr.random import RNGLike, as_rng

__all__ = [
    "cascade_baselines",
    "click_rate_table",
    "cross_fitted_baselines",
    "deterministic_marginals",
    "deterministic_prefix_probabilities",
    "gather_marginals",
    "linear_orders",
    "plackett_luce_marginals",
    "plackett_luce_prefix_probabilities",
]

FloatArray = NDArray[np.float64]
#: Largest list for exact marginals (2^14 subsets per impression).
MAX_EXACT_ITEMS = 14


def _scores(scores: ArrayLike) -> FloatArray:
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2 or s.shape[0] == 0 or s.shape[1] == 0:
        raise InputError(f"scores must have shape (n, m) with n, m >= 1, got {s.shape}")
    if np.any(np.isnan(s)) or np.any(s == np.inf):
        raise InputError("scores must not hold NaN or +inf (use -inf for absent items)")
    if np.any(np.all(s == -np.inf, axis=1)):
        raise InputError(
            f"scores row {int(np.flatnonzero(np.all(s == -np.inf, axis=1))[0])} has no item"
        )
    return s


def plackett_luce_prefix_probabilities(scores: ArrayLike, log: LoggedLists) -> FloatArray:
    """Exact Plackett–Luce probabilities of each logged prefix, shape (n, K).

    ``[i, l]`` = P(the top l + 1 items are ``log.shown[i, :l+1]`` in this order);
    on padding it repeats the last shown value, so column K−1 is the list
    probability. ``scores`` is (n, m), the logger's scores of impression i's items.
    """
    s = _scores(scores)
    if s.shape[0] != log.n:
        raise InputError(f"scores has {s.shape[0]} rows but the log has {log.n} impressions")
    if np.any(log.shown >= s.shape[1]):
        raise InputError(f"a shown item index is >= the {s.shape[1]} scored items")
    s = s - s.max(axis=1, keepdims=True)
    alive = np.isfinite(s)
    e = np.where(alive, np.exp(s), 0.0)
    rows = np.arange(log.n)
    logp = np.zeros(log.shown.shape)
    total = np.zeros(log.n)
    for pos in range(log.shown.shape[1]):
        on = log.mask[:, pos]
        item = np.where(on, log.shown[:, pos], 0)
        picked = e[rows, item]
        if np.any(on & (picked <= 0)):
            i = int(np.flatnonzero(on & (picked <= 0))[0])
            raise InputError(f"impression {i}: shown item {item[i]} has score -inf (probability 0)")
        denom = e.sum(axis=1)
        total = total + np.where(on, np.log(np.where(on, picked / denom, 1.0)), 0.0)
        logp[:, pos] = total
        e[rows[on], item[on]] = 0.0
    return np.exp(logp)


def plackett_luce_marginals(
    scores: ArrayLike,
    depth: int,
    *,
    method: Literal["auto", "exact", "monte-carlo"] = "auto",
    n_samples: int = 100_000,
    rng: RNGLike = 0,
) -> FloatArray:
    """P(item d at position l) under Plackett–Luce, shape (n, m, depth) (module docstring).

    ``method="auto"`` is exact for m ≤ 14 items and Monte Carlo above.
    """
    s = _scores(scores)
    n, m = s.shape
    if not isinstance(depth, int) or depth < 1:
        raise InputError(f"depth must be a positive integer, got {depth!r}")
    depth = min(depth, m)
    if method == "auto":
        method = "exact" if m <= MAX_EXACT_ITEMS else "monte-carlo"
    if method == "exact":
        if m > MAX_EXACT_ITEMS:
            raise InputError(
                f"exact marginals need m <= {MAX_EXACT_ITEMS} items, got {m}: use monte-carlo"
            )
        return _exact_marginals(s, depth)
    if method != "monte-carlo":
        raise InputError(f"method must be 'auto', 'exact' or 'monte-carlo', got {method!r}")
    if not isinstance(n_samples, int) or n_samples < 1:
        raise InputError(f"n_samples must be a positive integer, got {n_samples!r}")
    gen = as_rng(rng)
    out = np.zeros((n, m, depth))
    rows = np.arange(n)[None, :]
    chunk = max(1, 4_000_000 // (n * m))
    for start in range(0, n_samples, chunk):
        b = min(chunk, n_samples - start)
        noisy = s[None, :, :] + gen.gumbel(size=(b, n, m))
        top = np.argsort(-noisy, axis=2, kind="stable")[:, :, :depth]
        for pos in range(depth):
            at = top[:, :, pos]
            np.add.at(out, (np.broadcast_to(rows, at.shape), at, np.full_like(at, pos)), 1.0)
    out /= n_samples
    return np.where(np.isfinite(s)[:, :, None], out, 0.0)


def _exact_marginals(s: FloatArray, depth: int) -> FloatArray:
    n, m = s.shape
    e = np.where(np.isfinite(s), np.exp(s - s.max(axis=1, keepdims=True)), 0.0)
    n_states = 1 << m
    bits = (np.arange(n_states)[:, None] >> np.arange(m)[None, :]) & 1  # (states, m)
    size = bits.sum(axis=1)
    f = np.zeros((n, n_states))
    f[:, 0] = 1.0
    out = np.zeros((n, m, depth))
    for state in np.argsort(size, kind="stable"):
        if size[state] >= depth:
            break
        fs = f[:, state]
        if not np.any(fs > 0):
            continue
        free = e * (1 - bits[state])[None, :]
        norm = free.sum(axis=1, keepdims=True)
        step = np.divide(free, norm, out=np.zeros_like(free), where=norm > 0) * fs[:, None]
        out[:, :, size[state]] += step
        for d in np.flatnonzero(bits[state] == 0):
            f[:, state | (1 << d)] += step[:, d]
    return out


def gather_marginals(marginals: ArrayLike, log: LoggedLists) -> FloatArray:
    """Marginal of each logged (item, position), (n, K), from (n, m, depth) marginals."""
    mg = np.asarray(marginals, dtype=np.float64)
    if mg.ndim != 3 or mg.shape[0] != log.n:
        raise InputError(f"marginals must have shape (n={log.n}, m, depth), got {mg.shape}")
    if np.any(log.shown >= mg.shape[1]):
        raise InputError(f"a shown item index is >= the {mg.shape[1]} items of the marginals")
    k = log.shown.shape[1]
    pos = np.arange(k)
    inside = log.mask & (pos[None, :] < mg.shape[2])
    item = np.where(inside, log.shown, 0)
    got = mg[np.arange(log.n)[:, None], item, np.minimum(pos, mg.shape[2] - 1)[None, :]]
    return np.where(inside, got, 0.0)


def linear_orders(
    weights: ArrayLike, features: ArrayLike, valid: ArrayLike | None = None
) -> NDArray[np.intp]:
    """The list of the deterministic linear ranker ``w``: items by descending ``X w``, shape (n, m).

    ``features`` is (n, m, d) (or (m, d) for one query); ``valid`` (n, m) marks
    real items (absent ones sort last).
    """
    x = np.asarray(features, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3 or w.shape != (x.shape[2],):
        raise InputError(
            f"features must be (n, m, d) and weights (d,), got {x.shape} and {w.shape}"
        )
    s = x @ w
    if valid is not None:
        s = np.where(np.asarray(valid, dtype=bool), s, -np.inf)
    return order_from_scores(s)


def _orders_for(candidate: ArrayLike, log: LoggedLists) -> NDArray[np.intp]:
    c = np.asarray(candidate)
    if c.ndim != 2 or c.shape[0] != log.n or c.shape[1] < log.shown.shape[1]:
        raise InputError(
            f"candidate orders must have shape (n={log.n}, m >= K={log.shown.shape[1]}), "
            f"got {c.shape}"
        )
    return c[:, : log.shown.shape[1]].astype(np.intp)


def deterministic_prefix_probabilities(candidate: ArrayLike, log: LoggedLists) -> FloatArray:
    """1 where the logged prefix ``a_i(1..l+1)`` is the candidate's own top l + 1, else 0."""
    same = (_orders_for(candidate, log) == log.shown) | ~log.mask
    return np.cumprod(same, axis=1).astype(np.float64)


def deterministic_marginals(candidate: ArrayLike, log: LoggedLists) -> FloatArray:
    """1 where the candidate puts the logged item at the logged position, else 0; (n, K)."""
    out: FloatArray = ((_orders_for(candidate, log) == log.shown) & log.mask).astype(np.float64)
    return out


def click_rate_table(
    qid: ArrayLike, log: LoggedLists, rewards: ArrayLike, *, n_queries: int, n_items: int
) -> FloatArray:
    """Mean reward of each (query, item, position) on the log, shape (n_queries, n_items, K).

    Pairs never shown get the mean reward of their position over the log.
    ``rewards`` are the metric's per-position rewards
    (:func:`oltr.estimators.loggedlists.metric_rewards`).
    """
    q = np.asarray(qid)
    r = np.asarray(rewards, dtype=np.float64)
    if q.shape != (log.n,) or not np.issubdtype(q.dtype, np.integer):
        raise InputError(f"qid must be integers of shape ({log.n},), got {q.dtype} {q.shape}")
    if r.shape != log.shown.shape:
        raise InputError(f"rewards has shape {r.shape}; it must be {log.shown.shape}")
    if q.min() < 0 or q.max() >= n_queries or log.shown.max() >= n_items:
        raise InputError("qid must lie in [0, n_queries) and shown items in [0, n_items)")
    k = log.shown.shape[1]
    pos = np.broadcast_to(np.arange(k), log.shown.shape)
    key = (
        np.broadcast_to(q[:, None], log.shown.shape)[log.mask],
        log.shown[log.mask],
        pos[log.mask],
    )
    total = np.zeros((n_queries, n_items, k))
    count = np.zeros((n_queries, n_items, k))
    np.add.at(total, key, r[log.mask])
    np.add.at(count, key, 1.0)
    per_pos = total.sum(axis=(0, 1)) / np.maximum(count.sum(axis=(0, 1)), 1.0)
    return np.where(count > 0, total / np.maximum(count, 1.0), per_pos[None, None, :])


def cascade_baselines(
    table: ArrayLike,
    qid: ArrayLike,
    candidate: ArrayLike,
    log: LoggedLists,
    *,
    depth: int | None = None,
) -> tuple[FloatArray, FloatArray]:
    """``(q_logged, q_target)`` of a deterministic candidate for :func:`.offpolicy.cascade_dr`.

    With the candidate's list σ and the table q̂ (:func:`click_rate_table`),
    ``Q̂_l(x, σ(1..l)) = Σ_{l ≤ l' < min(depth, K_i)} q̂(x, σ(l'), l')``.
    ``q_target[i, l]`` is that value (π_e puts σ(l) after its own prefix);
    ``q_logged[i, l]`` is the same where the logged item is σ(l) and
    ``q̂(x, a(l), l)`` elsewhere (there the weight is 0, so it never counts).
    """
    t = np.asarray(table, dtype=np.float64)
    q = np.asarray(qid)
    sigma = _orders_for(candidate, log)
    k = log.shown.shape[1]
    if t.ndim != 3 or t.shape[2] < k:
        raise InputError(f"table must have shape (n_queries, n_items, >= {k}), got {t.shape}")
    if q.shape != (log.n,):
        raise InputError(f"qid must have shape ({log.n},), got {q.shape}")
    d = k if depth is None else depth
    pos = np.arange(k)
    live = log.mask & (pos[None, :] < d)
    q_sigma = np.where(live, t[q[:, None], sigma, pos[None, :]], 0.0)
    tail = np.cumsum(q_sigma[:, ::-1], axis=1)[:, ::-1]
    own = np.where(live, t[q[:, None], np.where(log.mask, log.shown, 0), pos[None, :]], 0.0)
    q_logged = np.where(sigma == log.shown, tail, own)
    return q_logged, tail


def cross_fitted_baselines(
    qid: ArrayLike,
    log: LoggedLists,
    rewards: ArrayLike,
    candidate: ArrayLike,
    *,
    n_queries: int,
    n_items: int,
    folds: int = 2,
    depth: int | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Cross-fitted :func:`cascade_baselines`: each fold's ``Q̂`` is fitted on the other folds.

    Impression i belongs to fold ``i mod folds`` (impressions are i.i.d., so an
    interleaved split is as good as a random one and needs no generator).
    """
    if not isinstance(folds, int) or folds < 2:
        raise InputError(f"folds must be an integer >= 2, got {folds!r}")
    q = np.asarray(qid)
    r = np.asarray(rewards, dtype=np.float64)
    sigma = np.asarray(candidate)
    if q.shape != (log.n,) or r.shape != log.shown.shape or sigma.ndim != 2:
        raise InputError(
            f"qid must be ({log.n},), rewards {log.shown.shape} and candidate (n, m); got "
            f"{q.shape}, {r.shape} and {sigma.shape}"
        )
    fold = np.arange(log.n) % folds
    q_logged = np.zeros(log.shown.shape)
    q_target = np.zeros(log.shown.shape)
    for f in range(folds):
        train, test = fold != f, fold == f
        if not np.any(train) or not np.any(test):
            raise InputError(f"{log.n} impressions are too few for {folds} folds")
        part = LoggedLists(log.shown[train], log.clicks[train], log.mask[train])
        table = click_rate_table(q[train], part, r[train], n_queries=n_queries, n_items=n_items)
        held = LoggedLists(log.shown[test], log.clicks[test], log.mask[test])
        q_logged[test], q_target[test] = cascade_baselines(
            table, q[test], sigma[test], held, depth=depth
        )
    return q_logged, q_target
