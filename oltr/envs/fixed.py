"""A fixed set of items with an oblivious relevance sequence.

``m`` items are ranked every round; round ``t`` has a hidden relevance vector
``r_t`` of shape (m,). The sequence is **oblivious**: it is fixed by the
environment's own stream (or given explicitly) and never depends on the
learner's rankings, the adversary of Chaudhuri & Tewari (2015 §2) and Ailon
(2014 §2). Because the items are fixed, the best permutation in hindsight
exists and :meth:`FixedItemsEnv.comparator` computes it.

Relevance kinds (``kind``), with item parameters ``probs`` (drawn uniformly on
[0, 1] at reset when not given):

* ``"bernoulli"`` — ``r_t(i) ~ Bernoulli(probs[i])``, independent;
* ``"graded"`` — ``r_t(i) ~ Binomial(max_grade, probs[i])``: grades 0..max_grade;
* ``"choice"`` — exactly ``n_chosen`` items have relevance 1, drawn without
  replacement with probability proportional to ``probs`` (Plackett–Luce by the
  Gumbel top-k trick): Ailon's k-choice sets ``U_t``; equal ``probs`` give his
  uniform lower-bound adversary (§7).

or an explicit ``relevance`` array of shape (T, m).

Rounds are drawn in blocks of :data:`BLOCK` from the reset generator, so the
first ``t`` rounds do not depend on the horizon.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from oltr.envs.base import BLOCK_CELL_BYTES, Environment, check_block_memory, hindsight_comparator
from oltr.feedback import FeedbackModel
from oltr.metrics import resolve_measures
from oltr.registry import register_env
from oltr.types import Context, FloatArray
from oltr.validation import check_choice, check_scalar

__all__ = ["BLOCK", "FixedItemsEnv"]

#: Rounds drawn per call to the generator.
BLOCK = 1024


def _check_relevance(relevance: ArrayLike) -> NDArray[Any]:
    rel = np.array(relevance, copy=True)
    if rel.dtype == np.bool_ or not np.issubdtype(rel.dtype, np.number):
        raise TypeError(f"relevance must be a numeric (T, m) array, got dtype {rel.dtype}")
    if rel.ndim != 2 or rel.shape[0] < 1 or rel.shape[1] < 1:
        raise ValueError(f"relevance must have shape (T, m) with T, m >= 1, got {rel.shape}")
    bad = ~np.isfinite(rel) | (rel < 0)
    if bad.any():
        t, i = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(
            f"relevance must hold finite grades >= 0; round {t + 1}, item {i} is {rel[t, i]}"
        )
    rel.flags.writeable = False
    return rel


def _check_probs(probs: ArrayLike, n_items: int) -> FloatArray:
    p = np.asarray(probs, dtype=np.float64)
    if p.shape != (n_items,):
        raise ValueError(f"probs must have shape ({n_items},) (one per item), got {p.shape}")
    if not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"probs must lie in [0, 1], got {p.tolist()}")
    return p


@register_env("fixed-items-v1")
class FixedItemsEnv(Environment):
    """A fixed set of ``m`` items with an oblivious relevance sequence.

    Parameters
    ----------
    n_items
        Number of items ``m`` >= 1 (inferred from ``relevance`` when given).
    relevance
        Optional explicit sequence, shape (T, m), grades >= 0; the run may last
        at most T rounds. Overrides ``kind``.
    kind
        ``"bernoulli"``, ``"graded"`` or ``"choice"`` (see the module docstring).
    probs
        Item parameters in [0, 1], shape (m,); None draws them uniformly at reset.
    max_grade
        Largest grade for ``kind="graded"``, >= 1.
    n_chosen
        Items chosen per round for ``kind="choice"``, 1 <= n_chosen <= m.
    feedback
        The feedback model.

    References
    ----------
    Chaudhuri & Tewari 2015 §2 (oblivious adversary, fixed items), §10 (simulation).
    Ailon 2014 §2 (k-choice), §7 (uniform random choices).

    Examples
    --------
    >>> from oltr.feedback import TopKFeedbackModel
    >>> env = FixedItemsEnv(relevance=[[1, 0, 0], [0, 0, 1]], feedback=TopKFeedbackModel(k=1))
    >>> env.reset(rng=0)
    >>> ctx = env.observe(1)
    >>> orders = np.array([[0, 1, 2], [2, 1, 0]])  # two runs
    >>> env.feedback(orders).labels.tolist()
    [[1], [0]]
    >>> env.evaluate(orders, ["precision@1"])["precision@1"].tolist()
    [1.0, 0.0]
    """

    context_kind: ClassVar[str] = "items"

    def __init__(
        self,
        *,
        n_items: int | None = None,
        relevance: ArrayLike | None = None,
        kind: str = "bernoulli",
        probs: ArrayLike | None = None,
        max_grade: int = 1,
        n_chosen: int = 1,
        feedback: FeedbackModel | None = None,
    ) -> None:
        super().__init__(feedback=feedback)
        check_choice(kind, "kind", ("bernoulli", "graded", "choice"))
        check_scalar(max_grade, "max_grade", low=1, integer=True)
        self._explicit = None if relevance is None else _check_relevance(relevance)
        if self._explicit is not None:
            m = self._explicit.shape[1]
            if n_items is not None and n_items != m:
                raise ValueError(f"n_items={n_items} does not match relevance with {m} items")
        elif n_items is None:
            raise ValueError("n_items is required unless an explicit relevance array is given")
        else:
            m = check_scalar(n_items, "n_items", low=1, integer=True)
        self._m = int(m)
        if self._explicit is None:  # the draws of a graded block hold max_grade floats per cell
            graded = kind == "graded"
            extra, also = (
                (9 * int(max_grade), f" with max_grade={max_grade}") if graded else (0, "")
            )
            check_block_memory(self._m, BLOCK, BLOCK_CELL_BYTES + extra, also)
        check_scalar(n_chosen, "n_chosen", low=1, high=self._m, integer=True)
        self._probs = None if probs is None else _check_probs(probs, self._m)
        if kind == "choice" and self._probs is not None and (self._probs > 0).sum() < n_chosen:
            raise ValueError(
                f"kind='choice' needs at least n_chosen={n_chosen} items with "
                f"probs > 0, got {int((self._probs > 0).sum())}"
            )
        self.n_items = n_items
        self.relevance = relevance
        self.kind = kind
        self.probs = probs
        self.max_grade = max_grade
        self.n_chosen = n_chosen
        self._blocks: list[NDArray[Any]] = []

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"n_items": 4}
        yield {"n_items": 5, "kind": "graded", "max_grade": 3, "probs": [0.9, 0.1, 0.5, 0.3, 0.7]}
        yield {"n_items": 6, "kind": "choice", "n_chosen": 2}
        yield {"relevance": [[1, 0, 2], [0, 1, 0], [2, 2, 0]] * 10}

    @property
    def horizon_limit(self) -> int | None:
        """Most rounds available: T for an explicit sequence, None (unbounded) otherwise."""
        return None if self._explicit is None else int(self._explicit.shape[0])

    # -- hooks ----------------------------------------------------------------

    def _reset(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._blocks = []
        if self._explicit is None:
            self._p = self._probs if self._probs is not None else rng.random(self._m)

    def _draw_block(self) -> NDArray[Any]:
        rng, p, m = self._rng, self._p, self._m
        if self.kind == "bernoulli":
            return (rng.random((BLOCK, m)) < p).astype(np.int64)
        if self.kind == "graded":
            draws = rng.random((BLOCK, int(self.max_grade), m)) < p
            return np.asarray(draws.sum(axis=1, dtype=np.int64))
        # Gumbel top-k: the n_chosen largest of log p + Gumbel are a PL sample without replacement.
        with np.errstate(divide="ignore"):
            keys = np.log(p) + rng.gumbel(size=(BLOCK, m))
        top = np.argpartition(-keys, int(self.n_chosen) - 1, axis=1)[:, : int(self.n_chosen)]
        block = np.zeros((BLOCK, m), dtype=np.int64)
        np.put_along_axis(block, top, 1, axis=1)
        return block

    def _row(self, t: int) -> NDArray[Any]:
        if self._explicit is not None:
            if t > self._explicit.shape[0]:
                raise ValueError(
                    f"the explicit relevance holds {self._explicit.shape[0]} rounds; "
                    f"round {t} was requested"
                )
            return np.asarray(self._explicit[t - 1])
        block, row = divmod(t - 1, BLOCK)
        while len(self._blocks) <= block:
            self._blocks.append(self._draw_block())
        return np.asarray(self._blocks[block][row])

    def _next(self, t: int) -> tuple[Context, NDArray[Any]]:
        return Context(t=t, n_items=self._m), self._row(t)

    def _history(self, n_rounds: int) -> NDArray[Any]:
        if self._explicit is not None:
            return self._explicit[:n_rounds]
        return np.concatenate(self._blocks)[:n_rounds]

    # -- comparator -----------------------------------------------------------

    def comparator(
        self, measures: Mapping[str, Any] | Sequence[str], checkpoints: Sequence[int]
    ) -> dict[str, FloatArray | None]:
        """Cumulative value of the best fixed order over rounds 1..t at each checkpoint.

        Exact for every measure when ``m <= 8``, and for DCG, Precision@k,
        SumLoss (and PairwiseLoss on binary relevance) for any ``m``; None
        otherwise (:func:`oltr.envs.base.hindsight_comparator`). Only rounds
        already observed can be compared against.
        """
        cp = list(checkpoints)
        if not cp:
            raise ValueError("checkpoints must not be empty")
        if cp[-1] > self.t:
            raise ValueError(f"checkpoint {cp[-1]} lies beyond the last observed round {self.t}")
        history = self._history(int(cp[-1]))
        return {
            name: hindsight_comparator(history, measure, cp)
            for name, measure in resolve_measures(measures).items()
        }
