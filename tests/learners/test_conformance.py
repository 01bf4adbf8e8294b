"""Conformance checks run over every registered learner, environment and feedback model.

Like river's estimator checks and Gymnasium's ``check_env``: registering a class
(``@register_learner(...)`` etc. in a module of ``oltr.learners`` or
``oltr.envs``) adds it here, built from its ``_test_params()``, with no extra
test code. Test ids are ``f"{name}:{check}"``, so ``pytest -k "rtop1f:"`` runs
one learner's checks and ``pytest -k check_pickle`` one check everywhere.

A learner is run on every registered environment whose contexts it can rank and
with every registered feedback model (first test setting of each) that reveals
enough for it.
"""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from oltr.build import check_compatible
from oltr.envs.base import Environment
from oltr.feedback import (
    FEEDBACK_KINDS,
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
from oltr.metrics import get_measure
from oltr.registry import ENVIRONMENTS, FEEDBACK_MODELS, LEARNERS
from oltr.types import Context, RunGenerators

N_STEPS = 12
SEED = 3
FEEDBACK_CLASS: dict[str, type[Feedback]] = {
    "none": NoFeedback,
    "full": FullFeedback,
    "topk": TopKFeedback,
    "choice": ChoiceFeedback,
    "bandit": BanditFeedback,
    "duel": DuelFeedback,
    "clicks": ClickFeedback,
}


# ---------------------------------------------------------------------------
# building blocks


def settings(cls: type) -> list[dict[str, Any]]:
    out = list(cls._test_params())  # type: ignore[attr-defined]
    assert out, f"{cls.__name__}._test_params() yields no setting"
    return out


def learner(cls: type, params: dict[str, Any], n_runs: int = 2, rng: Any = SEED) -> Learner:
    return cls(**params, n_runs=n_runs, rng=rng)  # type: ignore[no-any-return]


def envs_for(lrn: Learner) -> list[tuple[str, dict[str, Any]]]:
    """Every registered environment (first test setting) whose contexts ``lrn`` can rank."""
    out = []
    for name, cls in ENVIRONMENTS.items():
        if lrn.context_kind in ("any", cls.context_kind):
            out.append((name, settings(cls)[0]))
    return out


def models_for(required: FeedbackRequirement) -> list[FeedbackModel]:
    """Every registered feedback model (each test setting) that reveals enough."""
    out = []
    for cls in FEEDBACK_MODELS.values():
        for params in settings(cls):
            model = cls(**params)
            if required.satisfied_by(model.provides):
                out.append(model)
    return out


def setups(cls: type) -> Iterator[tuple[dict[str, Any], str, dict[str, Any], FeedbackModel]]:
    """(learner params, env name, env params, feedback model) combinations to run."""
    for params in settings(cls):
        probe = learner(cls, params, n_runs=1)
        models = models_for(probe.requires)
        assert models, f"no registered feedback model satisfies {probe.requires}"
        envs = envs_for(probe)
        assert envs, f"no registered environment has {probe.context_kind!r} contexts"
        for env_name, env_params in envs:
            for model in models:
                yield params, env_name, env_params, model


def make_env(name: str, params: dict[str, Any], model: FeedbackModel | None = None) -> Environment:
    return ENVIRONMENTS[name](**params, feedback=model)  # type: ignore[no-any-return]


@dataclass
class Round:
    context: Context
    orders: np.ndarray
    truth: np.ndarray
    feedback: Feedback


@dataclass
class Trace:
    rounds: list[Round] = field(default_factory=list)

    def orders(self) -> list[np.ndarray]:
        return [r.orders for r in self.rounds]


def rollout(
    lrn: Learner,
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
        assert_valid_orders(orders, ctx.n_items, lrn.n_runs, lrn.requires.n_lists)
        fb = env.feedback(orders, rngs).restrict(lrn.requires)
        rnd = Round(ctx, np.array(orders, copy=True), np.array(env._current(), copy=True), fb)
        if on_update is not None:
            on_update(rnd, env)
        result = lrn.update(ctx, orders, fb)
        assert result is None, "update must return None"
        trace.rounds.append(rnd)
    return trace


def assert_valid_orders(orders: Any, m: int, n_runs: int, n_lists: int) -> None:
    want = (n_runs, m) if n_lists == 1 else (n_runs, 2, m)
    assert isinstance(orders, np.ndarray), f"rank returned {type(orders).__name__}, not an array"
    assert orders.shape == want, f"rank returned shape {orders.shape}, expected {want}"
    assert np.issubdtype(orders.dtype, np.integer), f"rank returned dtype {orders.dtype}"
    assert (np.sort(orders, axis=-1) == np.arange(m)).all(), "every list must be a permutation"


def same_traces(a: Trace, b: Trace) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a.orders(), b.orders(), strict=True))


def check_params_stored(
    cls: type,
    params_list: list[dict[str, Any]],
    build: Callable[..., Any],
    reserved: tuple[str, ...],
) -> None:
    sig = inspect.signature(cls.__init__)
    names = [p for p in list(sig.parameters)[1:] if p not in reserved]
    for params in params_list:
        obj = build(params)
        got = obj.get_params()
        assert list(got) == names, f"get_params() keys {list(got)} != parameters {names}"
        for key, value in got.items():
            if key in params:
                assert value is params[key], f"parameter {key!r} was not stored unmodified"
            else:
                assert value is sig.parameters[key].default or value == sig.parameters[key].default


def check_defaults_immutable(cls: type) -> None:
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, f"{p.name} must be keyword-only"
        assert not isinstance(p.default, list | dict | set | np.ndarray), (
            f"default of {p.name!r} is mutable ({type(p.default).__name__})"
        )


def check_docstring(cls: type) -> None:
    assert cls.__doc__ and cls.__doc__.strip(), f"{cls.__name__} has no docstring"
    first = cls.__doc__.strip().splitlines()[0]
    assert first.endswith("."), f"{cls.__name__}: the summary line should be a sentence"


# ---------------------------------------------------------------------------
# learner checks


def learner_check_docstring(name: str, cls: type) -> None:
    check_docstring(cls)


def learner_check_params_stored_unmodified(name: str, cls: type) -> None:
    check_params_stored(cls, settings(cls), lambda p: learner(cls, p), ("n_runs", "rng"))


def learner_check_defaults_immutable(name: str, cls: type) -> None:
    check_defaults_immutable(cls)
    names = list(inspect.signature(cls.__init__).parameters)
    assert "n_runs" in names and "rng" in names, "learners take n_runs= and rng="


def learner_check_declarations(name: str, cls: type) -> None:
    for params in settings(cls):
        lrn = learner(cls, params)
        assert isinstance(lrn.requires, FeedbackRequirement)
        assert lrn.context_kind in ("items", "features", "any")


def learner_check_horizon_contract(name: str, cls: type) -> None:
    # The runner passes the horizon to learners that declare it, never by parameter name.
    takes_horizon = "horizon" in inspect.signature(cls.__init__).parameters
    assert cls.horizon_dependent == takes_horizon, (
        f"{cls.__name__}: horizon_dependent = {cls.horizon_dependent} but the constructor "
        f"{'takes' if takes_horizon else 'does not take'} horizon="
    )


def learner_check_repr_and_clone(name: str, cls: type) -> None:
    for params, env_name, env_params, model in setups(cls):
        lrn = learner(cls, params)
        assert repr(lrn).startswith(f"{cls.__name__}(")
        rollout(lrn, make_env(env_name, env_params, model))  # train it a little
        twin = lrn.clone()
        assert repr(twin) == repr(lrn)
        assert twin.get_params() == lrn.get_params()
        fresh = learner(cls, params)
        a = rollout(twin, make_env(env_name, env_params, model))
        b = rollout(fresh, make_env(env_name, env_params, model))
        assert same_traces(a, b), "clone() must give an untrained copy with the same seed"


def learner_check_pickle(name: str, cls: type) -> None:
    for params, env_name, env_params, model in setups(cls):
        lrn, env = learner(cls, params), make_env(env_name, env_params, model)
        rngs = RunGenerators.from_keys(SEED, "feedback", reps=range(2))
        rollout(lrn, env, n_steps=5, fb_rngs=rngs)
        lrn2, env2, rngs2 = pickle.loads(pickle.dumps((lrn, env, rngs)))
        a = rollout(lrn, env, n_steps=5, start=6, fb_rngs=rngs)
        b = rollout(lrn2, env2, n_steps=5, start=6, fb_rngs=rngs2)
        assert same_traces(a, b), "a pickled learner must continue exactly as the original"


def learner_check_seeding_is_idempotent(name: str, cls: type) -> None:
    for params, env_name, env_params, model in setups(cls):
        a = rollout(learner(cls, params), make_env(env_name, env_params, model))
        b = rollout(learner(cls, params), make_env(env_name, env_params, model))
        assert same_traces(a, b), "same seeds must give the same rankings"


def learner_check_rankings_are_permutations(name: str, cls: type) -> None:
    for params, env_name, env_params, model in setups(cls):
        lrn = learner(cls, params, n_runs=3)
        for rnd in rollout(lrn, make_env(env_name, env_params, model)).rounds:
            assert_valid_orders(rnd.orders, rnd.context.n_items, 3, lrn.requires.n_lists)


def learner_check_inputs_not_mutated(name: str, cls: type) -> None:
    for params, env_name, env_params, model in setups(cls):
        lrn, env = learner(cls, params), make_env(env_name, env_params, model)
        env.reset(rng=SEED)
        rngs = RunGenerators.from_keys(SEED, "feedback", reps=range(2))
        for t in range(1, N_STEPS + 1):
            ctx = env.observe(t)
            feats = None if ctx.features is None else ctx.features.copy()
            orders = lrn.rank(ctx)
            assert_valid_orders(orders, ctx.n_items, lrn.n_runs, lrn.requires.n_lists)
            shown = np.array(orders, copy=True)
            fb = env.feedback(orders, rngs).restrict(lrn.requires)
            before = [a.copy() for a in fb.arrays()]
            lrn.update(ctx, orders, fb)
            assert np.array_equal(orders, shown), "update must not change the shown orders"
            assert all(np.array_equal(a, b) for a, b in zip(fb.arrays(), before, strict=True))
            if feats is not None:
                assert np.array_equal(ctx.features, feats), "the context's features changed"
            assert ctx.t == t


def learner_check_sees_only_what_it_declared(name: str, cls: type) -> None:
    """The feedback handed to update is exactly the declared kind, and never aliases the truth."""

    def audit(rnd: Round, env: Environment) -> None:
        truth = env._current()
        fb, req = rnd.feedback, lrn.requires
        assert type(fb) is FEEDBACK_CLASS[req.kind], (
            f"update got {type(fb).__name__} for a {req.kind!r} requirement"
        )
        for arr in fb.arrays():
            assert not np.shares_memory(arr, truth), "feedback aliases the hidden relevance"
            assert not arr.flags.writeable, "feedback arrays must be read-only"
        if rnd.context.features is not None:
            assert not np.shares_memory(rnd.context.features, truth)
        assert not any(
            isinstance(v, np.ndarray) and np.shares_memory(v, truth)
            for v in vars(rnd.context).values()
        )
        rows = np.arange(rnd.orders.shape[0])[:, None]
        if req.kind == "topk":
            k = min(int(req.k or 1), rnd.context.n_items)
            assert fb.labels.shape == (rnd.orders.shape[0], k)  # type: ignore[attr-defined]
            assert np.array_equal(fb.labels, rnd.truth[rnd.orders[:, :k]])  # type: ignore[attr-defined]
        elif req.kind == "full":
            assert np.array_equal(fb.relevance, np.broadcast_to(rnd.truth, rnd.orders.shape))  # type: ignore[attr-defined]
        elif req.kind == "none":
            assert [f for f in vars(fb)] == ["orders"]
        assert rows.size == fb.n_runs

    for params, env_name, env_params, model in setups(cls):
        lrn = learner(cls, params)
        check_compatible(lrn, model)
        rollout(lrn, make_env(env_name, env_params, model), on_update=audit)


def learner_check_batch_equals_single_runs(name: str, cls: type) -> None:
    reps = [0, 1, 2]
    for params, env_name, env_params, model in setups(cls):
        gens = RunGenerators.from_keys(SEED, "learner", name, reps=reps)
        batch = rollout(
            learner(cls, params, n_runs=3, rng=gens),
            make_env(env_name, env_params, model),
            fb_rngs=RunGenerators.from_keys(SEED, "feedback", reps=reps),
        )
        for b, rep in enumerate(reps):
            solo_gens = RunGenerators.from_keys(SEED, "learner", name, reps=[rep])
            solo = rollout(
                learner(cls, params, n_runs=1, rng=solo_gens),
                make_env(env_name, env_params, model),
                fb_rngs=RunGenerators.from_keys(SEED, "feedback", reps=[rep]),
            )
            for x, y in zip(batch.orders(), solo.orders(), strict=True):
                assert np.array_equal(x[b], y[0]), f"run {rep} differs between B=3 and B=1"


LEARNER_CHECKS = [
    learner_check_docstring,
    learner_check_params_stored_unmodified,
    learner_check_defaults_immutable,
    learner_check_declarations,
    learner_check_horizon_contract,
    learner_check_repr_and_clone,
    learner_check_pickle,
    learner_check_seeding_is_idempotent,
    learner_check_rankings_are_permutations,
    learner_check_inputs_not_mutated,
    learner_check_sees_only_what_it_declared,
    learner_check_batch_equals_single_runs,
]


def _cases(table: Any, checks: list[Callable[..., None]], prefix: str) -> Any:
    return pytest.mark.parametrize(
        ("name", "check"),
        [(name, check) for name in table for check in checks],
        ids=[f"{name}:{check.__name__.removeprefix(prefix)}" for name in table for check in checks],
    )


@_cases(LEARNERS, LEARNER_CHECKS, "learner_")
def test_learner(name: str, check: Callable[[str, type], None]) -> None:
    check(name, LEARNERS[name])


# ---------------------------------------------------------------------------
# environment checks

MEASURES = ("dcg", "ndcg@3", "sumloss", "precision@2")


def env_rounds(
    env: Environment, n_steps: int = N_STEPS, seed: int = SEED
) -> list[tuple[Context, np.ndarray]]:
    env.reset(rng=seed)
    out = []
    for t in range(1, n_steps + 1):
        ctx = env.observe(t)
        out.append((ctx, np.array(env._current(), copy=True)))
    return out


def env_check_docstring(name: str, cls: type) -> None:
    check_docstring(cls)


def env_check_params_stored_unmodified(name: str, cls: type) -> None:
    check_params_stored(cls, settings(cls), lambda p: cls(**p), ("feedback",))


def env_check_defaults_immutable(name: str, cls: type) -> None:
    check_defaults_immutable(cls)
    assert cls.context_kind in ("items", "features")


def env_check_repr(name: str, cls: type) -> None:
    for params in settings(cls):
        assert repr(cls(**params)).startswith(f"{cls.__name__}(")


def env_check_observe_needs_reset(name: str, cls: type) -> None:
    for params in settings(cls):
        env = cls(**params)
        with pytest.raises(RuntimeError, match="reset"):
            env.observe(1)
        env.reset(rng=0)
        env.observe(1)
        with pytest.raises(ValueError, match="in order"):
            env.observe(3)


def env_check_seeding_is_idempotent(name: str, cls: type) -> None:
    for params in settings(cls):
        a, b = env_rounds(cls(**params)), env_rounds(cls(**params))
        for (ca, ra), (cb, rb) in zip(a, b, strict=True):
            assert np.array_equal(ra, rb)
            assert ca.n_items == cb.n_items and ca.qid == cb.qid
            assert (ca.features is None) == (cb.features is None)
            if ca.features is not None:
                assert np.array_equal(ca.features, cb.features)


def env_check_contexts_are_valid(name: str, cls: type) -> None:
    for params in settings(cls):
        for t, (ctx, truth) in enumerate(env_rounds(cls(**params)), start=1):
            assert isinstance(ctx, Context) and ctx.t == t
            assert ctx.n_items == truth.shape[0] >= 1 and truth.ndim == 1
            if cls.context_kind == "items":
                assert ctx.features is None
            else:
                assert ctx.features is not None and ctx.features.shape[0] == ctx.n_items
                assert not ctx.features.flags.writeable, "features must be read-only"
                assert not np.shares_memory(ctx.features, truth)


def env_check_evaluate_matches_the_measures(name: str, cls: type) -> None:
    for params in settings(cls):
        env = cls(**params)
        env.reset(rng=SEED)
        gen = np.random.default_rng(0)
        for t in range(1, N_STEPS + 1):
            ctx = env.observe(t)
            truth = np.array(env._current(), copy=True)
            orders = np.stack([gen.permutation(ctx.n_items) for _ in range(3)])
            got = env.evaluate(orders, list(MEASURES))
            assert list(got) == list(MEASURES)
            for m in MEASURES:
                want = get_measure(m)(truth, orders)
                assert got[m].shape == (3,)
                np.testing.assert_array_equal(got[m], want)
            pairs = np.stack([orders[:2], orders[1:]], axis=1)  # (2, 2, m) duel lists
            duel = env.evaluate(pairs, ["dcg"])["dcg"]
            single = get_measure("dcg")(truth, orders)
            np.testing.assert_allclose(
                duel, [(single[0] + single[1]) / 2, (single[1] + single[2]) / 2]
            )


def env_check_comparator_dominates_fixed_orders(name: str, cls: type) -> None:
    """Where it exists, the comparator is at least as good as any fixed order we try."""
    for params in settings(cls):
        env = cls(**params)
        env.reset(rng=SEED)
        ctx = env.observe(1)
        gen = np.random.default_rng(1)
        fixed = np.stack(
            [np.arange(ctx.n_items)] + [gen.permutation(ctx.n_items) for _ in range(5)]
        )
        cum = {m: np.zeros(len(fixed)) for m in MEASURES}
        checkpoints, record = [4, N_STEPS], {m: [] for m in MEASURES}
        for t in range(1, N_STEPS + 1):
            if t > 1:
                ctx = env.observe(t)
            if ctx.n_items != fixed.shape[1]:
                break  # lists of varying length have no fixed order
            for m, v in env.evaluate(fixed, list(MEASURES)).items():
                cum[m] += v
                if t in checkpoints:
                    record[m].append(cum[m].copy())
        else:
            best = env.comparator(list(MEASURES), checkpoints)
            assert set(best) == set(MEASURES)
            for m in MEASURES:
                if best[m] is None:
                    continue
                assert best[m].shape == (len(checkpoints),)
                sign = get_measure(m).sign
                for c in range(len(checkpoints)):
                    assert (sign * (best[m][c] - record[m][c]) >= -1e-9).all()
            continue
        assert all(v is None for v in env.comparator(list(MEASURES), [1]).values())


def env_check_pickle(name: str, cls: type) -> None:
    for params in settings(cls):
        env = cls(**params)
        env.reset(rng=SEED)
        for t in range(1, 4):
            env.observe(t)
        twin = pickle.loads(pickle.dumps(env))
        for t in range(4, 9):
            a, b = env.observe(t), twin.observe(t)
            assert a.n_items == b.n_items
            assert np.array_equal(env._current(), twin._current())


def env_check_feedback_goes_through_the_model(name: str, cls: type) -> None:
    for params in settings(cls):
        env = cls(**params)
        env.reset(rng=SEED)
        ctx = env.observe(1)
        with pytest.raises(RuntimeError, match="no feedback model"):
            env.feedback(np.arange(ctx.n_items)[None])
        for model in models_for(FeedbackRequirement("none")):
            env = cls(**params, feedback=model)
            env.reset(rng=SEED)
            ctx = env.observe(1)
            fb = env.feedback(np.arange(ctx.n_items)[None], RunGenerators.from_rng(0, 1))
            assert fb.kind == model.provides.kind


ENV_CHECKS = [
    env_check_docstring,
    env_check_params_stored_unmodified,
    env_check_defaults_immutable,
    env_check_repr,
    env_check_observe_needs_reset,
    env_check_seeding_is_idempotent,
    env_check_contexts_are_valid,
    env_check_evaluate_matches_the_measures,
    env_check_comparator_dominates_fixed_orders,
    env_check_pickle,
    env_check_feedback_goes_through_the_model,
]


@_cases(ENVIRONMENTS, ENV_CHECKS, "env_")
def test_environment(name: str, check: Callable[[str, type], None]) -> None:
    check(name, ENVIRONMENTS[name])


# ---------------------------------------------------------------------------
# feedback model checks

TRUTH = np.array([2, 0, 1, 0, 3])


def model_orders(model: FeedbackModel, n_runs: int, seed: int = 0) -> np.ndarray:
    gen = np.random.default_rng(seed)
    shape = (n_runs, TRUTH.size) if model.provides.n_lists == 1 else (n_runs, 2, TRUTH.size)
    return gen.permuted(np.broadcast_to(np.arange(TRUTH.size), shape), axis=-1)


def keyed(reps: list[int]) -> RunGenerators:
    return RunGenerators.from_keys(SEED, "feedback", reps=reps)


def model_check_docstring(name: str, cls: type) -> None:
    check_docstring(cls)


def model_check_params_stored_unmodified(name: str, cls: type) -> None:
    check_params_stored(cls, settings(cls), lambda p: cls(**p), ())


def model_check_defaults_immutable(name: str, cls: type) -> None:
    check_defaults_immutable(cls)


def model_check_repr_and_pickle(name: str, cls: type) -> None:
    for params in settings(cls):
        model = cls(**params)
        assert repr(model).startswith(f"{cls.__name__}(")
        twin = pickle.loads(pickle.dumps(model))
        assert repr(twin) == repr(model)


def model_check_declares_what_it_returns(name: str, cls: type) -> None:
    for params in settings(cls):
        model = cls(**params)
        assert isinstance(model.provides, FeedbackRequirement)
        assert model.provides.kind == cls.kind
        fb = model.observe(model_orders(model, 4), TRUTH, rngs=keyed([0, 1, 2, 3]))
        assert type(fb) is FEEDBACK_CLASS[cls.kind] and fb.n_runs == 4
        if isinstance(fb, TopKFeedback):
            assert fb.k == min(model.provides.k or 1, TRUTH.size)


def model_check_reveals_fresh_read_only_arrays(name: str, cls: type) -> None:
    for params in settings(cls):
        model = cls(**params)
        orders = model_orders(model, 3)
        truth = TRUTH.copy()
        fb = model.observe(orders, truth, rngs=keyed([0, 1, 2]))
        for arr in fb.arrays():
            assert not np.shares_memory(arr, truth) and not np.shares_memory(arr, orders)
            assert not arr.flags.writeable


def model_check_inputs_not_mutated(name: str, cls: type) -> None:
    for params in settings(cls):
        model = cls(**params)
        orders, truth = model_orders(model, 3), TRUTH.copy()
        o0, t0 = orders.copy(), truth.copy()
        model.observe(orders, truth, rngs=keyed([0, 1, 2]))
        assert np.array_equal(orders, o0) and np.array_equal(truth, t0)


def model_check_seeding_is_idempotent(name: str, cls: type) -> None:
    for params in settings(cls):
        model = cls(**params)
        orders = model_orders(model, 4)
        a = model.observe(orders, TRUTH, rngs=keyed([0, 1, 2, 3]))
        b = model.observe(orders, TRUTH, rngs=keyed([0, 1, 2, 3]))
        assert all(np.array_equal(x, y) for x, y in zip(a.arrays(), b.arrays(), strict=True))


def model_check_batch_equals_single_runs(name: str, cls: type) -> None:
    reps = [0, 1, 2, 3]
    for params in settings(cls):
        model = cls(**params)
        orders = model_orders(model, 4)
        batch = model.observe(orders, TRUTH, rngs=keyed(reps))
        for b, rep in enumerate(reps):
            solo = model.observe(orders[b : b + 1], TRUTH, rngs=keyed([rep]))
            for x, y in zip(batch.arrays(), solo.arrays(), strict=True):
                assert np.array_equal(x[b], y[0])


def model_check_restricts_to_every_weaker_kind(name: str, cls: type) -> None:
    wanted = [FeedbackRequirement(k) for k in FEEDBACK_KINDS if k != "topk"]  # type: ignore[arg-type]
    wanted += [FeedbackRequirement("topk", k=1), FeedbackRequirement("topk", k=2)]
    for params in settings(cls):
        model = cls(**params)
        fb = model.observe(model_orders(model, 2), TRUTH, rngs=keyed([0, 1]))
        for req in wanted:
            if req.satisfied_by(model.provides):
                cut = fb.restrict(req)
                assert type(cut) is FEEDBACK_CLASS[req.kind]
                if isinstance(cut, TopKFeedback):
                    assert cut.k == req.k


MODEL_CHECKS = [
    model_check_docstring,
    model_check_params_stored_unmodified,
    model_check_defaults_immutable,
    model_check_repr_and_pickle,
    model_check_declares_what_it_returns,
    model_check_reveals_fresh_read_only_arrays,
    model_check_inputs_not_mutated,
    model_check_seeding_is_idempotent,
    model_check_batch_equals_single_runs,
    model_check_restricts_to_every_weaker_kind,
]


@_cases(FEEDBACK_MODELS, MODEL_CHECKS, "model_")
def test_feedback_model(name: str, check: Callable[[str, type], None]) -> None:
    check(name, FEEDBACK_MODELS[name])


def test_every_registered_class_is_checked() -> None:
    """The suite covers the registries as they are (so a new class cannot slip past)."""
    assert {"random", "fixed", "noop"} <= set(LEARNERS)
    assert {"fixed-items-v1", "letor-stream-v1"} <= set(ENVIRONMENTS)
    assert {"full", "top-k", "choice", "bandit", "duel"} <= set(FEEDBACK_MODELS)


# ---------------------------------------------------------------------------
# the checks can fail: deliberately broken learners are caught


class _Base(Learner):
    """A uniformly random ranker to break in small ways."""

    def __init__(self, *, eta: float = 1.0, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self.eta = eta

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"eta": 2}

    def rank(self, context: Context) -> np.ndarray:
        return self.rngs.permutations(context.n_items)

    def update(self, context: Context, orders: np.ndarray, feedback: Feedback) -> None:
        pass


class _SharedStream(_Base):
    """Draws every run from one shared generator, so a run depends on its batch."""

    def rank(self, context: Context) -> np.ndarray:
        shared = self.rngs[0]
        return np.stack([shared.permutation(context.n_items) for _ in range(self.n_runs)])


class _Mutator(_Base):
    """Sorts the shown orders in place during update."""

    def update(self, context: Context, orders: np.ndarray, feedback: Feedback) -> None:
        orders.sort(axis=-1)


class _Converter(_Base):
    """Stores a converted hyperparameter."""

    def __init__(self, *, eta: float = 1.0, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(eta=eta, n_runs=n_runs, rng=rng)
        self.eta = float(eta)


class _Unseeded(_Base):
    """Draws fresh entropy instead of using its generators."""

    def rank(self, context: Context) -> np.ndarray:
        fresh = RunGenerators.from_rng(None, self.n_runs)
        return fresh.permutations(context.n_items)


class _Duplicates(_Base):
    """Shows item 0 twice."""

    def rank(self, context: Context) -> np.ndarray:
        orders = self.rngs.permutations(context.n_items)
        orders[:, -1] = orders[:, 0]
        return orders


@pytest.mark.parametrize(
    ("cls", "check"),
    [
        (_SharedStream, learner_check_batch_equals_single_runs),
        (_Mutator, learner_check_inputs_not_mutated),
        (_Converter, learner_check_params_stored_unmodified),
        (_Unseeded, learner_check_seeding_is_idempotent),
        (_Duplicates, learner_check_rankings_are_permutations),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_checks_catch_broken_learners(cls: type, check: Callable[[str, type], None]) -> None:
    check("base", _Base)  # the sound base class passes the same check
    with pytest.raises(AssertionError):
        check("broken", cls)
