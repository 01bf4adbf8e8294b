"""Experiment engine: components from names, the runner, configs, sweeps, storage, reports.

* :mod:`~oltr.build`: learners, environments and feedback models
  from registry names, and the compatibility check made before any work;
* :mod:`~oltr.experiments.runner`: :func:`run_set`, one learner on one
  environment for a batch of repetitions, and its trace;
* :mod:`~oltr.experiments.config`, :mod:`~oltr.experiments.sweep`,
  :mod:`~oltr.experiments.storage`, :mod:`~oltr.experiments.report`: TOML
  experiments, resumable sweeps, Parquet results and their reports.

The papers' figures and tables, run through this engine, are in :mod:`oltr.reproductions`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oltr.lazy import lazy_exports

if TYPE_CHECKING:
    from oltr.build import (
        check_compatible,
        check_env,
        check_feedback,
        check_learner,
        make_env,
        make_feedback,
        make_learner,
    )
    from oltr.experiments.config import Experiment, load_config, parse_config
    from oltr.experiments.heldout import HeldoutSet, heldout_ndcg
    from oltr.experiments.regret import cumulative_regret, regret_exponent
    from oltr.experiments.runner import RunSetSpec, run_set
    from oltr.experiments.schema import ConfigError
    from oltr.experiments.sweep import SweepError, SweepResult, run_experiment, run_sweep
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "oltr.build": [
                "check_compatible",
                "check_env",
                "check_feedback",
                "check_learner",
                "make_env",
                "make_feedback",
                "make_learner",
            ],
            "oltr.experiments.config": ["Experiment", "load_config", "parse_config"],
            "oltr.experiments.heldout": ["HeldoutSet", "heldout_ndcg"],
            "oltr.experiments.regret": ["cumulative_regret", "regret_exponent"],
            "oltr.experiments.runner": ["RunSetSpec", "run_set"],
            "oltr.experiments.schema": ["ConfigError"],
            "oltr.experiments.sweep": ["SweepError", "SweepResult", "run_experiment", "run_sweep"],
        },
    )

__all__ = [
    "ConfigError",
    "Experiment",
    "HeldoutSet",
    "RunSetSpec",
    "SweepError",
    "SweepResult",
    "check_compatible",
    "check_env",
    "check_feedback",
    "check_learner",
    "cumulative_regret",
    "heldout_ndcg",
    "load_config",
    "make_env",
    "make_feedback",
    "make_learner",
    "parse_config",
    "regret_exponent",
    "run_experiment",
    "run_set",
    "run_sweep",
]
