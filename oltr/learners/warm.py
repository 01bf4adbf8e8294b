"""Warm starts: the first weights of a linear learner taken from a model fitted elsewhere.

A ranker fitted offline (e.g. a counterfactual ranker fitted from click logs,
:mod:`oltr.learners.counterfactual`) scores ``s = X w`` as the online linear
learners do, so its ``w`` can be their ``w₁``: the online learner then starts
from the offline ranker and keeps learning from there. ``warm_start(weights)``
is the hook (:meth:`oltr.learners.linear.LinearRanker.warm_start`,
:meth:`oltr.learners.dbgd.DuelingBanditGradientDescent.warm_start`); a learner
without it has no linear weights to start from.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from oltr.errors import InputError
from oltr.learners._linear_kernels import project_each
from oltr.types import FloatArray

__all__ = ["check_start", "start_weights"]


def check_start(weights: ArrayLike) -> FloatArray:
    """``weights`` as a finite float64 vector of shape (d,), d >= 1 (InputError if not).

    >>> check_start([1, 2.5])
    array([1. , 2.5])
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size == 0:
        raise InputError(f"warm-start weights must have shape (d,) with d >= 1, got {w.shape}")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise InputError(f"warm-start weights must be finite; entry {int(bad[0])} is {w[bad[0]]}")
    return w


def start_weights(
    weights: ArrayLike,
    n_runs: int,
    radius: float,
    dtype: Any = np.float64,
    order: Literal["C", "F"] = "C",
) -> FloatArray:
    """``w₁`` of ``n_runs`` runs from one weight vector, projected onto the ball of radius U.

    .. math:: w_1 = \\min\\{1, U / ‖w‖_2\\}\\, w   (CT16 Algorithm 1 step 11)

    The projection every step of a linear learner applies; a positive
    rescaling, so the order ``X w₁`` induces is the order ``X w`` induces.
    ``radius`` ``inf`` keeps ``w`` as it is.

    Parameters
    ----------
    weights
        Shape (d,), finite.
    n_runs
        B: the rows of the result.
    radius
        U > 0 or ``inf``.
    dtype, order
        The learner's precision and the memory order of its (B, d) weights.

    Returns
    -------
    numpy.ndarray
        Shape (B, d), every row the projected ``w``.

    Examples
    --------
    >>> start_weights([3.0, 4.0], 2, 1.0)
    array([[0.6, 0.8],
           [0.6, 0.8]])
    """
    row = check_start(weights)[None].copy()
    if np.isfinite(radius):
        project_each(row, float(radius))
    with np.errstate(over="ignore"):
        out = np.asarray(np.tile(row, (n_runs, 1)), dtype=dtype, order=order)
    if not np.isfinite(out).all():
        raise InputError(f"warm-start weights overflow {np.dtype(dtype).name}")
    return out
