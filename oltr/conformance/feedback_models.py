"""Conformance checks of a :class:`~oltr.feedback.FeedbackModel` class.

Each check takes a :class:`~oltr.conformance.subjects.Subject`, builds the
model from each of its settings, shows it random orders of a small fixed
relevance vector and raises :class:`~oltr.conformance.report.CheckFailed`
saying what is wrong: it returns the kind it declares, fresh read-only arrays
that alias nothing, leaves its inputs alone, draws only from the per-run
generators it is given, and restricts to every weaker kind.
"""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import numpy as np

from oltr.conformance.report import expect
from oltr.conformance.rollouts import FEEDBACK_CLASS, SEED
from oltr.conformance.subjects import (
    Subject,
    require_docstring,
    require_immutable_defaults,
    require_params_stored,
)
from oltr.feedback import FEEDBACK_KINDS, FeedbackModel, FeedbackRequirement, TopKFeedback
from oltr.types import RunGenerators

__all__ = ["FEEDBACK_MODEL_CHECKS", "is_feedback_model"]

#: The hidden relevance every model is shown.
TRUTH = np.array([2, 0, 1, 0, 3])


def is_feedback_model(cls: type) -> bool:
    """Whether ``cls`` is a concrete :class:`~oltr.feedback.FeedbackModel` subclass."""
    return isinstance(cls, type) and issubclass(cls, FeedbackModel) and not inspect.isabstract(cls)


def _models(subject: Subject) -> list[FeedbackModel]:
    out = []
    for params in subject.settings():
        model = subject.cls(**params)
        expect(isinstance(model, FeedbackModel), f"{subject.cls.__name__}(...) is no model")
        out.append(model)
    return out


def _orders(model: FeedbackModel, n_runs: int, seed: int = 0) -> np.ndarray:
    gen = np.random.default_rng(seed)
    shape = (n_runs, TRUTH.size) if model.provides.n_lists == 1 else (n_runs, 2, TRUTH.size)
    return gen.permuted(np.broadcast_to(np.arange(TRUTH.size), shape), axis=-1)


def _keyed(reps: list[int]) -> RunGenerators:
    return RunGenerators.from_keys(SEED, "feedback", reps=reps)


def _same(a: Any, b: Any) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a.arrays(), b.arrays(), strict=True))


def check_docstring(subject: Subject) -> None:
    """The class has a docstring whose first line is a sentence."""
    require_docstring(subject.cls)


def check_params_stored_unmodified(subject: Subject) -> None:
    """Every parameter is stored unmodified under its own name."""
    require_params_stored(subject.cls, subject.settings(), lambda p: subject.cls(**p), ())


def check_defaults_immutable(subject: Subject) -> None:
    """Keyword-only parameters with immutable defaults."""
    require_immutable_defaults(subject.cls)


def check_repr_and_pickle(subject: Subject) -> None:
    """``repr`` names the class, and a pickled model has the same repr."""
    name = subject.cls.__name__
    for model in _models(subject):
        expect(repr(model).startswith(f"{name}("), f"repr should start with {name}(")
        twin = pickle.loads(pickle.dumps(model))
        expect(repr(twin) == repr(model), "a pickled model has another repr")


def check_declares_what_it_returns(subject: Subject) -> None:
    """``observe`` returns the feedback kind ``provides`` declares, one row per run."""
    for model in _models(subject):
        expect(
            isinstance(model.provides, FeedbackRequirement),
            f"provides must be a FeedbackRequirement, got {type(model.provides).__name__}",
        )
        kind = getattr(subject.cls, "kind", None)
        expect(model.provides.kind == kind, f"provides {model.provides.kind!r}, kind {kind!r}")
        fb = model.observe(_orders(model, 4), TRUTH, rngs=_keyed([0, 1, 2, 3]))
        expect(
            type(fb) is FEEDBACK_CLASS.get(str(kind)),
            f"observe returned {type(fb).__name__} for kind {kind!r}",
        )
        expect(fb.n_runs == 4, f"feedback of {fb.n_runs} runs for 4")
        if isinstance(fb, TopKFeedback):
            want = min(model.provides.k or 1, TRUTH.size)
            expect(fb.k == want, f"top-k feedback with k={fb.k}, declared {want}")


def check_reveals_fresh_read_only_arrays(subject: Subject) -> None:
    """Every revealed array is a read-only copy, aliasing neither the orders nor the truth."""
    for model in _models(subject):
        orders, truth = _orders(model, 3), TRUTH.copy()
        fb = model.observe(orders, truth, rngs=_keyed([0, 1, 2]))
        for arr in fb.arrays():
            expect(not np.shares_memory(arr, truth), "feedback aliases the relevance")
            expect(not np.shares_memory(arr, orders), "feedback aliases the orders")
            expect(not arr.flags.writeable, "feedback arrays must be read-only")


def check_inputs_not_mutated(subject: Subject) -> None:
    """``observe`` leaves the orders and the relevance as they were."""
    for model in _models(subject):
        orders, truth = _orders(model, 3), TRUTH.copy()
        o0, t0 = orders.copy(), truth.copy()
        model.observe(orders, truth, rngs=_keyed([0, 1, 2]))
        expect(np.array_equal(orders, o0), "observe changed the orders")
        expect(np.array_equal(truth, t0), "observe changed the relevance")


def check_seeding_is_idempotent(subject: Subject) -> None:
    """The same generators give the same feedback."""
    for model in _models(subject):
        orders = _orders(model, 4)
        a = model.observe(orders, TRUTH, rngs=_keyed([0, 1, 2, 3]))
        b = model.observe(orders, TRUTH, rngs=_keyed([0, 1, 2, 3]))
        expect(_same(a, b), "the same generators gave other feedback: draw only from rngs")


def check_batch_equals_single_runs(subject: Subject) -> None:
    """Run ``b`` of a batch gets the same feedback as the same run alone."""
    reps = [0, 1, 2, 3]
    for model in _models(subject):
        orders = _orders(model, 4)
        batch = model.observe(orders, TRUTH, rngs=_keyed(reps))
        for b, rep in enumerate(reps):
            solo = model.observe(orders[b : b + 1], TRUTH, rngs=_keyed([rep]))
            for x, y in zip(batch.arrays(), solo.arrays(), strict=True):
                expect(np.array_equal(x[b], y[0]), f"run {rep} differs between B=4 and B=1")


def check_restricts_to_every_weaker_kind(subject: Subject) -> None:
    """The feedback restricts to every kind its ``provides`` satisfies."""
    wanted = [FeedbackRequirement(k) for k in FEEDBACK_KINDS if k != "topk"]  # type: ignore[arg-type]
    wanted += [FeedbackRequirement("topk", k=1), FeedbackRequirement("topk", k=2)]
    for model in _models(subject):
        fb = model.observe(_orders(model, 2), TRUTH, rngs=_keyed([0, 1]))
        for req in wanted:
            if req.satisfied_by(model.provides):
                cut = fb.restrict(req)
                expect(
                    type(cut) is FEEDBACK_CLASS[req.kind],
                    f"restricted to {req.describe()} it is {type(cut).__name__}",
                )
                if isinstance(cut, TopKFeedback):
                    expect(cut.k == req.k, f"restricted to top-{req.k} it holds top-{cut.k}")


#: Every feedback model check, in the order they run.
FEEDBACK_MODEL_CHECKS = (
    check_docstring,
    check_params_stored_unmodified,
    check_defaults_immutable,
    check_repr_and_pickle,
    check_declares_what_it_returns,
    check_reveals_fresh_read_only_arrays,
    check_inputs_not_mutated,
    check_seeding_is_idempotent,
    check_batch_equals_single_runs,
    check_restricts_to_every_weaker_kind,
)
