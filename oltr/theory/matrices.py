"""Loss, feedback and signal matrices of the online ranking game.

The game of Chaudhuri & Tewari (2015) §5: the learner picks one of the ``m!``
orders of ``m`` items (its *actions*), the adversary picks a relevance vector in
``{0..n}^m`` (its *outcomes*). Playing order ``σ_i`` against ``r_j`` costs
``L[i, j]`` — the ranking measure — and shows the learner ``H[i, j]``, the
relevances of the top ``k`` items of ``σ_i`` (``k = 1``: ``H[i, j] = r_j(σ_i^{-1}(1))``).
Signal matrices (Definition 2; §14.1 for graded relevance) one-hot encode the
feedback: ``(S_i)[s, j] = 1(H[i, j] = s)``.

Orders of rows and columns
--------------------------
Rows (``row_order``):

- ``"ranks"`` (default, CT15 Tables 1–2): actions sorted lexicographically by
  their *rank vector* ``σ = (σ(1), …, σ(m))`` (the position of each item), so
  for ``m = 3`` the rows are ``123, 132, 213, 231, 312, 321``.
- ``"orders"``: actions sorted lexicographically by their *order* (item indices
  by position), i.e. :func:`oltr.permutations.all_orders`.

Columns (``col_order``):

- ``"lex"`` (default, CT15 Tables 1–2): relevance vectors in lexicographic
  order, item 1 most significant (``000, 001, 010, …, 111``).
- ``"weight"`` (the ``m = 4`` listing in CT15 §15): by total relevance, ties by
  the vector read from the last item backwards, descending
  (``0000, 0001, 0010, 0100, 1000, 0011, 0101, 1001, 0110, …``).
- or an explicit array of relevance vectors (a sub-game, or another paper's
  column order such as CT16 Table 1).

Gains and losses
----------------
``values`` holds the measure as :mod:`oltr.metrics` computes it (gain or loss);
``loss`` is ``values`` for a loss and ``-values`` for a gain. Every notion built
on the game (cells, neighbours, observability, indistinguishable pairs) is
invariant under adding a per-outcome constant and under positive scaling, so
``-gain`` and ``max - gain`` give the same answers.

Exactness
---------
For measures whose values are rationals with small denominators (SumLoss,
PairwiseLoss, Precision@k, AP, AUC) :meth:`RankingGame.exact_values` recovers
the exact :class:`fractions.Fraction` of every entry (the closest fraction with
denominator at most ``m^2 lcm(1..m)``, checked against the float to 1e-12).
Logarithmic measures (DCG, NDCG) stay in float64; decisions on them use the
documented tolerances of :mod:`oltr.theory.cells` and
:mod:`oltr.theory.observability`.

References
----------
Chaudhuri & Tewari (2015), "Online Ranking with Top-1 Feedback", §5 (loss and
feedback matrices, Definition 2, Tables 1–2), §14.1 (graded relevance), §15
(``m = 4`` column listing).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.metrics import get_measure
from oltr.permutations import all_orders, order_from_ranks, ranks_from_order
from oltr.theory.signals import signal_matrices

__all__ = [
    "MAX_ITEMS",
    "RATIONAL_MEASURES",
    "ColOrder",
    "RankingGame",
    "RowOrder",
    "enumerate_actions",
    "enumerate_outcomes",
    "feedback_codes",
    "game_from_matrices",
    "ranking_game",
]

RowOrder = Literal["ranks", "orders"]
ColOrder = Literal["lex", "weight"]

#: Largest number of items whose m! actions we enumerate (8! = 40320 rows).
MAX_ITEMS = 8

#: Measures (base names in ``oltr.metrics.MEASURES``) whose values are rationals
#: with denominators at most ``m^2 lcm(1..m)``: counts, counts over k, AP's sum of
#: c/i over the number of relevant items, AUC's count over #rel * #irrel.
RATIONAL_MEASURES = frozenset({"sumloss", "pairwise", "precision", "ap", "map", "auc"})


def _check_int(value: Any, name: str, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name} must be {rng}, got {value}")
    return int(value)


def enumerate_actions(n_items: int, row_order: RowOrder = "ranks") -> NDArray[np.intp]:
    """All ``n_items!`` actions as orders (item indices by position), in ``row_order``.

    Parameters
    ----------
    n_items
        Number of items ``m``, 1 <= m <= 8.
    row_order
        ``"ranks"`` (CT15 Table 1: lexicographic in the rank vector) or
        ``"orders"`` (lexicographic in the order).

    Returns
    -------
    orders
        Array of shape (m!, m); row ``i`` lists the items of action ``i`` best first.

    Examples
    --------
    >>> enumerate_actions(3)[4]          # σ_5 = 312: item 2 first, then 3, then 1
    array([1, 2, 0])
    """
    m = _check_int(n_items, "n_items", 1, MAX_ITEMS)
    lex = all_orders(m)
    if row_order == "orders":
        return lex
    if row_order == "ranks":
        # Lexicographic rank vectors are all_orders read as 0-based ranks.
        return order_from_ranks(lex)
    raise ValueError(f"row_order must be 'ranks' or 'orders', got {row_order!r}")


def enumerate_outcomes(
    n_items: int, max_grade: int = 1, col_order: ColOrder = "lex"
) -> NDArray[np.int64]:
    """All ``(max_grade + 1)^n_items`` relevance vectors, in ``col_order``.

    Parameters
    ----------
    n_items
        Number of items ``m >= 1``.
    max_grade
        Largest grade ``n >= 1``; grades are ``0..n``.
    col_order
        ``"lex"`` (CT15 Table 1) or ``"weight"`` (CT15 §15, ``m = 4`` listing).

    Returns
    -------
    outcomes
        Integer array of shape ((n+1)^m, m).

    Examples
    --------
    >>> ["".join(map(str, r)) for r in enumerate_outcomes(4, col_order="weight")[:7]]
    ['0000', '0001', '0010', '0100', '1000', '0011', '0101']
    """
    m = _check_int(n_items, "n_items", 1, MAX_ITEMS)
    n = _check_int(max_grade, "max_grade", 1)
    lex = np.array(list(itertools.product(range(n + 1), repeat=m)), dtype=np.int64)
    if col_order == "lex":
        return lex
    if col_order == "weight":
        # Key (total, reversed vector descending): np.lexsort sorts by the last key first.
        keys = [-lex[:, j] for j in range(m)] + [lex.sum(axis=1)]
        return lex[np.lexsort(keys)]
    raise ValueError(f"col_order must be 'lex' or 'weight' or an array, got {col_order!r}")


def _check_outcomes(outcomes: ArrayLike, n_items: int, max_grade: int) -> NDArray[np.int64]:
    arr = np.asarray(outcomes)
    if arr.ndim != 2 or arr.shape[1] != n_items or arr.shape[0] == 0:
        raise ValueError(f"outcomes must have shape (n_outcomes >= 1, {n_items}), got {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError("outcomes must hold integer grades")
    out = arr.astype(np.int64)
    if out.min() < 0 or out.max() > max_grade:
        raise ValueError(
            f"outcomes must hold grades in [0, {max_grade}], got range [{out.min()}, {out.max()}]"
        )
    if len(np.unique(out, axis=0)) != len(out):
        raise ValueError("outcomes must not repeat a relevance vector")
    return out


def feedback_codes(
    actions: NDArray[np.intp], outcomes: NDArray[np.int64], k: int, max_grade: int
) -> NDArray[np.int64]:
    """Top-``k`` feedback matrix ``H``: the code of ``(r(σ^{-1}(1)), …, r(σ^{-1}(k)))``.

    The code reads the top-k relevances as digits in base ``max_grade + 1``, the
    top item most significant; for ``k = 1`` it is the relevance of the top item
    (CT15 Table 2, ``H_{i,j} = r_j(σ_i^{-1}(1))``).
    """
    top = outcomes[:, actions[:, :k]]  # (n_outcomes, n_actions, k)
    weights = (max_grade + 1) ** np.arange(k - 1, -1, -1, dtype=np.int64)
    return np.ascontiguousarray((top @ weights).T)


def _rationalize(values: NDArray[np.float64], bound: int) -> NDArray[np.object_]:
    """Exact fractions of ``values`` (denominators <= ``bound``), checked to 1e-12."""
    flat = [Fraction(float(v)).limit_denominator(bound) for v in values.ravel()]
    exact = np.empty(values.size, dtype=object)
    exact[:] = flat
    err = np.abs(values.ravel() - np.array([float(f) for f in flat]))
    if err.size and float(err.max()) > 1e-12 * max(1.0, float(np.abs(values).max())):
        raise ValueError(
            "measure values are not rationals with denominator <= "
            f"{bound} (max error {err.max():.3g}); report a bug in oltr.metrics"
        )
    return exact.reshape(values.shape)


@dataclass(frozen=True, eq=False)
class RankingGame:
    """A finite partial-monitoring game: measure values, feedback and labels.

    Attributes
    ----------
    measure
        Name of the measure (``"custom"`` for hand-typed matrices).
    kind
        ``"loss"`` or ``"gain"``: how to read ``values``.
    values
        Array of shape (n_actions, n_outcomes): the measure of action i on outcome j.
    feedback
        Integer array of the same shape: the feedback symbol ``H[i, j]`` in ``0..n_symbols-1``.
    n_symbols
        Number of distinct feedback symbols (rows of each signal matrix).
    actions
        Orders of shape (n_actions, m), or None for hand-typed matrices.
    outcomes
        Relevance vectors of shape (n_outcomes, m), or None for hand-typed matrices.
    k
        Number of top items whose relevance is revealed (0 for hand-typed matrices).
    max_grade
        Largest relevance grade ``n``.
    rational
        Whether :meth:`exact_values` recovers exact fractions.
    """

    measure: str
    kind: str
    values: NDArray[np.float64]
    feedback: NDArray[np.int64]
    n_symbols: int
    actions: NDArray[np.intp] | None = None
    outcomes: NDArray[np.int64] | None = None
    k: int = 0
    max_grade: int = 1
    rational: bool = False
    labels: tuple[tuple[str, ...], tuple[str, ...]] | None = field(default=None, repr=False)

    @property
    def n_actions(self) -> int:
        """Number of learner actions (rows)."""
        return int(self.values.shape[0])

    @property
    def n_outcomes(self) -> int:
        """Number of adversary outcomes (columns)."""
        return int(self.values.shape[1])

    @cached_property
    def loss(self) -> NDArray[np.float64]:
        """Loss matrix used for the analysis: ``values``, or ``-values`` for a gain."""
        out = self.values if self.kind == "loss" else -self.values
        out = np.array(out, dtype=np.float64)
        out.setflags(write=False)
        return out

    def exact_values(self) -> NDArray[np.object_] | None:
        """Exact :class:`~fractions.Fraction` values, or None for non-rational measures."""
        return self._exact

    @cached_property
    def _exact(self) -> NDArray[np.object_] | None:
        if not self.rational:
            return None
        m = 1 if self.actions is None else self.actions.shape[1]
        return _rationalize(self.values, m * m * math.lcm(*range(1, m + 1)))

    def exact_loss(self) -> NDArray[np.object_] | None:
        """Exact loss (``-values`` for a gain), or None for non-rational measures."""
        ex = self.exact_values()
        return None if ex is None else (ex if self.kind == "loss" else -ex)

    @cached_property
    def action_labels(self) -> tuple[str, ...]:
        """Rank-vector labels of the actions (``"312"``: item 1 at position 3, …)."""
        if self.labels is not None:
            return self.labels[0]
        assert self.actions is not None
        sep = "" if self.actions.shape[1] <= 9 else ","
        ranks = ranks_from_order(self.actions) + 1
        return tuple(sep.join(map(str, r)) for r in ranks)

    @cached_property
    def outcome_labels(self) -> tuple[str, ...]:
        """Relevance-vector labels of the outcomes (``"101"``)."""
        if self.labels is not None:
            return self.labels[1]
        assert self.outcomes is not None
        sep = "" if self.max_grade <= 9 else ","
        return tuple(sep.join(map(str, r)) for r in self.outcomes)

    def symbol_label(self, code: int) -> str:
        """Feedback symbol as the top-k relevances it encodes (``"10"`` for k = 2)."""
        if self.k <= 1:
            return str(int(code))
        digits = []
        for _ in range(self.k):
            code, d = divmod(int(code), self.max_grade + 1)
            digits.append(str(d))
        return "".join(reversed(digits))

    def signal_matrices(self) -> NDArray[np.int8]:
        """Signal matrices ``S_i`` of all actions, shape (n_actions, n_symbols, n_outcomes)."""
        return signal_matrices(self.feedback, self.n_symbols)


def game_from_matrices(
    values: ArrayLike,
    feedback: ArrayLike,
    *,
    kind: Literal["loss", "gain"] = "loss",
    action_labels: Sequence[str] | None = None,
    outcome_labels: Sequence[str] | None = None,
) -> RankingGame:
    """A game from hand-typed loss (or gain) and feedback matrices.

    Parameters
    ----------
    values
        Array of shape (n_actions, n_outcomes), finite.
    feedback
        Integer array of the same shape (feedback symbols ``0, 1, …``).
    kind
        ``"loss"`` or ``"gain"``.
    action_labels, outcome_labels
        Optional names of rows and columns (default ``"1", "2", …``).

    Examples
    --------
    >>> g = game_from_matrices([[0, 1], [1, 0]], [[0, 0], [0, 0]])
    >>> g.n_actions, g.n_outcomes, g.n_symbols
    (2, 2, 1)
    """
    v = np.asarray(values, dtype=np.float64)
    h = np.asarray(feedback)
    if v.ndim != 2 or v.size == 0:
        raise ValueError(f"values must be a non-empty 2-D array, got shape {v.shape}")
    if h.shape != v.shape:
        raise ValueError(f"feedback must have the shape of values {v.shape}, got {h.shape}")
    if not np.all(np.isfinite(v)):
        raise ValueError("values must be finite")
    if kind not in ("loss", "gain"):
        raise ValueError(f"kind must be 'loss' or 'gain', got {kind!r}")
    signal_matrices(h)  # validates the symbols
    rows = (
        tuple(action_labels)
        if action_labels is not None
        else tuple(str(i + 1) for i in range(v.shape[0]))
    )
    cols = (
        tuple(outcome_labels)
        if outcome_labels is not None
        else tuple(str(j + 1) for j in range(v.shape[1]))
    )
    if len(rows) != v.shape[0] or len(cols) != v.shape[1]:
        raise ValueError("action_labels/outcome_labels must match the shape of values")
    return RankingGame(
        measure="custom",
        kind=kind,
        values=v,
        feedback=h.astype(np.int64),
        n_symbols=int(h.max()) + 1,
        labels=(rows, cols),
    )


def _resolve_measure(
    measure: str | Callable[..., Any],
) -> tuple[str, str, str, Callable[..., Any]]:
    """(label, base name, kind, callable) of a measure such as ``"ndcg"`` or ``"precision@2"``."""
    if isinstance(measure, str):
        resolved = get_measure(measure)
        return resolved.label, resolved.name, str(resolved.kind), resolved
    kind = getattr(measure, "kind", None)
    if kind not in ("loss", "gain") or not callable(measure):
        raise TypeError(
            "a measure must be a name or a callable with .kind 'loss' or 'gain', "
            f"got {type(measure).__name__}"
        )
    name = str(getattr(measure, "label", getattr(measure, "name", "custom")))
    return name, str(getattr(measure, "name", "custom")), str(kind), measure


def ranking_game(
    measure: str | Callable[..., Any],
    n_items: int,
    *,
    k: int = 1,
    max_grade: int = 1,
    row_order: RowOrder = "ranks",
    col_order: ColOrder | ArrayLike = "lex",
    **measure_kwargs: Any,
) -> RankingGame:
    """The online ranking game of a measure under top-``k`` feedback (CT15 §5, §14.1).

    ``values[i, j] = measure(r_j, σ_i)``, ``feedback[i, j]`` = code of the top-k
    relevances of ``σ_i`` under ``r_j`` (see :func:`feedback_codes`).

    Parameters
    ----------
    measure
        A name understood by :func:`oltr.metrics.get_measure` (``"sumloss"``,
        ``"dcg"``, ``"ndcg"``, ``"ap"``, ``"auc"``, ``"precision@2"``, …) or a
        measure object with ``.kind`` called as ``measure(relevance, order)``.
    n_items
        Number of items ``m``, 1 <= m <= 8.
    k
        Feedback depth, 1 <= k <= m (CT15 studies k = 1).
    max_grade
        Largest relevance grade ``n >= 1`` (binary relevance: 1).
    row_order, col_order
        See the module docstring; ``col_order`` may be an explicit
        (n_outcomes, m) array of relevance vectors.
    **measure_kwargs
        Passed to the measure (e.g. ``no_relevant=1.0``).

    Returns
    -------
    RankingGame

    References
    ----------
    Chaudhuri & Tewari (2015) §5 (Tables 1–2) and §14.1.
    """
    m = _check_int(n_items, "n_items", 1, MAX_ITEMS)
    k = _check_int(k, "k", 1, m)
    n = _check_int(max_grade, "max_grade", 1)
    name, base, kind, fn = _resolve_measure(measure)
    actions = enumerate_actions(m, row_order)
    if isinstance(col_order, str):
        outcomes = enumerate_outcomes(m, n, col_order)  # type: ignore[arg-type]
    else:
        outcomes = _check_outcomes(col_order, m, n)
    # One relevance vector against every order: (n_outcomes, 1, m) x (1, n_actions, m).
    vals = np.asarray(
        fn(outcomes[:, None, :], actions[None, :, :], **measure_kwargs), dtype=np.float64
    )
    if vals.shape != (len(outcomes), len(actions)):
        raise ValueError(
            f"measure {name!r} returned shape {vals.shape}, "
            f"expected {(len(outcomes), len(actions))}"
        )
    if not np.all(np.isfinite(vals)):
        bad = np.argwhere(~np.isfinite(vals))[0]
        raise ValueError(
            f"measure {name!r} is not finite on relevance "
            f"{outcomes[bad[0]].tolist()}; pass no_relevant=… for empty lists"
        )
    values = np.ascontiguousarray(vals.T)
    values.setflags(write=False)
    return RankingGame(
        measure=name,
        kind=kind,
        values=values,
        feedback=feedback_codes(actions, outcomes, k, n),
        n_symbols=(n + 1) ** k,
        actions=actions,
        outcomes=outcomes,
        k=k,
        max_grade=n,
        rational=base in RATIONAL_MEASURES,
    )
