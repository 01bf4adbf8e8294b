"""The service's resource limits: what one request or definition may ask, and each refusal.

Every limit has an ``oltr serve`` option that raises it, and every refusal
names both, so that whoever meets one knows which knob to turn:

* ``--max-cells``: rows × features of one rank request. The features become a
  float64 matrix, 8 bytes a cell, kept with the impression until its feedback:
  the default, 1,000,000 cells, is 8 MB per list.
* ``--max-items`` and ``--max-features``: ``n_items`` and ``n_features`` of a
  ranker's definition. A fixed-item learner holds and sorts ``n_items`` items on
  every request (and answers their order); a linear learner holds a weight
  vector of ``n_features``.
* ``--max-pending-bytes``: the memory that pending impressions (features,
  orders, shown list) take in the service, over all rankers. Beyond it the
  oldest are dropped from memory, not from the store: their feedback is still
  accepted and reads them back (:class:`PendingBudget`).

A refused request changes nothing: the checks run before the ranker is touched.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from oltr.serve.protocol import RequestError

__all__ = ["ITEM_BYTES", "Limits", "PendingBudget"]

#: Bytes an item index takes in an impression's orders or shown list (a Python int and its
#: slot in a list): what a ranker charges per entry.
ITEM_BYTES = 36


@dataclass(frozen=True)
class Limits:
    """The per-request and per-definition limits of a service (see the module docstring)."""

    max_cells: int = 1_000_000
    max_items: int = 10_000
    max_features: int = 100_000
    max_pending_bytes: int = 64 << 20

    def __post_init__(self) -> None:
        for name in ("max_cells", "max_items", "max_features", "max_pending_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                option = "--" + name.replace("_", "-")
                raise ValueError(f"{option} must be a whole number >= 1, got {value!r}")

    def check_definition(self, n_items: int | None, n_features: int | None) -> None:
        """Refuse (422) a definition whose ``n_items`` or ``n_features`` exceeds its limit."""
        if n_items is not None and n_items > self.max_items:
            raise RequestError(
                f"n_items {n_items} exceeds the limit of {self.max_items} items a ranker may "
                "hold (oltr serve --max-items raises it)",
                422,
            )
        if n_features is not None and n_features > self.max_features:
            raise RequestError(
                f"n_features {n_features} exceeds the limit of {self.max_features} features "
                "(oltr serve --max-features raises it)",
                422,
            )

    def check_cells(self, features: Any) -> int:
        """The rows × features of a rank request; 413 beyond ``max_cells``.

        ``features``: rows (lists) or a matrix; None or empty passes (refused later) as 0.
        """
        if features is None or len(features) == 0:
            return 0
        if isinstance(features, np.ndarray):
            cells = int(features.size)
        else:
            cells = sum(len(row) for row in features)
        if cells > self.max_cells:
            raise RequestError(
                f"a list of {len(features)} rows and {cells} feature values exceeds the limit "
                f"of {self.max_cells} cells (rows x features) per request "
                "(oltr serve --max-cells raises it)",
                413,
            )
        return cells


class PendingBudget:
    """Bytes of pending impressions held in memory, over every ranker of a service.

    A ranker :meth:`charge`\\ s each impression it keeps and :meth:`release`\\ s it
    when it drops it; :meth:`over` says whether the total exceeds the limit, in
    which case the ranker drops its own oldest until it does not (or holds none).
    Since the total never exceeds the limit after a ranker has done so, it never
    exceeds it by more than what that ranker added, and that it drops at once.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._lock = threading.Lock()

    def charge(self, size: int) -> None:
        """Count ``size`` more bytes."""
        with self._lock:
            self.total += size

    def release(self, size: int) -> None:
        """Count ``size`` bytes fewer."""
        with self._lock:
            self.total -= size

    def over(self) -> bool:
        """Whether the bytes counted exceed the limit."""
        with self._lock:
            return self.total > self.limit
