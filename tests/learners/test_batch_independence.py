"""Every learner's trace is independent of the runs it is batched with, bit for bit.

A sweep splits repetitions into batches (``batch_size``, jobs); a run must not
see its companions through a shared random draw, a reduction over the run axis,
or arithmetic whose rounding depends on the batch shape (a BLAS kernel chosen by
the number of rows). Each learner runs 3 repetitions as one batch and as three
single runs, at its defaults, long enough (400 rounds) for a rounding difference
to change a ranking; the traces must be identical.
"""

from __future__ import annotations

import pandas as pd
import pytest

from oltr import RunSetSpec, run_set
from oltr.registry import LEARNERS

HORIZON = 400
ENVS = {
    "items": ("fixed-items-v1", {"n_items": 6, "kind": "graded", "max_grade": 2}),
    "features": ("letor-stream-v1", {}),
}


def _feedback(name: str, params: dict) -> tuple[str, dict]:
    required = LEARNERS[name](**params, n_runs=1, rng=0).requires
    if required.kind == "topk":
        return "top-k", {"k": int(required.k or 1)}
    return {"none": "full"}.get(required.kind, required.kind), {}


def _trace(name: str, reps: tuple[int, ...], params: dict | None = None) -> pd.DataFrame:
    kind = LEARNERS[name].context_kind
    env, env_params = ENVS["items" if kind == "any" else kind]
    feedback, feedback_params = _feedback(name, params or {})
    spec = RunSetSpec(
        env=env,
        env_params=env_params,
        feedback=feedback,
        feedback_params=feedback_params,
        learner=name,
        learner_params=params or {},
        reps=reps,
        seed=5,
        horizon=HORIZON,
        measures=("ndcg@5",),
        checkpoints=(100, 200, 300, HORIZON),
    )
    return run_set(spec)


CASES = [(name, {}) for name in sorted(LEARNERS)] + [
    # SmoothDCG's 1/ε = 100 turns last-bit differences into different rankings quickly.
    ("rtopk", {"surrogate": s})
    for s in ("ranksvm", "kl", "smoothdcg")
]


@pytest.mark.parametrize(("name", "params"), CASES, ids=[f"{n}{p}" for n, p in CASES])
def test_batch_of_three_equals_three_single_runs(name: str, params: dict) -> None:
    batch = _trace(name, (0, 1, 2), params)
    singles = pd.concat([_trace(name, (rep,), params) for rep in (0, 1, 2)], ignore_index=True)
    pd.testing.assert_frame_equal(
        batch.sort_values(["rep", "t"], ignore_index=True),
        singles.sort_values(["rep", "t"], ignore_index=True),
        check_exact=True,
    )
