"""Partial monitoring for ranking: loss, feedback and signal matrices, observability."""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.theory.cells import CellStructure, action_classes, cell_structure
    from oltr.theory.faces import Face, polytope_face
    from oltr.theory.matrices import (
        RankingGame,
        enumerate_actions,
        enumerate_outcomes,
        game_from_matrices,
        ranking_game,
    )
    from oltr.theory.observability import (
        ObservabilityResult,
        PairCheck,
        analyze_game,
        global_observability,
        local_observability,
        span_residual,
    )
    from oltr.theory.signals import signal_matrices
    from oltr.theory.witness import (
        CT16_P,
        CT16_P_TILDE,
        CT16_RELEVANCE,
        IndistinguishablePair,
        check_pair,
        expected_normalized_gain,
        find_indistinguishable_pair,
    )
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.theory.cells": ["CellStructure", "action_classes", "cell_structure"],
            "oltr.theory.faces": ["Face", "polytope_face"],
            "oltr.theory.matrices": [
                "RankingGame",
                "enumerate_actions",
                "enumerate_outcomes",
                "game_from_matrices",
                "ranking_game",
            ],
            "oltr.theory.observability": [
                "ObservabilityResult",
                "PairCheck",
                "analyze_game",
                "global_observability",
                "local_observability",
                "span_residual",
            ],
            "oltr.theory.signals": ["signal_matrices"],
            "oltr.theory.witness": [
                "CT16_P",
                "CT16_P_TILDE",
                "CT16_RELEVANCE",
                "IndistinguishablePair",
                "check_pair",
                "expected_normalized_gain",
                "find_indistinguishable_pair",
            ],
        },
    )

__all__ = [
    "CT16_P",
    "CT16_P_TILDE",
    "CT16_RELEVANCE",
    "CellStructure",
    "Face",
    "IndistinguishablePair",
    "ObservabilityResult",
    "PairCheck",
    "RankingGame",
    "action_classes",
    "analyze_game",
    "cell_structure",
    "check_pair",
    "enumerate_actions",
    "enumerate_outcomes",
    "expected_normalized_gain",
    "find_indistinguishable_pair",
    "game_from_matrices",
    "global_observability",
    "local_observability",
    "polytope_face",
    "ranking_game",
    "signal_matrices",
    "span_residual",
]
