"""Running a learner through the protocol for the checks, recording what it was shown.

:func:`rollout` is the runner's round, step by step (observe, rank, feedback
restricted to what the learner declared, update), with the orders checked
every round and copies of what was shown kept in a :class:`Trace`. The
learner is run on every registered environment whose contexts it can rank,
with every registered feedback model that reveals enough (:func:`setups`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from oltr.build import make_env, make_feedback
from oltr.conformance.report import CheckFailed, expect
from oltr.conformance.subjects import Subject
from oltr.envs.base import Environment
from oltr.feedback import (
    BanditFeedback,
    ChoiceFeedback,
    ClickFeedback,
    DuelFeedback,
    Feedback,
    FeedbackModel,
    FeedbackRequirement,
    FullFeedback,
    NoFeedback,
    TopKFeedback,
)
from oltr.learners.base import Learner
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS
from oltr.types import Context, RunGenerators

__all__ = [
    "FEEDBACK_CLASS",
    "N_STEPS",
    "SEED",
    "Round",
    "Setup",
    "Trace",
    "build_learner",
    "check_orders_valid",
    "models_for",
    "rollout",
    "same_traces",
    "settings_of",
    "setups",
]

#: Rounds of a rollout, and the seed of every stream the checks draw.
N_STEPS = 12
SEED = 3
#: The feedback dataclass of each kind.
FEEDBACK_CLASS: dict[str, type[Feedback]] = {
    c.kind: c
    for c in (
        NoFeedback,
        FullFeedback,
        TopKFeedback,
        ChoiceFeedback,
        BanditFeedback,
        DuelFeedback,
        ClickFeedback,
    )
}


def settings_of(cls: type) -> list[dict[str, Any]]:
    """A registered class's own test settings (at least one)."""
    return Subject(cls.__name__, cls).settings()


def build_learner(
    subject: Subject, params: dict[str, Any], n_runs: int = 2, rng: Any = SEED
) -> Learner[Any]:
    """The subject's learner with ``params`` for ``n_runs`` runs."""
    lrn = subject.cls(**params, n_runs=n_runs, rng=rng)
    expect(isinstance(lrn, Learner), f"{subject.cls.__name__}(...) did not build a Learner")
    return lrn  # type: ignore[no-any-return]


def models_for(required: FeedbackRequirement) -> list[FeedbackModel]:
    """Every registered feedback model (each test setting) that reveals enough."""
    out = []
    for name, cls in FEEDBACK_MODELS.items():
        for params in settings_of(cls):
            model = make_feedback(name, params)
            if required.satisfied_by(model.provides):
                out.append(model)
    return out


@dataclass(frozen=True)
class Setup:
    """One combination to run: learner params, environment name and params, feedback model."""

    params: dict[str, Any]
    env_name: str
    env_params: dict[str, Any]
    model: FeedbackModel

    def env(self) -> Environment:
        """A fresh environment of this setup."""
        return make_env(self.env_name, self.env_params, feedback=self.model)


def setups(subject: Subject) -> Iterator[Setup]:
    """Every (learner params, environment, feedback model) combination to run."""
    for params in subject.settings():
        probe = build_learner(subject, params, n_runs=1)
        expect(
            isinstance(probe.requires, FeedbackRequirement),
            f"requires must be a FeedbackRequirement, got {type(probe.requires).__name__}",
        )
        models = models_for(probe.requires)
        expect(models, f"no registered feedback model satisfies {probe.requires}")
        envs = [
            (name, settings_of(cls)[0])
            for name, cls in ENVIRONMENTS.items()
            if probe.context_kind in ("any", getattr(cls, "context_kind", None))
        ]
        expect(envs, f"no registered environment has {probe.context_kind!r} contexts")
        for env_name, env_params in envs:
            for model in models:
                yield Setup(params, env_name, env_params, model)


@dataclass
class Round:
    """What one round showed: the context, the orders, the hidden truth and the feedback."""

    context: Context
    orders: np.ndarray
    truth: np.ndarray
    feedback: Feedback


@dataclass
class Trace:
    """The rounds of a rollout."""

    rounds: list[Round] = field(default_factory=list)

    def orders(self) -> list[np.ndarray]:
        """The orders of every round."""
        return [r.orders for r in self.rounds]


def check_orders_valid(orders: Any, m: int, n_runs: int, n_lists: int) -> None:
    """``orders`` is an integer array of shape (B, m) (or (B, 2, m)) of permutations."""
    want = (n_runs, m) if n_lists == 1 else (n_runs, 2, m)
    expect(isinstance(orders, np.ndarray), f"rank returned {type(orders).__name__}, not an array")
    expect(orders.shape == want, f"rank returned shape {orders.shape}, expected {want}")
    expect(
        np.issubdtype(orders.dtype, np.integer),
        f"rank returned dtype {orders.dtype}, expected integers",
    )
    if not (np.sort(orders, axis=-1) == np.arange(m)).all():
        bad = next(row for row in orders.reshape(-1, m) if not (np.sort(row) == np.arange(m)).all())
        raise CheckFailed(f"every list must be a permutation of 0..{m - 1}, got {bad.tolist()}")


def rollout(
    lrn: Learner[Any],
    env: Environment,
    *,
    n_steps: int = N_STEPS,
    env_seed: int = SEED,
    fb_rngs: RunGenerators | None = None,
    start: int = 1,
    on_update: Callable[[Round, Environment], None] | None = None,
) -> Trace:
    """The runner's protocol, step by step, recording copies of what was shown."""
    if start == 1:
        env.reset(rng=env_seed)
    rngs = fb_rngs or RunGenerators.from_keys(SEED, "feedback", reps=range(lrn.n_runs))
    trace = Trace()
    for t in range(start, start + n_steps):
        ctx = env.observe(t)
        orders = lrn.rank(ctx)
        check_orders_valid(orders, ctx.n_items, lrn.n_runs, lrn.requires.n_lists)
        fb = env.feedback(orders, rngs).restrict(lrn.requires)
        truth = np.array(env._ground_truth(), copy=True)
        rnd = Round(ctx, np.array(orders, copy=True), truth, fb)
        if on_update is not None:
            on_update(rnd, env)
        try:
            result = lrn.update(ctx, orders, fb)
        except (AttributeError, IndexError, KeyError) as exc:
            raise CheckFailed(
                f"update raised {type(exc).__name__} ({exc}) on {type(fb).__name__}: a learner "
                f"receives exactly what it declares ({lrn.requires.describe()}), nothing more"
            ) from exc
        expect(result is None, f"update must return None, got {type(result).__name__}")
        trace.rounds.append(rnd)
    return trace


def same_traces(a: Trace, b: Trace) -> bool:
    """Whether two rollouts showed the same orders in every round."""
    return all(np.array_equal(x, y) for x, y in zip(a.orders(), b.orders(), strict=True))
