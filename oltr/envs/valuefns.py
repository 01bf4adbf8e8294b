"""Comparison oracles for dueling bandits: synthetic value functions and web search.

Yue & Joachims (2009, §3.1) model a comparison between two points ``w, w'`` of
a parameter space W (a d-dimensional ball of radius R) through a hidden,
concave value function ``v`` and a link σ:

    P(w ≻ w') = σ(v(w) − v(w')),     ε(w, w') = P(w ≻ w') − 1/2          (eq. 1)

and judge a learner that duels ``w_t`` against ``w'_t`` in round t by

    Δ_T = Σ_t ε(w*, w_t) + ε(w*, w'_t),       w* = argmax_{w ∈ W} v(w)    (eq. 2).

This module gives the synthetic settings P1–P5 of §5.1 (logistic link
σ(x) = 1/(1 + e^{−x}), no scaling; d = 50, R = 10) with w* and the per-round
regret term computed exactly, and the web-search oracle of §5.2,
P(w ≻ w') = σ(10 · (NDCG@10(w) − NDCG@10(w'))) on one query.

The five value functions, with coordinates numbered 1..d as in the paper
(so "odd" coordinates are the 0-based indices 0, 2, 4, …):

    v1(w) = −wᵀw
    v2(w) = −|w|            read as −‖w‖₁ (:func:`v2_l1`, P2) or −‖w‖₂ (:func:`v2_l2`)
    v3(w) = −Σ_{i odd} w_i² − Σ_{i even} |w_i|
    v4(w) = −Σ_i (e^{w_i} + e^{−w_i})
    v5(w) = v3(w) − Σ_{i%3=1} e^{[w_i]₊} − Σ_{i%3=2} e^{[−w_i]₊}

Each is a sum of per-coordinate terms, every one of them maximised uniquely at
0 (``e^{[±w]₊}`` is constant on one side of 0 and increasing on the other), and
0 lies in the ball, so w* = 0 for all five — analytic, no search needed. For
other value functions :func:`maximize_on_ball` finds w* numerically (SLSQP
over the ball; v concave, so a local maximum is global).

Which reading of ``|w|`` P2 uses is not settled by the text: it writes
``|w^{(i)}|`` for a scalar in v3 and ``|w|`` for a vector in v2. Table 1
settles it. Algorithm 1 run as §5.1 describes (w_1 = 1·√(5/d),
δ = T^{−1/4} δ_L √(0.4 R d), γ = R/√T as in Theorem 2) for T = 10⁶ rounds —
the horizon at which the P1, P3, P4 and P5 rows match Table 1 to within 0.06,
one run each — gives for P2, at δ_L = 0.6, 0.8, 1, 2, 3, average regret 0.79,
0.76, 0.75, 0.77, 0.81 with the L1 norm (Table 1: 0.803, 0.767, 0.760, 0.780,
0.807) but 0.73, 0.63, 0.55, 0.45, 0.48 with the L2 norm. So ``"P2"`` is the
L1 reading (:func:`v2_l1`); ``"P2_l2"`` keeps the Euclidean one.

References
----------
Yue & Joachims 2009, "Interactively optimizing information retrieval systems as
a dueling bandits problem", ICML: §3 (eqs. 1–2), §3.1 (link, value function),
§5.1 (P1–P5, w_1 = 1·√(5/d)), §5.2 (web-search oracle).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize
from scipy.special import expit

from oltr.clicks.click_models import RNGs, normalize_rngs, uniform_draws

__all__ = [
    "SYNTHETIC_PROBLEMS",
    "VALUE_FUNCTIONS",
    "Array",
    "SyntheticProblem",
    "ValueFn",
    "logistic",
    "maximize_on_ball",
    "project_to_ball",
    "synthetic_problem",
    "v1",
    "v2_l1",
    "v2_l2",
    "v3",
    "v4",
    "v5",
]

Array = NDArray[np.float64]
ValueFn = Callable[[Array], Array]


def _float(x: Any) -> Array:
    return np.asarray(x, dtype=np.float64)


def logistic(x: ArrayLike) -> Array:
    """Apply the logistic link σ_L(x) = 1 / (1 + e^{−x}) (Yue & Joachims 2009 §3.1).

    >>> float(logistic(0.0))
    0.5
    """
    return np.asarray(expit(np.asarray(x, dtype=np.float64)), dtype=np.float64)


# ---------------------------------------------------------------------------
# the value functions of §5.1 (w: array of shape (..., d) -> (...))


def v1(w: Array) -> Array:
    """v1(w) = −wᵀw (§5.1).

    >>> float(v1(np.array([1.0, 2.0])))
    -5.0
    """
    return _float(-np.einsum("...i,...i->...", w, w))


def v2_l2(w: Array) -> Array:
    """v2(w) = −‖w‖₂, the Euclidean reading of −|w| (§5.1; problem ``"P2_l2"``).

    >>> float(v2_l2(np.array([3.0, -4.0])))
    -5.0
    """
    return _float(-np.linalg.norm(w, axis=-1))


def v2_l1(w: Array) -> Array:
    """v2(w) = −‖w‖₁, the coordinate-wise reading of −|w| (§5.1; P2 of Table 1).

    >>> float(v2_l1(np.array([3.0, -4.0])))
    -7.0
    """
    return _float(-np.abs(w).sum(axis=-1))


def v3(w: Array) -> Array:
    """v3(w) = −Σ_{i odd} w_i² − Σ_{i even} |w_i|, coordinates numbered from 1 (§5.1).

    >>> float(v3(np.array([1.0, -2.0, 3.0])))     # −(1 + 9) − 2
    -12.0
    """
    return _float(-(w[..., 0::2] ** 2).sum(axis=-1) - np.abs(w[..., 1::2]).sum(axis=-1))


def v4(w: Array) -> Array:
    """v4(w) = −Σ_i (e^{w_i} + e^{−w_i}) (§5.1); v4(0) = −2d.

    >>> float(v4(np.zeros(3)))
    -6.0
    """
    return _float(-2.0 * np.cosh(w).sum(axis=-1))


def v5(w: Array) -> Array:
    """v5(w) = v3(w) − Σ_{i%3=1} e^{[w_i]₊} − Σ_{i%3=2} e^{[−w_i]₊}, i from 1 (§5.1).

    1-based i % 3 == 1 are the 0-based indices 0, 3, 6, …; i % 3 == 2 are 1, 4, 7, ….

    >>> float(v5(np.zeros(3)))                   # two exponential terms of e^0
    -2.0
    """
    up = np.exp(np.maximum(w[..., 0::3], 0.0)).sum(axis=-1)
    down = np.exp(np.maximum(-w[..., 1::3], 0.0)).sum(axis=-1)
    return _float(v3(w) - up - down)


#: The value functions of §5.1 by name.
VALUE_FUNCTIONS: MappingProxyType[str, ValueFn] = MappingProxyType(
    {
        "v1": v1,
        "v2_l1": v2_l1,
        "v2_l2": v2_l2,
        "v3": v3,
        "v4": v4,
        "v5": v5,
    }
)


# ---------------------------------------------------------------------------
# the ball


def project_to_ball(w: ArrayLike, radius: float) -> Array:
    """Euclidean projection P_W onto the ball {‖w‖₂ <= radius} (Algorithm 1, lines 4 and 7).

    >>> project_to_ball([3.0, 4.0], 1.0)
    array([0.6, 0.8])
    """
    w = np.asarray(w, dtype=np.float64)
    norm = np.linalg.norm(w, axis=-1, keepdims=True)
    scale = np.ones_like(norm)
    np.divide(radius, norm, out=scale, where=norm > radius)
    return _float(w * scale)


def maximize_on_ball(
    value: ValueFn,
    dim: int,
    radius: float,
    *,
    gradient: ValueFn | None = None,
    x0: ArrayLike | None = None,
    tol: float = 1e-10,
    max_iter: int = 1000,
) -> Array:
    """Numerically maximise a concave ``value`` over the ball {‖w‖₂ <= radius}.

    Solves ``min −v(w)  s.t.  radius² − wᵀw >= 0`` with SLSQP (scipy). For a
    concave v any local maximum is global, so one start suffices.

    Parameters
    ----------
    value
        v, mapping an array of shape (dim,) to a scalar.
    dim, radius
        Dimension d >= 1 and radius R > 0 of the ball.
    gradient
        ∇v (shape (dim,) -> (dim,)); finite differences if None.
    x0
        Starting point (default: the origin).
    tol, max_iter
        Passed to SLSQP.

    Returns
    -------
    w_star
        Array of shape (dim,).

    Raises
    ------
    RuntimeError
        If SLSQP fails (other than by stopping at the precision of its gradient).

    Examples
    --------
    >>> c = np.array([30.0, 40.0])                       # optimum outside the ball...
    >>> w = maximize_on_ball(lambda w: -np.sum((w - c) ** 2), 2, 10.0)
    >>> np.round(w, 6)                                   # ...lands on its boundary
    array([6., 8.])
    """
    dim, radius = _check_ball(dim, radius)
    start = np.zeros(dim) if x0 is None else project_to_ball(np.asarray(x0, float), radius)
    jac = None if gradient is None else (lambda w: -np.asarray(gradient(w), dtype=float))
    res = minimize(
        lambda w: -float(value(w)),
        start,
        jac=jac,
        method="SLSQP",
        tol=tol,
        constraints=[
            {"type": "ineq", "fun": lambda w: radius**2 - w @ w, "jac": lambda w: -2.0 * w}
        ],
        options={"maxiter": max_iter},
    )
    # Status 8 (no descent along the search direction) is how SLSQP stops once it sits at
    # the optimum to the precision of its (finite-difference) gradient; a concave v has no
    # other stationary points.
    if not res.success and res.status != 8:
        raise RuntimeError(f"maximize_on_ball: SLSQP did not converge: {res.message}")
    return project_to_ball(res.x, radius)


def _check_ball(dim: int, radius: float) -> tuple[int, float]:
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1:
        raise ValueError(f"dim must be an int >= 1, got {dim!r}")
    radius = float(radius)
    if not np.isfinite(radius) or radius <= 0:
        raise ValueError(f"radius must be a finite number > 0, got {radius}")
    return int(dim), radius


# ---------------------------------------------------------------------------
# a synthetic dueling problem


@dataclass(frozen=True)
class SyntheticProblem:
    """A dueling problem with a hidden value function and the logistic link.

    ``P(w ≻ w') = σ(v(w) − v(w'))`` (§3.1), regret term
    ``ε(w*, w) + ε(w*, w')`` (eq. 2). Every method is batched: points have shape
    (..., dim) and leading axes broadcast.

    Parameters
    ----------
    value
        The value function v: (..., dim) -> (...), concave on the ball.
    dim, radius
        The ball W = {w ∈ R^dim : ‖w‖₂ <= radius}.
    optimum
        w* if known analytically; otherwise found by :func:`maximize_on_ball`.
    name
        A label.

    Examples
    --------
    >>> p = synthetic_problem("P1", dim=2)
    >>> w = np.array([1.0, 0.0])
    >>> float(p.preference(p.optimum, w)) == float(logistic(1.0))   # v(w*) − v(w) = 1
    True
    >>> float(p.regret(p.optimum, p.optimum))
    0.0
    """

    value: ValueFn
    dim: int = 50
    radius: float = 10.0
    optimum: Array | None = field(default=None, repr=False)
    name: str = "custom"

    def __post_init__(self) -> None:
        dim, radius = _check_ball(self.dim, self.radius)
        object.__setattr__(self, "dim", dim)
        object.__setattr__(self, "radius", radius)
        if self.optimum is None:
            w_star = maximize_on_ball(self.value, dim, radius)
        else:
            w_star = self._check_points(self.optimum, "optimum")
            if w_star.shape != (dim,):
                raise ValueError(f"optimum must have shape ({dim},), got {w_star.shape}")
            if np.linalg.norm(w_star) > radius * (1 + 1e-12):
                raise ValueError(
                    f"optimum must lie in the ball of radius {radius}, got norm "
                    f"{np.linalg.norm(w_star)}"
                )
        w_star.setflags(write=False)
        object.__setattr__(self, "optimum", w_star)

    def _check_points(self, w: ArrayLike, name: str) -> Array:
        arr = np.asarray(w, dtype=np.float64)
        if arr.ndim < 1 or arr.shape[-1] != self.dim:
            raise ValueError(f"{name} must have shape (..., {self.dim}), got {arr.shape}")
        if not np.isfinite(arr).all():
            where = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
            raise ValueError(f"{name} must be finite, got {arr[where]} at index {where}")
        return arr

    @property
    def initial_point(self) -> Array:
        """w_1 = 1·√(5/d) (§5.1), of norm √5."""
        return np.full(self.dim, np.sqrt(5.0 / self.dim))

    @property
    def best_value(self) -> float:
        """v(w*)."""
        return float(self.value(np.asarray(self.optimum)))

    def preference(self, w: ArrayLike, w_prime: ArrayLike) -> Array:
        """P(w ≻ w') = σ(v(w) − v(w')), shape (...)."""
        a, b = self._check_points(w, "w"), self._check_points(w_prime, "w_prime")
        return logistic(self.value(a) - self.value(b))

    def epsilon(self, w: ArrayLike, w_prime: ArrayLike) -> Array:
        """ε(w, w') = P(w ≻ w') − 1/2 ∈ [−1/2, 1/2] (eq. 1)."""
        return self.preference(w, w_prime) - 0.5

    def regret(self, w: ArrayLike, w_prime: ArrayLike) -> Array:
        """Per-round regret ε(w*, w_t) + ε(w*, w'_t) ∈ [0, 1] (eq. 2), shape (...)."""
        a, b = self._check_points(w, "w"), self._check_points(w_prime, "w_prime")
        best = self.best_value
        # σ(x) − 1/2 = tanh(x/2)/2 keeps precision when v(w) is close to v(w*).
        return _float(
            0.5 * (np.tanh((best - self.value(a)) / 2.0) + np.tanh((best - self.value(b)) / 2.0))
        )

    def duel(self, w: ArrayLike, w_prime: ArrayLike, rng: RNGs) -> Any:
        """One noisy comparison: +1 if w' wins (probability 1 − P(w ≻ w')), −1 if w wins.

        Parameters
        ----------
        w, w_prime
            Points of shape (..., dim); leading axes broadcast.
        rng
            Seed/Generator, or one Generator per row of a 2-D batch.

        Returns
        -------
        outcome
            int8 of the batch shape (a numpy scalar for 1-D points); the sign
            convention of :mod:`oltr.clicks.interleaving` (second argument wins: +1).
        """
        p_first = np.asarray(self.preference(w, w_prime))
        return _draw_outcome(p_first, rng)


def _draw_outcome(p_first: NDArray[np.float64], rng: RNGs) -> Any:
    batch = p_first.shape
    u = uniform_draws(normalize_rngs(rng, batch), batch, ())
    out = np.where(u < p_first, -1, 1).astype(np.int8)
    return out[()] if out.ndim == 0 else out


_PROBLEM_VALUES: dict[str, tuple[str, ValueFn]] = {
    "P1": ("v1", v1),
    "P2": ("v2_l1", v2_l1),
    "P2_l2": ("v2_l2", v2_l2),
    "P2_l1": ("v2_l1", v2_l1),
    "P3": ("v3", v3),
    "P4": ("v4", v4),
    "P5": ("v5", v5),
}

#: Names of the synthetic settings of §5.1 (P2 is P2_l1, the reading Table 1 needs).
SYNTHETIC_PROBLEMS: tuple[str, ...] = tuple(_PROBLEM_VALUES)


def synthetic_problem(name: str, *, dim: int = 50, radius: float = 10.0) -> SyntheticProblem:
    """Build setting ``name`` of §5.1: ``"P1"``…``"P5"``, ``"P2_l1"`` or ``"P2_l2"``.

    Defaults are the paper's: a 50-dimensional ball of radius 10. w* = 0
    analytically for all of them (see the module docstring).

    Examples
    --------
    >>> p = synthetic_problem("P3")
    >>> p.dim, p.radius, float(np.abs(p.optimum).max())
    (50, 10.0, 0.0)
    """
    if name not in _PROBLEM_VALUES:
        raise ValueError(
            f"unknown synthetic problem {name!r}; valid names are {list(SYNTHETIC_PROBLEMS)}"
        )
    dim, radius = _check_ball(dim, radius)
    _, fn = _PROBLEM_VALUES[name]
    return SyntheticProblem(fn, dim=dim, radius=radius, optimum=np.zeros(dim), name=name)


# ---------------------------------------------------------------------------
# web search (§5.2)
