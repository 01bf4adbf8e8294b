"""The checks can fail: deliberately broken classes fail the named check, saying what is wrong.

Each broken class is a sound one changed in one way; the sound class passes
the same check, so the failure is the change's, and the message must name it.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np
import pytest
from numpy.typing import NDArray

from oltr.conformance import (
    ConformanceError,
    Subject,
    assert_conforms,
    audit,
    audit_dueler,
    audit_environment,
    audit_feedback_model,
    audit_learner,
)
from oltr.conformance import duelers as dc
from oltr.conformance import environments as ec
from oltr.conformance import feedback_models as fc
from oltr.conformance import learners as lc
from oltr.envs import FixedItemsEnv
from oltr.errors import InputError
from oltr.feedback import (
    Feedback,
    FeedbackRequirement,
    FullFeedback,
    FullFeedbackModel,
    TopKFeedback,
)
from oltr.learners import DuelingBanditGradientDescent, Learner
from oltr.types import Context, RunGenerators

Check = Callable[[Subject], None]

# ---------------------------------------------------------------------------
# learners


class Sound(Learner[Feedback]):
    """A uniformly random ranker to break in small ways."""

    def __init__(self, *, eta: float = 1.0, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self.eta = eta

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {"eta": 2}

    def rank(self, context: Context) -> NDArray[np.intp]:
        return self.rngs.permutations(context.n_items)

    def update(self, context: Context, orders: NDArray[np.intp], feedback: Feedback) -> None:
        pass


class SharedStream(Sound):
    """Draws every run from one shared generator, so a run depends on its batch."""

    def rank(self, context: Context) -> NDArray[np.intp]:
        shared = self.rngs[0]
        return np.stack([shared.permutation(context.n_items) for _ in range(self.n_runs)])


class Mutator(Sound):
    """Sorts the shown orders in place during update."""

    def update(self, context: Context, orders: NDArray[np.intp], feedback: Feedback) -> None:
        orders.sort(axis=-1)


class Converter(Sound):
    """Stores a converted hyperparameter."""

    def __init__(self, *, eta: float = 1.0, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(eta=eta, n_runs=n_runs, rng=rng)
        self.eta = float(eta)


class Unseeded(Sound):
    """Draws fresh entropy instead of using its generators."""

    def rank(self, context: Context) -> NDArray[np.intp]:
        return RunGenerators.from_rng(None, self.n_runs).permutations(context.n_items)


class GlobalRandom(Sound):
    """Draws from numpy's global random state."""

    def rank(self, context: Context) -> NDArray[np.intp]:
        rows = [np.random.permutation(context.n_items) for _ in range(self.n_runs)]  # noqa: NPY002
        return np.stack(rows)


class Duplicates(Sound):
    """Shows item 0 twice."""

    def rank(self, context: Context) -> NDArray[np.intp]:
        orders = self.rngs.permutations(context.n_items)
        orders[:, -1] = orders[:, 0]
        return orders


class OneRow(Sound):
    """Returns one order for the whole batch: shape (m,) instead of (B, m)."""

    def rank(self, context: Context) -> NDArray[np.intp]:
        return self.rngs[0].permutation(context.n_items)


class FloatOrders(Sound):
    """Returns orders as floats."""

    def rank(self, context: Context) -> NDArray[np.intp]:
        return self.rngs.permutations(context.n_items).astype(np.float64)  # type: ignore[return-value]


class Peeker(Sound):
    """Declares top-1 labels, then reads the full relevance."""

    requires = FeedbackRequirement("topk", k=1)

    def update(self, context: Context, orders: NDArray[np.intp], feedback: Feedback) -> None:
        self.seen = feedback.relevance  # type: ignore[attr-defined]


class SecondLabel(Sound):
    """Declares top-1 labels, then reads the second one."""

    requires = FeedbackRequirement("topk", k=1)

    def update(self, context: Context, orders: NDArray[np.intp], feedback: Feedback) -> None:
        assert isinstance(feedback, TopKFeedback)
        self.seen = feedback.labels[:, 1]


class HorizonLiar(Sound):
    """Says its schedule needs the horizon, but takes none."""

    horizon_dependent: ClassVar[bool] = True


class MutableDefault(Sound):
    """Has a list as a default."""

    def __init__(
        self,
        *,
        eta: float = 1.0,
        ladder: Any = [1, 2],  # noqa: B006
        n_runs: int = 1,
        rng: Any = None,
    ) -> None:
        super().__init__(eta=eta, n_runs=n_runs, rng=rng)
        self.ladder = ladder


class Undocumented(Sound):
    pass


class Unpicklable(Sound):
    """Holds a lambda."""

    def __init__(self, *, eta: float = 1.0, n_runs: int = 1, rng: Any = None) -> None:
        super().__init__(eta=eta, n_runs=n_runs, rng=rng)
        self._score = lambda x: x


class TrainedClone(Sound):
    """Its clone is a copy of the trained learner, not a fresh one."""

    def clone(self, **kwargs: Any) -> Learner[Feedback]:
        return copy.deepcopy(self)


LEARNER_CASES: list[tuple[type, Check, str]] = [
    (SharedStream, lc.check_batch_equals_single_runs, r"differs between B=3 and B=1"),
    (Mutator, lc.check_inputs_not_mutated, r"must not change the shown orders"),
    (Converter, lc.check_params_stored_unmodified, r"'eta' was not stored unmodified"),
    (Unseeded, lc.check_seeding_is_idempotent, r"same seeds must give the same rankings"),
    (GlobalRandom, lc.check_seeding_is_idempotent, r"never from np.random"),
    (Duplicates, lc.check_rankings_are_permutations, r"must be a permutation"),
    (OneRow, lc.check_rankings_are_permutations, r"shape \(\d+,\), expected \(3, \d+\)"),
    (FloatOrders, lc.check_rankings_are_permutations, r"dtype float64"),
    (Peeker, lc.check_sees_only_what_it_declared, r"AttributeError.*top-1 relevance"),
    (SecondLabel, lc.check_sees_only_what_it_declared, r"IndexError.*top-1 relevance"),
    (HorizonLiar, lc.check_horizon_contract, r"horizon_dependent = True"),
    (MutableDefault, lc.check_defaults_immutable, r"default of 'ladder' is mutable"),
    (Undocumented, lc.check_docstring, r"Undocumented has no docstring"),
    (Unpicklable, lc.check_pickle, r"raised .*(Pickl|lambda)"),
    (TrainedClone, lc.check_repr_and_clone, r"untrained copy"),
]


@pytest.mark.parametrize(
    ("cls", "check", "message"), LEARNER_CASES, ids=[c[0].__name__ for c in LEARNER_CASES]
)
def test_a_broken_learner_fails_the_check(cls: type, check: Check, message: str) -> None:
    assert audit_learner(Sound, checks=[check]).passed  # the sound class passes it
    (result,) = audit_learner(cls, checks=[check]).results
    assert (result.check, result.passed) == (check.__name__, False)
    assert re.search(message, result.message), result.message


# ---------------------------------------------------------------------------
# environments, feedback models, duelers


class LazySeed(FixedItemsEnv):
    """Ignores the seed given to reset and draws fresh entropy."""

    def _reset(self, rng: np.random.Generator) -> None:
        super()._reset(np.random.default_rng())


class LateClock(FixedItemsEnv):
    """Stamps each context with the next round's number."""

    def _next(self, t: int) -> tuple[Context, NDArray[Any]]:
        context, relevance = super()._next(t)
        return Context(t=t + 1, n_items=context.n_items), relevance


class NoisyFull(FullFeedbackModel):
    """Adds noise drawn from fresh entropy instead of the generators it is given."""

    def observe(self, orders: Any, relevance: Any, *, rngs: Any = None) -> FullFeedback:
        fb = super().observe(orders, relevance, rngs=rngs)
        noise = np.random.default_rng().integers(0, 2, fb.relevance.shape)
        return FullFeedback(fb.orders, fb.relevance + noise)


class WrongKind(FullFeedbackModel):
    """Declares full relevance but reveals top-1 labels."""

    def observe(self, orders: Any, relevance: Any, *, rngs: Any = None) -> Any:
        fb = super().observe(orders, relevance, rngs=rngs)
        return fb.restrict(FeedbackRequirement("topk", k=1))


class JitteryDueler(DuelingBanditGradientDescent):
    """Jitters its proposals with fresh entropy."""

    def propose(self) -> Any:
        points = super().propose()
        return points + np.random.default_rng().normal(0.0, 1e-3, points.shape)


class FlatDueler(DuelingBanditGradientDescent):
    """Proposes only w_t, shape (B, d), not the pair."""

    def propose(self) -> Any:
        return super().propose()[:, 0]


OTHER_CASES: list[tuple[Callable[..., Any], type, type, Check, str]] = [
    (audit_environment, FixedItemsEnv, LazySeed, ec.check_seeding_is_idempotent, r"same seed"),
    (audit_environment, FixedItemsEnv, LateClock, ec.check_contexts_are_valid, r"says t=2"),
    (audit_feedback_model, FullFeedbackModel, NoisyFull, fc.check_seeding_is_idempotent, "rngs"),
    (
        audit_feedback_model,
        FullFeedbackModel,
        WrongKind,
        fc.check_declares_what_it_returns,
        r"returned TopKFeedback for kind 'full'",
    ),
    (
        audit_dueler,
        DuelingBanditGradientDescent,
        JitteryDueler,
        dc.check_seeding_is_idempotent,
        r"same seeds must give the same proposals",
    ),
    (
        audit_dueler,
        DuelingBanditGradientDescent,
        FlatDueler,
        dc.check_satisfies_the_protocol,
        r"shape \(3, 5\), expected \(3, 2, d\)",
    ),
]


@pytest.mark.parametrize(
    ("run", "sound", "broken", "check", "message"),
    OTHER_CASES,
    ids=[c[2].__name__ for c in OTHER_CASES],
)
def test_a_broken_class_fails_the_check(
    run: Callable[..., Any], sound: type, broken: type, check: Check, message: str
) -> None:
    assert run(sound, checks=[check]).passed
    (result,) = run(broken, checks=[check]).results
    assert (result.check, result.passed) == (check.__name__, False)
    assert re.search(message, result.message), result.message


# ---------------------------------------------------------------------------
# reports, settings and targets


def test_the_report_lists_every_check_and_assert_conforms_names_the_failures() -> None:
    report = audit(Duplicates)
    assert [r.check for r in report] == [c.__name__ for c in lc.LEARNER_CHECKS]
    failed = {r.check for r in report.failures}
    # every check that runs the learner sees the duplicate; the constructor checks do not
    assert "check_rankings_are_permutations" in failed
    assert "check_docstring" not in failed and "check_params_stored_unmodified" not in failed
    with pytest.raises(ConformanceError) as info:
        assert_conforms(Duplicates)
    text = str(info.value)
    assert f"fails {len(failed)} of {len(report)} checks" in text
    assert "check_rankings_are_permutations: every list must be a permutation" in text
    assert assert_conforms(Sound).passed


def test_a_class_of_two_families_gets_both_families_checks() -> None:
    report = audit("dbgd")
    assert {r.family for r in report} == {"learner", "dueler"}
    assert len(report) == len(lc.LEARNER_CHECKS) + len(dc.DUELER_CHECKS)


def test_settings_replace_the_test_params() -> None:
    # Converter stores float(eta): a float setting hides the fault, an int one shows it.
    check = [lc.check_params_stored_unmodified]
    assert audit_learner(Converter, settings=[{"eta": 2.5}], checks=check).passed
    assert not audit_learner(Converter, settings=[{"eta": 2}], checks=check).passed
    partial = functools.partial(Converter, eta=2)
    assert not audit_learner(partial, checks=check).passed


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no-such-learner", r"not a registered learner, environment, feedback model or dueler"),
        (int, r"int is not a Learner, Environment or FeedbackModel subclass"),
        (3, r"not a Learner"),
    ],
)
def test_bad_targets_are_named(target: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        audit(target)


def test_an_abstract_class_is_named_with_what_it_lacks() -> None:
    class Half(Learner[Feedback]):
        """Ranks, but never learns."""

        def rank(self, context: Context) -> NDArray[np.intp]:
            return self.rngs.permutations(context.n_items)

    with pytest.raises(InputError, match=r"Half is abstract: implement update"):
        audit(Half)
    with pytest.raises(InputError, match=r"Half is abstract: implement update"):
        audit_learner(Half)


def test_a_family_refuses_a_class_of_another() -> None:
    with pytest.raises(InputError, match=r"FixedItemsEnv is not a Learner subclass"):
        audit_learner(FixedItemsEnv)
    with pytest.raises(InputError, match=r"unknown learner 'fixed-items-v1'"):
        audit_learner("fixed-items-v1")
