"""Conformance checks over every registered parameter-space duel learner.

Registering a class with ``@register_dueler`` adds it here: it must satisfy the
:class:`~oltr.learners.base.ParameterDueler` protocol, propose finite pairs of
shape (B, 2, d), give the same proposals for the same seed, compute each run
independently of its batch companions, and learn on the easiest synthetic
problem of Yue & Joachims (2009) §5.1 (P1, a concave value function).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oltr.envs.duels import CoinStream, ValueFunctionDuel
from oltr.experiments.duels import run_parameter_duels
from oltr.learners.base import ParameterDueler
from oltr.registry import PARAMETER_DUELERS
from oltr.types import RunGenerators

DIM = 5
HORIZON = 3000


def build(name: str, n_runs: int = 3, rng: Any = 0) -> Any:
    # W = the ball of radius 10 of §5.1, the domain of the synthetic problems.
    cls = PARAMETER_DUELERS[name]
    return cls(dim=DIM, space="ball", radius=10.0, horizon=HORIZON, n_runs=n_runs, rng=rng)


def proposals(dueler: Any, n_rounds: int, rngs: RunGenerators) -> list[np.ndarray]:
    """Proposals of ``n_rounds`` rounds against P1 (coins from ``rngs``)."""
    env, coins = ValueFunctionDuel("P1", dim=DIM), CoinStream(rngs)
    out = []
    for _ in range(n_rounds):
        points = dueler.propose()
        out.append(points.copy())
        p_first, _ = env.assess(points)
        if dueler.parameter_feedback == "duel":
            dueler.learn(env.outcome(p_first, coins.next()))
        else:
            dueler.learn(p_first)
    return out


NAMES = sorted(PARAMETER_DUELERS)


@pytest.mark.parametrize("name", NAMES)
def test_satisfies_the_protocol_and_proposes_finite_pairs(name: str) -> None:
    dueler = build(name)
    assert isinstance(dueler, ParameterDueler)
    assert dueler.parameter_feedback in ("duel", "preference")
    points = dueler.propose()
    assert points.shape == (3, 2, DIM)
    assert np.isfinite(points).all()


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_proposals(name: str) -> None:
    a = proposals(build(name), 30, RunGenerators.from_rng(5, 3))
    b = proposals(build(name), 30, RunGenerators.from_rng(5, 3))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_a_run_is_independent_of_its_batch(name: str) -> None:
    reps = [0, 1, 2]
    batch = proposals(
        build(name, rng=RunGenerators.from_keys(1, "learner", reps=reps)),
        30,
        RunGenerators.from_keys(1, "feedback", reps=reps),
    )
    for b, rep in enumerate(reps):
        solo = proposals(
            build(name, n_runs=1, rng=RunGenerators.from_keys(1, "learner", reps=[rep])),
            30,
            RunGenerators.from_keys(1, "feedback", reps=[rep]),
        )
        for x, y in zip(batch, solo, strict=True):
            np.testing.assert_array_equal(x[b], y[0])


@pytest.mark.parametrize("name", NAMES)
def test_average_regret_falls_on_p1(name: str) -> None:
    # Theorem 2's O(T^{3/4}) regret: the average regret Δ_t / t must fall between an
    # early and the final checkpoint in every run.
    env = ValueFunctionDuel("P1", dim=DIM)
    regret = run_parameter_duels(
        env,
        build(name, n_runs=4),
        horizon=HORIZON,
        checkpoints=[100, HORIZON],
        rngs=RunGenerators.from_rng(2, 4),
    )
    assert (regret[:, 1] < regret[:, 0]).all(), regret
