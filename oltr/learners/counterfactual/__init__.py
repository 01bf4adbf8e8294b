"""Counterfactual learning to rank: rankers fit from click logs, and the model file.

From a click log bound to its data set (:func:`oltr.logs.bind`) and the
examination propensities (:mod:`oltr.estimators`), :func:`fit_counterfactual`
fits a ranker with the naive, IPS (listwise or pairwise), DLA or DR learner;
:func:`fit_skyline` is the full-information upper bound. A
:class:`RankingModel` scores feature vectors and is saved as JSON
(:func:`save_model`, :func:`load_model`; the format is documented in
:mod:`oltr.learners.counterfactual.model`). These are batch learners, not
online learners: they are not in the learner registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

__all__ = [
    "LEARNERS",
    "MODEL_FORMAT",
    "MODEL_VERSION",
    "SCORERS",
    "ModelFormatError",
    "RankingModel",
    "Scorer",
    "fit_counterfactual",
    "fit_dla",
    "fit_dr",
    "fit_skyline",
    "load_model",
    "make_scorer",
    "mean_ndcg",
    "save_model",
]

if TYPE_CHECKING:
    from oltr.learners.counterfactual.dla import fit_dla
    from oltr.learners.counterfactual.dr import fit_dr
    from oltr.learners.counterfactual.fit import LEARNERS, fit_counterfactual, fit_skyline
    from oltr.learners.counterfactual.model import (
        MODEL_FORMAT,
        MODEL_VERSION,
        SCORERS,
        ModelFormatError,
        RankingModel,
        Scorer,
        load_model,
        make_scorer,
        mean_ndcg,
        save_model,
    )
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.learners.counterfactual.dla": ["fit_dla"],
            "oltr.learners.counterfactual.dr": ["fit_dr"],
            "oltr.learners.counterfactual.fit": ["LEARNERS", "fit_counterfactual", "fit_skyline"],
            "oltr.learners.counterfactual.model": [
                "MODEL_FORMAT",
                "MODEL_VERSION",
                "SCORERS",
                "ModelFormatError",
                "RankingModel",
                "Scorer",
                "load_model",
                "make_scorer",
                "mean_ndcg",
                "save_model",
            ],
        },
    )
