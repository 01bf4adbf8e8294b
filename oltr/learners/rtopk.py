"""RTop-kF: online gradient descent with exploration from top-k feedback (CT16 Algorithm 1).

Chaudhuri & Tewari (2016) learn a linear scorer ``s = X w`` on query streams
while only the relevances of the top ``k`` shown documents are revealed. Each
round, for every run ``b`` of the batch (weights ``W`` of shape (B, d)):

1. scores ``S = W Xᵀ`` (one compiled call for all runs, shape (B, m)) and the
   learner's own order σ_t = argsort(−s) (ties: lower index first);
2. with probability 1 − γ show σ_t, with probability γ a uniformly random
   order (Algorithm 1 steps 5–6);
3. receive the grades of the top ``k`` shown documents (k = the surrogate's
   ``min_k``: 1 for squared, KL and SmoothDCG, 2 for RankSVM);
4. build the unbiased estimate ẑ of the surrogate's descent direction in score
   space (:meth:`oltr.surrogates.Surrogate.estimate_descent_grad`, §4) and step
   ``W ← Π_U(W − η ẑ X)``, where Π_U projects every row onto the
   ℓ2 ball of radius U (steps 10–11).

`LinearRanker` holds what RTop-kF and the full-feedback online ListNet
(:mod:`oltr.learners.listnet`) share: lazily sized weights, batched scores,
the projection and the read-only ``weights_`` that a held-out evaluation reads
(:func:`oltr.experiments.heldout.heldout_ndcg`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from oltr.feedback import FeedbackRequirement, TopKFeedback
from oltr.learners.linear_round import TrustedLinearRanker
from oltr.permutations import permutation_rows
from oltr.registry import register_learner
from oltr.surrogates import Surrogate, TrustedEstimator, make_surrogate, score_scale_eps
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = [
    "RTOPK_SURROGATES",
    "RTopKF",
    "trusted_estimate",
]

#: The surrogates RTop-kF can learn from top-k feedback (CT16 §4.1; ListNet needs the full list).
RTOPK_SURROGATES: tuple[str, ...] = ("squared", "ranksvm", "kl", "smoothdcg")

#: Exploration coins drawn per run and refill (one generator call per run per block).
_COIN_BLOCK = 1024
_RUN_0, _NO_RUNS = np.zeros(1, dtype=np.intp), np.zeros(0, dtype=np.intp)
_FLOAT64 = np.dtype(np.float64)


def _schedule(value: float | None, horizon: int | None, power: float) -> float | None:
    """``value`` if given, else ``horizon ** power`` (the paper's schedule), else None."""
    if value is not None:
        return float(value)
    return None if horizon is None else float(horizon) ** power


def _literal(value: float | str, paper: str, horizon: int | None, power: float) -> float | None:
    """A number as given, ``horizon ** power`` for the paper's name, None otherwise."""
    if isinstance(value, str):
        return _schedule(None, horizon, power) if value == paper else None
    return float(value)


def _require(value: float | None, name: str, power: str) -> float:
    """A schedule value, or the error that says the horizon is missing (before round 1)."""
    if value is None:
        raise ValueError(
            f"{name} defaults to T^({power}) and needs the horizon T: pass "
            f"horizon=T (the runner does) or {name} explicitly"
        )
    return value


def trusted_estimate(
    surrogate: Surrogate,
    scores: FloatArray,
    orders: Orders,
    labels: NDArray[Any],
    gamma: float,
    own: NDArray[np.intp],
) -> FloatArray:
    """``surrogate.estimate_descent_grad`` on inputs the learner made itself, unvalidated.

    Delegates to :meth:`oltr.surrogates.Surrogate.trusted_descent_estimate`.
    """
    observed = np.asarray(labels, dtype=np.float64)
    return surrogate.trusted_descent_estimate(scores, orders, observed, gamma, own)


@register_learner("rtopk")
class RTopKF(TrustedLinearRanker[TopKFeedback]):
    """Ranking with Top-k Feedback (RTop-kF), batched over runs (CT16 Algorithm 1).

    Each round shows the learner's own order (descending ``X w``) with
    probability 1 − γ and a uniformly random order with probability γ, reads the
    grades of the top ``k`` shown documents, and takes a projected stochastic
    gradient step on the chosen surrogate φ:

    .. math::
        w_{t+1} = Π_U\\big(w_t − η\\, X_t^⊤ \\tilde z_t\\big),\\qquad
        E_t[\\tilde z_t] = \\text{sign}·∇_s φ(X_t w_t, R_t),

    where ẑ is the surrogate's unbiased top-k estimate (§4.1) and sign = −1 for
    the SmoothDCG *gain* (so the step ascends it).

    Parameters
    ----------
    surrogate
        ``"squared"`` (top-1), ``"ranksvm"`` (top-2), ``"kl"`` (top-1) or
        ``"smoothdcg"`` (top-1): the feedback depth is the surrogate's ``min_k``.
    eta
        Step size: ``"adaptive"`` (default), ``"paper"`` (η = T^(−2/3), §6, needs
        the horizon) or a number η > 0. See *Defaults* below.
    gamma
        Exploration rate: ``"anytime"`` (default, γ_t = min(1/2, t^(−1/3))),
        ``"paper"`` (γ = T^(−1/3), §6, needs the horizon) or a number in (0, 1].
        Algorithm 1 asks for γ < 1/2; larger values are allowed for experiments.
    report
        The weights a held-out evaluation reads (``reported_weights_``):
        ``"average"`` (default, the uniform average of the iterates) or ``"last"``.
    radius
        U > 0, the radius of the weight ball (``inf``: no projection); default 1.
        §6 does not state U (see the README's note on this choice).
    eps
        SmoothDCG's smoothing (used by ``surrogate="smoothdcg"`` only): ``"auto"``
        (default, each list's ε in units of its score scale,
        :func:`oltr.surrogates.score_scale_eps`) or a number ε > 0 (§6 fixes
        ε = 0.01). See *Defaults* below.
    dtype
        ``"float64"`` (default) or ``"float32"``: the precision of the weights,
        features, scores and products (the estimator still runs in float64 on
        the float32 scores); see *float32* in the README for its accuracy.
    horizon
        T >= 1, filled in by the runner; needed when ``eta`` or ``gamma`` is left
        at its default.
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    Defaults
    --------
    §6 sets the constants of η = c T^(−2/3) to 1, which suits its data's feature
    scale but not others: the bound behind Theorem 4.1 (CT16 eq. 4, online
    gradient descent) is ``U²/(2η) + (η/2) Σ_t E‖z̃_t X_t‖²``, minimised by
    ``η* = U / √(Σ_t E‖z̃_t X_t‖²)``, and E‖z̃ X‖² grows with m/γ (the 1/p weight of
    an exploration round) and with the feature norm R_D². With η = T^(−2/3) on
    MQ2008 (m ≈ 20–100, 46 features) one exploration step moves w across the whole
    ball. The default ``"adaptive"`` takes η* with the observed gradients in place
    of their expectations, per run (AdaGrad-norm: ``η_t = U / √(Σ_{s≤t} ‖z̃_s X_s‖²)``,
    Streeter & McMahan 2010; Orabona 2019 §4.2), whose regret is within √2 of the
    bound at η* for any scale of the data, needs no horizon, and keeps the T^(2/3)
    rate of Theorem 4.1 with γ_t ∝ t^(−1/3). The default ``"anytime"`` exploration
    γ_t = min(1/2, t^(−1/3)) is §6's T^(−1/3) with t in place of T. The estimator is
    unbiased for each round's γ_t, so changing the schedules changes nothing that is
    estimated. What is *reported* is the averaged iterate (online-to-batch
    conversion: its expected excess loss is at most regret / T), far less noisy than
    the last iterate after a 1/p-weighted step; ``report="last"`` reads the played
    weights. The paper's literal setting stays available as ``eta="paper",
    gamma="paper", report="last"`` and is what the CT16 Fig. 1 reproductions use.

    SmoothDCG's §6 smoothing ε = 0.01 is, like η = T^(−2/3), a constant for one
    feature scale: with features in [0, 1] and U = 1 the scores of a list span
    about one unit, softmax(s/ε) is all but one-hot, and both the estimate's weight
    q_σ(1) and its direction e_σ(1) − q vanish, so the weights stop where the first
    steps left them (held-out NDCG@10 at the random ranker's on the MSLR sample).
    The default ``eps="auto"`` sets each round's ε from that list's features,
    ``10 U σ_X`` (:func:`oltr.surrogates.score_scale_eps`), before its grades are
    seen, so the estimate is unbiased for that round's φ_ε and the sharpness of the
    softmax no longer depends on the units of the features. §6's ε stays
    available as ``eps=0.01``, which the reproductions pass.

    Notes
    -----
    Algorithm 1 steps 5–6 draw s̃ ~ (1 − γ)δ(s − X w) + γ Uniform([0, 1]^m) and show
    argsort(s̃); the argsort of i.i.d. uniforms is a uniform permutation, so each run
    flips its coin and, when it explores, draws a uniform permutation from its own
    generator (the same distribution as
    :func:`oltr.surrogates.sample_exploration_order`, without drawing a permutation
    for the runs that do not explore). Coins are drawn in blocks of 1024 per run.

    References
    ----------
    Chaudhuri & Tewari (2016), Algorithm 1; §4.1 (estimators); §4.3 (η = O(T^(−2/3)),
    γ = O(T^(−1/3)), Theorem 4.1); §6 (η = T^(−2/3), γ = T^(−1/3), ε = 0.01).

    Examples
    --------
    >>> from oltr.types import Context
    >>> from oltr.feedback import TopKFeedback
    >>> lrn = RTopKF(surrogate="squared", eta=0.5, gamma=0.5, n_runs=2, rng=0)
    >>> ctx = Context(t=1, n_items=3, features=np.eye(3))
    >>> orders = lrn.rank(ctx)
    >>> labels = np.array([[2.0], [2.0]])  # the grade of each run's top document
    >>> lrn.update(ctx, orders, TopKFeedback(orders, labels))
    >>> lrn.weights_.shape
    (2, 3)
    """

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True
    scratch_fields: ClassVar[tuple[str, ...]] = (*TrustedLinearRanker.scratch_fields, "_explored")

    def __init__(
        self,
        *,
        surrogate: str = "squared",
        eta: float | str = "adaptive",
        gamma: float | str = "anytime",
        report: str = "average",
        radius: float = 1.0,
        dtype: str = "float64",
        eps: float | str = "auto",
        horizon: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(radius=radius, dtype=dtype, n_runs=n_runs, rng=rng)
        self.dtype = dtype
        check_choice(surrogate, "surrogate", RTOPK_SURROGATES)
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        if isinstance(eta, str):
            check_choice(eta, "eta", ("adaptive", "paper"))
        else:
            check_scalar(eta, "eta", low=0, include_low=False)
        if isinstance(gamma, str):
            check_choice(gamma, "gamma", ("anytime", "paper"))
        else:
            check_scalar(gamma, "gamma", low=0, high=1, include_low=False)
        check_choice(report, "report", ("average", "last"))
        if isinstance(eps, str):
            check_choice(eps, "eps", ("auto",))
        else:
            check_scalar(eps, "eps", low=0, include_low=False)
        self.surrogate = surrogate
        self.eta = eta
        self.gamma = gamma
        self.report = report
        self.radius = radius
        self.eps = eps
        self.horizon = horizon
        # The paper's schedules stay open until the runner supplies T; the first
        # rank() refuses to start without it.
        self._eta_value = _literal(eta, "paper", horizon, -2.0 / 3.0)
        self._gamma_value = _literal(gamma, "paper", horizon, -1.0 / 3.0)
        self._round_gamma = (0, 0.0)
        # eps="auto" builds each round's SmoothDCG (round_surrogate); this one has ε = 1.
        params = {"eps": 1.0 if eps == "auto" else eps} if surrogate == "smoothdcg" else {}
        self._surrogate: Surrogate = make_surrogate(surrogate, **params)
        self._requires = FeedbackRequirement("topk", k=int(self._surrogate.min_k or 1))
        self._coins = np.empty((self.n_runs, 0))
        self._coin_pos = 0
        self._explored = np.empty((self.n_runs, 0), dtype=np.intp)  # the trusted round's orders

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        for name in RTOPK_SURROGATES:
            yield {"surrogate": name, "horizon": 100, "gamma": 0.5}
        yield {"surrogate": "squared", "eta": 0.1, "gamma": 1.0, "radius": float("inf")}
        yield {"surrogate": "ranksvm", "eta": "paper", "gamma": "paper", "horizon": 50}

    @property
    def requires(self) -> FeedbackRequirement:  # type: ignore[override]
        """Top-k feedback with k = the surrogate's ``min_k`` (checked every round: built once)."""
        return self._requires

    @property
    def eta_(self) -> float:
        """The fixed step size in use (η, or T^(−2/3)); NaN for ``eta="adaptive"``."""
        if self.eta == "adaptive":
            return float("nan")
        return _require(self._eta_value, "eta", "-2/3")

    def gamma_at(self, t: int) -> float:
        """The exploration rate of round ``t``: γ, T^(−1/3), or min(1/2, t^(−1/3))."""
        if self.gamma == "anytime":
            return min(0.5, math.pow(t, -1.0 / 3.0))
        return _require(self._gamma_value, "gamma", "-1/3")

    @property
    def reported_weights_(self) -> FloatArray:
        """The averaged iterate (``report="average"``) or the played weights (``"last"``)."""
        return self.averaged_weights_ if self.report == "average" else self.weights_

    def round_surrogate(self, context: Context) -> Surrogate:
        """The surrogate of round ``context``: SmoothDCG at this list's ε for ``eps="auto"``."""
        if self.eps != "auto" or self.surrogate != "smoothdcg":
            return self._surrogate
        if context.features is None:
            raise ValueError("RTop-kF ranks lists with features: the context has none")
        eps = score_scale_eps(context.features, float(self.radius))
        return make_surrogate("smoothdcg", eps=eps)

    def own_orders_played(self, t: int) -> NDArray[np.intp] | None:
        """Each run's own order (descending ``X w``, ties by lower index) that :meth:`rank`
        computed for round ``t``, until that round's update; None otherwise.

        What the exploration propensities compare the shown list with: the order this
        round's coin chose against, so no second scoring can round it differently.
        """
        cache = self._cache
        return cache[2] if cache is not None and cache[0] == t else None

    def _explore(self, gamma: float) -> NDArray[np.intp]:
        """The runs whose exploration coin (True with probability γ) came up this round."""
        if self._coin_pos == self._coins.shape[1]:
            self._coins = self.rngs.random((_COIN_BLOCK,))
            self._coin_pos = 0
        coins = self._coins[:, self._coin_pos]
        self._coin_pos += 1
        return (coins < gamma).nonzero()[0]

    def rank(self, context: Context) -> Orders:
        """Each run's own order, or (probability γ_t) a uniformly random one."""
        if self._weights is None:
            _ = self.eta_  # without T and the paper's schedule, fail before round 1
        gamma = self.gamma_at(context.t)
        self._round_gamma = (context.t, gamma)
        _, own = self._scores(context)
        explore = self._explore(gamma)
        if explore.size == 0:
            return own
        orders = own.copy()
        permutation_rows(self.rngs, explore, orders)  # rngs[b].permutation(m), one call
        return orders

    def update(self, context: Context, orders: Orders, feedback: TopKFeedback) -> None:
        """Step along the unbiased top-k estimate of the surrogate's descent direction."""
        scores, own = self._cached_scores(context)
        t, gamma = self._round_gamma
        gamma = gamma if t == context.t else self.gamma_at(context.t)
        surrogate = self.round_surrogate(context)
        z = trusted_estimate(surrogate, scores, orders, feedback.labels, gamma, own)
        if self.eta == "adaptive":
            self._adaptive_step(context, z, self.radius)
        else:
            self._step(context, z, self.eta_, self.radius)

    def _direct_estimator(self, n_items: int) -> TrustedEstimator | None:
        """The surrogate's compiled estimator, where it gives the step's direction: a loss (whose
        descent direction is its gradient) on lists longer than the feedback is deep."""
        surrogate = self._surrogate
        if surrogate.kind != "loss" or n_items <= int(self._requires.k or 1):
            return None
        return surrogate.trusted_estimator(n_items)

    def trusted_rank(self, context: Context) -> Orders:
        """:meth:`rank` under the runner's guarantees (:mod:`oltr.learners.linear_round`)."""
        if self._weights is None:
            return self.rank(context)  # round 1 sizes the weights and checks the schedules
        t, gamma = context.t, self._gamma_value  # a fixed γ (a number, or the paper's T^(−1/3))
        if gamma is None:
            gamma = (
                min(0.5, math.pow(t, -1.0 / 3.0)) if self.gamma == "anytime" else self.gamma_at(t)
            )
        self._round_gamma = (t, gamma)
        plan = self._direct_scores(context)
        own = self._trusted_scores(context)[1] if plan is None else plan.own
        if self.n_runs == 1:  # one coin: a scalar comparison, the same draw
            if self._coin_pos == self._coins.shape[1]:
                self._explore(gamma)  # refills the block and uses its first coin
                explore = _RUN_0 if self._coins[0, 0] < gamma else _NO_RUNS
            else:
                explore = _RUN_0 if self._coins[0, self._coin_pos] < gamma else _NO_RUNS
                self._coin_pos += 1
        else:
            explore = self._explore(gamma)
        if explore.size == 0:
            return own
        if self._explored.shape != own.shape:
            self._explored = np.empty(own.shape, dtype=np.intp)
        orders = self._explored
        orders[...] = own
        permutation_rows(self.rngs, explore, orders)
        return orders

    def trusted_update(self, context: Context, orders: Orders, feedback: TopKFeedback) -> None:
        """:meth:`update` under the runner's guarantees: the same estimate and step."""
        cache, (t, gamma) = self._cache, self._round_gamma
        if cache is None or cache[0] != context.t or t != context.t:
            self.update(context, orders, feedback)
            return
        labels = feedback.labels
        if labels.dtype is not _FLOAT64:
            labels = labels.astype(np.float64)
        plan = self._direct
        if plan is not None and cache[1] is plan.scores:  # scored by _direct_scores
            direction = plan.direction
            if plan.estimate is not None:
                plan.estimate(cache[1], orders, labels, gamma, cache[2], direction)
            else:
                self.round_surrogate(context).trusted_descent_estimate_into(
                    cache[1], orders, labels, gamma, cache[2], direction
                )
            self._direct_step(context, plan, direction)
            return
        surrogate = self.round_surrogate(context)
        z = surrogate.trusted_descent_estimate(cache[1], orders, labels, gamma, cache[2])
        self._trusted_step(context, z, *self._trusted_eta())
