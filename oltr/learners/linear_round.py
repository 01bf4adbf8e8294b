"""The trusted round of linear scorers: the runner's path through RTop-kF, ListNet and PDGD.

:class:`~oltr.learners.linear.LinearRanker`'s public ``rank`` and ``update``
check what they are given every round (the feature matrix's shape, width and
dtype; the feedback kind; the round the scores belong to) and build fresh
arrays for what they return, because a caller may hold on to them. The runner
(:func:`oltr.experiments.runner.run_set`) already guarantees most of that once
per run: the context comes from the environment in round order, the same
context object reaches the update, the orders it passes back are the ones the
learner returned, and the feedback is ``feedback.restrict(learner.requires)``,
exactly the declared kind. :meth:`~oltr.learners.base.Learner.trusted_rank` and
:meth:`~oltr.learners.base.Learner.trusted_update` take those guarantees and
skip the re-checks, reuse this round's score and order buffers in the next
round, and fold the step's bound check into the step's compiled call. What the
learner cannot know without looking stays checked every round, inside the
kernels at no extra pass: a non-finite feature (the scores kernel), a step the
arithmetic cannot hold (the step kernel, then :func:`check_step` for the
message) and weights that stopped being finite.

The arithmetic is the checked path's, call for call, so traces are the same
bit for bit (``tests/experiments/test_trusted_path.py``). Anything outside the
common case (round 1, which sizes the weights; features of another dtype or
layout; a batch of 4–7 runs; a score that overflowed) takes the checked path.

A single run (and up to three) is where the Python between the compiled calls
weighs most: at B = 1 a round's arithmetic takes a few microseconds, and every
attribute read, check and method call around it is tens of nanoseconds more.
Float64 learners with fewer than four runs therefore keep a :class:`DirectRound`:
the buffers of the round (scores, their negation, the own orders, the step's
direction and sums) and the step's constants, made once per list size, so that
a round is a few identity and shape checks, the scores kernel, the estimate
into the reused direction and the step kernel (:meth:`TrustedLinearRanker._direct_scores`,
:meth:`TrustedLinearRanker._direct_step`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from oltr.kernels import njit
from oltr.learners._linear_kernels import fused_scores, fused_step, sorts_here, stable_ties
from oltr.learners._runs_minor_kernels import scores_runs_minor, step_runs_minor
from oltr.learners._step_bound import _DTYPE_MAX, _step_status, check_step
from oltr.learners.base import FeedbackT
from oltr.learners.linear import RUNS_MINOR_FROM, LinearRanker
from oltr.surrogates import TrustedEstimator
from oltr.types import Context, FloatArray, Orders

__all__ = ["DirectRound", "TrustedLinearRanker"]

#: Fewer runs than this score row by row and sort inside the scores kernel.
_DIRECT_BELOW = 4
_NO_ITEMS = np.empty((0, 0), dtype=np.intp)
_EMPTY = {t.char: np.empty((0, 0), t) for t in (np.dtype("d"), np.dtype("f"))}
_FLOAT64 = np.dtype(np.float64)
_FLOAT64_MAX = _DTYPE_MAX[_FLOAT64]


class DirectRound(NamedTuple):
    """The buffers the trusted round of fewer than four float64 runs reuses (module docstring).

    Each round writes every entry before reading it, so nothing of one list
    passes to the next; they are replaced when the list size changes.
    """

    #: (m, d) of the lists they fit.
    shape: tuple[int, int]
    #: (B, m): ``S = W Xᵀ``.
    scores: FloatArray
    #: (B, m): ``−S``, the sort keys.
    neg: FloatArray
    #: (B, m): each run's own order.
    own: Orders
    #: (B, m): the step's direction, for learners that build it in place.
    direction: FloatArray
    #: (B, d): the step's sums.
    sums: FloatArray
    #: What :meth:`TrustedLinearRanker._trusted_eta` returns: (η or U, adaptive, U).
    step: tuple[float, bool, float]
    #: The learner's compiled estimate for lists of this size, if it has one
    #: (:meth:`TrustedLinearRanker._direct_estimator`).
    estimate: TrustedEstimator | None


@njit(nogil=True)
def checked_step(
    runs_minor: bool,
    weights: Any,
    direction: Any,
    x: Any,
    eta: float,
    adaptive: bool,
    sumsq: Any,
    radius: float,
    average: Any,
    n_averaged: float,
    buffer: Any,
    dtype_max: float,
) -> int:  # pragma: no cover
    """:func:`check_step`'s cheap bound, then the step, in one compiled call: :func:`fused_step`,
    or :func:`step_runs_minor` when ``runs_minor`` (``weights`` and ``average`` are then ``Wᵀ``).

    Returns −3 (nothing changed: the caller runs :func:`check_step` for the
    verdict) when the bound does not clear the step, else what the step returns.
    """
    if _step_status(direction, x, sumsq, adaptive, dtype_max) != 0:
        return -3
    args = (weights, direction, x, eta, adaptive, sumsq, radius, average, n_averaged, buffer)
    return step_runs_minor(*args) if runs_minor else fused_step(*args)


class TrustedLinearRanker(LinearRanker[FeedbackT]):
    """A :class:`~oltr.learners.linear.LinearRanker` with the trusted round's scores and step.

    Subclasses implement ``trusted_rank`` / ``trusted_update`` with
    :meth:`_trusted_scores` and :meth:`_trusted_step` (module docstring).
    """

    scratch_fields = (
        *LinearRanker.scratch_fields,
        "_round_buffers",
        "_trusted_eta_args",
        "_direct",
    )
    #: This round's scores, −scores and own orders (B, m), reused while m stays the same.
    _round_buffers: tuple[FloatArray, FloatArray, Orders] = (_EMPTY["d"], _EMPTY["d"], _NO_ITEMS)
    #: The direct round's buffers (B < 4, float64), for lists of the last size.
    _direct: DirectRound | None = None

    def _direct_scores(self, context: Context) -> DirectRound | None:
        """This round's scores and own orders, for fewer than four float64 runs, in
        :class:`DirectRound` buffers: the fewest checks and calls a round can take.

        None sends the round to the general trusted path (:meth:`_trusted_scores`):
        round 1, four runs or more, float32 learners, features of another dtype or
        layout, a bad feature or an overflow (which the checked path names or handles).
        """
        x, plan = context.features, self._direct
        if (
            plan is None
            or type(x) is not np.ndarray
            or x.shape != plan.shape
            or x.dtype is not _FLOAT64
            or not x.flags.c_contiguous
            or context.n_items != plan.shape[0]
        ):
            plan = self._new_direct(context)
            if plan is None:
                return None
        if fused_scores(self._weights, x, _EMPTY["d"], plan.scores, plan.neg, plan.own) != -1:
            return None
        # x is an ndarray of the plan's shape here (it passed the checks, or the new plan's)
        self._cache = (context.t, plan.scores, plan.own, x)  # type: ignore[assignment]
        return plan

    def _new_direct(self, context: Context) -> DirectRound | None:
        """Direct-round buffers for this context's list, or None where the round is not direct."""
        x, weights = context.features, self._weights
        self._direct = None
        if (
            weights is None
            or self.n_runs >= _DIRECT_BELOW
            or self._dtype is not _FLOAT64
            or type(x) is not np.ndarray
            or x.dtype is not _FLOAT64
            or x.ndim != 2
            or not x.flags.c_contiguous
            or x.shape != (context.n_items, weights.shape[1])
        ):
            return None
        runs_by_items = (self.n_runs, x.shape[0])
        self._direct = DirectRound(
            x.shape,
            np.empty(runs_by_items),
            np.empty(runs_by_items),
            np.empty(runs_by_items, dtype=np.intp),
            np.empty(runs_by_items),
            np.empty(weights.shape),
            self._trusted_eta(),
            self._direct_estimator(x.shape[0]),
        )
        return self._direct

    def _direct_estimator(self, n_items: int) -> TrustedEstimator | None:
        """A compiled estimate of the step's direction for lists of ``n_items`` items, written
        into :attr:`DirectRound.direction`, for learners that have one (None here)."""
        return None

    def _direct_step(self, context: Context, plan: DirectRound, direction: FloatArray) -> None:
        """:meth:`_trusted_step` for a round :meth:`_direct_scores` scored into ``plan`` (the
        caller checks: ``self._cache`` is this round's, with ``plan.scores``); ``direction``
        (B, m) is float64 and C-contiguous."""
        x = self._cache[3]  # type: ignore[index]
        eta, adaptive, radius = plan.step
        weights, sumsq, average = self._weights, self._sumsq, self._average
        n_averaged = self._n_averaged + 1
        bad = checked_step(  # arguments spelled out: a tuple unpacked into the call costs more
            False,
            weights,
            direction,
            x,
            eta,
            adaptive,
            sumsq,
            radius,
            average,
            float(n_averaged),
            plan.sums,
            _FLOAT64_MAX,
        )
        if bad != -1:
            if bad == -3:  # the cheap bound did not clear it: the full check, then the step
                check_step(type(self).__name__, context.t, direction, x, sumsq, adaptive)
                n = float(n_averaged)
                bad = fused_step(
                    weights, direction, x, eta, adaptive, sumsq, radius, average, n, plan.sums
                )
            if bad >= 0:
                self._fail_not_finite(context, direction, radius)
        self._n_averaged = n_averaged
        self._cache = None

    def _round_scratch(self, m: int) -> tuple[FloatArray, FloatArray, Orders]:
        """New round buffers for lists of m items."""
        shape = (self.n_runs, m)
        buffers = (
            np.empty(shape, self._dtype),
            np.empty(shape, self._dtype),
            np.empty(shape, dtype=np.intp),
        )
        self._round_buffers = buffers
        return buffers

    def _trusted_scores(self, context: Context) -> tuple[FloatArray, NDArray[np.intp]]:
        """As :meth:`_scores`, into reused buffers, without the per-round shape checks.

        The returned arrays are overwritten by the next round's call.
        """
        x, weights = context.features, self._weights
        n_runs = self.n_runs
        if (
            weights is None
            or type(x) is not np.ndarray
            or x.dtype is not self._dtype  # the canonical dtype object, else the checked path
            or x.ndim != 2
            or x.shape != (context.n_items, weights.shape[1])
            or not x.flags.c_contiguous
            or _DIRECT_BELOW <= n_runs < RUNS_MINOR_FROM
            or (n_runs >= RUNS_MINOR_FROM and not weights.flags.f_contiguous)
        ):
            return self._scores(context)
        m = context.n_items
        buffers = self._round_buffers
        if buffers[0].shape[1] != m:
            buffers = self._round_scratch(m)
        scores, neg, own = buffers
        if n_runs < _DIRECT_BELOW:
            flat = fused_scores(weights, x, _EMPTY[self._dtype.char], scores, neg, own)
        else:
            neg = self._scores_scratch(m, x.shape[1])
            flat = scores_runs_minor(weights.T, x, self._scratch, scores, neg, own)
        if flat != -1:  # a bad feature or an overflow: the checked path names or handles it
            return self._scores(context)
        if not sorts_here(n_runs, m):
            own = self._sorted_own(neg)
        if scores.dtype != np.float64:  # the estimators work in float64 from the float32 scores
            scores = scores.astype(np.float64)
        self._cache = (context.t, scores, own, x)
        return scores, own

    def _sorted_own(self, neg: FloatArray) -> NDArray[np.intp]:
        """The stable ascending order of ``neg`` per row, as :meth:`_scores` sorts long lists."""
        own = np.argsort(neg, axis=-1).astype(np.intp, copy=False)
        stable_ties(neg, own)
        return own

    def _trusted_eta(self) -> tuple[float, bool, float]:
        """``(η or the adaptive scale U, adaptive, U)``, as ``update`` passes them to the step.

        For subclasses with ``eta`` (a number, ``"paper"`` or ``"adaptive"``), ``eta_``
        and ``radius``; worked out once, since none of them changes between rounds.
        """
        args: tuple[float, bool, float] | None = self.__dict__.get("_trusted_eta_args")
        if args is None:
            radius = float(self.radius)  # type: ignore[attr-defined]
            if self.eta == "adaptive":  # type: ignore[attr-defined]
                args = (radius if np.isfinite(radius) else 1.0, True, radius)
            else:
                args = (float(self.eta_), False, radius)  # type: ignore[attr-defined]
            self._trusted_eta_args = args
        return args

    def _trusted_step(
        self, context: Context, direction: FloatArray, eta: float, adaptive: bool, radius: float
    ) -> None:
        """As :meth:`_fused_step`, after :meth:`_trusted_scores` of the same round."""
        cache, weights, average = self._cache, self._weights, self._average
        n_runs = self.n_runs
        if (
            cache is None
            or cache[0] != context.t
            or weights is None
            or average is None
            or _DIRECT_BELOW <= n_runs < RUNS_MINOR_FROM
        ):
            self._fused_step(context, direction, eta, adaptive, radius)
            return
        x, dtype, buffer = cache[3], self._dtype, self._buffer
        if direction.dtype is not dtype or not direction.flags.c_contiguous:
            direction = np.ascontiguousarray(direction, dtype=dtype)
        n_averaged = float(self._n_averaged + 1)
        runs_minor = n_runs >= RUNS_MINOR_FROM
        w, avg = (weights.T, average.T) if runs_minor else (weights, average)
        if buffer.shape != w.shape:
            buffer = self._buffer = np.empty(w.shape, dtype)
        args = (w, direction, x, eta, adaptive, self._sumsq, radius, avg, n_averaged, buffer)
        bad = checked_step(runs_minor, *args, _DTYPE_MAX[dtype])
        if bad == -3:  # the cheap bound did not clear it: the full check, then the step
            check_step(type(self).__name__, context.t, direction, x, self._sumsq, adaptive)
            bad = (step_runs_minor if n_runs >= RUNS_MINOR_FROM else fused_step)(*args)
        if bad >= 0:
            self._fail_not_finite(context, direction, radius)
        self._n_averaged += 1
        self._cache = None
