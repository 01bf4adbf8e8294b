"""Simulated clicks and interleaved comparisons.

Click models (cascade, position-based) and team-draft, balanced and
probabilistic interleaving.
"""

from oltr.clicks.interleaving import (
    TEAM_A,
    TEAM_B,
    BalancedInterleaving,
    Interleaving,
    TeamDraftInterleaving,
    balanced_interleave,
    team_draft_interleave,
)
from oltr.clicks.methods import INTERLEAVING_METHODS, compare, interleave
from oltr.clicks.models import (
    CASCADE_PARAMETERS,
    CascadeClickModel,
    ClickModel,
    RNGs,
    cascade_model,
    normalize_rngs,
    uniform_draws,
)
from oltr.clicks.position_based import PositionBasedClickModel, position_based_model
from oltr.clicks.probabilistic import (
    ProbabilisticInterleaving,
    probabilistic_interleave,
    softmax_weights,
)

__all__ = [
    "CASCADE_PARAMETERS",
    "INTERLEAVING_METHODS",
    "TEAM_A",
    "TEAM_B",
    "BalancedInterleaving",
    "CascadeClickModel",
    "ClickModel",
    "Interleaving",
    "PositionBasedClickModel",
    "ProbabilisticInterleaving",
    "RNGs",
    "TeamDraftInterleaving",
    "balanced_interleave",
    "cascade_model",
    "compare",
    "interleave",
    "normalize_rngs",
    "position_based_model",
    "probabilistic_interleave",
    "softmax_weights",
    "team_draft_interleave",
    "uniform_draws",
]
