"""Every registered learner that learns beats the random ranker on an easy environment.

Part of the conformance suite: a new learner is covered by registering it.
Each learner runs at its defaults (the runner passes the horizon) with the
weakest feedback model that satisfies its requirement, on

* fixed items: five items relevant with probabilities 0.9, 0.7, 0.4, 0.2, 0.05
  (``fixed-items-v1``, Bernoulli draws each round; choice learners see the
  chosen item), or
* feature lists: the built-in synthetic LETOR stream (``letor-stream-v1``: a
  hidden linear model with noise, 200 queries, grades 0..4; click learners see
  the clicks of the informational cascade user),

and its NDCG@5 averaged over the second half of the horizon is compared with
the random ranker's on the same stream. The test is one-sided Welch's t over 8
repetitions at α = 0.001: a learner no better than random fails it with
probability at most 0.001 (per learner), one that learns passes by a wide
margin (the margins are printed on failure).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from scipy import stats

from oltr import RunSetSpec, run_set
from oltr.registry import LEARNERS

#: Learners that do not learn by design.
NON_LEARNERS = {"random", "noop", "fixed"}
ALPHA = 0.001
REPS = tuple(range(8))
HORIZON = {"items": 3000, "features": 6000}
ENVS = {
    "items": ("fixed-items-v1", {"n_items": 5, "probs": [0.9, 0.7, 0.4, 0.2, 0.05]}),
    "features": ("letor-stream-v1", {}),
}
FEEDBACK_FOR_KIND = {
    "full": ("full", {}),
    "choice": ("choice", {}),
    "bandit": ("bandit", {}),
    "duel": ("duel", {}),
    "clicks": ("clicks", {"click_model": "informational"}),  # the noisiest standard user
    "none": ("full", {}),
}


def _feedback(learner: str) -> tuple[str, dict[str, Any]]:
    required = LEARNERS[learner](n_runs=1, rng=0).requires
    if required.kind == "topk":
        return "top-k", {"k": int(required.k or 1)}
    return FEEDBACK_FOR_KIND[required.kind]


def _second_half_ndcg(learner: str, context_kind: str, feedback: tuple[str, dict]) -> np.ndarray:
    env, env_params = ENVS[context_kind]
    horizon = HORIZON[context_kind]
    spec = RunSetSpec(
        env=env,
        env_params=env_params,
        feedback=feedback[0],
        feedback_params=feedback[1],
        learner=learner,
        learner_params={},
        reps=REPS,
        seed=7,
        horizon=horizon,
        measures=("ndcg@5",),
        checkpoints=(horizon // 2, horizon),
    )
    trace = run_set(spec).pivot(index="rep", columns="t", values="ndcg@5:cum")
    return (trace[horizon] - trace[horizon // 2]).to_numpy() / (horizon - horizon // 2)


LEARNING = sorted(set(LEARNERS) - NON_LEARNERS)


@pytest.mark.slow
@pytest.mark.parametrize("name", LEARNING)
def test_learner_beats_the_random_ranker_on_an_easy_environment(name: str) -> None:
    context_kind = LEARNERS[name].context_kind
    context_kind = "items" if context_kind == "any" else context_kind
    feedback = _feedback(name)
    learned = _second_half_ndcg(name, context_kind, feedback)
    baseline = _second_half_ndcg("random", context_kind, ("full", {}))  # it ignores feedback
    with warnings.catch_warnings():
        # A learner that settles on one order in every run has (near) zero variance;
        # scipy warns about the precision of that variance, which the test does not need.
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(learned, baseline, equal_var=False, alternative="greater")
    assert result.pvalue < ALPHA, (
        f"{name} on {ENVS[context_kind][0]} with {feedback[0]} feedback: NDCG@5 "
        f"{learned.mean():.3f} vs random {baseline.mean():.3f} (p = {result.pvalue:.2g})"
    )
