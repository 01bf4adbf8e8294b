// The page of `oltr serve`: polls GET /stats and GET /rankers/{name}/stats and draws them.
// The bearer token, when the server has one, comes from the form or from the address's
// fragment (#token=...), which the browser never sends to the server; it is kept in this
// tab's sessionStorage and sent as `Authorization: Bearer <token>`.
"use strict";

(() => {
  const TOKEN_KEY = "oltr-serve-token";
  const query = new URLSearchParams(location.search);
  const refreshSeconds = Math.max(0.5, Number(query.get("refresh")) || 2);
  let selected = query.get("ranker");
  let timer = null;
  let positionsChart = null;
  let qualityChart = null;

  class Unauthorized extends Error {}

  const $ = (id) => document.getElementById(id);

  function takeTokenFromFragment() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    const token = fragment.get("token");
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  }

  async function getJSON(path) {
    const headers = { Accept: "application/json" };
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (token) headers.Authorization = `Bearer ${token}`;
    const answer = await fetch(new URL(path, location.href), { headers, cache: "no-store" });
    if (answer.status === 401) throw new Unauthorized("401");
    if (!answer.ok) {
      let detail = answer.statusText;
      try {
        detail = JSON.stringify((await answer.json()).detail);
      } catch (_) {
        // not JSON: keep the status text
      }
      throw new Error(`${answer.status} ${detail}`);
    }
    return answer.json();
  }

  function setStatus(text, error = false) {
    $("status").textContent = text;
    $("status").classList.toggle("error", error);
  }

  const integer = (n) => Number(n).toLocaleString("en-US");

  function showRankers(rankers) {
    const list = $("rankers");
    list.replaceChildren(
      ...rankers.map((r) => {
        const item = document.createElement("li");
        const button = document.createElement("button");
        button.type = "button";
        button.dataset.name = r.name;
        button.setAttribute("aria-current", String(r.name === selected));
        const name = document.createElement("strong");
        name.textContent = r.name;
        const sub = document.createElement("span");
        sub.className = "sub";
        sub.textContent = `${r.learner} · ${r.feedback} · ${integer(r.rounds)} rounds`;
        button.append(name, sub);
        button.addEventListener("click", () => {
          selected = r.name;
          const url = new URL(location.href);
          url.searchParams.set("ranker", r.name);
          history.replaceState(null, "", url);
          refresh();
        });
        item.append(button);
        return item;
      }),
    );
    $("no-rankers").hidden = rankers.length > 0;
  }

  function charts() {
    if (positionsChart) return;
    const common = {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      plugins: { legend: { display: false } },
    };
    positionsChart = new Chart($("positions"), {
      type: "bar",
      data: { labels: [], datasets: [{ label: "count", data: [], backgroundColor: "#2463b4" }] },
      options: {
        ...common,
        scales: {
          x: { title: { display: true, text: "shown position (1 = top)" } },
          y: { beginAtZero: true, title: { display: true, text: "count" } },
        },
      },
    });
    qualityChart = new Chart($("quality"), {
      type: "line",
      data: {
        datasets: [
          { label: "quality", data: [], borderColor: "#1b7f5b", pointRadius: 2, tension: 0 },
        ],
      },
      options: {
        ...common,
        scales: {
          x: { type: "linear", title: { display: true, text: "feedback round" } },
          y: { title: { display: true, text: "mean per round" } },
        },
      },
    });
  }

  function showLater(stats) {
    const comparison = $("comparison-body");
    if (stats.comparison) {
      comparison.textContent = JSON.stringify(stats.comparison, null, 1);
      comparison.classList.remove("placeholder");
    }
    const rollout = $("rollout-body");
    if (stats.rollout && stats.rollout.length) {
      rollout.textContent = stats.rollout.map((step) => JSON.stringify(step)).join("\n");
      rollout.classList.remove("placeholder");
    }
  }

  function showRanker(stats) {
    $("ranker").hidden = false;
    $("ranker-name").textContent = stats.name;
    $("rounds").textContent = integer(stats.rounds);
    $("impressions").textContent = integer(stats.impressions);
    $("rate").textContent = stats.impressions_per_second.toFixed(2);
    $("pending").textContent = integer(stats.pending);
    $("expired").textContent = integer(stats.expired);
    $("feedback-kind").textContent = stats.feedback;
    charts();
    const pos = stats.by_position;
    $("positions-caption").textContent = pos.signal
      ? `${pos.signal} by shown position, over ${integer(pos.rounds)} feedback rounds` +
        (pos.beyond ? ` (${integer(pos.beyond)} deeper than shown)` : "")
      : `the feedback kind ${stats.feedback} reveals nothing by position`;
    positionsChart.data.labels = pos.counts.map((_, i) => String(i + 1));
    positionsChart.data.datasets[0].data = pos.counts;
    positionsChart.update();
    const q = stats.quality;
    $("quality-caption").textContent = q.measure
      ? `${q.measure}: mean per ${integer(q.bucket)} feedback rounds` +
        (stats.caught_up ? "" : " (still reading the log)")
      : `the feedback kind ${stats.feedback} has no quality measure here`;
    qualityChart.data.datasets[0].label = q.measure || "quality";
    qualityChart.data.datasets[0].data = q.points.map((p) => ({ x: p.round, y: p.value }));
    qualityChart.options.scales.y.title.text = q.measure || "mean per round";
    qualityChart.update();
    showLater(stats);
  }

  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(refresh, refreshSeconds * 1000);
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const overview = await getJSON("../stats");
      if (!overview.rankers.some((r) => r.name === selected)) {
        selected = overview.rankers.length ? overview.rankers[0].name : null;
      }
      showRankers(overview.rankers);
      if (selected) {
        showRanker(await getJSON(`../rankers/${encodeURIComponent(selected)}/stats`));
      } else {
        $("ranker").hidden = true;
      }
      $("token-form").hidden = true;
      setStatus(`updated ${new Date().toLocaleTimeString()}, every ${refreshSeconds} s`);
      document.body.dataset.updates = String(Number(document.body.dataset.updates || 0) + 1);
    } catch (error) {
      if (error instanceof Unauthorized) {
        sessionStorage.removeItem(TOKEN_KEY);
        $("token-form").hidden = false;
        setStatus("this server needs its bearer token", true);
        return; // polled again once a token is given
      }
      setStatus(`cannot read the server: ${error.message}`, true);
    }
    schedule();
  }

  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const token = $("token").value.trim();
    $("token").value = "";
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    refresh();
  });

  takeTokenFromFragment();
  refresh();
})();
