"""Snapshots: restore → continue equals a learner that was never interrupted, for every learner."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from oltr.build import make_learner
from oltr.feedback import ClickFeedback, DuelFeedback, FullFeedback
from oltr.learners.base import Learner
from oltr.learners.linear import RUNS_MINOR_FROM
from oltr.registry import LEARNERS
from oltr.serve.state import SnapshotError, decode_state, dumps_state, encode_state, loads_state
from oltr.types import Context, RunGenerators

CASES = [
    (name, params)
    for name in sorted(LEARNERS)
    for params in list(LEARNERS[name]._test_params())[:2]
]


def _build(name: str, params: dict[str, Any]) -> Learner:
    rngs = RunGenerators.from_keys(3, "learner", name, reps=[0])
    return make_learner(name, params, n_runs=1, rngs=rngs, horizon=200)


def _round(learner: Learner, t: int, world: np.random.Generator) -> np.ndarray[Any, Any]:
    """One protocol round with a random context and random full feedback, cut to requires."""
    m, d = 5, 3
    if learner.context_kind == "features":
        ctx = Context(t=t, n_items=m, features=world.standard_normal((m, d)))
    else:
        ctx = Context(t=t, n_items=m)
    orders = np.asarray(learner.rank(ctx))
    if learner.requires.kind == "duel":
        fb: Any = DuelFeedback(orders, world.integers(-1, 2, size=(1,)).astype(np.int8))
    elif learner.requires.kind == "clicks":
        fb = ClickFeedback(orders, world.random((1, m)) < 0.4)
    else:
        fb = FullFeedback(orders, world.integers(0, 3, size=(1, m))).restrict(learner.requires)
    learner.update(ctx, orders, fb)
    return orders


def _state(learner: Learner) -> str:
    return json.dumps(encode_state(learner), sort_keys=True)


@pytest.mark.parametrize(
    ("name", "params"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)]
)
def test_restore_then_continue_equals_uninterrupted(name: str, params: dict[str, Any]) -> None:
    straight, interrupted = _build(name, params), _build(name, params)
    world_a, world_b = np.random.default_rng(11), np.random.default_rng(11)
    for t in range(1, 8):
        _round(straight, t, world_a)
        _round(interrupted, t, world_b)
    text = dumps_state(interrupted, "test")
    restored = _build(name, params)  # fresh from the definition, as after a restart
    assert loads_state(text, restored) == "test"
    for t in range(8, 20):
        a = _round(straight, t, world_a)
        b = _round(restored, t, world_b)
        assert np.array_equal(a, b), f"round {t}: orders differ after restore"
    assert _state(straight) == _state(restored)


def test_snapshot_is_plain_json_and_exact() -> None:
    value = {
        "x": np.array([0.1, np.nan, -np.inf]),
        "t": (1, np.int64(2)),
        "f": 1 / 3,
        "d": np.dtype(np.float32),
    }
    enc = json.loads(json.dumps(encode_state(value)))
    out = decode_state(enc)
    assert np.array_equal(out["x"], value["x"], equal_nan=True)
    assert out["x"].dtype == np.float64 and out["t"] == (1, 2) and out["f"] == 1 / 3
    assert out["d"] == np.float32


@pytest.mark.parametrize("name", ["rtopk", "listnet"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_large_float32_batch_restores_bit_for_bit(name: str, dtype: str) -> None:
    # Runs-minor weights (Fortran order) come back C-ordered from a snapshot; the
    # learner continues from them exactly as if it had never stopped.
    def build() -> Learner:
        rngs = RunGenerators.from_keys(3, "learner", name, reps=list(range(RUNS_MINOR_FROM)))
        return make_learner(name, {"dtype": dtype}, n_runs=RUNS_MINOR_FROM, rngs=rngs)

    def round_(learner: Learner, t: int, world: np.random.Generator) -> np.ndarray[Any, Any]:
        m = 6
        ctx = Context(t=t, n_items=m, features=world.standard_normal((m, 4)))
        orders = np.asarray(learner.rank(ctx))
        grades = np.tile(world.integers(0, 3, size=m), (RUNS_MINOR_FROM, 1))
        learner.update(ctx, orders, FullFeedback(orders, grades).restrict(learner.requires))
        return orders

    straight, interrupted = build(), build()
    world_a, world_b = np.random.default_rng(5), np.random.default_rng(5)
    for t in range(1, 8):
        round_(straight, t, world_a)
        round_(interrupted, t, world_b)
    restored = build()
    loads_state(dumps_state(interrupted, "test"), restored)
    for t in range(8, 20):
        assert np.array_equal(round_(straight, t, world_a), round_(restored, t, world_b))
    assert _state(straight) == _state(restored)


def test_restore_refuses_another_class_and_foreign_objects() -> None:
    rtopk = _build("rtopk", {"gamma": 0.5})
    with pytest.raises(SnapshotError, match="cannot restore"):
        loads_state(dumps_state(rtopk, "v"), _build("random", {}))
    with pytest.raises(SnapshotError, match="refusing to create"):
        decode_state({"object": "subprocess:Popen", "fields": {}})
    with pytest.raises(SnapshotError, match="cannot snapshot"):
        encode_state(object())
