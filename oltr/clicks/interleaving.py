"""Interleaved comparisons of two rankers from clicks.

An interleaving method merges the orders of two rankers A and B into one shown
list of length ``n = min(k, m)``, remembers what it needs to credit clicks, and
turns the clicks on the shown list into an outcome:

    outcome = −1  (A wins),   0  (tie),   +1  (B wins).

So ``outcome > 0`` reads "the second ranker won" — in Dueling Bandit Gradient
Descent (Yue & Joachims 2009, Algorithm 1, line 6) pass the current ranker
``w_t`` as A and the candidate ``w'_t`` as B.

Three methods, each a batched function returning a frozen result object:

* :func:`team_draft_interleave` — team-draft interleaving (Radlinski, Kurup &
  Joachims 2008, §4); clicks are credited to the team that
  contributed the clicked item.
* :func:`balanced_interleave` — balanced interleaving (Joachims 2003, §3); the
  click credit looks at the top-``k*`` of each ranker, ``k*`` the smallest depth
  at which either ranker holds the lowest clicked item.
* :func:`probabilistic_interleave` — probabilistic interleaving (Hofmann,
  Whiteson & de Rijke 2011, §4) with softmax P_s(d) ∝ 1/r_s(d)^τ, τ = 3. The
  outcome is by default the sign of the *expected* outcome marginalised over
  all ranker assignments given the shown list; the naive outcome of the
  sampled assignment is available too.

Inputs are two orders (item indices best first) over the same ``m`` items,
shape (..., m); leading axes broadcast. All loops run over the ``n`` shown
positions only (at most ``2n`` steps for balanced interleaving) with array
operations across the batch, and only the top ``n`` of each order can be
shown by team-draft and balanced interleaving.

Randomness comes from ``rng``: one seed/Generator for the batch, or a sequence
of Generators, one per row of a 2-D batch (row ``b`` then equals a 1-D call
with ``rng[b]``, bit for bit).

References
----------
Joachims 2003, "Evaluating retrieval performance using clickthrough data", in
Text Mining (Franke, Nakhaeizadeh & Renz, eds.), §3.
Radlinski, Kurup & Joachims 2008, "How does clickthrough data reflect retrieval
quality?", CIKM, §4.
Hofmann, Whiteson & de Rijke 2011, "A probabilistic method for inferring
preferences from clicks", CIKM, §4.
Yue & Joachims 2009, "Interactively optimizing information retrieval systems
as a dueling bandits problem", ICML, §1, §3 (comparisons by interleaving).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.random import Generator
from numpy.typing import ArrayLike, NDArray

from oltr.clicks.click_models import RNGs, normalize_rngs, uniform_draws
from oltr.kernels import njit
from oltr.permutations import ranks_from_order

__all__ = [
    "TEAM_A",
    "TEAM_B",
    "BalancedInterleaving",
    "Interleaving",
    "TeamDraftInterleaving",
    "balanced_interleave",
    "team_draft_interleave",
    "team_draft_rows",
]

#: Team labels: the first ranker (A) and the second (B).
TEAM_A, TEAM_B = -1, 1

#: |E[outcome]| at or below this is a tie (round-off of an exactly symmetric case).
_TIE_TOL = 1e-12


class Interleaving(Protocol):
    """What every interleaving result offers."""

    @property
    def shown(self) -> NDArray[np.intp]:
        """Items by position, shape (..., n)."""
        ...

    def outcome(self, clicks: ArrayLike) -> Any:
        """−1 (A wins), 0 (tie) or +1 (B wins) per list."""
        ...


# ---------------------------------------------------------------------------
# inputs and outputs


@dataclass(frozen=True)
class _Prepared:
    a: NDArray[np.intp]  # (N, m) order of A
    b: NDArray[np.intp]  # (N, m) order of B
    rank_a: NDArray[np.intp]  # (N, m) 0-based position of each item in A
    rank_b: NDArray[np.intp]
    batch: tuple[int, ...]
    n: int  # shown length min(k, m)


def _ranks(order: ArrayLike, name: str) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    try:
        ranks = ranks_from_order(order)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name}: {exc}") from exc
    return np.asarray(order, dtype=np.intp), ranks


def _check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k (length of the shown list) must be an int >= 1, got {k!r}")
    return int(k)


def _prepare(order_a: ArrayLike, order_b: ArrayLike, k: int) -> _Prepared:
    k = _check_k(k)
    a, ra = _ranks(order_a, "order_a")
    b, rb = _ranks(order_b, "order_b")
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(
            f"order_a and order_b must rank the same items, got {a.shape[-1]} and "
            f"{b.shape[-1]} items"
        )
    m = a.shape[-1]
    try:
        batch = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
    except ValueError as exc:
        raise ValueError(
            f"leading shapes of order_a {a.shape[:-1]} and order_b {b.shape[:-1]} do not broadcast"
        ) from exc

    def flat(x: NDArray[np.intp]) -> NDArray[np.intp]:
        return np.broadcast_to(x, batch + (m,)).reshape(-1, m)

    return _Prepared(flat(a), flat(b), flat(ra), flat(rb), batch, min(k, m))


def _draws(rng: RNGs, batch: tuple[int, ...], tail: tuple[int, ...]) -> NDArray[np.float64]:
    """Uniforms of shape (N,) + tail."""
    u = uniform_draws(normalize_rngs(rng, batch), batch, tail)
    return u.reshape((-1,) + tail)


def _unflat(x: NDArray[Any], batch: tuple[int, ...]) -> NDArray[Any]:
    return x.reshape(batch + x.shape[1:])


def _scalar_if_0d(x: NDArray[Any]) -> Any:
    return x[()] if x.ndim == 0 else x


def _check_clicks(clicks: ArrayLike, shape: tuple[int, ...]) -> NDArray[np.bool_]:
    c = np.asarray(clicks)
    if c.dtype != np.bool_:
        raise TypeError(f"clicks must be a bool array, got dtype {c.dtype}")
    if c.shape != shape:
        raise ValueError(f"clicks must have the shape of the shown list {shape}, got {c.shape}")
    return c


def _sign(x: NDArray[Any]) -> NDArray[np.int8]:
    return np.asarray(np.sign(x), dtype=np.int8)


# ---------------------------------------------------------------------------
# team-draft interleaving


@dataclass(frozen=True)
class TeamDraftInterleaving:
    """A team-draft interleaved list and its team assignment.

    Attributes
    ----------
    shown
        Items by position, shape (..., n).
    team
        ``-1`` where ranker A contributed the item, ``+1`` where B did; shape (..., n).
    """

    shown: NDArray[np.intp]
    team: NDArray[np.int8]

    def credit(self, clicks: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Clicks on A's team and on B's team, each of shape (...)."""
        c = _check_clicks(clicks, self.shown.shape)
        return ((c & (self.team == TEAM_A)).sum(axis=-1), (c & (self.team == TEAM_B)).sum(axis=-1))

    def outcome(self, clicks: ArrayLike) -> Any:
        """Sign of (clicks on B's team − clicks on A's team): −1 A wins, 0 tie, +1 B wins."""
        ca, cb = self.credit(clicks)
        return _scalar_if_0d(_sign(cb - ca))


def team_draft_interleave(
    order_a: ArrayLike, order_b: ArrayLike, *, k: int = 10, rng: RNGs
) -> TeamDraftInterleaving:
    """Team-draft interleaving of two orders (Radlinski et al. 2008, §4).

    The rankers pick like captains choosing teams: in each round a fair coin
    says who picks first, then each adds its highest-ranked item not yet shown
    (the rule "A picks if |team A| < |team B|, or if equal and the coin says
    so"). The shown list stops at ``n = min(k, m)`` items; the teams' sizes
    differ by at most one.

    Parameters
    ----------
    order_a, order_b
        Orders of rankers A and B: integer arrays of shape (..., m), each row a
        permutation of ``0..m-1``, best first. Leading axes broadcast.
    k
        Length of the shown list, >= 1 (default 10, the usual result page).
    rng
        Seed/Generator, or a sequence of Generators, one per row of a 2-D batch.

    Returns
    -------
    TeamDraftInterleaving
        ``shown`` and ``team`` of shape (..., n); ``outcome(clicks)``.

    References
    ----------
    Radlinski, Kurup & Joachims 2008, CIKM, §4.

    Examples
    --------
    >>> il = team_draft_interleave([0, 1, 2, 3], [3, 2, 1, 0], k=4, rng=1)
    >>> sorted(il.shown.tolist()), int(il.team.sum())
    ([0, 1, 2, 3], 0)
    >>> clicked = il.shown == 0                     # a click on A's favourite...
    >>> int(il.outcome(clicked))                    # ...which A contributed
    -1
    """
    p = _prepare(order_a, order_b, k)
    a_first = _draws(rng, p.batch, ((p.n + 1) // 2,)) < 0.5
    shown, team = _team_draft(p.a, p.b, p.n, a_first)
    return TeamDraftInterleaving(_unflat(shown, p.batch), _unflat(team, p.batch))


def team_draft_rows(
    order_a: NDArray[np.intp], order_b: NDArray[np.intp], k: int, rngs: Sequence[Generator]
) -> TeamDraftInterleaving:
    """:func:`team_draft_interleave` of orders a learner has just computed, unchecked.

    ``order_a`` and ``order_b`` are ``intp`` arrays of shape (B, m) whose rows are
    permutations, ``k >= 1``, and ``rngs`` one generator per row: the same coins,
    picks and result as ``team_draft_interleave(order_a, order_b, k=k, rng=rngs)``,
    without its checks and broadcasting (which cost more than the picks on one page).
    """
    n = min(k, order_a.shape[1])
    a_first = np.stack([g.random(((n + 1) // 2,)) for g in rngs]) < 0.5  # uniform_draws' rows
    shown, team = _team_draft(order_a, order_b, n, a_first)
    return TeamDraftInterleaving(shown, team)


def _team_draft(
    a: NDArray[np.intp], b: NDArray[np.intp], n: int, a_first: NDArray[np.bool_]
) -> tuple[NDArray[np.intp], NDArray[np.int8]]:
    """The shown list and teams of rows ``a``, ``b`` (N, m) given each pair's coin (N, ⌈n/2⌉)."""
    n_rows, n_pairs = a.shape[0], a_first.shape[1]
    # Pair j fills positions 2j, 2j+1: (A, B) if A picks first, else (B, A).
    first = np.where(a_first, TEAM_A, TEAM_B).astype(np.int8)
    team = np.stack([first, -first], axis=-1).reshape(n_rows, 2 * n_pairs)[:, :n]
    # Fewer than n items are shown before any pick, so each pick lies in the top n.
    top_a = np.ascontiguousarray(a[:, :n], dtype=np.intp)
    top_b = np.ascontiguousarray(b[:, :n], dtype=np.intp)
    shown = np.empty((n_rows, n), dtype=np.intp)
    _team_draft_picks(top_a, top_b, np.ascontiguousarray(team), a.shape[1], shown)
    return shown, team


@njit
def _team_draft_picks(
    top_a: NDArray[np.intp],
    top_b: NDArray[np.intp],
    team: NDArray[np.int8],
    n_items: int,
    shown: NDArray[np.intp],
) -> None:  # pragma: no cover
    """Fill ``shown``: position ``t`` gets the best item not yet shown of ``team[:, t]``'s order.

    A loop over rows and positions (the picks depend on each other within a row);
    each pick lies in its ranker's top n, since fewer than n items precede it.
    """
    n_rows, n = shown.shape
    used = np.zeros(n_items, dtype=np.bool_)
    for r in range(n_rows):
        for t in range(n):
            src = top_a[r] if team[r, t] == TEAM_A else top_b[r]
            for j in range(n):
                item = src[j]
                if not used[item]:
                    shown[r, t] = item
                    used[item] = True
                    break
        for t in range(n):
            used[shown[r, t]] = False


# ---------------------------------------------------------------------------
# balanced interleaving


@dataclass(frozen=True)
class BalancedInterleaving:
    """A balanced interleaved list and what its click credit needs.

    Attributes
    ----------
    shown
        Items by position, shape (..., n).
    a_first
        Whether A's items went first at each depth, shape (...).
    rank_a, rank_b
        0-based position in A and in B of each shown item, shape (..., n).
    """

    shown: NDArray[np.intp]
    a_first: NDArray[np.bool_]
    rank_a: NDArray[np.intp]
    rank_b: NDArray[np.intp]

    def credit(self, clicks: ArrayLike) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Joachims' (2003) click counts ``(h_a, h_b)``, each of shape (...).

        With ``l`` the lowest clicked position, ``k* = min(rank_a, rank_b)`` of the
        item there, plus one; ``h_a`` counts clicked items in A's top ``k*``, ``h_b``
        in B's top ``k*``. No click gives (0, 0).
        """
        c = _check_clicks(clicks, self.shown.shape)
        n = c.shape[-1]
        last = n - 1 - np.argmax(c[..., ::-1], axis=-1)  # lowest clicked position
        depth = np.minimum(
            np.take_along_axis(self.rank_a, last[..., None], -1),
            np.take_along_axis(self.rank_b, last[..., None], -1),
        )
        h_a = (c & (self.rank_a <= depth)).sum(axis=-1)
        h_b = (c & (self.rank_b <= depth)).sum(axis=-1)
        return h_a, h_b

    def outcome(self, clicks: ArrayLike) -> Any:
        """Sign of ``h_b − h_a``: −1 A wins, 0 tie, +1 B wins."""
        h_a, h_b = self.credit(clicks)
        return _scalar_if_0d(_sign(h_b - h_a))


def balanced_interleave(
    order_a: ArrayLike, order_b: ArrayLike, *, k: int = 10, rng: RNGs
) -> BalancedInterleaving:
    """Balanced interleaving of two orders (Joachims 2003, §3).

    A fair coin decides whether A or B leads; then the two orders are read in
    lockstep — A's next item when A has been read less deeply (or equally, and
    A leads), else B's — and an item is appended unless already shown. Any
    prefix of the shown list therefore holds the top ``k_a`` of A and the top
    ``k_b`` of B with ``|k_a − k_b| <= 1``; the first ``n`` shown items hold the
    top ``⌊n/2⌋`` of both rankers and the top ``⌈n/2⌉`` of the leader.

    Parameters
    ----------
    order_a, order_b
        Orders of rankers A and B, shape (..., m), each row a permutation of
        ``0..m-1``, best first. Leading axes broadcast.
    k
        Length of the shown list, >= 1 (default 10).
    rng
        Seed/Generator, or a sequence of Generators, one per row of a 2-D batch.

    Returns
    -------
    BalancedInterleaving
        ``shown``, ``a_first``, ``rank_a``, ``rank_b``; ``outcome(clicks)``.

    References
    ----------
    Joachims 2003, "Evaluating retrieval performance using clickthrough data", §3.

    Examples
    --------
    >>> il = balanced_interleave([0, 1, 2, 3, 4], [1, 0, 3, 2, 4], k=4, rng=0)
    >>> sorted(il.shown.tolist())
    [0, 1, 2, 3]
    >>> int(il.outcome(il.shown == 3))      # item 3: A's 4th, B's 3rd
    1
    """
    p = _prepare(order_a, order_b, k)
    n_rows, n = p.a.shape[0], p.n
    a_first = _draws(rng, p.batch, ()) < 0.5
    # While a row is unfinished, each order has been read at most as deep as the
    # list is long (< n), so only the top n of each is ever read.
    top_a, top_b = p.a[:, :n], p.b[:, :n]
    rows = np.arange(n_rows)
    used = np.zeros(p.a.shape, dtype=bool)
    shown = np.empty((n_rows, n), dtype=np.intp)
    depth_a = np.zeros(n_rows, dtype=np.intp)
    depth_b = np.zeros(n_rows, dtype=np.intp)
    count = np.zeros(n_rows, dtype=np.intp)
    # Reading 2n − 1 items in lockstep reaches depth n in one order, so n items are shown.
    for _ in range(2 * n - 1):
        active = count < n
        if not active.any():
            break
        take_a = (depth_a < depth_b) | ((depth_a == depth_b) & a_first)
        item = np.where(
            take_a, top_a[rows, np.minimum(depth_a, n - 1)], top_b[rows, np.minimum(depth_b, n - 1)]
        )
        new = active & ~used[rows, item]
        shown[rows[new], count[new]] = item[new]
        used[rows[new], item[new]] = True
        count += new
        depth_a += active & take_a
        depth_b += active & ~take_a
    rank_a = np.take_along_axis(p.rank_a, shown, axis=1)
    rank_b = np.take_along_axis(p.rank_b, shown, axis=1)
    return BalancedInterleaving(
        _unflat(shown, p.batch),
        _unflat(a_first, p.batch),
        _unflat(rank_a, p.batch),
        _unflat(rank_b, p.batch),
    )


# ---------------------------------------------------------------------------
# probabilistic interleaving


# ---------------------------------------------------------------------------
# by name, and one full comparison
