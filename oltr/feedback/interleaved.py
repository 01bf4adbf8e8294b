"""Duel feedback by interleaving and simulated clicks.

Yue & Joachims 2009 §5.2; Radlinski, Kurup & Joachims 2008 (team-draft).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from oltr.clicks.click_models import CascadeClickModel, cascade_model
from oltr.clicks.methods import INTERLEAVING_METHODS, compare
from oltr.clicks.position_based import position_based_model
from oltr.clicks.team_draft_duels import team_draft_cascade_duels
from oltr.feedback.feedback_models import FeedbackModel
from oltr.feedback.kinds import DuelFeedback
from oltr.permutations.checks import first_non_permutation
from oltr.registry import register_feedback
from oltr.types import Orders, RunGenerators
from oltr.validation import check_choice, check_scalar

__all__ = ["InterleavedClickFeedback"]


@register_feedback("interleaved-clicks")
class InterleavedClickFeedback(FeedbackModel):
    """A simulated user decides a duel of two rankings by clicking on their interleaving.

    The two lists (orders[:, 0] = ranker A, the current w_t; orders[:, 1] =
    ranker B, the candidate w'_t) are interleaved into one result page of
    ``k`` documents, a click model clicks on it given the hidden grades, and the
    interleaving method credits the clicks: outcome −1 (A wins), 0 (tie), +1
    (B wins) — the comparison by interleaving that Yue & Joachims (2009 §1, §3)
    have in mind.

    Parameters
    ----------
    method
        ``"team_draft"`` (Radlinski et al. 2008), ``"balanced"`` or
        ``"probabilistic"`` (:mod:`oltr.clicks.interleaving`).
    click_model
        A cascade instantiation, ``"perfect"``, ``"navigational"`` or
        ``"informational"``, or ``"pbm-<name>"`` for the position-based model
        with that attractiveness (:mod:`oltr.clicks.click_models`).
    n_grades
        Relevance grades 0..n_grades−1 of the data (2, 3 or 5).
    k
        Length of the result page, >= 1.

    Examples
    --------
    >>> fb = InterleavedClickFeedback(click_model="perfect", n_grades=3, k=2)
    >>> orders = np.array([[[0, 1, 2], [2, 1, 0]]])       # A puts the relevant doc 0 on top
    >>> outs = [int(fb.observe(orders, np.array([2, 0, 0]),
    ...                        rngs=RunGenerators.from_rng(s, 1)).outcome[0]) for s in range(20)]
    >>> set(outs) <= {-1, 0}, -1 in outs
    (True, True)
    """

    kind: ClassVar[str] = "duel"
    stochastic: ClassVar[bool] = True

    def __init__(
        self,
        *,
        method: str = "team_draft",
        click_model: str = "perfect",
        n_grades: int = 5,
        k: int = 10,
    ) -> None:
        check_choice(method, "method", tuple(INTERLEAVING_METHODS))
        check_scalar(n_grades, "n_grades", low=2, integer=True)
        check_scalar(k, "k", low=1, integer=True)
        if not isinstance(click_model, str):
            raise TypeError(f"click_model must be a name, got {type(click_model).__name__}")
        self.method = method
        self.click_model = click_model
        self.n_grades = n_grades
        self.k = k
        self._model = self._build()

    def _build(self) -> Any:
        name = self.click_model
        try:
            if name.startswith("pbm-"):
                return position_based_model(name[4:], n_grades=self.n_grades)
            return cascade_model(name, n_grades=self.n_grades)
        except (ValueError, KeyError) as exc:
            raise ValueError(f"click_model {name!r} with n_grades={self.n_grades}: {exc}") from exc

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"click_model": "navigational", "k": 3}
        yield {"method": "probabilistic", "click_model": "informational", "k": 4}

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> DuelFeedback:
        """Each run's interleaved comparison of ``orders[:, 0]`` (A) and ``orders[:, 1]`` (B)."""
        orders, rel = self._batch(orders, relevance)
        gens = self._rngs(rngs, orders.shape[0])
        grades = np.asarray(rel)
        if grades.min() < 0 or grades.max() >= self.n_grades:
            raise ValueError(
                f"relevance grades must lie in 0..{self.n_grades - 1} "
                f"(n_grades={self.n_grades}), got {grades.min()}..{grades.max()}"
            )
        out = self._team_draft_outcomes(orders, grades, gens)
        if out is None:  # the general comparison: any method, click model and input
            out = compare(
                orders[:, 0],
                orders[:, 1],
                grades.astype(np.intp),
                self._model,
                method=self.method,
                k=int(self.k),
                rng=list(gens),
            )
        return DuelFeedback.handed_over(orders, outcome=np.asarray(out, dtype=np.int8))

    def _team_draft_outcomes(
        self, orders: Orders, grades: NDArray[Any], gens: RunGenerators
    ) -> NDArray[np.int8] | None:
        """:func:`~oltr.clicks.methods.compare` for team-draft interleaving and a cascade
        user, on a learner's own orders (C-ordered ``intp``, every list a permutation) and
        int64 grades in range: the same draws from each run's generator in the same order
        (the interleaving's coins, then the clicks' (2, n) uniforms), the same picks and clicks,
        without the public functions' checks. None, having drawn nothing, for anything else."""
        if not (
            self.method == "team_draft"
            and isinstance(self._model, CascadeClickModel)
            and grades.dtype == np.int64
            and orders.dtype == np.intp
            and orders.flags.c_contiguous
            and first_non_permutation(orders.reshape(-1, orders.shape[-1])) < 0
        ):
            return None
        n = min(int(self.k), orders.shape[-1])
        coins = np.stack([g.random(((n + 1) // 2,)) for g in gens])  # the interleaving's draws
        uniforms = np.stack([g.random((2, n)) for g in gens])  # then simulate()'s
        outcome = team_draft_cascade_duels(orders, coins, uniforms, grades, self._model)
        if outcome is None:  # not reached: the orders and grades were checked above
            raise RuntimeError("team-draft clicks: a shown item or grade out of range")
        return outcome
