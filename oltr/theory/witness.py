"""Impossibility witnesses: indistinguishable adversaries with different optimal rankings.

Two distributions ``p, q`` over relevance vectors are *indistinguishable* when
every action shows the same feedback distribution under both: ``S_k p = S_k q``
for every signal matrix (for binary top-1 feedback: equal per-item relevance
marginals ``E_p[R] = E_q[R]``, CT16 proof of Theorem 5.2). If no action is
optimal under both, an adversary that draws its outcomes i.i.d. from ``p`` or
from ``q`` (each with probability 1/2) forces every learner to expected regret
at least ``ε T`` with

    ε = ½ min_c [ (ℓ_c − min_a ℓ_a)·p + (ℓ_c − min_a ℓ_a)·q ],

because the learner's play has the same law under both (the averaging step of
CT16's proof). Such pairs exist exactly when global observability fails: a
direction ``d = p − q`` with ``S d = 0`` and ``(ℓ_i − ℓ_j)·d ≠ 0``.

:func:`find_indistinguishable_pair` searches for them by linear programming: for
each pair of Pareto-optimal classes ``(a, b)``, maximise
``u = min_c [(ℓ_c − ℓ_a)·p + (ℓ_c − ℓ_b)·q]`` over ``p, q ∈ Δ`` with
``S(p − q) = 0``, ``a`` optimal under ``p`` and ``b`` optimal under ``q``; the best
pair gives ``ε = u/2``.

References
----------
Chaudhuri & Tewari (2016), "Online Learning to Rank with Feedback at the Top",
§5, Theorem 5.2 and its proof (Table 1); Chaudhuri & Tewari (2015) §9, §15;
Piccolboni & Schindelhauer (2001), Theorem 3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import orth
from scipy.optimize import linprog

from oltr.metrics import dcg, exp2_gain
from oltr.theory.cells import CellStructure, cell_structure
from oltr.theory.matrices import RankingGame

__all__ = [
    "CT16_P",
    "CT16_P_TILDE",
    "CT16_RELEVANCE",
    "OPT_TOL",
    "IndistinguishablePair",
    "check_pair",
    "expected_normalized_gain",
    "find_indistinguishable_pair",
]

#: Relevance vectors R1..R8 of CT16 Table 1 (proof of Theorem 5.2), items 1..3.
CT16_RELEVANCE = np.array(
    [[0, 0, 0], [1, 1, 0], [1, 0, 1], [0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]],
    dtype=np.int64,
)
#: Distribution p of CT16 Table 1.
CT16_P = np.array([0.0, 0.1, 0.15, 0.05, 0.2, 0.3, 0.2, 0.0])
#: Distribution p̃ of CT16 Table 1.
CT16_P_TILDE = np.array([0.0, 0.3, 0.0, 0.0, 0.15, 0.15, 0.4, 0.0])

#: Expected losses within this of the minimum count as optimal.
OPT_TOL = 1e-9
_HIGHS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def expected_normalized_gain(outcomes: ArrayLike, p: ArrayLike) -> NDArray[np.float64]:
    """``E_{R∼p}[G(R)/Z(R)]`` per item, the vector whose sort is NDCG-optimal (CT16 Thm. 5.1).

    ``G(R) = 2^R − 1`` (:func:`oltr.metrics.exp2_gain`) and ``Z(R)`` is the DCG of
    the ideal order (:func:`oltr.metrics.dcg`). An all-zero ``R`` has ``Z = 0``;
    its NDCG is the same constant for every order, so it contributes 0 here.

    Parameters
    ----------
    outcomes
        Relevance vectors, shape (n_outcomes, m).
    p
        Probabilities, shape (n_outcomes,).

    Examples
    --------
    ``R = 10`` gives ``(1, 0)``; ``R = 11`` gives ``(1, 1) / (1 + 1/log2 3)``:

    >>> expected_normalized_gain([[1, 0], [1, 1]], [0.5, 0.5]).round(4)
    array([0.8066, 0.3066])
    """
    r = np.asarray(outcomes, dtype=np.float64)
    w = np.asarray(p, dtype=np.float64)
    if r.ndim != 2 or w.shape != (r.shape[0],):
        raise ValueError(f"outcomes (n, m) and p (n,) must agree, got {r.shape} and {w.shape}")
    ideal = np.argsort(-r, axis=1, kind="stable")
    z = np.asarray(dcg(r, ideal), dtype=np.float64).reshape(-1)
    g = exp2_gain(r)
    ratio = np.divide(g, z[:, None], out=np.zeros_like(g), where=z[:, None] > 0)
    return np.asarray(w @ ratio)


@dataclass(frozen=True)
class IndistinguishablePair:
    """Two feedback-indistinguishable distributions and what they imply.

    Attributes
    ----------
    p, q
        Distributions over the game's outcomes, shape (n_outcomes,).
    feedback_gap
        ``max_k ‖S_k p − S_k q‖_∞`` (0 up to rounding when indistinguishable).
    optimal_p, optimal_q
        Actions optimal under ``p`` and under ``q``.
    epsilon
        ``½ min_c [regret_p(c) + regret_q(c)]``: the Ω(T) constant (0 when some
        action is optimal under both).
    """

    p: NDArray[np.float64]
    q: NDArray[np.float64]
    feedback_gap: float
    optimal_p: tuple[int, ...]
    optimal_q: tuple[int, ...]
    epsilon: float

    @property
    def is_witness(self) -> bool:
        """Indistinguishable and no common optimal action (``ε > 0``)."""
        return self.feedback_gap <= 1e-9 and self.epsilon > OPT_TOL

    def as_dict(self, game: RankingGame) -> dict[str, Any]:
        """JSON-ready summary with labels, marginals and (for binary games) E[G/Z]."""
        lab, out_lab = game.action_labels, game.outcome_labels

        def dist(v: NDArray[np.float64]) -> dict[str, float]:
            return {out_lab[j]: round(float(x), 12) for j, x in enumerate(v) if x > 1e-12}

        def orders(acts: tuple[int, ...]) -> list[str]:
            assert game.actions is not None
            return ["".join(str(i + 1) for i in game.actions[a]) for a in acts]

        out: dict[str, Any] = {
            "p": dist(self.p),
            "q": dist(self.q),
            "feedback_gap": self.feedback_gap,
            "optimal_p": [lab[a] for a in self.optimal_p],
            "optimal_q": [lab[a] for a in self.optimal_q],
            "epsilon": self.epsilon,
            "is_witness": self.is_witness,
        }
        if game.actions is not None and game.outcomes is not None:
            out["optimal_orders_p"] = orders(self.optimal_p)
            out["optimal_orders_q"] = orders(self.optimal_q)
            out["expected_relevance_p"] = (self.p @ game.outcomes).tolist()
            out["expected_relevance_q"] = (self.q @ game.outcomes).tolist()
            if game.measure.split("@")[0].lower() == "ndcg":
                out["expected_G_over_Z_p"] = expected_normalized_gain(
                    game.outcomes, self.p
                ).tolist()
                out["expected_G_over_Z_q"] = expected_normalized_gain(
                    game.outcomes, self.q
                ).tolist()
        return out


def _check_dist(v: ArrayLike, n: int, name: str) -> NDArray[np.float64]:
    a = np.asarray(v, dtype=np.float64)
    if a.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {a.shape}")
    if not np.all(np.isfinite(a)) or a.min() < -1e-12 or abs(a.sum() - 1.0) > 1e-9:
        raise ValueError(f"{name} must be a probability vector (>= 0, sum 1), got sum {a.sum()}")
    return np.clip(a, 0.0, None)


def check_pair(game: RankingGame, p: ArrayLike, q: ArrayLike) -> IndistinguishablePair:
    """Verify a candidate pair: feedback gap, optimal actions under each, and ``ε``.

    Parameters
    ----------
    game
        The game; ``p`` and ``q`` are over its outcomes (its column order).
    p, q
        Probability vectors of shape (n_outcomes,).

    Returns
    -------
    IndistinguishablePair

    References
    ----------
    Chaudhuri & Tewari (2016), proof of Theorem 5.2.
    """
    p = _check_dist(p, game.n_outcomes, "p")
    q = _check_dist(q, game.n_outcomes, "q")
    signals = game.signal_matrices().astype(np.float64)
    gap = float(np.abs(signals @ (p - q)).max())
    lp, lq = game.loss @ p, game.loss @ q
    reg_p, reg_q = lp - lp.min(), lq - lq.min()
    return IndistinguishablePair(
        p=p,
        q=q,
        feedback_gap=gap,
        optimal_p=tuple(int(a) for a in np.flatnonzero(reg_p <= OPT_TOL)),
        optimal_q=tuple(int(a) for a in np.flatnonzero(reg_q <= OPT_TOL)),
        epsilon=float(0.5 * (reg_p + reg_q).min()),
    )


def _pair_lp(
    reps: NDArray[np.float64], a: int, b: int, w: NDArray[np.float64]
) -> tuple[float, NDArray[np.float64]] | None:
    """max u over (p, q, u): a optimal under p, b under q, W(p − q) = 0, Σ regrets ≥ u."""
    k, n = reps.shape
    zeros_k = np.zeros((k, 1))
    da, db = reps[a] - reps, reps[b] - reps  # (ℓ_a − ℓ_c) rows: ≤ 0 when a is optimal
    a_ub = np.vstack(
        [
            np.hstack([da, np.zeros((k, n)), zeros_k]),
            np.hstack([np.zeros((k, n)), db, zeros_k]),
            np.hstack([da, db, np.ones((k, 1))]),  # u ≤ (ℓ_c − ℓ_a)·p + (ℓ_c − ℓ_b)·q
        ]
    )
    a_eq = np.vstack(
        [
            np.hstack([np.ones(n), np.zeros(n), [0.0]]),
            np.hstack([np.zeros(n), np.ones(n), [0.0]]),
            np.hstack([w, -w, np.zeros((len(w), 1))]),
        ]
    )
    b_eq = np.concatenate([[1.0, 1.0], np.zeros(len(w))])
    cost = np.zeros(2 * n + 1)
    cost[-1] = -1.0
    res = linprog(
        cost,
        A_ub=a_ub,
        b_ub=np.zeros(3 * k),
        A_eq=a_eq,
        b_eq=b_eq,
        bounds=[(0.0, None)] * (2 * n) + [(None, None)],
        method="highs",
        options=_HIGHS,
    )
    if res.status == 2:
        return None
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed on a witness LP: {res.message}")
    return float(res.x[-1]), res.x[:-1]


def find_indistinguishable_pair(
    game: RankingGame, *, cells: CellStructure | None = None
) -> IndistinguishablePair | None:
    """Search for indistinguishable ``p, q`` with disjoint optimal actions, maximising ``ε``.

    One LP over ``2 N + 1`` variables per pair of Pareto-optimal classes (only
    those can be strictly optimal), visited by decreasing upper bound
    ``u ≤ max r − min r``, ``r`` the part of ``ℓ_a − ℓ_b`` outside the signal span;
    pairs whose bound cannot beat the best ``u`` found are skipped, and
    observable pairs (``r = 0``) are never solved.

    Parameters
    ----------
    game
        The game.
    cells
        Precomputed :func:`~oltr.theory.cells.cell_structure` (computed if needed).

    Returns
    -------
    IndistinguishablePair or None
        The pair with the largest ``ε``, verified with :func:`check_pair`; None when
        every pair of indistinguishable distributions shares an optimal action
        (which is the case exactly when global observability holds).

    References
    ----------
    Chaudhuri & Tewari (2016), proof of Theorem 5.2.

    Examples
    --------
    >>> from oltr.theory.matrices import ranking_game
    >>> w = find_indistinguishable_pair(ranking_game("ndcg", 3))
    >>> w.is_witness, w.epsilon > 0.01
    (True, True)
    """
    if cells is None:
        cells = cell_structure(game, neighbours=False)
    reps_idx = [c[0] for c, ok in zip(cells.classes, cells.pareto, strict=True) if ok]
    reps = game.loss[reps_idx]
    signals = game.signal_matrices().reshape(-1, game.n_outcomes).astype(np.float64)
    w = orth(signals.T).T  # independent rows spanning all signal rows
    # u ≤ (ℓ_b − ℓ_a)·(p − q) = r·(p − q), r the part of ℓ_b − ℓ_a outside the signal span
    # (p − q lies in its orthogonal complement, which excludes the all-ones vector), so
    # u ≤ max r − min r. Visit pairs by decreasing bound and stop once it cannot win.
    resid = reps - (reps @ w.T) @ w
    ia, ib = np.triu_indices(len(reps), k=1)
    diff = resid[ib] - resid[ia]
    bound = diff.max(axis=1, initial=0.0) - diff.min(axis=1, initial=0.0)
    best: tuple[float, NDArray[np.float64]] | None = None
    for idx in np.argsort(-bound, kind="stable"):
        if bound[idx] <= 2 * OPT_TOL or (best is not None and bound[idx] <= best[0]):
            break
        sol = _pair_lp(reps, int(ia[idx]), int(ib[idx]), w)
        if sol is not None and (best is None or sol[0] > best[0]):
            best = sol
    if best is None or best[0] <= 2 * OPT_TOL:
        return None
    n = game.n_outcomes
    p, q = np.clip(best[1][:n], 0, None), np.clip(best[1][n:], 0, None)
    return check_pair(game, p / p.sum(), q / q.sum())
