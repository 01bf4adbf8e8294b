"""Online ListNet: projected online gradient descent on ListNet's cross-entropy, full feedback.

The full-information baseline of Chaudhuri & Tewari (2016) §6: after each round
the whole relevance vector is revealed and every run steps along the exact
gradient of the ListNet top-1 cross-entropy (Cao et al. 2007),

.. math::
    φ_{LN}(s, R) = −\\sum_i P_i(R) \\log P_i(s),\\qquad
    ∇_s φ_{LN} = P(s) − P(R),\\qquad P_j(v) = e^{v_j} / \\sum_l e^{v_l},

so ``W ← Π_U(W − η (P(S) − P(R)) X)`` for all runs at once (one compiled call).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np

from oltr.feedback import FeedbackRequirement, FullFeedback
from oltr.learners.linear_round import TrustedLinearRanker
from oltr.learners.rtopk import _literal, _require
from oltr.registry import register_learner
from oltr.surrogates import ListNet
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = ["OnlineListNet"]

_FLOAT64 = np.dtype(np.float64)


@register_learner("listnet")
class OnlineListNet(TrustedLinearRanker[FullFeedback]):
    """Online ListNet with full feedback: OGD on the cross-entropy of a linear scorer.

    Shows its own order (descending ``X w``, ties by lower index first; no
    exploration) and, seeing every grade, steps

    .. math:: w_{t+1} = Π_U\\big(w_t − η\\, X_t^⊤ (P(X_t w_t) − P(R_t))\\big),\\qquad w_1 = 0.

    Parameters
    ----------
    eta
        Step size: ``"adaptive"`` (default: AdaGrad-norm, η_t = U / √(Σ_{s≤t} ‖g_s‖²),
        the OGD bound's optimal η with the observed gradient norms, anytime;
        see :class:`~oltr.learners.rtopk.RTopKF`), ``"paper"`` (η = T^(−1/2), §6:
        OGD's rate, Zinkevich 2003; needs the horizon) or a number η > 0.
    radius
        U > 0, radius of the weight ball (``inf``: no projection); default 1, as
        for :class:`~oltr.learners.rtopk.RTopKF`.
    dtype
        ``"float64"`` (default) or ``"float32"``: the precision of the weights,
        features, scores and products (the estimator still runs in float64 on
        the float32 scores); see *float32* in the README for its accuracy.
    horizon
        T >= 1, filled in by the runner; needed when ``eta`` is left at its default.
    n_runs, rng
        See :class:`~oltr.learners.base.Learner` (the learner draws nothing).

    References
    ----------
    Chaudhuri & Tewari (2016), §4.1 "Listwise Method" (φ_LN and its gradient),
    §6 (online ListNet with η = T^(−1/2) as the full-feedback baseline);
    Cao et al. (2007); Zinkevich (2003).

    Examples
    --------
    >>> import numpy as np
    >>> from oltr.types import Context
    >>> from oltr.feedback import FullFeedback
    >>> lrn = OnlineListNet(eta=1.0, n_runs=1)
    >>> ctx = Context(t=1, n_items=2, features=np.eye(2))
    >>> orders = lrn.rank(ctx)
    >>> lrn.update(ctx, orders, FullFeedback(orders, np.array([[0, 1]])))
    >>> bool(lrn.weights_[0, 1] > lrn.weights_[0, 0])  # moved towards the relevant item
    True
    """

    requires = FeedbackRequirement("full")
    scratch_fields = (*TrustedLinearRanker.scratch_fields, "_grad_buffers")
    #: The trusted round's softmax scratch (2, B, m) and gradient (B, m), reused while m stays.
    _grad_buffers: tuple[FloatArray, FloatArray] = (np.empty((2, 0, 0)), np.empty((0, 0)))

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        eta: float | str = "adaptive",
        radius: float = 1.0,
        dtype: str = "float64",
        horizon: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(radius=radius, dtype=dtype, n_runs=n_runs, rng=rng)
        self.dtype = dtype
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        if isinstance(eta, str):
            check_choice(eta, "eta", ("adaptive", "paper"))
        else:
            check_scalar(eta, "eta", low=0, include_low=False)
        self.eta = eta
        self.radius = radius
        self.horizon = horizon
        self._eta_value = _literal(eta, "paper", horizon, -0.5)  # open until the runner gives T
        self._surrogate = ListNet()

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"horizon": 100}
        yield {"eta": 0.5, "radius": float("inf")}

    @property
    def eta_(self) -> float:
        """The fixed step size in use (η, or T^(−1/2)); NaN for ``eta="adaptive"``."""
        if self.eta == "adaptive":
            return float("nan")
        return _require(self._eta_value, "eta", "-1/2")

    def rank(self, context: Context) -> Orders:
        """Each run's own order: descending score."""
        _ = self.eta_  # without T and a default step, fail before round 1
        return self._scores(context)[1]

    def update(self, context: Context, orders: Orders, feedback: FullFeedback) -> None:
        """Step along the exact ListNet gradient ``(P(S) − P(R)) X``."""
        scores, _ = self._cached_scores(context)
        grad = self._surrogate.trusted_descent_grad(scores, feedback.relevance)
        if self.eta == "adaptive":
            self._adaptive_step(context, grad, self.radius)
        else:
            self._step(context, grad, self.eta_, self.radius)

    def trusted_rank(self, context: Context) -> Orders:
        """:meth:`rank` under the runner's guarantees (:mod:`oltr.learners.linear_round`)."""
        if self._weights is None:
            return self.rank(context)  # round 1 sizes the weights and checks the step size
        plan = self._direct_scores(context)
        return self._trusted_scores(context)[1] if plan is None else plan.own

    def trusted_update(self, context: Context, orders: Orders, feedback: FullFeedback) -> None:
        """:meth:`update` under the runner's guarantees: the same gradient and step."""
        cache = self._cache
        if cache is None or cache[0] != context.t:
            self.update(context, orders, feedback)
            return
        scores, grades = cache[1], feedback.relevance
        if grades.dtype is not _FLOAT64 and grades.dtype.kind in "iu":
            grades = grades.astype(np.float64)  # integer grades (LETOR's): the same float64 values
        both, grad = self._grad_buffers
        if grad.shape != scores.shape:
            both, grad = self._grad_buffers = (np.empty((2, *scores.shape)), np.empty(scores.shape))
        if (
            grades.shape != scores.shape
            or grades.dtype is not _FLOAT64
            or not grades.flags.c_contiguous
            or not self._surrogate.trusted_grad_into(scores, grades, both, grad)
        ):  # the checked gradient: it broadcasts, converts, or says what is wrong
            grad = self._surrogate.trusted_descent_grad(scores, grades)
            self._trusted_step(context, grad, *self._trusted_eta())
            return
        plan = self._direct
        if plan is not None and scores is plan.scores:  # scored by _direct_scores
            self._direct_step(context, plan, grad)
        else:
            self._trusted_step(context, grad, *self._trusted_eta())
