"""Every learner of the catalogue served over real HTTP gives the simulator's result, bit for bit.

For each registered learner, with the feedback it learns from (clicks for the
click learners), a simulated user drives a served ranker over HTTP and the
runner's protocol loop (run_set's keying, rep 0) runs the same learner in
process: the shown lists are the same every round, and the final learner is the
same bit for bit (its whole snapshot: weights, network, generator states,
schedules), restored from the store as a restart would. The per-round measure of
run_set's own trace is that of the served lists. Also here: the propensities the
service logs, checked against exact enumeration of each policy and against
sampling, and the 422 answers of bad click bodies.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

import numpy as np
import pytest
import uvicorn
from scipy import stats

from oltr.build import make_env, make_feedback, make_learner
from oltr.clicks.interleaving import team_draft_interleave
from oltr.clicks.multileaving import probabilistic_multileave
from oltr.client import OltrClient, ServeError
from oltr.experiments.runner import RunSetSpec, run_set
from oltr.feedback import ChoiceFeedback, ClickFeedback, FullFeedback, TopKFeedback
from oltr.random import child_rng
from oltr.registry import LEARNERS
from oltr.serve import ServeSettings, Store, create_app
from oltr.serve.propensities import multileave_prefix, plackett_luce_prefix, team_draft_prefix
from oltr.serve.protocol import RankerDefinition, shown_list
from oltr.serve.rankers import restore
from oltr.serve.state import encode_state
from oltr.types import Context, RunGenerators

SEED, T, D, M = 3, 24, 5, 5
LETOR = ("letor-stream-v1", {"n_queries": 12, "n_features": D, "data_seed": 1})
ITEMS = ("fixed-items-v1", {"n_items": M})
CHOICE = ("ailon-choice-v1", {"n_items": M})
CLICKS = ("clicks", {"click_model": "navigational", "n_grades": 5, "k": 4})


@dataclass(frozen=True)
class Case:
    """One learner setting with the environment and feedback model it learns from."""

    learner: str
    params: dict[str, Any] = field(default_factory=dict)
    env: tuple[str, dict[str, Any]] = LETOR
    feedback: tuple[str, dict[str, Any]] = ("top-k", {"k": 1})


#: Every registered learner (the test below fails when one is added without a case here).
CASES = {
    "rtopk": Case("rtopk", {"surrogate": "squared"}),
    "listnet": Case("listnet", feedback=("full", {})),
    "fixed": Case("fixed", {"feature": 0}),
    "pdgd": Case("pdgd", feedback=CLICKS),
    "pdgd-neural": Case("pdgd-neural", {"hidden": 3}, feedback=CLICKS),
    "p-mgd": Case("p-mgd", {"n_candidates": 4, "k": 3}, feedback=CLICKS),
    "p-dbgd": Case("p-dbgd", {"k": 4}, feedback=CLICKS),
    "td-dbgd": Case("td-dbgd", {"k": 4, "eta": 0.5}, feedback=CLICKS),
    "dbgd": Case("dbgd", feedback=("interleaved-clicks", {"click_model": "navigational", "k": 4})),
    "rtop1f": Case("rtop1f", env=ITEMS),
    "ftpl": Case("ftpl", env=ITEMS, feedback=("full", {})),
    "random": Case("random", env=ITEMS),
    "noop": Case("noop", env=ITEMS),
    "onlinerank": Case("onlinerank", env=CHOICE, feedback=("choice", {})),
    "ailon-fpl": Case("ailon-fpl", env=CHOICE, feedback=("choice", {})),
    "expweights": Case("expweights", env=CHOICE, feedback=("choice", {})),
}


def test_every_registered_learner_has_a_case() -> None:
    assert set(CASES) == set(LEARNERS)


def _definition(case: Case) -> dict[str, Any]:
    n = {"n_features": D} if case.env is LETOR else {"n_items": M}
    return {
        "learner": case.learner,
        "params": case.params,
        "feedback": case.feedback[0],
        "feedback_params": case.feedback[1],
        "seed": SEED,
        "horizon": T,
        **n,
    }


def _user(case: Case) -> tuple[Any, RunGenerators]:
    """The simulated user: the runner's environment stream and feedback stream of rep 0."""
    env = make_env(case.env[0], case.env[1], feedback=make_feedback(*case.feedback))
    env.reset(rng=child_rng(SEED, "env", case.env[0]))
    return env, RunGenerators.from_keys(SEED, "feedback", reps=[0])


def _in_process(case: Case) -> tuple[Any, list[np.ndarray[Any, Any]], list[Any], list[Any]]:
    """The runner's protocol loop (run_set's keying, rep 0): learner, orders, feedback, rounds."""
    env, fb_rngs = _user(case)
    rngs = RunGenerators.from_keys(SEED, "learner", case.learner, reps=[0])
    learner = make_learner(case.learner, case.params, n_runs=1, rngs=rngs, horizon=T)
    orders, feedback, rounds = [], [], []
    for t in range(1, T + 1):
        ctx = env.observe(t)
        o = learner.rank(ctx)
        rounds.append(learner.round_state() if hasattr(learner, "round_state") else None)
        fb = env.feedback(o, fb_rngs)
        learner.update(ctx, o, fb.restrict(learner.requires))
        orders.append(np.asarray(o))
        feedback.append(fb)
    return learner, orders, feedback, rounds


def _plackett_luce(scores: np.ndarray[Any, Any], order: list[int], n: int) -> list[float]:
    """P(first j of ``order``) under Plackett–Luce on ``scores``, term by term (eq. 2)."""
    e = np.exp(scores[np.asarray(order)] - scores.max())
    return list(np.cumprod([e[i] / e[i:].sum() for i in range(n)]))


def _body(fb: Any, served: list[int]) -> dict[str, Any]:
    """What the user reveals over HTTP of the feedback the simulator's user gives."""
    if isinstance(fb, ClickFeedback):
        return {"clicks": np.flatnonzero(fb.clicks[0]).tolist()}
    if isinstance(fb, TopKFeedback):
        return {"labels": fb.labels[0].tolist()}
    if isinstance(fb, FullFeedback):  # grades by shown position
        return {"labels": fb.relevance[0][np.asarray(served)].tolist()}
    if isinstance(fb, ChoiceFeedback):
        return {"chosen": np.flatnonzero(fb.chosen[0]).tolist()}
    raise AssertionError(f"no body for {type(fb).__name__}")


def _duel_clicks(outcome: int, il: Any) -> list[int]:
    """Clicks on the served interleaved page that credit ``outcome``: one item of the winner."""
    if outcome == 0:
        return []
    return [int(np.flatnonzero(il.team == outcome)[0])]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OltrClient, Any]]:
    """A uvicorn server in a thread on an ephemeral port of 127.0.0.1, and its app."""
    store = tmp_path_factory.mktemp("clicks") / "s.db"
    port = _free_port()
    app = create_app(ServeSettings(store=store))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    client = OltrClient(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + 20
    while True:
        try:
            if client.health():
                break
        except Exception:  # not listening yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    yield client, app
    client.close()
    server.should_exit = True
    thread.join(timeout=10)


def _snapshot(learner: Any) -> str:
    return json.dumps(encode_state(learner), sort_keys=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_served_learner_equals_the_runner_bit_for_bit(
    name: str, live: tuple[OltrClient, Any]
) -> None:
    client, app = live
    case = CASES[name]
    defn = _definition(case)
    client.put_ranker(name, **defn)
    expected, ref_orders, ref_feedback, ref_rounds = _in_process(case)
    env, fb_rngs = _user(case)
    duel = ref_orders[0].ndim == 3
    for t in range(1, T + 1):
        ctx = env.observe(t)
        out = client.rank(name, ctx.features)
        served = out["order"]
        if duel:  # the user decides the duel as the simulator's user does ...
            outcome = int(env.feedback(ref_orders[t - 1], fb_rngs).outcome[0])
            assert outcome == int(ref_feedback[t - 1].outcome[0])
            shown, il = shown_list(RankerDefinition(**defn), t, ref_orders[t - 1])
            assert served == shown.tolist()  # ... on the page the service showed
            body: dict[str, Any] = {"clicks": _duel_clicks(outcome, il)}
        else:
            assert served == ref_orders[t - 1][0].tolist(), f"round {t}"
            if name in ("pdgd", "pdgd-neural"):  # the scores this very list was sampled with
                want = _plackett_luce(ref_rounds[t - 1][1][0], served, 4)
                # float64 round-off of two orders of summation over <= 9 terms
                assert out["propensities"]["prefix"] == pytest.approx(want, rel=1e-12)
            body = _body(env.feedback(np.asarray([served]), fb_rngs), served)
        answer = client.feedback(name, out["impression"], **body)
        if duel:
            assert answer["outcome"] == outcome
    info = client.ranker(name)
    assert info["rounds"] == T
    if hasattr(type(expected), "weights_"):
        assert info["learner"]["weights"] == np.asarray(expected.weights_)[0].tolist()
    db = app.state.store  # read while the ranker is idle: every write is committed
    logged = [np.asarray(imp.orders) for imp in _impressions(db, name)]
    again = restore(db, name, RankerDefinition(**defn), snapshot_every=10**9)
    assert _snapshot(app.state.rankers.get(name).learner) == _snapshot(expected)
    assert all(np.array_equal(a, b) for a, b in zip(logged, ref_orders, strict=True))
    assert _snapshot(again.learner) == _snapshot(expected)  # the whole state, bit for bit


def _impressions(db: Store, name: str) -> list[Any]:
    ids = [e.impression for e in db.events(name) if e.kind == "rank"]
    return [db.impression(name, i) for i in ids]


def test_run_sets_trace_is_that_of_the_served_lists(live: tuple[OltrClient, Any]) -> None:
    """run_set itself (not a copy of its loop) measures the lists the served PDGD showed."""
    client, app = live
    case = CASES["pdgd"]
    name = "pdgd-trace"
    client.put_ranker(name, **_definition(case))
    env, fb_rngs = _user(case)
    served_ndcg = []
    for t in range(1, T + 1):
        ctx = env.observe(t)
        out = client.rank(name, ctx.features)
        order = np.asarray([out["order"]])
        served_ndcg.append(float(env.evaluate(order, ("ndcg@10",))["ndcg@10"][0]))
        client.feedback(name, out["impression"], **_body(env.feedback(order, fb_rngs), []))
    spec = RunSetSpec(
        env=case.env[0],
        env_params=case.env[1],
        feedback=case.feedback[0],
        feedback_params=case.feedback[1],
        learner=case.learner,
        learner_params=case.params,
        reps=(0,),
        seed=SEED,
        horizon=T,
        measures=("ndcg@10",),
        checkpoints=tuple(range(1, T + 1)),
    )
    trace = run_set(spec)
    assert trace["ndcg@10"].tolist() == served_ndcg
    assert len(set(served_ndcg)) > 1  # the lists changed from round to round


# -- bad click bodies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clicks", "message"),
    [
        ([4], "clicks must be distinct integers in 0..3, got [4]"),
        ([1, 1], "clicks must be distinct integers in 0..3, got [1, 1]"),
        ([-1], "clicks must be distinct integers in 0..3, got [-1]"),
        (None, "clicks must be a list of integer positions"),
    ],
)
def test_bad_clicks_are_refused_with_422(
    clicks: Any, message: str, live: tuple[OltrClient, Any]
) -> None:
    client, _ = live
    name = "pdgd-bad"
    client.put_ranker(name, **_definition(CASES["pdgd"]))
    out = client.rank(name, np.random.default_rng(0).random((6, D)))
    body = {} if clicks is None else {"clicks": clicks}
    with pytest.raises(ServeError) as err:
        client.feedback(name, out["impression"], **body)
    assert err.value.status == 422 and err.value.detail == message
    assert client.feedback(name, out["impression"], clicks=[0, 3])["round"] >= 1


def test_out_of_order_clicks_learn_from_each_lists_own_round(
    live: tuple[OltrClient, Any],
) -> None:
    """Lists answered in reverse order: each update uses the scores its list was sampled with,
    and a restart (replay of the log) reaches the same learner."""
    client, app = live
    case = CASES["p-mgd"]
    name = "pmgd-reverse"
    defn = _definition(case)
    client.put_ranker(name, **defn)
    rng = np.random.default_rng(7)
    xs = [rng.random((6, D)) for _ in range(5)]
    outs = [client.rank(name, x) for x in xs]
    for out in outs[::-1]:
        client.feedback(name, out["impression"], clicks=[0, 1])
    rngs = RunGenerators.from_keys(SEED, "learner", case.learner, reps=[0])
    learner = make_learner(case.learner, case.params, n_runs=1, rngs=rngs, horizon=T)

    ctxs = [Context(t=t, n_items=6, features=x) for t, x in enumerate(xs, start=1)]
    rounds = []
    for ctx in ctxs:
        o = learner.rank(ctx)
        rounds.append((o, learner.round_state()))  # type: ignore[attr-defined]
    for ctx, (o, state) in list(zip(ctxs, rounds, strict=True))[::-1]:
        learner.resume_round(state)  # type: ignore[attr-defined]
        learner.update(ctx, o, ClickFeedback(o, np.array([[True, True, False, False]])))
    served = client.ranker(name)["learner"]["weights"]
    assert served == np.asarray(learner.weights_)[0].tolist()  # type: ignore[attr-defined]
    again = restore(app.state.store, name, RankerDefinition(**defn), snapshot_every=10**9)
    assert _snapshot(again.learner) == _snapshot(learner)


# -- propensities: exact enumeration and sampling ----------------------------------------------


def test_plackett_luce_prefix_sums_to_one_and_matches_the_gumbel_sampler() -> None:
    scores = np.array([0.3, -1.2, 2.0, 0.0])
    lists = list(permutations(range(4)))
    probs = [plackett_luce_prefix(scores, np.array(o), 4)[-1] for o in lists]
    assert sum(probs) == pytest.approx(1.0, abs=1e-12)  # float sums of 24 terms
    # prefix j is the marginal of the first j positions: sum over the completions
    p2 = sum(p for o, p in zip(lists, probs, strict=True) if o[:2] == (2, 0))
    assert plackett_luce_prefix(scores, np.array([2, 0, 1, 3]), 2)[1] == pytest.approx(p2)
    # PDGD's sampler (Gumbel-max on the same scores): chi-square at alpha = 0.001
    rng = np.random.default_rng(11)
    n = 20_000
    u = rng.random((n, 4))
    drawn = np.argsort(-(scores - np.log(-np.log1p(-u))), axis=1, kind="stable")
    index = {o: i for i, o in enumerate(lists)}
    counts = np.bincount([index[tuple(r)] for r in drawn.tolist()], minlength=24)
    assert stats.chisquare(counts, np.asarray(probs) * n).pvalue > 1e-3


def test_team_draft_prefix_is_the_frequency_of_the_interleaver() -> None:
    a, b = np.array([0, 1, 2, 3, 4]), np.array([2, 4, 0, 1, 3])
    k, n = 5, 4000
    pages: dict[tuple[int, ...], int] = {}
    for s in range(n):
        page = tuple(team_draft_interleave(a, b, k=k, rng=s).shown.tolist())
        pages[page] = pages.get(page, 0) + 1
    probs = {p: team_draft_prefix(a, b, np.array(p))[-1] for p in pages}
    assert sum(probs.values()) == pytest.approx(1.0)  # every page that can be drawn was drawn
    observed = np.array([pages[p] for p in probs])
    assert stats.chisquare(observed, np.array(list(probs.values())) * n).pvalue > 1e-3


def test_multileave_prefix_sums_to_one_and_matches_the_multileaver() -> None:
    ranks = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]])
    pages = list(permutations(range(4), 2))
    probs = [multileave_prefix(ranks, np.array(p), 2.0)[-1] for p in pages]
    assert sum(probs) == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(5)
    n = 20_000
    shown, _ = probabilistic_multileave(
        np.broadcast_to(ranks, (n, 3, 4)), rng.random((n, 2, 2)), k=2, tau=2.0
    )
    index = {p: i for i, p in enumerate(pages)}
    counts = np.bincount([index[tuple(r)] for r in shown.tolist()], minlength=len(pages))
    assert stats.chisquare(counts, np.asarray(probs) * n).pvalue > 1e-3


def test_logged_propensities_are_those_of_the_policy(live: tuple[OltrClient, Any]) -> None:
    """PDGD logs the Plackett–Luce prefix of the scores it sampled with; P-MGD the multileave
    prefix whose per-position posterior is the one the learner credits clicks with."""
    client, app = live
    x = np.random.default_rng(2).random((7, D))
    for name in ("pdgd", "p-mgd", "td-dbgd"):
        case = CASES[name]
        client.put_ranker(f"{name}-p", **_definition(case))
        out = client.rank(f"{name}-p", x)
        props = out["propensities"]
        assert len(props["prefix"]) == 4 and props["list"] == props["prefix"][-1]
        assert all(0 < p <= 1 for p in props["prefix"])
        assert all(a >= b for a, b in zip(props["prefix"], props["prefix"][1:], strict=False))
        rngs = RunGenerators.from_keys(SEED, "learner", case.learner, reps=[0])
        learner = make_learner(case.learner, case.params, n_runs=1, rngs=rngs, horizon=T)

        order = learner.rank(Context(t=1, n_items=7, features=x))
        assert out["order"] == order[0].tolist()
        state = learner.round_state()  # type: ignore[attr-defined]
        if name == "pdgd":  # first round: w = 0, every list of 7 equally likely
            assert props["method"] == "plackett-luce"
            assert props["prefix"] == pytest.approx([1 / 7, 1 / 42, 1 / 210, 1 / 840], rel=1e-12)
        elif name == "td-dbgd":  # w = 0 (index order) against the candidate δ u
            a = np.arange(7)
            b = np.argsort(-(x @ state[1][0, 0]), kind="stable")
            assert props["method"] == "team-draft"
            assert props["prefix"] == team_draft_prefix(a, b, np.asarray(out["order"][:4]))
        else:
            assert props["method"] == "probabilistic"
            # w = 0: the rankers are 0 and the candidates δ u_j; ranks by their scores
            u = state[1][0]
            rankers = np.vstack([np.zeros(D), case.params.get("delta", 1.0) * u])
            ranks = np.argsort(np.argsort(-(x @ rankers.T), axis=0, kind="stable"), axis=0).T
            tau, page = 3.0, order[0, :3]
            want = multileave_prefix(ranks, page, tau)
            assert props["prefix"][:3] == pytest.approx(want, rel=1e-12)  # float64 round-off
            assert props["prefix"][3] == props["prefix"][2]  # below the page: own order
            # the same rankers give the posterior the learner credits clicks with
            w = (ranks + 1.0) ** -tau
            for t, d in enumerate(page):
                q = w[:, d] / w.sum(axis=1)
                assert state[2][0, t] == pytest.approx(q / q.sum(), rel=1e-12)
                w[:, d] = 0.0
