"""Follow the Perturbed Leader on a fixed item set: full information and top-1 feedback.

Both learners rank ``m`` fixed items by a perturbed score vector::

    y = S + p,   p ~ Uniform[0, 1/ε]^m   (one fresh draw per round and run),
    σ = M(y) = argmin_σ σ · y            (Chaudhuri & Tewari 2015, Algorithm 1 line 15)

``S`` holds accumulated transformed relevance ``g(r)``. For every measure
handled here ``M(y)`` is a sort of ``y`` in decreasing order
(C&T 2015 §13.2 for SumLoss; §14.1.2 for DCG, where
``argmax f(σ)·y = argmin σ·y``; §14.2 for Precision@k, whose top-k set is the
top-k of the sort), so a round costs O(m log m).

=============================  ========  =================  ===================================
measure                        g(r)      sort direction     (D, R, A) (Kalai–Vempala constants)
=============================  ========  =================  ===================================
``sumloss`` / ``pairwise``     r         decreasing y       (m², m², m)         §13.2
``dcg``                        2^r − 1   decreasing y       (m, m(2ⁿ−1), m(2ⁿ−1))  §14.1.3
``precision@k``                r         decreasing y       (k, k, m)           §14.2.1
=============================  ========  =================  ===================================

(``n`` = ``max_grade``; PairwiseLoss has SumLoss's regret for binary relevance, eq. 2.)

* :class:`FullInformationFTPL` (``"ftpl"``) — full information
  (Kalai & Vempala 2005): ``S_t = Σ_{s<t} g(r_s)``; ``ε = sqrt(D / (R A T))``
  (the FTPL bound of eq. 11 with ``K`` replaced by ``T``), regret ``O(√T)``.
* :class:`RTop1F` (``"rtop1f"``) — top-1 feedback, Algorithm 1: ``K`` blocks,
  ``m`` exploration rounds per block, FTPL on the block-average estimates.
  ``K = (DA/R)^{1/3} (T/m)^{2/3} = m^{-1/3} T^{2/3}`` and
  ``ε = sqrt(D / (R A K))`` (Theorems 7, 9, 10), regret ``O(T^{2/3})``.

The schedule functions :func:`kv_constants` and :func:`ftpl_epsilon` give these
numbers; RTop-1F, its schedule, exploration draw and Lemma 8 estimator live in
:mod:`oltr.learners.rtop1f`.

References
----------
Chaudhuri & Tewari 2015, "Online Ranking with Top-1 Feedback", AISTATS:
Algorithm 1, Lemma 8, Theorems 7, 9, 10, §13–14.
Kalai & Vempala 2005, "Efficient algorithms for online decision problems".
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from oltr.feedback import Feedback, FeedbackRequirement
from oltr.kernels import njit
from oltr.learners.base import Learner
from oltr.permutations.counting import COUNTING_UP_TO, orders_by_counting
from oltr.registry import register_learner
from oltr.types import Context, FloatArray, Orders, RunGenerators, RunRNGLike
from oltr.validation import check_scalar

__all__ = [
    "FullInformationFTPL",
    "ftpl_epsilon",
    "gain_transform",
    "kv_constants",
    "parse_measure",
]

#: Most uniform draws per run per chunk of perturbations (see ``_Perturbations``).
_CHUNK_CELLS = 1 << 12


# ---------------------------------------------------------------------------
# measures and schedules


def parse_measure(measure: str) -> tuple[str, int | None]:
    """Split a measure string into (name, k); ``dcg``, ``sumloss``, ``pairwise``, ``precision@k``.

    >>> parse_measure("precision@3")
    ('precision', 3)
    >>> parse_measure("ndcg")
    Traceback (most recent call last):
    ...
    ValueError: measure must be one of ...; got 'ndcg' (C&T 2015 Thm. 12: no sublinear regret ...
    """
    if not isinstance(measure, str):
        raise TypeError(f"measure must be a str, got {type(measure).__name__}")
    name, _, k = measure.partition("@")
    ok = name in ("dcg", "sumloss", "pairwise") and not k
    if name == "precision" and k.isdigit() and int(k) >= 1:
        return name, int(k)
    if not ok:
        raise ValueError(
            "measure must be one of 'dcg', 'sumloss', 'pairwise', 'precision@k' "
            f"(k >= 1); got {measure!r} (C&T 2015 Thm. 12: no sublinear regret "
            "for NDCG, MAP, AUC)"
        )
    return name, None


def gain_transform(measure: str) -> Callable[[NDArray[Any]], FloatArray]:
    """The relevance transform ``g``: ``2^r − 1`` for DCG (C&T 2015 §14.1.2), ``r`` otherwise.

    >>> gain_transform("dcg")(np.array([0, 1, 2])).tolist()
    [0.0, 1.0, 3.0]
    """
    name, _ = parse_measure(measure)
    if name == "dcg":
        return lambda r: np.exp2(np.asarray(r, dtype=np.float64)) - 1.0
    return lambda r: np.asarray(r, dtype=np.float64)


def kv_constants(measure: str, n_items: int, max_grade: int = 1) -> tuple[float, float, float]:
    """Kalai–Vempala constants ``(D, R, A)`` of a measure (C&T 2015 §13.2, §14.1.3, §14.2.1).

    ``D`` bounds the ℓ1 norm of the learner's vectors ``f(σ)``, ``R`` the value
    ``f(σ)·g(r)``, ``A`` the ℓ1 norm of ``g(r)``, with the paper's orders of
    magnitude taken with constant 1: SumLoss/PairwiseLoss ``(m², m², m)``, DCG
    ``(m, m(2ⁿ−1), m(2ⁿ−1))``, Precision@k ``(k, k, m)``.

    >>> kv_constants("dcg", 10, max_grade=2)
    (10.0, 30.0, 30.0)
    """
    name, k = parse_measure(measure)
    m = float(check_scalar(n_items, "n_items", low=1, integer=True))
    gmax = 2.0 ** check_scalar(max_grade, "max_grade", low=1, integer=True) - 1.0
    if name == "dcg":
        return m, m * gmax, m * gmax
    if name == "precision":
        kk = float(min(int(k or 1), int(m)))
        return kk, kk, m
    return m * m, m * m, m


def ftpl_epsilon(measure: str, n_items: int, n_rounds: int, max_grade: int = 1) -> float:
    """Full-information FTPL's ``ε = sqrt(D / (R A T))`` (Kalai & Vempala 2005; C&T 2015 eq. 11).

    >>> round(ftpl_epsilon("sumloss", 10, 1000), 6)  # sqrt(1 / (m T))
    0.01
    """
    d, r, a = kv_constants(measure, n_items, max_grade)
    t = check_scalar(n_rounds, "n_rounds", low=1, integer=True)
    return math.sqrt(d / (r * a * t))


@functools.lru_cache(maxsize=256)
def _fixed_epsilon(measure: str, n_items: int, horizon: int, max_grade: int) -> float:
    """:func:`ftpl_epsilon` for a known horizon, remembered (it is read every round)."""
    return ftpl_epsilon(measure, n_items, horizon, max_grade)


# ---------------------------------------------------------------------------
# shared machinery


class _Perturbations:
    """Per-run draws (uniform on [0, 1)^m by default), fetched a chunk of rounds at a time.

    Chunks hold 1, 2, 4, … rounds, up to ``max(1, _CHUNK_CELLS // m)``: one
    generator call per run per chunk, and the sizes depend on the round and
    ``m`` only, never on ``B``, so run ``b`` draws the same numbers in any batch.
    A chunk is stored round-major, shape (c, B, m), so each round's (B, m)
    draws are one contiguous block: read in place, a run-major chunk would
    cost a cache miss per run and round.
    """

    #: The Generator method drawing each chunk: ``"random"`` (uniform) or
    #: ``"standard_exponential"``; both give in one call of shape (c, m) the numbers
    #: that c calls of shape (m,) would.
    draw = "random"

    def __init__(self, rngs: RunGenerators, n_items: int, draw: str = "random") -> None:
        self.rngs, self.m = rngs, n_items
        self.draw = draw
        self.cap = max(1, _CHUNK_CELLS // n_items)
        self.size = 1
        self.rounds: FloatArray = np.empty((0, len(rngs), n_items))
        self.pos = 0

    def __getattr__(self, name: str) -> Any:
        # A snapshot taken before chunks were stored round-major holds ``buf`` (B, c, m).
        if name == "rounds" and "buf" in self.__dict__:
            self.rounds = np.ascontiguousarray(self.__dict__.pop("buf").transpose(1, 0, 2))
            return self.rounds
        raise AttributeError(name)

    def next(self) -> FloatArray:
        if self.pos == self.rounds.shape[0]:
            c, m = self.size, self.m
            self.rounds = np.empty((c, len(self.rngs), m))
            for b, g in enumerate(self.rngs):
                self.rounds[:, b] = getattr(g, self.draw)((c, m))
            self.size = min(2 * self.size, self.cap)
            self.pos = 0
        out: FloatArray = self.rounds[self.pos]
        self.pos += 1
        return out


def _ascending(keys: FloatArray) -> Orders:
    """Orders sorting each row of ``keys`` (B, m) increasingly.

    The keys carry a continuous perturbation, so ties have probability 0 and
    the sort kind is only a speed choice: numpy's stable sort is faster on
    short rows, its introsort on long ones. Both are deterministic.
    """
    if keys.shape[-1] <= 256:
        return np.argsort(keys, axis=1, kind="stable")
    return np.argsort(keys, axis=1, kind="quicksort")


def _descending(keys: FloatArray) -> Orders:
    """Orders sorting ``keys`` (B, m) decreasingly."""
    return _ascending(-keys)


#: Longest list ranked by the fused kernel: beyond it ``_ascending`` switches to
#: numpy's introsort, whose order the kernel's stable sort need not reproduce on ties.
_FUSED_MAX_ITEMS = COUNTING_UP_TO


@njit
def _perturbed_orders(
    u: FloatArray,
    scale: float,
    scores: FloatArray,
    divide: bool,
    rows: NDArray[np.intp],
    items: NDArray[np.intp],
    random_rest: bool,
    out: Orders,
) -> None:  # pragma: no cover
    """One fused pass over the runs into ``out``: keys, explored items on top, stable sort.

    Row ``b`` sorts the keys ``-(S_b + u_b / scale)`` (``divide``, FTPL) or
    ``u_b · scale − S_b`` (RTop-1F, ``scale = −1/ε``) increasingly, with the
    same floating-point operations as the array form and a stable sort (whose
    result is unique), so the orders are bit for bit those of ``_ascending``.
    Runs ``rows[i]`` put ``items[i]`` on top (key −inf) and, with
    ``random_rest``, order the rest by ``−u_b``.

    The lists (callers keep to :data:`_FUSED_MAX_ITEMS` items) are ordered by
    counting (:func:`~oltr.permutations.counting.orders_by_counting`): a
    data-dependent sort of fresh random keys mispredicts a branch per item;
    counting does not. ``out`` is allocated by the caller: an array made here
    would cost more to hand back to Python than to fill.
    """
    n_runs, m = u.shape
    explored = np.full(n_runs, -1, dtype=np.intp)
    for i in range(rows.size):
        explored[rows[i]] = items[i]
    keys = np.empty((n_runs, m))
    for b in range(n_runs):
        j, row = explored[b], keys[b]
        if j >= 0 and random_rest:
            for i in range(m):
                row[i] = -u[b, i]
        elif divide:
            for i in range(m):
                row[i] = -(scores[b, i] + u[b, i] / scale)
        else:
            for i in range(m):
                row[i] = u[b, i] * scale - scores[b, i]
        if j >= 0:
            row[j] = -np.inf
    orders_by_counting(keys, out)


@njit
def _add_gains(
    scores: FloatArray, relevance: NDArray[np.integer[Any]], dcg: bool
) -> None:  # pragma: no cover
    """``scores += g(relevance)`` in place for whole grades: ``2^r − 1`` (``dcg``) or ``r``.

    Both are exact in float64 for whole grades, so this adds the same values as
    the array form ``scores += g(relevance)``, in the same order per entry.
    """
    n_runs, m = scores.shape
    for b in range(n_runs):
        for i in range(m):
            r = float(relevance[b, i])
            scores[b, i] += 2.0**r - 1.0 if dcg else r


_NO_ROWS: NDArray[np.intp] = np.empty(0, dtype=np.intp)


class _FixedItemsFTPL(Learner[Feedback]):
    """Common state: accumulated scores S (B, m), the transform g, list size checks."""

    context_kind: ClassVar[str] = "items"

    def _setup(self, measure: str, max_grade: int) -> None:
        parse_measure(measure)
        check_scalar(max_grade, "max_grade", low=1, integer=True)
        self._g = gain_transform(measure)
        self._m: int | None = None
        self._scores: FloatArray | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_g", None)  # a lambda; rebuilt from the measure
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._g = gain_transform(self.measure)  # type: ignore[attr-defined]

    def _start(self, context: Context) -> int:
        if context.features is not None:
            raise ValueError(
                f"{type(self).__name__} ranks a fixed item set; got a context with features"
            )
        if self._m is None:
            self._m = int(context.n_items)
            self._scores = np.zeros((self.n_runs, self._m))
            self._noise = _Perturbations(self.rngs, self._m)
            self._first(self._m)
        elif context.n_items != self._m:
            raise ValueError(
                f"the item set has {self._m} items; round {context.t} has {context.n_items}"
            )
        return self._m

    def _first(self, m: int) -> None:
        """Hook: size-dependent setup at the first round."""

    @property
    def scores_(self) -> FloatArray:
        """Accumulated (estimated) transformed relevance S, shape (B, m), read-only copy."""
        if self._scores is None:
            raise RuntimeError("no round has been ranked yet")
        out = self._scores.copy()
        out.flags.writeable = False
        return out


# ---------------------------------------------------------------------------
# full information


@register_learner("ftpl")
class FullInformationFTPL(_FixedItemsFTPL):
    """Full-information Follow the Perturbed Leader over rankings, by sorting.

    Round ``t``: ``σ_t = sort decreasing (S_t + p_t)``, ``p_t ~ U[0, 1/ε]^m``;
    after it the whole relevance vector is revealed and ``S_{t+1} = S_t + g(r_t)``
    (C&T 2015 §13.2 "FTPL with full information"; §10 uses it as the
    full-information comparison of Fig. 2).

    Parameters
    ----------
    measure
        ``"dcg"`` (default, §10), ``"sumloss"``, ``"pairwise"`` or ``"precision@k"``;
        fixes ``g`` and ``(D, R, A)``.
    horizon
        Known horizon ``T`` >= 1 (the runner fills it): ``ε = sqrt(D/(RAT))``.
        None (and no ``epsilon``) uses the anytime ``ε_t = sqrt(D/(RAt))``.
    epsilon
        Fixed ``ε > 0`` overriding the schedule.
    max_grade
        Largest grade ``n`` >= 1 (enters ``(D, R, A)`` for DCG).
    n_runs, rng
        See :class:`~oltr.learners.base.Learner`.

    References
    ----------
    Kalai & Vempala 2005; Chaudhuri & Tewari 2015 §10, §13.2 (eq. 11).

    Examples
    --------
    >>> from oltr.feedback import FullFeedback
    >>> lrn = FullInformationFTPL(measure="sumloss", epsilon=1e-6, n_runs=2, rng=0)
    >>> ctx = Context(t=1, n_items=3)
    >>> orders = lrn.rank(ctx)
    >>> lrn.update(ctx, orders, FullFeedback(orders, np.array([[0, 0, 1]] * 2)))
    >>> lrn.scores_.tolist()
    [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    """

    requires = FeedbackRequirement("full")

    #: The runner passes the run's horizon T (``horizon=``) to this learner.
    horizon_dependent: ClassVar[bool] = True

    def __init__(
        self,
        *,
        measure: str = "dcg",
        horizon: int | None = None,
        epsilon: float | None = None,
        max_grade: int = 1,
        n_runs: int = 1,
        rng: RunRNGLike = None,
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self._setup(measure, max_grade)
        if horizon is not None:
            check_scalar(horizon, "horizon", low=1, integer=True)
        if epsilon is not None:
            check_scalar(epsilon, "epsilon", low=0, include_low=False)
        self.measure = measure
        self.horizon = horizon
        self.epsilon = epsilon
        self.max_grade = max_grade
        self._t = 0

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"horizon": 50}
        yield {"measure": "sumloss"}
        yield {"measure": "precision@2", "epsilon": 0.5}

    def _epsilon(self, t: int) -> float:
        if self.epsilon is not None:
            return float(self.epsilon)
        assert self._m is not None
        if self.horizon is not None:  # fixed for the run: computed once per setting
            return _fixed_epsilon(self.measure, self._m, int(self.horizon), self.max_grade)
        return ftpl_epsilon(self.measure, self._m, t, self.max_grade)

    def rank(self, context: Context) -> Orders:
        """Sort ``S + p`` decreasingly, a fresh ``p ~ U[0, 1/ε]^m`` per run."""
        m = self._start(context)
        self._t += 1
        assert self._scores is not None
        eps = self._epsilon(self._t)
        if m <= _FUSED_MAX_ITEMS:
            out = np.empty((self.n_runs, m), dtype=np.intp)
            _perturbed_orders(
                self._noise.next(), eps, self._scores, True, _NO_ROWS, _NO_ROWS, False, out
            )
            return out
        return _descending(self._scores + self._noise.next() / eps)

    def update(self, context: Context, orders: Orders, feedback: Feedback) -> None:
        """``S += g(r_t)`` with the full relevance vector."""
        assert self._scores is not None
        relevance = feedback.relevance  # type: ignore[attr-defined]
        if relevance.dtype.kind in "iu" and relevance.shape == self._scores.shape:
            _add_gains(self._scores, relevance, self.measure == "dcg")
        else:
            self._scores += self._g(relevance)


# ---------------------------------------------------------------------------
# top-1 feedback
