"""One dry round of a ranker's learner kind, so that its compiled kernels are ready.

The first rank and update of a learner load its numba kernels from the on-disk
cache or, where that cache is missing or stale (a fresh install, an edited
source, another ``NUMBA_CACHE_DIR``), compile them: seconds, and tens of
seconds on a loaded machine. On the event loop that stalls every request of
the service. So a ranker, when it is created (in a worker thread) or restored
(before the service listens), first runs one whole round on a throw-away
learner of the same definition through the same functions as a live request
(:class:`oltr.serve.rankers.Ranker`): a checked, read-only feature matrix, the
shown list and its propensities, the feedback object of its feedback model and
the update — numba compiles one version per argument type, read-only arrays
included, so the types must be those of a live round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from oltr.build import make_learner
from oltr.feedback import FeedbackModel
from oltr.serve.clickfeedback import resume_round, round_extra
from oltr.serve.propensities import shown_propensities
from oltr.serve.protocol import (
    RankerDefinition,
    feedback_depth,
    make_context,
    make_feedback_object,
    shown_list,
)
from oltr.types import RunGenerators

__all__ = ["dry_round", "warm_up"]

#: Items of the dry list (ranked and updated; more than any page a feedback model reveals).
DRY_ITEMS = 12


def _body(model: FeedbackModel, m: int) -> dict[str, Any]:
    """A feedback body of the kind ``model`` reveals, for a list of ``m`` items."""
    kind, k = model.provides.kind, model.provides.k
    if kind == "topk":
        return {"labels": [1.0] * min(int(k or 1), m)}
    if kind == "full":
        return {"labels": [float(i % 3) for i in range(m)]}
    if kind == "choice":
        return {"chosen": [0]}
    if kind in ("duel", "clicks"):
        return {"clicks": [0]}
    return {}


def warm_up(defn: RankerDefinition, model: FeedbackModel) -> None:
    """:func:`dry_round`, best effort: a round it cannot make is left to the first live
    request, which reports what is wrong."""
    try:
        dry_round(defn, model)
    except Exception:  # only a warm-up: the live round says what is wrong
        return


def dry_round(defn: RankerDefinition, model: FeedbackModel) -> None:
    """Rank and learn once on a throw-away learner of ``defn``; nothing of it is kept."""
    rngs = RunGenerators.from_keys(defn.seed, "warm-up", reps=[0])
    learner = make_learner(defn.learner, defn.params, n_runs=1, rngs=rngs, horizon=defn.horizon)
    m = DRY_ITEMS if defn.n_features is not None else int(defn.n_items or 1)
    rows = None
    if defn.n_features is not None:
        rows = np.random.default_rng(0).random((m, defn.n_features))
    context = make_context(defn, 1, rows)
    orders = np.asarray(learner.rank(context))
    shown, interleaving = shown_list(defn, 1, orders)
    depth = feedback_depth(model, m)
    shown_propensities(learner, model, context, orders, shown, interleaving, depth)
    extra = round_extra(learner)
    # As the feedback route reads them back: lists of the impression, as numpy arrays.
    orders = np.asarray(orders.tolist(), dtype=np.intp)
    shown = np.asarray(np.asarray(shown).tolist())
    body = _body(model, m)
    feedback, _ = make_feedback_object(learner, model, orders, shown, interleaving, body)
    resume_round(learner, extra)
    learner.update(context, orders, feedback)
