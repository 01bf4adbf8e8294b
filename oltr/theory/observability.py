"""Global and local observability of a finite game (CT15 Definitions 3 and 5).

With signal matrices ``S_k`` (one row per feedback symbol, CT15 Definition 2):

- **global** (Definition 3): every pair of actions ``i, j`` has
  ``ℓ_i − ℓ_j ∈ ⊕_{k ∈ [m!]} Col(S_k^T)``, the span of the signal rows of *all*
  actions. CT15 states it for every pair of actions; Bartók et al. (2014) for
  pairs of Pareto-optimal actions (``pairs="pareto"``). Both are offered.
- **local** (Definition 5): every pair of neighbouring actions ``i, j`` has
  ``ℓ_i − ℓ_j ∈ ⊕_{k ∈ N⁺_{ij}} Col(S_k^T)``, the span of the signal rows of the
  neighbourhood action set only — duplicates of ``i`` and ``j`` included, since
  ``N⁺_{ij} = {k : C_i ∩ C_j ⊆ C_k}`` contains them (see :mod:`oltr.theory.cells`).

Membership is tested by least squares: the residual of ``ℓ_i − ℓ_j`` after
orthogonal projection onto the span (an orthonormal basis from
:func:`scipy.linalg.orth`). A pair is observable when the residual norm is at
most ``tol · max(1, ‖ℓ_i − ℓ_j‖)`` (``tol = 1e-8``); failing pairs are returned
as witnesses with their residual norm. Residuals of the paper's failures are of
order 0.1–2, of observable pairs about 1e-15, so the verdicts do not hinge on
``tol``.

References
----------
Chaudhuri & Tewari (2015) §6.1 (Definition 3, Theorem 1), §6.2 (Definition 5,
Theorem 4), §14.1.1, §15 (Lemma 11); Bartók et al. (2014) §2.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import orth

from oltr.theory.cells import CellStructure, action_classes, cell_structure
from oltr.theory.matrices import RankingGame

__all__ = [
    "ANALYSIS_STAGES",
    "DEFAULT_TOL",
    "ObservabilityResult",
    "PairCheck",
    "analyze_game",
    "global_observability",
    "local_observability",
    "span_residual",
]

#: Relative residual norm below which a loss difference lies in a span.
DEFAULT_TOL = 1e-8


@dataclass(frozen=True)
class PairCheck:
    """One checked pair: the actions, their labels, the residual norm and the observers.

    Attributes
    ----------
    actions
        Action indices ``(i, j)``.
    labels
        Their rank-vector labels.
    residual
        Norm of the part of ``ℓ_i − ℓ_j`` outside the span.
    diff_norm
        Norm of ``ℓ_i − ℓ_j``.
    observers
        Actions whose signal rows span the space (local: ``N⁺_{ij}``; global: all).
    observable
        Whether the residual is within tolerance.
    """

    actions: tuple[int, int]
    labels: tuple[str, str]
    residual: float
    diff_norm: float
    observers: tuple[int, ...]
    observable: bool

    def as_dict(self, game: RankingGame | None = None) -> dict[str, Any]:
        """JSON-ready dictionary (observer labels when ``game`` is given)."""
        out: dict[str, Any] = {
            "actions": list(self.labels),
            "residual": self.residual,
            "diff_norm": self.diff_norm,
            "observable": self.observable,
        }
        if game is not None and len(self.observers) < game.n_actions:
            out["observers"] = [game.action_labels[k] for k in self.observers]
        return out


@dataclass(frozen=True)
class ObservabilityResult:
    """Verdict of an observability check, with every checked pair.

    Attributes
    ----------
    condition
        ``"global"`` or ``"local"``.
    holds
        Whether every checked pair is observable.
    checks
        One :class:`PairCheck` per checked pair (class representatives for
        duplicates), sorted by decreasing residual, so ``checks[0]`` is the witness
        on failure.
    tol
        Relative tolerance used.
    """

    condition: str
    holds: bool
    checks: tuple[PairCheck, ...]
    tol: float

    @property
    def failures(self) -> tuple[PairCheck, ...]:
        """The pairs that are not observable (witnesses), worst first."""
        return tuple(c for c in self.checks if not c.observable)

    @property
    def witness(self) -> PairCheck | None:
        """The worst non-observable pair, or None when the condition holds."""
        return None if self.holds else self.checks[0]


def span_residual(vectors: NDArray[np.float64], rows: NDArray[np.float64]) -> NDArray[np.float64]:
    """Norm of each vector's component orthogonal to the row space of ``rows``.

    Parameters
    ----------
    vectors
        Array of shape (q, N).
    rows
        Array of shape (r, N) spanning the subspace.

    Returns
    -------
    residuals
        Array of shape (q,).

    Examples
    --------
    >>> span_residual(np.array([[1.0, 1.0], [1.0, -1.0]]), np.array([[2.0, 2.0]])).round(8)
    array([0.        , 1.41421356])
    """
    v = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
    basis = orth(np.asarray(rows, dtype=np.float64).T)  # (N, rank)
    return np.asarray(np.linalg.norm(v - (v @ basis) @ basis.T, axis=1))


def _stacked_signals(game: RankingGame, actions: Any) -> NDArray[np.float64]:
    s = game.signal_matrices()[np.asarray(actions, dtype=np.intp)]
    return s.reshape(-1, game.n_outcomes).astype(np.float64)


def _check(
    game: RankingGame, i: int, j: int, residual: float, observers: tuple[int, ...], tol: float
) -> PairCheck:
    norm = float(np.linalg.norm(game.loss[i] - game.loss[j]))
    return PairCheck(
        actions=(i, j),
        labels=(game.action_labels[i], game.action_labels[j]),
        residual=float(residual),
        diff_norm=norm,
        observers=observers,
        observable=bool(residual <= tol * max(1.0, norm)),
    )


def _result(condition: str, checks: list[PairCheck], tol: float) -> ObservabilityResult:
    checks.sort(key=lambda c: (-c.residual, c.actions))
    return ObservabilityResult(condition, all(c.observable for c in checks), tuple(checks), tol)


def global_observability(
    game: RankingGame,
    *,
    pairs: Literal["all", "pareto"] = "all",
    cells: CellStructure | None = None,
    tol: float = DEFAULT_TOL,
) -> ObservabilityResult:
    """Check global observability (CT15 Definition 3).

    ``ℓ_i − ℓ_j`` must lie in the span of the signal rows of all actions, for
    every pair of actions (``pairs="all"``, CT15) or of Pareto-optimal actions
    (``pairs="pareto"``, Bartók et al. 2014). Duplicate actions share loss rows,
    so one representative per class is checked.

    Parameters
    ----------
    game
        The game.
    pairs
        ``"all"`` or ``"pareto"``.
    cells
        Precomputed :func:`~oltr.theory.cells.cell_structure`; computed (cells
        only) for ``pairs="pareto"``; ``pairs="all"`` needs no linear program.
    tol
        Relative residual tolerance.

    Returns
    -------
    ObservabilityResult

    Notes
    -----
    One projection per class, then one residual per pair of classes: ``m = 5``
    (7140 pairs) takes about a second, ``m = 6`` (258,840 pairs) about half a minute.

    References
    ----------
    Chaudhuri & Tewari (2015) Definition 3, Theorem 1, Lemma 11.
    """
    if pairs not in ("all", "pareto"):
        raise ValueError(f"pairs must be 'all' or 'pareto', got {pairs!r}")
    if pairs == "all":
        # Every pair: only the duplicate classes are needed, no linear programs.
        keep = action_classes(game) if cells is None else cells.classes
    else:
        cells = cell_structure(game, neighbours=False) if cells is None else cells
        keep = tuple(c for c, ok in zip(cells.classes, cells.pareto, strict=True) if ok)
    reps = [c[0] for c in keep]
    everyone = tuple(range(game.n_actions))
    rows = _stacked_signals(game, everyone)
    basis = orth(rows.T)
    # Residual of each row; the residual of ℓ_i − ℓ_j is the difference of residuals.
    resid = game.loss[reps] - (game.loss[reps] @ basis) @ basis.T
    checks = []
    for a in range(len(reps)):
        norms = np.linalg.norm(resid[a + 1 :] - resid[a], axis=1)
        checks += [
            _check(game, reps[a], reps[b], float(r), everyone, tol)
            for b, r in zip(range(a + 1, len(reps)), norms, strict=True)
        ]
    return _result("global", checks, tol)


def local_observability(
    game: RankingGame, *, cells: CellStructure | None = None, tol: float = DEFAULT_TOL
) -> ObservabilityResult:
    """Check local observability (CT15 Definition 5) on every neighbouring pair.

    ``ℓ_i − ℓ_j`` must lie in the span of the signal rows of ``N⁺_{ij}``. With no
    neighbouring pairs the condition holds vacuously.

    Parameters
    ----------
    game
        The game.
    cells
        Precomputed :func:`~oltr.theory.cells.cell_structure` (computed if needed).
    tol
        Relative residual tolerance.

    Returns
    -------
    ObservabilityResult

    References
    ----------
    Chaudhuri & Tewari (2015) Definitions 4–5, Theorem 4, §14.1.1.
    """
    if cells is None:
        cells = cell_structure(game)
    checks = []
    for a, b in cells.neighbours:
        i, j = cells.classes[a][0], cells.classes[b][0]
        hood = cells.neighbourhood[(a, b)]
        r = span_residual(game.loss[i] - game.loss[j], _stacked_signals(game, hood))[0]
        checks.append(_check(game, i, j, float(r), hood, tol))
    return _result("local", checks, tol)


#: The stages of :func:`analyze_game`, in order (for progress displays).
ANALYSIS_STAGES = ("cells and neighbours", "global observability", "global (Pareto pairs)", "local")


def analyze_game(
    game: RankingGame,
    *,
    tol: float = DEFAULT_TOL,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Cells, neighbours and both observability verdicts of a game, JSON-ready.

    ``progress`` is called with each stage's name (:data:`ANALYSIS_STAGES`) as it
    starts: the cell LPs grow fast with m (seconds at m = 5).

    Returns
    -------
    report
        Keys ``measure, n_items, k, max_grade, n_actions, n_outcomes, n_classes,
        duplicate_classes, n_pareto, neighbours, global, global_pareto, local``.
    """
    report = progress if progress is not None else (lambda stage: None)
    report(ANALYSIS_STAGES[0])
    cells = cell_structure(game)
    report(ANALYSIS_STAGES[1])
    glob = global_observability(game, cells=cells, tol=tol)
    report(ANALYSIS_STAGES[2])
    glob_p = global_observability(game, pairs="pareto", cells=cells, tol=tol)
    report(ANALYSIS_STAGES[3])
    loc = local_observability(game, cells=cells, tol=tol)
    lab = game.action_labels
    m = None if game.actions is None else int(game.actions.shape[1])

    def verdict(res: ObservabilityResult) -> dict[str, Any]:
        return {
            "holds": res.holds,
            "n_pairs": len(res.checks),
            "n_failures": len(res.failures),
            "witness": None if res.witness is None else res.witness.as_dict(game),
            "max_residual": max((c.residual for c in res.checks), default=0.0),
        }

    return {
        "measure": game.measure,
        "n_items": m,
        "k": game.k,
        "max_grade": game.max_grade,
        "n_actions": game.n_actions,
        "n_outcomes": game.n_outcomes,
        "n_classes": len(cells.classes),
        "duplicate_classes": [[lab[a] for a in c] for c in cells.classes if len(c) > 1],
        "n_pareto": len(cells.pareto_actions),
        "neighbours": [
            {
                "pair": [lab[cells.classes[a][0]], lab[cells.classes[b][0]]],
                "classes": [[lab[x] for x in cells.classes[a]], [lab[x] for x in cells.classes[b]]],
                "neighbourhood": [lab[x] for x in cells.neighbourhood[(a, b)]],
            }
            for a, b in cells.neighbours
        ],
        "global": verdict(glob),
        "global_pareto": verdict(glob_p),
        "local": {**verdict(loc), "pairs": [c.as_dict(game) for c in loc.checks]},
    }
