"""Runner overhead per round: the do-nothing learner on a fixed item set, one measure.

Times ``run_set`` end to end (building, T rounds, comparator, trace) with the
``noop`` learner, ``fixed-items-v1`` (m = 10 Bernoulli items), top-1 feedback and
DCG, for B = 1 and B = 100 runs per batch, with and without the per-round
permutation check. The "measure alone" column times the one ``dcg`` call per
round that the runner cannot avoid, so the difference is the protocol's own
cost (context, feedback object, restriction, bookkeeping).

Usage: ``python benchmarks/bench_runner.py`` (or ``python benchmarks/run.py runner``).
"""

from __future__ import annotations

import time

import numpy as np

from oltr.experiments.regret import log_checkpoints
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.metrics import get_measure

HORIZON = 10_000
N_ITEMS = 10
REPEATS = 3


def spec(n_runs: int) -> RunSetSpec:
    return RunSetSpec(
        env="fixed-items-v1",
        env_params={"n_items": N_ITEMS},
        feedback="top-k",
        feedback_params={"k": 1},
        learner="noop",
        learner_params={},
        reps=tuple(range(n_runs)),
        seed=0,
        horizon=HORIZON,
        measures=("dcg",),
        checkpoints=log_checkpoints(HORIZON, 50),
    )


def best_of(fn, repeats: int = REPEATS) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def measure_alone(n_runs: int) -> float:
    dcg = get_measure("dcg")
    rel = np.random.default_rng(0).integers(0, 2, N_ITEMS)
    orders = np.tile(np.arange(N_ITEMS), (n_runs, 1))

    def loop() -> None:
        for _ in range(HORIZON):
            dcg(rel, orders, validate=False)

    return best_of(loop)


def main() -> None:
    run_set(spec(1))  # warm up imports and caches
    print(
        f"noop learner, fixed-items-v1 (m={N_ITEMS}), top-1 feedback, dcg, T={HORIZON}; "
        f"best of {REPEATS}"
    )
    header = (
        f"{'B':>5} {'validate':>9} {'µs/round':>10} {'µs/round/run':>13} "
        f"{'measure alone µs/round':>23} {'protocol µs/round':>18}"
    )
    print(header)
    print("-" * len(header))
    for n_runs in (1, 100):
        alone = measure_alone(n_runs) / HORIZON * 1e6
        for validate in (True, False):
            total = best_of(lambda b=n_runs, v=validate: run_set(spec(b), validate=v))
            per_round = total / HORIZON * 1e6
            print(
                f"{n_runs:>5} {str(validate):>9} {per_round:>10.1f} {per_round / n_runs:>13.2f} "
                f"{alone:>23.1f} {per_round - alone:>18.1f}"
            )


if __name__ == "__main__":
    main()
