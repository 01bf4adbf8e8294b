"""Intervals for off-policy estimates: bootstrap (BCa, percentile, bootstrap-t), Bernstein, normal.

Every off-policy estimate here is a *ratio of sums over impressions*,
``θ̂ = Σ_i a_i / Σ_i b_i``: ``b_i = 1`` for the means (IPS, item-position IPS,
Cascade-DR: ``a_i`` is impression i's term) and ``b_i = w_i`` for the
self-normalised estimator (``a_i = w_i R_i``). The intervals resample or bound
that form directly.

- :func:`bootstrap_interval` resamples impressions with replacement (Efron 1979),
  ``n_boot`` times, from a seeded Generator. ``method="percentile"`` takes the
  α/2 and 1 − α/2 quantiles of the resampled estimates; ``method="bca"`` (this
  function's default) moves them by the bias correction ẑ₀ and the acceleration â (Efron
  1987, JASA 82:171–185; Efron & Tibshirani 1993, *An Introduction to the
  Bootstrap*, §14.3):

  .. math::
      α_1 = Φ\\Big(ẑ_0 + \\frac{ẑ_0 + z_{α/2}}{1 − â (ẑ_0 + z_{α/2})}\\Big),\\quad
      ẑ_0 = Φ^{-1}\\big(\\#\\{θ^*_b < θ̂\\} / B\\big),\\quad
      â = \\frac{Σ_i (θ̄_{(·)} − θ̂_{(i)})^3}{6 \\{Σ_i (θ̄_{(·)} − θ̂_{(i)})^2\\}^{3/2}},

  and α₂ likewise with z_{1−α/2}; θ̂₍ᵢ₎ is the leave-one-out (jackknife)
  estimate. For a ratio of sums it is ``(A − a_i)/(B − b_i)``, so â costs O(n)
  instead of the n re-evaluations a generic BCa needs (``scipy.stats.bootstrap``
  would do O(n²) work at n = 20 000 impressions, hence this implementation).
  BCa is second-order accurate; the percentile interval only first-order, which
  shows on the right-skewed IPS terms (most zero, a few large).

  Resampling is exact and cheap when the terms take few distinct values (IPS
  with binary clicks): a resample of n impressions is a multinomial draw over
  the distinct ``(a, b)`` pairs with probabilities ``count/n``. Otherwise the
  impressions holding the most common pair (most IPS terms are 0) are drawn in
  bulk — a Binomial count — and only the others by index, in chunks. A resample
  with ``Σ b* = 0`` (possible for the self-normalised estimator) has no estimate
  and is dropped.

  ``method="studentized"`` is the bootstrap-t (Efron & Tibshirani 1993, §12.5;
  Hall 1988, Ann. Statist. 16:927–953, "Theoretical comparison of bootstrap
  confidence intervals"): each resample's estimate is standardised by its own
  plug-in standard error, ``t*_b = (θ*_b − θ̂)/se*_b``, and the interval is

  .. math::
      \\big[θ̂ − t^*_{(1−α/2)} \\widehat{se},\\; θ̂ − t^*_{(α/2)} \\widehat{se}\\big]

  with ``t*_(q)`` the q-quantile of the B values and ``se`` the plug-in standard
  error of :func:`normal_interval` (the delta method for a ratio). It is
  second-order accurate, like BCa, and is the default of every off-policy
  estimator (:mod:`oltr.estimators.offpolicy`) because of how importance-weighted
  sums fail: a sample that has drawn few of the rare large weights has a low
  estimate *and* a small standard error, and so have its resamples. The
  percentile and BCa endpoints are quantiles of the resampled estimates, so they
  cannot reach values the resamples never produce, and BCa's acceleration, a
  jackknife skewness of a few large terms, is itself noisy; the bootstrap-t
  carries the skew through ``t*`` — resamples that lose large weights give large
  negative ``t*`` — and pushes the upper endpoint out by a multiple of ``se``.
  The sums each resample needs (``Σa*, Σb*, Σa*², Σa*b*, Σb*²``) come from the
  same draws, so it costs what the percentile interval costs. A resample whose
  standard error is 0 (every term alike: typically none of the weighted
  impressions drawn) counts as ``t* = ±∞`` on the side of its estimate, so a log
  where most resamples see no weighted impression gets an unbounded endpoint
  rather than a falsely narrow one.

- :func:`bernstein_interval` is the empirical Bernstein bound of Maurer &
  Pontil (2009, COLT, "Empirical Bernstein bounds and sample variance
  penalization", Theorem 4): for i.i.d. ``X_i ∈ [0, 1]``, n ≥ 2, with probability
  at least 1 − δ, ``E X ≤ X̄ + √(2 V_n ln(2/δ)/n) + 7 ln(2/δ)/(3(n − 1))`` with
  ``V_n`` the unbiased sample variance. For ``X ∈ [lo, hi]`` rescale; the
  two-sided interval spends δ = α/2 on each side and is clipped to the range. It
  holds for every n (no asymptotics) but needs the range known in advance.

- :func:`normal_interval` is θ̂ ± z_{1−α/2}·se with the plug-in (delta-method for
  the ratio) standard error: the cheapest, valid only asymptotically.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError
from oltr.random import RNGLike, as_rng

__all__ = [
    "INTERVAL_METHODS",
    "IntervalMethod",
    "bernstein_interval",
    "bootstrap_interval",
    "normal_interval",
]

IntervalMethod = Literal["bca", "percentile", "studentized", "bernstein", "normal"]
#: The interval methods, by name.
INTERVAL_METHODS: tuple[str, ...] = ("bca", "percentile", "studentized", "bernstein", "normal")
#: The standard normal (the standard library's: no scipy import for two quantiles).
_NORMAL = NormalDist()
#: Above this share of distinct (a, b) pairs, resample by index instead of by multinomial counts.
_DISTINCT_SHARE = 0.25
#: Impressions drawn per bootstrap chunk when resampling by index (bounds the memory to ~64 MB).
_CHUNK_CELLS = 8_000_000


def _check_alpha(alpha: float) -> float:
    if not (isinstance(alpha, float | int) and 0.0 < float(alpha) < 1.0):
        raise InputError(f"alpha must be in (0, 1) (0.05 gives a 95% interval), got {alpha!r}")
    return float(alpha)


def _terms(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(
            f"{name} must be one-dimensional (one value per impression), got shape {arr.shape}"
        )
    if arr.size == 0:
        raise InputError(f"{name} is empty: an interval needs at least one impression")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise InputError(f"{name}[{bad}] is {arr[bad]}: every term must be finite")
    return arr


def _pair(
    numer: ArrayLike, denom: ArrayLike | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = _terms(numer, "numer")
    b = np.ones_like(a) if denom is None else _terms(denom, "denom")
    if a.shape != b.shape:
        raise InputError(f"numer and denom must have the same shape, got {a.shape} and {b.shape}")
    return a, b


def _ratio(num: NDArray[np.float64], den: NDArray[np.float64]) -> NDArray[np.float64]:
    out = np.full(np.shape(num), np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _resampled(
    a: NDArray[np.float64], b: NDArray[np.float64], n_boot: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Sums ``(Σa*, Σb*, Σa*², Σa*b*, Σb*²)`` of ``n_boot`` resamples of the impressions, (B, 5).

    Few distinct ``(a, b)`` pairs: one multinomial draw of their counts per resample.
    Otherwise the impressions holding the most common pair (the zero term of an
    importance-weighted sum, usually) are drawn in bulk: a resample takes
    ``N ~ Binomial(n, n_rare/n)`` of the others, uniformly with replacement, and
    ``n − N`` copies of the common pair — the same distribution as n uniform draws
    by index, at a cost of O(n_rare) instead of O(n) per resample.
    """
    n = a.size
    pairs, inverse, counts = np.unique(
        np.stack([a, b], axis=1), axis=0, return_inverse=True, return_counts=True
    )
    if pairs.shape[0] <= max(1.0, _DISTINCT_SHARE * n):
        draws = rng.multinomial(n, counts / n, size=n_boot).astype(np.float64)
        pa, pb = pairs[:, 0], pairs[:, 1]
        out: NDArray[np.float64] = draws @ np.stack([pa, pb, pa * pa, pa * pb, pb * pb], axis=1)
        return out
    mode = int(np.argmax(counts))
    ca, cb = pairs[mode]
    rare = np.asarray(inverse).ravel() != mode
    ra, rb = a[rare], b[rare]
    ones = bool(np.all(b == 1.0))  # a mean: Σb* = n, Σa*b* = Σa*, Σb*² = n
    used = [0, 2] if ones else [0, 1, 2, 3, 4]
    cols = [(ra, rb, ra * ra, ra * rb, rb * rb)[c] for c in used]
    common = np.array([ca, cb, ca * ca, ca * cb, cb * cb])
    taken = rng.binomial(n, ra.size / n, size=n_boot)
    out = (n - taken)[:, None] * common[None, :]
    step = max(1, _CHUNK_CELLS // max(ra.size, 1))
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        size = taken[start:stop]
        idx = rng.integers(0, ra.size, size=int(size.sum()))
        seg = np.repeat(np.arange(stop - start), size)
        for c, col in zip(used, cols, strict=True):
            out[start:stop, c] += np.bincount(seg, weights=col[idx], minlength=stop - start)
    if ones:
        out[:, 1] = out[:, 4] = n
        out[:, 3] = out[:, 0]
    return out


def _ratio_se(sums: NDArray[np.float64], n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Estimate ``Σa/Σb`` and its plug-in standard error from the sums of :func:`_resampled`.

    The standard error is :func:`normal_interval`'s: the delta method
    ``√(Σ (a − θ b)² · n/(n − 1)) / Σ b``, which for ``b ≡ 1`` is ``std(a, ddof=1)/√n``.
    """
    sa, sb, saa, sab, sbb = sums.T
    theta = _ratio(sa, sb)
    resid = np.maximum(saa - 2.0 * theta * sab + theta * theta * sbb, 0.0)
    se = _ratio(np.sqrt(resid * n / max(n - 1, 1)), sb)
    return theta, se


def _acceleration(a: NDArray[np.float64], b: NDArray[np.float64]) -> float:
    """BCa acceleration â from the jackknife of Σa/Σb (Efron & Tibshirani 1993, §14.3)."""
    if a.size < 3:
        return 0.0
    loo = _ratio(a.sum() - a, b.sum() - b)
    loo = loo[np.isfinite(loo)]
    if loo.size < 3:
        return 0.0
    d = loo.mean() - loo
    s2 = float((d * d).sum())
    return 0.0 if s2 <= 0.0 else float((d**3).sum() / (6.0 * s2**1.5))


def _endpoints(
    a: NDArray[np.float64],
    b: NDArray[np.float64],
    sums: NDArray[np.float64],
    alpha: float,
    method: str,
) -> tuple[float, float]:
    """The ``method`` interval of ``Σa/Σb`` from the resampled sums (:func:`_resampled`)."""
    n = a.size
    theta = float(a.sum() / b.sum())
    boot, boot_se = _ratio_se(sums, n)
    keep = np.isfinite(boot)
    boot, boot_se = boot[keep], boot_se[keep]
    if boot.size == 0 or np.all(boot == boot[0]):
        return theta, theta
    lo_q, hi_q = alpha / 2.0, 1.0 - alpha / 2.0
    if method == "studentized":
        se = float(_ratio_se(np.array([[a.sum(), b.sum(), a @ a, a @ b, b @ b]]), n)[1][0])
        # t* = (θ* − θ̂)/se*; a resample with se* = 0 (all its weighted terms alike) is
        # ±∞ on the side of θ* (it pulls the far endpoint out, never in).
        diff = boot - theta
        pos = boot_se > 0
        flat = np.where(diff > 0, np.inf, np.where(diff < 0, -np.inf, 0.0))
        t = np.where(pos, diff / np.where(pos, boot_se, 1.0), flat)
        t_lo, t_hi = np.quantile(np.sort(t), [lo_q, hi_q], method="inverted_cdf")
        return theta - float(t_hi) * se, theta - float(t_lo) * se
    if method == "bca":
        below = (np.count_nonzero(boot < theta) + 0.5 * np.count_nonzero(boot == theta)) / boot.size
        if 0.0 < below < 1.0:
            z0 = _NORMAL.inv_cdf(below)
            acc = _acceleration(a, b)
            zs = [z0 + _NORMAL.inv_cdf(q) for q in (lo_q, hi_q)]
            if all(1.0 - acc * z > 0.0 for z in zs):  # else â is too large: keep percentile
                lo_q, hi_q = (_NORMAL.cdf(z0 + z / (1.0 - acc * z)) for z in zs)
    low, high = np.quantile(boot, [lo_q, hi_q])
    return float(low), float(high)


def bootstrap_interval(
    numer: ArrayLike,
    denom: ArrayLike | None = None,
    *,
    alpha: float = 0.05,
    n_boot: int = 1000,
    method: Literal["bca", "percentile", "studentized"] = "bca",
    rng: RNGLike = 0,
) -> tuple[float, float]:
    """Bootstrap interval of ``Σ numer / Σ denom`` (the mean of ``numer`` when ``denom`` is None).

    Parameters
    ----------
    numer, denom
        Per-impression terms, shape (n,), finite; ``denom`` None means all ones.
    alpha
        1 − coverage: 0.05 gives the 95% interval.
    n_boot
        Number of resamples B (≥ 100; Efron & Tibshirani recommend ≥ 1000 for BCa
        and the bootstrap-t).
    method
        ``"bca"`` (bias-corrected and accelerated), ``"percentile"`` or
        ``"studentized"`` (bootstrap-t; module docstring).
    rng
        Seed or Generator of the resampling; the same seed gives the same interval.

    Returns
    -------
    (low, high)
        The interval; a single point when every impression has the same term. A
        studentized endpoint is ±inf when more than α/2 of the resamples have a
        zero standard error on that side (almost no impression carries weight).

    Examples
    --------
    >>> lo, hi = bootstrap_interval(np.r_[np.zeros(90), np.ones(10)], rng=1)
    >>> bool(lo < 0.1 < hi)
    True
    """
    alpha = _check_alpha(alpha)
    if method not in ("bca", "percentile", "studentized"):
        raise InputError(f"method must be 'bca', 'percentile' or 'studentized', got {method!r}")
    if not isinstance(n_boot, int) or n_boot < 100:
        raise InputError(f"n_boot must be an integer >= 100, got {n_boot!r}")
    a, b = _pair(numer, denom)
    if b.sum() == 0.0:
        raise InputError("sum of denom is 0: the estimate is undefined (no impression has weight)")
    return _endpoints(a, b, _resampled(a, b, n_boot, as_rng(rng)), alpha, method)


def bernstein_interval(
    terms: ArrayLike, *, low: float, high: float, alpha: float = 0.05
) -> tuple[float, float]:
    """Empirical Bernstein interval of the mean of terms known to lie in ``[low, high]``.

    Maurer & Pontil (2009), Theorem 4, applied to ``(X − low)/(high − low)`` and
    to ``(high − X)/(high − low)`` with δ = α/2 each: half-width
    ``√(2 V_n ln(4/α)/n) + 7 (high − low) ln(4/α) / (3(n − 1))``, ``V_n`` the
    unbiased sample variance of the terms; the interval is clipped to the range.

    Parameters
    ----------
    terms
        Per-impression terms, shape (n,), n ≥ 2, each in ``[low, high]``.
    low, high
        The range every term could take, fixed before seeing the data (for IPS:
        ``[0, max weight × max reward]``).
    alpha
        1 − coverage.

    Examples
    --------
    >>> lo, hi = bernstein_interval(np.r_[np.zeros(900), np.ones(100)], low=0.0, high=1.0)
    >>> bool(0.0 < lo < 0.1 < hi < 0.2)
    True
    """
    alpha = _check_alpha(alpha)
    x = _terms(terms, "terms")
    if not (math.isfinite(low) and math.isfinite(high) and high >= low):
        raise InputError(
            f"the range [low, high] must be finite with high >= low, got [{low}, {high}]"
        )
    if x.size < 2:
        raise InputError("the empirical Bernstein bound needs at least 2 impressions")
    slack = 1e-9 * max(1.0, abs(low), abs(high))
    if x.min() < low - slack or x.max() > high + slack:
        raise InputError(
            f"terms lie in [{x.min()}, {x.max()}], outside the stated range [{low}, {high}]: "
            "the bound would not hold (raise the weight bound)"
        )
    n = x.size
    log_term = math.log(4.0 / alpha)  # ln(2/δ) with δ = α/2 per side
    var = float(x.var(ddof=1))
    half = math.sqrt(2.0 * var * log_term / n) + 7.0 * (high - low) * log_term / (3.0 * (n - 1))
    mean = float(x.mean())
    return max(low, mean - half), min(high, mean + half)


def normal_interval(
    numer: ArrayLike, denom: ArrayLike | None = None, *, alpha: float = 0.05
) -> tuple[float, float, float]:
    """θ̂ ± z·se for ``θ̂ = Σ numer / Σ denom``; returns ``(low, high, se)``.

    The standard error is ``std(numer, ddof=1)/√n`` for a mean and, for a ratio,
    the delta-method ``√(Σ (a_i − θ̂ b_i)² · n/(n−1)) / Σ b_i`` (the usual
    linearisation of a ratio estimator, as for the self-normalised estimator).
    """
    alpha = _check_alpha(alpha)
    a, b = _pair(numer, denom)
    n = a.size
    if b.sum() == 0.0:
        raise InputError("sum of denom is 0: the estimate is undefined (no impression has weight)")
    theta = float(a.sum() / b.sum())
    if n < 2:
        return theta, theta, math.nan
    if denom is None:
        se = float(a.std(ddof=1) / math.sqrt(n))
    else:
        resid = a - theta * b
        se = float(math.sqrt(float((resid * resid).sum()) * n / (n - 1)) / b.sum())
    z = _NORMAL.inv_cdf(1.0 - alpha / 2.0)
    return theta - z * se, theta + z * se, se
