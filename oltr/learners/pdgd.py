"""Pairwise Differentiable Gradient Descent (Oosterhuis & de Rijke 2018), batched over runs.

Each impression, for every run ``b`` (linear scorer ``f(d) = x_d · w``):

1. **Plackett–Luce sampling** of the shown list (§4.1, eq. 2): document ``d`` is
   placed next with probability ``e^{f(d)} / Σ_{d' not yet placed} e^{f(d')}``.
   Drawn with the Gumbel-max trick: sorting ``f(d) + G_d`` with i.i.d. standard
   Gumbel ``G_d`` gives exactly a Plackett–Luce sample of the whole order; the
   top ``k`` (10) are shown.
2. **Inferred preferences** (§4.2): a clicked document ``d_k`` is preferred over
   every unclicked ``d_l`` that is ranked above the last click or directly below
   it.
3. **Debiasing** (§4.3, eqs. 8–9): each pair is weighted by
   ``ρ(d_k, d_l, R) = P(R*(d_k, d_l) | f) / (P(R | f) + P(R*(d_k, d_l) | f))``, where
   ``R*`` is the shown ranking with ``d_k`` and ``d_l`` swapped.
4. **Gradient** (§4.4, eq. 10): ``∇f ≈ Σ_{d_k ≻_c d_l} ρ(d_k, d_l, R) ∇P(d_k ≻ d_l)``, with
   ``P(d_k ≻ d_l) = e^{f(d_k)} / (e^{f(d_k)} + e^{f(d_l)})``, so
   ``∇P = e^{f_k} e^{f_l} / (e^{f_k} + e^{f_l})² · (x_k − x_l)``; then ``w ← w + η ∇f``.

Only the factors of ``P(R)`` and ``P(R*)`` at the positions between the pair differ
(the numerators are the same set of documents; below the pair the remaining sets
agree), so ``P(R)/P(R*) = Π_{t=lo+1}^{hi} D*_t / D_t`` with ``D_t`` the PL
denominator at position ``t`` and ``D*_t = D_t − e^{f(R_hi)} + e^{f(R_lo)}``. The
whole update of one run is one compiled loop over its pairs, computed in the same
order whatever the batch, so a run's weights do not depend on its companions.

Settings (Oosterhuis & de Rijke 2018 §6; the reference implementation's CIKM 2018
script): η = 0.1, w₀ = 0, top 10 shown; the script also multiplies η by
``lr_decay = 0.9999977`` after every update, which is selectable and off by default
(it changes η by 2% over 10,000 impressions).

References
----------
Oosterhuis & de Rijke 2018, "Differentiable unbiased online learning to rank", CIKM,
Algorithm 1, §4 (eqs. 2, 8–10), §6.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from oltr.feedback import FeedbackRequirement
from oltr.feedback.clicks import ClickFeedback
from oltr.kernels import njit
from oltr.learners._linear_kernels import fused_step, plain_scores
from oltr.learners._runs_minor_kernels import scores_runs_minor
from oltr.learners._step_bound import _step_status, check_step
from oltr.learners.base import ResumableRound
from oltr.learners.linear import RUNS_MINOR_FROM
from oltr.learners.linear_round import TrustedLinearRanker
from oltr.permutations.counting import stable_orders
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_scalar

__all__ = ["PDGD", "pdgd_score_gradient"]

_NO_ORDER = np.empty((0, 0), dtype=np.intp)


@njit(nogil=True)
def _pair_coefficients(scores: Any, order: Any, clicks: Any, out: Any) -> int:  # pragma: no cover
    """Per-document coefficients of ∇f in score space for one run; returns the pair count."""
    n = clicks.shape[0]
    m = order.shape[0]
    last = -1
    for i in range(n):
        if clicks[i]:
            last = i
    for i in range(m):
        out[i] = 0.0
    if last < 0:
        return 0
    top = scores[order[0]]
    for i in range(m):
        if scores[i] > top:
            top = scores[i]
    e = np.empty(m)  # e^{f - max}, by position
    for t in range(m):
        e[t] = np.exp(scores[order[t]] - top)
    suffix = np.empty(m + 1)  # D_t = Σ_{u >= t} e_u: the PL denominator at position t
    suffix[m] = 0.0
    for t in range(m - 1, -1, -1):
        suffix[t] = suffix[t + 1] + e[t]
    n_pairs = 0
    stop = min(last + 1, n - 1)
    for i in range(n):  # i: a clicked position
        if not clicks[i]:
            continue
        for j in range(stop + 1):  # j: an unclicked position above the last click or just below
            if clicks[j]:
                continue
            lo, hi = min(i, j), max(i, j)
            log_ratio = 0.0  # log P(R)/P(R*) = Σ_{lo<t<=hi} log(D*_t / D_t)
            for t in range(lo + 1, hi + 1):
                log_ratio += np.log((suffix[t] - e[hi] + e[lo]) / suffix[t])
            rho = 1.0 / (1.0 + np.exp(log_ratio))
            gap = abs(scores[order[i]] - scores[order[j]])
            z = np.exp(-gap)
            dp = z / ((1.0 + z) * (1.0 + z))  # e^{f_k} e^{f_l} / (e^{f_k} + e^{f_l})^2
            out[order[i]] += rho * dp
            out[order[j]] -= rho * dp
            n_pairs += 1
    return n_pairs


def pdgd_score_gradient(
    scores: FloatArray, orders: Orders, clicks: np.ndarray
) -> tuple[FloatArray, np.ndarray]:
    """PDGD's ∇f in score space: coefficients (B, m) per document, and each run's pair count.

    The weight gradient of run ``b`` is ``coef[b] @ X`` (Oosterhuis & de Rijke 2018, eq. 10).

    Parameters
    ----------
    scores
        (B, m) scores ``f`` of the ranker that sampled the lists.
    orders
        (B, m) the sampled orders (full permutations; positions beyond the page
        enter only the PL denominators).
    clicks
        (B, n) clicks on the top ``n`` positions.

    Examples
    --------
    >>> coef, pairs = pdgd_score_gradient(np.zeros((1, 2)), np.array([[0, 1]]),
    ...                                   np.array([[False, True]]))
    >>> coef.tolist(), pairs.tolist()      # equal scores: ρ = 1/2, ∇P = 1/4
    ([[-0.125, 0.125]], [1])
    """
    b, m = scores.shape
    coef = np.zeros((b, m))
    pairs = np.zeros(b, dtype=np.int64)
    sc = np.ascontiguousarray(scores, dtype=np.float64)
    od = np.ascontiguousarray(orders, dtype=np.intp)
    ck = np.ascontiguousarray(clicks, dtype=np.bool_)
    _pair_coefficients_runs(sc, od, ck, coef, pairs)
    return coef, pairs


@njit(nogil=True)
def _pair_coefficients_runs(
    scores: Any, orders: Any, clicks: Any, coef: Any, pairs: Any
) -> None:  # pragma: no cover
    for r in range(scores.shape[0]):
        pairs[r] = _pair_coefficients(scores[r], orders[r], clicks[r], coef[r])


@njit(nogil=True)
def _scaled_coefficients(
    scores: Any, orders: Any, clicks: Any, eta: Any, coef: Any, pairs: Any
) -> None:  # pragma: no cover
    """``coef = (−η_b) ∇f`` per run, as numpy's ``−η[:, None] * coef`` (the ascent direction)."""
    _pair_coefficients_runs(scores, orders, clicks, coef, pairs)
    for b in range(coef.shape[0]):
        for i in range(coef.shape[1]):
            coef[b, i] = -eta[b] * coef[b, i]


@njit(nogil=True)
def _trusted_pdgd_step(
    scores: Any,
    orders: Any,
    clicks: Any,
    eta: Any,
    lr_decay: float,
    x: Any,
    weights: Any,
    average: Any,
    n_averaged: float,
    coef: Any,
    pairs: Any,
    buffer: Any,
) -> int:  # pragma: no cover
    """PDGD's update of row-major weights in one call: the checked path's arithmetic.

    ``coef = (−η_b) ∇f`` (as numpy's ``−η[:, None] * coef``), the finiteness
    check of :func:`check_step`, the fixed step with η = 1 and U = ∞
    (:func:`fused_step`), then ``η_b ← η_b · lr_decay`` for the runs with a pair.
    Returns −3 when the direction is not finite (nothing moved), else the step's
    verdict (the decay is applied only when it is −1).
    """
    _scaled_coefficients(scores, orders, clicks, eta, coef, pairs)
    sumsq = np.zeros(0)
    if _step_status(coef, x, sumsq, False, 1.7976931348623157e308) != 0:
        return -3
    bad = fused_step(weights, coef, x, 1.0, False, sumsq, np.inf, average, n_averaged, buffer)
    if bad == -1:
        for b in range(eta.shape[0]):
            if pairs[b] > 0:
                eta[b] = eta[b] * lr_decay
    return bad


@register_learner("pdgd")
class PDGD(ResumableRound, TrustedLinearRanker[ClickFeedback]):
    """Pairwise Differentiable Gradient Descent with a linear scorer, learning from clicks.

    Samples the shown list from the Plackett–Luce model of its scores and steps
    along the debiased pairwise gradient of the clicks (Oosterhuis & de Rijke
    2018, Algorithm 1; see the module docstring).

    Parameters
    ----------
    eta
        Learning rate η > 0 (0.1, §6).
    lr_decay
        Factor in (0, 1] applied to η after every update with at least one pair
        (1: none; 0.9999977 in the reference implementation's script).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    Attributes
    ----------
    weights_ : array of shape (B, d)
        The current linear scorers (w₀ = 0).

    References
    ----------
    Oosterhuis & de Rijke 2018, CIKM, Algorithm 1, eqs. 2 and 8–10, §6.
    """

    requires = FeedbackRequirement("clicks")

    def __init__(
        self, *, eta: float = 0.1, lr_decay: float = 1.0, n_runs: int = 1, rng: RunRNGLike = None
    ) -> None:
        super().__init__(radius=float("inf"), n_runs=n_runs, rng=rng)
        check_scalar(eta, "eta", low=0, include_low=False)
        check_scalar(lr_decay, "lr_decay", low=0, high=1, include_low=False)
        self.eta = eta
        self.lr_decay = lr_decay
        self._eta = np.full(self.n_runs, float(eta))
        self._last: tuple[int, FloatArray] | None = None

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}
        yield {"eta": 0.5, "lr_decay": 0.99}

    def rank(self, context: Context) -> Orders:
        """A Plackett–Luce sample of every run's order (Gumbel-max), shape (B, m)."""
        x = self._features(context)
        scores = self._current_scores(x)
        m = x.shape[0]
        u = self.rngs.random(m)
        gumbel = -np.log(-np.log1p(-u))  # 1 − u ∈ (0, 1]: no log(0)
        self._last = (context.t, scores)
        return np.argsort(-(scores + gumbel), axis=-1, kind="stable").astype(np.intp)

    def update(self, context: Context, orders: Orders, feedback: ClickFeedback) -> None:
        """One debiased pairwise step per run from its clicks (eq. 10)."""
        if self._last is None or self._last[0] != context.t:
            raise RuntimeError("PDGD.update must follow rank() on the same context")
        coef, pairs = pdgd_score_gradient(self._last[1], orders, feedback.clicks)
        # Ascent: LinearRanker's step subtracts, so pass −η per run.
        self._step(context, -self._eta[:, None] * coef, 1.0, float("inf"))
        self._eta = np.where(pairs > 0, self._eta * float(self.lr_decay), self._eta)
        self._last = None  # the round is over: keep nothing of its context

    def trusted_rank(self, context: Context) -> Orders:
        """:meth:`rank` under the runner's guarantees: the same scores, draws and order."""
        x, weights = context.features, self._weights
        n_runs = self.n_runs
        if (
            weights is None
            or type(x) is not np.ndarray
            or x.dtype != np.float64
            or x.ndim != 2
            or not x.flags.c_contiguous
            or x.shape[1] != weights.shape[1]
            or x.shape[0] != context.n_items
            or (n_runs >= RUNS_MINOR_FROM and not weights.flags.f_contiguous)
        ):
            return self.rank(context)
        m = x.shape[0]
        scores = np.empty((n_runs, m))
        if n_runs >= RUNS_MINOR_FROM:
            neg = self._scores_scratch(m, x.shape[1])
            flat = scores_runs_minor(weights.T, x, self._scratch, scores, neg, _NO_ORDER)
        else:
            flat = plain_scores(weights, x, scores)
        if flat >= 0:
            return self.rank(context)  # names the bad feature
        u = self.rngs.random(m)
        keys = np.log1p(np.negative(u, out=u), out=u)  # −log(−log(1 − u)): the Gumbel draws
        keys = np.log(np.negative(keys, out=keys), out=keys)
        keys = np.subtract(keys, scores, out=keys)  # −(scores + gumbel) = −log(…) − scores
        self._last = (context.t, scores)
        self._cache = (context.t, scores, _NO_ORDER, x)
        return stable_orders(keys)

    def trusted_update(self, context: Context, orders: Orders, feedback: ClickFeedback) -> None:
        """:meth:`update` under the runner's guarantees: one compiled call for the step."""
        last, cache, weights, average = self._last, self._cache, self._weights, self._average
        if (
            last is None
            or last[0] != context.t
            or cache is None
            or cache[0] != context.t
            or weights is None
            or average is None
        ):
            self._cache = None
            self.update(context, orders, feedback)
            return
        n_runs, m = last[1].shape
        coef, pairs = np.empty((n_runs, m)), np.empty(n_runs, dtype=np.int64)
        if n_runs >= RUNS_MINOR_FROM:  # runs-minor weights: the direction, then the shared step
            _scaled_coefficients(last[1], orders, feedback.clicks, self._eta, coef, pairs)
            self._trusted_step(context, coef, 1.0, False, float("inf"))
            self._eta[pairs > 0] *= float(self.lr_decay)
            self._last = None
            return
        if self._buffer.shape != weights.shape:
            self._buffer = np.empty(weights.shape)
        bad = _trusted_pdgd_step(
            last[1],
            orders,
            feedback.clicks,
            self._eta,
            float(self.lr_decay),
            cache[3],
            weights,
            average,
            float(self._n_averaged + 1),
            coef,
            pairs,
            self._buffer,
        )
        if bad == -3:  # a direction that is not finite: the checked step names it
            check_step(type(self).__name__, context.t, coef, cache[3], self._sumsq, False)
        if bad >= 0:
            self._fail_not_finite(context, coef, float("inf"))
        self._n_averaged += 1
        self._cache = None
        self._last = None
