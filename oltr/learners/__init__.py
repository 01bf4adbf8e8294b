"""Online ranking learners, one module per family; importing this package registers them all.

:class:`Learner` is the protocol; :class:`LinearRanker` the base of linear
scorers (RTop-kF, online ListNet); :mod:`~oltr.learners.dbgd` and
:mod:`~oltr.learners.bgd` learn in parameter space from duels;
:class:`NeuralPDGD` learns a neural scorer from clicks.
"""

from oltr.learners.base import FeatureScorer, FeedbackT, Learner, ParameterDueler
from oltr.learners.baselines import FixedRanker, NoOpLearner, RandomRanker
from oltr.learners.bgd import BGD_VARIANTS, BanditGradientDescent
from oltr.learners.dbgd import (
    DBGD,
    SPACES,
    DirectionStream,
    DuelingBanditGradientDescent,
    explore,
    gradient_step,
    initial_weights,
    project,
    theorem2_schedule,
)
from oltr.learners.expweights import MAX_ITEMS, ExponentialWeights, hedge_rate, loss_range
from oltr.learners.ftpl import (
    FullInformationFTPL,
    ftpl_epsilon,
    gain_transform,
    kv_constants,
    parse_measure,
)
from oltr.learners.linear import LinearRanker, batch_scores, batch_step, own_order, project_rows
from oltr.learners.listnet import OnlineListNet
from oltr.learners.neural_pdgd import NeuralPDGD, mlp_backward, mlp_forward
from oltr.learners.onlinerank import (
    SIGNALS,
    AilonFPL,
    OnlineRank,
    default_max_loss,
    fpl_rate,
    onlinerank_bound,
    onlinerank_rate,
    signal_values,
)
from oltr.learners.pdgd import PDGD, pdgd_score_gradient
from oltr.learners.pmgd import MULTILEAVING_METHODS, PDBGD, PMGD, TDDBGD, fill_order
from oltr.learners.ranksvm import fit_ranksvm, pairwise_differences
from oltr.learners.rtop1f import (
    EXPLORE_MODES,
    RTop1F,
    draw_exploration,
    exploration_estimate,
    rtop1f_schedule,
)
from oltr.learners.rtopk import RTOPK_SURROGATES, RTopKF, trusted_estimate

__all__ = [
    "BGD_VARIANTS",
    "DBGD",
    "EXPLORE_MODES",
    "MAX_ITEMS",
    "MULTILEAVING_METHODS",
    "PDBGD",
    "PDGD",
    "PMGD",
    "RTOPK_SURROGATES",
    "SIGNALS",
    "SPACES",
    "TDDBGD",
    "BanditGradientDescent",
    "DirectionStream",
    "DuelingBanditGradientDescent",
    "ExponentialWeights",
    "FeatureScorer",
    "FeedbackT",
    "FixedRanker",
    "AilonFPL",
    "FullInformationFTPL",
    "Learner",
    "LinearRanker",
    "NeuralPDGD",
    "NoOpLearner",
    "OnlineListNet",
    "OnlineRank",
    "ParameterDueler",
    "RTop1F",
    "RTopKF",
    "RandomRanker",
    "batch_scores",
    "batch_step",
    "default_max_loss",
    "draw_exploration",
    "exploration_estimate",
    "explore",
    "fill_order",
    "fit_ranksvm",
    "fpl_rate",
    "ftpl_epsilon",
    "gain_transform",
    "gradient_step",
    "hedge_rate",
    "initial_weights",
    "kv_constants",
    "loss_range",
    "mlp_backward",
    "mlp_forward",
    "onlinerank_bound",
    "onlinerank_rate",
    "own_order",
    "pairwise_differences",
    "parse_measure",
    "pdgd_score_gradient",
    "project",
    "project_rows",
    "rtop1f_schedule",
    "signal_values",
    "theorem2_schedule",
    "trusted_estimate",
]
