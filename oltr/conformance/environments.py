"""Conformance checks of an :class:`~oltr.envs.Environment` class, after Gymnasium's ``check_env``.

Each check takes a :class:`~oltr.conformance.subjects.Subject`, builds the
environment from each of its settings and raises
:class:`~oltr.conformance.report.CheckFailed` saying what is wrong: seeding
only at ``reset``, rounds in order, valid read-only contexts, evaluation equal
to the measures, a comparator at least as good as any fixed order, pickling,
and feedback only through the feedback model.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from oltr.conformance.report import CheckFailed, expect
from oltr.conformance.rollouts import N_STEPS, SEED, models_for
from oltr.conformance.subjects import (
    Subject,
    require_docstring,
    require_immutable_defaults,
    require_params_stored,
)
from oltr.envs.base import Environment
from oltr.feedback import FeedbackRequirement
from oltr.metrics import get_measure
from oltr.types import Context, RunGenerators

__all__ = ["ENVIRONMENT_CHECKS", "is_environment"]

#: Measures every environment is evaluated with.
MEASURES = ("dcg", "ndcg@3", "sumloss", "precision@2")


def is_environment(cls: type) -> bool:
    """Whether ``cls`` is a concrete :class:`~oltr.envs.base.Environment` subclass."""
    return isinstance(cls, type) and issubclass(cls, Environment) and not inspect.isabstract(cls)


def _build(subject: Subject, params: dict[str, Any], **extra: Any) -> Environment:
    env = subject.cls(**params, **extra)
    expect(isinstance(env, Environment), f"{subject.cls.__name__}(...) is not an Environment")
    return env  # type: ignore[no-any-return]


def _rounds(env: Environment, n_steps: int = N_STEPS) -> list[tuple[Context, np.ndarray]]:
    env.reset(rng=SEED)
    out = []
    for t in range(1, n_steps + 1):
        ctx = env.observe(t)
        out.append((ctx, np.array(env._ground_truth(), copy=True)))
    return out


def _raises(kind: type[Exception], pattern: str, call: Callable[[], Any], what: str) -> None:
    try:
        call()
    except kind as exc:
        expect(
            re.search(pattern, str(exc)),
            f"{what} raised {kind.__name__} without saying {pattern!r}: {exc}",
        )
    else:
        raise CheckFailed(f"{what} must raise {kind.__name__}")


def check_docstring(subject: Subject) -> None:
    """The class has a docstring whose first line is a sentence."""
    require_docstring(subject.cls)


def check_params_stored_unmodified(subject: Subject) -> None:
    """Every parameter is stored unmodified under its own name."""
    require_params_stored(
        subject.cls, subject.settings(), lambda p: _build(subject, p), ("feedback",)
    )


def check_defaults_immutable(subject: Subject) -> None:
    """Keyword-only parameters with immutable defaults; a known ``context_kind``."""
    require_immutable_defaults(subject.cls)
    kind = getattr(subject.cls, "context_kind", None)
    expect(kind in ("items", "features"), f"context_kind must be 'items' or 'features': {kind!r}")


def check_repr(subject: Subject) -> None:
    """``repr`` names the class."""
    name = subject.cls.__name__
    for params in subject.settings():
        expect(repr(_build(subject, params)).startswith(f"{name}("), f"repr should start {name}(")


def check_observe_needs_reset(subject: Subject) -> None:
    """``observe`` before ``reset`` is an error, and rounds are observed in order."""
    for params in subject.settings():
        env = _build(subject, params)
        _raises(RuntimeError, "reset", functools.partial(env.observe, 1), "observe before reset")
        env.reset(rng=0)
        env.observe(1)
        _raises(ValueError, "in order", functools.partial(env.observe, 3), "observe(3) after 1")


def check_seeding_is_idempotent(subject: Subject) -> None:
    """The same seed at ``reset`` gives the same contexts and the same relevance."""
    for params in subject.settings():
        a, b = _rounds(_build(subject, params)), _rounds(_build(subject, params))
        for t, ((ca, ra), (cb, rb)) in enumerate(zip(a, b, strict=True), start=1):
            fa, fb = ca.features, cb.features
            same = (
                np.array_equal(ra, rb)
                and ca.n_items == cb.n_items
                and ca.qid == cb.qid
                and (fa is None) == (fb is None)
                and (fa is None or fb is None or np.array_equal(fa, fb))
            )
            expect(same, f"the same seed gave another round {t}: draw only from reset's rng")


def check_contexts_are_valid(subject: Subject) -> None:
    """Contexts carry their round, match the relevance's length, and features are read-only."""
    kind = getattr(subject.cls, "context_kind", None)
    for params in subject.settings():
        for t, (ctx, truth) in enumerate(_rounds(_build(subject, params)), start=1):
            expect(isinstance(ctx, Context), f"observe returned {type(ctx).__name__}")
            expect(ctx.t == t, f"round {t}'s context says t={ctx.t}")
            expect(
                truth.ndim == 1 and ctx.n_items == truth.shape[0] >= 1,
                f"round {t}: {ctx.n_items} items but relevance of shape {truth.shape}",
            )
            if kind == "items":
                expect(ctx.features is None, "an 'items' environment shows no features")
            else:
                feats = ctx.features
                if feats is None or feats.shape[0] != ctx.n_items:
                    raise CheckFailed("a 'features' environment shows one feature row per item")
                expect(not feats.flags.writeable, "features must be read-only")
                expect(not np.shares_memory(feats, truth), "features alias the relevance")


def check_evaluate_matches_the_measures(subject: Subject) -> None:
    """``evaluate`` equals the measures on the hidden relevance; duels average their lists."""
    for params in subject.settings():
        env = _build(subject, params)
        env.reset(rng=SEED)
        gen = np.random.default_rng(0)
        for t in range(1, N_STEPS + 1):
            ctx = env.observe(t)
            truth = np.array(env._ground_truth(), copy=True)
            orders = np.stack([gen.permutation(ctx.n_items) for _ in range(3)])
            got = env.evaluate(orders, list(MEASURES))
            expect(list(got) == list(MEASURES), f"evaluate returned {list(got)}")
            for m in MEASURES:
                want = get_measure(m)(truth, orders)
                expect(got[m].shape == (3,), f"{m}: shape {got[m].shape}, expected (3,)")
                expect(np.array_equal(got[m], want), f"{m}: {got[m]} != the measure's {want}")
            pairs = np.stack([orders[:2], orders[1:]], axis=1)  # (2, 2, m) duel lists
            duel = env.evaluate(pairs, ["dcg"])["dcg"]
            single = np.asarray(get_measure("dcg")(truth, orders), dtype=np.float64)
            means = [(single[0] + single[1]) / 2, (single[1] + single[2]) / 2]
            expect(np.allclose(duel, means), f"duel value {duel} is not its lists' mean {means}")


def check_comparator_dominates_fixed_orders(subject: Subject) -> None:
    """Where it exists, the comparator is at least as good as any fixed order we try."""
    checkpoints = [4, N_STEPS]
    for params in subject.settings():
        env = _build(subject, params)
        env.reset(rng=SEED)
        ctx = env.observe(1)
        gen = np.random.default_rng(1)
        fixed = np.stack(
            [np.arange(ctx.n_items)] + [gen.permutation(ctx.n_items) for _ in range(5)]
        )
        cum = {m: np.zeros(len(fixed)) for m in MEASURES}
        record: dict[str, list[np.ndarray]] = {m: [] for m in MEASURES}
        varying = False
        for t in range(1, N_STEPS + 1):
            if t > 1:
                ctx = env.observe(t)
            if ctx.n_items != fixed.shape[1]:
                varying = True  # lists of varying length have no fixed order
                break
            for m, v in env.evaluate(fixed, list(MEASURES)).items():
                cum[m] += v
                if t in checkpoints:
                    record[m].append(cum[m].copy())
        if varying:
            best = env.comparator(list(MEASURES), [1])
            expect(all(v is None for v in best.values()), "a comparator for varying lists")
            continue
        best = env.comparator(list(MEASURES), checkpoints)
        expect(set(best) == set(MEASURES), f"comparator returned {sorted(best)}")
        for m in MEASURES:
            value = best[m]
            if value is None:
                continue
            expect(value.shape == (len(checkpoints),), f"{m}: comparator shape {value.shape}")
            sign = get_measure(m).sign
            for c, t in enumerate(checkpoints):
                expect(
                    (sign * (value[c] - record[m][c]) >= -1e-9).all(),
                    f"{m} at t={t}: the comparator {value[c]} is worse than a fixed order",
                )


def check_pickle(subject: Subject) -> None:
    """A pickled environment continues exactly as the original."""
    for params in subject.settings():
        env = _build(subject, params)
        env.reset(rng=SEED)
        for t in range(1, 4):
            env.observe(t)
        twin = pickle.loads(pickle.dumps(env))
        for t in range(4, 9):
            a, b = env.observe(t), twin.observe(t)
            expect(
                a.n_items == b.n_items
                and np.array_equal(env._ground_truth(), twin._ground_truth()),
                f"a pickled environment differs from the original at round {t}",
            )


def check_feedback_goes_through_the_model(subject: Subject) -> None:
    """``feedback`` needs a feedback model, and reveals what that model provides."""
    for params in subject.settings():
        env = _build(subject, params)
        env.reset(rng=SEED)
        ctx = env.observe(1)
        first = np.arange(ctx.n_items)[None]
        _raises(
            RuntimeError, "no feedback model", functools.partial(env.feedback, first), "feedback()"
        )
        for model in models_for(FeedbackRequirement("none")):
            env = _build(subject, params, feedback=model)
            env.reset(rng=SEED)
            ctx = env.observe(1)
            fb = env.feedback(np.arange(ctx.n_items)[None], RunGenerators.from_rng(0, 1))
            expect(
                fb.kind == model.provides.kind,
                f"feedback through {model!r} is {fb.kind!r}, not {model.provides.kind!r}",
            )


#: Every environment check, in the order they run.
ENVIRONMENT_CHECKS = (
    check_docstring,
    check_params_stored_unmodified,
    check_defaults_immutable,
    check_repr,
    check_observe_needs_reset,
    check_seeding_is_idempotent,
    check_contexts_are_valid,
    check_evaluate_matches_the_measures,
    check_comparator_dominates_fixed_orders,
    check_pickle,
    check_feedback_goes_through_the_model,
)
