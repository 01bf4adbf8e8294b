"""Ailon's adversaries: discrete choice and online rank aggregation, with their losses.

Two oblivious environments over a fixed set of ``m`` items (Ailon 2014 §2, §5).
Both draw their whole sequence from the generator given to ``reset`` (in blocks
of :data:`BLOCK` rounds, so the first ``t`` rounds never depend on the horizon)
and never look at the learner's rankings.

* :class:`ChoiceEnv` (``ailon-choice-v1``) — each round nature chooses a set
  ``U_t`` of ``n_chosen = k`` items; the hidden relevance is its indicator
  ``s_t`` (1 = chosen). With the ``choice`` feedback model the learner sees
  ``U_t`` after ranking (§2). The loss of Theorem 3.1 is the pairwise loss
  ``ℓℓ(π, s) = Σ_{u≠v} [u ≺_π v] [s(v) − s(u)]₊`` (eq. 2.2), which on binary
  relevance is exactly the registered measure ``"pairwise"``; Ailon's
  ``ℓ(π, s) = Σ_u π(u) s(u)`` (eq. 2.1) is ``"sumloss"`` (positions from 1)
  and differs from ``ℓℓ`` by ``k(k+1)/2``, so both have the same regret. In the
  single-choice case (``k = 1``) ``ℓℓ`` is the 0-based position of the chosen
  item, the loss of §1 and §7.
* :class:`RankAggregationEnv` (``spearman-aggregation-v1``) — each round nature
  picks a ranking ``σ_t`` (§5); the hidden relevance is ``r_t(u) = m − σ_t(u)``
  (``σ_t(u)`` counted from 1, so grades ``0..m−1``, the top item of ``σ_t`` has
  ``m − 1``). The ``full`` feedback model reveals ``r_t``, i.e. ``σ_t``
  exactly. Since ``Σ_u π(u) r_t(u) = m²(m+1)/2 − ρ(π, σ_t)`` with Ailon's
  unnormalised Spearman correlation ``ρ(π, σ) = Σ_u π(u) σ(u)``, the measure
  ``"sumloss"`` equals the loss ``−ρ`` up to a constant of ``m``, and has the
  same regret; :func:`spearman_rho` gives ``ρ`` itself.

Losses beyond the registered measures, with the measure signature
``(relevance, order, *, k=None, mask=None)``:

* :func:`position_loss` — Ailon's ``ℓ_z(π, s) = Σ_u z(π(u)) s(u)`` (§8) for a
  nondecreasing position weight ``z`` (:data:`POSITION_WEIGHTS`: ``linear``
  ``z(i) = i − 1``, eq. 2.1 with positions from 0; ``quadratic``; ``dcg``);
* :func:`spearman_rho` — ``ρ(π, σ)`` with ``σ(u) = m − r(u)`` (a gain).

Adversaries (``kind``) of :class:`ChoiceEnv`:

* ``"uniform"`` — ``U_t`` uniform among the ``k``-subsets, independent over
  rounds: the lower-bound adversary of Theorem 3.3 (§7). Every algorithm then
  has expected loss ``ℓℓ`` exactly ``k(m−k)/2`` per round (``(m−1)/2`` for a
  single choice), while the best ranking in hindsight does better by
  ``Θ(m^{3/2} √(Tk))``.
* ``"zipf"`` — item popularities ``p ∝ 1/j^skew`` over a hidden random item
  order drawn at reset; ``U_t`` is drawn without replacement in proportion to
  ``p`` (Plackett–Luce by the Gumbel top-k trick). A learnable adversary.
* ``"cyclic"`` — deterministic round robin over a hidden random item order:
  ``U_t`` is the next ``k`` items, cyclically. Every item is chosen equally
  often, so every fixed ranking's loss is about ``T k(m−k)/2``; it punishes
  deterministic leaders.

References
----------
Ailon 2014, Online Ranking: Discrete Choice, Spearman Correlation and Other
Feedback: §2 (eq. 2.1, 2.2, 2.3), §5 (Spearman), §7 (uniform adversary), §8 (ℓ_z).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from oltr.envs.base import Environment, check_block_memory, hindsight_comparator
from oltr.feedback import FeedbackModel
from oltr.metrics import resolve_measures
from oltr.permutations import plackett_luce, ranks_from_order
from oltr.registry import register_env
from oltr.types import Context, FloatArray
from oltr.validation import check_choice, check_scalar

__all__ = ["BLOCK", "ChoiceEnv", "RankAggregationEnv"]

#: Rounds drawn per call to the generator.
BLOCK = 1024


# ---------------------------------------------------------------------------
# losses


# ---------------------------------------------------------------------------
# a fixed item set with an oblivious sequence drawn in blocks


class _ObliviousSequence(Environment):
    """Fixed ``m`` items; round ``t``'s relevance is row ``t`` of a sequence drawn at reset."""

    context_kind: ClassVar[str] = "items"
    _m: int

    def _reset(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._blocks: list[NDArray[np.int64]] = []
        self._start(rng)

    def _start(self, rng: np.random.Generator) -> None:
        """Draw the hidden parameters of the sequence (before any round)."""

    def _draw_block(self, first: int) -> NDArray[np.int64]:
        """Rounds ``first .. first + BLOCK − 1`` (0-based) of the sequence, shape (BLOCK, m)."""
        raise NotImplementedError

    def _next(self, t: int) -> tuple[Context, NDArray[Any]]:
        block, row = divmod(t - 1, BLOCK)
        while len(self._blocks) <= block:
            self._blocks.append(self._draw_block(len(self._blocks) * BLOCK))
        return Context(t=t, n_items=self._m), self._blocks[block][row]

    def comparator(
        self, measures: Mapping[str, Any] | Sequence[str], checkpoints: Sequence[int]
    ) -> dict[str, FloatArray | None]:
        """Cumulative value of the best fixed order over rounds 1..t at each checkpoint.

        Exact for SumLoss, PairwiseLoss (binary relevance), DCG and Precision@k
        for any ``m``, and for every measure when ``m <= 8``
        (:func:`oltr.envs.base.hindsight_comparator`).
        """
        cp = list(checkpoints)
        if not cp:
            raise ValueError("checkpoints must not be empty")
        if cp[-1] > self.t:
            raise ValueError(f"checkpoint {cp[-1]} lies beyond the last observed round {self.t}")
        history = np.concatenate(self._blocks)[: int(cp[-1])]
        return {
            name: hindsight_comparator(history, measure, cp)
            for name, measure in resolve_measures(measures).items()
        }


@register_env("ailon-choice-v1")
class ChoiceEnv(_ObliviousSequence):
    """Ailon's discrete-choice adversary: ``k`` items chosen per round, oblivious.

    The hidden relevance of round ``t`` is the indicator ``s_t`` of the chosen
    set ``U_t`` (``|U_t| = n_chosen``); the whole sequence is fixed by the
    generator given to ``reset`` and never depends on the rankings shown.

    Parameters
    ----------
    n_items
        Number of items ``m`` >= 2.
    n_chosen
        Items chosen per round ``k``, 1 <= k <= m − 1 (Ailon assumes k <= m/2
        for his value of M; larger k is allowed).
    kind
        ``"uniform"`` (Theorem 3.3's random adversary), ``"zipf"`` or
        ``"cyclic"`` (see the module docstring).
    skew
        Zipf exponent > 0 for ``kind="zipf"`` (popularity ``∝ 1/j^skew``).
    feedback
        The feedback model (``choice`` reveals ``U_t``; ``full`` reveals ``s_t``).

    References
    ----------
    Ailon 2014, §2 (single and k-choice), Theorem 3.3 and §7 (uniform adversary).

    Examples
    --------
    >>> from oltr.feedback import ChoiceFeedbackModel
    >>> env = ChoiceEnv(n_items=4, kind="cyclic", feedback=ChoiceFeedbackModel())
    >>> env.reset(rng=0)
    >>> chosen = []
    >>> for t in range(1, 5):
    ...     ctx = env.observe(t)
    ...     chosen.append(int(np.flatnonzero(env.feedback(np.array([[0, 1, 2, 3]])).chosen[0])[0]))
    >>> sorted(chosen)  # round robin: every item once in 4 rounds
    [0, 1, 2, 3]
    """

    def __init__(
        self,
        *,
        n_items: int,
        n_chosen: int = 1,
        kind: str = "uniform",
        skew: float = 1.0,
        feedback: FeedbackModel | None = None,
    ) -> None:
        super().__init__(feedback=feedback)
        check_scalar(n_items, "n_items", low=2, integer=True)
        check_block_memory(n_items, BLOCK)
        check_scalar(n_chosen, "n_chosen", low=1, high=n_items - 1, integer=True)
        check_choice(kind, "kind", ("uniform", "zipf", "cyclic"))
        check_scalar(skew, "skew", low=0, include_low=False)
        self.n_items = n_items
        self.n_chosen = n_chosen
        self.kind = kind
        self.skew = skew
        self._m = int(n_items)

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"n_items": 5}
        yield {"n_items": 6, "n_chosen": 2, "kind": "zipf", "skew": 1.5}
        yield {"n_items": 4, "n_chosen": 3, "kind": "cyclic"}

    def _start(self, rng: np.random.Generator) -> None:
        self._hidden = rng.permutation(self._m)  # hidden item order (zipf, cyclic)

    def _draw_block(self, first: int) -> NDArray[np.int64]:
        m, k = self._m, int(self.n_chosen)
        if self.kind == "cyclic":
            slots = (first + np.arange(BLOCK))[:, None] * k + np.arange(k)
            top = self._hidden[slots % m]
        else:
            # Gumbel top-k: the k largest of log p + Gumbel are a PL draw without replacement;
            # equal p gives a uniform k-subset.
            keys = self._rng.gumbel(size=(BLOCK, m))
            if self.kind == "zipf":
                log_p = np.empty(m)
                log_p[self._hidden] = -float(self.skew) * np.log(np.arange(1.0, m + 1.0))
                keys += log_p
            top = np.argpartition(-keys, k - 1, axis=1)[:, :k]
        block = np.zeros((BLOCK, m), dtype=np.int64)
        np.put_along_axis(block, top, 1, axis=1)
        return block


@register_env("spearman-aggregation-v1")
class RankAggregationEnv(_ObliviousSequence):
    """Online rank aggregation under Spearman's correlation: a ranking per round, oblivious.

    Round ``t`` hides a ranking ``σ_t`` stored as the grades
    ``r_t(u) = m − σ_t(u)`` (0..m−1; see the module docstring); the ``full``
    feedback model reveals it after the learner ranks. The rankings are drawn
    at reset, independently over rounds:

    * ``"uniform"`` — uniformly random rankings;
    * ``"plackett-luce"`` — Plackett–Luce around a hidden centre ranking ``c``
      drawn at reset, log-weight ``−concentration · j`` for the item at
      position ``j`` (from 0) of ``c``: the larger ``concentration``, the closer
      ``σ_t`` stays to ``c``.

    Parameters
    ----------
    n_items
        Number of items ``m`` >= 2.
    kind
        ``"uniform"`` or ``"plackett-luce"``.
    concentration
        Spread of the Plackett–Luce rankings, > 0.
    feedback
        The feedback model (``full`` reveals ``σ_t``).

    References
    ----------
    Ailon 2014, §5 and Corollary 5.1.

    Examples
    --------
    >>> env = RankAggregationEnv(n_items=4)
    >>> env.reset(rng=0)
    >>> ctx = env.observe(1)
    >>> sorted(env._ground_truth().tolist())  # the grades of a ranking
    [0, 1, 2, 3]
    """

    def __init__(
        self,
        *,
        n_items: int,
        kind: str = "plackett-luce",
        concentration: float = 0.5,
        feedback: FeedbackModel | None = None,
    ) -> None:
        super().__init__(feedback=feedback)
        check_scalar(n_items, "n_items", low=2, integer=True)
        check_block_memory(n_items, BLOCK)
        check_choice(kind, "kind", ("uniform", "plackett-luce"))
        check_scalar(concentration, "concentration", low=0, include_low=False)
        self.n_items = n_items
        self.kind = kind
        self.concentration = concentration
        self._m = int(n_items)

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"n_items": 5}
        yield {"n_items": 4, "kind": "uniform"}

    def _start(self, rng: np.random.Generator) -> None:
        centre = rng.permutation(self._m)
        self._log_w = np.empty(self._m)
        self._log_w[centre] = -float(self.concentration) * np.arange(self._m)

    def _draw_block(self, first: int) -> NDArray[np.int64]:
        m = self._m
        if self.kind == "uniform":
            orders = self._rng.permuted(np.broadcast_to(np.arange(m), (BLOCK, m)), axis=1)
        else:
            orders = plackett_luce(np.broadcast_to(self._log_w, (BLOCK, m)), self._rng)
        return (m - 1 - ranks_from_order(orders)).astype(np.int64)
