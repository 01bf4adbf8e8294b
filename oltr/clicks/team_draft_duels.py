"""Team-draft duels judged by a cascade user, in one compiled pass.

A dueling learner's every round is one comparison per run: team-draft interleave
its two lists (:func:`oltr.clicks.interleaving.team_draft_interleave`), let a
cascade user click on the page (:class:`oltr.clicks.click_models.CascadeClickModel`)
and read who won (:meth:`~oltr.clicks.interleaving.TeamDraftInterleaving.outcome`).
Through :func:`oltr.clicks.methods.compare` that is some thirty numpy calls and
two rounds of input checks for a page of ten. :func:`team_draft_cascade_duels`
does the same from the same coins in one compiled call: the pairs' coins make the
teams, the picks are the interleaving's own kernel, the clicks the cascade
kernel's, and the outcome is the sign of B's clicks minus A's. Everything is
integer or a comparison of the same floats, so the outcomes are ``compare``'s
exactly (``tests/feedback/test_interleaved_fast.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from oltr.clicks.cascade_kernel import cascade_clicks
from oltr.clicks.click_models import CascadeClickModel
from oltr.clicks.interleaving import TEAM_A, TEAM_B, _team_draft_picks
from oltr.kernels import njit

__all__ = ["team_draft_cascade_duels"]


@njit(nogil=True)
def _duel_outcomes(
    orders: Any,
    coins: Any,
    uniforms: Any,
    relevance: Any,
    click_prob: Any,
    stop_prob: Any,
    outcome: Any,
) -> int:  # pragma: no cover
    """``outcome[r]`` of run r's duel ``orders[r]`` (2, m); returns −1, or the cascade
    kernel's code for an item or grade out of range."""
    n_rows, n = uniforms.shape[0], uniforms.shape[2]
    team = np.empty((n_rows, n), np.int8)
    for r in range(n_rows):
        for j in range(n):  # pair j // 2 fills positions 2j, 2j + 1: (A, B) if A picks first
            first = TEAM_A if coins[r, j // 2] < 0.5 else TEAM_B
            team[r, j] = first if j % 2 == 0 else -first
    top_a = np.ascontiguousarray(orders[:, 0, :n])
    top_b = np.ascontiguousarray(orders[:, 1, :n])
    shown = np.empty((n_rows, n), np.intp)
    _team_draft_picks(top_a, top_b, team, orders.shape[2], shown)
    clicks = np.empty((n_rows, n), np.bool_)
    code = cascade_clicks(relevance, shown, uniforms, click_prob, stop_prob, True, clicks)
    if code != -1:
        return code
    for r in range(n_rows):
        margin = 0  # clicks on B's team minus clicks on A's
        for j in range(n):
            if clicks[r, j]:
                margin += 1 if team[r, j] == TEAM_B else -1
        outcome[r] = 1 if margin > 0 else (-1 if margin < 0 else 0)
    return -1


def team_draft_cascade_duels(
    orders: NDArray[np.intp],
    coins: NDArray[np.float64],
    uniforms: NDArray[np.float64],
    relevance: NDArray[np.int64],
    model: CascadeClickModel,
) -> NDArray[np.int8] | None:
    """Outcomes (B,) of team-draft duels ``orders`` (B, 2, m) judged by ``model``: −1 A
    wins, 0 tie, +1 B wins.

    ``coins`` (B, ⌈n/2⌉) are each run's interleaving coins and ``uniforms`` (B, 2, n) its
    click coins, drawn as :func:`~oltr.clicks.methods.compare` draws them for a page of n;
    ``orders`` must be C-ordered ``intp`` rows that are permutations (unchecked: the
    caller's). None for an item or grade out of range or arrays of other forms.
    """
    if not (
        orders.dtype == np.intp
        and orders.ndim == 3
        and orders.flags.c_contiguous
        and relevance.dtype == np.int64
        and relevance.ndim == 1
        and orders.shape[1] == 2
        and uniforms.dtype == np.float64
        and uniforms.ndim == 3
        and uniforms.flags.c_contiguous
        and uniforms.shape[:2] == (orders.shape[0], 2)
        and 1 <= uniforms.shape[2] <= orders.shape[2]
        and coins.dtype == np.float64
        and coins.shape == (orders.shape[0], (uniforms.shape[2] + 1) // 2)
    ):
        return None
    outcome = np.empty(orders.shape[0], dtype=np.int8)
    click, stop = model._tables
    if _duel_outcomes(orders, coins, uniforms, relevance, click, stop, outcome) != -1:
        return None
    return outcome
