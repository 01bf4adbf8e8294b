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
  let intervalChartObj = null;

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

  // -- the candidate comparison and the rollout history ------------------------------------

  const fixed = (x, digits = 4) => (x === null || x === undefined ? "–" : Number(x).toFixed(digits));
  const span = (iv) => (iv ? `[${fixed(iv[0])}, ${fixed(iv[1])}]` : "–");
  const percent = (alpha) => `${Math.round((1 - alpha) * 1000) / 10}%`;

  const minus = (margin) => (margin ? `−${margin}` : "0");

  function when(seconds) {
    if (typeof seconds !== "number") return "–";
    const d = new Date(seconds * 1000);
    const two = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}\n` +
      `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  }

  // The rule's state in words, and a short key for it (data-state).
  function ruleState(c) {
    const rule = c.config && c.config.rollout;
    if (c.mode === "shadow") {
      return ["report-only", "Shadow comparison: reported only; a rollout needs interleaving " +
        "(these intervals do not hold under repeated looks)."];
    }
    if (!rule) return ["report-only", "No rollout rule: the comparison is only reported."];
    const by = rule.auto ? "" : " (auto is off: POST …/rollout decides)";
    const [low, high] = c.advantage.interval;
    if (c.phase === "rolled-back") {
      return ["rolled-back", `Rolled back: ${c.production} serves the route again.`];
    }
    if (c.phase === "promoted") {
      if (c.next === "rollback") {
        return ["rollback-due", `Roll back due: upper bound ${fixed(high)} < ` +
          `${minus(rule.margin)}${by}.`];
      }
      return ["promoted", `Promoted: ${c.candidate} serves the route; rolled back if the upper ` +
        `bound of its advantage over ${c.production}, counted afresh since the promotion, ` +
        `falls below ${minus(rule.margin)}.`];
    }
    if (c.next === "promote") {
      return ["promotable", `Promotable: lower bound ${fixed(low)} > margin ` +
        `${rule.margin} after ${integer(c.impressions)} impressions${by}.`];
    }
    if (c.impressions < rule.min_impressions) {
      const more = rule.min_impressions - c.impressions;
      return ["needs-more", `Needs ${integer(more)} more compared impressions ` +
        `(${integer(c.impressions)} of ${integer(rule.min_impressions)}) before a promotion.`];
    }
    return ["not-yet", `Not promotable yet: lower bound ${fixed(low)} ≤ margin ${rule.margin}.`];
  }

  // The comparison's numbers: [key, label, text, exact value].
  function comparisonNumbers(c) {
    const level = percent(c.alpha);
    if (c.mode === "shadow") {
      const out = [
        ["impressions", "judged impressions", integer(c.impressions), c.impressions],
        ["agree-top", "top item agrees", fixed(c.agree_top.rate), c.agree_top.rate],
        ["agree-top-interval", `${level} interval`, span(c.agree_top.interval), null],
      ];
      for (const [metric, e] of Object.entries(c.off_policy || {})) {
        out.push([`advantage-${metric}`, `advantage ${metric}`, fixed(e.advantage.estimate),
          e.advantage.estimate]);
        out.push([`interval-${metric}`, `${level} interval`, span(e.advantage.interval), null]);
      }
      return out;
    }
    const rate = c.win_rate;
    return [
      ["impressions", "compared impressions", integer(c.impressions), c.impressions],
      ["wins", "wins", integer(c.wins), c.wins],
      ["losses", "losses", integer(c.losses), c.losses],
      ["ties", "ties", integer(c.ties), c.ties],
      ["advantage", "advantage", fixed(c.advantage.estimate), c.advantage.estimate],
      ["interval", `${level} interval`, span(c.advantage.interval), null],
      ["win-rate", "win rate (no ties)", fixed(rate.estimate), rate.estimate],
      ["win-rate-interval", `${level} interval`, span(rate.interval), null],
    ];
  }

  // Rows of the interval chart: each decision's advantage, then the running one.
  function intervalRows(c, rollout) {
    const rows = [];
    if (c.mode === "shadow") {
      for (const [metric, e] of Object.entries(c.off_policy || {})) {
        rows.push({ label: `advantage ${metric}`, estimate: e.advantage.estimate,
          interval: e.advantage.interval });
      }
      return rows;
    }
    for (const step of rollout) {
      if (step.comparison === c.id && Array.isArray(step.interval)) {
        rows.push({ label: `${step.kind} at ${integer(step.impressions)}`,
          estimate: step.estimate, interval: step.interval });
      }
    }
    rows.push({ label: `now (${c.phase}), ${integer(c.impressions)}`,
      estimate: c.advantage.estimate, interval: c.advantage.interval });
    return rows;
  }

  // Vertical lines at 0 (solid) and at ± the rule's margin (dashed) across the interval chart.
  const referenceLines = {
    id: "referenceLines",
    afterDatasetsDraw(chart) {
      const x = chart.scales.x;
      const { top, bottom } = chart.chartArea;
      const margin = chart.options.plugins.referenceLines.margin;
      const lines = [[0, []]];
      if (margin > 0) lines.push([margin, [4, 3]], [-margin, [4, 3]]);
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = "#5b6570";
      ctx.lineWidth = 1;
      for (const [value, dash] of lines) {
        if (value < x.min || value > x.max) continue;
        const px = x.getPixelForValue(value);
        ctx.setLineDash(dash);
        ctx.beginPath();
        ctx.moveTo(px, top);
        ctx.lineTo(px, bottom);
        ctx.stroke();
      }
      ctx.restore();
    },
  };

  function intervalChart() {
    if (intervalChartObj) return intervalChartObj;
    intervalChartObj = new Chart($("interval"), {
      type: "bar",
      data: {
        labels: [],
        datasets: [
          { label: "interval", data: [], backgroundColor: "rgba(36, 99, 180, 0.35)",
            borderColor: "#2463b4", borderWidth: 1, barPercentage: 0.5, order: 2 },
          { type: "line", label: "estimate", data: [], indexAxis: "y", showLine: false,
            pointRadius: 5, pointStyle: "rectRot", backgroundColor: "#1d232a",
            borderColor: "#1d232a", order: 1 },
        ],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        indexAxis: "y",
        plugins: { legend: { display: false }, referenceLines: { margin: 0 } },
        scales: { x: { title: { display: true, text: "advantage of the candidate" } } },
      },
      plugins: [referenceLines],
    });
    return intervalChartObj;
  }

  function showComparison(c, rollout) {
    $("comparison-body").hidden = Boolean(c);
    $("comparison-view").hidden = !c;
    if (!c) return;
    const share = c.mode === "interleaved" ? `, ${fixed(c.config.share * 100, 0)}% of requests` : "";
    $("comparison-title").replaceChildren(
      Object.assign(document.createElement("strong"), { textContent: c.candidate }),
      ` against ${c.production} · ${c.mode}${share} · ${c.phase}, serving ${c.serving}` +
        (c.candidate_present ? "" : " · the candidate ranker is gone"),
    );
    $("comparison").dataset.mode = c.mode;
    $("comparison").dataset.phase = c.phase;
    $("comparison-numbers").replaceChildren(
      ...comparisonNumbers(c).map(([key, label, text, value]) => {
        const div = document.createElement("div");
        const dt = document.createElement("dt");
        const dd = document.createElement("dd");
        dt.textContent = label;
        dd.textContent = text;
        dd.id = `cmp-${key}`;
        if (value !== null && value !== undefined) dd.dataset.value = String(value);
        div.append(dt, dd);
        return div;
      }),
    );
    const [state, words] = ruleState(c);
    $("comparison-rule").dataset.state = state;
    $("comparison-rule").textContent = words;
    const rows = intervalRows(c, rollout);
    const rule = c.config && c.config.rollout;
    const margin = rule && c.mode === "interleaved" ? rule.margin : 0;
    $("interval-caption").textContent = rows.length
      ? `${c.mode === "shadow" ? "off-policy advantage" : "advantage Δ = P(candidate wins) − " +
          "P(production wins)"}: estimate (◆) and ${percent(c.alpha)} interval; the line at 0` +
        (margin > 0 ? ` and the dashed ones at ±${margin}` : "")
      : "no advantage is estimable yet (the production ranker logs no list probabilities)";
    const chart = intervalChart();
    chart.data.labels = rows.map((r) => r.label);
    chart.data.datasets[0].data = rows.map((r) => r.interval);
    chart.data.datasets[1].data = rows.map((r) => r.estimate);
    chart.options.plugins.referenceLines.margin = margin;
    chart.options.scales.x.suggestedMin = -margin;
    chart.options.scales.x.suggestedMax = margin;
    chart.update();
  }

  function showRollout(rollout) {
    $("rollout-body").hidden = rollout.length > 0;
    $("rollout-view").hidden = rollout.length === 0;
    $("rollout-table").tBodies[0].replaceChildren(
      ...rollout.map((step) => {
        const row = document.createElement("tr");
        const event = step.kind === "candidate" ? step.action : step.kind;
        row.dataset.kind = event;
        row.dataset.seq = String(step.seq);
        const cfg = step.config;
        let rule = step.rule || "";
        if (event === "attach" && cfg) {
          rule = `${cfg.mode}` + (cfg.mode === "interleaved" ? `, share ${cfg.share}` : "") +
            `, α ${cfg.alpha}` + (cfg.rollout
              ? `; promote after ${integer(cfg.rollout.min_impressions)} impressions when the ` +
                `lower bound > ${cfg.rollout.margin}` + (cfg.rollout.auto ? "" : " (auto off)")
              : "; no rollout rule");
        } else if (step.auto === false && rule === "manual") {
          rule = "by hand (POST …/rollout)";
        }
        const wlt = typeof step.wins === "number"
          ? `${integer(step.wins)} / ${integer(step.losses)} / ${integer(step.ties)}` : "–";
        const cells = [
          [when(step.time), "when"],
          [event, ""],
          [step.candidate || (cfg && cfg.ranker) || "–", ""],
          [typeof step.impressions === "number" ? integer(step.impressions) : "–", "num"],
          [wlt, "num"],
          [fixed(step.estimate), "num"],
          [span(step.interval), "num"],
          [rule, ""],
        ];
        row.append(
          ...cells.map(([text, style]) => {
            const td = document.createElement("td");
            td.textContent = text;
            if (style) td.className = style;
            return td;
          }),
        );
        return row;
      }),
    );
  }

  function showLater(stats) {
    const rollout = stats.rollout || [];
    showComparison(stats.comparison, rollout);
    showRollout(rollout);
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
