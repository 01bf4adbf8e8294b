"""Orders, ranks, and random permutations: uniform, Plackett–Luce and noisy QuickSort.

Vocabulary (DESIGN.md): an **order** lists item indices by position, ``order[0]``
is the top item (the papers' σ⁻¹, Chaudhuri & Tewari 2015 §2, or Ailon's output
read position by position); a **rank** is the position of each item, ``ranks[u]``
(σ(u) in Chaudhuri & Tewari, π(u) − 1 in Ailon 2014 §2, whose positions start
at 1). The two are inverse permutations; :func:`ranks_from_order` and
:func:`order_from_ranks` are the one helper that converts between them.

Every function works along the last axis and is batched over any leading axes
(a run axis ``B`` is the common case). Randomness comes only from the ``rng``
passed in, normalised with :func:`oltr.random.as_rng`; the same seed gives the
same output bit for bit.

The two noisy sorts of Ailon (2014) both satisfy Lemma 6.1: item ``u`` precedes
item ``v`` with probability ``e^{w(u)} / (e^{w(u)} + e^{w(v)})``. Plackett–Luce
(Algorithm 3) is sampled exactly by the Gumbel-max trick in one array step;
noisy QuickSort (Algorithm 2) is a recursion with no array form and runs as a
compiled loop over rows. Their full distributions over orders differ (Ailon §8: only
the Plackett–Luce procedure is an FPL with Gumbel noise).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.permutations.orders import (
        MAX_ENUMERATED_ITEMS,
        all_orders,
        order_from_ranks,
        order_from_scores,
        random_order,
        ranks_from_order,
        ranks_from_scores,
    )
    from oltr.permutations.runsorts import noisy_quicksort_runs, permutation_rows
    from oltr.permutations.sorts import noisy_quicksort, plackett_luce
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.permutations.orders": [
                "MAX_ENUMERATED_ITEMS",
                "all_orders",
                "order_from_ranks",
                "order_from_scores",
                "random_order",
                "ranks_from_order",
                "ranks_from_scores",
            ],
            "oltr.permutations.runsorts": ["noisy_quicksort_runs", "permutation_rows"],
            "oltr.permutations.sorts": ["noisy_quicksort", "plackett_luce"],
        },
    )

__all__ = [
    "MAX_ENUMERATED_ITEMS",
    "all_orders",
    "noisy_quicksort",
    "noisy_quicksort_runs",
    "permutation_rows",
    "order_from_ranks",
    "order_from_scores",
    "plackett_luce",
    "random_order",
    "ranks_from_order",
    "ranks_from_scores",
]
