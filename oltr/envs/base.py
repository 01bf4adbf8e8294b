"""The environment protocol, and the best fixed order in hindsight.

An environment holds the hidden relevance and shows the learner only contexts
and feedback::

    env.reset(rng=...)                      # the only place it (re)seeds
    context = env.observe(t)                # t = 1, 2, ... in order
    feedback = env.feedback(orders, rngs)   # through its feedback model
    values = env.evaluate(orders, measures) # full-information measures, for the trace
    env.comparator(measures, checkpoints)   # best fixed action in hindsight, or None

The current relevance lives in a name-mangled private attribute (subclasses
cannot clobber it by accident). The runner gives the learner contexts and
feedback objects only — never the environment — and every
feedback array is a fresh copy, so a learner cannot reach the truth.

:func:`hindsight_comparator` computes, for a fixed item set and an oblivious
relevance sequence ``r_1, …, r_T``, the cumulative value
``max_σ Σ_{s≤t} M(σ, r_s)`` (``min`` for losses) at each checkpoint ``t``:

* **separable measures** — ``M(σ, r) = Σ_i w(σ(i)) g(r_i) + h(r)``: DCG@k,
  Precision@k and SumLoss always, PairwiseLoss for binary relevance (it differs
  from SumLoss by a function of ``r``, Chaudhuri & Tewari 2015 eq. 2). The
  best order sorts the items by cumulative transformed relevance
  ``G_t(i) = Σ_{s≤t} g(r_s(i))``, and by the rearrangement inequality its value
  is ``Σ_s h(r_s) + Σ_j w_(j) G_(j)`` (both sorted decreasingly for a gain; ``w``
  increasingly for a loss) — O(m log m) per checkpoint after O(T m) prefix sums,
  for any ``m``. ``w`` and ``g`` are read off the measure itself (unit probes),
  and the decomposition is verified on every round, so it cannot drift from
  :mod:`oltr.metrics`.
* **other measures** (NDCG, AP, AUC, ERR, graded PairwiseLoss) — exact by
  enumerating the ``m!`` orders when ``m <= 8`` and (distinct relevance vectors)
  × ``m!`` <= 2·10⁷; ``None`` otherwise.

References
----------
Chaudhuri & Tewari 2015, §2 eq. (1) (regret against the best permutation in
hindsight) and §3 (measures of the form ``f(σ) · g(r)``).
Ailon 2014, §4 (minimising ``π · s`` by sorting ``s``).
"""

from __future__ import annotations

import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.feedback import Feedback, FeedbackModel
from oltr.metrics import resolve_measures
from oltr.random import RNGLike, as_rng
from oltr.types import Configurable, Context, FloatArray, Orders, RunGenerators, read_only
from oltr.validation import check_memory

__all__ = [
    "BLOCK_CELL_BYTES",
    "MAX_ENUMERATION_CELLS",
    "MAX_ENUMERATION_ITEMS",
    "check_block_memory",
    "SEPARABLE_MEASURES",
    "Environment",
    "hindsight_comparator",
]

#: Largest list the non-separable comparator enumerates (8! = 40 320 orders).
MAX_ENUMERATION_ITEMS = 8
#: Largest (distinct relevance vectors) × m! table the enumeration builds.
MAX_ENUMERATION_CELLS = 20_000_000
#: Measures of the form Σ_i w(σ(i)) g(r_i) + h(r) (PairwiseLoss only for binary relevance).
SEPARABLE_MEASURES = frozenset({"dcg", "precision", "sumloss", "position", "spearman"})
_CHUNK_CELLS = 1 << 22


class Environment(Configurable, ABC):
    """Base class of environments: hidden relevance, contexts, feedback, evaluation.

    Subclasses set ``context_kind`` and implement :meth:`_reset` and
    :meth:`_next`; fixed-item environments also override :meth:`comparator`.

    Parameters
    ----------
    feedback
        The feedback model that decides what :meth:`feedback` reveals.

    Attributes
    ----------
    context_kind : str
        ``"items"`` (a fixed set of items, no features) or ``"features"``.
    oblivious : bool
        True when the relevance sequence does not depend on the learner's
        rankings (it is fixed by the environment's stream alone).
    """

    _reserved: tuple[str, ...] = ("feedback",)
    context_kind: ClassVar[str] = "items"
    oblivious: ClassVar[bool] = True

    def __init__(self, *, feedback: FeedbackModel | None = None) -> None:
        if feedback is not None and not isinstance(feedback, FeedbackModel):
            raise TypeError(f"feedback must be a FeedbackModel, got {type(feedback).__name__}")
        self.feedback_model = feedback
        self.__t = 0
        self.__relevance: NDArray[Any] | None = None
        self.__ready = False

    # -- protocol -------------------------------------------------------------

    def reset(self, *, rng: RNGLike) -> None:
        """Start a new sequence of rounds, drawing everything random from ``rng``."""
        self.__t = 0
        self.__relevance = None
        self._reset(as_rng(rng))
        self.__ready = True

    def observe(self, t: int) -> Context:
        """The context of round ``t`` (1-based; rounds are observed in order)."""
        if not self.__ready:
            raise RuntimeError(f"{type(self).__name__}: call reset(rng=...) before observe()")
        if t != self.__t + 1:
            raise ValueError(
                f"rounds must be observed in order: expected t={self.__t + 1}, got {t}"
            )
        context, relevance = self._next(t)
        self.__t, self.__relevance = t, relevance
        return context

    def feedback(self, orders: Orders, rngs: RunGenerators | None = None) -> Feedback:
        """What the feedback model reveals about ``orders`` in the current round."""
        if self.feedback_model is None:
            raise RuntimeError(
                f"{type(self).__name__} has no feedback model; build it with "
                "feedback=<FeedbackModel>"
            )
        return self.feedback_model.observe(orders, self._current(), rngs=rngs)

    def evaluate(
        self, orders: Orders, measures: Mapping[str, Any] | Sequence[str], *, validate: bool = True
    ) -> dict[str, FloatArray]:
        """Full-information measures of each run's order in the current round.

        ``orders`` has shape (B, m); for duels, (B, 2, m), and each run's value
        is the mean over its two lists (Yue & Joachims 2009 eq. 2 charges both
        ``w_t`` and ``w'_t``). Returns name -> array of shape (B,).
        """
        rel = self._current()
        arr = np.asarray(orders)
        if validate:
            from oltr.validation import check_orders

            arr = check_orders(arr, rel.size, n_lists=2 if arr.ndim == 3 else 1)
        out: dict[str, FloatArray] = {}
        for name, measure in resolve_measures(measures).items():
            value = np.asarray(measure(rel, arr, validate=False), dtype=np.float64)
            out[name] = 0.5 * (value[:, 0] + value[:, 1]) if value.ndim == 2 else value
        return out

    def comparator(
        self, measures: Mapping[str, Any] | Sequence[str], checkpoints: Sequence[int]
    ) -> dict[str, FloatArray | None]:
        """Cumulative value of the best fixed action in hindsight at each checkpoint.

        Returns name -> array of shape (n_checkpoints,), or None where the
        environment cannot compute it. The base class can never (contextual
        environments have no fixed best order; a learner-specific comparator,
        e.g. the best linear scorer, needs an offline fit).
        """
        return {name: None for name in resolve_measures(measures)}

    @property
    def t(self) -> int:
        """The last observed round (0 before the first)."""
        return self.__t

    @property
    def horizon_limit(self) -> int | None:
        """Most rounds this environment can serve (None: unbounded)."""
        return None

    # -- subclass hooks ---------------------------------------------------------

    @abstractmethod
    def _reset(self, rng: np.random.Generator) -> None:
        """Draw what the sequence needs (oblivious environments may draw it all)."""

    @abstractmethod
    def _next(self, t: int) -> tuple[Context, NDArray[Any]]:
        """The context and the hidden relevance (m,) of round ``t``."""

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        """Small parameter settings for the conformance suite."""
        yield {}

    # -- for evaluators and audits only -------------------------------------------

    def _current(self) -> NDArray[Any]:
        if self.__relevance is None:
            raise RuntimeError(f"{type(self).__name__}: no round observed yet; call observe(t)")
        return self.__relevance

    def _ground_truth(self) -> NDArray[Any]:
        """The current round's relevance, read-only (tests and evaluators only)."""
        return read_only(self._current())


# ---------------------------------------------------------------------------
# blocks of rounds drawn at once

#: Bytes per round and item of a block of rounds drawn at once: the uniform or Gumbel draws
#: (float64), the comparison or sort that uses them, and the int64 block they make.
BLOCK_CELL_BYTES = 24


def check_block_memory(
    n_items: int, block: int, cell_bytes: int = BLOCK_CELL_BYTES, also: str = ""
) -> None:
    """Refuse, before any round is drawn, ``n_items`` whose blocks of rounds exceed memory.

    ``also`` names another setting that enlarges a cell (``cell_bytes``).
    Raises :class:`oltr.errors.MemoryLimitError` (a ``ValueError``) naming ``n_items``.
    """
    check_memory(
        block * n_items * cell_bytes,
        f"n_items={n_items}{also} (rounds are drawn {block} at a time, {block} x {n_items} values)",
    )


# ---------------------------------------------------------------------------
# best fixed order in hindsight


def _check_checkpoints(checkpoints: ArrayLike, horizon: int) -> NDArray[np.intp]:
    cp = np.asarray(checkpoints)
    if cp.ndim != 1 or cp.size == 0 or not np.issubdtype(cp.dtype, np.integer):
        raise ValueError(f"checkpoints must be a non-empty 1-D integer sequence, got {cp!r}")
    if cp[0] < 1 or (np.diff(cp) <= 0).any() or cp[-1] > horizon:
        raise ValueError(
            f"checkpoints must increase strictly within 1..{horizon}, got "
            f"{cp.tolist()[:5]}{'...' if cp.size > 5 else ''}"
        )
    return cp.astype(np.intp)


def _separable(
    measure: Any, relevance: NDArray[np.float64], cp: NDArray[np.intp]
) -> FloatArray | None:
    """Best fixed order's cumulative value for a separable measure, or None if not separable."""
    n_rounds, m = relevance.shape
    ident = np.arange(m)
    base = float(measure(np.zeros(m), ident))  # h(0)
    w = np.asarray(measure(np.eye(m), ident), dtype=np.float64) - base  # w(p) g(1)
    p_star = int(np.argmax(np.abs(w)))
    if w[p_star] == 0.0:
        return None
    values, inverse = np.unique(relevance, return_inverse=True)
    probes = np.zeros((values.size, m))
    probes[:, p_star] = values
    g_of = (np.asarray(measure(probes, ident), dtype=np.float64) - base) / w[p_star]
    g = g_of[inverse.reshape(n_rounds, m)]  # (T, m), g(1) = 1
    h = np.asarray(measure(relevance, ident), dtype=np.float64) - g @ w
    # Verify M(σ, r) = Σ_i w(σ(i)) g(r_i) + h(r) on every round for two more orders.
    for order in (ident[::-1], np.roll(ident, 1)):
        ranks = np.empty(m, dtype=np.intp)
        ranks[order] = ident
        model = g @ w[ranks] + h
        truth = np.asarray(measure(relevance, order), dtype=np.float64)
        if not np.allclose(model, truth, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(truth).max())):
            warnings.warn(
                f"measure {measure.label!r} is not separable on this relevance "
                "sequence; falling back to enumeration",
                RuntimeWarning,
                stacklevel=3,
            )
            return None
    big_g = np.cumsum(g, axis=0)[cp - 1]  # (n_c, m)
    big_h = np.cumsum(h)[cp - 1]
    g_desc = -np.sort(-big_g, axis=1)
    w_sorted = -np.sort(-w) if measure.kind == "gain" else np.sort(w)
    return np.asarray(big_h + g_desc @ w_sorted, dtype=np.float64)


def _enumerated(
    measure: Any, relevance: NDArray[np.float64], cp: NDArray[np.intp]
) -> FloatArray | None:
    """Best fixed order's cumulative value by enumerating all m! orders, or None if too big."""
    from oltr.permutations import all_orders

    n_rounds, m = relevance.shape
    if m > MAX_ENUMERATION_ITEMS:
        return None
    rows, inverse = np.unique(relevance, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_orders = math.factorial(m)
    if rows.shape[0] * n_orders > MAX_ENUMERATION_CELLS:
        return None
    orders = all_orders(m)
    table = np.empty((rows.shape[0], n_orders))  # table[u, o] = M(order o, row u)
    step = max(1, _CHUNK_CELLS // (n_orders * m))
    for a in range(0, rows.shape[0], step):
        chunk = rows[a : a + step, None, :]
        table[a : a + step] = measure(chunk, orders[None, :, :], validate=False)
    # counts[c, u]: how often row u occurs in rounds 1..cp[c]
    edges = np.concatenate([[0], cp])
    seg = np.stack(
        [
            np.bincount(inverse[lo:hi], minlength=rows.shape[0])
            for lo, hi in zip(edges[:-1], edges[1:], strict=True)
        ]
    )
    counts = np.cumsum(seg, axis=0).astype(np.float64)
    totals = counts @ table  # (n_c, m!)
    best = totals.max(axis=1) if measure.kind == "gain" else totals.min(axis=1)
    return np.asarray(best, dtype=np.float64)


def hindsight_comparator(
    relevance: ArrayLike, measure: Any, checkpoints: Sequence[int]
) -> FloatArray | None:
    """Cumulative value of the best fixed order in hindsight, at each checkpoint.

    ``out[c] = max_σ Σ_{s=1}^{t_c} M(σ, r_s)`` for a gain (``min`` for a loss),
    the comparator of Chaudhuri & Tewari (2015) eq. (1), recomputed for every
    checkpoint ``t_c`` (the best order may change with ``t``).

    Parameters
    ----------
    relevance
        Array of shape (T, m): the relevance of rounds 1..T (grades >= 0).
    measure
        A measure string or :class:`oltr.metrics.Measure`.
    checkpoints
        Strictly increasing rounds in 1..T.

    Returns
    -------
    Array of shape (n_checkpoints,), or None when the measure is not separable
    and enumeration is too large (``m > 8`` or too many distinct relevance
    vectors; see the module docstring).

    Examples
    --------
    >>> r = [[1, 0], [1, 0], [0, 1]]  # item 0 is relevant twice, item 1 once
    >>> hindsight_comparator(r, "precision@1", [1, 2, 3]).tolist()  # item 0 on top throughout
    [1.0, 2.0, 2.0]
    """
    from threadpoolctl import threadpool_limits

    from oltr.metrics import get_measure

    rel = np.asarray(relevance, dtype=np.float64)
    if rel.ndim != 2 or rel.shape[0] < 1 or rel.shape[1] < 1:
        raise ValueError(f"relevance must have shape (T, m) with T, m >= 1, got {rel.shape}")
    if not np.isfinite(rel).all() or (rel < 0).any():
        raise ValueError("relevance must hold finite grades >= 0")
    meas = get_measure(measure)
    cp = _check_checkpoints(checkpoints, rel.shape[0])
    binary = bool(np.isin(rel, (0.0, 1.0)).all())
    # One BLAS thread: a multi-threaded matrix product sums in an order that depends on
    # the thread count, and the comparator must be equal bit for bit on every machine.
    with threadpool_limits(1, user_api="blas"):
        if meas.name in SEPARABLE_MEASURES or (meas.name == "pairwise" and binary):
            out = _separable(meas, rel, cp)
            if out is not None:
                return out
        return _enumerated(meas, rel, cp)
