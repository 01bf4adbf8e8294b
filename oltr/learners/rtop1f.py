"""RTop-1F: blocked Follow the Perturbed Leader from top-1 feedback.

Chaudhuri & Tewari 2015, Algorithm 1.

``K`` blocks of ``m`` exploration rounds each: in every block, each object is
shown on top once at a uniformly random round (line 8), its revealed relevance
forms the Lemma 8 estimate, and the other rounds play FTPL on the block-average
estimates. ``K = (DA/R)^{1/3} (T/m)^{2/3} = m^{-1/3} T^{2/3}`` and
``ε = sqrt(D / (R A K))`` (Theorems 7, 9, 10) give regret ``O(T^{2/3})``.

References
----------
Chaudhuri & Tewari 2015, "Online Ranking with Top-1 Feedback", AISTATS:
Algorithm 1, Lemma 8, Theorems 7, 9, 10, §13–14.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.feedback import Feedback, FeedbackRequirement
from oltr.kernels import njit
from oltr.learners.ftpl import (
    _FUSED_MAX_ITEMS,
    _NO_ROWS,
    _ascending,
    _FixedItemsFTPL,
    _perturbed_orders,
    kv_constants,
)
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunRNGLike
from oltr.validation import check_choice, check_scalar

__all__ = ["EXPLORE_MODES", "RTop1F", "draw_exploration", "exploration_estimate", "rtop1f_schedule"]


#: Line 11 of Algorithm 1 ("any permutation which places the jth object on top"):
#: ``"front"`` moves the explored object(s) to the front of this round's FTPL ranking;
#: ``"random"`` puts them on top of a uniformly random ranking of the rest.
EXPLORE_MODES = ("front", "random")


def rtop1f_schedule(
    measure: str, n_items: int, horizon: int, max_grade: int = 1, top_k: int = 1
) -> tuple[int, float]:
    """Number of blocks ``K`` and ``ε`` of RTop-1F (C&T 2015 Theorems 7, 9, 10).

    ``K = floor((DA/R)^{1/3} (T/e)^{2/3})`` (at least 1) and
    ``ε = sqrt(D / (R A K))``, ``e = ⌈m / top_k⌉`` exploration rounds per block.
    With ``top_k = 1`` (the paper) ``K = m^{-1/3} T^{2/3}`` for all three measures,
    ``ε = sqrt(1/(mK))`` for SumLoss and Precision@k and
    ``sqrt(1/((2ⁿ−1)² m K))`` for DCG. For ``top_k > 1`` the same
    optimisation of ``R e K + 2 T sqrt(DRA/K)`` (proof of Thm. 7, eq. 13) with
    ``e`` exploration rounds per block gives the formula above.

    >>> rtop1f_schedule("dcg", 8, 8000)  # K = 8^{-1/3} 8000^{2/3} = 200, ε = sqrt(1/1600)
    (200, 0.025)
    """
    d, r, a = kv_constants(measure, n_items, max_grade)
    t = check_scalar(horizon, "horizon", low=1, integer=True)
    check_scalar(top_k, "top_k", low=1, integer=True)
    e = -(-int(n_items) // int(top_k))
    k_blocks = max(1, math.floor((d * a / r) ** (1 / 3) * (t / e) ** (2 / 3) + 1e-9))
    return k_blocks, math.sqrt(d / (r * a * k_blocks))


def draw_exploration(
    rng: np.random.Generator, block_len: int, n_items: int, top_k: int = 1
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Exploration times and the objects shown on top at each (Algorithm 1 line 8).

    ``e = ⌈m/top_k⌉`` distinct offsets in ``0..block_len−1`` are drawn
    uniformly without replacement (ordered), and a uniformly random order of
    the objects is cut into ``e`` groups of ``top_k``: group ``g`` is shown on
    top at offset ``times[g]``. Every object is explored exactly once per
    block, at an offset uniform on the block, which is what Lemma 8 needs.
    With ``top_k = 1`` this is the paper's line 8 (object ``perm[g]`` at
    ``i_g``).

    Returns
    -------
    times
        Shape (e,), distinct offsets.
    groups
        Shape (e, top_k), object indices, the last group padded with -1.
    """
    e = -(-n_items // top_k)
    if block_len < e:
        raise ValueError(
            f"a block of {block_len} rounds cannot hold the {e} exploration rounds "
            f"that {n_items} items need (top_k={top_k})"
        )
    times, groups = _exploration_from_uniforms(
        rng.random(block_len + n_items)[None], block_len, n_items, top_k
    )
    return times[0], groups[0]


def _exploration_from_uniforms(
    u: FloatArray, block_len: int, n_items: int, top_k: int
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Batched core of :func:`draw_exploration` from i.i.d. uniforms ``u`` of shape (B, L + m).

    The ranks of i.i.d. uniforms are a uniformly random permutation, so the
    first ``e`` offsets of ``argsort(u[:, :L])`` are an ordered uniform sample
    without replacement and ``argsort(u[:, L:])`` a uniform order of the objects.
    """
    e = -(-n_items // top_k)
    times = np.argsort(u[:, :block_len], axis=1, kind="stable")[:, :e].astype(np.intp)
    perm = np.argsort(u[:, block_len:], axis=1, kind="stable").astype(np.intp)
    groups = np.full((u.shape[0], e * top_k), -1, dtype=np.intp)
    groups[:, :n_items] = perm
    return times, groups.reshape(u.shape[0], e, top_k)


def exploration_estimate(
    block_relevance: ArrayLike,
    times: ArrayLike,
    groups: ArrayLike,
    transform: Callable[[NDArray[Any]], FloatArray] | None = None,
) -> FloatArray:
    """The Lemma 8 estimate ``r̂(j) = g(r_{i_j}(j))`` of the block's average ``g(r)``.

    Parameters
    ----------
    block_relevance
        Shape (L, m): the block's relevance vectors.
    times, groups
        As returned by :func:`draw_exploration`.
    transform
        ``g`` (identity when None).

    Examples
    --------
    >>> exploration_estimate([[1, 0], [0, 1], [1, 1]], times=[2, 0], groups=[[1], [0]]).tolist()
    [1.0, 1.0]
    """
    rel = np.asarray(block_relevance)
    tt, gg = np.asarray(times, dtype=np.intp), np.asarray(groups, dtype=np.intp)
    g = transform or (lambda r: np.asarray(r, dtype=np.float64))
    est = np.zeros(rel.shape[1])
    for time, group in zip(tt, gg, strict=True):
        objs = group[group >= 0]
        est[objs] = g(rel[time, objs])
    return est


@njit
def _record_top(
    estimate: FloatArray,
    rows: NDArray[np.intp],
    orders: Orders,
    labels: NDArray[np.integer[Any]],
    dcg: bool,
) -> None:  # pragma: no cover
    """``estimate[b, orders[b, 0]] = g(labels[b, 0])`` for the runs ``b`` in ``rows``.

    ``g(r) = 2^r − 1`` (``dcg``) or ``r``, computed from whole grades, for which
    both are exact in float64: the same values as the array form.
    """
    for i in range(rows.size):
        b = rows[i]
        r = float(labels[b, 0])
        estimate[b, orders[b, 0]] = 2.0**r - 1.0 if dcg else r


@functools.lru_cache(maxsize=64)
def _topk_requirement(k: int) -> FeedbackRequirement:
    """``FeedbackRequirement("topk", k=k)``, built once per ``k`` (it is read every round)."""
    return FeedbackRequirement("topk", k=k)


@register_learner("rtop1f")
class RTop1F(_FixedItemsFTPL):
    """Ranking with Top-1 Feedback: blocked FTPL on unbiased block-average estimates.

    Algorithm 1 of Chaudhuri & Tewari (2015), batched over runs. The horizon
    ``T`` is cut into ``K`` blocks (lines 1-3) of ``L = ⌊T/K⌋`` rounds (the
    last block also takes the ``T mod K`` leftover rounds; rounds beyond ``T``
    continue in blocks of ``L``). At the start of block ``i``:
    ``S_i = S_{i−1} + r̂_{i−1}`` (line 7) and ``m`` exploration offsets are drawn
    uniformly without replacement (line 8, :func:`draw_exploration`). At
    exploration time ``i_j`` object ``j`` is put on top (line 11) and its grade
    revealed (line 12); every other round plays ``σ_t = M(S_i + p_t)``,
    ``p_t ~ U[0, 1/ε]^m`` (lines 14-15). At the block end
    ``r̂_i(j) = g(r_{i_j}(j))`` (line 17), an unbiased estimate of the block
    average of ``g(r)`` (Lemma 8). ``g(r) = 2^r − 1`` for DCG (§14.1.2).

    Line 11 allows "any permutation which places the jth object on top";
    ``explore`` picks one (see :data:`EXPLORE_MODES`): ``"front"`` (default)
    shows this round's FTPL ranking with ``j`` moved to the front, so an
    exploration round costs at most what moving one item costs; ``"random"``
    shows ``j`` above a uniformly random order of the rest.

    Top-k extension (``top_k > 1``, feedback top-k): an exploration round shows
    ``top_k`` not-yet-explored objects on top and reads all their grades, so a
    block needs only ``⌈m/top_k⌉`` exploration rounds and the schedule
    (:func:`rtop1f_schedule`) uses more, shorter blocks. Each object is still
    explored once per block at a uniformly random time, so Lemma 8 holds
    unchanged.

    Parameters
    ----------
    measure
        ``"dcg"`` (default), ``"sumloss"``, ``"pairwise"`` or ``"precision@k"``.
    horizon
        Known horizon ``T`` (the runner fills it). None: the anytime schedule by
        the doubling trick (Cesa-Bianchi & Lugosi 2006, §2.3): epochs of
        ``T_0, 2T_0, 4T_0, …`` rounds (``T_0`` the shortest power of two whose
        blocks hold the explorations), each a fresh Algorithm 1 for its length,
        so the regret stays ``O(T^{2/3})`` — within a factor
        ``2^{2/3}/(2^{2/3} − 1) ≈ 2.7`` of the known-horizon bound.
    n_blocks
        Number of blocks ``K`` >= 1; None uses Theorems 7/9/10.
    epsilon
        ``ε > 0``; None uses Theorems 7/9/10 (``sqrt(D/(RAK))``).
    max_grade
        Largest grade ``n`` >= 1 (enters ``ε`` for DCG, Thm. 9).
    explore
        ``"front"`` or ``"random"`` (line 11).
    top_k
        Grades revealed per round, >= 1 (1 = the paper's top-1 feedback).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    References
    ----------
    Chaudhuri & Tewari 2015, Algorithm 1, Lemma 8, Theorems 7, 9, 10, §13.2, §14.

    Examples
    --------
    >>> lrn = RTop1F(horizon=1000, n_runs=2, rng=0)
    >>> orders = lrn.rank(Context(t=1, n_items=5))
    >>> k_blocks, length, eps = lrn.schedule_  # K = 5^(-1/3) 1000^(2/3) = 58.5, ε = (5·58)^(-1/2)
    >>> k_blocks, length, round(eps, 4)
    (58, 17, 0.0587)
    """

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        measure: str = "dcg",
        horizon: int | None = None,
        n_blocks: int | None = None,
        epsilon: float | None = None,
        max_grade: int = 1,
        explore: str = "front",
        top_k: int = 1,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self._setup(measure, max_grade)
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        if n_blocks is not None:
            check_scalar(n_blocks, "n_blocks", low=1, integer=True)
            if horizon is None:
                raise ValueError(
                    "n_blocks=K splits a known horizon into K blocks: pass horizon= too, "
                    "or leave both unset for the anytime (doubling) schedule"
                )
            if n_blocks > horizon:
                raise ValueError(f"n_blocks must be <= horizon={horizon}, got {n_blocks}")
        if epsilon is not None:
            check_scalar(epsilon, "epsilon", low=0, include_low=False)
        check_choice(explore, "explore", EXPLORE_MODES)
        check_scalar(top_k, "top_k", low=1, integer=True)
        self.measure = measure
        self.horizon = horizon
        self.n_blocks = n_blocks
        self.epsilon = epsilon
        self.max_grade = max_grade
        self.explore = explore
        self.top_k = top_k
        self._t = 0
        self._block_end = 0  # last round (1-based) of the current block
        self._block_index = 0

    @property
    def requires(self) -> FeedbackRequirement:  # type: ignore[override]
        """Top-``top_k`` relevance."""
        return _topk_requirement(int(self.top_k))

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"horizon": 200}
        yield {"horizon": 150, "measure": "sumloss", "explore": "random"}
        yield {"horizon": 60, "n_blocks": 3, "top_k": 2, "epsilon": 0.2}

    # -- schedule -----------------------------------------------------------------

    def _first(self, m: int) -> None:
        self._n_explore = -(-m // int(self.top_k))
        epoch = int(self.horizon) if self.horizon is not None else self._first_epoch(m)
        self._start_epoch(m, epoch, start=1)

    def _first_epoch(self, m: int) -> int:
        """The shortest power-of-two horizon whose Theorem 7/9/10 blocks hold m explorations."""
        epoch = 1
        while epoch // self._schedule(m, epoch)[0] < self._n_explore:
            epoch *= 2
        return epoch

    def _schedule(self, m: int, horizon: int) -> tuple[int, float]:
        k_paper, _ = rtop1f_schedule(self.measure, m, horizon, self.max_grade, self.top_k)
        k_blocks = self.n_blocks if self.n_blocks is not None else k_paper
        d, r, a = kv_constants(self.measure, m, self.max_grade)
        # ε = sqrt(D/(RAK)) for the K actually used (eq. 11 with K full-information rounds)
        eps = float(self.epsilon) if self.epsilon is not None else math.sqrt(d / (r * a * k_blocks))
        return int(k_blocks), eps

    def _start_epoch(self, m: int, horizon: int, start: int) -> None:
        """Algorithm 1 afresh for ``horizon`` rounds from round ``start`` (S = 0)."""
        self._k_blocks, self._eps = self._schedule(m, horizon)
        self._epoch = (start, start + horizon - 1)
        self._block_index = 0
        self._len = horizon // self._k_blocks
        if self._len < self._n_explore:
            raise ValueError(
                f"blocks of {self._len} rounds (horizon={horizon}, "
                f"K={self._k_blocks}) cannot hold the {self._n_explore} exploration "
                f"rounds of {m} items; use a horizon >= m^2 (K = m^(-1/3) T^(2/3)) "
                "or set n_blocks"
            )
        self._estimate = np.zeros((self.n_runs, m))
        if self._scores is not None:
            self._scores[:] = 0.0

    @property
    def schedule_(self) -> tuple[int, int, float]:
        """``(K, L, ε)`` of the current epoch: number of blocks, block length, perturbation."""
        if self._m is None:
            raise RuntimeError("the schedule is fixed at the first round (it needs m)")
        return self._k_blocks, self._len, self._eps

    def _new_block(self) -> None:
        start = self._t  # the round about to be played (1-based)
        first, last = self._epoch
        if self.horizon is None and start > last:  # doubling: the next epoch is twice as long
            assert self._m is not None
            self._start_epoch(self._m, 2 * (last - first + 1), start)
            first, last = self._epoch
        self._block_index += 1
        # the K-th block takes the T mod K leftover rounds; blocks past T have length L
        length = last - start + 1 if self._block_index == self._k_blocks else self._len
        self._block_start, self._block_end = start, start + length - 1
        m, k, e = self._m, int(self.top_k), self._n_explore
        assert m is not None
        # one uniform draw per run per block: run b gets exactly draw_exploration(rngs[b], ...)
        times, self._groups = _exploration_from_uniforms(
            self.rngs.random((length + m,)), length, m, k
        )  # (B, e), (B, e, k)
        # The block's plan, grouped by offset: entries (run, group) sorted by exploration
        # time; offset o explores entries bounds[o]:bounds[o+1] (rows increasing).
        flat_times = times.reshape(-1)
        entries = np.argsort(flat_times, kind="stable")
        self._bounds = np.searchsorted(flat_times[entries], np.arange(length + 1)).tolist()
        self._plan_rows = entries // e
        self._plan_objs = self._groups.reshape(-1, k)[entries]  # (B e, top_k), -1 padded
        self._nothing_explored = (self._plan_rows[:0], self._plan_objs[:0])

    # -- protocol -----------------------------------------------------------------

    def rank(self, context: Context) -> Orders:
        """Exploit ``M(S_i + p_t)``, or put this round's exploration group on top."""
        m = self._start(context)
        self._t += 1
        if self._t > self._block_end:
            self._new_block()
        u = self._noise.next()
        assert self._scores is not None
        off = self._t - self._block_start
        lo, hi = self._bounds[off], self._bounds[off + 1]
        if lo == hi and m <= _FUSED_MAX_ITEMS:  # most rounds: no run explores
            self._explored = self._nothing_explored
            out = np.empty((self.n_runs, m), dtype=np.intp)
            _perturbed_orders(
                u, -1.0 / self._eps, self._scores, False, _NO_ROWS, _NO_ROWS, False, out
            )
            return out
        rows, objs = self._plan_rows[lo:hi], self._plan_objs[lo:hi]
        self._explored = (rows, objs)
        if m <= _FUSED_MAX_ITEMS and objs.shape[1] == 1:
            # keys, explored object on top and sort in one compiled pass (same arithmetic)
            out = np.empty((self.n_runs, m), dtype=np.intp)
            random_rest = self.explore == "random"
            _perturbed_orders(
                u, -1.0 / self._eps, self._scores, False, rows, objs[:, 0], random_rest, out
            )
            return out
        # negated keys -(S + p), sorted increasingly: saves a negation per round
        neg = np.multiply(u, -1.0 / self._eps)
        neg -= self._scores
        if lo == hi:
            return _ascending(neg)
        if self.explore == "random":
            neg[rows] = -u[rows]  # i.i.d. uniform keys: a uniformly random order of the rest
        flat = neg.reshape(-1)  # a view: writes go to neg
        if objs.shape[1] == 1:
            flat[rows * m + objs[:, 0]] = -np.inf  # one explored object: simply on top
        else:
            # Lift the explored objects above every other key: one sort shows them on top in
            # the order of their own keys, and the rest in the FTPL (or random) order.
            ok = objs >= 0
            flat[(rows[:, None] * m + objs)[ok]] -= 1.0 + float(np.ptp(neg[rows]))
        return _ascending(neg)

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """Record the explored grades (line 12); at the block end ``S += r̂`` (line 7)."""
        rows, objs = self._explored
        if rows.size == 0:
            pass
        elif objs.shape[1] == 1:  # top-1: the explored object is on top
            labels = feedback.labels  # type: ignore[attr-defined]
            if labels.dtype.kind in "iu":  # whole grades: 2^r − 1 is exact, fuse the scatter
                _record_top(self._estimate, rows, feedback.orders, labels, self.measure == "dcg")
            else:
                self._estimate[rows, feedback.orders[rows, 0]] = self._g(labels[rows, 0])
        else:
            # the explored objects occupy the top positions (-1 pads only the last group)
            n_shown = (objs >= 0).sum(axis=1)
            labels = feedback.labels  # type: ignore[attr-defined]
            top = np.arange(labels.shape[1])[None, :] < n_shown[:, None]
            r_idx, p_idx = np.nonzero(top)
            b = rows[r_idx]
            self._estimate[b, feedback.orders[b, p_idx]] = self._g(labels[b, p_idx])
        if self._t == self._block_end:
            assert self._scores is not None
            self._scores += self._estimate
            self._estimate[:] = 0.0
