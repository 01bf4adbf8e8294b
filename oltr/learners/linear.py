"""Linear scorers ``s = X w`` batched over runs: the base of RTop-kF and online ListNet.

:class:`LinearRanker` holds what every contextual learner with a linear scorer
shares: lazily sized weights ``W`` of shape (B, d), batched scores, the
projected step ``W ← Π_U(W − η D X)`` (CT16 Algorithm 1 steps 10–11) and the
read-only ``weights_`` that a held-out evaluation reads.

Why the two products are compiled loops and not BLAS calls: a run's trace must
not depend on the runs it is batched with. BLAS picks its kernel by the shape
of the whole product (a (1, d) product goes to gemv, a (5, d) one to gemm, a
small one to a "small matrix" kernel), and each kernel sums in its own order,
so one run's scores differed in the last bits between ``B = 1`` and ``B = 5``.
A chaotic learner (SmoothDCG's 1/ε) turns those bits into different rankings
within a few hundred rounds. The loops compute run ``b``'s row with the same
roundings in the same order whatever ``B`` is: every sum runs in index order
from 0.0. Below :data:`RUNS_MINOR_FROM` runs the weights are rows (B, d) and
the sums are vectorised across items (scores) or features (the step)
(:mod:`oltr.learners._linear_kernels`); from there on they are stored
runs-minor, ``Wᵀ`` (d, B) in memory (``weights_`` is its (B, d) view), and the
sums of short lists are vectorised across runs, one lane per run
(:mod:`oltr.learners._runs_minor_kernels`). Either way each lane or row adds
the same terms in the same order, so both layouts give the same bits.

A round is two compiled calls: one computes the scores (checking the features
through them: a non-finite feature makes its score non-finite) and, for a few
runs, sorts them; the other takes the step, projects, checks that the weights
stay finite and updates their running average. The projection's sum of
squares runs in index order; before, numpy's einsum summed in its own order,
so projected weights moved in the last bits, within the bound that
``tests/learners/test_linear_kernels.py`` derives and checks.

``dtype="float32"`` keeps weights, features, scores and the products' sums in
float32 (the arithmetic of every path is the same per run, so float32 traces
do not depend on the batch either); the estimators run in float64 on the
float32 scores, and sums of squares accumulate in float64.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.errors import InputError, NumericalError
from oltr.learners._linear_kernels import (
    first_bad_feature,
    fused_scores,
    fused_step,
    project_each,
    sorts_here,
    stable_ties,
)
from oltr.learners._runs_minor_kernels import (
    scores_runs_minor,
    scratch_shape,
    step_runs_minor,
)
from oltr.learners._step_bound import check_step
from oltr.learners.base import FeedbackT, Learner
from oltr.learners.warm import start_weights
from oltr.types import Context, FloatArray, RunRNGLike
from oltr.validation import (
    check_choice,
    check_feature_columns,
    check_scalar,
    non_finite_features,
    require_features,
)

#: An order with no rows: the scores kernels leave the sorting to the caller.
_NO_ORDER = np.empty((0, 0), dtype=np.intp)
#: Fewer than four runs score from X itself (no transposed copy).
_EMPTY_2D = {t.char: np.empty((0, 0), t) for t in (np.dtype("d"), np.dtype("f"))}

#: Batches of at least this many runs store their weights runs-minor, as Wᵀ (d, B):
#: one vector of lanes per feature, so the sums run across runs (see
#: :mod:`oltr.learners._runs_minor_kernels`). Smaller batches keep W (B, d) rows.
RUNS_MINOR_FROM = 8

#: The precisions a linear learner computes in.
LINEAR_DTYPES: tuple[str, ...] = ("float64", "float32")

__all__ = ["LinearRanker", "batch_scores", "batch_step", "own_order", "project_rows"]


def batch_scores(weights: FloatArray, features: FloatArray) -> FloatArray:
    """``S = W Xᵀ`` of shape (B, m), each row computed independently of the others.

    Row ``b`` is bit for bit the same for any number of rows ``B`` (see the
    module docstring); it equals ``weights @ features.T`` up to rounding.

    >>> batch_scores(np.array([[1.0, 2.0], [0.0, -1.0]]), np.array([[1.0, 1.0], [3.0, 0.0]]))
    array([[ 3.,  3.],
           [-1.,  0.]])
    """
    scores, _ = _scores_pair(np.ascontiguousarray(weights, dtype=np.float64), features)
    return scores


def _scores_pair(weights: FloatArray, features: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(S, −S)``, shape (B, m) each; non-finite features give non-finite scores, unchecked."""
    x = np.ascontiguousarray(features, dtype=np.float64)
    n_runs, (m, d) = weights.shape[0], x.shape
    scores, neg = np.empty((n_runs, m)), np.empty((n_runs, m))
    xt = np.empty((d, m)) if n_runs >= 4 else _EMPTY_2D["d"]
    fused_scores(weights, x, xt, scores, neg, _NO_ORDER)
    return scores, neg


def batch_step(
    weights: FloatArray, direction: FloatArray, eta: float, features: FloatArray
) -> None:
    """``W ← W − (η D) X`` in place, with ``direction`` D of shape (B, m), row by row.

    Each run's step ``η d_b X`` is summed over items in index order into a
    buffer and then subtracted, the same arithmetic for any ``B``.

    >>> w = np.zeros((1, 2))
    >>> batch_step(w, np.array([[1.0, -1.0]]), 0.5, np.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> w
    array([[1., 1.]])
    """
    _plain_step(weights, direction, float(eta), False, np.zeros(weights.shape[0]), features)


def batch_adaptive_step(
    weights: FloatArray,
    direction: FloatArray,
    features: FloatArray,
    scale: float,
    sumsq: FloatArray,
) -> None:
    """AdaGrad-norm step in place: ``G_b += ‖g_b‖²``, ``w_b ← w_b − (U/√G_b) g_b``, ``g_b = d_b X``.

    ``sumsq`` (shape (B,)) carries each run's running sum ``G_b`` of squared
    gradient norms and is updated in place; a run whose ``G_b`` is still 0 does
    not move. Row by row, as :func:`batch_step`.

    >>> w, g = np.zeros((1, 2)), np.zeros(1)
    >>> batch_adaptive_step(w, np.array([[1.0, 0.0]]), np.array([[3.0, 4.0], [1.0, 1.0]]), 1.0, g)
    >>> w, g
    (array([[-0.6, -0.8]]), array([25.]))
    """
    _plain_step(weights, direction, float(scale), True, sumsq, features)


def _plain_step(
    weights: FloatArray,
    direction: FloatArray,
    eta: float,
    adaptive: bool,
    sumsq: FloatArray,
    features: FloatArray,
) -> None:
    fused_step(
        weights,
        np.ascontiguousarray(direction, dtype=np.float64),
        np.ascontiguousarray(features, dtype=np.float64),
        eta,
        adaptive,
        sumsq,
        np.inf,
        np.empty((0, weights.shape[1])),
        1.0,
        np.empty(weights.shape),
    )


def project_rows(weights: FloatArray, radius: float) -> FloatArray:
    """Project every row of ``weights`` onto the ℓ2 ball of radius ``radius``, in place.

    .. math:: w ← \\min\\{1, U / ‖w‖_2\\}\\, w   (CT16 Algorithm 1 step 11)

    Parameters
    ----------
    weights
        Array of shape (B, d), modified in place and returned.
    radius
        U > 0; ``inf`` leaves the rows unchanged.

    Examples
    --------
    >>> project_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    if np.isfinite(radius):
        # Each row's sum of squares in index order (rescaled by its largest entry if it
        # overflows), as the learners' fused step projects.
        project_each(weights, float(radius))
    return weights


def own_order(scores: FloatArray) -> NDArray[np.intp]:
    """Descending score, ties by lower index first, along the last axis (stable)."""
    return np.argsort(-scores, axis=-1, kind="stable").astype(np.intp, copy=False)


class LinearRanker(Learner[FeedbackT]):
    """Base of linear scorers ``s = X w`` batched over runs (weights (B, d), w₁ = 0).

    The feature dimension ``d`` is read from the first context; every later
    context must have the same ``d``. Subclasses call :meth:`_scores` in
    ``rank`` and :meth:`_step` in ``update``.

    Parameters
    ----------
    radius
        U: the weights stay in the ℓ2 ball of radius U (``inf``: unconstrained).
    dtype
        ``"float64"`` (default) or ``"float32"``: the precision of the weights,
        the features as the learner reads them, the scores and the products'
        sums (see *float32* in the README for the accuracy this costs).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.
    """

    context_kind: ClassVar[str] = "features"
    scratch_fields: ClassVar[tuple[str, ...]] = ("_buffer", "_scratch", "_neg")

    def __init__(
        self,
        *,
        radius: float,
        dtype: str = "float64",
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        check_choice(dtype, "dtype", LINEAR_DTYPES)
        self._dtype = np.dtype(dtype)
        if not (isinstance(radius, float) and radius == float("inf")):
            check_scalar(radius, "radius", low=0, include_low=False)
        self._weights: FloatArray | None = None
        self._cache: tuple[int, FloatArray, NDArray[np.intp], FloatArray] | None = None
        self._sumsq = np.zeros(self.n_runs)  # AdaGrad-norm's running Σ‖g‖² per run
        self._average: FloatArray | None = None  # uniform average of the iterates w_1..w_t
        self._n_averaged = 0
        self._buffer = np.empty((0, 0))  # the step's sums, (B, d) or runs-minor (d, B)
        self._scratch = np.empty((0, 0))  # runs-minor products: X Wᵀ (m, B) or Xᵀ (d, m)
        self._neg = np.empty((0, 0))  # runs-minor −S (B, m), the sort's keys

    @property
    def weights_(self) -> FloatArray:
        """Read-only view of the current weights, shape (B, d) (zeros before any round)."""
        if self._weights is None:
            raise AttributeError(
                "weights_ is set at the first rank() call (d comes from the first context)"
            )
        view = self._weights.view()
        view.flags.writeable = False
        return view

    def warm_start(self, weights: ArrayLike) -> None:
        """Start every run from ``weights`` (d,), not w₁ = 0: see :func:`.warm.start_weights`."""
        if self._weights is not None:
            raise RuntimeError(f"{type(self).__name__}: warm_start comes before the first round")
        radius = float(getattr(self, "radius", np.inf))  # U of the subclasses with a ball
        self._weights = start_weights(weights, self.n_runs, radius, self._dtype, self._order())
        self._average = self._weights.copy(order="K")
        self._n_averaged = 1

    @property
    def averaged_weights_(self) -> FloatArray:
        """Read-only uniform average of the weights played so far, shape (B, d).

        Online-to-batch conversion: for a convex loss the averaged iterate has
        expected excess risk at most regret / T, and with 1/p-weighted
        exploration gradients it is far less noisy than the last iterate.
        """
        if self._average is None:
            return self.weights_
        view = self._average.view()
        view.flags.writeable = False
        return view

    @property
    def reported_weights_(self) -> FloatArray:
        """The weights a held-out evaluation (or a served ranker) uses: the current ones here."""
        return self.weights_

    def _prepared(self, context: Context) -> FloatArray:
        """The context's features (m, d) in the learner's dtype, sizing the weights at round 1.

        Shapes only: the finiteness of the features is checked by the caller
        (:meth:`_features` with numpy, :meth:`_scores` inside the scores kernel).
        """
        x = require_features(context.features, type(self).__name__, context.t, context.n_items)
        if self._weights is None:
            self._weights = np.zeros((self.n_runs, x.shape[1]), self._dtype, order=self._order())
            self._average = self._weights.copy(order="K")
            self._n_averaged = 1
        else:
            check_feature_columns(x, self._weights.shape[1], context.t)
        if x.dtype == self._dtype:
            return np.ascontiguousarray(x)
        with np.errstate(over="ignore"):  # beyond float32: inf, named by the scores' check
            return np.ascontiguousarray(x, dtype=self._dtype)

    def _order(self) -> Literal["C", "F"]:
        """Memory order of the (B, d) weights: "F" (runs-minor) for large batches."""
        return "F" if self.n_runs >= RUNS_MINOR_FROM else "C"

    def _runs_minor(self) -> bool:
        """Whether this batch uses the runs-minor kernels (restoring their layout if lost).

        A restored snapshot or an assigned array may hold C-ordered weights;
        copying them to Fortran order once changes no value.
        """
        if self.n_runs < RUNS_MINOR_FROM:
            return False
        if self._weights is not None and not self._weights.flags.f_contiguous:
            self._weights = np.asfortranarray(self._weights)
        if self._average is not None and not self._average.flags.f_contiguous:
            self._average = np.asfortranarray(self._average)
        return True

    def _not_finite(self, context: Context, x: FloatArray, flat: int) -> InputError:
        row, col = divmod(flat, x.shape[1])
        given = np.asarray(context.features)  # the value as given, not as cast
        cast_away = not np.isfinite(x[row, col]) and np.isfinite(given[row, col])
        note = f" (beyond {x.dtype})" if cast_away else ""
        return non_finite_features(type(self).__name__, context.t, given, row, col, note)

    def _features(self, context: Context) -> FloatArray:
        """The checked features of this round (non-finite ones raise InputError)."""
        x = self._prepared(context)
        flat = first_bad_feature(x)
        if flat >= 0:
            raise self._not_finite(context, x, flat)
        return x

    def _scores(self, context: Context) -> tuple[FloatArray, NDArray[np.intp]]:
        """``S = W Xᵀ`` (B, m) and each run's own order, kept until this round's step.

        One compiled call computes the scores and their negation, checks the
        features and, for lists it can order (:func:`sorts_here`), sorts; the own
        order is the stable ascending order of ``−S``.
        """
        x = self._prepared(context)
        runs_minor = self._runs_minor()
        weights = self._weights
        assert weights is not None
        n_runs, (m, d) = weights.shape[0], x.shape
        scores = np.empty((n_runs, m), self._dtype)
        own = np.empty((n_runs, m), dtype=np.intp)
        if runs_minor:
            neg = self._scores_scratch(m, d)
            flat = scores_runs_minor(weights.T, x, self._scratch, scores, neg, own)
        else:
            neg = np.empty((n_runs, m), self._dtype)
            flat = fused_scores(
                weights,
                x,
                np.empty((d, m), self._dtype) if n_runs >= 4 else _EMPTY_2D[self._dtype.char],
                scores,
                neg,
                own,
            )
        if flat >= 0:
            raise self._not_finite(context, x, flat)
        if flat == -2:  # scores overflowed: numpy's stable sort puts NaN last
            own = own_order(scores)
        elif not sorts_here(n_runs, m):
            # numpy's vectorised sort (not stable), then equal keys in index order:
            # exactly the stable order, several times faster for long lists.
            own = np.argsort(neg, axis=-1).astype(np.intp, copy=False)
            stable_ties(neg, own)
        own.flags.writeable = False  # returned by rank() and reused by update()
        if scores.dtype != np.float64:  # the estimators work in float64 from the float32 scores
            scores = scores.astype(np.float64)
        self._cache = (context.t, scores, own, x)
        return scores, own

    def _scores_scratch(self, m: int, d: int) -> FloatArray:
        """Runs-minor scratch arrays for a list of m items, reused while m stays the same.

        ``self._scratch`` (the kernel's products), and returned: −S (B, m), the
        sort's keys. Every entry the kernel reads it first writes, so the buffers
        carry nothing from one round to the next.
        """
        n_runs = self.n_runs
        if self._scratch.shape != scratch_shape(m, d, n_runs):
            self._scratch = np.empty(scratch_shape(m, d, n_runs), self._dtype)
        if self._neg.shape != (n_runs, m):
            self._neg = np.empty((n_runs, m), self._dtype)
        return self._neg

    def _current_scores(self, x: FloatArray) -> FloatArray:
        """``S = W Xᵀ`` (B, m) of checked features ``x`` (from :meth:`_features`), unsorted.

        As :func:`batch_scores`, with the kernel of this batch's weight layout
        (no copy of runs-minor weights).
        """
        runs_minor = self._runs_minor()
        weights = self._weights
        assert weights is not None
        if not runs_minor:
            return batch_scores(weights, x)
        (m, d), n_runs = x.shape, weights.shape[0]
        scores = np.empty((n_runs, m), self._dtype)
        neg = self._scores_scratch(m, d)
        scores_runs_minor(weights.T, x, self._scratch, scores, neg, _NO_ORDER)
        return scores

    def _cached_scores(self, context: Context) -> tuple[FloatArray, NDArray[np.intp]]:
        """The scores and own orders :meth:`_scores` made for this round (recomputed if not)."""
        if self._cache is None or self._cache[0] != context.t:
            return self._scores(context)
        return self._cache[1], self._cache[2]

    def _step(self, context: Context, direction: FloatArray, eta: float, radius: float) -> None:
        """``W ← Π_U(W − η · direction · X)`` with ``direction`` of shape (B, m)."""
        self._fused_step(context, direction, float(eta), False, radius)

    def _adaptive_step(self, context: Context, direction: FloatArray, radius: float) -> None:
        """AdaGrad-norm ``W ← Π_U(W − (U/√G) · direction · X)``, per run."""
        scale = radius if np.isfinite(radius) else 1.0
        self._fused_step(context, direction, float(scale), True, radius)

    def _fused_step(
        self, context: Context, direction: FloatArray, eta: float, adaptive: bool, radius: float
    ) -> None:
        """Step, project, check and average every run in one compiled call."""
        runs_minor = self._runs_minor()
        weights, average = self._weights, self._average
        assert weights is not None and average is not None and context.features is not None
        cache = self._cache
        x = cache[3] if cache is not None and cache[0] == context.t else context.features
        x = np.ascontiguousarray(x, dtype=self._dtype)
        direction = np.ascontiguousarray(direction, dtype=self._dtype)
        check_step(type(self).__name__, context.t, direction, x, self._sumsq, adaptive)
        n_averaged = float(self._n_averaged + 1)
        if runs_minor:
            if self._buffer.shape != weights.T.shape:
                self._buffer = np.empty(weights.T.shape, self._dtype)
            bad = step_runs_minor(
                weights.T,
                direction,
                x,
                eta,
                adaptive,
                self._sumsq,
                float(radius),
                average.T,
                n_averaged,
                self._buffer,
            )
        else:
            if self._buffer.shape != weights.shape:
                self._buffer = np.empty(weights.shape, self._dtype)
            bad = fused_step(
                weights,
                direction,
                x,
                eta,
                adaptive,
                self._sumsq,
                float(radius),
                average,
                n_averaged,
                self._buffer,
            )
        if bad >= 0:
            self._fail_not_finite(context, direction, radius)
        self._n_averaged += 1
        self._cache = None  # the round is over: keep nothing of its context

    def _fail_not_finite(self, context: Context, direction: FloatArray, radius: float) -> None:
        """Stop with the learner, the round and the likely cause, instead of ranking with NaN."""
        assert self._weights is not None and context.features is not None
        run = int(np.argwhere(~np.isfinite(self._weights).all(axis=1))[0][0])
        if not np.isfinite(direction[run]).all():
            cause = "the step direction itself was not finite"
        elif radius == np.inf:
            cause = "the weights overflowed (radius=inf leaves them unbounded; set a finite radius)"
        else:
            cause = "the weights overflowed"
        largest = float(np.abs(context.features).max())
        raise NumericalError(
            f"{type(self).__name__}: the weights of run {run} stopped being finite in round "
            f"{context.t}: {cause}; largest |feature| this round {largest:.3g} "
            "(normalise the features, or lower eta)"
        )
