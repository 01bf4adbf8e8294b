"""A ranker's compiled kernels are made ready where it is built, never in its first live request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oltr.build import make_learner
from oltr.learners.pdgd import PDGD
from oltr.learners.rtopk import RTopKF
from oltr.serve.protocol import RankerDefinition, build_ranker
from oltr.serve.rankers import Rankers
from oltr.serve.state import dumps_state
from oltr.serve.store import Store
from oltr.serve.warmup import dry_round
from oltr.types import RunGenerators

#: A learner of every kind the service serves, with the feedback it learns from.
SERVED = [
    ("rtopk", "top-k", {"n_features": 4}),
    ("rtopk", "top-k", {"n_features": 4, "params": {"surrogate": "ranksvm"}, "k": 2}),
    ("listnet", "full", {"n_features": 4}),
    ("pdgd", "clicks", {"n_features": 4}),
    ("pdgd-neural", "clicks", {"n_features": 4}),
    ("p-mgd", "clicks", {"n_features": 4}),
    ("p-dbgd", "clicks", {"n_features": 4}),
    ("dbgd", "interleaved-clicks", {"n_features": 4}),
    ("rtop1f", "top-k", {"n_items": 6}),
    ("ftpl", "full", {"n_items": 6}),
    ("onlinerank", "choice", {"n_items": 6}),
]


def _definition(learner: str, feedback: str, spec: dict[str, Any]) -> RankerDefinition:
    k = spec.get("k")
    return RankerDefinition(
        learner=learner,
        params=dict(spec.get("params", {})),
        feedback=feedback,
        feedback_params={} if k is None else {"k": k},
        n_features=spec.get("n_features"),
        n_items=spec.get("n_items"),
        seed=3,
        horizon=1000,
        init=None,
    )


@pytest.mark.parametrize(("learner", "feedback", "spec"), SERVED, ids=lambda v: str(v))
def test_the_dry_round_ranks_and_learns_for_every_kind_of_served_learner(
    learner: str, feedback: str, spec: dict[str, Any]
) -> None:
    defn = _definition(learner, feedback, spec)
    _, model = build_ranker(defn)
    dry_round(defn, model)  # raises what would stop it: the warm-up itself says nothing


@pytest.mark.parametrize(
    ("cls", "learner", "feedback"), [(RTopKF, "rtopk", "top-k"), (PDGD, "pdgd", "clicks")]
)
def test_creating_a_ranker_runs_one_round_on_a_throw_away_learner_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cls: Any, learner: str, feedback: str
) -> None:
    seen: list[int] = []
    update = cls.update

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(id(self))
        return update(self, *args, **kwargs)

    monkeypatch.setattr(cls, "update", counted)
    defn = _definition(learner, feedback, {"n_features": 4})
    store = Store(tmp_path / "s.db")
    try:
        rankers = Rankers(store)
        assert rankers.put("r", defn)
        served = rankers.get("r").learner
    finally:
        store.close()
    assert len(seen) == 1 and seen[0] != id(served)  # one whole round, on another learner
    rngs = RunGenerators.from_keys(defn.seed, "learner", learner, reps=[0])
    fresh = make_learner(learner, {}, n_runs=1, rngs=rngs, horizon=1000)
    assert dumps_state(served, "v") == dumps_state(fresh, "v")  # as if nothing had happened
