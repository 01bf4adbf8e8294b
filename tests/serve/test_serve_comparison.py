"""A candidate beside a production ranker: the API, shadow logging, interleaving, kill -9.

Production and candidate are ``fixed`` rankers (one feature column each, so
their lists are known in closed form) or PDGD (a stochastic ranker that logs
Plackett–Luce propensities and learns from clicks).
"""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from live_server import free_port, start_server, wait_healthy
from scipy.stats import binom

from oltr.build import make_learner
from oltr.client import OltrClient
from oltr.feedback import ClickFeedback
from oltr.serve import ServeSettings, Store, create_app
from oltr.types import Context, RunGenerators

D, M, K = 5, 8, 4
CLICKS = {"click_model": "navigational", "n_grades": 5, "k": K}


def _fixed(feature: int, **more: Any) -> dict[str, Any]:
    return {"learner": "fixed", "params": {"feature": feature}, "feedback": "clicks",
            "feedback_params": CLICKS, "n_features": D, **more}  # fmt: skip


PDGD: dict[str, Any] = {"learner": "pdgd", "params": {"eta": 0.5}, "feedback": "clicks",
                        "feedback_params": CLICKS, "n_features": D, "seed": 11}  # fmt: skip


def _client(path: Path) -> TestClient:
    return TestClient(create_app(ServeSettings(store=path, synchronous="NORMAL")))


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    c = _client(tmp_path / "s.db")
    assert c.put("/rankers/prod", json=_fixed(0)).status_code == 201
    assert c.put("/rankers/cand", json=_fixed(1)).status_code == 201
    return c


def _x(rng: np.random.Generator) -> np.ndarray[Any, Any]:
    return rng.random((M, D))


def _impressions(path: Path, name: str) -> dict[str, Any]:
    store = Store(path, readonly=True)
    try:
        return {imp.id: imp for imp in store.impressions(name)}
    finally:
        store.close()


# -- the API ---------------------------------------------------------------------------


def test_put_get_delete_candidate_and_conflicts(client: TestClient) -> None:
    body = {"ranker": "cand", "mode": "interleaved", "share": 0.25}
    assert client.get("/rankers/prod/candidate").status_code == 404
    put = client.put("/rankers/prod/candidate", json=body)
    assert put.status_code == 201
    got = client.get("/rankers/prod/candidate").json()
    assert got["candidate"] == "cand" and got["config"]["share"] == 0.25
    assert got["phase"] == "comparing" and got["serving"] == "prod"
    assert client.put("/rankers/prod/candidate", json=body).status_code == 200  # same: no change
    other = client.put("/rankers/prod/candidate", json={**body, "share": 0.5})
    assert other.status_code == 409 and "DELETE it first" in other.json()["detail"]
    # A candidate cannot have a candidate, nor be the candidate of a second ranker.
    assert client.put("/rankers/third", json=_fixed(2)).status_code == 201
    assert client.put("/rankers/cand/candidate", json={"ranker": "third"}).status_code == 409
    assert client.put("/rankers/third/candidate", json={"ranker": "cand"}).status_code == 409
    history = client.get("/rankers/prod/rollout").json()["history"]
    assert [h["kind"] for h in history] == ["candidate"] and history[0]["action"] == "attach"
    assert client.delete("/rankers/prod/candidate").status_code == 204
    assert client.get("/rankers/prod/comparison").status_code == 404
    assert client.delete("/rankers/prod/candidate").status_code == 404
    history = client.get("/rankers/prod/rollout").json()["history"]
    assert [h["action"] for h in history] == ["attach", "detach"]
    assert client.get("/rankers/prod/stats").json()["comparison"] is None


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"ranker": "cand", "share": 0}, "share"),
        ({"ranker": "cand", "share": 1.5}, "share"),
        ({"ranker": "cand", "share": True}, "share"),  # strict: a boolean is not a number
        ({"ranker": "cand", "share": "0.2"}, "share"),
        ({"ranker": "cand", "mode": "both"}, "mode"),
        ({"ranker": "cand", "method": "balanced"}, "method"),
        ({"ranker": "cand", "alpha": 1.0}, "alpha"),
        ({"ranker": "cand", "colour": 1}, "colour"),
        ({"ranker": ""}, "ranker"),
        ({"share": 0.2}, "ranker"),
        ({"ranker": "cand", "rollout": {"min_impressions": 0}}, "min_impressions"),
        ({"ranker": "cand", "rollout": {"margin": -0.1}}, "margin"),
        ({"ranker": "cand", "rollout": {"auto": 1}}, "auto"),
    ],
)
def test_malformed_candidate_bodies_get_422_at_the_field(
    client: TestClient, body: dict[str, Any], where: str
) -> None:
    resp = client.put("/rankers/prod/candidate", json=body)
    assert resp.status_code == 422
    assert any(where in err["loc"] for err in resp.json()["detail"]), resp.json()


def test_candidates_that_cannot_be_compared_get_422_in_words(client: TestClient) -> None:
    client.put(
        "/rankers/topk", json={**_fixed(1), "feedback": "top-k", "feedback_params": {"k": 1}}
    )
    client.put("/rankers/k3", json={**_fixed(1), "feedback_params": {**CLICKS, "k": 3}})
    client.put("/rankers/d6", json={**_fixed(1), "n_features": D + 1})
    for body, words in [
        ({"ranker": "prod"}, "its own candidate"),
        ({"ranker": "cand", "mode": "shadow", "rollout": {}}, "needs mode 'interleaved'"),
        ({"ranker": "topk"}, "'topk'"),
        ({"ranker": "k3"}, "page length"),
        ({"ranker": "d6"}, "n_features"),
    ]:
        resp = client.put("/rankers/prod/candidate", json=body)
        assert resp.status_code == 422 and words in resp.json()["detail"], resp.json()
    assert client.put("/rankers/prod/candidate", json={"ranker": "ghost"}).status_code == 404
    assert client.put("/rankers/ghost/candidate", json={"ranker": "cand"}).status_code == 404
    assert client.get("/rankers/prod/rollout").json()["history"] == []  # nothing was attached


# -- shadow ----------------------------------------------------------------------------


def test_shadow_logs_the_candidate_list_never_shows_it_and_it_never_learns(
    client: TestClient, tmp_path: Path
) -> None:
    assert client.put(
        "/rankers/prod/candidate", json={"ranker": "cand", "mode": "shadow"}
    ).is_success
    rng, n, agree = np.random.default_rng(1), 30, 0
    for _ in range(n):
        x = _x(rng)
        out = client.post("/rankers/prod/rank", json={"features": x.tolist()}).json()
        own, theirs = np.argsort(-x[:, 0], kind="stable"), np.argsort(-x[:, 1], kind="stable")
        assert out["order"] == own.tolist()  # production's list is what users see
        agree += int(own[0] == theirs[0])
        assert client.post(
            "/rankers/prod/feedback", json={"impression": out["impression"], "clicks": [0]}
        ).is_success
    store = tmp_path / "s.db"
    prod, cand = _impressions(store, "prod"), _impressions(store, "cand")
    assert len(prod) == len(cand) == n  # the candidate ranked every request
    for imp in prod.values():
        rec = imp.extra["comparison"]
        logged = cand[rec["impression"]]
        assert rec["shown"] == "production" and rec["page"] == logged.orders[0][:K]
        x = imp.features
        assert logged.orders[0] == np.argsort(-x[:, 1], kind="stable").tolist()
        assert logged.status == "pending"  # never shown: no feedback, nothing learned
    assert client.get("/rankers/cand").json()["rounds"] == 0
    comp = client.get("/rankers/prod/comparison").json()
    assert comp["impressions"] == n and comp["agree_top"]["count"] == agree
    assert comp["off_policy"] is None and "deterministic" in comp["note"]


def test_shadow_off_policy_estimate_is_ips_on_the_logged_propensities(tmp_path: Path) -> None:
    """With a stochastic production ranker (PDGD logs Plackett–Luce prefix probabilities),
    the candidate's clicks@1 estimate is (1/n) Σ [its top = shown top] click@1 / p(top)."""
    c = _client(tmp_path / "s.db")
    c.put("/rankers/prod", json=PDGD)
    c.put("/rankers/cand", json=_fixed(1))
    c.put("/rankers/prod/candidate", json={"ranker": "cand", "mode": "shadow"})
    rng, terms, rewards = np.random.default_rng(2), [], []
    for _ in range(40):
        x = _x(rng)
        out = c.post("/rankers/prod/rank", json={"features": x.tolist()}).json()
        top_c = int(np.argsort(-x[:, 1], kind="stable")[0])
        clicks = [0] if x[out["order"][0], 1] > 0.5 else []  # a user who likes feature 1
        c.post("/rankers/prod/feedback", json={"impression": out["impression"], "clicks": clicks})
        p_top = out["propensities"]["prefix"][0]
        hit = float(bool(clicks))
        terms.append(hit * (out["order"][0] == top_c) / p_top)
        rewards.append(hit)
    est = c.get("/rankers/prod/comparison").json()["off_policy"]["clicks@1"]
    # Same sums in another order: equal to float64 rounding.
    assert est["ips"][0] == pytest.approx(np.mean(terms), rel=1e-12)
    assert est["production"] == pytest.approx(np.mean(rewards), rel=1e-12)
    adv = est["advantage"]
    assert adv["estimate"] == pytest.approx(np.mean(terms) - np.mean(rewards), rel=1e-12)
    assert adv["interval"][0] < adv["estimate"] < adv["interval"][1]


# -- interleaved -----------------------------------------------------------------------


def _team_draft_ok(shown: list[int], team: list[int], a: list[int], b: list[int]) -> bool:
    """Radlinski et al. 2008 §4: each team adds its best item not yet shown, the teams'
    sizes never differ by more than one."""
    seen: set[int] = set()
    for j, (item, side) in enumerate(zip(shown, team, strict=False)):
        best = next(d for d in (a if side == -1 else b) if d not in seen)
        if item != best or abs(sum(team[: j + 1])) > 1:
            return False
        seen.add(item)
    return True


def test_interleaving_share_credit_and_who_learns(tmp_path: Path) -> None:
    c = _client(tmp_path / "s.db")
    c.put("/rankers/prod", json=PDGD)
    c.put("/rankers/cand", json=_fixed(1))
    share, n = 0.3, 150
    c.put("/rankers/prod/candidate", json={"ranker": "cand", "share": share})
    rng = np.random.default_rng(3)
    contexts, sent = [], []
    for t in range(1, n + 1):
        x = _x(rng)
        out = c.post("/rankers/prod/rank", json={"features": x.tolist()}).json()
        click = int(rng.integers(0, K))
        sent.append((out["impression"], click))
        contexts.append(Context(t=t, n_items=M, features=x))
        c.post("/rankers/prod/feedback", json={"impression": out["impression"], "clicks": [click]})
    prod, cand = _impressions(tmp_path / "s.db", "prod"), _impressions(tmp_path / "s.db", "cand")
    mixed = [i for i, _ in sent if "comparison" in prod[i].extra]
    # Which requests are interleaved is Bernoulli(share): a 99.99% binomial interval.
    lo, hi = binom.ppf([5e-5, 1 - 5e-5], n, share)
    assert lo <= len(mixed) <= hi and len(cand) == len(mixed)
    wins = losses = 0
    for imp_id, click in sent:
        rec = prod[imp_id].extra.get("comparison")
        if rec is None:
            continue
        imp, theirs = prod[imp_id], cand[rec["impression"]].orders[0]
        assert rec["shown"] == "interleaved" and sorted(imp.shown) == list(range(M))
        assert _team_draft_ok(imp.shown[:K], rec["team"], imp.orders[0], theirs)
        wins += rec["team"][click] == 1
        losses += rec["team"][click] == -1
    comp = c.get("/rankers/prod/comparison").json()
    assert (comp["wins"], comp["losses"], comp["ties"]) == (wins, losses, 0)
    assert comp["impressions"] == len(mixed)
    assert comp["advantage"]["estimate"] == pytest.approx((wins - losses) / len(mixed))
    lo_q, hi_q = comp["win_rate"]["interval"]
    assert lo_q < wins / (wins + losses) < hi_q
    # Production learned from its own pages only: an in-process PDGD fed those, bit for bit.
    rngs = RunGenerators.from_keys(PDGD["seed"], "learner", "pdgd", reps=[0])
    learner = make_learner("pdgd", PDGD["params"], n_runs=1, rngs=rngs)
    for ctx, (imp_id, click) in zip(contexts, sent, strict=True):
        orders = learner.rank(ctx)
        if "comparison" not in prod[imp_id].extra:
            page = np.zeros((1, K), dtype=bool)
            page[0, click] = True
            learner.update(ctx, orders, ClickFeedback(orders, page))
    served = c.get("/rankers/prod").json()
    assert served["rounds"] == n  # every feedback is a round of the log; not all teach
    assert served["learner"]["weights"] == np.asarray(learner.weights_)[0].tolist()  # type: ignore[attr-defined]
    assert c.get("/rankers/cand").json()["rounds"] == 0  # interleaved pages teach neither


def _run(path: Path, n: int, seed: int) -> tuple[list[list[int]], dict[str, Any]]:
    c = _client(path)
    c.put("/rankers/prod", json=PDGD)
    c.put("/rankers/cand", json=_fixed(1))
    c.put("/rankers/prod/candidate", json={"ranker": "cand", "share": 0.5})
    rng, pages = np.random.default_rng(seed), []
    for _ in range(n):
        out = c.post("/rankers/prod/rank", json={"features": _x(rng).tolist()}).json()
        pages.append(out["order"])
        c.post("/rankers/prod/feedback", json={"impression": out["impression"], "clicks": [1]})
    comp = c.get("/rankers/prod/comparison").json()
    return pages, {k: comp[k] for k in ("wins", "losses", "ties", "advantage", "win_rate")}


def test_the_same_requests_give_the_same_pages_and_comparison(tmp_path: Path) -> None:
    first, again = _run(tmp_path / "a.db", 30, 4), _run(tmp_path / "b.db", 30, 4)
    assert first == again


def test_a_decision_lost_between_its_feedback_and_its_write_is_taken_at_restart(
    tmp_path: Path,
) -> None:
    """The decision row is written right after the feedback that led to it; should the
    process die between the two commits, the restart's fold takes the decision again."""
    path = tmp_path / "s.db"
    body = {"ranker": "cand", "share": 1.0, "rollout": {"min_impressions": 10}}
    rng = np.random.default_rng(6)
    with TestClient(create_app(ServeSettings(store=path, synchronous="NORMAL"))) as c:
        c.put("/rankers/prod", json=_fixed(0))
        c.put("/rankers/cand", json=_fixed(1))
        c.put("/rankers/prod/candidate", json=body)
        for _ in range(300):  # the candidate's column is what users like: promoted early
            if c.get("/rankers/prod/comparison").json()["phase"] != "comparing":
                break
            x = _x(rng)
            out = c.post("/rankers/prod/rank", json={"features": x.tolist()}).json()
            clicks = [j for j in range(K) if x[out["order"][j], 1] > 0.7][:1]
            c.post(
                "/rankers/prod/feedback", json={"impression": out["impression"], "clicks": clicks}
            )
        before = c.get("/rankers/prod/rollout").json()["history"]
    with sqlite3.connect(path) as db:  # as if the process died before the decision's commit
        db.execute("DELETE FROM decisions WHERE kind = 'promote'")
    with TestClient(create_app(ServeSettings(store=path, synchronous="NORMAL"))) as c:
        after = c.get("/rankers/prod/rollout").json()["history"]
        assert c.get("/rankers/prod/comparison").json()["phase"] == "promoted"
    assert [h["kind"] for h in before] == [h["kind"] for h in after] == ["candidate", "promote"]
    keep = ("after_event", "impressions", "wins", "losses", "ties", "estimate", "interval", "rule")
    assert {k: after[1][k] for k in keep} == {k: before[1][k] for k in keep}


# -- kill -9 ---------------------------------------------------------------------------


def _round(client: OltrClient, rng: np.random.Generator) -> None:
    x = _x(rng)
    out = client.rank("prod", x.tolist())
    # The user likes items with a high feature 1: the candidate's column.
    clicks = [j for j in range(K) if x[out["order"][j], 1] > 0.7][:1]
    client.feedback("prod", out["impression"], clicks=clicks)


def test_kill_9_then_restart_gives_the_same_comparison_and_decisions(tmp_path: Path) -> None:
    store, port = tmp_path / "s.db", free_port()
    proc = start_server(store, port)
    client = OltrClient(f"http://127.0.0.1:{port}", timeout=30)
    http = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def get(path: str) -> Any:
        resp = http.get(path)
        assert resp.status_code == 200, resp.text
        return resp.json()

    rng = np.random.default_rng(5)
    rule = {"min_impressions": 20, "margin": 0.0}
    try:
        wait_healthy(client, time.monotonic() + 60)
        client.put_ranker("prod", **_fixed(0))
        client.put_ranker("cand", **_fixed(1))
        body = {"ranker": "cand", "share": 0.6, "rollout": rule}
        assert http.put("/rankers/prod/candidate", json=body).status_code == 201
        for _ in range(90):
            _round(client, rng)
        before = get("/rankers/prod/comparison")
        history = get("/rankers/prod/rollout")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc = start_server(store, port)
        wait_healthy(client, time.monotonic() + 60)
        assert get("/rankers/prod/comparison") == before
        assert get("/rankers/prod/rollout") == history
        _round(client, rng)  # and it goes on
        assert get("/rankers/prod/comparison")["phase"] == before["phase"]
    finally:
        client.close()
        http.close()
        proc.kill()
        proc.wait(timeout=10)
    kinds = [h["kind"] for h in history["history"]]
    assert kinds[:2] == ["candidate", "promote"], kinds  # the clearly better one was promoted
    promote = history["history"][1]
    assert promote["impressions"] >= rule["min_impressions"]
    assert promote["interval"][0] > rule["margin"] and promote["auto"] is True
    assert before["phase"] == "promoted" and before["serving"] == "cand"
    assert math.isfinite(before["advantage"]["estimate"])
