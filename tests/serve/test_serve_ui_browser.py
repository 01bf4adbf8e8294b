"""The page of ``oltr serve`` in a real browser: what a person watching it would see.

A real server (uvicorn, 127.0.0.1, an ephemeral port, a bearer token) serves a
ranker that a simulated user drives for a few hundred rounds (a LETOR stream
and top-3 feedback, the end-to-end test's user); Debian's chromium, driven by
Playwright, opens ``/ui/#token=…`` and the test reads the page: the ranker in
the list, the rounds, the bars of the by-position chart and the quality curve's
latest point, which moves once more feedback comes. Playwright never downloads
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
            labels = self.env.feedback(np.asarray([out["order"]]), self.rngs).labels[0]
            self.client.feedback(self.name, out["impression"], labels=labels.tolist())


def _stats(url: str, name: str) -> Any:
    answer = httpx.get(f"{url}/rankers/{name}/stats", headers={"Authorization": f"Bearer {TOKEN}"})
    answer.raise_for_status()
    return answer.json()


def _chart(page: Any, canvas: str) -> Any:
    """The data a Chart.js chart on the page holds, and how many elements it drew."""
    return page.evaluate(
        """(id) => {
            const chart = Chart.getChart(id);
            return {labels: chart.data.labels, data: chart.data.datasets[0].data,
                    drawn: chart.getDatasetMeta(0).data.length,
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
        client.put_ranker("web", **DEFINITION)
        client.put_ranker("web-candidate", **{**DEFINITION, "seed": 6})
        User(client, "web").rounds(600)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, headless=True)
            page = browser.new_page(viewport={"width": 1200, "height": 600})
            page.goto(f"{url}/ui/?ranker=web#token={TOKEN}")
            page.wait_for_function("() => document.body.dataset.updates >= 1")
            page.screenshot(path=str(path), full_page=True)
            browser.close()


if __name__ == "__main__":
    _screenshot(Path(sys.argv[1]))
