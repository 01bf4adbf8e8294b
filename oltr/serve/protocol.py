"""One ranker's definition, and the online protocol on requests instead of a simulator.

What :func:`oltr.experiments.runner.run_set` does with an environment, the
service does with requests, through the functions here:

* :func:`build_ranker` turns a definition (the vocabulary of an experiment's
  ``[[learners]]`` and ``[feedback]`` tables) into a learner for one run that
  draws from the stream the runner gives repetition 0,
  ``child_rng(seed, "learner", name, 0)``, so a ranker and the simulator's
  repetition 0 are the same learner;
* :func:`make_context` checks a rank request's features and makes the context;
* :func:`shown_list` interleaves a duel learner's two lists (team-draft etc.,
  :mod:`oltr.envs.interleaving`) from ``child_rng(seed, "interleave", t)``,
  a stream of its own, so it needs no state;
* :func:`make_feedback_object` turns a feedback request into the feedback the
  model reveals, cut down to what the learner declared (``restrict``);
* :func:`exploration_propensities` logs what the learner's exploration makes
  known (RTop-kF: the probability of each shown prefix).
* :func:`apply_init` starts a learner from the weights a definition's ``init``
  holds (a model fitted from click logs, :mod:`oltr.serve.warmstart`).

Every check raises :class:`RequestError` naming the problem; nothing here
changes a learner.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from oltr.build import check_compatible, make_feedback, make_learner
from oltr.clicks.methods import interleave
from oltr.data.normalization import (
    Normalize,
    check_normalize,
    outside_unit_interval,
    scale_list,
)
from oltr.feedback import (
    ChoiceFeedback,
    ClickFeedback,
    DuelFeedback,
    Feedback,
    FeedbackModel,
    FullFeedback,
    NoFeedback,
    TopKFeedback,
)
from oltr.learners.base import Learner
from oltr.learners.linear import batch_scores, own_order
from oltr.random import child_rng
from oltr.types import Context, RunGenerators

__all__ = [
    "RankerDefinition",
    "RequestError",
    "apply_init",
    "build_ranker",
    "exploration_propensities",
    "feedback_depth",
    "make_context",
    "make_feedback_object",
    "shown_list",
    "uniform_prefix",
]

#: Interleaving of duel learners when the feedback model does not name one.
DEFAULT_INTERLEAVING = {"method": "team_draft", "k": 10}


class RequestError(ValueError):
    """A request the service refuses, with the HTTP status it answers."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class RankerDefinition:
    """What a ``PUT /rankers/{name}`` body defines (see :mod:`oltr.serve.bodies`)."""

    learner: str
    params: dict[str, Any] = field(default_factory=dict)
    feedback: str = "top-k"
    feedback_params: dict[str, Any] = field(default_factory=dict)
    n_features: int | None = None
    n_items: int | None = None
    seed: int = 0
    horizon: int | None = None
    #: The model the learner starts from (:func:`oltr.serve.warmstart.read_init`): its
    #: path and hash, and its weights, so the store alone rebuilds the ranker.
    init: dict[str, Any] | None = None
    #: Min–max scale each request's features per list before anything sees them (True),
    #: never (False), or when a value lies outside [0, 1] ("auto", what ``PUT`` defaults
    #: to). False here: a definition stored before the field existed keeps its behaviour.
    normalize: Normalize = False

    def to_dict(self) -> dict[str, Any]:
        """The definition as JSON-able data (what the store keeps and GET returns)."""
        return asdict(self)


def _learner(defn: RankerDefinition, rngs: Any) -> Learner[Any]:
    return make_learner(defn.learner, defn.params, n_runs=1, rngs=rngs, horizon=defn.horizon)


def _dry_context(defn: RankerDefinition) -> Context:
    if defn.n_features is not None:
        return Context(t=1, n_items=2, features=np.zeros((2, defn.n_features)))
    return Context(t=1, n_items=int(defn.n_items or 1))


def build_ranker(defn: RankerDefinition) -> tuple[Learner[Any], FeedbackModel]:
    """The learner and feedback model of ``defn``, checked to work together.

    Raises :class:`RequestError` (422) naming what is wrong: an unknown name or
    parameter, a learner that needs more than the feedback model reveals, a
    context of the wrong kind, or a schedule that needs a horizon it was not given.
    """
    try:
        check_normalize(defn.normalize)
        model = make_feedback(defn.feedback, defn.feedback_params)
        learner = _learner(
            defn, RunGenerators.from_keys(defn.seed, "learner", defn.learner, reps=[0])
        )
        check_compatible(learner, model)
    except (ValueError, TypeError) as exc:
        raise RequestError(str(exc)) from exc
    if (defn.n_features is None) == (defn.n_items is None):
        raise RequestError("give exactly one of n_features (feature lists) and n_items")
    kind = learner.context_kind
    if kind == "features" and defn.n_features is None:
        raise RequestError(f"learner {defn.learner!r} ranks feature lists: give n_features")
    if kind == "items" and defn.n_items is None:
        raise RequestError(f"learner {defn.learner!r} ranks a fixed item set: give n_items")
    # A live system has no horizon: a learner whose schedule needs one fails its
    # first round; find out now, on a throw-away copy, and say so.
    try:
        _learner(defn, 0).rank(_dry_context(defn))
    except (ValueError, TypeError) as exc:
        hint = "" if defn.horizon is not None else " (a live ranker has no horizon T: set horizon)"
        raise RequestError(f"learner {defn.learner!r} cannot rank: {exc}{hint}") from exc
    if defn.init is not None:
        apply_init(learner, defn.learner, defn.init)
    return learner, model


def apply_init(learner: Learner[Any], name: str, init: dict[str, Any]) -> None:
    """Start ``learner`` (registry name ``name``) from the weights of a definition's ``init``.

    Raises :class:`RequestError` (422) for a learner without linear weights (a
    neural scorer, a learner of a fixed item set, a baseline).
    """
    hook = getattr(learner, "warm_start", None)
    if hook is None:
        if learner.context_kind == "features":
            raise RequestError(
                f"learner {name!r} is not a linear scorer: a linear model cannot initialise it"
            )
        raise RequestError(f"learner {name!r} has no feature weights for init to set")
    try:
        hook(init["weights"])
    except (ValueError, TypeError, RuntimeError) as exc:
        raise RequestError(f"init: learner {name!r} cannot start from the model: {exc}") from exc


def _finite_matrix(features: Any, n_features: int) -> np.ndarray[Any, Any]:
    if isinstance(features, np.ndarray):  # decoded as one matrix already (hotpath.py)
        x = features
    elif not isinstance(features, list) or len(features) == 0:
        raise RequestError("features must be a non-empty list of rows, one per candidate")
    else:
        try:  # the common case in one numpy call; the row by row checks name what is wrong
            x = np.array(features, dtype=np.float64)
        except (ValueError, TypeError):
            x = None
    if x is not None and x.ndim == 2 and x.shape[0] == 0:
        raise RequestError("features must be a non-empty list of rows, one per candidate")
    if x is None or x.ndim != 2 or x.shape[1] != n_features:
        if isinstance(x, np.ndarray) and x.ndim == 2 and isinstance(features, np.ndarray):
            raise RequestError(f"features[0] must have {n_features} numbers, got {x.shape[1]}")
        for i, row in enumerate(features):
            if not isinstance(row, list) or len(row) != n_features:
                got = len(row) if isinstance(row, list) else type(row).__name__
                raise RequestError(f"features[{i}] must have {n_features} numbers, got {got}")
        raise RequestError("features must be rows of numbers")
    if not np.isfinite(x).all():
        i, j = (int(v) for v in np.argwhere(~np.isfinite(x))[0])
        raise RequestError(f"features[{i}][{j}] is {x[i, j]}; features must be finite")
    x.flags.writeable = False
    return x


def make_context(defn: RankerDefinition, t: int, features: Any) -> Context:
    """The context of round ``t`` from a rank request's ``features`` (None for fixed items)."""
    if defn.n_features is None:
        if features is not None:
            raise RequestError(f"ranker has a fixed set of {defn.n_items} items: send no features")
        return Context(t=t, n_items=int(defn.n_items or 0))
    if features is None:
        raise RequestError("features are required: one row of numbers per candidate")
    x = _finite_matrix(features, defn.n_features)
    if defn.normalize is True or (defn.normalize == "auto" and outside_unit_interval(x)):
        x = scale_list(x)  # what the learner, a candidate beside it and the log all see
        x.flags.writeable = False
    return Context(t=t, n_items=int(x.shape[0]), features=x)


def _interleaving_options(defn: RankerDefinition) -> dict[str, Any]:
    opts = dict(DEFAULT_INTERLEAVING)
    if defn.feedback == "interleaved-clicks":
        opts.update({k: defn.feedback_params[k] for k in opts if k in defn.feedback_params})
    return opts


def shown_list(defn: RankerDefinition, t: int, orders: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    """The list to show and what crediting clicks needs (None for single-list learners)."""
    if orders.ndim == 2:
        return orders[0], None
    opts = _interleaving_options(defn)
    il = interleave(
        opts["method"],
        orders[0, 0],
        orders[0, 1],
        k=int(opts["k"]),
        rng=child_rng(defn.seed, "interleave", t),
    )
    return il.shown, il


def _labels(body: dict[str, Any], low: int, high: int) -> np.ndarray[Any, Any]:
    labels = body.get("labels")
    if not isinstance(labels, list):
        raise RequestError("this ranker takes feedback as labels: the grades of the top shown")
    if not low <= len(labels) <= high:
        want = f"{low}" if low == high else f"{low} to {high}"
        raise RequestError(f"labels must hold {want} grades (top shown first), got {len(labels)}")
    arr = np.asarray(labels, dtype=np.float64)
    if not np.isfinite(arr).all() or (arr < 0).any():
        raise RequestError("labels must be finite grades >= 0")
    return arr


def _positions(values: Any, name: str, n: int) -> list[int]:
    if not isinstance(values, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in values
    ):
        raise RequestError(f"{name} must be a list of integer positions")
    if any(not 0 <= v < n for v in values) or len(set(values)) != len(values):
        raise RequestError(f"{name} must be distinct integers in 0..{n - 1}, got {values}")
    return list(values)


def make_feedback_object(
    learner: Learner[Any],
    model: FeedbackModel,
    orders: np.ndarray[Any, Any],
    shown: np.ndarray[Any, Any],
    interleaving: Any,
    body: dict[str, Any],
) -> tuple[Feedback, dict[str, Any]]:
    """The feedback a request reveals, cut down to ``learner.requires``, and the credit.

    The request must carry what the feedback model reveals: ``labels`` (grades
    of the top shown, ``top-k`` up to k of them, at least as many as the learner
    reads; ``full``: one per shown position), ``chosen`` (item indices,
    ``choice``), ``clicks`` (positions of the shown list, duels; positions of
    the page, the first ``min(k, m)`` of the order, ``clicks``), or nothing.
    """
    provides, requires = model.provides, learner.requires  # each built on every access
    kind, m = provides.kind, orders.shape[-1]
    credit: dict[str, Any] = {}
    if kind == "topk":
        need = requires.k if requires.kind == "topk" else 1
        high = min(int(provides.k or 1), m)
        labels = _labels(body, min(int(need or 1), high), high)
        fb: Feedback = TopKFeedback(orders, labels[None])
    elif kind == "full":
        labels = _labels(body, m, m)
        rel = np.empty(m)
        rel[orders[0]] = labels
        fb = FullFeedback(orders, rel[None])
    elif kind == "choice":
        chosen = np.zeros((1, m), dtype=bool)
        chosen[0, _positions(body.get("chosen"), "chosen", m)] = True
        fb = ChoiceFeedback(orders, chosen)
    elif kind == "duel":
        clicks = np.zeros(len(shown), dtype=bool)
        clicks[_positions(body.get("clicks"), "clicks", len(shown))] = True
        outcome = int(interleaving.outcome(clicks))
        credit = {"outcome": outcome}
        fb = DuelFeedback(orders, np.array([outcome], dtype=np.int8))
    elif kind == "clicks":  # positions of the page: the first min(k, m) of the order
        page = np.zeros((1, min(int(getattr(model, "k", m)), m)), dtype=bool)
        page[0, _positions(body.get("clicks"), "clicks", page.shape[1])] = True
        fb = ClickFeedback(orders, page)
    elif kind == "none":
        fb = NoFeedback(orders)
    else:
        raise RequestError(f"feedback model {type(model).__name__} is not served", 400)
    return fb.restrict(requires), credit


def exploration_propensities(
    learner: Learner[Any], context: Context, shown: np.ndarray[Any, Any], depth: int
) -> dict[str, Any]:
    """What the exploration of an ε-greedy linear ranker makes known about ``shown``.

    For a learner that shows its own order (descending ``X w``) with probability
    1 − γ and a uniform permutation with probability γ (RTop-kF, CT16
    Algorithm 1 steps 5–6), the probability that the first ``j`` shown items are
    ``shown[:j]`` is

    .. math:: p_j = (1 − γ)\\,[σ_{1:j} = \\text{shown}_{1:j}] + γ\\,(m − j)!/m!,

    logged for ``j = 1..depth`` as ``prefix`` (``prefix[0]`` is the probability
    of the top item). Other learners log ``{}``. ``rank`` does not move the
    weights, so they are read after it.
    """
    gamma_at = getattr(learner, "gamma_at", None)
    if context.features is None or gamma_at is None or not hasattr(type(learner), "weights_"):
        return {}
    gamma = float(gamma_at(context.t))  # this round's exploration rate (anytime schedules)
    played = getattr(learner, "own_orders_played", lambda _: None)(context.t)
    if played is not None:  # the order rank() just computed
        own = played[0]
    else:
        try:
            weights = learner.weights_  # type: ignore[attr-defined]
        except (AttributeError, RuntimeError):  # before the first round the weights are zero
            weights = np.zeros((1, context.n_features))
        own = own_order(batch_scores(np.asarray(weights), context.features))[0]
    m = context.n_items
    prefix = []
    for j in range(1, min(depth, m) + 1):
        same = bool((own[:j] == shown[:j]).all())
        prefix.append((1.0 - gamma) * same + gamma * uniform_prefix(m, j))
    return {"gamma": float(gamma), "prefix": prefix}


def feedback_depth(model: FeedbackModel, m: int) -> int:
    """How many shown positions the feedback model reveals (for propensities)."""
    provides = model.provides
    k = provides.k
    return m if provides.kind == "full" or k is None else min(int(k), m)


def uniform_prefix(m: int, j: int) -> float:
    """(m − j)!/m!: the probability of a given prefix of length j under a uniform order."""
    return 1.0 / math.perm(m, j)
