"""Logged ranked lists with clicks, and the click metrics the off-policy estimators target.

:class:`LoggedLists` holds n impressions padded to ``(n, K)``: ``shown`` item
indices (``-1`` on padding), ``clicks`` in ``[0, 1]`` (0 on padding) and a
boolean ``mask`` whose rows are prefixes (a list is shown from the top).
:func:`logged_lists` checks padded arrays; :func:`pad_lists` pads ragged ones.

Each metric is a sum of per-position rewards r(l) over the top k shown
positions (k = K when no ``@k`` is given; positions 1-based below):

- ``clicks`` / ``clicks@k``: r(l) = c(l), the expected number of clicks;
- ``dcg@k``: r(l) = c(l) / log2(l + 1), the DCG of the clicks (Järvelin &
  Kekäläinen 2002's discount);
- ``ctr@k``: r(l) = c(l) Π_{j<l} (1 − c(j)) (the first click), so Σ_l r(l) is 1
  when the top k got at least one click: *the probability of any click in the
  top k*. It is not a sum over (item, position) pairs of the click alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError

__all__ = [
    "METRICS",
    "LoggedLists",
    "logged_lists",
    "max_reward",
    "metric_depth",
    "metric_rewards",
    "pad_lists",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class LoggedLists:
    """Logged impressions: ``shown`` (n, K) items (−1 padding), ``clicks``, ``mask`` (n, K)."""

    shown: NDArray[np.intp]
    clicks: FloatArray
    mask: NDArray[np.bool_]

    @property
    def n(self) -> int:
        """Number of impressions."""
        return int(self.shown.shape[0])

    @property
    def lengths(self) -> NDArray[np.intp]:
        """Number of shown items of each impression, shape (n,)."""
        out: NDArray[np.intp] = self.mask.sum(axis=1).astype(np.intp)
        return out


def logged_lists(shown: ArrayLike, clicks: ArrayLike, mask: ArrayLike | None = None) -> LoggedLists:
    """Check and wrap padded logs: ``shown`` (n, K) ints, ``clicks`` in [0, 1], ``mask`` bools.

    ``mask`` defaults to ``shown >= 0``; each row's mask must be a prefix (True
    then False) with at least one True. Padding clicks must be 0.
    """
    s = np.asarray(shown)
    c = np.asarray(clicks, dtype=np.float64)
    if s.ndim != 2 or c.ndim != 2:
        raise InputError(f"shown and clicks must be 2-D (n, K), got shapes {s.shape} and {c.shape}")
    if s.shape != c.shape:
        raise InputError(
            f"shown has shape {s.shape} but clicks has shape {c.shape}; they must agree"
        )
    if s.shape[0] == 0 or s.shape[1] == 0:
        raise InputError(f"the log is empty (shape {s.shape}): nothing to estimate from")
    if not np.issubdtype(s.dtype, np.integer):
        raise InputError(f"shown must hold integer item indices, got dtype {s.dtype}")
    m = (s >= 0) if mask is None else np.asarray(mask)
    if m.shape != s.shape or m.dtype != np.bool_:
        raise InputError(
            f"mask must be a boolean array of shape {s.shape}, got {m.dtype} {m.shape}"
        )
    if not np.all(np.isfinite(c)):
        i, j = (int(v) for v in np.argwhere(~np.isfinite(c))[0])
        raise InputError(f"clicks[{i}, {j}] is {c[i, j]}: clicks must be finite")
    if np.any((c < 0) | (c > 1)):
        i, j = (int(v) for v in np.argwhere((c < 0) | (c > 1))[0])
        raise InputError(f"clicks[{i}, {j}] = {c[i, j]} is outside [0, 1]")
    bad_rows = np.flatnonzero(~m[:, 0] | np.any(m[:, 1:] & ~m[:, :-1], axis=1))
    if bad_rows.size:
        raise InputError(
            f"mask row {bad_rows[0]} is {m[bad_rows[0]].tolist()}: each impression shows a "
            "non-empty prefix of positions (True then False)"
        )
    if np.any(m & (s < 0)):
        i, j = (int(v) for v in np.argwhere(m & (s < 0))[0])
        raise InputError(
            f"shown[{i}, {j}] = {s[i, j]} is a negative item index at a shown position"
        )
    keyed = np.sort(np.where(m, s, -1 - np.arange(s.shape[1])[None, :]), axis=1)
    dup = np.flatnonzero(np.any(keyed[:, 1:] == keyed[:, :-1], axis=1))
    if dup.size:
        raise InputError(
            f"impression {int(dup[0])} shows the same item twice: {s[dup[0]].tolist()}"
        )
    if np.any(~m & (c != 0)):
        i, j = (int(v) for v in np.argwhere(~m & (c != 0))[0])
        raise InputError(f"clicks[{i}, {j}] = {c[i, j]} at a padded (not shown) position")
    return LoggedLists(np.where(m, s, -1).astype(np.intp), c, m)


def pad_lists(shown: Sequence[ArrayLike], clicks: Sequence[ArrayLike]) -> LoggedLists:
    """Pad ragged lists (one 1-D array per impression) to :class:`LoggedLists`."""
    if len(shown) != len(clicks):
        raise InputError(f"{len(shown)} shown lists but {len(clicks)} click lists")
    if len(shown) == 0:
        raise InputError("the log is empty: nothing to estimate from")
    rows = [np.asarray(r).ravel() for r in shown]
    crow = [np.asarray(r, dtype=np.float64).ravel() for r in clicks]
    for i, (r, c) in enumerate(zip(rows, crow, strict=True)):
        if r.shape != c.shape:
            raise InputError(f"impression {i}: {r.size} shown items but {c.size} clicks")
    k = max(r.size for r in rows)
    s = np.full((len(rows), k), -1, dtype=np.intp)
    c = np.zeros((len(rows), k))
    m = np.zeros((len(rows), k), dtype=bool)
    for i, (r, cr) in enumerate(zip(rows, crow, strict=True)):
        s[i, : r.size], c[i, : r.size], m[i, : r.size] = r, cr, True
    return logged_lists(s, c, m)


def _clicks(c: FloatArray, pos: NDArray[np.intp]) -> FloatArray:
    return c


def _dcg(c: FloatArray, pos: NDArray[np.intp]) -> FloatArray:
    out: FloatArray = c / np.log2(pos + 2.0)
    return out


def _first_click(c: FloatArray, pos: NDArray[np.intp]) -> FloatArray:
    none_before = np.cumprod(
        np.concatenate([np.ones((c.shape[0], 1)), 1.0 - c[:, :-1]], axis=1), axis=1
    )
    return c * none_before


#: Per-position reward of each metric: (clicks, 0-based positions) -> rewards, and whether it is
#: a sum over (item, position) pairs of the click alone (what ``pbm-ips`` needs).
METRICS: dict[str, tuple[Callable[[FloatArray, NDArray[np.intp]], FloatArray], bool]] = {
    "clicks": (_clicks, True),
    "dcg": (_dcg, True),
    "ctr": (_first_click, False),
}


def metric_depth(metric: str, n_positions: int) -> int:
    """The depth k of ``metric`` (``"name@k"``; the whole list, ``n_positions``, without ``@k``)."""
    name, at, depth = metric.partition("@")
    if name not in METRICS:
        raise InputError(
            f"unknown metric {metric!r}; known: {sorted(METRICS)} (with an optional @k)"
        )
    if not at:
        return n_positions
    if not depth.isdigit() or int(depth) < 1:
        raise InputError(f"metric {metric!r}: the depth after @ must be a positive integer")
    return min(int(depth), n_positions)


def metric_rewards(log: LoggedLists, metric: str) -> FloatArray:
    """Per-position rewards r_i(l) of ``metric``, shape (n, K): 0 past depth k and on padding."""
    k = metric_depth(metric, log.shown.shape[1])
    fn, _ = METRICS[metric.partition("@")[0]]
    pos = np.arange(log.shown.shape[1], dtype=np.intp)
    r = fn(log.clicks, pos)
    return np.where(log.mask & (pos < k), r, 0.0)


def max_reward(metric: str, n_positions: int) -> float:
    """The largest value ``metric`` can take on one impression of ``n_positions`` positions."""
    k = metric_depth(metric, n_positions)
    name = metric.partition("@")[0]
    if name == "ctr":
        return 1.0
    pos = np.arange(k)
    return float(np.sum(1.0 / np.log2(pos + 2.0))) if name == "dcg" else float(k)
