"""A simulated guarded rollout: a better candidate is promoted, a worse one never is, a bad
promotion is rolled back; and the error rate of the interval rule at no difference.

The service runs in process (:class:`~oltr.serve.rankers.Rankers` over a store; the
HTTP layer is tested in ``test_serve_comparison.py``): production is a ``fixed``
ranker (one feature column, learns nothing); the good candidate is PDGD started
(``init``) from weights fitted offline by least squares on the training queries'
grades (times :data:`SCALE`, so that its Plackett–Luce list is mostly its argmax
order), with a learning rate of 1e-9 (it keeps its weights); the worse one a
``fixed`` ranker on the feature with the lowest NDCG@10 on the training queries.
Users: the navigational cascade click model (:func:`oltr.clicks.cascade_model`) on
the first 10 shown, with the grades of the streamed queries. The true advantage
``Δ = P(candidate wins) − P(production wins)`` of each pair is computed apart, by
Monte Carlo over the same queries, interleaving and click model.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

from oltr.clicks import cascade_model
from oltr.clicks.interleaving import team_draft_interleave
from oltr.data.letor import load_letor
from oltr.data.synthetic import synthetic_letor
from oltr.metrics import get_measure
from oltr.serve import Store
from oltr.serve.comparison import (
    CandidateConfig,
    RolloutRule,
    Tally,
    decide,
    interleaved_summary,
    mixture_margin,
)
from oltr.serve.protocol import RankerDefinition
from oltr.serve.rankers import Rankers
from oltr.serve.rollout import attach, manual
from oltr.serve.warmstart import read_init

K = 10
#: The least-squares weights times SCALE are the good candidate's: its Plackett–Luce list
#: is then mostly its argmax order (the truth samples the same distribution).
SCALE = 20.0
FOLD1 = Path("LETOR4.0") / "MQ2008" / "Fold1"
Query = tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]


def _queries(ds: Any) -> list[Query]:
    o = ds.offsets
    return [
        (ds.features[o[i] : o[i + 1]], ds.relevance[o[i] : o[i + 1]]) for i in range(len(o) - 1)
    ]


def _order(scores: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.argsort(-scores, kind="stable")


def _plackett_luce(scores: np.ndarray[Any, Any], rng: np.random.Generator) -> Any:
    """A Plackett–Luce sample of ``scores`` by Gumbel-max: the list PDGD shows."""
    return _order(scores - np.log(-np.log1p(-rng.random(scores.size))))


def _least_squares(train: list[Query]) -> np.ndarray[Any, Any]:
    """Grades regressed on features (with an intercept): the offline-trained candidate."""
    x = np.vstack([q[0] for q in train])
    y = np.concatenate([q[1] for q in train]).astype(np.float64)
    coef = np.linalg.lstsq(np.c_[x, np.ones(len(x))], y, rcond=None)[0]
    return np.asarray(coef[:-1])


def _feature_ndcg(train: list[Query]) -> list[float]:
    """Mean NDCG@10 of ranking by each single feature, all features of a query at once:
    gains 2^r − 1, discount 1/log2(1 + position), 0 for a query without relevant documents
    (Järvelin & Kekäläinen 2002; checked against oltr's ndcg@10 below)."""
    total = np.zeros(train[0][0].shape[1])
    for x, r in train:
        gain, k = 2.0 ** r.astype(np.float64) - 1.0, min(10, r.size)
        disc = 1.0 / np.log2(np.arange(2, k + 2))
        ideal = float(np.sort(gain)[::-1][:k] @ disc)
        if ideal > 0:
            top = np.argsort(-x, axis=0, kind="stable")[:k]  # (k, d): each feature's order
            total += (gain[top] * disc[:, None]).sum(axis=0) / ideal
    return [float(v) for v in total / len(train)]


def _true_advantage(
    stream: list[Query], prod: Any, cand: Any, n_grades: int, n: int = 3000
) -> tuple[float, float]:
    """Monte Carlo Δ and its standard error (seeded); ``prod``/``cand``: (X, rng) -> order."""
    rng, users = np.random.default_rng(99), cascade_model("navigational", n_grades=n_grades)
    out = np.empty(n)
    for i in range(n):
        x, r = stream[rng.integers(len(stream))]
        il = team_draft_interleave(prod(x, rng), cand(x, rng), k=K, rng=rng)
        out[i] = il.outcome(users.simulate(r[il.shown], rng))
    return float(out.mean()), float(out.std(ddof=1) / np.sqrt(n))


class Service:
    """The rankers of a store, in process, with the simulated users."""

    def __init__(self, path: Path, d: int, n_grades: int) -> None:
        self.store = Store(path, synchronous="NORMAL")
        self.rankers = Rankers(self.store)
        self.d, self.users = d, cascade_model("navigational", n_grades=n_grades)
        self.clicks = {"click_model": "navigational", "n_grades": n_grades, "k": K}

    def fixed(self, name: str, feature: int) -> None:
        self.rankers.put(name, self._defn("fixed", {"feature": feature}, None))

    def linear(self, name: str, weights: np.ndarray[Any, Any], tmp: Path) -> None:
        path = tmp / f"{name}.json"
        body = {"format": "oltr-model", "version": 1, "kind": "linear", "n_features": self.d,
                "weights": weights.tolist(), "learner": "ips"}  # fmt: skip
        path.write_text(json.dumps(body))
        self.rankers.put(name, self._defn("pdgd", {"eta": 1e-9}, read_init(str(path), self.d)))

    def _defn(self, learner: str, params: dict[str, Any], init: Any) -> RankerDefinition:
        return RankerDefinition(
            learner=learner, params=params, feedback="clicks", feedback_params=self.clicks,
            n_features=self.d, seed=3, init=init,
        )  # fmt: skip

    def run(
        self, stream: list[Query], rounds: int, seed: int, until_promoted: bool = False
    ) -> int | None:
        """Serve up to ``rounds`` requests of ``prod``; the compared impressions at the first
        promotion (None: no promotion)."""
        rng, prod = np.random.default_rng(seed), self.rankers.get("prod")
        lists = [q[0].tolist() for q in stream]
        for _ in range(rounds):
            i = int(rng.integers(len(stream)))
            # Each request as the routes apply it; the writes are not awaited one by one
            # (as with concurrent users, they share commits): the store is awaited below.
            with prod.lock:
                out, _ = prod.rank_locked(lists[i])
            shown = np.asarray(out["order"][:K])
            clicks = np.flatnonzero(self.users.simulate(stream[i][1][shown], rng)).tolist()
            with prod.lock:
                prod.feedback_locked(out["impression"], {"clicks": clicks}, 3600.0)
            if until_promoted and prod.candidate.phase == "promoted":
                break
        self.store.barrier()
        return self.promoted_at()

    def promoted_at(self) -> int | None:
        for _, kind, _, payload in _decisions(self.store.path):
            if kind == "promote":
                return int(payload["impressions"])
        return None

    def close(self) -> None:
        self.store.close()


def _decisions(path: str) -> list[tuple[int, str, int, dict[str, Any]]]:
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT rowid, kind, event_seq, payload FROM decisions ORDER BY rowid")
        return [(r[0], r[1], r[2], json.loads(r[3])) for r in rows]


def _rollout(
    tmp: Path, train: list[Query], stream: list[Query], n_grades: int, min_impr: int, label: str
) -> None:
    d = train[0][0].shape[1]
    w = _least_squares(train) * SCALE
    per = _feature_ndcg(train)
    x0, r0 = train[1]
    assert per and _feature_ndcg([(x0, r0)])[3] == pytest.approx(
        get_measure("ndcg@10")(r0, _order(x0[:, 3]))
    )
    bad, mid = int(np.argmin(per)), int(np.argsort(per)[d // 2])  # production: a middling one

    def prod(x: Any, _: Any) -> Any:
        return _order(x[:, mid])

    good, _ = _true_advantage(stream, prod, lambda x, g: _plackett_luce(x @ w, g), n_grades)
    worse, _ = _true_advantage(stream, prod, lambda x, _: _order(x[:, bad]), n_grades)
    # The premise, from 3000 draws each (standard errors about 0.015): truly better / worse.
    assert good > 0.1 and worse < -0.05, (good, worse)
    rule = RolloutRule(min_impressions=min_impr, margin=0.0)
    # The better candidate is promoted.
    svc = Service(tmp / "good.db", d, n_grades)
    svc.fixed("prod", mid)
    svc.linear("cand", w, tmp)
    attach(svc.rankers, "prod", CandidateConfig("cand", share=1.0, rollout=rule))
    took = svc.run(stream, 8 * min_impr, seed=0, until_promoted=True)
    svc.close()
    print(f"\n{label}: true advantage {good:.3f}; promoted after {took} compared impressions")
    print(f"{label}: the worse candidate's true advantage {worse:.3f}")
    assert took is not None and took >= min_impr
    # The worse one is never promoted, over several seeds.
    for seed in range(3):
        svc = Service(tmp / f"worse{seed}.db", d, n_grades)
        svc.fixed("prod", mid)
        svc.fixed("cand", bad)
        attach(svc.rankers, "prod", CandidateConfig("cand", share=1.0, rollout=rule))
        assert svc.run(stream, 2 * min_impr, seed=seed) is None
        comp = svc.rankers.get("prod").candidate.describe()
        svc.close()
        assert comp["phase"] == "comparing" and comp["advantage"]["interval"][1] > worse


def test_synthetic_rollout_promotes_the_better_and_never_the_worse(tmp_path: Path) -> None:
    data = synthetic_letor(n_queries=200, n_features=10, max_grade=4, max_docs=30, rng=0)
    qs = _queries(data)
    _rollout(tmp_path, qs[:100], qs[100:], n_grades=5, min_impr=200, label="synthetic")


@pytest.mark.shared_data
def test_mq2008_rollout_promotes_the_better_and_never_the_worse(
    shared_data: Path, tmp_path: Path
) -> None:
    train_path, test_path = (
        shared_data / FOLD1 / "train.txt.gz",
        shared_data / FOLD1 / "test.txt.gz",
    )
    if not (train_path.is_file() and test_path.is_file()):
        pytest.skip(f"MQ2008 Fold1 is absent from {shared_data / FOLD1}")
    train, stream = _queries(load_letor(train_path)), _queries(load_letor(test_path))
    _rollout(tmp_path, train, stream, n_grades=3, min_impr=300, label="MQ2008 Fold1")


def test_a_bad_promotion_is_rolled_back_automatically(tmp_path: Path) -> None:
    data = synthetic_letor(n_queries=100, n_features=10, max_grade=4, max_docs=30, rng=1)
    qs = _queries(data)
    bad = int(np.argmin(_feature_ndcg(qs)))
    svc = Service(tmp_path / "s.db", 10, 5)
    svc.fixed("prod", int(_least_squares(qs).argmax()))  # the single feature weighted most
    svc.fixed("cand", bad)
    rule = RolloutRule(min_impressions=100, margin=0.0)
    attach(svc.rankers, "prod", CandidateConfig("cand", share=0.5, rollout=rule))
    manual(svc.rankers, "prod", "promote")  # a person promoted it without waiting
    svc.run(qs, 600, seed=1)
    kinds = [(k, p.get("rule")) for _, k, _, p in _decisions(svc.store.path)]
    live = svc.rankers.get("prod").candidate
    svc.close()
    assert [k for k, _ in kinds] == ["candidate", "promote", "rollback"], kinds
    assert kinds[1][1] == "manual" and "upper bound" in str(kinds[2][1])
    assert live is not None and live.phase == "rolled-back"


def test_the_rule_promotes_a_candidate_no_better_than_production_rarely() -> None:
    """At Δ = 0 (wins and losses equally likely, ties as often as in the runs above) the
    rule, checked after every impression up to 3000, promotes in at most α/2 = 2.5% of
    runs (the confidence sequence holds at every n). 400 seeded runs: the count must stay
    under the binomial(400, 0.025) 99.9% quantile; a fixed-n 95% interval checked as
    often fails this (shown beside it)."""
    runs, n, alpha, n_opt = 400, 3000, 0.05, 200
    rng = np.random.default_rng(7)
    outcomes = rng.choice([-1, 0, 1], p=[0.3, 0.4, 0.3], size=(runs, n))
    cum = np.cumsum(outcomes, axis=1)
    steps = np.arange(1, n + 1)
    est = cum / steps
    margins = np.array([mixture_margin(int(k), n_opt, alpha) for k in steps])
    promoted = ((est - margins > 0) & (steps >= n_opt)).any(axis=1)
    limit = binom.ppf(0.999, runs, alpha / 2)
    assert promoted.sum() <= limit, promoted.sum()
    wald = 1.96 * np.sqrt(
        np.maximum(np.cumsum(outcomes**2, axis=1) / steps - est**2, 1e-12) / steps
    )
    assert ((est - wald > 0) & (steps >= n_opt)).any(axis=1).sum() > limit  # peeking breaks it
    # decide() takes the same decisions as the vectorised rule, on the first runs.
    rule = RolloutRule(min_impressions=n_opt)
    for row in range(5):
        tally, first = Tally(), None
        for k, o in enumerate(outcomes[row], start=1):
            tally.add(int(o))
            if decide(interleaved_summary(tally, n_opt, alpha), rule, "comparing"):
                first = k
                break
        hits = np.flatnonzero((est[row] - margins > 0) & (steps >= n_opt))
        assert first == (int(hits[0]) + 1 if hits.size else None)
