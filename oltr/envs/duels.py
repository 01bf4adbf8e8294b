"""The parameter-space duel of Yue & Joachims (2009) §5.1: noisy comparisons of two weight vectors.

``P(w ≻ w') = σ(v(w) − v(w'))`` through a synthetic value function
(:mod:`oltr.envs.valuefns`); :class:`ValueFunctionDuel` decides each duel from
per-run coins (:class:`CoinStream`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from oltr.envs.valuefns import SyntheticProblem, synthetic_problem
from oltr.types import FloatArray, RunGenerators

__all__ = ["CoinStream", "ValueFunctionDuel"]


class CoinStream:
    """Uniform [0, 1) coins, one per run and call, drawn in blocks from each run's generator.

    Run ``b``'s sequence does not depend on the batch (cf.
    :class:`oltr.learners.dbgd.DirectionStream`).

    >>> c = CoinStream(RunGenerators.from_rng(0, 3))
    >>> c.next().shape
    (3,)
    """

    def __init__(self, rngs: RunGenerators, block: int = 256) -> None:
        self.rngs, self.block = rngs, int(block)
        self._buf = np.empty((rngs.n_runs, 0))
        self._i = 0

    def next(self) -> FloatArray:
        """The next coin of every run, shape (B,)."""
        if self._i >= self._buf.shape[1]:
            self._buf = self.rngs.random((self.block,))
            self._i = 0
        out = self._buf[:, self._i]
        self._i += 1
        return out


class ValueFunctionDuel:
    """A dueling environment over parameter vectors: noisy comparisons through a value function.

    ``P(w ≻ w') = σ(v(w) − v(w'))`` with the logistic link (§3.1); the per-round
    regret is ``ε(w*, w_t) + ε(w*, w'_t)`` (eq. 2).

    Parameters
    ----------
    problem
        A name of :func:`oltr.envs.valuefns.synthetic_problem` (``"P1"``…``"P5"``)
        or a :class:`~oltr.envs.valuefns.SyntheticProblem`.
    dim, radius
        The ball W (default 50 and 10, §5.1); ignored for a problem object.

    Examples
    --------
    >>> env = ValueFunctionDuel("P1", dim=2)
    >>> pts = np.array([[[0.0, 0.0], [1.0, 0.0]]])      # w_t = w*, w'_t one unit away
    >>> p, reg = env.assess(pts)
    >>> bool(np.isclose(p[0], 1 / (1 + np.exp(-1.0)))), bool(np.isclose(reg[0], p[0] - 0.5))
    (True, True)
    """

    def __init__(
        self, problem: str | SyntheticProblem = "P1", *, dim: int = 50, radius: float = 10.0
    ) -> None:
        if isinstance(problem, str):
            problem = synthetic_problem(problem, dim=dim, radius=radius)
        elif not isinstance(problem, SyntheticProblem):
            raise TypeError(
                f"problem must be a problem name or a SyntheticProblem, got "
                f"{type(problem).__name__}"
            )
        self.problem = problem
        self._best = problem.best_value

    @property
    def dim(self) -> int:
        """Dimension d of W."""
        return self.problem.dim

    @property
    def radius(self) -> float:
        """Radius R of W."""
        return self.problem.radius

    def _check(self, points: ArrayLike) -> FloatArray:
        pts = np.asarray(points, dtype=np.float64)
        if pts.ndim != 3 or pts.shape[1] != 2 or pts.shape[2] != self.dim:
            raise ValueError(f"points must have shape (B, 2, {self.dim}), got {pts.shape}")
        return pts

    def assess(self, points: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """P(w_t ≻ w'_t) and the regret term ε(w*, w_t) + ε(w*, w'_t), each shape (B,)."""
        pts = self._check(points)
        return self._assess(pts[:, 0], pts[:, 1])

    def _assess(self, w: FloatArray, w_prime: FloatArray) -> tuple[FloatArray, FloatArray]:
        v, v_prime = self.problem.value(w), self.problem.value(w_prime)
        p_first = expit(v - v_prime)
        # σ(x) − 1/2 = tanh(x/2)/2 keeps precision near w* (valuefns.SyntheticProblem.regret).
        regret = 0.5 * (np.tanh((self._best - v) / 2.0) + np.tanh((self._best - v_prime) / 2.0))
        return p_first, regret

    @staticmethod
    def outcome(p_first: FloatArray, coins: FloatArray) -> NDArray[np.int8]:
        """The duel outcome from coins: −1 (w_t wins) when coin < P(w_t ≻ w'_t), else +1."""
        return np.where(coins < p_first, -1, 1).astype(np.int8)
