"""``oltr logs export``: a served ranker's impressions become a click log and its data file.

End to end: a real in-process service ranks and takes feedback, the store is
exported (while the service runs, holding its lock, and again after it stopped),
and the files read back and bind to the same shown lists, clicks and features.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from oltr.data.letor import load_letor
from oltr.errors import InputError
from oltr.logs.binding import bind
from oltr.logs.io import read_log
from oltr.logs.schema import ClickLog
from oltr.serve import ServeSettings, create_app
from oltr.serve.export import export_log
from oltr.serve.storecheck import StoreOpenError, store_problems

D = 4
DUEL = {
    "learner": "dbgd",
    "params": {"delta": 1.0, "gamma": 0.1},
    "feedback": "interleaved-clicks",
    "feedback_params": {"k": 5, "method": "team_draft"},
    "n_features": D,
    "normalize": False,  # the log holds the features as sent
    "seed": 3,
}
RTOPK = {
    "learner": "rtopk",
    "params": {"surrogate": "squared", "gamma": 0.3, "eta": 0.1},
    "feedback": "top-k",
    "feedback_params": {"k": 2},
    "n_features": D,
    "normalize": False,
    "seed": 1,
}
CHOICE = {"learner": "random", "feedback": "choice", "n_features": D, "normalize": False, "seed": 2}


def _rounds(
    c: TestClient, name: str, n: int, feedback: Any, rng: np.random.Generator, skip: int = 0
) -> list[dict[str, Any]]:
    """``n`` rank requests of 4 to 7 candidates; feedback for all but the last ``skip``.

    Returns, per round: the features sent, the response, and the feedback body (or None).
    """
    out = []
    for i in range(n):
        x = rng.standard_normal((int(rng.integers(4, 8)), D))
        resp = c.post(f"/rankers/{name}/rank", json={"features": x.tolist()})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        fb = None
        if i < n - skip:
            fb = feedback(body["order"], rng)
            done = c.post(
                f"/rankers/{name}/feedback", json={"impression": body["impression"], **fb}
            )
            assert done.status_code == 200, done.text
        out.append({"x": x, "answer": body, "feedback": fb})
    return out


def _clicked_positions(order: list[int], rng: np.random.Generator) -> dict[str, Any]:
    return {
        "clicks": sorted(
            rng.choice(len(order), size=int(rng.integers(0, 3)), replace=False).tolist()
        )
    }


def _check_round_trip(log_path: Path, data_path: Path, rounds: list[dict[str, Any]]) -> None:
    """The exported files hold exactly the rounds with feedback: lists, clicks, features."""
    log, dataset = read_log(log_path), load_letor(data_path, cache=False)
    bound = bind(log, dataset)
    done = [r for r in rounds if r["feedback"] is not None]
    assert log.n_impressions == len(done)
    assert log.qids.tolist() == [str(t) for t in range(1, len(done) + 1)]
    assert set(log.loggers.tolist()) == {"d"}
    assert (dataset.relevance == 0).all()
    for i, r in enumerate(done):
        _, docs, clicks = log.impression(i)
        assert docs.tolist() == r["answer"]["order"]
        want = np.zeros(len(docs), dtype=np.int8)
        want[r["feedback"]["clicks"]] = 1
        assert clicks.tolist() == want.tolist()
        # The data file holds the candidates as sent, bit for bit; the log's docs index them.
        x, _ = dataset.query(int(bound.query_index[i]))
        assert np.array_equal(x, r["x"])
        rows = bound.rows[log.offsets[i] : log.offsets[i + 1]]
        assert np.array_equal(dataset.features[rows], r["x"][docs])
    _check_propensities(log, [r["answer"] for r in done])


def _check_propensities(log: ClickLog, answers: list[dict[str, Any]]) -> None:
    """A row's propensity is the logged probability of its shown list, when every row has one."""
    lengths = log.list_lengths.tolist()
    logged = [a["propensities"].get("prefix", []) for a in answers]
    if all(len(p) >= n for p, n in zip(logged, lengths, strict=True)):
        assert log.propensities is not None
        assert log.propensities.tolist() == [p[n - 1] for p, n in zip(logged, lengths, strict=True)]
    else:
        assert log.propensities is None


def test_export_while_serving_and_after_round_trips(tmp_path: Path) -> None:
    store, rng = tmp_path / "s.db", np.random.default_rng(0)
    with TestClient(create_app(ServeSettings(store=store))) as c:
        assert c.put("/rankers/d", json=DUEL).status_code == 201
        rounds = _rounds(c, "d", 12, _clicked_positions, rng, skip=2)
        # The service holds the store's lock; the export reads beside it.
        summary = export_log(store, "d", tmp_path / "live.parquet", tmp_path / "live.txt")
        assert (summary.impressions, summary.pending, summary.expired) == (10, 2, 0)
        assert summary.n_features == D
        _check_round_trip(tmp_path / "live.parquet", tmp_path / "live.txt", rounds)
        # The service goes on undisturbed after the export.
        more = _rounds(c, "d", 2, _clicked_positions, rng)
    assert store_problems(store, deep=True) == []
    # Feedback for the first two of the later rounds only: the two pending ones stay left out.
    export_log(store, "d", tmp_path / "after.jsonl.gz", tmp_path / "after.txt.gz")
    log = read_log(tmp_path / "after.jsonl.gz")
    assert log.n_impressions == 12
    done = [r for r in rounds if r["feedback"] is not None] + more
    assert [log.impression(i)[1].tolist() for i in range(12)] == [
        r["answer"]["order"] for r in done
    ]
    assert log.qids.tolist() == [str(t) for t in [*range(1, 11), 13, 14]]


def test_labels_are_refused_unless_counted_as_clicks_with_their_propensity(
    tmp_path: Path,
) -> None:
    store, rng = tmp_path / "s.db", np.random.default_rng(1)

    def labels(order: list[int], rng: np.random.Generator) -> dict[str, Any]:
        return {"labels": rng.integers(0, 3, size=2).astype(float).tolist()}

    with TestClient(create_app(ServeSettings(store=store))) as c:
        assert c.put("/rankers/r", json=RTOPK).status_code == 201
        rounds = _rounds(c, "r", 6, labels, rng)
    with pytest.raises(InputError, match="feedback kind 'top-k'.*--labels-as-clicks"):
        export_log(store, "r", tmp_path / "l.jsonl", tmp_path / "l.txt")
    assert not (tmp_path / "l.jsonl").exists()
    summary = export_log(
        store, "r", tmp_path / "l.jsonl", tmp_path / "l.txt", labels_as_clicks=True
    )
    assert summary.propensities
    log = read_log(tmp_path / "l.jsonl")
    bind(log, load_letor(tmp_path / "l.txt", cache=False))
    for i, r in enumerate(rounds):
        _, docs, clicks = log.impression(i)
        # Only the two revealed positions; their logged probability is that of the prefix.
        assert docs.tolist() == r["answer"]["order"][:2]
        assert clicks.tolist() == [int(g > 0) for g in r["feedback"]["labels"]]
        assert log.propensities[i] == r["answer"]["propensities"]["prefix"][1]


def test_chosen_items_are_clicks_at_their_positions(tmp_path: Path) -> None:
    store, rng = tmp_path / "s.db", np.random.default_rng(2)

    def chosen(order: list[int], rng: np.random.Generator) -> dict[str, Any]:
        return {"chosen": rng.choice(len(order), size=2, replace=False).tolist()}

    with TestClient(create_app(ServeSettings(store=store))) as c:
        assert c.put("/rankers/c", json=CHOICE).status_code == 201
        rounds = _rounds(c, "c", 5, chosen, rng)
    export_log(store, "c", tmp_path / "c.parquet", tmp_path / "c.txt")
    log = read_log(tmp_path / "c.parquet")
    for i, r in enumerate(rounds):
        _, docs, clicks = log.impression(i)
        assert docs.tolist() == r["answer"]["order"]
        assert set(docs[clicks == 1].tolist()) == set(r["feedback"]["chosen"])


def test_a_click_models_page_is_the_shown_list(tmp_path: Path) -> None:
    store, rng = tmp_path / "s.db", np.random.default_rng(3)
    pdgd = {
        "learner": "pdgd",
        "feedback": "clicks",
        "feedback_params": {"click_model": "navigational", "k": 3},
        "n_features": D,
        "normalize": False,
    }

    def page_clicks(order: list[int], rng: np.random.Generator) -> dict[str, Any]:
        return {
            "clicks": sorted(rng.choice(3, size=int(rng.integers(0, 3)), replace=False).tolist())
        }

    with TestClient(create_app(ServeSettings(store=store))) as c:
        assert c.put("/rankers/p", json=pdgd).status_code == 201
        rounds = _rounds(c, "p", 6, page_clicks, rng)
    export_log(store, "p", tmp_path / "p.parquet", tmp_path / "p.txt")
    log = read_log(tmp_path / "p.parquet")
    bind(log, load_letor(tmp_path / "p.txt", cache=False))
    for i, r in enumerate(rounds):
        _, docs, clicks = log.impression(i)
        # The page is the first k = 3 of the order (of 4 to 7 candidates): nothing below was seen.
        assert docs.tolist() == r["answer"]["order"][:3]
        assert np.flatnonzero(clicks).tolist() == r["feedback"]["clicks"]
    _check_propensities(log, [r["answer"] for r in rounds])


def test_what_cannot_be_exported_is_refused_by_name(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with TestClient(create_app(ServeSettings(store=store))) as c:
        fixed = {"learner": "onlinerank", "feedback": "choice", "n_items": 4, "horizon": 100}
        assert c.put("/rankers/items", json=fixed).status_code == 201
        assert c.put("/rankers/d", json=DUEL).status_code == 201
        c.post("/rankers/d/rank", json={"features": [[0.0] * D] * 3})
    out, data = tmp_path / "o.jsonl", tmp_path / "o.txt"
    with pytest.raises(InputError, match=r"no ranker 'nope'; it has \['d', 'items'\]"):
        export_log(store, "nope", out, data)
    with pytest.raises(InputError, match="fixed set of 4 items without features"):
        export_log(store, "items", out, data)
    with pytest.raises(InputError, match=r"no impression with feedback yet \(1 pending"):
        export_log(store, "d", out, data)
    with pytest.raises(InputError, match=r"\.parquet, \.jsonl or \.jsonl\.gz"):
        export_log(store, "d", tmp_path / "o.csv", data)
    with pytest.raises(StoreOpenError, match="does not exist"):
        export_log(tmp_path / "absent.db", "d", out, data)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(("o.", ".o"))) == []
