"""The page of ``oltr serve`` in a real browser: what a person watching it would see.

A real server (uvicorn, 127.0.0.1, an ephemeral port, a bearer token) serves a
ranker that a simulated user drives for a few hundred rounds (a LETOR stream
and top-3 feedback, the end-to-end test's user); Debian's chromium, driven by
Playwright, opens ``/ui/#token=…`` and the test reads the page: the ranker in
the list, the rounds, the bars of the by-position chart and the quality curve's
latest point, which moves once more feedback comes. A second ranker gets a truly
better candidate, interleaved on every request under a guarded rollout, and is
driven until the rule promotes it: the page's comparison panel, the interval it
draws and its rollout table must say what the JSON routes say. Playwright never downloads
a browser here: it launches ``/usr/bin/chromium`` (``apt-get install chromium``).

Run as a script, it writes the screenshot of the documentation::

    python tests/serve/test_serve_ui_browser.py docs/img/serve-ui.png
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from oltr.build import make_env, make_feedback
from oltr.client import OltrClient
from oltr.envs.stream import LetorStreamEnv
from oltr.feedback import TopKFeedback
from oltr.random import child_rng
from oltr.types import RunGenerators

TOKEN = "page-token"
SEED, D, K = 5, 6, 3
ENV, ENV_PARAMS = "letor-stream-v1", {"n_queries": 40, "n_features": D, "data_seed": 2}
DEFINITION = {
    "learner": "rtopk",
    "params": {"surrogate": "squared"},
    "feedback": "top-k",
    "feedback_params": {"k": K},
    "n_features": D,
    "seed": SEED,
    "horizon": 10_000,
}


def chromium() -> str | None:
    """Debian's chromium, if installed."""
    for candidate in ("/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@contextmanager
def serving(store: Path) -> Iterator[str]:
    """A uvicorn server in a thread on 127.0.0.1, port 0: its URL, the port it really bound."""
    import uvicorn

    from oltr.serve import ServeSettings, create_app

    app = create_app(ServeSettings(store=store, token=TOKEN, synchronous="NORMAL"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


class User:
    """The simulated user: the runner's LETOR stream and its top-3 feedback, seeded."""

    def __init__(self, client: OltrClient, name: str) -> None:
        self.client, self.name, self.t = client, name, 0
        self.env = make_env(ENV, ENV_PARAMS, feedback=make_feedback("top-k", {"k": K}))
        self.env.reset(rng=child_rng(SEED, "env", ENV))
        self.rngs = RunGenerators.from_keys(SEED, "feedback", reps=[0])

    def rounds(self, n: int) -> None:
        for _ in range(n):
            self.t += 1
            ctx = self.env.observe(self.t)
            out = self.client.rank(self.name, ctx.features)
            revealed = self.env.feedback(np.asarray([out["order"]]), self.rngs)
            assert isinstance(revealed, TopKFeedback)
            labels = revealed.labels[0]
            self.client.feedback(self.name, out["impression"], labels=labels.tolist())


def fixed_pair() -> tuple[dict[str, Any], dict[str, Any]]:
    """Definitions of a worse production ranker and a truly better candidate (top-k feedback).

    The synthetic data's hidden utility is ``(X − ½) w + …`` with sparse ``w``
    (:func:`oltr.data.synthetic.synthetic_letor`): ranking by the feature of the most
    negative weight puts low utility first, ranking by a feature of the largest
    (non-negative) weight does not, so the candidate wins the interleaved duels.
    """
    env = make_env(ENV, ENV_PARAMS)
    assert isinstance(env, LetorStreamEnv)
    w = np.asarray(env.data().hidden_weights)
    assert w.min() < 0 <= w.max()  # the data set of ENV_PARAMS has a harmful feature
    base = {k: v for k, v in DEFINITION.items() if k not in ("learner", "params", "horizon")}
    worse = {**base, "learner": "fixed", "params": {"feature": int(np.argmin(w))}}
    better = {**base, "learner": "fixed", "params": {"feature": int(np.argmax(w))}}
    return worse, better


#: The guarded rollout of the tests and the screenshot: every request interleaved, promotion
#: once the lower bound of the advantage is above 0 after at least 100 compared impressions.
CANDIDATE = {"mode": "interleaved", "share": 1.0, "rollout": {"min_impressions": 100}}


def attach(url: str, name: str, candidate: str) -> None:
    """Attach ``candidate`` to ranker ``name`` under :data:`CANDIDATE`'s rule."""
    answer = httpx.put(
        f"{url}/rankers/{name}/candidate",
        json={"ranker": candidate, **CANDIDATE},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert answer.status_code == 201, answer.text


def promote(user: User, url: str, limit: int = 400) -> int:
    """Drive ``user``'s rounds, ten at a time, until the candidate is promoted; its rounds."""
    while user.t < limit:
        user.rounds(10)
        if _stats(url, user.name)["comparison"]["phase"] == "promoted":
            return user.t
    raise AssertionError(f"no promotion within {limit} rounds")


def _stats(url: str, name: str) -> Any:
    answer = httpx.get(f"{url}/rankers/{name}/stats", headers={"Authorization": f"Bearer {TOKEN}"})
    answer.raise_for_status()
    return answer.json()


def _chart(page: Any, canvas: str) -> Any:
    """The data a Chart.js chart on the page holds, and how many elements it drew."""
    return page.evaluate(
        """(id) => {
            const chart = Chart.getChart(id);
            const meta = chart.getDatasetMeta(0);
            return {labels: chart.data.labels, data: chart.data.datasets[0].data,
                    more: chart.data.datasets.slice(1).map((d) => d.data),
                    drawn: meta.data.length,
                    spans: meta.data.map((e) => Math.abs(e.x - e.base)),
                    zero: chart.scales.x ? chart.scales.x.getPixelForValue(0) : null,
                    width: chart.width, height: chart.height};
        }""",
        canvas,
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason='playwright is not installed (pip install "oltr[test]")'
    )
    exe = chromium()
    if exe is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def test_the_page_shows_what_the_ranker_did(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with serving(tmp_path / "s.db") as url, OltrClient(url, token=TOKEN) as client:
        client.put_ranker("sim", **DEFINITION)
        client.put_ranker("other", **{**DEFINITION, "seed": 6})
        user = User(client, "sim")
        user.rounds(300)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        problems: list[str] = []  # script errors, and requests the page makes that fail
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("requestfailed", lambda request: problems.append(request.url))
        page.goto(f"{url}/ui/?ranker=sim&refresh=0.5#token={TOKEN}")
        assert "token" not in page.url  # the fragment is dropped from the address at once
        expect(page.locator('#rankers button[data-name="sim"]')).to_be_visible()
        expect(page.locator('#rankers button[data-name="other"]')).to_be_visible()
        served = client.ranker("sim")["rounds"]
        assert served == 300
        expect(page.locator("#rounds")).to_have_text(str(served))
        expect(page.locator("#impressions")).to_have_text(str(served))

        stats = _stats(url, "sim")  # what the page polls
        bars = _chart(page, "positions")
        assert bars["data"] == stats["by_position"]["counts"]
        assert bars["labels"] == ["1", "2", "3"] and bars["drawn"] == K  # one bar per position
        assert bars["width"] > 100 and bars["height"] > 100
        assert sum(bars["data"]) > 0  # the simulated user found relevant documents

        curve = _chart(page, "quality")
        last = stats["quality"]["points"][-1]
        assert (
            curve["data"][-1] == {"x": last["round"], "y": last["value"]} and last["round"] == 300
        )
        assert curve["drawn"] == len(stats["quality"]["points"]) == 6  # 300 rounds, 50 a point
        page.screenshot(path=str(tmp_path / "serve-ui.png"))

        user.rounds(40)  # more feedback: the latest point moves to round 340
        page.wait_for_function(
            "() => Chart.getChart('quality').data.datasets[0].data.at(-1).x === 340",
            timeout=15_000,
        )
        expect(page.locator("#rounds")).to_have_text("340")
        stats = _stats(url, "sim")
        curve = _chart(page, "quality")
        assert curve["data"][-1] == {"x": 340, "y": stats["quality"]["points"][-1]["value"]}
        assert curve["drawn"] == 7

        page.locator('#rankers button[data-name="other"]').click()  # the selector
        expect(page.locator("#ranker-name")).to_have_text("other")
        expect(page.locator("#rounds")).to_have_text("0")
        expect(page.locator("#comparison-body")).to_have_text(
            "No candidate is being compared with this ranker."
        )
        assert problems == []


def test_the_page_shows_the_comparison_and_the_promotion(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    worse, better = fixed_pair()
    with serving(tmp_path / "s.db") as url, OltrClient(url, token=TOKEN) as client:
        client.put_ranker("prod", **worse)
        client.put_ranker("cand", **better)
        attach(url, "prod", "cand")
        user = User(client, "prod")
        user.rounds(10)
        page = browser.new_page(viewport={"width": 1280, "height": 1400})
        problems: list[str] = []
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.goto(f"{url}/ui/?ranker=prod&refresh=60#token={TOKEN}")
        rule = page.locator("#comparison-rule")
        expect(rule).to_have_text(
            "Needs 90 more compared impressions (10 of 100) before a promotion."
        )
        assert rule.get_attribute("data-state") == "needs-more"
        expect(page.locator("#rollout-table tbody tr")).to_have_count(1)  # the attachment

        rounds = promote(user, url)
        user.rounds(20)  # the promoted phase has numbers of its own
        page.reload()  # the address has no token now: the tab's sessionStorage keeps it
        expect(page.locator("#comparison-view")).to_be_visible()
        expect(page.locator("#comparison-body")).to_be_hidden()
        stats = _stats(url, "prod")  # at rest: no request comes while the page is read
        cmp = stats["comparison"]
        assert cmp["phase"] == "promoted" and cmp["serving"] == "cand"
        expect(page.locator("#comparison-title")).to_contain_text("cand against prod")
        expect(page.locator("#comparison-title")).to_contain_text("interleaved, 100% of requests")
        expect(page.locator("#comparison-title")).to_contain_text("promoted, serving cand")

        # The numbers a person reads: the exact values, and their text to the shown digits
        # (4 decimals: a difference of at most half a unit of the last digit, 5e-5).
        def shown(key: str) -> tuple[str, float]:
            cell = page.locator(f"#cmp-{key}")
            return cell.inner_text(), float(cell.get_attribute("data-value") or "nan")

        for key in ("impressions", "wins", "losses", "ties"):
            assert shown(key) == (str(cmp[key]), cmp[key])
        text, value = shown("advantage")
        assert value == cmp["advantage"]["estimate"]
        assert abs(float(text) - value) <= 5e-5
        lo, hi = cmp["advantage"]["interval"]
        interval = page.locator("#cmp-interval").inner_text()
        got = [float(x) for x in interval.strip("[]").split(",")]
        assert abs(got[0] - lo) <= 5e-5 and abs(got[1] - hi) <= 5e-5
        expect(page.locator("#comparison-numbers")).to_contain_text("95% interval")
        expect(rule).to_have_attribute("data-state", "promoted")
        expect(rule).to_contain_text("Promoted: cand serves the route")

        # The interval chart: the promotion's interval, then the running one, as bars.
        decisions = [s for s in stats["rollout"] if s["kind"] == "promote"]
        assert len(decisions) == 1
        step = decisions[0]
        # Every request is compared and answered: the promoted phase counts afresh the rest.
        assert cmp["impressions"] == user.t - step["impressions"] >= 20
        chart = _chart(page, "interval")
        assert chart["labels"] == [
            f"promote at {step['impressions']}",
            f"now (promoted), {cmp['impressions']}",
        ]
        assert chart["data"] == [step["interval"], cmp["advantage"]["interval"]]
        assert chart["more"] == [[step["estimate"], cmp["advantage"]["estimate"]]]
        assert chart["drawn"] == 2 and min(chart["spans"]) > 10  # each a bar of visible width
        assert step["interval"][0] > 0  # the rule: the promotion's lower bound above the margin

        # The rollout table: the attachment, then the promotion with its numbers.
        rows = page.locator("#rollout-table tbody tr")
        expect(rows).to_have_count(2)
        assert [rows.nth(i).get_attribute("data-kind") for i in range(2)] == ["attach", "promote"]
        cells = rows.nth(1).locator("td").all_inner_texts()
        assert cells[1:5] == [
            "promote",
            "cand",
            str(step["impressions"]),
            f"{step['wins']} / {step['losses']} / {step['ties']}",
        ]
        assert abs(float(cells[5]) - step["estimate"]) <= 5e-5
        low, high = (float(x) for x in cells[6].strip("[]").split(","))
        assert abs(low - step["interval"][0]) <= 5e-5 and abs(high - step["interval"][1]) <= 5e-5
        assert cells[7] == step["rule"] and step["rule"].startswith("lower bound")
        assert CANDIDATE["rollout"]["min_impressions"] <= step["impressions"] <= rounds  # type: ignore[index]

        # Rolled back by hand, then replaced by a shadow comparison: the page follows.
        auth = {"Authorization": f"Bearer {TOKEN}"}
        back = httpx.post(f"{url}/rankers/prod/rollout", json={"action": "rollback"}, headers=auth)
        assert back.status_code == 200, back.text
        page.reload()
        expect(rule).to_have_attribute("data-state", "rolled-back")
        expect(rule).to_have_text("Rolled back: prod serves the route again.")
        expect(rows).to_have_count(3)
        cells = rows.nth(2).locator("td").all_inner_texts()
        assert cells[1] == "rollback" and cells[7] == "by hand (POST …/rollout)"
        assert httpx.delete(f"{url}/rankers/prod/candidate", headers=auth).status_code == 204
        shadow = {"ranker": "cand", "mode": "shadow"}
        assert httpx.put(f"{url}/rankers/prod/candidate", json=shadow, headers=auth).is_success
        User(client, "prod").rounds(5)
        page.reload()
        cmp = _stats(url, "prod")["comparison"]
        expect(rule).to_have_attribute("data-state", "report-only")
        assert shown("impressions") == ("5", 5) and cmp["impressions"] == 5
        assert shown("agree-top")[1] == cmp["agree_top"]["rate"]
        # a fixed production ranker logs no list probabilities: no advantage to draw
        assert cmp["off_policy"] is None and _chart(page, "interval")["data"] == []
        expect(page.locator("#interval-caption")).to_contain_text("no advantage is estimable")
        expect(rows).to_have_count(5)  # attach, promote, rollback, detach, attach
        kinds = [rows.nth(i).get_attribute("data-kind") for i in range(5)]
        assert kinds == ["attach", "promote", "rollback", "detach", "attach"]
        assert problems == []


def test_without_the_token_the_page_asks_for_it(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with serving(tmp_path / "s.db") as url, OltrClient(url, token=TOKEN) as client:
        client.put_ranker("sim", **DEFINITION)
        page = browser.new_page()
        page.goto(f"{url}/ui/?refresh=0.5")
        expect(page.locator("#token-form")).to_be_visible()
        expect(page.locator("#status")).to_have_text("this server needs its bearer token")
        page.fill("#token", TOKEN)
        page.click("#token-form button")
        expect(page.locator('#rankers button[data-name="sim"]')).to_be_visible()
        expect(page.locator("#token-form")).to_be_hidden()


def _screenshot(path: Path) -> None:
    """Write the documentation's screenshot of the page (a few hundred simulated rounds)."""
    from playwright.sync_api import sync_playwright

    exe = chromium()
    assert exe is not None, "no chromium binary (apt-get install -y chromium)"
    with (
        tempfile.TemporaryDirectory() as tmp,
        serving(Path(tmp) / "s.db") as url,
        OltrClient(url, token=TOKEN) as client,
    ):
        worse, better = fixed_pair()
        client.put_ranker("web", **worse)
        client.put_ranker("web-candidate", **better)
        client.put_ranker("web-rtopk", **DEFINITION)
        User(client, "web-rtopk").rounds(100)
        user = User(client, "web")
        user.rounds(200)  # before the comparison: the production ranker alone
        attach(url, "web", "web-candidate")
        promote(user, url, limit=user.t + 400)
        user.rounds(60)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, headless=True)
            page = browser.new_page(viewport={"width": 1200, "height": 600})
            page.goto(f"{url}/ui/?ranker=web#token={TOKEN}")
            page.wait_for_function("() => document.body.dataset.updates >= 1")
            page.screenshot(path=str(path), full_page=True)
            browser.close()


if __name__ == "__main__":
    _screenshot(Path(sys.argv[1]))
