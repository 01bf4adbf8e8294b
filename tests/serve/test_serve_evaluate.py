"""Judging a candidate off-policy from a served PDGD's log: ``POST …/evaluate`` and ``oltr replay``.

A served PDGD (clicks feedback), started from a linear model and learning
slowly, is driven over HTTP by a simulated user whose clicks follow a
position-based model (Craswell et al. 2008) on synthetic queries. The test
keeps everything the HTTP answers said (pages, logged prefix probabilities,
the clicks it sent, the ranker's weights before each round) and builds the
estimators' inputs from them independently of :mod:`oltr.serve.evaluation`;
the service's numbers must equal those of the pure estimators on these
arrays. Each candidate's true value on the logged contexts is exact: the
PBM's expected clicks of its deterministic list. The statistical coverage of
the intervals is tested in ``tests/estimators/test_offpolicy_coverage.py``;
here one fixed seed checks the plumbing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oltr.cli import app as cli
from oltr.clicks.position_based import PositionBasedClickModel
from oltr.estimators.loggedlists import logged_lists, metric_rewards
from oltr.estimators.offpolicy import cascade_dr, ips, pbm_ips, snips
from oltr.estimators.rankingpolicy import (
    cross_fitted_baselines,
    gather_marginals,
    plackett_luce_marginals,
)
from oltr.learners.counterfactual import RankingModel, make_scorer, save_model
from oltr.serve import ServeSettings, create_app

SEED, Q, M, D, K, T = 13, 30, 6, 4, 4, 1000
W_TRUE = np.array([1.0, 0.6, -0.5, 0.2])
PBM = PositionBasedClickModel((0.05, 0.4, 0.9), eta=1.0)
CLICKS = {"click_model": "perfect", "n_grades": 3, "k": K}


@dataclass
class Served:
    """The service, the store, the model files and everything the HTTP answers said."""

    client: TestClient
    store: Path
    files: dict[str, Path]
    weights: dict[str, np.ndarray[Any, Any]]
    x: np.ndarray[Any, Any]  # (Q, M, D) the queries' features
    grades: np.ndarray[Any, Any]  # (Q, M)
    q: np.ndarray[Any, Any]  # (T,) the query of each round
    pages: np.ndarray[Any, Any]  # (T, K) shown
    prefix: np.ndarray[Any, Any]  # (T, K) logged prefix probabilities
    clicks: np.ndarray[Any, Any]  # (T, K)
    logger_w: np.ndarray[Any, Any]  # (T, D) the logger's weights before each round


def _model(path: Path, w: np.ndarray[Any, Any]) -> Path:
    return save_model(RankingModel(make_scorer("linear", w.size), np.asarray(w), "ips"), path)


def _pdgd(**more: Any) -> dict[str, Any]:
    # normalize false: the estimators below score the features as sent, and so must the log
    return {"learner": "pdgd", "feedback": "clicks", "feedback_params": CLICKS, "n_features": D,
            "normalize": False, **more}  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    tmp = tmp_path_factory.mktemp("evaluate")
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((Q, M, D))
    grades = np.digitize(x @ W_TRUE, [-0.3, 0.8])
    near = {
        "logger": 2.5 * W_TRUE,
        "model": W_TRUE + np.array([0.0, 0.0, 0.0, 0.5]),
        "fixed": W_TRUE + np.array([0.3, -0.3, 0.0, 0.0]),
        "definition": W_TRUE + np.array([0.0, 0.4, 0.2, -0.2]),
    }
    files = {k: _model(tmp / f"{k}.json", w) for k, w in near.items()}
    files["wrong"] = _model(tmp / "wrong.json", np.ones(D + 1))
    store = tmp / "s.db"
    c = TestClient(create_app(ServeSettings(store=store, synchronous="NORMAL")))
    put = c.put("/rankers/p", json=_pdgd(params={"eta": 0.02}, init=str(files["logger"])))
    assert put.status_code == 201, put.text
    assert c.put("/rankers/fixed", json=_pdgd(init=str(files["fixed"]))).status_code == 201
    qs, pages, prefix, clicks, logger_w = [], [], [], [], []
    for _ in range(T):
        q = int(rng.integers(Q))
        logger_w.append(c.get("/rankers/p").json()["learner"]["weights"])
        out = c.post("/rankers/p/rank", json={"features": x[q].tolist()}).json()
        page = np.asarray(out["order"][:K])
        hit = rng.random(K) < PBM.click_probabilities(grades[q][page])
        body = {"impression": out["impression"], "clicks": np.flatnonzero(hit).tolist()}
        assert c.post("/rankers/p/feedback", json=body).status_code == 200
        qs.append(q), pages.append(page), clicks.append(hit.astype(float))  # type: ignore[func-returns-value]
        prefix.append(out["propensities"]["prefix"])
    pending = c.post("/rankers/p/rank", json={"features": x[0].tolist()})  # never answered
    assert pending.status_code == 200
    return Served(
        c, store, files, near, x, grades, np.asarray(qs), np.asarray(pages),
        np.asarray(prefix), np.asarray(clicks), np.asarray(logger_w),
    )  # fmt: skip


def _orders(s: Served, w: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.argsort(-(s.x[s.q] @ w), axis=1, kind="stable")  # (T, M); no ties with these data


def _true_clicks(s: Served, orders: np.ndarray[Any, Any]) -> float:
    """Exact PBM expected clicks of each deterministic list, averaged over the logged rounds."""
    g = np.take_along_axis(s.grades[s.q], orders[:, :K], axis=1)
    return float(PBM.click_probabilities(g).sum(axis=1).mean())


def _evaluate(s: Served, candidate: dict[str, Any], **more: Any) -> dict[str, Any]:
    resp = s.client.post("/rankers/p/evaluate", json={"candidate": candidate, **more})
    assert resp.status_code == 200, resp.text
    out: dict[str, Any] = resp.json()
    return out


def _by_name(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["estimator"]: e for e in out["estimates"]}


def test_estimates_equal_the_pure_estimators_on_arrays_built_from_the_answers(
    served: Served,
) -> None:
    s = served
    out = _evaluate(s, {"model": str(s.files["model"])})
    assert out["impressions"] == T and out["skipped"]["pending"] == 1
    log = logged_lists(s.pages, s.clicks)
    sigma = _orders(s, s.weights["model"])
    target_prefix = np.cumprod(sigma[:, :K] == s.pages, axis=1).astype(float)
    target_marg = (sigma[:, :K] == s.pages).astype(float)
    scores = np.einsum("tmd,td->tm", s.x[s.q], s.logger_w)  # the logger's scores, each round
    logging_marg = gather_marginals(plackett_luce_marginals(scores, K, method="exact"), log)
    first: dict[int, int] = {}  # a query's id: its order of first appearance in the log
    qid = np.array([first.setdefault(int(v), len(first)) for v in s.q])
    q_logged, q_target = cross_fitted_baselines(
        qid, log, metric_rewards(log, "clicks"), sigma, n_queries=int(qid.max()) + 1, n_items=M
    )
    expect = {
        "ips": ips(log, logging_prob=s.prefix, target_prob=target_prefix),
        "snips": snips(log, logging_prob=s.prefix, target_prob=target_prefix),
        "pbm-ips": pbm_ips(log, logging_marginals=logging_marg, target_marginals=target_marg),
        "cascade-dr": cascade_dr(
            log, logging_prefix_prob=s.prefix, target_prefix_prob=target_prefix,
            q_logged=q_logged, q_target=q_target,
        ),
    }  # fmt: skip
    got = _by_name(out)
    assert list(got) == list(expect)
    for name, e in expect.items():
        # Same inputs bit for bit (JSON floats round-trip) except the logger's scores, which the
        # service has from the learner and the test from X w: equal to ~1e-15 relative.
        tol = 1e-12 if name != "pbm-ips" else 1e-9
        assert got[name]["value"] == pytest.approx(e.value, rel=tol), name
        assert got[name]["matched"] == e.matched, name
        if name != "pbm-ips":  # the bootstrap of terms equal in every bit: the same interval
            assert (got[name]["ci_low"], got[name]["ci_high"]) == pytest.approx(
                (e.ci_low, e.ci_high), rel=tol
            ), name
    on = out["on_policy"]
    assert on["value"] == pytest.approx(s.clicks.sum(axis=1).mean(), rel=1e-12)


@pytest.mark.parametrize(
    ("candidate", "weights"),
    [
        ({"ranker": "fixed"}, "fixed"),
        ("model", "model"),
        ("definition", "definition"),
    ],
)
def test_each_interval_covers_the_exact_value_of_the_candidate(
    served: Served, candidate: Any, weights: str
) -> None:
    s = served
    if candidate == "model":
        candidate = {"model": str(s.files["model"])}
    elif candidate == "definition":
        candidate = {"definition": _pdgd(init=str(s.files["definition"]))}
    truth = _true_clicks(s, _orders(s, s.weights[weights]))
    # Twelve intervals (3 candidates x 4 estimators) on the same clicks: at 1 - 0.05/12 each, the
    # chance that any misses is at most 5% (union bound) when each is calibrated; the coverage
    # itself is tested with many seeds in the estimators' tests. One fixed seed here.
    out = _evaluate(s, candidate, alpha=0.05 / 12)
    assert out["alpha"] == pytest.approx(0.05 / 12)
    assert set(_by_name(out)) == {"ips", "snips", "pbm-ips", "cascade-dr"}
    for name, e in _by_name(out).items():
        assert e["ci_low"] <= truth <= e["ci_high"], (name, truth, e)
    assert out["unavailable"] == {}


def test_the_loggers_own_argmax_is_valued_near_its_on_policy_value(served: Served) -> None:
    s = served
    w_end = np.asarray(s.client.get("/rankers/p").json()["learner"]["weights"])
    out = _evaluate(s, {"ranker": "p"}, estimators=["snips", "cascade-dr"])
    scores = np.einsum("tmd,td->tm", s.x[s.q], s.logger_w)
    marg = plackett_luce_marginals(scores, K, method="exact")  # (T, M, K)
    attract = np.asarray(PBM.attractiveness)[s.grades[s.q]]  # (T, M)
    on_truth = float(np.einsum("tmk,tm,k->t", marg, attract, PBM.examination(K)).mean())
    argmax_truth = _true_clicks(s, _orders(s, w_end))
    # The logger plays a peaked Plackett-Luce policy around the same weights: its argmax's exact
    # value is within 0.1 clicks of its own (so "near" below is a property of the data).
    assert abs(argmax_truth - on_truth) < 0.1
    on = out["on_policy"]
    assert on["ci_low"] <= on_truth <= on["ci_high"]
    for name, e in _by_name(out).items():
        assert abs(e["value"] - on["value"]) < 0.15, (name, e, on)
        assert e["ci_low"] <= argmax_truth <= e["ci_high"], (name, argmax_truth, e)


def test_metrics_and_intervals_the_estimators_refuse_are_listed_as_unavailable(
    served: Served,
) -> None:
    s = served
    cand = {"model": str(s.files["model"])}
    out = _evaluate(s, cand, metric="ctr@2")
    assert "pbm-ips" in out["unavailable"] and "pbm-ips" not in _by_name(out)
    out = _evaluate(s, cand, estimators=["ips", "snips"], interval="bernstein")
    assert _by_name(out)["ips"]["interval"] == "bernstein" and "snips" in out["unavailable"]
    resp = s.client.post(
        "/rankers/p/evaluate",
        json={"candidate": cand, "estimators": ["snips"], "interval": "bernstein"},
    )
    assert resp.status_code == 422 and "no estimator" in resp.json()["detail"]


def test_cli_prints_the_same_numbers_as_the_endpoint(served: Served) -> None:
    s = served
    runner = CliRunner()
    for spec, body in (
        (str(s.files["model"]), {"model": str(s.files["model"])}),
        ("fixed", {"ranker": "fixed"}),
    ):
        result = runner.invoke(
            cli, ["replay", str(s.store), "--ranker", "p", "--candidate", spec, "--json"]
        )
        assert result.exit_code == 0, result.output
        printed = json.loads(result.output)
        served_out = _evaluate(s, body)
        assert printed["estimates"] == served_out["estimates"]
        assert printed["on_policy"] == served_out["on_policy"]
    definition = s.store.parent / "candidate-definition.json"
    definition.write_text(json.dumps(_pdgd(init=str(s.files["definition"]))))
    result = runner.invoke(
        cli,
        ["replay", str(s.store), "--ranker", "p", "--candidate", str(definition),
         "--estimator", "ips", "--metric", "dcg@3"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "logged (on-policy)" in result.output and "ips" in result.output
    served_out = _evaluate(
        s, {"definition": _pdgd(init=str(s.files["definition"]))}, estimators=["ips"],
        metric="dcg@3",
    )  # fmt: skip
    assert f"{_by_name(served_out)['ips']['value']:.4f}" in result.output


def test_errors_name_the_ranker_and_the_reason(served: Served) -> None:
    s = served
    c = s.client
    cand = {"model": str(s.files["model"])}
    resp = c.post("/rankers/nobody/evaluate", json={"candidate": cand})
    assert resp.status_code == 404 and "nobody" in resp.json()["detail"]
    resp = c.post("/rankers/p/evaluate", json={"candidate": {"ranker": "nobody"}})
    assert resp.status_code == 404 and "nobody" in resp.json()["detail"]
    resp = c.post("/rankers/p/evaluate", json={"candidate": {"model": str(s.files["wrong"])}})
    assert resp.status_code == 422
    assert f"{D + 1} features" in resp.json()["detail"] and f"logged {D}" in resp.json()["detail"]
    resp = c.post("/rankers/p/evaluate", json={"candidate": cand, "surprise": 1})
    assert resp.status_code == 422
    # A deterministic ranker logs no propensities: nothing it did not show can be judged.
    body = {"learner": "fixed", "params": {"feature": 0}, "n_features": D, "normalize": False}
    assert c.put("/rankers/det", json=body).status_code == 201
    for q in range(3):
        out = c.post("/rankers/det/rank", json={"features": s.x[q].tolist()}).json()
        fb = {"impression": out["impression"], "labels": [1.0]}
        assert c.post("/rankers/det/feedback", json=fb).status_code == 200
    resp = c.post("/rankers/det/evaluate", json={"candidate": cand})
    detail = resp.json()["detail"]
    assert resp.status_code == 422 and "'det'" in detail and "no propensities" in detail
    runner = CliRunner()
    for args, needle in (
        (["--ranker", "det", "--candidate", str(s.files["model"])], "no propensities"),
        (["--ranker", "nobody", "--candidate", str(s.files["model"])], "nobody"),
        (["--ranker", "p", "--candidate", str(s.files["wrong"])], f"logged {D}"),
        (["--ranker", "p", "--candidate", "no-such-thing"], "neither a ranker"),
    ):
        result = runner.invoke(cli, ["replay", str(s.store), *args])
        assert result.exit_code == 2 and needle in result.output, (args, result.output)
