"""Feedback kinds, feedback models, the requirement order and compatibility refusals."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from scipy import stats

from oltr.build import check_compatible, make_feedback
from oltr.feedback import (
    BanditFeedbackModel,
    ChoiceFeedback,
    ChoiceFeedbackModel,
    DuelFeedback,
    DuelFeedbackModel,
    FeedbackRequirement,
    FullFeedback,
    FullFeedbackModel,
    NoFeedback,
    TopKFeedback,
    TopKFeedbackModel,
)
from oltr.learners.base import Learner
from oltr.types import Context, RunGenerators

ALPHA = 0.001  # false-alarm rate of each statistical test (fixed seeds make them repeatable)

REL = np.array([2, 0, 1, 0])  # grades of items 0..3
ORDERS = np.array([[2, 0, 1, 3], [3, 1, 0, 2]])  # two runs


def req(kind: str, k: int | None = None) -> FeedbackRequirement:
    return FeedbackRequirement(kind, k=k)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# requirements


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kind": "gaze"}, ValueError, "feedback kind must be one of"),
        ({"kind": "topk"}, TypeError, "k must be an int >= 1 for kind='topk'"),
        ({"kind": "topk", "k": 0}, ValueError, "k must be >= 1"),
        ({"kind": "topk", "k": 1.5}, TypeError, "k must be an int"),
        ({"kind": "full", "k": 2}, ValueError, "k applies only to kind='topk'"),
    ],
)
def test_requirement_rejects_bad_input(kwargs: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        FeedbackRequirement(**kwargs)


# (required, provided, satisfied): the partial order written out by hand.
ORDER_TABLE = [
    (req("topk", 1), req("topk", 1), True),
    (req("topk", 1), req("topk", 2), True),
    (req("topk", 2), req("topk", 1), False),
    (req("topk", 5), req("full"), True),
    (req("full"), req("topk", 5), False),
    (req("full"), req("full"), True),
    (req("choice"), req("full"), True),
    (req("choice"), req("topk", 3), False),
    (req("full"), req("choice"), False),
    (req("bandit"), req("full"), False),
    (req("bandit"), req("bandit"), True),
    (req("duel"), req("duel"), True),
    (req("duel"), req("full"), False),
    (req("topk", 1), req("duel"), False),
    (req("none"), req("topk", 1), True),
    (req("none"), req("bandit"), True),
    (req("none"), req("duel"), False),  # a duel needs two lists; a plain learner shows one
]


@pytest.mark.parametrize(
    ("required", "provided", "expected"),
    ORDER_TABLE,
    ids=[f"{r.describe()}<-{p.describe()}" for r, p, _ in ORDER_TABLE],
)
def test_requirement_order(
    required: FeedbackRequirement, provided: FeedbackRequirement, expected: bool
) -> None:
    assert required.satisfied_by(provided) is expected


def test_kind_only_comparison_ignores_k() -> None:
    assert req("topk", 2).satisfied_by(req("topk", 1), check_k=False)
    assert not req("full").satisfied_by(req("topk", 1), check_k=False)


# ---------------------------------------------------------------------------
# the models, by hand


def test_full_reveals_every_grade_as_a_fresh_read_only_copy() -> None:
    fb = FullFeedbackModel().observe(ORDERS, REL)
    assert isinstance(fb, FullFeedback)
    assert fb.relevance.tolist() == [[2, 0, 1, 0], [2, 0, 1, 0]]
    assert not np.shares_memory(fb.relevance, REL)
    assert not np.shares_memory(fb.orders, ORDERS)
    with pytest.raises(ValueError, match="read-only"):
        fb.relevance[0, 0] = 5
    with pytest.raises(ValueError, match="read-only"):
        fb.orders[0, 0] = 1


def test_top1_reveals_the_grade_of_the_top_item_only() -> None:
    fb = TopKFeedbackModel(k=1).observe(ORDERS, REL)
    assert isinstance(fb, TopKFeedback)
    # run 0 shows item 2 (grade 1) first; run 1 shows item 3 (grade 0) first
    assert fb.labels.tolist() == [[1], [0]]
    assert fb.k == 1


def test_top2_reveals_two_grades_in_position_order() -> None:
    fb = TopKFeedbackModel(k=2).observe(ORDERS, REL)
    assert fb.labels.tolist() == [[1, 2], [0, 0]]


def test_topk_on_a_short_list_reveals_the_whole_list() -> None:
    fb = TopKFeedbackModel(k=3).observe(np.array([[1, 0]]), np.array([4, 2]))
    assert fb.labels.tolist() == [[2, 4]]


def test_choice_reveals_items_at_or_above_the_threshold() -> None:
    fb = ChoiceFeedbackModel(threshold=2).observe(ORDERS, REL)
    assert isinstance(fb, ChoiceFeedback)
    assert fb.chosen.tolist() == [[True, False, False, False]] * 2
    fb1 = ChoiceFeedbackModel().observe(ORDERS, REL)
    assert fb1.chosen.tolist() == [[True, False, True, False]] * 2


def test_bandit_reveals_the_loss_and_negates_gains() -> None:
    fb = BanditFeedbackModel(measure="sumloss").observe(ORDERS, REL)
    # run 0: item 2 (grade 1) at position 1, item 0 (grade 2) at position 2 -> 1*1 + 2*2
    # run 1: item 0 at position 3, item 2 at position 4 -> 2*3 + 1*4
    assert fb.loss.tolist() == [1 * 1 + 2 * 2, 2 * 3 + 1 * 4]
    gain = BanditFeedbackModel(measure="precision@1").observe(ORDERS, REL)
    assert gain.loss.tolist() == [-1.0, -0.0]


def test_duel_sign_link_by_hand_with_ties() -> None:
    orders = np.array(
        [
            [[0, 1, 2, 3], [1, 0, 2, 3]],  # first shows grade 2 on top: first wins
            [[1, 0, 2, 3], [0, 1, 2, 3]],  # second wins
            [[0, 1, 2, 3], [0, 3, 2, 1]],  # items 1 and 3 both grade 0: same DCG, tie
        ]
    )
    fb = DuelFeedbackModel(measure="dcg", link="sign").observe(orders, REL)
    assert isinstance(fb, DuelFeedback)
    assert fb.outcome.tolist() == [-1, 1, 0]
    assert fb.second_won.tolist() == [False, True, False]
    assert fb.tie.tolist() == [False, False, True]


def test_duel_loss_measure_prefers_the_smaller_loss() -> None:
    orders = np.array([[[0, 1, 2, 3], [1, 0, 2, 3]]])
    fb = DuelFeedbackModel(measure="sumloss", link="sign").observe(orders, REL)
    assert fb.outcome.tolist() == [-1]  # the first list has the smaller SumLoss


def test_duel_logistic_win_rate_matches_the_link() -> None:
    """P(second wins) = 1 / (1 + exp(-scale * (v2 - v1))), binomial test at ALPHA."""
    rel = np.array([1, 0])
    orders = np.array([[[1, 0], [0, 1]]])  # second list has the relevant item on top
    v1, v2 = 1 / math.log2(3), 1.0  # DCG of the two lists
    scale = 2.0
    p = 1 / (1 + math.exp(-scale * (v2 - v1)))
    model = DuelFeedbackModel(measure="dcg", scale=scale)
    gen = RunGenerators.from_rng(2024, n_runs=1)
    n = 4000
    wins = sum(int(model.observe(orders, rel, rngs=gen).outcome[0] == 1) for _ in range(n))
    assert stats.binomtest(wins, n, p).pvalue > ALPHA


def test_duel_is_batch_invariant_and_seeded() -> None:
    rel = np.array([2, 1, 0])
    rng = np.random.default_rng(3)
    orders = np.stack([np.stack([rng.permutation(3), rng.permutation(3)]) for _ in range(6)])
    model = DuelFeedbackModel(measure="dcg", scale=1.0)
    batch = model.observe(orders, rel, rngs=RunGenerators.from_keys(9, "feedback", reps=range(6)))
    for b in range(6):
        alone = model.observe(
            orders[b : b + 1], rel, rngs=RunGenerators.from_keys(9, "feedback", reps=[b])
        )
        assert alone.outcome[0] == batch.outcome[b]


def test_stochastic_model_needs_generators() -> None:
    with pytest.raises(ValueError, match="pass rngs"):
        DuelFeedbackModel().observe(np.array([[[0, 1], [1, 0]]]), np.array([1, 0]))


@pytest.mark.parametrize(
    ("model", "orders", "error", "match"),
    [
        (TopKFeedbackModel(), np.array([0, 1, 2, 3]), ValueError, r"shape \(B, m\)"),
        (TopKFeedbackModel(), np.array([[0, 1, 2]]), ValueError, "m = 4"),
        (TopKFeedbackModel(), np.array([[0.0, 1.0, 2.0, 3.0]]), TypeError, "integer"),
        (DuelFeedbackModel(), ORDERS, ValueError, r"shape \(B, 2, m\)"),
    ],
)
def test_models_reject_malformed_orders(model: Any, orders: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        model.observe(orders, REL, rngs=RunGenerators.from_rng(0, len(orders)))


@pytest.mark.parametrize(
    ("name", "params", "error", "match"),
    [
        ("top-k", {"k": 0}, ValueError, "k must be >= 1"),
        ("top-k", {"k": True}, TypeError, "k must be an int"),
        ("top-k", {"kk": 1}, TypeError, "no parameter 'kk'; valid parameters: k"),
        ("choice", {"threshold": 0}, ValueError, "threshold must be finite and > 0"),
        ("bandit", {"measure": "ndcg@x"}, ValueError, "cannot parse measure"),
        ("duel", {"link": "probit"}, ValueError, "link must be 'logistic' or 'sign'"),
        ("duel", {"scale": -1.0}, ValueError, "scale must be finite and > 0"),
        ("gaze", {}, ValueError, "unknown feedback model 'gaze'; valid: bandit, choice"),
    ],
)
def test_bad_model_parameters_are_named(
    name: str, params: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        make_feedback(name, params)


# ---------------------------------------------------------------------------
# restriction: a learner receives exactly what it declared


def test_full_restricted_to_top2_by_hand() -> None:
    fb = FullFeedbackModel().observe(ORDERS, REL).restrict(req("topk", 2))
    assert type(fb) is TopKFeedback
    assert fb.labels.tolist() == [[1, 2], [0, 0]]


def test_top2_restricted_to_top1() -> None:
    fb = TopKFeedbackModel(k=2).observe(ORDERS, REL).restrict(req("topk", 1))
    assert fb.labels.tolist() == [[1], [0]]


def test_full_restricted_to_choice_marks_positive_grades() -> None:
    fb = FullFeedbackModel().observe(ORDERS, REL).restrict(req("choice"))
    assert type(fb) is ChoiceFeedback
    assert fb.chosen.tolist() == [[True, False, True, False]] * 2


def test_anything_restricted_to_none_keeps_only_the_orders() -> None:
    fb = FullFeedbackModel().observe(ORDERS, REL).restrict(req("none"))
    assert type(fb) is NoFeedback
    assert [f.name for f in dataclasses.fields(fb)] == ["orders"]
    assert fb.orders.tolist() == ORDERS.tolist()


def test_restriction_cannot_invent_information() -> None:
    fb = TopKFeedbackModel(k=1).observe(ORDERS, REL)
    with pytest.raises(ValueError, match="cannot provide full relevance"):
        fb.restrict(req("full"))


def test_feedback_objects_are_frozen() -> None:
    fb = TopKFeedbackModel(k=1).observe(ORDERS, REL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fb.labels = np.zeros((2, 1))  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        fb.orders[0, 0] = 1


# ---------------------------------------------------------------------------
# compatibility refusals at configuration time


class _Needs(Learner):
    """A learner that only declares a requirement (for refusal tests)."""

    def __init__(
        self, *, kind: str = "full", k: int | None = None, n_runs: int = 1, rng: Any = None
    ) -> None:
        super().__init__(n_runs=n_runs, rng=rng)
        self.kind, self.k = kind, k
        self.requires = FeedbackRequirement(kind, k=k)  # type: ignore[arg-type]

    @classmethod
    def _test_params(cls) -> Iterator[dict[str, Any]]:
        yield {}

    def rank(self, context: Context) -> np.ndarray:
        return np.tile(np.arange(context.n_items), (self.n_runs, 1))

    def update(self, context: Context, orders: np.ndarray, feedback: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("kind", "k", "model", "match"),
    [
        (
            "full",
            None,
            TopKFeedbackModel(k=1),
            r"requires full relevance of every item, but feedback model .* reveals "
            r"top-1 relevance; "
            r"use feedback 'full'",
        ),
        (
            "topk",
            2,
            TopKFeedbackModel(k=1),
            r"requires top-2 relevance, but .* reveals top-1 relevance; "
            r"use feedback 'top-k' with k >= 2, or 'full'",
        ),
        ("choice", None, BanditFeedbackModel(), r"requires the set of chosen items"),
        ("duel", None, FullFeedbackModel(), r"requires the outcome of a duel"),
    ],
)
def test_learner_needing_more_than_the_model_gives_is_refused(
    kind: str, k: int | None, model: Any, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        check_compatible(_Needs(kind=kind, k=k), model)


@pytest.mark.parametrize(
    ("kind", "k", "model"),
    [
        ("topk", 1, TopKFeedbackModel(k=2)),
        ("topk", 3, FullFeedbackModel()),
        ("choice", None, FullFeedbackModel()),
        ("none", None, BanditFeedbackModel()),
    ],
)
def test_learner_needing_less_is_accepted(kind: str, k: int | None, model: Any) -> None:
    check_compatible(_Needs(kind=kind, k=k), model)


def test_compatibility_by_names_and_params() -> None:
    check_compatible("random", "top-k", feedback_params={"k": 2})
    with pytest.raises(ValueError, match="requires no feedback"):
        check_compatible("random", "duel")
    with pytest.raises(ValueError, match="unknown learner 'rtop9'"):
        check_compatible("rtop9", "full")


def test_compatibility_with_the_environment_kind() -> None:
    class ItemsOnly(_Needs):
        """A fixed-item learner."""

        context_kind = "items"

    check_compatible(
        ItemsOnly(kind="none"), FullFeedbackModel(), env="fixed-items-v1", env_params={"n_items": 3}
    )
    with pytest.raises(ValueError, match="ranks contexts of kind 'items'.*'features'"):
        check_compatible(ItemsOnly(kind="none"), FullFeedbackModel(), env="letor-stream-v1")
