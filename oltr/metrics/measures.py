"""Measure names: the ``"ndcg@10"`` grammar, gain or loss, and ranking by scores.

:func:`get_measure` resolves a name to a :class:`Measure`; :func:`from_scores`
ranks by scores (ties: lower index first) and applies one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from oltr.metrics.aggregation import position_loss, spearman_rho
from oltr.metrics.lists import Value, _check_k, _first
from oltr.metrics.pairwise import auc, pairwise_loss, sum_loss
from oltr.metrics.ranking import average_precision, dcg, err, ndcg, precision

__all__ = ["MEASURES", "Measure", "from_scores", "get_measure", "resolve_measures"]


# ---------------------------------------------------------------------------
# input handling


# ---------------------------------------------------------------------------
# measures


# ---------------------------------------------------------------------------
# registry


@dataclass(frozen=True)
class Measure:
    """A ranking measure, marked gain or loss, with its cutoff and keywords bound.

    Calling it calls ``fn(relevance, order, k=k, **kwargs, **call_keywords)``;
    ``sign * value`` (``sign`` = +1 for gains, −1 for losses) is higher when better.

    Examples
    --------
    >>> m = get_measure("ndcg@2")
    >>> m.kind, m.label, m.sign, round(float(m([0, 1, 0], [0, 1, 2])), 4)
    ('gain', 'ndcg@2', 1.0, 0.6309)
    """

    name: str
    kind: Literal["gain", "loss"]
    fn: Callable[..., Value] = field(repr=False)
    k: int | None = None
    takes_k: bool = False
    needs_k: bool = False
    kwargs: Mapping[str, Any] = field(default_factory=dict, compare=False)
    _call_keywords: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        bound = dict(self.kwargs)
        object.__setattr__(self, "kwargs", MappingProxyType(bound))  # read-only
        # What every call passes, merged once (the runner calls a measure every round).
        object.__setattr__(
            self, "_call_keywords", bound if self.k is None else {**bound, "k": self.k}
        )
        if self.kind not in ("gain", "loss"):
            raise ValueError(f"kind must be 'gain' or 'loss', got {self.kind!r}")
        if self.k is not None and not self.takes_k:
            raise ValueError(f"measure {self.name!r} takes no cutoff k, got k={self.k}")
        _check_k(self.k)

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only kwargs view cannot be pickled; rebuild from a plain dict
        # (worker processes receive measures this way).
        return (
            Measure,
            (self.name, self.kind, self.fn, self.k, self.takes_k, self.needs_k, dict(self.kwargs)),
        )

    @property
    def label(self) -> str:
        """The string that :func:`get_measure` parses back, e.g. ``"ndcg@10"``."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    @property
    def sign(self) -> float:
        """+1.0 for a gain, −1.0 for a loss."""
        return 1.0 if self.kind == "gain" else -1.0

    def __call__(self, relevance: ArrayLike, order: ArrayLike, **kw: Any) -> Value:
        args = {**self._call_keywords, **kw}  # a call's own keywords win
        if self.needs_k and args.get("k") is None:
            raise ValueError(f"measure {self.name!r} needs a cutoff: use '{self.name}@k'")
        return self.fn(relevance, order, **args)


MEASURES: dict[str, Measure] = {
    "dcg": Measure("dcg", "gain", dcg, takes_k=True),
    "ndcg": Measure("ndcg", "gain", ndcg, takes_k=True),
    "precision": Measure("precision", "gain", precision, takes_k=True, needs_k=True),
    "ap": Measure("ap", "gain", average_precision),
    "auc": Measure("auc", "loss", auc),
    "sumloss": Measure("sumloss", "loss", sum_loss),
    "pairwise": Measure("pairwise", "loss", pairwise_loss),
    "err": Measure("err", "gain", err, takes_k=True),
    # Ailon 2014: position-weighted loss ℓ_z (eq. 2.1, §8) and Spearman's ρ (§5).
    "position": Measure("position", "loss", position_loss, takes_k=True),
    "spearman": Measure("spearman", "gain", spearman_rho),
}
_ALIASES = {"map": "ap", "p": "precision", "prec": "precision", "pairwiseloss": "pairwise"}
_GRAMMAR = re.compile(r"^\s*([a-z_]+)\s*(?:@\s*(\d+))?\s*$")


def get_measure(spec: str | Measure) -> Measure:
    """Resolve ``"name"`` or ``"name@k"`` (case-insensitive) to a :class:`Measure`.

    Names are the keys of :data:`MEASURES`, plus the aliases ``map`` (= ``ap``; MAP is
    the mean of AP over queries), ``p``/``prec`` (= ``precision``) and ``pairwiseloss``.

    Examples
    --------
    >>> get_measure("NDCG@10").label, get_measure("map").name
    ('ndcg@10', 'ap')
    """
    if isinstance(spec, Measure):
        return spec
    if not isinstance(spec, str):
        raise TypeError(
            f"a measure is a str like 'ndcg@10' or a Measure, got {type(spec).__name__}"
        )
    match = _GRAMMAR.match(spec.lower())
    valid = ", ".join(sorted(MEASURES))
    if match is None:
        raise ValueError(
            f"cannot parse measure {spec!r}: expected 'name' or 'name@k' with name in {valid}"
        )
    name, k = _ALIASES.get(match[1], match[1]), match[2]
    if name not in MEASURES:
        raise ValueError(
            f"unknown measure {match[1]!r} in {spec!r}; valid names: {valid} "
            f"(aliases: {', '.join(sorted(_ALIASES))})"
        )
    measure = MEASURES[name]
    if k is None:
        return measure
    if not measure.takes_k:
        raise ValueError(f"measure {name!r} takes no cutoff, got {spec!r}")
    return replace(measure, k=int(k))


def from_scores(
    measure: str | Measure,
    relevance: ArrayLike,
    scores: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    **kw: Any,
) -> Value:
    """Evaluate ``measure`` on the order of decreasing ``scores``.

    Ties are broken by the lower item index first (a stable sort of ``-scores``),
    the same rule as :func:`oltr.permutations.order_from_scores` without ``rng``.

    Parameters
    ----------
    measure : a :class:`Measure` or a string for :func:`get_measure`.
    relevance, mask : as in :func:`dcg`.
    scores : real array of shape (..., m); NaN only at padded entries.
    **kw : passed to the measure (``k``, ``no_relevant``, ...).

    Examples
    --------
    >>> print(from_scores("precision@1", [0, 1, 0], [0.5, 0.9, 0.9]))  # item 1 wins the tie
    1.0
    """
    s = np.asarray(scores)
    if s.dtype == np.bool_ or not np.issubdtype(s.dtype, np.number) or np.iscomplexobj(s):
        raise TypeError(f"scores must be a real numeric array, got dtype {s.dtype}")
    if s.ndim == 0:
        raise ValueError("scores must have at least one axis (items last)")
    if s.shape[-1] != np.shape(relevance)[-1]:
        raise ValueError(f"scores has {s.shape[-1]} items, relevance {np.shape(relevance)[-1]}")
    s = s.astype(np.float64)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)  # padded items sink
    if np.isnan(s).any():
        raise ValueError(f"scores contain NaN at real item {_first(np.isnan(s))}")
    order = np.argsort(-s, axis=-1, kind="stable")
    return get_measure(measure)(relevance, order, mask=mask, **kw)


def resolve_measures(measures: Mapping[str, Any] | Sequence[str]) -> dict[str, Measure]:
    """Measure strings (or a name -> measure mapping) as a name -> :class:`Measure` dict.

    >>> sorted(resolve_measures(["ndcg@3", "dcg"]))
    ['dcg', 'ndcg@3']
    """
    if isinstance(measures, Mapping):
        return {str(k): get_measure(v) for k, v in measures.items()}
    if isinstance(measures, str):
        raise TypeError("measures must be a sequence of measure strings, not one string")
    return {m: get_measure(m) for m in measures}
