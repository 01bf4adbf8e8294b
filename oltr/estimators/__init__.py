"""Estimators from click logs, pure functions of logs and policies.

* Position-bias propensities (:mod:`oltr.estimators.propensity`): regression EM,
  intervention harvesting and result randomization, each with bootstrap intervals.
* Off-policy estimates of a candidate ranker's value (:mod:`oltr.estimators.offpolicy`):
  IPS, self-normalised IPS, item-position (PBM) IPS and cascade doubly robust, each
  with a 95% interval (:mod:`oltr.estimators.intervals`), on logged lists
  (:mod:`oltr.estimators.loggedlists`) under the logging and candidate policies'
  probabilities (:mod:`oltr.estimators.rankingpolicy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

__all__ = [
    "DEFAULT_INTERVALS",
    "ESTIMATORS",
    "INTERVAL_METHODS",
    "METHODS",
    "LoggedLists",
    "OffPolicyEstimate",
    "PropensityEstimate",
    "bernstein_interval",
    "bootstrap_interval",
    "cascade_dr",
    "estimate_propensities",
    "ips",
    "logged_lists",
    "pad_lists",
    "pbm_ips",
    "plackett_luce_marginals",
    "plackett_luce_prefix_probabilities",
    "snips",
]

if TYPE_CHECKING:
    from oltr.estimators.intervals import INTERVAL_METHODS, bernstein_interval, bootstrap_interval
    from oltr.estimators.loggedlists import LoggedLists, logged_lists, pad_lists
    from oltr.estimators.offpolicy import (
        DEFAULT_INTERVALS,
        ESTIMATORS,
        OffPolicyEstimate,
        cascade_dr,
        ips,
        pbm_ips,
        snips,
    )
    from oltr.estimators.propensity import METHODS, PropensityEstimate, estimate_propensities
    from oltr.estimators.rankingpolicy import (
        plackett_luce_marginals,
        plackett_luce_prefix_probabilities,
    )
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.estimators.propensity": [
                "METHODS",
                "PropensityEstimate",
                "estimate_propensities",
            ],
            "oltr.estimators.offpolicy": [
                "DEFAULT_INTERVALS",
                "ESTIMATORS",
                "OffPolicyEstimate",
                "cascade_dr",
                "ips",
                "pbm_ips",
                "snips",
            ],
            "oltr.estimators.intervals": [
                "INTERVAL_METHODS",
                "bernstein_interval",
                "bootstrap_interval",
            ],
            "oltr.estimators.loggedlists": ["LoggedLists", "logged_lists", "pad_lists"],
            "oltr.estimators.rankingpolicy": [
                "plackett_luce_marginals",
                "plackett_luce_prefix_probabilities",
            ],
        },
    )
