"""Dueling Bandit Gradient Descent (Yue & Joachims 2009, Algorithm 1), batched over runs.

DBGD keeps a candidate ``w_t`` in a parameter space W and, each round, duels it
against an exploratory neighbour along a random direction::

    u_t   ~ uniform on the unit sphere of R^d
    w'_t  = P_W(w_t + δ u_t)                          (Algorithm 1, line 4)
    w_{t+1} = P_W(w_t + γ u_t)   if w'_t wins          (line 7)
            = w_t                 otherwise              (line 9)

W is the ball of radius R (§3, §5.1; P_W the Euclidean projection) or, for
linear rankers whose scale does not matter, the unit sphere (§5.2; P_W(w) =
w/‖w‖). With ``n_queries > 1`` the pair (w_t, w'_t) is compared on that many
queries before one update decision (§5.2: 1, 10 or 100 queries); w'_t wins the
decision when it wins more of the comparisons than it loses.

How duels fit the protocol
--------------------------
DBGD is a learner over *parameter vectors*: its two verbs are
:meth:`DuelingBanditGradientDescent.propose` (the pair ``(w_t, w'_t)``, shape
(B, 2, d)) and :meth:`DuelingBanditGradientDescent.learn` (the duel outcome,
+1 when ``w'_t`` won, the sign convention of :mod:`oltr.clicks.interleaving`).
Whatever decides the duel sees the pair through a *presentation*:

* on a query stream (§5.2) the presentation is the two rankings the linear
  scorers produce, ``order(X w_t)`` and ``order(X w'_t)``: that is
  :meth:`~DuelingBanditGradientDescent.rank`, and
  :meth:`~DuelingBanditGradientDescent.update` passes the duel outcome of the
  feedback model (web-search oracle, or interleaving + clicks) to ``learn``.
  This is the engine's ordinary protocol, orders of shape (B, 2, m);
* in the synthetic setting of §5.1 there are no rankings — the value function
  is defined on W itself — so the presentation is the pair of points, and the
  duel environment of :mod:`oltr.reproductions.synthetic_duels` calls ``propose`` and ``learn``
  directly (:func:`oltr.reproductions.synthetic_duels.run_parameter_duels`).

In both, the learner receives only the outcome. The update arithmetic lives in
two pure array functions, :func:`explore` and :func:`gradient_step`, shared by
this class, by the BGD baselines (:mod:`oltr.learners.bgd`) and by the fast
batched simulation :func:`oltr.reproductions.synthetic_duels.simulate_synthetic`.

References
----------
Yue & Joachims 2009, "Interactively optimizing information retrieval systems as
a dueling bandits problem", ICML: Algorithm 1, §4 (Lemma 1, Theorem 2), §5.1
(δ = T^{−1/4} δ_L √(0.4 R d), w_1 = 1·√(5/d)), §5.2 (unit sphere, queries per
update, (δ, γ) = (1, 0.01)).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike

from oltr.errors import InputError
from oltr.feedback import DuelFeedback, FeedbackRequirement
from oltr.learners.base import Learner
from oltr.learners.warm import check_start
from oltr.permutations.counting import stable_orders
from oltr.registry import register_dueler, register_learner
from oltr.types import Context, FloatArray, Orders, RunGenerators, RunRNGLike
from oltr.validation import check_choice, check_scalar, finite_features

__all__ = [
    "DBGD",
    "SPACES",
    "DirectionStream",
    "DuelingBanditGradientDescent",
    "explore",
    "gradient_step",
    "initial_weights",
    "project",
    "theorem2_schedule",
]

#: Parameter spaces: the ball of radius R (§3, §5.1) or the unit sphere (§5.2).
SPACES = ("ball", "sphere")


# ---------------------------------------------------------------------------
# pure array code, shared by every dueling learner and the batched simulation


def project(w: ArrayLike, space: str = "ball", radius: float = 1.0) -> FloatArray:
    """P_W: project points of shape (..., d) onto the ball ‖w‖ <= radius or the sphere ‖w‖ = radius.

    The sphere projection of 0 is undefined; 0 is returned unchanged.

    >>> project([3.0, 4.0], "ball", 1.0)
    array([0.6, 0.8])
    >>> project([0.3, 0.4], "sphere", 1.0)
    array([0.6, 0.8])
    >>> project([0.3, 0.4], "ball", 1.0)
    array([0.3, 0.4])
    """
    w = np.asarray(w, dtype=np.float64)
    norm = np.sqrt(np.einsum("...i,...i->...", w, w))[..., None]
    if space == "ball":
        scale = radius / np.maximum(norm, radius)
    else:
        scale = np.divide(radius, norm, out=np.ones_like(norm), where=norm > 0)
    projected: FloatArray = w * scale
    return projected


def explore(
    w: FloatArray, u: FloatArray, delta: float | FloatArray, space: str, radius: float
) -> FloatArray:
    """The exploratory point w' = P_W(w + δu) (Algorithm 1, line 4); δ may be (B, 1)."""
    return project(w + delta * u, space, radius)


def gradient_step(
    w: FloatArray,
    u: FloatArray,
    coef: FloatArray,
    gamma: float | FloatArray,
    space: str,
    radius: float,
) -> FloatArray:
    """w ← P_W(w + γ · coef · u), rows with ``coef == 0`` unchanged.

    DBGD uses ``coef = X_t ∈ {0, 1}``, "w'_t won" (Algorithm 1, lines 6–9);
    BGD1 uses ``coef = −P(w_t ≻ w'_t)`` and BGD2 ``coef = 1/2 − P(w_t ≻ w'_t)``
    (§5.1 with Flaxman et al.'s step η = γδ/d, Theorem 2's proof). ``coef`` has
    shape (B,).
    """
    coef = np.asarray(coef, dtype=np.float64)[:, None]
    moved = project(w + gamma * coef * u, space, radius)
    # A lost duel keeps w_t exactly (no round-off from projecting it again).
    return np.where(coef != 0.0, moved, w)


def theorem2_schedule(
    horizon: int, dim: int, radius: float, delta_l: float = 1.0
) -> tuple[float, float]:
    """(δ, γ) = (T^{−1/4} δ_L √(0.4 R d), R/√T) (§5.1; γ as in Theorem 2).

    §5.1 replaces the unknown Lipschitz constant of Theorem 2's
    δ = √(2Rd) / √(13 L T^{1/4}) by the free factor δ_L.

    >>> d, g = theorem2_schedule(10_000, 50, 10.0)
    >>> round(d, 6), g
    (1.414214, 0.1)
    """
    t = float(horizon)
    return float(t**-0.25 * delta_l * np.sqrt(0.4 * radius * dim)), float(radius / np.sqrt(t))


def initial_weights(
    init: str | Sequence[float], dim: int, space: str, radius: float, rngs: RunGenerators
) -> FloatArray:
    """w_1 for every run, shape (B, dim).

    ``"ones"``: 1·√(5/d) in the ball (§5.1, norm √5, shrunk into a smaller
    ball), 1/√d on the sphere; ``"zeros"``: Theorem 2's w_1 = 0 (ball only);
    ``"random"``: uniform on the sphere of radius ``radius`` (per-run draw); a
    sequence: that point, projected into W.
    """
    n = rngs.n_runs
    if isinstance(init, str):
        if init == "ones":
            w = np.full(dim, np.sqrt(5.0 / dim) if space == "ball" else 1.0 / np.sqrt(dim))
        elif init == "zeros":
            w = np.zeros(dim)
        else:  # "random"
            z = rngs.standard_normal((dim,))
            return project(z, "sphere", radius)
    else:
        w = np.asarray(init, dtype=np.float64)
        if w.shape != (dim,):
            raise ValueError(f"init must have {dim} entries (one per feature), got shape {w.shape}")
    return np.tile(project(w, space, radius), (n, 1))


class DirectionStream:
    """Uniform unit vectors u_t, one per run and call, drawn from each run's own generator.

    Run ``b`` draws blocks of ``block`` standard-normal vectors from
    ``rngs[b]`` and normalises them (a normalised Gaussian is uniform on the
    sphere), so its sequence of directions does not depend on the batch.

    Parameters
    ----------
    rngs
        One generator per run.
    dim
        Dimension d >= 1.
    block
        Directions drawn per generator call, >= 1 (speed only; the sequence is
        the same for every block size only when ``block`` is unchanged).

    Examples
    --------
    >>> s = DirectionStream(RunGenerators.from_rng(0, 2), 3)
    >>> u = s.next()
    >>> u.shape, bool(np.allclose(np.linalg.norm(u, axis=1), 1.0))
    ((2, 3), True)
    """

    def __init__(self, rngs: RunGenerators, dim: int, block: int = 256) -> None:
        self.rngs, self.dim, self.block = rngs, int(dim), int(block)
        self._buf = np.empty((rngs.n_runs, 0, self.dim))
        self._i = 0

    def next(self) -> FloatArray:
        """The next direction of every run, shape (B, d)."""
        if self._i >= self._buf.shape[1]:
            z = self.rngs.standard_normal((self.block, self.dim))
            self._buf = z / np.linalg.norm(z, axis=-1, keepdims=True)
            self._i = 0
        u = self._buf[:, self._i]
        self._i += 1
        return u


# ---------------------------------------------------------------------------
# the learner


@register_learner("dbgd")
@register_dueler("dbgd")
class DuelingBanditGradientDescent(Learner[DuelFeedback]):
    """Dueling Bandit Gradient Descent: learn a linear ranker from duel outcomes only.

    Each update decision: draw u uniform on the unit sphere, duel w_t against
    w'_t = P_W(w_t + δu) on ``n_queries`` queries, and move to
    w_{t+1} = P_W(w_t + γu) if w'_t won more comparisons than it lost
    (Algorithm 1). Rankings are by descending score ``X w`` (ties: lower
    document index first).

    Parameters
    ----------
    delta
        Exploration step δ > 0; None: §5.1's δ = T^{−1/4} δ_L √(0.4 R d) with T
        the number of update decisions (from ``horizon``; without one, anytime:
        the decision count t for T). Default 1 (§5.2's
        best on the unit sphere). A list of ``n_runs`` values gives each run
        its own δ (a parameter grid advanced as one batch).
    gamma
        Exploitation step γ > 0; None: Theorem 2's γ = R/√T (anytime: R/√t). Default 0.01 (§5.2).
        A list of ``n_runs`` values gives each run its own γ.
    delta_l
        The factor δ_L > 0 of the §5.1 schedule (used when ``delta`` is None).
    space
        ``"sphere"`` (linear rankers, §5.2; radius 1 unless set) or ``"ball"``
        (§3, §5.1).
    radius
        R > 0: radius of the ball or of the sphere.
    init
        w_1: ``"ones"`` (§5.1's 1·√(5/d) in the ball, 1/√d on the sphere),
        ``"zeros"`` (Theorem 2; ball only), ``"random"`` or a list of d numbers.
    n_queries
        Comparisons per update decision, >= 1 (§5.2: 1, 10, 100).
    horizon
        Rounds T (filled in by the runner); needed only by the schedules.
    dim
        Dimension d of W when there are no features to read it from (the
        synthetic duels of :mod:`oltr.reproductions.synthetic_duels`); None: the number of
        feature columns of the first context.
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    Attributes
    ----------
    weights_ : array of shape (B, d)
        The current candidates w_t (read-only view).

    References
    ----------
    Yue & Joachims 2009, Algorithm 1; §4, Theorem 2 (γ = R/√T); §5.1 (δ_L
    schedule, w_1); §5.2 (unit sphere, queries per update, (δ, γ) = (1, 0.01)).

    Examples
    --------
    >>> from oltr.feedback import DuelFeedbackModel
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    >>> rel = np.array([0, 2, 1])                       # feature 2 is the good one
    >>> lrn = DuelingBanditGradientDescent(delta=1.0, gamma=0.1, n_runs=4, rng=0)
    >>> oracle, fb_rngs = DuelFeedbackModel(measure="ndcg@3"), RunGenerators.from_rng(1, 4)
    >>> for t in range(1, 301):
    ...     ctx = Context(t=t, n_items=3, features=X)
    ...     orders = lrn.rank(ctx)
    ...     lrn.update(ctx, orders, oracle.observe(orders, rel, rngs=fb_rngs))
    >>> bool((lrn.weights_[:, 1] > lrn.weights_[:, 0]).all())
    True
    """

    requires = FeedbackRequirement("duel")
    context_kind = "features"
    #: What it observes in parameter-space duels
    #: (oltr.reproductions.synthetic_duels.run_parameter_duels).
    parameter_feedback: ClassVar[str] = "duel"

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        delta: float | Sequence[float] | None = 1.0,
        gamma: float | Sequence[float] | None = 0.01,
        delta_l: float = 1.0,
        space: str = "sphere",
        radius: float = 1.0,
        init: str | Sequence[float] = "ones",
        n_queries: int = 1,
        horizon: int | None = None,
        dim: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        for name, value in (("delta", delta), ("gamma", gamma)):
            if isinstance(value, list | tuple):
                if len(value) != self.n_runs:
                    raise ValueError(
                        f"{name} as a list must hold one value per run "
                        f"({self.n_runs}), got {len(value)}"
                    )
                for v in value:
                    check_scalar(v, name, low=0, include_low=False)
            elif value is not None:
                check_scalar(value, name, low=0, include_low=False)
        check_scalar(delta_l, "delta_l", low=0, include_low=False)
        check_choice(space, "space", SPACES)
        check_scalar(radius, "radius", low=0, include_low=False)
        if isinstance(init, str):
            check_choice(init, "init", ("ones", "zeros", "random"))
            if init == "zeros" and space == "sphere":
                raise ValueError(
                    "init='zeros' is not on the sphere; use space='ball' or init='ones'/'random'"
                )
        elif not np.isfinite(np.asarray(init, dtype=np.float64)).all():
            raise ValueError(f"init must be finite, got {init!r}")
        check_scalar(n_queries, "n_queries", low=1, integer=True)
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        if dim is not None:
            check_scalar(dim, "dim", low=1, integer=True)
        self.delta = delta
        self.gamma = gamma
        self.delta_l = delta_l
        self.space = space
        self.radius = radius
        self.init = init
        self.n_queries = n_queries
        self.horizon = horizon
        self.dim = dim
        self._w: FloatArray | None = None
        if dim is not None:
            self._start(int(dim))

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}
        yield {
            "delta": None,
            "gamma": None,
            "horizon": 50,
            "space": "ball",
            "radius": 2.0,
            "n_queries": 3,
        }
        yield {"init": "random", "delta": 0.5, "gamma": 0.2}

    # -- state ------------------------------------------------------------------

    def _start(self, dim: int) -> None:
        self._d = dim
        self._w = initial_weights(self.init, dim, self.space, float(self.radius), self.rngs)
        self._dirs = DirectionStream(self.rngs, dim)
        self._decision = 1  # the update decision of the pair on offer (the anytime T)
        self._schedule()
        self._u = self._dirs.next()
        self._w_prime = explore(self._w, self._u, self._delta, self.space, float(self.radius))
        self._score = np.zeros(self.n_runs)
        self._seen = 0

    def _schedule(self) -> None:
        """(δ, γ): as given; else §5.1 / Theorem 2 for the horizon's update decisions, or
        anytime with the decision count t for T (without a horizon)."""
        decisions = (
            self._decision if self.horizon is None else max(1, self.horizon // self.n_queries)
        )
        sched = theorem2_schedule(decisions, self._d, float(self.radius), float(self.delta_l))
        self._delta = _step_size(self.delta, sched[0])
        self._gamma = _step_size(self.gamma, sched[1])

    @property
    def weights_(self) -> FloatArray:
        """The current candidates w_t, shape (B, d) (read-only)."""
        if self._w is None:
            raise RuntimeError("DBGD has no weights before its first context (or set dim)")
        view = self._w.view()
        view.flags.writeable = False
        return view

    @property
    def step_sizes_(self) -> tuple[Any, Any]:
        """(δ, γ) in use (floats, or arrays of shape (B, 1) for per-run values)."""
        if self._w is None:
            raise RuntimeError("DBGD has no step sizes before its first context (or set dim)")
        return self._delta, self._gamma

    def warm_start(self, weights: ArrayLike) -> None:
        """Start from ``weights`` (d,), as ``init`` does: w_1 = P_W(weights) (Algorithm 1, line 1).

        Before the first comparison only; see :mod:`oltr.learners.warm`.
        """
        w = check_start(weights)
        if self._w is not None and (self._decision > 1 or self._seen):
            raise RuntimeError("DBGD: warm_start comes before the first comparison")
        if self._w is not None and w.size != self._d:
            raise InputError(f"warm-start weights have {w.size} entries, DBGD has d = {self._d}")
        self.init = w.tolist()
        if self._w is not None:  # started by dim: replace w_1 and its partner, drawing nothing
            self._w = initial_weights(self.init, self._d, self.space, float(self.radius), self.rngs)
            self._w_prime = explore(self._w, self._u, self._delta, self.space, float(self.radius))

    # -- parameter-space verbs ------------------------------------------------------

    def propose(self) -> FloatArray:
        """The duelling pair (w_t, w'_t) of every run, shape (B, 2, d)."""
        if self._w is None:
            raise RuntimeError("DBGD needs dim (or a first context with features) to propose")
        return np.stack([self._w, self._w_prime], axis=1)

    def learn(self, outcome: ArrayLike) -> None:
        """Take the outcome of one comparison of the current pair (+1: w'_t won, −1: w_t, 0: tie).

        After ``n_queries`` comparisons, w'_t wins the decision if the outcomes
        sum to > 0; then w_t moves (Algorithm 1, line 7) and a new pair is drawn.
        """
        out = np.asarray(outcome)
        if out.shape != (self.n_runs,):
            raise ValueError(f"outcome must have shape ({self.n_runs},), got {out.shape}")
        if self._w is None:
            raise RuntimeError("DBGD: learn() before propose()")
        self._score += out
        self._seen += 1
        if self._seen < self.n_queries:
            return
        won = (self._score > 0).astype(np.float64)
        self._w = gradient_step(self._w, self._u, won, self._gamma, self.space, float(self.radius))
        self._decision += 1
        if self.horizon is None and (self.delta is None or self.gamma is None):
            self._schedule()
        self._u = self._dirs.next()
        self._w_prime = explore(self._w, self._u, self._delta, self.space, float(self.radius))
        self._score[:] = 0.0
        self._seen = 0

    # -- the ranking protocol -----------------------------------------------------

    def rank(self, context: Context) -> Orders:
        """Orders of w_t (list 0) and w'_t (list 1) by descending score, shape (B, 2, m)."""
        x = finite_features(context.features, "DBGD", context.t)
        if self._w is None:
            self._start(int(x.shape[1]))
        elif x.shape[1] != self._d:
            raise ValueError(
                f"context has {x.shape[1]} features, but DBGD's weights have {self._d}"
            )
        scores = np.einsum("md,bkd->bkm", x, self.propose())
        # Stable sort on −score: ties go to the lower document index (oltr.permutations rule).
        return stable_orders(-scores)

    def update(self, context: Context, orders: Orders, feedback: DuelFeedback) -> None:
        """Pass the duel outcome (+1: list 1, i.e. w'_t, won) to :meth:`learn`."""
        self.learn(np.asarray(feedback.outcome, dtype=np.float64))


def _step_size(value: Any, scheduled: float | None) -> Any:
    """A float, or per-run values as a (B, 1) column that broadcasts over d."""
    if value is None:
        return scheduled
    if isinstance(value, list | tuple):
        return np.asarray(value, dtype=np.float64)[:, None]
    return float(value)


#: Short alias used in the literature.
DBGD = DuelingBanditGradientDescent
