"""Click feedback: the simulated user's clicks on the shown list, and nothing else.

Learners that learn from clicks directly (PDGD, and the multileaving learners
P-DBGD and P-MGD, which interleave inside ``rank`` and credit the clicks
themselves) declare ``requires = FeedbackRequirement("clicks")``. The feedback
model shows the top ``k`` of each run's order, lets a click model from
:mod:`oltr.clicks` click on it given the hidden grades, and reveals the click
vector by position — never a grade, never an item below the page.

References
----------
Hofmann, Whiteson & de Rijke 2013, TOIS §6; Schuth et al. 2016, WSDM §5;
Oosterhuis & de Rijke 2018, CIKM §6.1 (simulated clicks on the top 10 of a ranking).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from oltr.clicks import STOP_RULES, StopRuleCascade, clicks_for_runs, make_click_model
from oltr.feedback.feedback_models import FeedbackModel
from oltr.feedback.kinds import Feedback
from oltr.registry import register_feedback
from oltr.types import Orders, RunGenerators
from oltr.validation import check_choice, check_scalar

__all__ = ["ClickFeedback", "ClickFeedbackModel"]


@dataclass(frozen=True, eq=False)
class ClickFeedback(Feedback):
    """The clicks on the shown result page.

    Attributes
    ----------
    clicks
        Bool array of shape (B, n), ``n = min(k, m)``: ``clicks[b, j]`` is True when
        the user of run ``b`` clicked the item at position ``j + 1``, that is item
        ``orders[b, j]``.
    """

    kind: ClassVar[str] = "clicks"
    clicks: NDArray[np.bool_]

    @classmethod
    def _arrays(cls) -> tuple[str, ...]:
        return ("clicks",)

    @property
    def n_shown(self) -> int:
        """Length ``n`` of the result page."""
        return int(self.clicks.shape[1])


@register_feedback("clicks")
class ClickFeedbackModel(FeedbackModel):
    """A simulated user clicking on the top ``k`` of each shown order.

    Parameters
    ----------
    click_model
        A name of :func:`oltr.clicks.make_click_model`: ``"perfect"``,
        ``"navigational"``, ``"informational"`` or ``"pbm-<name>"``.
    n_grades
        Relevance grades 0..n_grades-1 of the data: 3 for LETOR 3.0/4.0 (MQ2008,
        OHSUMED), 5 for MSLR and Yahoo!, 2 for binary sets.
    k
        Length of the result page, >= 1 (10 in the literature).
    stop_rule
        ``"after-click"`` or ``"every-position"`` (:mod:`oltr.clicks.cascade`).

    Examples
    --------
    >>> fb = ClickFeedbackModel(click_model="perfect", n_grades=3, k=2)
    >>> gens = RunGenerators.from_rng(0, 1)
    >>> out = fb.observe(np.array([[2, 0, 1]]), np.array([0, 0, 2]), rngs=gens)
    >>> out.clicks.tolist()          # grade 2 on top is always clicked, grade 0 never
    [[True, False]]
    """

    kind: ClassVar[str] = "clicks"
    stochastic: ClassVar[bool] = True

    def __init__(
        self,
        *,
        click_model: str = "perfect",
        n_grades: int = 5,
        k: int = 10,
        stop_rule: str = "after-click",
    ) -> None:
        check_scalar(n_grades, "n_grades", low=2, integer=True)
        check_scalar(k, "k", low=1, integer=True)
        check_choice(stop_rule, "stop_rule", STOP_RULES)
        self._model = make_click_model(click_model, n_grades=int(n_grades), stop_rule=stop_rule)
        self.click_model = click_model
        self.n_grades = n_grades
        self.k = k
        self.stop_rule = stop_rule

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"click_model": "informational", "k": 3}
        yield {"click_model": "navigational", "k": 4, "stop_rule": "every-position"}
        yield {"click_model": "pbm-perfect", "k": 2}

    def observe(
        self, orders: Orders, relevance: NDArray[Any], *, rngs: RunGenerators | None = None
    ) -> ClickFeedback:
        """Clicks on ``orders[:, :k]``; run ``b`` draws its coins from ``rngs[b]`` only."""
        orders, rel = self._batch(orders, relevance)
        gens = self._rngs(rngs, orders.shape[0])
        n = min(int(self.k), orders.shape[1])
        uniforms = gens.random((2, n))
        model = self._model
        clicks = (  # the cascade's compiled pass, for integer grades and a learner's own orders
            model.clicks_on_orders(rel, orders, uniforms)
            if isinstance(model, StopRuleCascade)
            else None
        )
        if clicks is None:  # the numpy path: any grade dtype, and the errors' messages
            try:
                clicks = clicks_for_runs(model, rel[orders[:, :n]], uniforms)
            except ValueError as exc:
                raise ValueError(f"click feedback ({self.click_model!r}): {exc}") from exc
        return ClickFeedback.handed_over(orders, clicks=clicks)
