"""Environments: what a learner ranks for, and the full-information evaluation of each round.

Fixed item sets with adversarial relevance (:mod:`~oltr.envs.fixed`,
:mod:`~oltr.envs.adversaries`), discrete choice and rank aggregation
(:mod:`~oltr.envs.choice`), query streams with features
(:mod:`~oltr.envs.stream`), and the dueling problems of Yue & Joachims
(:mod:`~oltr.envs.valuefns`, :mod:`~oltr.envs.duels`). Importing this package
registers every environment.
"""

from oltr.envs.adversaries import (
    FILE_FORMATS,
    FIXTURES,
    CT15SimulationEnv,
    RelevanceFileEnv,
    read_relevance,
)
from oltr.envs.base import (
    MAX_ENUMERATION_CELLS,
    MAX_ENUMERATION_ITEMS,
    SEPARABLE_MEASURES,
    Environment,
    hindsight_comparator,
)
from oltr.envs.choice import ChoiceEnv, RankAggregationEnv
from oltr.envs.duels import CoinStream, ValueFunctionDuel
from oltr.envs.fixed import FixedItemsEnv
from oltr.envs.stream import LetorStreamEnv
from oltr.envs.valuefns import (
    SYNTHETIC_PROBLEMS,
    VALUE_FUNCTIONS,
    SyntheticProblem,
    ValueFn,
    logistic,
    maximize_on_ball,
    project_to_ball,
    synthetic_problem,
    v1,
    v2_l1,
    v2_l2,
    v3,
    v4,
    v5,
)
from oltr.envs.websearch import web_search_duel, web_search_ndcg, web_search_preference

__all__ = [
    "FILE_FORMATS",
    "FIXTURES",
    "MAX_ENUMERATION_CELLS",
    "MAX_ENUMERATION_ITEMS",
    "SEPARABLE_MEASURES",
    "SYNTHETIC_PROBLEMS",
    "VALUE_FUNCTIONS",
    "CT15SimulationEnv",
    "ChoiceEnv",
    "CoinStream",
    "Environment",
    "FixedItemsEnv",
    "LetorStreamEnv",
    "RankAggregationEnv",
    "RelevanceFileEnv",
    "SyntheticProblem",
    "ValueFn",
    "ValueFunctionDuel",
    "hindsight_comparator",
    "logistic",
    "maximize_on_ball",
    "project_to_ball",
    "read_relevance",
    "synthetic_problem",
    "v1",
    "v2_l1",
    "v2_l2",
    "v3",
    "v4",
    "v5",
    "web_search_duel",
    "web_search_ndcg",
    "web_search_preference",
]
