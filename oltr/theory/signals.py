"""Signal matrices of a partial-monitoring game: one indicator row per feedback symbol."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["signal_matrices"]


def signal_matrices(feedback: ArrayLike, n_symbols: int | None = None) -> NDArray[np.int8]:
    """One-hot signal matrices of a feedback matrix (CT15 Definition 2, §14.1).

    ``(S_i)[s, j] = 1(H[i, j] = s)`` for symbols ``s = 0..n_symbols-1``; row
    ``s`` of ``S_i`` is the indicator of "action i shows symbol s".

    Parameters
    ----------
    feedback
        Integer array of shape (n_actions, n_outcomes) with symbols in ``0..n_symbols-1``.
    n_symbols
        Number of symbols; defaults to ``feedback.max() + 1``.

    Returns
    -------
    signals
        Array of shape (n_actions, n_symbols, n_outcomes) of 0/1.

    Examples
    --------
    >>> signal_matrices([[0, 1, 1, 0]])[0]
    array([[1, 0, 0, 1],
           [0, 1, 1, 0]], dtype=int8)
    """
    h = np.asarray(feedback)
    if h.ndim != 2 or h.size == 0:
        raise ValueError(f"feedback must be a non-empty 2-D array, got shape {h.shape}")
    if not np.issubdtype(h.dtype, np.integer):
        raise TypeError(f"feedback must hold integer symbols, got dtype {h.dtype}")
    if h.min() < 0:
        raise ValueError(f"feedback symbols must be >= 0, got {h.min()}")
    n_sym = int(h.max()) + 1 if n_symbols is None else int(n_symbols)
    if h.max() >= n_sym:
        raise ValueError(f"feedback symbols must be < n_symbols={n_sym}, got {h.max()}")
    signals: NDArray[np.int8] = (h[:, None, :] == np.arange(n_sym)[None, :, None]).astype(np.int8)
    return signals
