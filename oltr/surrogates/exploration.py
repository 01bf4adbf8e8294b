"""RTop-kF's exploration distribution over orders and its closed-form marginals.

Chaudhuri & Tewari (2016), Algorithm 1 step 6, shows the order

    P(σ) = (1 − γ) · 1(σ = σ_s) + γ / m!,

i.e. the learner's own order σ_s (descending score, ties by lower index) with
probability 1 − γ and a uniformly random order with probability γ. The unbiased
estimators of §4 divide by marginals of P; counting the orders that extend a
fixed prefix gives them in closed form (§4.2 states the first two for the case
where the shown items are the learner's own):

* item ``i`` at position ``r``:        (1 − γ)·1(σ_s(r) = i) + γ / m
* ordered prefix ``(j_1..j_ℓ)`` (Eq. 1): (1 − γ)·1(σ_s(1..ℓ) = (j_1..j_ℓ)) + γ (m − ℓ)! / m!
* top-ℓ *set* (denominator of Eq. 3):  (1 − γ)·1({σ_s(1..ℓ)} = {j_1..j_ℓ}) + γ / C(m, ℓ)

The indicator is what §4.2's "p(σ(1)) = 1 − γ + γ/m" leaves implicit: when an
exploration round puts other items on top, their probability is only the
uniform part (γ/m for one item, γ/C(m, 2) for a pair).

All functions take the learner's own order ``exploit_order`` of shape
(..., n_items) and are batched over leading axes.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.random import RNGLike, as_rng
from oltr.surrogates._kernels import f64
from oltr.surrogates._validation import _as_order, _lead_shape, as_gamma, as_scores

__all__ = [
    "position_probability",
    "prefix_probability",
    "sample_exploration_order",
    "top_set_probability",
]


def _reciprocal(count: int) -> float:
    """``1 / count`` for a possibly huge integer count (0.0 once it underflows)."""
    try:
        return 1.0 / count
    except OverflowError:  # count beyond float range: 1/count < smallest subnormal
        return 0.0


def _check_items(items: ArrayLike, name: str, n_items: int) -> NDArray[np.intp]:
    it = np.asarray(items)
    if it.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer item indices, got dtype {it.dtype}")
    it = it.astype(np.intp, copy=False)
    if it.size and (it.min() < 0 or it.max() >= n_items):
        raise ValueError(
            f"{name} must lie in [0, {n_items - 1}], got values in [{it.min()}, {it.max()}]"
        )
    return it


def _exploit(exploit_order: ArrayLike) -> NDArray[np.intp]:
    e = np.asarray(exploit_order)
    if e.ndim < 1:
        raise ValueError("exploit_order must have shape (..., n_items), got a scalar")
    return _as_order(e, "exploit_order", e.shape[-1])


def _prefix(prefix: ArrayLike, n_items: int, name: str) -> NDArray[np.intp]:
    p = _check_items(prefix, name, n_items)
    if p.ndim < 1 or not 1 <= p.shape[-1] <= n_items:
        raise ValueError(
            f"{name} must have shape (..., l) with 1 <= l <= n_items = {n_items}, "
            f"got shape {p.shape}"
        )
    if ((np.diff(np.sort(p, axis=-1), axis=-1)) == 0).any():
        raise ValueError(f"{name} must hold distinct items along the last axis, got {p.tolist()}")
    return p


def _position_prob(
    exploit_top: NDArray[np.intp],
    item: NDArray[np.intp],
    position: int,
    g: NDArray[np.float64],
    n_items: int,
) -> NDArray[np.float64]:
    """P(σ(position) = item); ``exploit_top`` holds at least ``position + 1`` own items."""
    return f64((1.0 - g) * (exploit_top[..., position] == item) + g / n_items)


def _prefix_prob(
    exploit_top: NDArray[np.intp], prefix: NDArray[np.intp], g: NDArray[np.float64], n_items: int
) -> NDArray[np.float64]:
    """p(j_1..j_ℓ) of Eq. 1; ``exploit_top`` holds at least ℓ own items."""
    ell = prefix.shape[-1]
    own = (exploit_top[..., :ell] == prefix).all(axis=-1)
    return f64((1.0 - g) * own + g * _reciprocal(math.perm(n_items, ell)))


def _top_set_prob(
    exploit_top: NDArray[np.intp], items: NDArray[np.intp], g: NDArray[np.float64], n_items: int
) -> NDArray[np.float64]:
    """P(top-ℓ set = items), Eq. 3's denominator; ``exploit_top`` holds at least ℓ own items."""
    ell = items.shape[-1]
    if ell == 1:
        own = exploit_top[..., 0] == items[..., 0]
    else:
        own = (np.sort(exploit_top[..., :ell], axis=-1) == np.sort(items, axis=-1)).all(axis=-1)
    return f64((1.0 - g) * own + g * _reciprocal(math.comb(n_items, ell)))


def position_probability(
    exploit_order: ArrayLike, item: ArrayLike, position: int, gamma: ArrayLike
) -> NDArray[np.float64]:
    """Probability that ``item`` is shown at ``position`` under RTop-kF's exploration.

    .. math:: P(σ(r) = i) = (1 − γ)\\,1(σ_s(r) = i) + γ / m

    Parameters
    ----------
    exploit_order
        The learner's own order σ_s, shape (..., n_items).
    item
        Item index (or array of them, broadcasting against the leading axes).
    position
        0-based position, ``0 <= position < n_items``.
    gamma
        Exploration rate in (0, 1] (scalar or broadcasting array).

    Returns
    -------
    probability
        Float64 array of the broadcast leading shape.

    References
    ----------
    Chaudhuri & Tewari (2016), Algorithm 1 step 6 and §4.2 (p(σ(1)) = 1 − γ + γ/m
    when the shown top item is the learner's own).

    Examples
    --------
    >>> float(position_probability([2, 0, 1, 3], 2, 0, 0.5))  # the learner's own top item
    0.625
    >>> float(position_probability([2, 0, 1, 3], 0, 0, 0.5))  # shown only by exploration
    0.125
    """
    e = _exploit(exploit_order)
    m = e.shape[-1]
    if isinstance(position, bool) or not isinstance(position, int | np.integer):
        raise TypeError(f"position must be an int, got {type(position).__name__}")
    if not 0 <= position < m:
        raise ValueError(f"position must lie in [0, {m - 1}], got {position}")
    return _position_prob(e, _check_items(item, "item", m), int(position), as_gamma(gamma), m)


def prefix_probability(
    exploit_order: ArrayLike, prefix: ArrayLike, gamma: ArrayLike
) -> NDArray[np.float64]:
    """Probability that the shown order starts with ``prefix``, in that order (CT16 Eq. 1).

    .. math:: p(j_1,…,j_ℓ) = (1 − γ)\\,1(σ_s(1..ℓ) = (j_1,…,j_ℓ)) + γ\\,(m − ℓ)!/m!

    Parameters
    ----------
    exploit_order
        The learner's own order σ_s, shape (..., n_items).
    prefix
        Distinct item indices, shape (..., ℓ), 1 <= ℓ <= n_items.
    gamma
        Exploration rate in (0, 1].

    Returns
    -------
    probability
        Float64 array of the broadcast leading shape.

    References
    ----------
    Chaudhuri & Tewari (2016), Eq. 1 and §4.2.

    Examples
    --------
    >>> float(prefix_probability([0, 1, 2, 3], [1, 0], 1.0))  # uniform: 1 / (4 * 3)
    0.08333333333333333
    """
    e = _exploit(exploit_order)
    m = e.shape[-1]
    return _prefix_prob(e, _prefix(prefix, m, "prefix"), as_gamma(gamma), m)


def top_set_probability(
    exploit_order: ArrayLike, items: ArrayLike, gamma: ArrayLike
) -> NDArray[np.float64]:
    """Probability that the top ``ℓ`` shown items are the set ``items``, in any order.

    This is the denominator of Lemma 1's estimator (CT16 Eq. 3), the sum of
    Eq. 1 over the ℓ! orderings of the set:

    .. math:: \\sum_{π ∈ S_ℓ} p(j_{π(1)},…,j_{π(ℓ)})
              = (1 − γ)\\,1(\\{σ_s(1..ℓ)\\} = \\{j_1,…,j_ℓ\\}) + γ / \\binom{m}{ℓ}

    Parameters
    ----------
    exploit_order
        The learner's own order σ_s, shape (..., n_items).
    items
        Distinct item indices, shape (..., ℓ), 1 <= ℓ <= n_items (order irrelevant).
    gamma
        Exploration rate in (0, 1].

    Returns
    -------
    probability
        Float64 array of the broadcast leading shape.

    References
    ----------
    Chaudhuri & Tewari (2016), Lemma 1 (Eq. 3) and §4.2
    (p(σ(1),σ(2)) + p(σ(2),σ(1)) = 1 − γ + 2γ/(m(m − 1)) for the learner's own pair).

    Examples
    --------
    >>> float(top_set_probability([0, 1, 2, 3], [1, 0], 0.5))  # 0.5 + 0.5 / 6
    0.5833333333333334
    """
    e = _exploit(exploit_order)
    m = e.shape[-1]
    return _top_set_prob(e, _prefix(items, m, "items"), as_gamma(gamma), m)


def sample_exploration_order(scores: ArrayLike, gamma: ArrayLike, rng: RNGLike) -> NDArray[np.intp]:
    """Draw the order RTop-kF shows: its own with probability 1 − γ, else a uniform one.

    Algorithm 1 steps 5–6 draw s̃ from (1 − γ)δ(s − s_t) + γ·Uniform([0, 1]^m) and
    show argsort(s̃); the argsort of i.i.d. uniforms is a uniform order, so this
    draws that order directly. The draws made do not depend on the outcome (one
    coin and one uniform order per list), so a seed fixes the whole stream.

    Parameters
    ----------
    scores
        The learner's scores, shape (..., n_items); its own order is descending
        score, ties by lower index first.
    gamma
        Exploration rate in [0, 1] (scalar or broadcasting over leading axes).
    rng
        Seed or Generator.

    Returns
    -------
    order
        Integer array of shape (..., n_items), ``order[..., 0]`` the top item.

    References
    ----------
    Chaudhuri & Tewari (2016), Algorithm 1 steps 5–6.

    Examples
    --------
    >>> sample_exploration_order([0.1, 0.9, 0.5], 0.0, rng=0)
    array([1, 2, 0])
    >>> o = sample_exploration_order([[0.1, 0.9, 0.5]] * 4, 1.0, rng=0)
    >>> o.shape, bool((np.sort(o, axis=-1) == [0, 1, 2]).all())
    ((4, 3), True)
    """
    from oltr.permutations import order_from_scores, random_order

    s = as_scores(scores)
    g = as_gamma(gamma, allow_zero=True)
    m = s.shape[-1]
    lead = _lead_shape([("scores", s.shape[:-1]), ("gamma", g.shape)])
    gen = as_rng(rng)
    explore = gen.random(lead) < g
    uniform = random_order(m, gen, size=lead)
    own = np.broadcast_to(order_from_scores(s), lead + (m,))
    return np.where(explore[..., None], uniform, own)
