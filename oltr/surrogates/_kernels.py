"""Small array helpers shared by the surrogate modules (no validation)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["checked_exp", "f64", "gather", "one_hot"]


def f64(a: object) -> NDArray[np.float64]:
    """View an array expression as a float64 array (no copy when it already is one)."""
    return np.asarray(a, dtype=np.float64)


def one_hot(items: NDArray[np.intp], n_items: int) -> NDArray[np.float64]:
    """Standard basis vectors e_i of R^m for item indices of shape (...): shape (..., m)."""
    return f64(np.arange(n_items) == items[..., None])


def gather(values: NDArray[np.float64], items: NDArray[np.intp]) -> NDArray[np.float64]:
    """``values[..., items]`` row by row, broadcasting the leading axes of both.

    ``values`` has shape (..., m) and ``items`` (..., ℓ); the result has the
    broadcast leading shape + (ℓ,).
    """
    lead = np.broadcast_shapes(values.shape[:-1], items.shape[:-1])
    v = np.broadcast_to(values, lead + values.shape[-1:])
    it = np.broadcast_to(items, lead + items.shape[-1:])
    return np.take_along_axis(v, it, axis=-1)


def checked_exp(x: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    """``exp(x)``, raising ValueError instead of overflowing to inf."""
    with np.errstate(over="ignore"):
        out = np.exp(x)
    if not np.isfinite(out).all():
        limit = np.log(np.finfo(np.float64).max)
        raise ValueError(
            f"{what}: exp overflows float64 for arguments above {limit:.2f} (largest here "
            f"{np.max(x):.6g}), so the result is not representable; keep scores bounded "
            "(RTop-kF projects w onto a ball of radius U, so |s_i| <= R_D * U)"
        )
    return out
