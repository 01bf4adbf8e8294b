"""Bandit Gradient Descent baselines BGD1 and BGD2 (Yue & Joachims 2009 §5.1; Flaxman et al. 2005).

BGD explores along a random direction like DBGD but observes the *value* of a
cost at the explored point instead of a random duel outcome. With
c_t(w) = P(w_t ≻ w) (Lemma 1) and the same points as DBGD,

    u_t ~ uniform on the unit sphere,   w'_t = P_W(w_t + δ u_t),

Flaxman et al.'s update w_{t+1} = P_W(w_t − η (d/δ) f_t(w'_t) u_t) with
η = γδ/d (the substitution of Theorem 2's proof) reads

    BGD1:  w_{t+1} = P_W(w_t − γ c_t(w'_t) u_t),            f_t = c_t = P(w_t ≻ w'_t)
    BGD2:  w_{t+1} = P_W(w_t − γ (c_t(w'_t) − 1/2) u_t),     f_t = ε_t = c_t − 1/2

so all three methods share step sizes and the expected step: DBGD's
E[X_t u] = −E[c_t u] (Lemma 1) equals BGD1's, and BGD2's differs by
(1/2)E[u] = 0. BGD assumes strictly more information than DBGD (§5.1): it needs
P(w_t ≻ w'_t) itself, which no duel reveals, so it is not an engine learner; it
runs against :class:`oltr.reproductions.synthetic_duels.ValueFunctionDuel` through
:func:`oltr.reproductions.synthetic_duels.run_parameter_duels`.

References
----------
Yue & Joachims 2009, ICML, §4.1 (eq. 5, Lemma 1), Theorem 2 (η = γδ/d), §5.1 (BGD1, BGD2, Figure 2).
Flaxman, Kalai & McMahan 2005, "Online convex optimization in the bandit
setting: gradient descent without a gradient", SODA, §2 (algorithm BGD).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from oltr.learners.dbgd import (
    SPACES,
    DirectionStream,
    explore,
    gradient_step,
    initial_weights,
    theorem2_schedule,
)
from oltr.registry import register_dueler
from oltr.types import Configurable, FloatArray, RunGenerators, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = ["BGD_VARIANTS", "BanditGradientDescent"]

#: "bgd1" observes c_t = P(w_t ≻ w'_t); "bgd2" observes ε_t = c_t − 1/2.
BGD_VARIANTS = ("bgd1", "bgd2")


@register_dueler("bgd")
class BanditGradientDescent(Configurable):
    """BGD1 / BGD2: gradient descent on P(w_t ≻ w) or ε_t(w) from one evaluation per round.

    Parameters
    ----------
    variant
        ``"bgd1"`` (cost c_t = P(w_t ≻ w)) or ``"bgd2"`` (cost ε_t = c_t − 1/2).
    dim
        Dimension d of W, >= 1.
    delta, gamma
        Exploration and step sizes > 0; None: §5.1's δ = T^{−1/4} δ_L √(0.4 R d)
        and Theorem 2's γ = R/√T, or without a horizon the same with the round t
        for T (non-increasing δ_t, γ_t: the anytime form of Flaxman et al.'s
        schedule; Theorem 2 is proved for the fixed one).
    delta_l
        δ_L > 0 of the §5.1 schedule.
    space, radius
        W: ``"ball"`` (default, §5.1) or ``"sphere"`` of radius R > 0 (default 10).
    init
        w_1 (``"ones"``: §5.1's 1·√(5/d); ``"zeros"``; ``"random"``; or d numbers).
    horizon
        Rounds T (for the schedules); None: anytime.
    n_runs, rng
        Runs B and per-run randomness (as for :class:`~oltr.learners.base.Learner`).

    Examples
    --------
    >>> from oltr.reproductions.synthetic_duels import ValueFunctionDuel, run_parameter_duels
    >>> env = ValueFunctionDuel("P1", dim=5)
    >>> bgd = BanditGradientDescent(variant="bgd2", dim=5, horizon=3000, n_runs=2, rng=0)
    >>> reg = run_parameter_duels(env, bgd, horizon=3000, checkpoints=[100, 3000],
    ...                           rngs=RunGenerators.from_rng(1, 2))
    >>> bool((reg[:, 1] < reg[:, 0]).all())                  # average regret falls
    True
    """

    _reserved = ("n_runs", "rng")
    #: What it observes each round (see oltr.reproductions.synthetic_duels.run_parameter_duels).
    parameter_feedback: ClassVar[str] = "preference"

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        variant: str = "bgd1",
        dim: int = 50,
        delta: float | None = None,
        gamma: float | None = None,
        delta_l: float = 1.0,
        space: str = "ball",
        radius: float = 10.0,
        init: str | Sequence[float] = "ones",
        horizon: int | None = None,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        check_choice(variant, "variant", BGD_VARIANTS)
        check_scalar(dim, "dim", low=1, integer=True)
        for name, value in (("delta", delta), ("gamma", gamma)):
            if value is not None:
                check_scalar(value, name, low=0, include_low=False)
        check_scalar(delta_l, "delta_l", low=0, include_low=False)
        check_choice(space, "space", SPACES)
        check_scalar(radius, "radius", low=0, include_low=False)
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        self.variant = variant
        self.dim = dim
        self.delta = delta
        self.gamma = gamma
        self.delta_l = delta_l
        self.space = space
        self.radius = radius
        self.init = init
        self.horizon = horizon
        self.n_runs = n_runs
        self.rngs = RunGenerators.from_rng(rng, n_runs)
        self._t = 1  # the round of the pair on offer (the anytime schedule's T)
        self._schedule()
        self._w = initial_weights(init, dim, space, float(radius), self.rngs)
        self._dirs = DirectionStream(self.rngs, dim)
        self._u = self._dirs.next()
        self._w_prime = explore(self._w, self._u, self._delta, space, float(radius))

    def _schedule(self) -> None:
        """(δ, γ): as given; else §5.1 / Theorem 2 for the horizon, or anytime with t for T."""
        horizon = self.horizon if self.horizon is not None else self._t
        delta, gamma = theorem2_schedule(horizon, self.dim, float(self.radius), float(self.delta_l))
        self._delta = float(self.delta) if self.delta is not None else delta
        self._gamma = float(self.gamma) if self.gamma is not None else gamma

    @property
    def weights_(self) -> FloatArray:
        """The current points w_t, shape (B, d) (a copy)."""
        return self._w.copy()

    def propose(self) -> FloatArray:
        """(w_t, w'_t) of every run, shape (B, 2, d)."""
        return np.stack([self._w, self._w_prime], axis=1)

    def learn(self, p_first: ArrayLike) -> None:
        """Step on the observed c_t(w'_t) = P(w_t ≻ w'_t), shape (B,), and draw the next pair."""
        p = np.asarray(p_first, dtype=np.float64)
        if p.shape != (self.n_runs,) or not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
            raise ValueError(f"p_first must be {self.n_runs} probabilities, got {p!r}")
        coef = -p if self.variant == "bgd1" else 0.5 - p
        self._w = gradient_step(self._w, self._u, coef, self._gamma, self.space, float(self.radius))
        self._t += 1
        self._schedule()
        self._u = self._dirs.next()
        self._w_prime = explore(self._w, self._u, self._delta, self.space, float(self.radius))
