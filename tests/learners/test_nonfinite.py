"""No learner accepts non-finite input or goes on from a non-finite state."""

from __future__ import annotations

import numpy as np
import pytest

from oltr import RunSetSpec, run_set
from oltr.build import make_learner
from oltr.errors import InputError, NumericalError
from oltr.registry import LEARNERS
from oltr.types import Context

FEATURE_LEARNERS = sorted(n for n, c in LEARNERS.items() if c.context_kind == "features")


@pytest.mark.parametrize("name", FEATURE_LEARNERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_features_are_refused_naming_the_round(name: str, bad: float) -> None:
    learner = make_learner(name, n_runs=2, rngs=0, horizon=100)
    features = np.ones((5, 3))
    features[3, 2] = bad
    with pytest.raises(
        InputError, match=rf"round 7 are not finite \(document 3, feature 2 is {bad}"
    ):
        learner.rank(Context(t=7, n_items=5, features=features))


def test_overflowing_weights_stop_the_run_naming_learner_round_and_cause() -> None:
    # Unnormalised features of size 1e200 and an unbounded ball overflow in one step.
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"n_features": 4},
        feedback="full",
        feedback_params={},
        learner="listnet",
        learner_params={"eta": 1e300, "radius": float("inf")},
        reps=(0,),
        seed=1,
        horizon=5,
        measures=("ndcg@5",),
        checkpoints=(5,),
    )
    from oltr.envs.stream import LetorStreamEnv

    original = LetorStreamEnv.observe

    def huge(self: LetorStreamEnv, t: int) -> Context:
        ctx = original(self, t)
        assert ctx.features is not None
        return Context(t=ctx.t, n_items=ctx.n_items, features=ctx.features * 1e200 + 1e200)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(LetorStreamEnv, "observe", huge)
        with pytest.raises(
            NumericalError,
            match=r"OnlineListNet: the weights of run 0 stopped"
            r" being finite in round 1: the weights overflowed \(radius=inf",
        ):
            run_set(spec)
