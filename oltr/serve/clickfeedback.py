"""Clicks as served feedback, and the round a click learner keeps between rank and update.

A ranker defined with ``"feedback": "clicks"`` (the vocabulary of
:class:`oltr.feedback.clicks.ClickFeedbackModel`: ``click_model``, ``n_grades``,
``k``, ``stop_rule``, which describe the simulated user and are not used by
the service except ``k``) shows the first ``n = min(k, m)`` items of the
answered ``order`` as its result page and takes feedback bodies
``{"clicks": [positions]}``: 0-based positions of that page, distinct, each
``< n``. :func:`oltr.serve.protocol.make_feedback_object` builds from them the
:class:`~oltr.feedback.clicks.ClickFeedback` the simulator builds
(``clicks[0, j]`` is True when position ``j`` was clicked), so the learner learns
exactly what it learns in :func:`oltr.experiments.runner.run_set`.

Click learners (PDGD, neural PDGD, P-MGD, P-DBGD, TD-DBGD) keep what their
update needs of the round in the learner between ``rank`` and ``update``: the
scores that sampled the Plackett–Luce list (Oosterhuis & de Rijke 2018, eq. 9
debiases with them), or the candidate directions and the multileaving's credit
(Schuth et al. 2016, Algorithm 1 lines 4–10). A live service shows several
lists before their clicks come back, so :func:`round_extra` keeps that round
with each impression (``extra["round"]``, the snapshot encoding of
:mod:`oltr.serve.state`) and :func:`resume_round` hands it back before the
impression's update; a loop that alternates rank and feedback, as the
simulator does, learns bit for bit what the simulator learns.
"""

from __future__ import annotations

from typing import Any

from oltr.feedback import FeedbackModel
from oltr.learners.base import Learner
from oltr.serve.state import decode_state, encode_state

__all__ = ["page_length", "resume_round", "round_extra"]


def page_length(model: FeedbackModel, m: int) -> int:
    """Length ``n = min(k, m)`` of the result page of a clicks model on ``m`` items."""
    return min(int(getattr(model, "k", m)), m)


def round_extra(learner: Learner[Any]) -> dict[str, Any]:
    """``{"round": …}``: the learner's round after ``rank``, encoded; ``{}`` if it keeps none."""
    state = getattr(learner, "round_state", None)
    if state is None:
        return {}
    return {"round": encode_state(state(), "round")}


def resume_round(learner: Learner[Any], extra: dict[str, Any]) -> None:
    """Hand ``extra["round"]`` (from :func:`round_extra`) back to the learner before its update."""
    resume = getattr(learner, "resume_round", None)
    if resume is not None and "round" in extra:
        resume(decode_state(extra["round"], None, "round"))
