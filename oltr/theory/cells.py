"""Cells, Pareto-optimal actions and neighbours of a finite game, by linear programming.

For a loss matrix ``L`` (rows ``ℓ_i``, ``N`` outcomes) and the probability
simplex ``Δ`` over outcomes (CT15 §5):

- the *cell* of action ``i`` is ``C_i = {p ∈ Δ : ℓ_i·p ≤ ℓ_j·p for all j}``
  (Definition 1);
- ``i`` is *Pareto-optimal* if ``C_i`` has dimension ``N − 1``, the dimension of
  ``Δ`` itself (Definition 1);
- Pareto-optimal ``i, j`` are *neighbours* if ``C_i ∩ C_j`` has dimension
  ``N − 2`` (Definition 4), and their *neighbourhood action set* is
  ``N⁺_{ij} = {k : C_i ∩ C_j ⊆ C_k}``.

Everything is computed from these definitions with HiGHS
(:func:`scipy.optimize.linprog`).

- *Pareto optimality*: ``C_i`` is full-dimensional in ``Δ`` iff one point meets
  every constraint of ``C_i`` strictly — one LP maximising a common slack.
- *Neighbours* (default ``method="facets"``): for full-dimensional ``C_i``, the
  face ``C_i ∩ C_j = {p ∈ C_i : ℓ_i·p = ℓ_j·p}`` has dimension ``N − 2`` iff the
  halfspace ``ℓ_i·p ≤ ℓ_j·p`` defines a facet, i.e. iff dropping it (with every
  positively proportional row) enlarges ``C_i`` — one LP per pair. ``N⁺_{ij}`` is
  then ``i``, ``j`` and the ``k`` with ``ℓ_i − ℓ_k`` positively proportional to
  ``ℓ_i − ℓ_j``: a linear function ``≥ 0`` on ``C_i`` that vanishes on the whole
  facet must be a non-negative multiple of the facet's normal.
- *Direct dimensions* (:func:`polytope_face`, ``method="faces"``, used for
  non-Pareto cells and as a cross-check): ``P = {x : Gx ≤ h, Ax = b}`` has
  dimension ``n − rank([A; G_I])``, ``G_I`` its *implicit equalities* (rows tight
  on all of ``P``): maximise ``Σ s_i`` over undecided rows subject to
  ``Gx + s ≤ h``, ``0 ≤ s ≤ 1``; rows with ``s_i > 0`` are not implicit, and once
  the optimum is 0 every undecided row is. Averaging the optima gives a
  relative-interior point, and ``C_i ∩ C_j ⊆ C_k`` iff the row of ``k`` is an
  implicit equality of ``C_i ∩ C_j``.

Duplicate actions
-----------------
Actions with identical loss rows (e.g. the orders of Precision@k that share the
top-k set) have identical cells. They are grouped into *classes*: cells, Pareto
optimality and neighbours are computed per class; two duplicates are never
neighbours (their intersection is the full cell, of dimension ``N − 1``), and
``N⁺_{ij}`` lists every member of every class whose cell contains
``C_i ∩ C_j`` — duplicates included, as Bartók et al. (2014) define it. Rows
are duplicates when exactly equal (rational measures) or within ``atol``.

Tolerances
----------
HiGHS runs with feasibility tolerances 1e-10; a slack counts as positive above
``slack_tol = 1e-7`` (rows are scaled to unit norm, slacks capped at 1); ranks
use numpy's default SVD threshold on unit rows.

References
----------
Chaudhuri & Tewari (2015) §5 (Definition 1), §6.2 (Definition 4), §12
(Lemmas 2–3); Bartók, Foster, Pál, Rakhlin & Szepesvári (2014), "Partial
monitoring — classification, regret bounds, and algorithms", §2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from oltr.theory.faces import _HIGHS, SLACK_TOL, polytope_face
from oltr.theory.matrices import RankingGame

__all__ = ["DEFAULT_ATOL", "CellStructure", "action_classes", "cell_structure"]

#: Loss rows closer than this (max-norm) are duplicates when no exact values exist.
DEFAULT_ATOL = 1e-9


def action_classes(
    game: RankingGame | ArrayLike, *, atol: float = DEFAULT_ATOL
) -> tuple[tuple[int, ...], ...]:
    """Group actions with identical loss rows (duplicates), in order of first appearance.

    Exact equality is used when the game has exact values, else max-norm ``atol``.

    Examples
    --------
    >>> action_classes(np.array([[0, 1], [1, 0], [0, 1]]))
    ((0, 2), (1,))
    """
    if isinstance(game, RankingGame):
        exact = game.exact_loss()
        if exact is not None:
            groups: dict[tuple[Any, ...], list[int]] = {}
            for i, row in enumerate(exact):
                groups.setdefault(tuple(row), []).append(i)
            return tuple(tuple(g) for g in groups.values())
        loss = game.loss
    else:
        loss = np.asarray(game, dtype=np.float64)
    reps: list[int] = []
    members: list[list[int]] = []
    for i, row in enumerate(loss):
        if reps:
            close = np.flatnonzero(np.abs(loss[reps] - row).max(axis=1) <= atol)
            if close.size:
                members[int(close[0])].append(i)
                continue
        reps.append(i)
        members.append([i])
    return tuple(tuple(g) for g in members)


@dataclass(frozen=True)
class CellStructure:
    """Cells, Pareto optimality and neighbours of a game, per class of duplicate actions.

    Attributes
    ----------
    classes
        Tuples of action indices with identical loss rows.
    cell_dim
        Dimension of each class's cell (-1: empty).
    pareto
        Whether each class is Pareto-optimal (cell of dimension ``n_outcomes - 1``).
    interior
        A relative-interior point of each class's cell (NaN rows for empty cells).
    neighbours
        Pairs ``(a, b)``, ``a < b``, of neighbouring classes (Definition 4).
    neighbourhood
        For each neighbour pair, the actions of ``N⁺`` (all members of every class
        whose cell contains ``C_a ∩ C_b``, duplicates included).
    n_outcomes
        Number of outcomes ``N``.
    n_lp
        Number of linear programs solved.
    """

    classes: tuple[tuple[int, ...], ...]
    cell_dim: NDArray[np.int64]
    pareto: NDArray[np.bool_]
    interior: NDArray[np.float64]
    neighbours: tuple[tuple[int, int], ...]
    neighbourhood: dict[tuple[int, int], tuple[int, ...]]
    n_outcomes: int
    n_lp: int

    @property
    def class_of(self) -> NDArray[np.intp]:
        """Class index of every action."""
        out = np.empty(sum(len(c) for c in self.classes), dtype=np.intp)
        for c, members in enumerate(self.classes):
            out[list(members)] = c
        return out

    @property
    def pareto_actions(self) -> tuple[int, ...]:
        """All Pareto-optimal actions (members of Pareto-optimal classes), sorted."""
        return tuple(
            sorted(a for c, ok in zip(self.classes, self.pareto, strict=True) if ok for a in c)
        )

    def neighbour_action_pairs(self) -> tuple[tuple[int, int], ...]:
        """All neighbouring action pairs ``(i, j)``, ``i < j`` (members of neighbour classes)."""
        pairs = {
            tuple(sorted((i, j)))
            for a, b in self.neighbours
            for i in self.classes[a]
            for j in self.classes[b]
        }
        return tuple(sorted(pairs))  # type: ignore[arg-type]


def _loss_of(game: RankingGame | ArrayLike) -> NDArray[np.float64]:
    loss = game.loss if isinstance(game, RankingGame) else np.asarray(game, dtype=np.float64)
    if loss.ndim != 2 or loss.size == 0 or not np.all(np.isfinite(loss)):
        raise ValueError(f"the loss matrix must be a finite non-empty 2-D array, got {loss.shape}")
    return loss


def _cell_rows(reps: NDArray[np.float64], a: int) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """Unit rows of ``C_a``: ``ℓ_a − ℓ_c ≤ 0`` for classes c ≠ a, then ``−p_j ≤ 0``.

    Returns the rows and, per row, its class (``-1`` for a non-negativity row).
    """
    k, n = reps.shape
    others = np.array([c for c in range(k) if c != a], dtype=np.intp)
    rows = np.vstack([reps[a] - reps[others], -np.eye(n)])
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows, np.concatenate([others, np.full(n, -1, dtype=np.intp)])


def _direction_groups(rows: NDArray[np.float64], tol: float) -> list[list[int]]:
    """Group unit rows that are equal (positively proportional halfspaces through 0)."""
    groups: list[list[int]] = []
    heads: list[int] = []
    for i, row in enumerate(rows):
        if heads:
            close = np.flatnonzero(np.abs(rows[heads] - row).max(axis=1) <= tol)
            if close.size:
                groups[int(close[0])].append(i)
                continue
        heads.append(i)
        groups.append([i])
    return groups


def _max_slack_point(rows: NDArray[np.float64], n: int) -> tuple[float, NDArray[np.float64]]:
    """max t s.t. rows·p + t ≤ 0, Σp = 1 (rows include −p_j ≤ 0): the cell's inradius proxy."""
    a_ub = np.hstack([rows, np.ones((len(rows), 1))])
    a_eq = np.hstack([np.ones((1, n)), np.zeros((1, 1))])
    cost = np.zeros(n + 1)
    cost[-1] = -1.0
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(len(rows)),
        A_eq=a_eq,
        b_eq=[1.0],
        bounds=[(None, None)] * n + [(None, 1.0)],
        method="highs",
        options=_HIGHS,
    )
    if res.status == 2:
        return -np.inf, np.full(n, np.nan)
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on a cell LP: {res.message}")
    return float(res.x[-1]), res.x[:n]


def _enlarges(rows: NDArray[np.float64], drop: list[int], n: int, slack_tol: float) -> bool:
    """Whether dropping the rows ``drop`` (one halfspace) enlarges the cell: a facet test."""
    keep = np.setdiff1d(np.arange(len(rows)), drop)
    res = linprog(
        -rows[drop[0]],
        A_ub=rows[keep],
        b_ub=np.zeros(len(keep)),
        A_eq=np.ones((1, n)),
        b_eq=[1.0],
        bounds=[(None, None)] * n,
        method="highs",
        options=_HIGHS,
    )
    if res.status == 3:  # unbounded: the dropped row was binding somewhere
        return True
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on a facet LP: {res.message}")
    return bool(-res.fun > slack_tol)


def cell_structure(
    game: RankingGame | ArrayLike,
    *,
    atol: float = DEFAULT_ATOL,
    slack_tol: float = SLACK_TOL,
    neighbours: bool = True,
    method: Literal["facets", "faces"] = "facets",
) -> CellStructure:
    """Cells, Pareto-optimal classes, neighbours and neighbourhood sets (Definitions 1 and 4).

    Pareto optimality: ``C_a`` is full-dimensional in ``Δ`` iff one point satisfies
    every constraint of ``C_a`` strictly (an LP maximising a common slack ``t``;
    ``t > slack_tol``). Non-Pareto cells get their exact dimension from
    :func:`polytope_face`.

    Neighbours, ``method="facets"`` (default): for Pareto ``a``, ``C_a ∩ C_b`` has
    dimension ``N − 2`` iff the halfspace ``ℓ_a·p ≤ ℓ_b·p`` defines a facet of the
    full-dimensional ``C_a``, i.e. iff dropping it (with every positively
    proportional row) enlarges ``C_a`` — one LP per pair. ``N⁺_{ab}`` is then ``a``,
    ``b`` and the classes ``c`` with ``ℓ_a − ℓ_c`` positively proportional to
    ``ℓ_a − ℓ_b``: exactly those with ``ℓ_c = ℓ_a`` on the facet.
    ``method="faces"`` computes ``dim(C_a ∩ C_b)`` and ``N⁺`` directly with
    :func:`polytope_face` (2–3 larger LPs per pair; used to cross-check).

    Parameters
    ----------
    game
        A :class:`~oltr.theory.matrices.RankingGame` or a loss matrix (n_actions, n_outcomes).
    atol
        Duplicate tolerance when exact values are unavailable; also the tolerance
        for proportional constraint rows.
    slack_tol
        Positive-slack threshold of the LPs.
    neighbours
        Compute neighbours and neighbourhood sets (False: cells only).
    method
        ``"facets"`` or ``"faces"``.

    Returns
    -------
    CellStructure

    References
    ----------
    Chaudhuri & Tewari (2015) Definitions 1 and 4; Bartók et al. (2014) §2.

    Examples
    --------
    Matching pennies with full feedback: both actions are Pareto-optimal neighbours.

    >>> cs = cell_structure(np.array([[0.0, 1.0], [1.0, 0.0]]))
    >>> cs.pareto.tolist(), cs.neighbours
    ([True, True], ((0, 1),))
    """
    if method not in ("facets", "faces"):
        raise ValueError(f"method must be 'facets' or 'faces', got {method!r}")
    loss = _loss_of(game)
    classes = action_classes(game, atol=atol)
    reps = loss[[c[0] for c in classes]]
    n_cls, n = reps.shape
    dims = np.empty(n_cls, dtype=np.int64)
    interior = np.full((n_cls, n), np.nan)
    n_lp = 0
    cell_rows = [_cell_rows(reps, a) for a in range(n_cls)]
    for a, (rows, _) in enumerate(cell_rows):
        t, point = _max_slack_point(rows, n)
        n_lp += 1
        if t > slack_tol:
            dims[a], interior[a] = n - 1, point
            continue
        face = polytope_face(rows, np.zeros(len(rows)), np.ones((1, n)), [1.0], slack_tol=slack_tol)
        n_lp += face.n_lp
        dims[a] = face.dim
        if face.point is not None:
            interior[a] = face.point
    pareto = dims == n - 1
    pairs: list[tuple[int, int]] = []
    hood: dict[tuple[int, int], tuple[int, ...]] = {}
    if neighbours:
        find = _facet_neighbours if method == "facets" else _face_neighbours
        n_lp += find(reps, pareto, cell_rows, pairs, hood, atol, slack_tol)
        hood = {
            pair: tuple(sorted(x for c in cls for x in classes[c])) for pair, cls in hood.items()
        }
    return CellStructure(
        classes=classes,
        cell_dim=dims,
        pareto=pareto,
        interior=interior,
        neighbours=tuple(sorted(pairs)),
        neighbourhood=hood,
        n_outcomes=n,
        n_lp=n_lp,
    )


_Rows = list[tuple[NDArray[np.float64], NDArray[np.intp]]]


def _facet_neighbours(
    reps: NDArray[np.float64],
    pareto: NDArray[np.bool_],
    cell_rows: _Rows,
    pairs: list[tuple[int, int]],
    hood: dict[tuple[int, int], Any],
    atol: float,
    slack_tol: float,
) -> int:
    n_lp, n = 0, reps.shape[1]
    for a in np.flatnonzero(pareto):
        rows, owner = cell_rows[a]
        for group in _direction_groups(rows, atol):
            members = [int(owner[i]) for i in group if owner[i] >= 0]
            later = [b for b in members if b > a and pareto[b]]
            if not later:
                continue
            n_lp += 1
            if not _enlarges(rows, group, n, slack_tol):
                continue
            for b in later:
                pairs.append((int(a), b))
                hood[(int(a), b)] = {int(a), *members}
    return n_lp


def _face_neighbours(
    reps: NDArray[np.float64],
    pareto: NDArray[np.bool_],
    cell_rows: _Rows,
    pairs: list[tuple[int, int]],
    hood: dict[tuple[int, int], Any],
    atol: float,
    slack_tol: float,
) -> int:
    n_lp, n = 0, reps.shape[1]
    cand = np.flatnonzero(pareto)
    for ia, a in enumerate(cand):
        rows, owner = cell_rows[a]
        for b in cand[ia + 1 :]:
            keep = owner != b
            face = polytope_face(
                rows[keep],
                np.zeros(int(keep.sum())),
                np.vstack([np.ones(n), reps[a] - reps[b]]),
                [1.0, 0.0],
                slack_tol=slack_tol,
            )
            n_lp += face.n_lp
            if face.dim != n - 2:
                continue
            inside = owner[keep][face.implicit]
            pairs.append((int(a), int(b)))
            hood[(int(a), int(b))] = {int(a), int(b), *(int(c) for c in inside if c >= 0)}
    return n_lp
