"""The numbers behind ``/ui`` (``GET /stats``, ``GET /rankers/{name}/stats``) and the page's files.

The statistics are checked against what the test itself sent: a seeded user
sends labels, choices or clicks, and the expected counts by position and the
quality of each bucket are computed here from those requests and the shown
lists the service answered, independently of :mod:`oltr.serve.stats`.
"""

from __future__ import annotations

import fnmatch
import hashlib
import math
import re
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

import oltr.serve.stats as stats_module
from oltr.serve import ServeSettings, create_app
from oltr.serve.ui import ASSETS, UI_OPEN_PATHS

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "oltr" / "serve" / "static"
D = 4  # features of the linear rankers
# The sums of the service and of this test add the same terms in another order: they agree to
# a few ulps per term; 1e-12 relative is far above that for these few hundred terms of size ≤ 15.
REL = 1e-12

DEFINITIONS = {
    "labels": {
        "learner": "rtopk",
        "params": {"surrogate": "squared"},
        "feedback": "top-k",
        "feedback_params": {"k": 3},
        "n_features": D,
        "horizon": 1000,
        "seed": 3,
    },
    "choice": {
        "learner": "onlinerank",
        "params": {"n_chosen": 2},
        "feedback": "choice",
        "n_items": 6,
        "horizon": 1000,
        "seed": 3,
    },
    "clicks": {
        "learner": "pdgd",
        "feedback": "clicks",
        "feedback_params": {"k": 4},
        "n_features": D,
        "seed": 3,
    },
    "duel": {
        "learner": "dbgd",
        "feedback": "interleaved-clicks",
        "feedback_params": {"k": 5},
        "n_features": D,
        "seed": 3,
    },
}


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(ServeSettings(store=tmp_path / "s.db", synchronous="NORMAL"))) as c:
        yield c


def _drive(http: TestClient, name: str, rounds: int, seed: int) -> list[tuple[list[int], Any]]:
    """``rounds`` rounds of a seeded user on ranker ``name``; (shown list, feedback) of each."""
    rng = np.random.default_rng(seed)
    kind = name.split("-")[0]
    out = []
    for _ in range(rounds):
        body = {} if kind == "choice" else {"features": rng.random((7, D)).round(3).tolist()}
        shown = http.post(f"/rankers/{name}/rank", json=body).json()
        order = shown["order"]
        if kind == "labels":  # 1 to 3 grades of the top shown, 0 to 3 each
            fb: dict[str, Any] = {"labels": rng.integers(0, 4, rng.integers(1, 4)).tolist()}
        elif kind == "choice":  # two distinct items
            fb = {"chosen": rng.choice(6, 2, replace=False).tolist()}
        else:  # any subset of the shown positions (clicks: of the page, the first 4)
            page = min(4, len(order)) if kind == "clicks" else len(order)
            fb = {"clicks": np.flatnonzero(rng.random(page) < 0.3).tolist()}
        answer = http.post(
            f"/rankers/{name}/feedback", json={"impression": shown["impression"], **fb}
        )
        assert answer.status_code == 200, answer.text
        out.append((order, fb))
    return out


def _expected(kind: str, log: list[tuple[list[int], Any]], bucket: int) -> dict[str, Any]:
    """Counts by position and the mean quality per bucket, from the requests themselves."""
    counts: dict[int, int] = {}
    quality = []
    span = 0
    for order, fb in log:
        if kind == "labels":
            hits = [j for j, label in enumerate(fb["labels"]) if label > 0]
            value = sum((2.0**g - 1.0) / math.log2(j + 2) for j, g in enumerate(fb["labels"]))
            span = max(span, len(fb["labels"]))
        elif kind == "choice":
            hits = [order.index(item) for item in fb["chosen"]]
            value = sum(1.0 / math.log2(j + 2) for j in hits)
            span = max(span, len(order))
        else:
            hits = fb["clicks"]
            value = float(len(hits))
            span = max(span, min(4, len(order)) if kind == "clicks" else len(order))
        for j in hits:
            counts[j] = counts.get(j, 0) + 1
        quality.append(value)
    points = []
    for start in range(0, len(log), bucket):
        chunk = quality[start : start + bucket]
        points.append(
            {"round": start + len(chunk), "value": sum(chunk) / len(chunk), "n": len(chunk)}
        )
    return {"counts": [counts.get(j, 0) for j in range(span)], "points": points}


def _same_curve(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> None:
    assert [(p["round"], p["n"]) for p in got] == [(p["round"], p["n"]) for p in want]
    assert [p["value"] for p in got] == pytest.approx([p["value"] for p in want], rel=REL)


@pytest.mark.parametrize("kind", list(DEFINITIONS))
def test_stats_count_what_the_feedback_revealed(http: TestClient, kind: str) -> None:
    assert http.put(f"/rankers/{kind}", json=DEFINITIONS[kind]).status_code == 201
    log = _drive(http, kind, 83, seed=11)
    pending = http.post(f"/rankers/{kind}/rank", json=_rank_body(kind)).json()
    assert pending["impression"]
    got = http.get(f"/rankers/{kind}/stats", params={"bucket": 20}).json()
    want = _expected(kind, log, 20)
    assert got["rounds"] == got["feedback_events"] == 83 and got["caught_up"]
    assert got["impressions"] == 84 and got["pending"] == 1 and got["expired"] == 0
    assert got["by_position"]["counts"] == want["counts"]
    assert got["by_position"]["beyond"] == 0 and got["by_position"]["rounds"] == 83
    _same_curve(got["quality"]["points"], want["points"])
    assert got["quality"]["points"][-1] == {**got["quality"]["points"][-1], "round": 83, "n": 3}
    assert got["comparison"] is None and got["rollout"] == []
    # More feedback: the tally goes on from where it was, to the same result as from scratch.
    log += _drive(http, kind, 30, seed=12)
    again = http.get(f"/rankers/{kind}/stats", params={"bucket": 20, "points": 3}).json()
    want = _expected(kind, log, 20)
    assert again["by_position"]["counts"] == want["counts"]
    _same_curve(again["quality"]["points"], want["points"][-3:])


def _rank_body(kind: str) -> dict[str, Any]:
    return {} if kind == "choice" else {"features": [[0.5] * D, [0.25] * D]}


def test_a_tally_read_in_small_chunks_equals_one_read(
    http: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    http.put("/rankers/labels", json=DEFINITIONS["labels"])
    log = _drive(http, "labels", 40, seed=5)
    monkeypatch.setattr(stats_module, "CHUNK_EVENTS", 7)  # 80 events: 12 requests to read them
    reads = []
    while not reads or not reads[-1]["caught_up"]:
        reads.append(http.get("/rankers/labels/stats", params={"bucket": 6}).json())
        assert len(reads) <= 12
    assert len(reads) == 12
    assert reads[0]["feedback_events"] < 40 and reads[-1]["feedback_events"] == 40
    want = _expected("labels", log, 6)
    assert reads[-1]["by_position"]["counts"] == want["counts"]
    _same_curve(reads[-1]["quality"]["points"], want["points"])


def test_the_rate_counts_the_impressions_of_the_window(http: TestClient) -> None:
    http.put("/rankers/labels", json=DEFINITIONS["labels"])
    for _ in range(9):
        http.post("/rankers/labels/rank", json=_rank_body("labels"))
    wide = http.get("/rankers/labels/stats", params={"window": 3600}).json()
    assert wide["impressions_per_second"] == 9 / 3600 and wide["window"] == 3600
    overview = http.get("/stats", params={"window": 3600}).json()
    assert overview["rankers"] == [
        {
            "name": "labels",
            "learner": "rtopk",
            "feedback": "topk",
            "rounds": 0,
            "impressions": 9,
            "impressions_per_second": 9 / 3600,
        }
    ]
    time.sleep(0.5)  # every impression is now older than a window of 0.25 s
    assert (
        http.get("/rankers/labels/stats", params={"window": 0.25}).json()["impressions_per_second"]
        == 0.0
    )


def test_a_ranker_made_anew_is_counted_anew(http: TestClient) -> None:
    http.put("/rankers/labels", json=DEFINITIONS["labels"])
    _drive(http, "labels", 12, seed=1)
    assert http.get("/rankers/labels/stats").json()["feedback_events"] == 12
    assert http.delete("/rankers/labels").status_code == 204
    assert http.get("/rankers/labels/stats").status_code == 404
    http.put("/rankers/labels", json=DEFINITIONS["labels"])
    log = _drive(http, "labels", 3, seed=2)
    got = http.get("/rankers/labels/stats").json()
    assert got["feedback_events"] == got["rounds"] == 3
    assert got["by_position"]["counts"] == _expected("labels", log, 50)["counts"]


def test_a_quality_that_overflows_is_null_not_an_error(http: TestClient) -> None:
    fixed = {"learner": "fixed", "feedback": "top-k", "feedback_params": {"k": 2}, "n_features": 2}
    http.put("/rankers/f", json=fixed)
    shown = http.post("/rankers/f/rank", json={"features": [[1, 2], [3, 4]]}).json()
    fb = {"impression": shown["impression"], "labels": [2000, 1e300]}  # 2^g overflows float64
    assert http.post("/rankers/f/feedback", json=fb).status_code == 200
    got = http.get("/rankers/f/stats").json()
    assert got["quality"]["points"] == [{"round": 1, "value": None, "n": 1}]
    assert got["by_position"]["counts"] == [1, 1]


@pytest.mark.parametrize(
    "query",
    [
        {"window": 0},
        {"window": "nan"},
        {"window": "inf"},
        {"window": 3601},
        {"bucket": 0},
        {"bucket": 1.5},
        {"points": 0},
        {"points": 10_001},
    ],
)
def test_bad_parameters_are_a_422(http: TestClient, query: dict[str, Any]) -> None:
    http.put("/rankers/labels", json=DEFINITIONS["labels"])
    assert http.get("/rankers/labels/stats", params=query).status_code == 422
    if "window" in query:
        assert http.get("/stats", params=query).status_code == 422


def test_the_page_is_open_and_its_numbers_need_the_token(tmp_path: Path) -> None:
    app = create_app(ServeSettings(store=tmp_path / "s.db", token="sesame"))
    with TestClient(app) as http:
        moved = http.get("/ui", follow_redirects=False)
        assert moved.status_code == 307 and moved.headers["location"] == "ui/"
        for path in sorted(UI_OPEN_PATHS - {"/ui"}):
            answer = http.get(path)
            assert answer.status_code == 200, path
            assert answer.headers["x-content-type-options"] == "nosniff"
        page = http.get("/ui/")
        assert "text/html" in page.headers["content-type"]
        assert "default-src 'self'" in page.headers["content-security-policy"]
        # Every file the page loads is one the service serves, none from elsewhere.
        loaded = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sorted(loaded) == ["data:,", "ui.css", "ui.js", "vendor/chart.umd.min.js"]
        assert http.get("/ui/nothing-here").status_code == 401  # not open: the gate answers
        assert http.get("/stats").status_code == 401
        assert http.get("/rankers/x/stats").status_code == 401
        auth = {"Authorization": "Bearer sesame"}
        assert http.get("/stats", headers=auth).json()["rankers"] == []
        assert http.get("/ui/nothing-here", headers=auth).status_code == 404


def test_the_schema_has_the_json_routes_and_not_the_page(http: TestClient) -> None:
    schema = http.get("/openapi.json").json()
    paths = schema["paths"]
    assert not [p for p in paths if p.startswith("/ui")]
    one = paths["/rankers/{name}/stats"]["get"]["responses"]
    assert one["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/RankerStats"
    }
    assert {"404", "422"} <= set(one)
    every = paths["/stats"]["get"]["responses"]["200"]["content"]["application/json"]
    assert every["schema"] == {"$ref": "#/components/schemas/StatsOverview"}
    fields = schema["components"]["schemas"]["RankerStats"]["properties"]
    assert {"comparison", "rollout", "by_position", "quality", "impressions_per_second"} <= set(
        fields
    )


def test_the_vendored_chart_is_the_one_its_readme_names() -> None:
    readme = (STATIC / "vendor" / "README.md").read_text()
    digest = re.search(r"sha256 of `chart.umd.min.js`: `([0-9a-f]{64})`", readme)
    assert digest is not None
    data = (STATIC / "vendor" / "chart.umd.min.js").read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest.group(1)
    version = re.search(rb"Chart\.js v(\d+\.\d+\.\d+)", data[:200])
    assert version is not None and f"chart.js@{version.group(1).decode()}" in readme
    assert "MIT License" in (STATIC / "vendor" / "chart.js.LICENSE.md").read_text()


def test_the_package_data_holds_every_file_of_the_page() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["oltr"]
    files = [p.relative_to(ROOT / "oltr").as_posix() for p in STATIC.rglob("*") if p.is_file()]
    assert {name for name, _ in ASSETS.values()} <= {f.removeprefix("serve/static/") for f in files}
    for name in files:
        # setuptools' globs: '*' does not cross a '/'
        assert any(fnmatch.fnmatch(name, g) and name.count("/") == g.count("/") for g in globs), (
            name
        )
