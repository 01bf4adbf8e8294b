"""Conformance checks of a :class:`~oltr.learners.base.Learner` class.

Each check takes a :class:`~oltr.conformance.subjects.Subject` and raises
:class:`~oltr.conformance.report.CheckFailed` saying what is wrong. The
learner is built from each of its settings and run through the runner's
protocol on every registered environment whose contexts it can rank, with
every registered feedback model that reveals enough
(:func:`~oltr.conformance.rollouts.setups`). The checks follow river's
estimator checks and scikit-learn's ``check_estimator``: seeding, valid
orders, untouched inputs, feedback limited to what the learner declared,
runs independent of their batch, clone, pickle and the constructor rules.
"""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import numpy as np

from oltr.build import check_compatible
from oltr.conformance.report import CheckFailed, expect
from oltr.conformance.rollouts import (
    FEEDBACK_CLASS,
    N_STEPS,
    SEED,
    Round,
    build_learner,
    check_orders_valid,
    rollout,
    same_traces,
    setups,
)
from oltr.conformance.subjects import (
    Subject,
    require_docstring,
    require_immutable_defaults,
    require_params_stored,
)
from oltr.envs.base import Environment
from oltr.feedback import FeedbackRequirement
from oltr.learners.base import Learner
from oltr.types import RunGenerators

__all__ = ["LEARNER_CHECKS", "is_learner"]


def is_learner(cls: type) -> bool:
    """Whether ``cls`` is a concrete :class:`~oltr.learners.base.Learner` subclass."""
    return isinstance(cls, type) and issubclass(cls, Learner) and not inspect.isabstract(cls)


def check_docstring(subject: Subject) -> None:
    """The class has a docstring whose first line is a sentence."""
    require_docstring(subject.cls)


def check_params_stored_unmodified(subject: Subject) -> None:
    """Every hyperparameter is stored unmodified under its own name (scikit-learn's rule)."""
    require_params_stored(
        subject.cls, subject.settings(), lambda p: build_learner(subject, p), ("n_runs", "rng")
    )


def check_defaults_immutable(subject: Subject) -> None:
    """Keyword-only hyperparameters with immutable defaults, plus ``n_runs=`` and ``rng=``."""
    require_immutable_defaults(subject.cls)
    names = list(inspect.signature(subject.cls).parameters)
    expect("n_runs" in names and "rng" in names, "learners take n_runs= and rng=")


def check_declarations(subject: Subject) -> None:
    """``requires`` is a FeedbackRequirement and ``context_kind`` a known kind."""
    for params in subject.settings():
        lrn = build_learner(subject, params)
        expect(
            isinstance(lrn.requires, FeedbackRequirement),
            f"requires must be a FeedbackRequirement, got {type(lrn.requires).__name__}",
        )
        expect(
            lrn.context_kind in ("items", "features", "any"),
            f"context_kind must be 'items', 'features' or 'any', got {lrn.context_kind!r}",
        )


def check_horizon_contract(subject: Subject) -> None:
    """``horizon_dependent`` is True exactly when the constructor takes ``horizon=``."""
    cls: Any = subject.cls
    takes_horizon = "horizon" in inspect.signature(cls).parameters
    expect(
        cls.horizon_dependent == takes_horizon,
        f"{cls.__name__}: horizon_dependent = {cls.horizon_dependent} but the constructor "
        f"{'takes' if takes_horizon else 'does not take'} horizon=",
    )


def check_repr_and_clone(subject: Subject) -> None:
    """``repr`` names the class; ``clone()`` of a trained learner is an untrained twin."""
    name = subject.cls.__name__
    for setup in setups(subject):
        lrn = build_learner(subject, setup.params)
        expect(repr(lrn).startswith(f"{name}("), f"repr should start with {name}(")
        rollout(lrn, setup.env())  # train it a little
        twin = lrn.clone()
        expect(repr(twin) == repr(lrn), "clone() has another repr than the original")
        expect(twin.get_params() == lrn.get_params(), "clone() has other parameters")
        fresh = build_learner(subject, setup.params)
        a, b = rollout(twin, setup.env()), rollout(fresh, setup.env())
        expect(same_traces(a, b), "clone() must give an untrained copy with the same seed")


def check_pickle(subject: Subject) -> None:
    """A pickled learner continues exactly as the original."""
    for setup in setups(subject):
        lrn, env = build_learner(subject, setup.params), setup.env()
        rngs = RunGenerators.from_keys(SEED, "feedback", reps=range(2))
        rollout(lrn, env, n_steps=5, fb_rngs=rngs)
        lrn2, env2, rngs2 = pickle.loads(pickle.dumps((lrn, env, rngs)))
        a = rollout(lrn, env, n_steps=5, start=6, fb_rngs=rngs)
        b = rollout(lrn2, env2, n_steps=5, start=6, fb_rngs=rngs2)
        expect(same_traces(a, b), "a pickled learner must continue exactly as the original")


def check_seeding_is_idempotent(subject: Subject) -> None:
    """The same seeds give the same orders, round after round."""
    for setup in setups(subject):
        a = rollout(build_learner(subject, setup.params), setup.env())
        b = rollout(build_learner(subject, setup.params), setup.env())
        expect(
            same_traces(a, b),
            "same seeds must give the same rankings: draw randomness only from self.rngs, "
            "never from np.random, random or fresh entropy",
        )


def check_rankings_are_permutations(subject: Subject) -> None:
    """``rank`` returns integer orders of shape (B, m) (or (B, 2, m)), each a permutation."""
    for setup in setups(subject):
        lrn = build_learner(subject, setup.params, n_runs=3)
        for rnd in rollout(lrn, setup.env()).rounds:
            check_orders_valid(rnd.orders, rnd.context.n_items, 3, lrn.requires.n_lists)


def check_inputs_not_mutated(subject: Subject) -> None:
    """``rank`` and ``update`` leave the context, the shown orders and the feedback as they were."""
    for setup in setups(subject):
        lrn, env = build_learner(subject, setup.params), setup.env()
        env.reset(rng=SEED)
        rngs = RunGenerators.from_keys(SEED, "feedback", reps=range(2))
        for t in range(1, N_STEPS + 1):
            ctx = env.observe(t)
            feats = None if ctx.features is None else ctx.features.copy()
            orders = lrn.rank(ctx)
            check_orders_valid(orders, ctx.n_items, lrn.n_runs, lrn.requires.n_lists)
            shown = np.array(orders, copy=True)
            fb = env.feedback(orders, rngs).restrict(lrn.requires)
            before = [a.copy() for a in fb.arrays()]
            lrn.update(ctx, orders, fb)
            expect(np.array_equal(orders, shown), "update must not change the shown orders")
            expect(
                all(np.array_equal(a, b) for a, b in zip(fb.arrays(), before, strict=True)),
                "update must not change the feedback",
            )
            if feats is not None:
                now = ctx.features
                expect(
                    now is not None and np.array_equal(now, feats), "the context's features changed"
                )
            expect(ctx.t == t, "the context's round changed")


def check_sees_only_what_it_declared(subject: Subject) -> None:
    """``update`` gets exactly the declared feedback kind, read-only, never aliasing the truth."""
    for setup in setups(subject):
        lrn = build_learner(subject, setup.params)
        req = lrn.requires

        def audit(rnd: Round, env: Environment, req: FeedbackRequirement = req) -> None:
            truth = env._ground_truth()
            fb = rnd.feedback
            expect(
                type(fb) is FEEDBACK_CLASS[req.kind],
                f"update got {type(fb).__name__} for a {req.kind!r} requirement",
            )
            for arr in fb.arrays():
                expect(not np.shares_memory(arr, truth), "feedback aliases the hidden relevance")
                expect(not arr.flags.writeable, "feedback arrays must be read-only")
            expect(
                not any(
                    isinstance(v, np.ndarray) and np.shares_memory(v, truth)
                    for v in vars(rnd.context).values()
                ),
                "the context aliases the hidden relevance",
            )
            n_runs = rnd.orders.shape[0]
            if req.kind == "topk":
                k = min(int(req.k or 1), rnd.context.n_items)
                labels = fb.labels  # type: ignore[attr-defined]
                expect(labels.shape == (n_runs, k), f"top-{k} labels of shape {labels.shape}")
                expect(
                    np.array_equal(labels, rnd.truth[rnd.orders[:, :k]]),
                    "top-k labels are not the grades of the top shown items",
                )
            elif req.kind == "full":
                expect(
                    np.array_equal(fb.relevance, np.broadcast_to(rnd.truth, rnd.orders.shape)),  # type: ignore[attr-defined]
                    "full feedback is not the relevance",
                )
            elif req.kind == "none":
                expect(list(vars(fb)) == ["orders"], "no-feedback holds more than the orders")
            expect(fb.n_runs == n_runs, f"feedback of {fb.n_runs} runs for {n_runs}")

        try:
            check_compatible(lrn, setup.model)
        except ValueError as exc:
            raise CheckFailed(str(exc)) from exc
        rollout(lrn, setup.env(), on_update=audit)


def check_batch_equals_single_runs(subject: Subject) -> None:
    """Run ``b`` of a batch of 3 shows the same orders as the same run alone (B = 1)."""
    reps = [0, 1, 2]
    for setup in setups(subject):
        gens = RunGenerators.from_keys(SEED, "learner", subject.name, reps=reps)
        batch = rollout(
            build_learner(subject, setup.params, n_runs=3, rng=gens),
            setup.env(),
            fb_rngs=RunGenerators.from_keys(SEED, "feedback", reps=reps),
        )
        for b, rep in enumerate(reps):
            solo_gens = RunGenerators.from_keys(SEED, "learner", subject.name, reps=[rep])
            solo = rollout(
                build_learner(subject, setup.params, n_runs=1, rng=solo_gens),
                setup.env(),
                fb_rngs=RunGenerators.from_keys(SEED, "feedback", reps=[rep]),
            )
            for t, (x, y) in enumerate(zip(batch.orders(), solo.orders(), strict=True), 1):
                expect(
                    np.array_equal(x[b], y[0]),
                    f"run {rep} differs between B=3 and B=1 at round {t} (on {setup.env_name}): "
                    "each run must draw only from its own generator self.rngs[b]",
                )


#: Every learner check, in the order they run.
LEARNER_CHECKS = (
    check_docstring,
    check_params_stored_unmodified,
    check_defaults_immutable,
    check_declarations,
    check_horizon_contract,
    check_repr_and_clone,
    check_pickle,
    check_seeding_is_idempotent,
    check_rankings_are_permutations,
    check_inputs_not_mutated,
    check_sees_only_what_it_declared,
    check_batch_equals_single_runs,
)
