"""Regret arithmetic: cumulative and average values, regret, growth exponents, checkpoints.

Regret after ``t`` rounds compares the learner with the best fixed action in
hindsight over the same rounds (Chaudhuri & Tewari 2015 eq. 1, Ailon 2014 §2,
Yue & Joachims 2009 eq. 2)::

    R_t = C_t − Σ_{s≤t} M(σ_s, r_s)   for a gain,   Σ_{s≤t} M(σ_s, r_s) − C_t   for a loss,

``C_t`` the comparator's cumulative value. Positive regret means worse than
the comparator. Rates like ``R_T = Θ(T^{2/3})`` (top-1 feedback, C&T 2015
Thm. 7) or ``O(√T)`` (full information, FTPL) are read off as the slope of
``log R_t`` against ``log t`` (:func:`regret_exponent`).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import stats

__all__ = [
    "average",
    "cumulative",
    "cumulative_regret",
    "log_checkpoints",
    "regret_exponent",
]


def cumulative(values: ArrayLike) -> NDArray[np.float64]:
    """Running sums over rounds (last axis): ``out[..., t-1] = Σ_{s≤t} values[..., s-1]``.

    >>> cumulative([1.0, 2.0, 3.0]).tolist()
    [1.0, 3.0, 6.0]
    """
    v = np.asarray(values, dtype=np.float64)
    if v.ndim == 0:
        raise ValueError("values must have a rounds axis (last axis)")
    return np.cumsum(v, axis=-1)


def average(values: ArrayLike) -> NDArray[np.float64]:
    """Running means over rounds (last axis): cumulative sum at ``t`` divided by ``t``.

    >>> average([1.0, 2.0, 3.0]).tolist()
    [1.0, 1.5, 2.0]
    """
    c = cumulative(values)
    return c / np.arange(1, c.shape[-1] + 1)


def cumulative_regret(
    learner_cum: ArrayLike, comparator_cum: ArrayLike, *, kind: Literal["gain", "loss"]
) -> NDArray[np.float64]:
    """Cumulative regret from cumulative values (positive = worse than the comparator).

    Parameters
    ----------
    learner_cum
        The learner's cumulative values, shape (..., n_checkpoints).
    comparator_cum
        The comparator's cumulative values, broadcastable to it.
    kind
        ``"gain"`` (regret = comparator − learner) or ``"loss"`` (learner − comparator).

    Examples
    --------
    >>> cumulative_regret([1.0, 1.5], [1.0, 2.0], kind="gain").tolist()
    [0.0, 0.5]
    """
    if kind not in ("gain", "loss"):
        raise ValueError(f"kind must be 'gain' or 'loss', got {kind!r}")
    lc, cc = np.asarray(learner_cum, dtype=np.float64), np.asarray(comparator_cum, dtype=np.float64)
    return cc - lc if kind == "gain" else lc - cc


def regret_exponent(
    t: ArrayLike, cum_regret: ArrayLike, *, t_min: float | None = None, t_max: float | None = None
) -> tuple[float, float]:
    """Growth exponent of cumulative regret: slope of ``log R_t`` on ``log t``.

    A least-squares line (:func:`scipy.stats.linregress`) through
    ``(log t, log R_t)`` for ``t_min <= t <= t_max``; ``R_t ≈ c t^α`` gives slope
    ``α``. Average the repetitions' regret first (regret of the mean), so that
    the fit sees a smooth curve.

    Parameters
    ----------
    t
        Rounds, shape (n,), > 0.
    cum_regret
        Cumulative regret at those rounds, shape (n,); must be > 0 in the range.
    t_min, t_max
        Inclusive range of ``t`` to fit (early rounds are often pre-asymptotic).

    Returns
    -------
    (slope, stderr)
        The exponent and the standard error of the slope.

    Raises
    ------
    ValueError
        For mismatched shapes, fewer than 3 points in range, or a regret <= 0
        (or NaN) in range.

    Examples
    --------
    >>> t = np.array([10.0, 100.0, 1000.0])
    >>> slope, err = regret_exponent(t, 3 * t ** 0.5)
    >>> round(slope, 6), round(err, 6)
    (0.5, 0.0)
    """
    tt = np.asarray(t, dtype=np.float64)
    rr = np.asarray(cum_regret, dtype=np.float64)
    if tt.ndim != 1 or tt.shape != rr.shape:
        raise ValueError(
            f"t and cum_regret must be 1-D of equal length, got {tt.shape} and {rr.shape}"
        )
    keep = np.ones(tt.shape, dtype=bool)
    if t_min is not None:
        keep &= tt >= t_min
    if t_max is not None:
        keep &= tt <= t_max
    tt, rr = tt[keep], rr[keep]
    if tt.size < 3:
        raise ValueError(f"need at least 3 points with t_min <= t <= t_max, got {tt.size}")
    if (tt <= 0).any():
        raise ValueError("t must be > 0")
    bad = ~(rr > 0)
    if bad.any():
        raise ValueError(
            f"cum_regret must be > 0 to take logs; {int(bad.sum())} value(s) are "
            f"not (first at t={tt[bad][0]:g}); raise t_min or average more runs"
        )
    fit = stats.linregress(np.log(tt), np.log(rr))
    return float(fit.slope), float(fit.stderr)


def log_checkpoints(horizon: int, n: int) -> tuple[int, ...]:
    """``min(n, horizon)`` distinct rounds, log-spaced from 1, ending at ``horizon``.

    Rounds follow ``round(horizon^(i/(n-1)))``; where rounding would repeat a
    round at small ``t``, the next integer is taken, so the count is exact.

    Parameters
    ----------
    horizon
        Last round T >= 1.
    n
        Number of checkpoints wanted, >= 1 (capped at ``horizon``).

    Examples
    --------
    >>> log_checkpoints(1000, 4)
    (1, 10, 100, 1000)
    >>> log_checkpoints(5, 10)
    (1, 2, 3, 4, 5)
    """
    for name, value in (("horizon", horizon), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    k = min(int(n), int(horizon))
    if k == 1:
        return (int(horizon),)
    ideal = np.rint(np.geomspace(1.0, float(horizon), k)).astype(np.int64)
    out: list[int] = []
    for i, g in enumerate(ideal):
        lo = out[-1] + 1 if out else 1
        hi = int(horizon) - (k - 1 - i)  # leave room for the remaining checkpoints
        out.append(min(max(lo, int(g)), hi))
    return tuple(out)
