"""The runner's trusted path gives the checked path's results bit for bit.

``run_set`` calls ``trusted_rank`` / ``trusted_update``, which skip checks the
runner makes redundant and reuse buffers (:mod:`oltr.learners.linear_round`).
Here the same learner runs twice, once through the checked ``rank`` / ``update``
and once through the trusted verbs, and every order, the weights, their
average and the AdaGrad sums must be equal (``np.array_equal``, not close), for
RTop-kF (every surrogate), online ListNet and PDGD, at several seeds, batch
sizes (one run, a few, the runs-minor layout) and list lengths (short lists,
the sorting network's, and long ones).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from oltr.errors import InputError
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import (
    ClickFeedbackModel,
    FullFeedback,
    FullFeedbackModel,
    TopKFeedbackModel,
)
from oltr.feedback.feedback_models import FeedbackModel
from oltr.learners.base import Learner
from oltr.learners.linear import LinearRanker
from oltr.learners.listnet import OnlineListNet
from oltr.learners.pdgd import PDGD
from oltr.learners.rtopk import RTopKF
from oltr.types import Context, RunGenerators

ROUNDS = 60
D = 7


def _stream(
    seed: int, lengths: tuple[int, ...], mixed: bool = False
) -> Iterator[tuple[Context, np.ndarray]]:
    """Contexts of varying length with grades 0..4 (features read-only, as streams give);
    ``mixed``: some rounds' features in Fortran order, as float32, or a strided view."""
    rng = np.random.default_rng(seed)
    for t in range(1, ROUNDS + 1):
        m = int(lengths[t % len(lengths)])
        x = rng.standard_normal((m, D))
        if mixed and t % 4 == 1:
            x = (np.asfortranarray(x), x.astype(np.float32), np.repeat(x, 2, axis=1)[:, ::2])[t % 3]
        x.flags.writeable = False
        yield Context(t=t, n_items=m, features=x), rng.integers(0, 5, m)


def _run(
    learner: LinearRanker[Any],
    model: FeedbackModel,
    seed: int,
    lengths: tuple[int, ...],
    trusted: bool,
    mixed: bool = False,
) -> list[np.ndarray]:
    """Every round's orders, then the weights, their average and the AdaGrad sums."""
    rank = learner.trusted_rank if trusted else learner.rank
    update = learner.trusted_update if trusted else learner.update
    rngs = RunGenerators.from_rng(seed + 100, learner.n_runs)
    seen = []
    for context, grades in _stream(seed, lengths, mixed):
        orders = rank(context)
        seen.append(np.array(orders))  # a copy: the trusted path reuses its buffers
        feedback = model.observe(orders, grades, rngs=rngs).restrict(learner.requires)
        update(context, orders, feedback)
    seen += [np.array(learner.weights_), np.array(learner.averaged_weights_), learner._sumsq]
    return seen


LEARNERS: dict[str, tuple[Callable[[int, int], LinearRanker[Any]], FeedbackModel]] = {
    "squared": (
        lambda n, s: RTopKF(surrogate="squared", horizon=ROUNDS, n_runs=n, rng=s),
        TopKFeedbackModel(k=1),
    ),
    "ranksvm-paper": (
        lambda n, s: RTopKF(
            surrogate="ranksvm", eta="paper", gamma="paper", horizon=ROUNDS, n_runs=n, rng=s
        ),
        TopKFeedbackModel(k=2),
    ),
    "kl": (
        lambda n, s: RTopKF(surrogate="kl", eta=0.05, gamma=0.3, n_runs=n, rng=s),
        TopKFeedbackModel(k=3),
    ),
    "smoothdcg": (
        lambda n, s: RTopKF(surrogate="smoothdcg", gamma=0.5, horizon=ROUNDS, n_runs=n, rng=s),
        TopKFeedbackModel(k=1),
    ),
    "squared-float32": (
        lambda n, s: RTopKF(surrogate="squared", dtype="float32", horizon=ROUNDS, n_runs=n, rng=s),
        TopKFeedbackModel(k=1),
    ),
    "listnet": (lambda n, s: OnlineListNet(horizon=ROUNDS, n_runs=n, rng=s), FullFeedbackModel()),
    "listnet-fixed": (
        lambda n, s: OnlineListNet(eta=0.3, radius=float("inf"), n_runs=n, rng=s),
        FullFeedbackModel(),
    ),
    "pdgd": (
        lambda n, s: PDGD(n_runs=n, rng=s),
        ClickFeedbackModel(click_model="informational", n_grades=5, k=10),
    ),
    "pdgd-decay": (
        lambda n, s: PDGD(eta=0.5, lr_decay=0.99, n_runs=n, rng=s),
        ClickFeedbackModel(click_model="perfect", n_grades=5, k=4),
    ),
}
LENGTHS = {"short": (5, 12, 40, 1, 23), "long": (70, 9, 130), "steady": (17,)}


@pytest.mark.parametrize("lengths", sorted(LENGTHS))
@pytest.mark.parametrize("n_runs", [1, 2, 5, 9])
@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_trusted_verbs_equal_checked_verbs_bit_for_bit(
    name: str, n_runs: int, lengths: str
) -> None:
    make, model = LEARNERS[name]
    for seed in (0, 1, 7):
        checked = _run(make(n_runs, seed), model, seed, LENGTHS[lengths], trusted=False)
        trusted = _run(make(n_runs, seed), model, seed, LENGTHS[lengths], trusted=True)
        assert len(checked) == len(trusted)
        for a, b in zip(checked, trusted, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b), (name, n_runs, seed)


@pytest.mark.parametrize("n_runs", [1, 3, 9])
@pytest.mark.parametrize("name", ["squared", "ranksvm-paper", "listnet", "squared-float32"])
def test_trusted_verbs_take_features_of_any_layout_bit_for_bit(name: str, n_runs: int) -> None:
    # Every fourth round's features are Fortran-ordered, float32 or strided: the trusted round
    # converts them as the checked one does, and reuses its buffers again in the next round.
    make, model = LEARNERS[name]
    checked = _run(make(n_runs, 3), model, 3, (11,), trusted=False, mixed=True)
    trusted = _run(make(n_runs, 3), model, 3, (11,), trusted=True, mixed=True)
    for a, b in zip(checked, trusted, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b), name


def _spec(learner: str, params: dict[str, Any], feedback: str, fb: dict[str, Any]) -> RunSetSpec:
    return RunSetSpec(
        env="letor-stream-v1",
        env_params={"n_queries": 30, "n_features": 6, "min_docs": 3, "max_docs": 70},
        feedback=feedback,
        feedback_params=fb,
        learner=learner,
        learner_params=params,
        reps=(0, 3),
        seed=5,
        horizon=150,
        measures=("ndcg@10", "precision@1"),
        checkpoints=(1, 50, 150),
    )


SPECS = {
    "rtopk": _spec("rtopk", {"surrogate": "squared"}, "top-k", {"k": 1}),
    "rtopk-ranksvm": _spec("rtopk", {"surrogate": "ranksvm"}, "top-k", {"k": 2}),
    "listnet": _spec("listnet", {}, "full", {}),
    "pdgd": _spec("pdgd", {}, "clicks", {"click_model": "navigational", "n_grades": 5}),
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_run_set_traces_equal_the_checked_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = SPECS[name]
    trusted = run_set(spec)
    for cls in (RTopKF, OnlineListNet, PDGD):  # the checked verbs, as before the trusted path
        monkeypatch.setattr(cls, "trusted_rank", Learner.trusted_rank)
        monkeypatch.setattr(cls, "trusted_update", Learner.trusted_update)
    checked = run_set(spec)
    assert list(trusted.columns) == list(checked.columns)
    for column in trusted.columns:
        assert np.array_equal(trusted[column], checked[column], equal_nan=True), column


@pytest.mark.parametrize("name", ["squared", "listnet", "pdgd"])
def test_trusted_path_still_names_a_non_finite_feature(name: str) -> None:
    make, model = LEARNERS[name]
    learner = make(1, 0)
    rngs = RunGenerators.from_rng(0, 1)
    for context, grades in _stream(0, (6,)):
        if context.t == 3:
            x = np.array(context.features)
            x[2, 4] = np.nan
            context = Context(t=3, n_items=6, features=x)
            with pytest.raises(InputError, match="round 3"):
                learner.trusted_rank(context)
            return
        orders = learner.trusted_rank(context)
        learner.trusted_update(
            context, orders, model.observe(orders, grades, rngs=rngs).restrict(learner.requires)
        )


@pytest.mark.parametrize("bad", [np.nan, -1.0, np.inf])
def test_trusted_listnet_says_what_is_wrong_with_a_grade_as_the_checked_path_does(
    bad: float,
) -> None:
    x = np.random.default_rng(3).random((5, 4))
    grades = np.array([[0.0, 2.0, bad, 1.0, 0.0]])
    messages = []
    for trusted in (False, True):
        learner = OnlineListNet(eta=0.3, rng=0)
        context = Context(t=1, n_items=5, features=x)
        orders = learner.trusted_rank(context) if trusted else learner.rank(context)
        update = learner.trusted_update if trusted else learner.update
        with pytest.raises(ValueError) as caught:
            update(context, orders, FullFeedback(orders, grades))
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "relevance" in messages[0]


@pytest.mark.parametrize("n_runs", [1, 3])
def test_trusted_listnet_takes_integer_grades_as_the_checked_path_does(n_runs: int) -> None:
    """Grades the compiled gradient does not take as they are (integers) go the checked
    way: the same weights, bit for bit."""
    rng = np.random.default_rng(4)
    rounds = [
        (Context(t=t, n_items=7, features=rng.random((7, 4))), rng.integers(0, 3, (n_runs, 7)))
        for t in range(1, 6)
    ]
    weights = []
    for trusted in (False, True):
        learner = OnlineListNet(eta=0.3, n_runs=n_runs, rng=0)
        rank = learner.trusted_rank if trusted else learner.rank
        update = learner.trusted_update if trusted else learner.update
        for context, grades in rounds:
            orders = rank(context)
            update(context, orders, FullFeedback(orders, grades))
        weights.append(np.array(learner.weights_))
    assert np.array_equal(weights[0], weights[1])
