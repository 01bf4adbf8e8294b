"""oltr: online learning to rank from restricted feedback.

Implements the systems of Chaudhuri & Tewari (2015, 2016), Ailon (2014) and
Yue & Joachims (2009): rankers that learn from top-k relevance, discrete choices
or dueling comparisons while being judged on the whole list.

The main nouns are importable from here; each subpackage exports its own
public names (``oltr.metrics``, ``oltr.data``, ``oltr.feedback``,
``oltr.envs``, ``oltr.learners``, ``oltr.experiments``, ...). Each name is
imported on first use (:mod:`oltr.lazy`), so ``import oltr`` loads neither numba
nor pandas; reading ``oltr.LEARNERS`` (or another table) imports every component
first, so the table is complete.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.build import check_compatible, make_env, make_feedback, make_learner
    from oltr.data.dataset import LetorDataset
    from oltr.data.letor import load_letor
    from oltr.envs.base import Environment
    from oltr.experiments.config import load_config
    from oltr.experiments.runner import RunSetSpec, run_set
    from oltr.experiments.sweep import run_experiment
    from oltr.feedback.feedback_models import FeedbackModel
    from oltr.feedback.kinds import Feedback, FeedbackRequirement
    from oltr.learners.base import Learner
    from oltr.learners.linear import LinearRanker
    from oltr.metrics.measures import Measure, get_measure
    from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS
    from oltr.types import Context, RunGenerators
    from oltr.version import __version__
else:
    _lazy_getattr, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.build": ["check_compatible", "make_env", "make_feedback", "make_learner"],
            "oltr.data.dataset": ["LetorDataset"],
            "oltr.data.letor": ["load_letor"],
            "oltr.envs.base": ["Environment"],
            "oltr.experiments.config": ["load_config"],
            "oltr.experiments.runner": ["RunSetSpec", "run_set"],
            "oltr.experiments.sweep": ["run_experiment"],
            "oltr.feedback.kinds": ["Feedback", "FeedbackRequirement"],
            "oltr.feedback.feedback_models": ["FeedbackModel"],
            "oltr.learners.base": ["Learner"],
            "oltr.learners.linear": ["LinearRanker"],
            "oltr.metrics.measures": ["Measure", "get_measure"],
            "oltr.registry": ["ENVIRONMENTS", "FEEDBACK_MODELS", "LEARNERS"],
            "oltr.types": ["Context", "RunGenerators"],
            "oltr.version": ["__version__"],
        },
    )

    def __getattr__(name: str) -> Any:
        if name in ("ENVIRONMENTS", "FEEDBACK_MODELS", "LEARNERS"):
            import oltr.build  # noqa: F401  (imports every component: the tables are complete)
        return _lazy_getattr(name)


__all__ = [
    "ENVIRONMENTS",
    "FEEDBACK_MODELS",
    "LEARNERS",
    "Context",
    "Environment",
    "Feedback",
    "FeedbackModel",
    "FeedbackRequirement",
    "Learner",
    "LetorDataset",
    "LinearRanker",
    "Measure",
    "RunGenerators",
    "RunSetSpec",
    "__version__",
    "check_compatible",
    "get_measure",
    "load_config",
    "load_letor",
    "make_env",
    "make_feedback",
    "make_learner",
    "run_experiment",
    "run_set",
]
