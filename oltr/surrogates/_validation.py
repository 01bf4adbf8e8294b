"""Input checks shared by the surrogates and their estimators.

Public entry points validate once and pass clean float64 / intp arrays inward;
the private kernels trust them. Every message names the parameter, the bad value
and where it sits, and the valid range.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "FeedbackArrays",
    "as_gamma",
    "as_relevance",
    "as_scores",
    "broadcast_scores_relevance",
    "full_relevance",
    "prepare_feedback",
]


def _where(mask: NDArray[np.bool_]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _as_real(a: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(a)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.ndim < 1:
        raise ValueError(
            f"{name} must have at least one axis (items along the last axis), got a scalar"
        )
    if arr.shape[-1] < 1:
        raise ValueError(
            f"{name} must hold at least one item along its last axis, got shape {arr.shape}"
        )
    out = arr.astype(np.float64, copy=False)
    bad = ~np.isfinite(out)
    if bad.any():
        where = _where(bad)
        raise ValueError(f"{name} must be finite, got {out[where]} at index {where}")
    return out


def as_scores(scores: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    """Finite real scores of shape (..., n_items), as float64."""
    return _as_real(scores, name)


def as_relevance(relevance: ArrayLike, name: str = "relevance") -> NDArray[np.float64]:
    """Finite, non-negative relevance grades of shape (..., n_items), as float64."""
    arr = np.asarray(relevance)
    if arr.dtype.kind in "iuf" and arr.ndim >= 1 and arr.size:
        # Fast path for valid grades (two reductions; NaN fails both comparisons).
        if arr.min() >= 0 and arr.max() < np.inf:
            return arr.astype(np.float64, copy=False)
    r = _as_real(arr, name)
    neg = r < 0
    if neg.any():
        where = _where(neg)
        raise ValueError(
            f"{name} must be >= 0 (grades 0..n, Chaudhuri & Tewari 2016 §2), "
            f"got {r[where]} at index {where}"
        )
    return r


def _lead_shape(name_shapes: list[tuple[str, tuple[int, ...]]]) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*(shape for _, shape in name_shapes))
    except ValueError:
        listed = ", ".join(f"{name} {shape}" for name, shape in name_shapes)
        raise ValueError(f"leading (batch) axes do not broadcast: {listed}") from None


def broadcast_scores_relevance(
    scores: ArrayLike, relevance: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Validate ``scores`` and ``relevance`` and broadcast their leading axes."""
    s = as_scores(scores)
    r = as_relevance(relevance)
    if s.shape[-1] != r.shape[-1]:
        raise ValueError(
            f"scores and relevance must have the same number of items (last axis), "
            f"got {s.shape[-1]} and {r.shape[-1]}"
        )
    lead = _lead_shape([("scores", s.shape[:-1]), ("relevance", r.shape[:-1])])
    m = s.shape[-1]
    return np.broadcast_to(s, lead + (m,)), np.broadcast_to(r, lead + (m,))


def as_gamma(gamma: ArrayLike, *, allow_zero: bool = False) -> NDArray[np.float64]:
    """Exploration rate(s) in (0, 1] (or [0, 1] with ``allow_zero``), as float64."""
    g = np.asarray(gamma)
    if g.dtype.kind not in "iuf":
        raise TypeError(f"gamma must be a real number, got dtype {g.dtype}")
    g = g.astype(np.float64, copy=False)
    low_ok = (g >= 0) if allow_zero else (g > 0)
    bad = ~(low_ok & (g <= 1))  # also catches NaN
    if bad.any():
        value = g[_where(bad)] if g.ndim else g[()]
        rng = "[0, 1]" if allow_zero else "(0, 1]"
        why = (
            ""
            if allow_zero
            else (
                "; with gamma = 0 only the learner's own top items are ever shown and no unbiased "
                "estimator exists (Chaudhuri & Tewari 2016 Lemma 1)"
            )
        )
        raise ValueError(f"gamma must lie in {rng}, got {value}{why}")
    return g


def _as_order(order: ArrayLike, name: str, n_items: int) -> NDArray[np.intp]:
    o = np.asarray(order)
    if o.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer item indices, got dtype {o.dtype}")
    if o.ndim < 1 or o.shape[-1] != n_items:
        raise ValueError(
            f"{name} must have shape (..., {n_items}) (one position per item), got shape {o.shape}"
        )
    o = o.astype(np.intp, copy=False)
    # In-range values form a permutation iff scattering marks every slot (pigeonhole): O(m).
    in_range = (o >= 0) & (o < n_items)
    seen = np.zeros(o.shape, dtype=bool)
    np.put_along_axis(seen, np.where(in_range, o, 0), in_range, axis=-1)
    bad_rows = np.asarray(~(in_range.all(axis=-1) & seen.all(axis=-1)))
    if bad_rows.any():
        row = _where(bad_rows) if o.ndim > 1 else ()
        raise ValueError(
            f"{name} row {row} is not a permutation of 0..{n_items - 1}: got {o[row].tolist()}"
        )
    return o


def _top_of_scores(s: NDArray[np.float64], ell: int) -> NDArray[np.intp]:
    """The first ``ell`` items of ``order_from_scores(s)`` (descending, ties by lower index).

    A few argmax passes (argmax returns the lowest index among ties) cost O(ℓ m)
    instead of the O(m log m) full sort, which dominated the estimators' cost.
    """
    if ell > 4:
        from oltr.permutations import order_from_scores

        return order_from_scores(s)[..., :ell]
    work = s.copy()
    top = np.empty(s.shape[:-1] + (ell,), dtype=np.intp)
    for pos in range(ell):
        top[..., pos] = np.argmax(work, axis=-1)
        # Scores are finite, so -inf removes the item from later passes.
        np.put_along_axis(work, top[..., pos, None], -np.inf, axis=-1)
    return top


class FeedbackArrays:
    """Validated inputs of an estimator call, broadcast to one leading shape.

    ``exploit_top`` holds the first ``prefix_len`` items of the learner's own
    order, which is all the exploration probabilities need.
    """

    __slots__ = ("scores", "order", "observed", "gamma", "exploit_top")

    def __init__(
        self,
        scores: NDArray[np.float64],
        order: NDArray[np.intp],
        observed: NDArray[np.float64],
        gamma: NDArray[np.float64],
        exploit_top: NDArray[np.intp],
    ) -> None:
        self.scores = scores
        self.order = order
        self.observed = observed
        self.gamma = gamma
        self.exploit_top = exploit_top

    @property
    def n_items(self) -> int:
        return int(self.scores.shape[-1])

    @property
    def k(self) -> int:
        return int(self.observed.shape[-1])


def prepare_feedback(
    scores: ArrayLike,
    order: ArrayLike,
    observed: ArrayLike,
    gamma: ArrayLike,
    exploit_order: ArrayLike | None,
    prefix_len: int,
) -> FeedbackArrays:
    """Validate an estimator call and broadcast its leading (batch) axes.

    ``exploit_order`` defaults to the order of ``scores`` (descending, ties by
    lower index first, as :func:`oltr.permutations.order_from_scores`); only
    its first ``min(prefix_len, n_items)`` items are kept.
    """
    s = as_scores(scores)
    m = s.shape[-1]
    o = _as_order(order, "order", m)
    obs = as_relevance(observed, "observed")
    k = obs.shape[-1]
    if k > m:
        raise ValueError(
            f"observed holds the relevances of the top k shown items, so k <= "
            f"n_items = {m}; got k = {k}"
        )
    g = as_gamma(gamma)
    ell = min(prefix_len, m)
    if exploit_order is None:
        e = _top_of_scores(s, ell)
    else:
        e = _as_order(exploit_order, "exploit_order", m)[..., :ell]
    lead = _lead_shape(
        [
            ("scores", s.shape[:-1]),
            ("order", o.shape[:-1]),
            ("observed", obs.shape[:-1]),
            ("gamma", g.shape),
            ("exploit_order", e.shape[:-1]),
        ]
    )
    return FeedbackArrays(
        scores=np.broadcast_to(s, lead + (m,)),
        order=np.broadcast_to(o, lead + (m,)),
        observed=np.broadcast_to(obs, lead + (k,)),
        gamma=np.broadcast_to(g, lead),
        exploit_top=np.broadcast_to(e, lead + (ell,)),
    )


def full_relevance(order: NDArray[np.intp], observed: NDArray[np.float64]) -> NDArray[np.float64]:
    """The relevance vector when every shown item's relevance was observed (k = m)."""
    r = np.empty(observed.shape, dtype=np.float64)
    np.put_along_axis(r, order, observed, axis=-1)
    return r
