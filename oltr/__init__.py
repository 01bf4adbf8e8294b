"""oltr: online learning to rank from restricted feedback.

Implements the systems of Chaudhuri & Tewari (2015, 2016), Ailon (2014) and
Yue & Joachims (2009): rankers that learn from top-k relevance, discrete choices
or dueling comparisons while being judged on the whole list.

The main nouns are importable from here; each subpackage exports its own
public names (``oltr.metrics``, ``oltr.data``, ``oltr.feedback``,
``oltr.envs``, ``oltr.learners``, ``oltr.experiments``, ...).
"""

from __future__ import annotations

from oltr.data import LetorDataset, load_letor
from oltr.envs import Environment
from oltr.experiments import (
    RunSetSpec,
    check_compatible,
    load_config,
    make_env,
    make_feedback,
    make_learner,
    run_experiment,
    run_set,
)
from oltr.feedback import Feedback, FeedbackModel, FeedbackRequirement
from oltr.learners import Learner, LinearRanker
from oltr.metrics import Measure, get_measure
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS
from oltr.types import Context, RunGenerators
from oltr.version import __version__

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
