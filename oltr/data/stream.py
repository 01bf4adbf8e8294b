"""A seeded stream of query indices: the order in which an online run meets the queries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from oltr.data.dataset import LetorDataset
from oltr.random import RNGLike, as_rng

__all__ = ["QueryStream"]


class QueryStream:
    """A seeded, endless stream of query indices.

    ``order="uniform"`` draws each index uniformly with replacement;
    ``order="epochs"`` makes repeated passes over all queries, each pass in a
    freshly shuffled order (the data set is swept "multiple times", Chaudhuri &
    Tewari 2016 §6). Indices are drawn in blocks from ``rng``, so the stream
    does not depend on how it is consumed: ``take(3)`` then ``take(4)`` gives
    the same seven indices as ``take(7)``; the same seed gives the same stream.

    Parameters
    ----------
    dataset
        The dataset (or its number of queries, >= 1).
    order
        ``"uniform"`` or ``"epochs"``.
    rng
        Seed or Generator (:func:`oltr.random.as_rng`).

    Examples
    --------
    >>> stream = QueryStream(5, order="epochs", rng=0)
    >>> sorted(stream.take(5).tolist())
    [0, 1, 2, 3, 4]
    >>> QueryStream(5, rng=1).take(4).tolist() == QueryStream(5, rng=1).take(4).tolist()
    True
    """

    _UNIFORM_BLOCK = 4096

    def __init__(
        self,
        dataset: LetorDataset | int,
        *,
        order: Literal["uniform", "epochs"] = "uniform",
        rng: RNGLike,
    ) -> None:
        n_queries = dataset.n_queries if isinstance(dataset, LetorDataset) else dataset
        if (
            isinstance(n_queries, bool)
            or not isinstance(n_queries, int | np.integer)
            or n_queries < 1
        ):
            raise ValueError(f"the stream needs at least one query, got n_queries={n_queries!r}")
        if order not in ("uniform", "epochs"):
            raise ValueError(f"order must be 'uniform' or 'epochs', got {order!r}")
        self.n_queries = int(n_queries)
        self.order = order
        self._rng = as_rng(rng)
        self._block = np.empty(0, dtype=np.int64)
        self._position = 0
        self.n_taken = 0

    def _next_block(self) -> NDArray[np.int64]:
        if self.order == "uniform":
            return self._rng.integers(0, self.n_queries, size=self._UNIFORM_BLOCK, dtype=np.int64)
        return self._rng.permutation(self.n_queries).astype(np.int64)

    def take(self, n: int) -> NDArray[np.int64]:
        """The next ``n`` (>= 0) query indices, shape (n,)."""
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
            raise ValueError(f"n must be an integer >= 0, got {n!r}")
        parts = []
        need = int(n)
        while need:
            if self._position == self._block.size:
                self._block, self._position = self._next_block(), 0
            part = self._block[self._position : self._position + need]
            self._position += part.size
            need -= part.size
            parts.append(part)
        self.n_taken += int(n)
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def __iter__(self) -> Iterator[int]:
        return self

    def __next__(self) -> int:
        # The per-round path of the learning loops: no array building.
        if self._position == self._block.size:
            self._block, self._position = self._next_block(), 0
        self._position += 1
        self.n_taken += 1
        return int(self._block[self._position - 1])
