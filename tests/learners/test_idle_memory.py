"""An idle ranker holds only its state: nothing of the last list survives ``update``.

Every contextual learner of the registry, at its defaults, ranks and learns a
few rounds of lists of m = 200 items (d = 46 features, as LETOR 4.0), and is
then weighed: the bytes of every numpy array reachable from its attributes
(recursively through tuples, lists, dicts and the package's own objects, each
buffer counted once, a view by its base) must be at most

    copies · B · p · 8  +  ahead · B · 8  +  SLACK

where p is the number of a run's parameters (d for a linear scorer, d·h + 2h for
the neural one), ``copies`` the parameter-sized arrays the learner keeps (the
weights; the averaged weights; the step's sums; for DBGD the candidate and the
direction), ``ahead`` the random numbers per run it drew ahead of use in one
block (part of its generators' output: RTop-kF's exploration coins, DBGD's
directions), and SLACK = 1 KiB for the per-run vectors of B = 1 (learning
rates, AdaGrad sums, run indices: 8 bytes each) and empty buffers. The round's
list alone is far above that: its features are m · d · 8 = 73,600 bytes, its
scores B · m · 8 = 1,600. The weighed bytes must also be the same after lists
of m = 10 items: nothing in an idle ranker grows with the list.

Scratch buffers (reused from round to round, holding nothing between rounds)
are not part of a snapshot; restore → continue stays bit for bit (tests/serve).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from oltr.build import make_learner
from oltr.feedback import ClickFeedback, DuelFeedback, FullFeedback
from oltr.learners import LinearRanker
from oltr.learners.base import Learner
from oltr.learners.linear import RUNS_MINOR_FROM
from oltr.registry import LEARNERS
from oltr.serve.state import encode_state
from oltr.types import Context

D = 46
HIDDEN = 64  # NeuralPDGD's default width
SLACK = 1024
ROUNDS = 3

#: learner: (parameter-sized arrays kept, random numbers drawn ahead per run).
HELD = {
    "dbgd": (3, 256 * D),  # w, w', u; a block of 256 unit directions
    "listnet": (3, 0),  # weights, averaged weights, the step's sums
    "p-dbgd": (2, 0),  # weights, averaged weights (the step is an addition)
    "p-mgd": (2, 0),
    "td-dbgd": (2, 0),
    "pdgd": (3, 0),
    "pdgd-neural": (1, 0),  # (W₁, b₁, w₂)
    "rtopk": (3, 1024),  # a block of 1,024 exploration coins
}
CONTEXTUAL = sorted(name for name in LEARNERS if LEARNERS[name].context_kind == "features")


def _params_per_run(name: str) -> int:
    return D * HIDDEN + 2 * HIDDEN if name == "pdgd-neural" else D


def _array_bytes(obj: Any, seen: set[int] | None = None) -> int:
    """Bytes of the numpy arrays reachable from ``obj``, each buffer once (a view by its base)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        base = obj
        while isinstance(base.base, np.ndarray):
            base = base.base
        if base is not obj:
            if id(base) in seen:
                return 0
            seen.add(id(base))
        return int(base.nbytes)
    if isinstance(obj, list | tuple):
        return sum(_array_bytes(v, seen) for v in obj)
    if isinstance(obj, dict):
        return sum(_array_bytes(v, seen) for v in obj.values())
    own = type(obj).__module__.startswith("oltr.") and not isinstance(obj, type)
    if own and hasattr(obj, "__dict__"):
        return sum(_array_bytes(v, seen) for v in vars(obj).values())
    return 0


def _play(
    learner: Learner, m: int, rounds: int, world: np.random.Generator, trusted: bool = False
) -> None:
    """``rounds`` protocol rounds on random lists of m items with random feedback (through
    the runner's trusted verbs if ``trusted``)."""
    n_runs = learner.n_runs
    rank = learner.trusted_rank if trusted else learner.rank
    update = learner.trusted_update if trusted else learner.update
    for t in range(1, rounds + 1):
        ctx = Context(t=t, n_items=m, features=world.standard_normal((m, D)))
        orders = np.asarray(rank(ctx))
        kind = learner.requires.kind
        fb: Any
        if kind == "duel":
            fb = DuelFeedback(orders, world.integers(-1, 2, size=n_runs).astype(np.int8))
        elif kind == "clicks":
            fb = ClickFeedback(orders, world.random((n_runs, m)) < 0.3)
        else:
            grades = world.integers(0, 3, size=(n_runs, m))
            fb = FullFeedback(orders, grades).restrict(learner.requires)
        update(ctx, orders, fb)


def _idle(name: str, m: int, n_runs: int = 1) -> Learner:
    learner = make_learner(name, {}, n_runs=n_runs, rngs=0, horizon=1000)
    _play(learner, m, ROUNDS, np.random.default_rng(7))
    return learner


def test_every_contextual_learner_is_weighed() -> None:
    assert set(HELD) == set(CONTEXTUAL)


@pytest.mark.parametrize("name", CONTEXTUAL)
def test_an_idle_ranker_holds_its_weights_and_generators_only(name: str) -> None:
    copies, ahead = HELD[name]
    bound = copies * _params_per_run(name) * 8 + ahead * 8 + SLACK
    long_list = _array_bytes(_idle(name, 200))
    assert long_list <= bound, f"{name}: {long_list} bytes after lists of 200 items > {bound}"
    assert long_list == _array_bytes(_idle(name, 10)), f"{name}: idle memory grows with m"


@pytest.mark.parametrize("name", ["rtopk", "listnet", "pdgd"])
def test_snapshots_leave_the_scratch_buffers_out(name: str) -> None:
    # A runs-minor batch uses every scratch buffer; the snapshot keeps none of them.
    learner = _idle(name, 12, n_runs=RUNS_MINOR_FROM)
    assert isinstance(learner, LinearRanker)
    scratch = set(LinearRanker.scratch_fields)
    assert scratch <= set(vars(learner))
    assert _array_bytes([getattr(learner, f) for f in scratch]) > 0  # they are in use
    assert not scratch & set(encode_state(learner)["fields"])


@pytest.mark.parametrize("n_runs", [1, RUNS_MINOR_FROM])
@pytest.mark.parametrize("name", ["rtopk", "listnet"])  # PDGD's trusted round keeps none
def test_snapshots_leave_the_trusted_rounds_buffers_out(name: str, n_runs: int) -> None:
    # The runner's trusted verbs reuse buffers of their own; the snapshot keeps none of them.
    learner = make_learner(name, {}, n_runs=n_runs, rngs=0, horizon=1000)
    _play(learner, 12, ROUNDS, np.random.default_rng(7), trusted=True)
    scratch = set(type(learner).scratch_fields)
    in_use = [f for f in scratch - set(LinearRanker.scratch_fields) if f in vars(learner)]
    assert _array_bytes([getattr(learner, f) for f in in_use]) > 0
    assert not scratch & set(encode_state(learner)["fields"])
