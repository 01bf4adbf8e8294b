"""Faces of the cell polytopes: the LP that decides whether two cells share a face (neighbours)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

__all__ = ["SLACK_TOL", "Face", "polytope_face"]


#: Slack above which an inequality is strictly satisfiable (unit rows, slack <= 1).
SLACK_TOL = 1e-7
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class Face:
    """Dimension, relative-interior point and implicit equalities of a polytope.

    Attributes
    ----------
    dim
        Affine dimension; -1 for the empty set.
    point
        A relative-interior point (None when empty).
    implicit
        Boolean per inequality row: tight on the whole polytope.
    n_lp
        Number of linear programs solved.
    """

    dim: int
    point: NDArray[np.float64] | None
    implicit: NDArray[np.bool_]
    n_lp: int


def polytope_face(
    G: ArrayLike, h: ArrayLike, A: ArrayLike, b: ArrayLike, *, slack_tol: float = SLACK_TOL
) -> Face:
    """Dimension of ``{x : Gx ≤ h, Ax = b}`` via its implicit equalities.

    Parameters
    ----------
    G, h
        Inequalities, shapes (q, n) and (q,); rows are rescaled to unit norm.
    A, b
        Equalities, shapes (e, n) and (e,).
    slack_tol
        A row is strictly satisfiable when an LP gives it slack above this.

    Returns
    -------
    Face

    Examples
    --------
    The triangle ``{x ≥ 0, x1 + x2 + x3 = 1}`` with ``x1 ≤ x2`` is 2-dimensional;
    adding ``x1 ≥ x2`` leaves a segment:

    >>> G = np.vstack([-np.eye(3), [[1, -1, 0]]]); h = np.zeros(4)
    >>> polytope_face(G, h, np.ones((1, 3)), [1.0]).dim
    2
    >>> polytope_face(np.vstack([G, [[-1, 1, 0]]]), np.zeros(5), np.ones((1, 3)), [1.0]).dim
    1
    """
    g_arr = np.atleast_2d(np.asarray(G, dtype=np.float64))
    h_arr = np.asarray(h, dtype=np.float64).ravel()
    a_arr = np.atleast_2d(np.asarray(A, dtype=np.float64))
    b_arr = np.asarray(b, dtype=np.float64).ravel()
    q, n = g_arr.shape
    norms = np.linalg.norm(g_arr, axis=1)
    if np.any(norms == 0):
        raise ValueError("inequality rows of G must be non-zero")
    g_arr, h_arr = g_arr / norms[:, None], h_arr / norms
    undecided = np.ones(q, dtype=bool)
    points: list[NDArray[np.float64]] = []
    n_lp = 0
    # Variables (x, s): maximise Σ s over undecided rows, Gx + s ≤ h.
    a_ub = np.hstack([g_arr, np.eye(q)])
    a_eq = np.hstack([a_arr, np.zeros((a_arr.shape[0], q))])
    while True:
        cost = np.concatenate([np.zeros(n), -undecided.astype(np.float64)])
        bounds = [(None, None)] * n + [(0.0, 1.0 if u else 0.0) for u in undecided]
        res = linprog(
            cost,
            A_ub=a_ub,
            b_ub=h_arr,
            A_eq=a_eq,
            b_eq=b_arr,
            bounds=bounds,
            method="highs",
            options=_HIGHS,
        )
        n_lp += 1
        if res.status == 2:  # infeasible
            return Face(-1, None, np.zeros(q, dtype=bool), n_lp)
        if res.status != 0:
            raise RuntimeError(f"HiGHS failed on a cell LP: {res.message}")
        points.append(res.x[:n])
        strict = undecided & (res.x[n:] > slack_tol)
        if not strict.any():
            break
        undecided &= ~strict
        if not undecided.any():
            break
    eq_rows = np.vstack([a_arr / np.linalg.norm(a_arr, axis=1, keepdims=True), g_arr[undecided]])
    dim = n - int(np.linalg.matrix_rank(eq_rows))
    return Face(dim, np.mean(points, axis=0), undecided.copy(), n_lp)
