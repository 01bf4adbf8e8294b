"""Simulated clicks and interleaved comparisons.

Click models (cascade, position-based) and team-draft, balanced and
probabilistic interleaving.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.clicks.cascade import (
        STOP_RULES,
        StopRuleCascade,
        check_grades,
        click_model,
        draw_uniforms,
    )
    from oltr.clicks.click_models import (
        CASCADE_PARAMETERS,
        CascadeClickModel,
        ClickModel,
        RNGs,
        cascade_model,
        normalize_rngs,
        uniform_draws,
    )
    from oltr.clicks.dcm import DependentClickModel
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
    from oltr.clicks.multileaving import (
        multileave_credit,
        preference_vs_first,
        probabilistic_multileave,
    )
    from oltr.clicks.position_based import PositionBasedClickModel, position_based_model
    from oltr.clicks.probabilistic import (
        ProbabilisticInterleaving,
        probabilistic_interleave,
        softmax_weights,
    )
    from oltr.clicks.zoo import (
        ClickSimulator,
        PositionBiasedModel,
        clicks_for_runs,
        make_click_model,
    )
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.clicks.cascade": [
                "STOP_RULES",
                "StopRuleCascade",
                "check_grades",
                "click_model",
                "draw_uniforms",
            ],
            "oltr.clicks.dcm": ["DependentClickModel"],
            "oltr.clicks.interleaving": [
                "TEAM_A",
                "TEAM_B",
                "BalancedInterleaving",
                "Interleaving",
                "TeamDraftInterleaving",
                "balanced_interleave",
                "team_draft_interleave",
            ],
            "oltr.clicks.methods": ["INTERLEAVING_METHODS", "compare", "interleave"],
            "oltr.clicks.click_models": [
                "CASCADE_PARAMETERS",
                "CascadeClickModel",
                "ClickModel",
                "RNGs",
                "cascade_model",
                "normalize_rngs",
                "uniform_draws",
            ],
            "oltr.clicks.multileaving": [
                "multileave_credit",
                "preference_vs_first",
                "probabilistic_multileave",
            ],
            "oltr.clicks.position_based": ["PositionBasedClickModel", "position_based_model"],
            "oltr.clicks.probabilistic": [
                "ProbabilisticInterleaving",
                "probabilistic_interleave",
                "softmax_weights",
            ],
            "oltr.clicks.zoo": [
                "ClickSimulator",
                "PositionBiasedModel",
                "clicks_for_runs",
                "make_click_model",
            ],
        },
    )

__all__ = [
    "CASCADE_PARAMETERS",
    "INTERLEAVING_METHODS",
    "STOP_RULES",
    "TEAM_A",
    "TEAM_B",
    "BalancedInterleaving",
    "CascadeClickModel",
    "ClickModel",
    "ClickSimulator",
    "DependentClickModel",
    "Interleaving",
    "PositionBasedClickModel",
    "PositionBiasedModel",
    "ProbabilisticInterleaving",
    "RNGs",
    "StopRuleCascade",
    "TeamDraftInterleaving",
    "balanced_interleave",
    "cascade_model",
    "check_grades",
    "click_model",
    "clicks_for_runs",
    "compare",
    "draw_uniforms",
    "interleave",
    "make_click_model",
    "multileave_credit",
    "normalize_rngs",
    "position_based_model",
    "preference_vs_first",
    "probabilistic_interleave",
    "probabilistic_multileave",
    "softmax_weights",
    "team_draft_interleave",
    "uniform_draws",
]
