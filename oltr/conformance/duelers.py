"""Conformance checks of a parameter-space duel learner (:class:`~oltr.learners.ParameterDueler`).

A dueler is built as ``cls(**setting, n_runs=B, rng=...)``; the default
setting is the domain of Yue & Joachims (2009) §5.1, the ball of radius 10,
in :data:`DIM` dimensions with horizon :data:`HORIZON`. It is run against the
easiest synthetic problem of §5.1 (P1, a concave value function): it must
satisfy the protocol, propose finite pairs of shape (B, 2, d), give the same
proposals for the same seed, compute each run independently of its batch
companions, and learn (Theorem 2's sublinear regret: the average regret falls).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oltr.conformance.report import expect
from oltr.conformance.subjects import Subject
from oltr.envs.duels import CoinStream, ValueFunctionDuel
from oltr.learners.base import ParameterDueler
from oltr.types import RunGenerators

__all__ = ["DIM", "DUELER_CHECKS", "HORIZON", "default_dueler_setting", "is_dueler"]

DIM = 5
HORIZON = 3000


def default_dueler_setting() -> dict[str, Any]:
    """The setting a dueler is checked with unless told otherwise (§5.1's ball, d = 5)."""
    return {"dim": DIM, "space": "ball", "radius": 10.0, "horizon": HORIZON}


def is_dueler(cls: type) -> bool:
    """Whether ``cls`` has the methods and attributes of a parameter-space dueler."""
    return isinstance(cls, type) and all(
        hasattr(cls, a) for a in ("propose", "learn", "parameter_feedback")
    )


def _settings(subject: Subject) -> list[dict[str, Any]]:
    return [default_dueler_setting()] if subject.given is None else subject.settings()


def _build(subject: Subject, params: dict[str, Any], n_runs: int = 3, rng: Any = 0) -> Any:
    return subject.cls(**params, n_runs=n_runs, rng=rng)


def _problem(params: dict[str, Any], dim: int) -> ValueFunctionDuel:
    return ValueFunctionDuel("P1", dim=dim, radius=float(params.get("radius", 10.0)))


def _play(
    dueler: Any, params: dict[str, Any], n_rounds: int, rngs: RunGenerators
) -> tuple[list[np.ndarray], np.ndarray]:
    """Proposals of ``n_rounds`` rounds against P1 (coins from ``rngs``), and the regret."""
    first = np.asarray(dueler.propose(), dtype=np.float64)
    env, coins = _problem(params, first.shape[-1]), CoinStream(rngs)
    out, regret, points = [], np.zeros((n_rounds, rngs.n_runs)), first
    for t in range(n_rounds):
        if t:
            points = np.asarray(dueler.propose(), dtype=np.float64)
        out.append(points.copy())
        p_first, regret[t] = env.assess(points)
        if dueler.parameter_feedback == "duel":
            dueler.learn(env.outcome(p_first, coins.next()))
        else:
            dueler.learn(p_first)
    return out, regret


def check_satisfies_the_protocol(subject: Subject) -> None:
    """It is a ParameterDueler and proposes finite pairs of shape (B, 2, d)."""
    for params in _settings(subject):
        dueler = _build(subject, params)
        expect(isinstance(dueler, ParameterDueler), "not a ParameterDueler (propose, learn)")
        kind = dueler.parameter_feedback
        expect(
            kind in ("duel", "preference"),
            f"parameter_feedback must be 'duel' or 'preference', got {kind!r}",
        )
        points = np.asarray(dueler.propose())
        expect(
            points.ndim == 3 and points.shape[:2] == (3, 2),
            f"propose() returned shape {points.shape}, expected (3, 2, d)",
        )
        dim = params.get("dim")
        expect(
            dim is None or points.shape[2] == dim,
            f"propose() returned points of dimension {points.shape[-1]}, built with dim={dim}",
        )
        expect(np.isfinite(points).all(), "propose() returned non-finite points")


def check_seeding_is_idempotent(subject: Subject) -> None:
    """The same seeds give the same proposals."""
    for params in _settings(subject):
        a, _ = _play(_build(subject, params), params, 30, RunGenerators.from_rng(5, 3))
        b, _ = _play(_build(subject, params), params, 30, RunGenerators.from_rng(5, 3))
        expect(
            all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)),
            "same seeds must give the same proposals: draw only from the rng given",
        )


def check_batch_equals_single_runs(subject: Subject) -> None:
    """Run ``b`` of a batch of 3 proposes the same points as the same run alone."""
    reps = [0, 1, 2]
    for params in _settings(subject):
        learner_rngs = RunGenerators.from_keys(1, "learner", reps=reps)
        batch, _ = _play(
            _build(subject, params, rng=learner_rngs),
            params,
            30,
            RunGenerators.from_keys(1, "feedback", reps=reps),
        )
        for b, rep in enumerate(reps):
            solo_rngs = RunGenerators.from_keys(1, "learner", reps=[rep])
            solo, _ = _play(
                _build(subject, params, n_runs=1, rng=solo_rngs),
                params,
                30,
                RunGenerators.from_keys(1, "feedback", reps=[rep]),
            )
            for t, (x, y) in enumerate(zip(batch, solo, strict=True), start=1):
                expect(
                    np.array_equal(x[b], y[0]),
                    f"run {rep} differs between B=3 and B=1 at round {t}",
                )


def check_average_regret_falls_on_p1(subject: Subject) -> None:
    """Average regret Δ_t / t falls between round 100 (or T/2) and the horizon T in every run."""
    # Theorem 2's O(T^{3/4}) regret: Δ_t / t must fall on a concave value function.
    for params in _settings(subject):
        horizon = int(params.get("horizon") or HORIZON)
        first = max(1, min(100, horizon // 2))
        coins = RunGenerators.from_rng(2, 4)
        _, regret = _play(_build(subject, params, n_runs=4), params, horizon, coins)
        cum = np.cumsum(regret, axis=0)
        early, late = cum[first - 1] / first, cum[-1] / horizon
        expect(
            (late < early).all(),
            f"average regret did not fall from t={first} to t={horizon}: {early} -> {late}",
        )


#: Every dueler check, in the order they run.
DUELER_CHECKS = (
    check_satisfies_the_protocol,
    check_seeding_is_idempotent,
    check_batch_equals_single_runs,
    check_average_regret_falls_on_p1,
)
