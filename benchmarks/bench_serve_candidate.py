"""The cost of a live comparison in ``oltr serve``: rank + feedback with a candidate beside.

In process (the rankers of a store, no HTTP: the HTTP cost is the same with or
without a candidate), PDGD production and a PDGD candidate at (m, d) = (50, 46),
clicks on a page of 10. Each pair is applied as the routes apply it, under the
ranker's lock, and the pair's last write is awaited (SQLite, ``synchronous=NORMAL``).
Reports, per setting, the median and p99 time of the locked part of ``rank`` and of
``feedback`` (what the comparison adds to the time a ranker is busy) and of the whole
pair with its commits.

Settings: no candidate; shadow (the candidate ranks every request); interleaved with
``share`` 0.2 and 1.0 (the candidate ranks the compared requests, team-draft
interleaving, outcome counted, rule checked).

Usage: ``python benchmarks/bench_serve_candidate.py [--pairs N]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from oltr.serve import Store
from oltr.serve.comparison import CandidateConfig, RolloutRule
from oltr.serve.protocol import RankerDefinition
from oltr.serve.rankers import Rankers
from oltr.serve.rollout import attach

M, D, K = 50, 46, 10
CLICKS = {"click_model": "navigational", "n_grades": 3, "k": K}


def _defn(seed: int) -> RankerDefinition:
    return RankerDefinition(
        learner="pdgd", feedback="clicks", feedback_params=CLICKS, n_features=D, seed=seed
    )


def _setting(folder: Path, label: str, config: CandidateConfig | None, pairs: int) -> list[str]:
    store = Store(folder / f"{label}.db", synchronous="NORMAL")
    rankers = Rankers(store)
    rankers.put("prod", _defn(1))
    rankers.put("cand", _defn(2))
    if config is not None:
        attach(rankers, "prod", config)
    prod = rankers.get("prod")
    rng = np.random.default_rng(0)
    lists = [rng.random((M, D)).tolist() for _ in range(64)]
    rank_t, fb_t, pair_t = [], [], []
    for i in range(pairs):
        start = time.perf_counter()
        with prod.lock:
            out, _ = prod.rank_locked(lists[i % len(lists)])
        mid = time.perf_counter()
        clicks = [int(j) for j in np.flatnonzero(rng.random(K) < 0.1)]
        with prod.lock:
            _, done = prod.feedback_locked(out["impression"], {"clicks": clicks}, 3600.0)
        end = time.perf_counter()
        done.result()
        rank_t.append(mid - start)
        fb_t.append(end - mid)
        pair_t.append(time.perf_counter() - start)
    store.close()

    def q(values: list[float], p: float) -> str:
        return f"{np.percentile(values, p) * 1e3:7.3f}"

    return [label, q(rank_t, 50), q(rank_t, 99), q(fb_t, 50), q(fb_t, 99), q(pair_t, 50)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    args = parser.parse_args()
    rule = RolloutRule(min_impressions=10**9)  # compared throughout, never promoted
    settings: list[tuple[str, Any]] = [
        ("no candidate", None),
        ("shadow", CandidateConfig("cand", mode="shadow")),
        ("interleaved 0.2", CandidateConfig("cand", share=0.2, rollout=rule)),
        ("interleaved 1.0", CandidateConfig("cand", share=1.0, rollout=rule)),
    ]
    header = (
        f"{'setting':16} {'rank p50':>9} {'rank p99':>9} {'fb p50':>9} {'fb p99':>9} "
        f"{'pair p50':>9}   (ms; (m, d) = ({M}, {D}), {args.pairs} pairs)"
    )
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as tmp:
        for label, config in settings:
            row = _setting(Path(tmp), label.replace(" ", "-"), config, args.pairs)
            print(f"{label:16} " + " ".join(f"{v:>9}" for v in row[1:]), flush=True)


if __name__ == "__main__":
    main()
