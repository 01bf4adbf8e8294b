"""Feedback: what a round reveals to the learner, and the models that decide it.

* :mod:`oltr.feedback.kinds`: one frozen dataclass per kind (full relevance,
  top-k labels, chosen items, bandit loss, duel outcome) and the
  :class:`FeedbackRequirement` a learner declares;
* :mod:`oltr.feedback.feedback_models`: the feedback models an environment reveals
  through (registered ``full``, ``top-k``, ``choice``, ``bandit``, ``duel``);
* :mod:`oltr.feedback.clicks`: the clicks on the shown list under a click
  model (``clicks``), for learners that learn from clicks directly;
* :mod:`oltr.feedback.interleaved`: duels decided by interleaving two lists and
  simulated clicks (``interleaved-clicks``).
"""

from oltr.feedback.clicks import ClickFeedback, ClickFeedbackModel
from oltr.feedback.feedback_models import (
    BanditFeedbackModel,
    ChoiceFeedbackModel,
    DuelFeedbackModel,
    FeedbackModel,
    FullFeedbackModel,
    TopKFeedbackModel,
)
from oltr.feedback.interleaved import InterleavedClickFeedback
from oltr.feedback.kinds import (
    FEEDBACK_KINDS,
    BanditFeedback,
    ChoiceFeedback,
    DuelFeedback,
    Feedback,
    FeedbackKind,
    FeedbackRequirement,
    FullFeedback,
    NoFeedback,
    TopKFeedback,
)

__all__ = [
    "FEEDBACK_KINDS",
    "BanditFeedback",
    "BanditFeedbackModel",
    "ChoiceFeedback",
    "ChoiceFeedbackModel",
    "ClickFeedback",
    "ClickFeedbackModel",
    "DuelFeedback",
    "DuelFeedbackModel",
    "Feedback",
    "FeedbackKind",
    "FeedbackModel",
    "FeedbackRequirement",
    "FullFeedback",
    "FullFeedbackModel",
    "InterleavedClickFeedback",
    "NoFeedback",
    "TopKFeedback",
    "TopKFeedbackModel",
]
