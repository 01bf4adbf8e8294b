"""Candidates for :mod:`oltr.serve.evaluation` named by a word: a ranker, a definition, a model.

``oltr replay STORE --ranker NAME --candidate SPEC`` takes ``SPEC`` as

- the name of another ranker of the store: its log is replayed into a fresh
  learner (:func:`oltr.serve.replay.replay_log`, bit for bit the live ranker)
  and its weights are ranked greedily;
- the path of a JSON file holding ``{"format": "oltr-model", ...}``: a model of
  ``oltr logs fit`` (:func:`oltr.learners.counterfactual.load_model`);
- the path of any other JSON object: a ranker definition as ``PUT
  /rankers/{name}`` takes it (checked by the same schema,
  :class:`oltr.serve.bodies.RankerIn`; an ``init`` path is read as the service
  reads it), judged as the list its fresh learner plays greedily.

A ranker of the store wins over a file of the same name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from oltr.errors import InputError
from oltr.learners.counterfactual import RankingModel, load_model
from oltr.serve.bodies import RankerIn
from oltr.serve.evaluation import (
    Candidate,
    LoggedImpressions,
    check_features,
    learner_candidate,
    learner_weights,
    model_candidate,
    weights_candidate,
)
from oltr.serve.protocol import RankerDefinition
from oltr.serve.replay import replay_log
from oltr.serve.store import Store
from oltr.serve.warmstart import read_init

__all__ = ["candidate_from_spec", "definition_candidate"]


def definition_candidate(raw: Any, logged: LoggedImpressions, source: str) -> Candidate:
    """A candidate from a ranker definition ``raw`` (the JSON ``PUT /rankers/{name}`` takes)."""
    try:
        body = RankerIn.model_validate(raw).model_dump()
    except ValidationError as exc:
        raise InputError(f"{source} is not a ranker definition: {exc}") from None
    if body["init"] is not None:
        body["init"] = read_init(body["init"], body["n_features"])
    return learner_candidate(RankerDefinition(**body), logged, f"definition {source}")


def candidate_from_spec(store: Store, spec: str, logged: LoggedImpressions) -> Candidate:
    """The candidate ``spec`` names (module docstring)."""
    if spec in store.rankers():
        learner, defn, _ = replay_log(store, spec)
        what = f"ranker {spec!r}"
        check_features(what, defn.n_features, logged)
        return weights_candidate(what, learner_weights(learner, what, logged.n_features), logged)
    path = Path(spec)
    if not path.is_file():
        raise InputError(
            f"--candidate {spec!r} is neither a ranker of store {store.path} "
            f"(it has {sorted(store.rankers())}) nor a file"
        )
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"--candidate {spec}: cannot read it as JSON: {exc}") from None
    if isinstance(content, dict) and content.get("format") == "oltr-model":
        model: RankingModel = load_model(path)
        return model_candidate(f"model {spec}", model, logged)
    return definition_candidate(content, logged, spec)
