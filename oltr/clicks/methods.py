"""Interleaving methods by name: build a comparison, interleave two lists, credit clicks."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from oltr.clicks.click_models import ClickModel, RNGs, normalize_rngs
from oltr.clicks.interleaving import Interleaving, balanced_interleave, team_draft_interleave
from oltr.clicks.probabilistic import probabilistic_interleave

__all__ = ["INTERLEAVING_METHODS", "compare", "interleave"]

#: Interleaving methods by name.
INTERLEAVING_METHODS: Mapping[str, Callable[..., Interleaving]] = MappingProxyType(
    {
        "team_draft": team_draft_interleave,
        "balanced": balanced_interleave,
        "probabilistic": probabilistic_interleave,
    }
)


def interleave(
    method: str, order_a: ArrayLike, order_b: ArrayLike, *, k: int = 10, rng: RNGs, **options: Any
) -> Interleaving:
    """Interleave with the method named ``method`` (a key of :data:`INTERLEAVING_METHODS`).

    ``options`` go to the method (e.g. ``tau`` for ``"probabilistic"``).
    """
    if method not in INTERLEAVING_METHODS:
        raise ValueError(
            f"unknown interleaving method {method!r}; valid methods are "
            f"{sorted(INTERLEAVING_METHODS)}"
        )
    return INTERLEAVING_METHODS[method](order_a, order_b, k=k, rng=rng, **options)


def compare(
    order_a: ArrayLike,
    order_b: ArrayLike,
    relevance: ArrayLike,
    click_model: ClickModel,
    *,
    method: str = "team_draft",
    k: int = 10,
    rng: RNGs,
    **options: Any,
) -> Any:
    """One interleaved comparison: interleave, simulate clicks, read the outcome.

    Parameters
    ----------
    order_a, order_b
        Orders of rankers A and B, shape (..., m).
    relevance
        Grades of the m items, shape (..., m), broadcast against the orders;
        seen only by the simulated user.
    click_model
        A click model from :mod:`oltr.clicks.click_models`.
    method
        ``"team_draft"`` (default), ``"balanced"`` or ``"probabilistic"``.
    k
        Length of the shown list (default 10).
    rng
        Seed/Generator, or one Generator per row of a 2-D batch; the interleaving
        draws first, then the clicks, from the same stream(s).
    options
        Passed to the interleaving method.

    Returns
    -------
    outcome
        int8 of the batch shape (a numpy scalar for 1-D orders): −1 A wins, 0 tie,
        +1 B wins.

    Examples
    --------
    >>> from oltr.clicks.click_models import cascade_model
    >>> good, bad = [0, 1, 2, 3], [3, 2, 1, 0]
    >>> int(compare(good, bad, [2, 2, 0, 0], cascade_model("perfect", n_grades=3), k=2,
    ...             rng=0))
    -1
    """
    # Normalise a seed once, so the clicks continue the interleaving's stream.
    rngs: np.random.Generator | list[np.random.Generator]
    if isinstance(rng, Sequence):
        rngs = list(rng)  # per-row Generators, checked by the interleaving call
    else:
        rngs = normalize_rngs(rng, ())
    il = interleave(method, order_a, order_b, k=k, rng=rngs, **options)
    rel = np.asarray(relevance)
    m = np.shape(order_a)[-1]
    if rel.ndim < 1 or rel.shape[-1] != m:
        raise ValueError(f"relevance must have shape (..., {m}) like the orders, got {rel.shape}")
    try:
        rel = np.broadcast_to(rel, il.shown.shape[:-1] + (m,))
    except ValueError as exc:
        raise ValueError(
            f"relevance of shape {rel.shape} does not broadcast to the orders' "
            f"batch shape {il.shown.shape[:-1]}"
        ) from exc
    clicks = click_model.simulate(np.take_along_axis(rel, il.shown, axis=-1), rngs)
    return il.outcome(clicks)
