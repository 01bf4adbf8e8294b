"""Click-learner runs through the runner on a small synthetic split (for the learner tests)."""

from __future__ import annotations

from oltr.data.letor import write_letor
from oltr.data.synthetic import synthetic_letor
from oltr.experiments.heldout import HeldoutSet
from oltr.experiments.runner import RunSetSpec, run_set


def split(seed: int) -> tuple:  # type: ignore[type-arg]
    ds = synthetic_letor(n_queries=80, n_features=8, max_grade=2, rng=seed)
    keep = [q for q in range(ds.n_queries) if ds.query(q)[1].max() > 0]
    return ds.subset(keep[:50]), HeldoutSet(ds.subset(keep[50:]), k=10)


def click_run(learner, params, train, test, folder, *, reps, horizon, checkpoints):  # type: ignore[no-untyped-def]
    """``learner`` on ``train`` under navigational clicks through the runner; held-out ``test``."""
    path = folder / "test.txt"
    if not path.exists():
        write_letor(test.dataset, path)
    spec = RunSetSpec(
        env="letor-stream-v1",
        env_params={"dataset": train},
        feedback="clicks",
        feedback_params={"click_model": "navigational", "n_grades": 3},
        learner=learner,
        learner_params=params,
        reps=tuple(reps),
        seed=1,
        horizon=horizon,
        measures=("ndcg@10",),
        checkpoints=tuple(checkpoints),
        heldouts={"test": {"path": str(path)}},
        online_discount=0.9995,
    )
    trace = run_set(spec)
    return trace.pivot(index="rep", columns="t", values="heldout:test:ndcg@10"), trace[
        trace["t"] == horizon
    ].set_index("rep")["online:ndcg@10"]
