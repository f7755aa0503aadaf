// arbor report: draws the page from the JSON blob in #arbor-data.
// Sections: configuration, summary, deltas (several runs), CDFs, time
// series, swim lanes; a --repeat directory's page has the aggregate's
// spread (validity stamp, means, intervals, each run's value) on top. A source is a run directory (source "run") or a plan
// on the virtual clock (source "plan", `arbor plan --report`): a plan has
// the load (in flight, tokens), lanes and swim lanes, and no measured
// distributions, errors or cache hits; what it lacks is left out. When everything has rendered non-empty the page sets
// document.title to "arbor report: ok"; on any error, to
// "arbor report: error: ..." (scripts/check-report.sh reads it).
(function () {
  "use strict";

  var startedAt = performance.now();
  var failed = false;
  function fail(message) {
    failed = true;
    document.title = "arbor report: error: " + message;
    var app = document.getElementById("app");
    if (app) {
      var b = document.createElement("div");
      b.className = "banner";
      b.textContent = "report error: " + message;
      app.insertBefore(b, app.firstChild);
    }
  }
  window.addEventListener("error", function (e) { fail(e.message || String(e)); });

  var COLORS = ["#2563eb", "#e8590c", "#0f9d58", "#9c27b0", "#d81b60", "#00897b", "#795548", "#546e7a"];
  var METRICS = [
    ["ttft", "TTFT"], ["itl", "ITL"], ["tpot", "TPOT"], ["e2e", "E2E"],
    ["lateness", "lateness"], ["queue_wait", "queue wait"], ["job_time", "job time"]
  ];
  var CDFS = METRICS.slice(0, 6);
  var DASH = "–";

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === "text") e.textContent = attrs[k];
        else if (k === "class") e.className = attrs[k];
        else e.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }
  function get(obj, path) {
    return path.split(".").reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }
  function num(v, digits) {
    if (v == null || !isFinite(v)) return DASH;
    return Number(v).toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
  }
  function ms(s) { return s == null ? DASH : num(s * 1000, s * 1000 >= 100 ? 1 : 2); }
  function pct(r) { return r == null ? DASH : num(r * 100, 1) + " %"; }
  function swatch(i) { return el("span", { class: "swatch", style: "background:" + COLORS[i % COLORS.length] }); }
  function runLabel(run, i) { return el("span", {}, [swatch(i), run.name]); }
  function table(head, rows) {
    var t = el("table");
    t.appendChild(el("tr", {}, head.map(function (h, i) {
      return el("th", { class: i === 0 ? "k" : "" }, [h]);
    })));
    rows.forEach(function (r) {
      t.appendChild(el("tr", {}, r.map(function (c, i) {
        var cls = i === 0 ? "k" : "";
        if (c !== null && typeof c === "object") { cls += " " + c.cls; c = c.text; }
        return el("td", { class: cls }, [c]);
      })));
    });
    return t;
  }

  // Label/value rows, left-aligned, no header.
  function facts(rows) {
    var t = el("table");
    rows.forEach(function (r) {
      t.appendChild(el("tr", {}, [el("td", { class: "k", text: r[0] }), el("td", { class: "v", text: r[1] })]));
    });
    return t;
  }

  var data = JSON.parse(document.getElementById("arbor-data").textContent);
  var runs = data.runs || [];
  var app = document.getElementById("app");
  var charts = [];   // {name, plot} drawn with data
  var checks = [];   // functions returning an error message or null
  function isPlan(r) { return r.source === "plan"; }
  var plans = runs.length > 0 && runs.every(isPlan);
  var measured = runs.some(function (r) { return !isPlan(r); });

  // ---- header ----------------------------------------------------------
  app.appendChild(el("h1", { text: plans ? "arbor plan" : "arbor report" }));
  app.appendChild(el("div", { class: "sub", text: plans ?
    "a plan on the virtual clock (--service " + (get(runs[0], "summary.service") || DASH) + "): nothing was sent · " +
      runs[0].path + " · arbor " + data.arbor_version :
    runs.length + " run" + (runs.length === 1 ? "" : "s") +
      ": " + runs.map(function (r) { return r.path; }).join(", ") + " · arbor " + data.arbor_version }));

  // ---- spread (a --repeat directory) -------------------------------------
  // The aggregate's validity stamp, then per headline metric the mean, its
  // 95 % t-interval and each run's value (a dot in the run's colour), on
  // an axis of its own per row.
  var spread = data.spread;
  var spreadRows = [];   // {name, dots} drawn
  var SVG_NS = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs, children) {
    var e = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) { e.appendChild(c); });
    return e;
  }
  // [scale, shown unit, digits] of an aggregate unit.
  function spreadUnit(unit) {
    if (unit === "s") return [1000, "ms", 2];
    if (unit === "ratio") return [100, "%", 1];
    return [1, unit, 2];
  }
  // A value's distance from the mean, as a fraction of the mean (0 when
  // the mean is 0).
  function relative(m, v) { return m.mean === 0 ? 0 : (v - m.mean) / Math.abs(m.mean); }
  // How far a metric's interval and runs reach from its mean, relatively.
  function reach(m) {
    var vs = [m.min, m.max];
    if (m.ci95_low != null) vs.push(m.ci95_low, m.ci95_high);
    return Math.max.apply(null, vs.map(function (v) { return Math.abs(relative(m, v)); }));
  }
  // Every row on one axis: the mean at the centre, ±R of the mean at the
  // edges, on a square-root scale so a 1 % spread shows beside a 50 % one
  // (faint ticks at ±1 % and ±10 %; a value beyond R sits at the edge,
  // hollow).
  function whisker(m, scale, width, R) {
    var H = 22, PAD = 8, half = width / 2 - PAD;
    function at(r) { var f = Math.min(1, Math.abs(r) / R); return width / 2 + (r < 0 ? -1 : 1) * Math.sqrt(f) * half; }
    function X(v) { return at(relative(m, v)); }
    function beyond(v) { return Math.abs(relative(m, v)) > R; }
    var kids = [svgEl("line", { x1: PAD, x2: width - PAD, y1: H / 2, y2: H / 2, stroke: "#d9dee7" })];
    [0.01, 0.1].filter(function (r) { return r < R; }).forEach(function (r) {
      [-r, r].forEach(function (q) { kids.push(svgEl("line", { x1: at(q), x2: at(q), y1: 4, y2: H - 4, stroke: "#d9dee7" })); });
    });
    if (m.ci95_low != null && m.ci95_high != null) {
      var a = X(m.ci95_low), b = X(m.ci95_high);
      kids.push(svgEl("rect", { x: a, y: H / 2 - 4, width: Math.max(1, b - a), height: 8, fill: "#c7d2fe", stroke: "#6366f1", "stroke-width": 1 },
        [svgEl("title", {}, [document.createTextNode("95 % interval " + num(m.ci95_low * scale, 3) + " – " + num(m.ci95_high * scale, 3))])]));
    }
    kids.push(svgEl("line", { x1: X(m.mean), x2: X(m.mean), y1: 2, y2: H - 2, stroke: "#1d2330", "stroke-width": 2 },
      [svgEl("title", {}, [document.createTextNode("mean " + num(m.mean * scale, 3))])]));
    var dots = 0;
    m.points.forEach(function (p) {
      var run = runs[p[0]], out = beyond(p[1]);
      kids.push(svgEl("circle", { cx: X(p[1]), cy: H / 2, r: 4, fill: out ? "#ffffff" : color(p[0]), stroke: out ? color(p[0]) : "#ffffff",
        "stroke-width": out ? 2 : 1, "fill-opacity": 0.9 },
        [svgEl("title", {}, [document.createTextNode((run ? run.name : "run") + ": " + num(p[1] * scale, 3))])]));
      dots++;
    });
    return { svg: svgEl("svg", { width: width, height: H, viewBox: "0 0 " + width + " " + H, class: "whisker" }, kids), dots: dots };
  }
  if (spread) {
    var planned = spread.runs_planned == null ? "?" : String(spread.runs_planned);
    app.appendChild(el("h2", { text: "Spread: " + spread.runs_complete + " of " + planned + " runs complete" }));
    // Runs of no recipe are no submission: no validity stamp, only what
    // else went wrong (aggregate.json keeps its fail-closed false).
    var others = spread.submission_invalid_reasons.filter(function (r) { return r !== "no_scenario"; });
    var stamp = spread.submission_valid ?
      el("div", { class: "stamp valid" }, [(spread.scenario || "aggregate") + ": submission_valid: true"]) :
      spread.scenario == null ?
      el("div", { class: "note", text: "No recipe (--scenario): not a submission, so no validity stamp" +
        (others.length ? "; " + others.join(", ") : "") + "." }) :
      el("div", { class: "stamp invalid" }, [
        el("div", { text: spread.scenario + ": submission_valid: false" }),
        el("ul", {}, spread.submission_invalid_reasons.map(function (r) { return el("li", { text: r }); }))
      ]);
    app.appendChild(stamp);
    app.appendChild(el("div", { class: "note" }, spread.runs.map(function (r) {
      return el("span", { class: "legend-item" }, r.page_run == null ?
        [el("span", { class: "swatch", style: "background:#ffffff;border:1px solid #9aa5b1" }), r.dir + " (" + r.state + ")"] :
        [swatch(r.page_run), r.dir + " (" + r.state + ")"]);
    })));
    app.appendChild(el("div", { class: "note", text: "Per headline metric of aggregate.json, over the complete runs: the mean (black tick), its " +
      Math.round(spread.confidence * 100) + " % Student-t interval (band) and each run's value (a dot in the run's colour; hover for the numbers). " +
      "Every row is drawn relative to its own mean on one axis (square-root scale; faint ticks at ±1 % and ±10 % of the mean), so wide bands are the noisy metrics; " +
      "a value beyond the axis sits at its edge, hollow. One run has no interval. Intervals are cut to what a metric can take (a latency is never below 0, a ratio never above 1)." }));
    var fewest = Math.min.apply(null, spread.metrics.map(function (m) { return m.n; }).concat([Infinity]));
    if (fewest >= 2 && fewest < 5) {
      app.appendChild(el("div", { class: "note", text: "With " + fewest + " runs (t = " +
        num(spread.metrics.filter(function (m) { return m.n === fewest; })[0].t_critical, 2) +
        ") an interval bounds little: --repeat 5 or more narrows it." }));
    }
    var wide = 360;
    // The axis: the widest reach among the rows, from 1 % to 100 % of the
    // mean (a reach beyond is drawn at the edge).
    var R = Math.min(1, Math.max(0.01, Math.max.apply(null, spread.metrics.map(reach).concat([0]))));
    var t = table(["metric", "n", "mean", Math.round(spread.confidence * 100) + " % interval", "± % of mean", "sd", "min – max",
      "runs: mean ± " + num(R * 100, R < 0.1 ? 1 : 0) + " % (√ scale)"], []);
    spread.metrics.forEach(function (m) {
      var u = spreadUnit(m.unit), w = whisker(m, u[0], wide, R);
      var plusMinus = m.ci95_low == null || m.mean === 0 ? DASH : num(100 * (m.ci95_high - m.mean) / Math.abs(m.mean), 1);
      var cell = el("td", { class: "k" });
      cell.appendChild(w.svg);
      var interval = m.ci95_low == null ? DASH : num(m.ci95_low * u[0], u[2]) + " – " + num(m.ci95_high * u[0], u[2]);
      t.appendChild(el("tr", {}, [
        el("td", { class: "k", text: m.name + " (" + u[1] + ")" }),
        el("td", { text: String(m.n) }),
        el("td", { text: num(m.mean * u[0], u[2]) }),
        el("td", { text: interval }),
        el("td", { text: plusMinus }),
        el("td", { text: m.std == null ? DASH : num(m.std * u[0], u[2]) }),
        el("td", { text: num(m.min * u[0], u[2]) + " – " + num(m.max * u[0], u[2]) }),
        cell
      ]));
      spreadRows.push({ name: m.name, dots: w.dots });
    });
    app.appendChild(t);
  }

  // ---- configuration ---------------------------------------------------
  function validity(s) {
    if (s.cancelled) return "cancelled by Ctrl+C";
    if (!s.scenario) return "no recipe (--scenario): not a submission";
    if (s.submission_valid) return s.scenario + ": valid";
    return s.scenario + ": INVALID: " + (s.submission_invalid_reasons || []).join("; ");
  }
  function workload(c) {
    var w = c.inputs || (c.input_paths || []).join(", ") || DASH;
    if (c.format) w += " (" + c.format + ")";
    return w;
  }
  // [label, of a run's summary.json, of a plan's plan --json]
  var CONFIG = [
    ["workload", function (s) { return workload(s.config || {}); }, function (s) { return s.inputs || DASH; }],
    ["endpoint", function (s) { return get(s, "config.url") || get(s, "config.endpoint") || DASH; },
      function (s) { return "none: the virtual clock, --service " + (s.service || DASH); }],
    ["model", function (s) { var c = s.config || {}; return (c.model || DASH) + (c.model_from ? " (from " + c.model_from + ")" : ""); },
      function () { return DASH; }],
    ["seed", function (s) { var v = get(s, "config.seed"); return v == null ? DASH : String(v); },
      function (s) { return s.seed == null ? DASH : String(s.seed); }],
    ["arbor version", function (s) { return s.arbor_version || DASH; }, function () { return data.arbor_version || DASH; }],
    ["started", function (s) { return s.started_at || DASH; }, function () { return DASH; }],
    ["validity", validity, function (s) { return (s.scenario ? s.scenario + ": " : "") + "a plan: nothing measured"; }],
    ["records", function (s, run) { return String(run.records); }, function (s, run) { return run.records + " planned requests"; }],
    ["policy", function (s) { return policyText(s.config && s.config.policy); },
      function (s) { return policyText(s.policy); }]
  ];
  // A policy as "key value" pairs, one per line-wrap, nulls shown as "–".
  function policyText(p) {
    if (!p) return DASH;
    return Object.keys(p).map(function (k) {
      var v = p[k];
      return k + " " + (v == null ? DASH : typeof v === "object" ? JSON.stringify(v) : String(v));
    }).join(" · ");
  }
  // ---- warnings: what a reader must know before the figures -----------
  // (summary.json's warnings: the failures in the server's own words,
  // outputs shorter than planned, another model's answers.)
  runs.forEach(function (run) {
    var w = (run.summary || {}).warnings || [];
    if (!w.length) return;
    var box = el("div", { class: "warnings" }, [
      el("div", { class: "k", text: (runs.length > 1 ? run.name + ": " : "") +
        w.length + (w.length === 1 ? " warning" : " warnings") })
    ]);
    w.forEach(function (line) { box.appendChild(el("div", { text: line })); });
    app.appendChild(box);
  });

  app.appendChild(el("h2", { text: "Configuration" }));
  var cfg = el("table");
  cfg.appendChild(el("tr", {}, [el("th", { class: "k", text: "" })].concat(runs.map(function (r, i) {
    return el("th", { class: "k" }, [runLabel(r, i)]);
  }))));
  CONFIG.forEach(function (row) {
    cfg.appendChild(el("tr", {}, [el("td", { class: "k", text: row[0] })].concat(runs.map(function (r) {
      return el("td", { class: "v", text: row[isPlan(r) ? 2 : 1](r.summary || {}, r) });
    }))));
  });
  app.appendChild(cfg);

  // ---- summary -----------------------------------------------------------
  app.appendChild(el("h2", { text: "Summary" }));
  if (measured) app.appendChild(el("div", { class: "note", text: "Milliseconds. TTFT, ITL, TPOT and E2E over successful requests; lateness and queue wait over every request with the stamps; job time per complete play. An empty distribution shows " + DASH + "." }));
  function planSummary(s) {
    var d = s.demand || {}, q = s.queue_wait;
    app.appendChild(facts([
      ["workload", num(s.trees, 0) + " trees, " + num(s.agents, 0) + " agents, " + num(s.turns, 0) + " turns"],
      ["requests", num(s.dispatched, 0) + " dispatched (" + num(s.warmups, 0) + " warmups), " + num(s.completed, 0) + " completed, " +
        num(s.skipped, 0) + " skipped, " + num(s.cancelled, 0) + " cancelled; " + num(s.plays, 0) + " plays"],
      ["makespan", num(s.makespan_s, 3) + " s (plan's clock)"],
      ["peak in flight", num(s.peak_inflight, 0) + " planned, first at " + num(s.peak_inflight_at_s, 3) + " s (plan's clock)"],
      ["peak live trees", num(s.peak_live_trees, 0) + " at " + num(s.peak_live_trees_at_s, 3) + " s"],
      ["demand", num(d.requests_per_s, 3) + " req/s, " + num(d.input_tokens_per_s, 0) + " input tok/s, " +
        num(d.output_tokens_per_s, 0) + " output tok/s over the makespan (" + num(d.input_tokens, 0) + " in, " + num(d.output_tokens, 0) + " out)"],
      ["idle-gap shifts", num(s.idle_shifts, 0) + " (" + num(s.idle_skipped_s, 3) + " s skipped)"]
    ]));
    if (s.lanes && s.lanes.length) {
      app.appendChild(el("h3", { text: "Lanes (--sessions)" }));
      app.appendChild(table(["lane", "trees dealt", "plays", "recycles", "ran dry at (s)", "t* (s)", "warmups", "stalled"],
        s.lanes.map(function (l) {
          return ["lane " + l.lane, num(l.share, 0), num(l.plays, 0), num(l.recycles, 0),
            l.dry_at_s == null ? "still playing at the end" : num(l.dry_at_s, 3),
            num(l.t_star_s, 3), num(l.warmups, 0), l.stalled ? "yes" : "no"];
        })));
    }
    var tb = s.time_breakdown;
    if (tb && tb.classes && tb.classes.length) {
      app.appendChild(el("h3", { text: "Where the time goes (critical path of " + num(tb.path_requests, 0) + " requests)" }));
      app.appendChild(table(["class", "time (s)", "share", "scaled by"],
        tb.classes.filter(function (c) { return c.ns !== 0; }).map(function (c) {
          return [c.class, num(c.s, 3), pct(c.share), c.scaled_by];
        })));
    }
    if (q && q.count) {
      app.appendChild(table(["planned (ms)", "count", "mean", "p50", "p90", "p95", "p99", "max"],
        [["queue wait", num(q.count, 0), ms(q.mean_s), ms(q.p50_s), ms(q.p90_s), ms(q.p95_s), ms(q.p99_s), ms(q.max_s)]]));
    }
  }
  if (plans) {
    app.appendChild(el("div", { class: "note", text: "What the plan asks of a server. A plan measures no latency: TTFT, ITL, TPOT, E2E and lateness come from a run." }));
  }
  runs.forEach(function (run, i) {
    var s = run.summary || {};
    if (runs.length > 1) app.appendChild(el("h3", {}, [runLabel(run, i)]));
    if (isPlan(run)) { planSummary(s); return; }
    var c = s.counts || {}, t = s.throughput || {}, k = s.concurrency || {};
    var errs = Object.keys(s.errors || {}).map(function (e) { return e + " " + s.errors[e]; }).join(", ");
    app.appendChild(facts([
      ["requests", num(c.dispatched, 0) + " dispatched, " + num(c.ok, 0) + " ok, " + num(c.failed, 0) + " failed, " + num(c.cancelled, 0) + " cancelled, " + num(c.skipped, 0) + " skipped"],
      ["throughput", num(t.requests_per_s, 2) + " req/s, " + num(t.input_tokens_per_s, 0) + " input tok/s, " + num(t.output_tokens_per_s, 0) + " output tok/s over " + num(t.window_s, 3) + " s"],
      ["peak in flight", num(k.observed_peak, 0) + " observed, " + num(k.planned_peak, 0) + " planned"],
      ["cache hits", pct(get(s, "cache.hit_ratio")) + " server-reported"],
      ["errors", errs || "none"]
    ]));
    var rows = METRICS.map(function (m) {
      var d = get(s, "latency." + m[0]) || {};
      var empty = !d.count;
      var cell = function (key) { return empty ? DASH : ms(d[key]); };
      return [m[1], empty ? DASH : num(d.count, 0), cell("mean_s"), cell("p50_s"), cell("p90_s"), cell("p95_s"), cell("p99_s"), cell("max_s")];
    });
    app.appendChild(table(["metric (ms)", "count", "mean", "p50", "p90", "p95", "p99", "max"], rows));
  });

  // ---- deltas ------------------------------------------------------------
  var HEADLINES = [
    ["TTFT p50 (ms)", "latency.ttft.p50_s", 1000, -1], ["TTFT p99 (ms)", "latency.ttft.p99_s", 1000, -1],
    ["ITL p50 (ms)", "latency.itl.p50_s", 1000, -1], ["ITL p99 (ms)", "latency.itl.p99_s", 1000, -1],
    ["TPOT p50 (ms)", "latency.tpot.p50_s", 1000, -1], ["E2E p50 (ms)", "latency.e2e.p50_s", 1000, -1],
    ["E2E p99 (ms)", "latency.e2e.p99_s", 1000, -1], ["lateness p99 (ms)", "latency.lateness.p99_s", 1000, -1],
    ["job time p90 (s)", "latency.job_time.p90_s", 1, -1], ["requests/s", "throughput.requests_per_s", 1, 1],
    ["output tok/s", "throughput.output_tokens_per_s", 1, 1], ["input tok/s", "throughput.input_tokens_per_s", 1, 1],
    ["failed requests", "counts.failed", 1, -1], ["cache-hit ratio (%)", "cache.hit_ratio", 100, 0]
  ];
  function headline(run, h) {
    var s = run.summary || {};
    var dist = h[1].match(/^latency\.(\w+)\./);
    if (dist && !get(s, "latency." + dist[1] + ".count")) return null;
    var v = get(s, h[1]);
    return v == null ? null : v * h[2];
  }
  if (runs.length > 1) {
    app.appendChild(el("h2", { text: "Deltas against " + runs[0].name }));
    app.appendChild(el("div", { class: "note", text: "Each run against the first. Green: better (lower latency, higher throughput); red: worse." }));
    var head = ["metric", runs[0].name];
    runs.slice(1).forEach(function (r) { head.push(r.name, "Δ", "Δ %"); });
    app.appendChild(table(head, HEADLINES.map(function (h) {
      var base = headline(runs[0], h);
      var row = [h[0], num(base, 2)];
      runs.slice(1).forEach(function (r) {
        var v = headline(r, h);
        var d = (v == null || base == null) ? null : v - base;
        var cls = d == null || d === 0 || h[3] === 0 ? "" : (d * h[3] > 0 ? "good" : "bad");
        row.push(num(v, 2), { text: d == null ? DASH : (d > 0 ? "+" : "") + num(d, 2), cls: cls },
          { text: d == null || !base ? DASH : (d > 0 ? "+" : "") + num(100 * d / base, 1) + " %", cls: cls });
      });
      return row;
    })));
  }

  // ---- swim lanes --------------------------------------------------------
  app.appendChild(el("h2", { text: "Swim lanes" }));
  var laneRun = 0;
  var controls = el("div", { class: "controls" });
  if (runs.length > 1) {
    var sel = el("select");
    runs.forEach(function (r, i) { sel.appendChild(el("option", { value: String(i), text: r.name })); });
    sel.addEventListener("change", function () { laneRun = Number(sel.value); lanes.load(runs[laneRun]); });
    controls.appendChild(el("span", { text: "run " }));
    controls.appendChild(sel);
  }
  var reset = el("button", { text: "reset zoom" });
  controls.appendChild(reset);
  (plans ? [["#c3c9d4", "eligible → sent (queue wait)"], ["#2563eb", "planned service (sent → end)"],
   ["#9c27b0", "cancelled"], ["#9aa5b1", "warmup"], ["#2f9e44", "spawn"], ["#7048e8", "join"]] :
  [["#c3c9d4", "eligible → sent (lateness, queue wait included)"], ["#f59f00", "sent → first token"],
   ["#2563eb", "streaming"], ["#d62828", "failed"], ["#9c27b0", "cancelled"], ["#9aa5b1", "warmup"], ["#2f9e44", "spawn"], ["#7048e8", "join"]]).forEach(function (l) {
    controls.appendChild(el("span", { class: "legend-item" }, [el("span", { class: "swatch", style: "background:" + l[0] }), l[1]]));
  });
  app.appendChild(controls);
  app.appendChild(el("div", { class: "note", text: "One row per agent of each play (a tree's instance), grouped by play; the space between bars is tool/think time or waiting on other agents." +
    (plans ? " The plan's turns on its virtual clock: each bar from eligible to its planned end." : "") +
    " Wheel: zoom time; drag: pan; double-click or the button: reset. Hover a bar for its " + (plans ? "planned turn." : "record.") }));
  var edgesNote = el("div", { class: "note" });
  app.appendChild(edgesNote);
  var laneStatus = el("div", { class: "note" });
  app.appendChild(laneStatus);
  var wrap = el("div", { id: "lanes-wrap" });
  var canvas = el("canvas", { id: "lanes" });
  var tip = el("div", { id: "tip" });
  wrap.appendChild(canvas);
  wrap.appendChild(tip);
  app.appendChild(wrap);

  var lanes = (function () {
    var LABEL_W = 190, AXIS_H = 22, MAX_H = 640;
    var L = null, E = null, P = false, rowOf = null, rows = 0, rowH = 12, x0 = 0, x1 = 1, yOff = 0, spanEnd = 1;
    var W = 0, H = 0, plotH = 0, dpr = window.devicePixelRatio || 1;
    var ctx = canvas.getContext("2d");
    var stats = { drawn: 0, ms: 0 };

    function load(run) {
      L = run.lanes;
      E = run.edges;
      P = isPlan(run);
      rows = L.rows.length;
      rowOf = new Int32Array(L.done_us.length);
      for (var r = 0; r < rows; r++) for (var k = L.row_start[r]; k < L.row_start[r + 1]; k++) rowOf[k] = r;
      spanEnd = 1;
      for (var i = 0; i < L.done_us.length; i++) if (L.done_us[i] > spanEnd) spanEnd = L.done_us[i];
      rowH = Math.max(3, Math.min(20, Math.floor(MAX_H / Math.max(1, rows))));
      plotH = Math.min(MAX_H, rows * rowH);
      W = Math.max(400, wrap.clientWidth || 1200);
      H = plotH + AXIS_H;
      canvas.width = Math.round(W * dpr);
      canvas.height = Math.round(H * dpr);
      canvas.style.width = W + "px";
      canvas.style.height = H + "px";
      edgesNote.textContent = run.edges ?
        "Arrows: spawn (green) from the parent's turn to the subagent's first turn; join (violet) from the subagent's last turn to the parent's turn that waits for it." :
        "Spawn and join arrows are not drawn: this run directory has no trees.jsonl (written by an older arbor).";
      if (L.left_out > 0) {
        var kept = L.done_us.length;
        edgesNote.textContent += " The lanes show the plays that reported a turn first, whole: " +
          kept.toLocaleString("en-US") + " of " + (kept + L.left_out).toLocaleString("en-US") + " turns (a page keeps about 100,000); every turn is in the charts above and in records.jsonl.";
      }
      resetView();
    }
    function resetView() { x0 = 0; x1 = spanEnd * 1.01; yOff = 0; draw(); }
    function X(t) { return LABEL_W + (t - x0) / (x1 - x0) * (W - LABEL_W); }
    function T(px) { return x0 + (px - LABEL_W) / (W - LABEL_W) * (x1 - x0); }
    function firstVisible(s, e) {
      // First turn of the row [s, e) whose sent >= x0, then back over any
      // earlier turn still running at x0.
      var lo = s, hi = e;
      while (lo < hi) { var mid = (lo + hi) >> 1; if (L.sent_us[mid] < x0) lo = mid + 1; else hi = mid; }
      while (lo > s && L.done_us[lo - 1] >= x0) lo--;
      return lo;
    }
    function niceStep(span) {
      var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw)));
      var m = raw / p;
      return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
    }
    function draw() {
      if (!L) return;
      var started = performance.now();
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, H);
      ctx.font = "11px system-ui, sans-serif";
      var r0 = Math.max(0, Math.floor(yOff / rowH)), r1 = Math.min(rows, Math.ceil((yOff + plotH) / rowH));
      var drawn = 0, prevPlay = null;
      for (var r = r0; r < r1; r++) {
        var y = AXIS_H + r * rowH - yOff, row = L.rows[r];
        if (row.play % 2 === 1) { ctx.fillStyle = "#f5f7fa"; ctx.fillRect(0, y, W, rowH); }
        if (rowH >= 6 && prevPlay !== null && row.play !== prevPlay) {
          ctx.fillStyle = "#aab2bf"; ctx.fillRect(0, y, W, 1);
        }
        prevPlay = row.play;
        if (rowH >= 9) {
          ctx.fillStyle = "#1d2330";
          var first = r === 0 || L.rows[r - 1].play !== row.play;
          var label = first ? row.tree + " #" + row.play + (row.lane != null ? " L" + row.lane : "") : "  " + row.agent;
          ctx.save(); ctx.beginPath(); ctx.rect(0, y, LABEL_W - 6, rowH); ctx.clip();
          ctx.textBaseline = "middle";
          ctx.fillText(label, 4, y + rowH / 2); ctx.restore();
        }
        var s = L.row_start[r], e = L.row_start[r + 1];
        var barY = y + (rowH >= 6 ? 1 : 0), barH = Math.max(1, rowH - (rowH >= 6 ? 2 : 0));
        var lastPx = -1;
        for (var i = firstVisible(s, e); i < e; i++) {
          if (L.sent_us[i] > x1) break;
          var xe = X(L.eligible_us[i]), xs = X(L.sent_us[i]), xd = X(L.done_us[i]);
          var xf = L.first_us[i] >= 0 ? X(L.first_us[i]) : xd;
          if (xd < LABEL_W) continue;
          // Merge bars narrower than a pixel that fall on a pixel drawn.
          if (Math.floor(xd) <= lastPx) continue;
          var st = L.status[i];
          var left = Math.max(LABEL_W, xe);
          if (st === 0 && P) {
            fill("#c3c9d4", left, xs, barY, barH);
            fill("#2563eb", Math.max(LABEL_W, xs), xd, barY, barH);
          } else if (st === 0) {
            fill("#c3c9d4", left, xs, barY, barH);
            fill("#f59f00", Math.max(LABEL_W, xs), xf, barY, barH);
            fill("#2563eb", Math.max(LABEL_W, xf), xd, barY, barH);
          } else {
            fill("#c3c9d4", left, xs, barY, barH);
            fill(st === 1 ? "#d62828" : st === 2 ? "#9c27b0" : "#9aa5b1", Math.max(LABEL_W, xs), xd, barY, barH);
          }
          lastPx = Math.floor(Math.max(xd, left + 1));
          drawn++;
        }
      }
      if (E) drawArrows(r0, r1);
      // Time axis.
      ctx.fillStyle = "#ffffff"; ctx.fillRect(0, 0, W, AXIS_H);
      ctx.fillStyle = "#667085"; ctx.fillRect(LABEL_W, AXIS_H - 1, W - LABEL_W, 1);
      var step = niceStep(x1 - x0);
      for (var t = Math.ceil(x0 / step) * step; t <= x1; t += step) {
        var px = X(t);
        ctx.fillRect(px, AXIS_H - 5, 1, 5);
        ctx.fillText(fmtSecs(t, step), px + 2, AXIS_H - 8);
      }
      ctx.fillStyle = "#1d2330";
      ctx.fillText("s from start", 4, AXIS_H - 8);
      stats.drawn = drawn;
      stats.ms = performance.now() - started;
      laneStatus.textContent = "rows " + (r0 + 1) + "–" + r1 + " of " + rows + (r1 - r0 < rows ? " (drag up/down or shift+wheel for more)" : "") +
        " · " + (x0 / 1e6).toFixed(3) + "–" + (x1 / 1e6).toFixed(3) + " s · " + drawn + " bars drawn in " + stats.ms.toFixed(1) + " ms";
      window.__arborLanes = stats;
    }
    function drawArrows(r0, r1) {
      ctx.save();
      ctx.beginPath(); ctx.rect(LABEL_W, AXIS_H, W - LABEL_W, plotH); ctx.clip();
      ctx.lineWidth = 1.2;
      for (var k = 0; k < E.length; k++) {
        var a = E[k][0], b = E[k][1], ra = rowOf[a], rb = rowOf[b];
        if (Math.max(ra, rb) < r0 || Math.min(ra, rb) >= r1) continue;
        var xa = X(L.done_us[a]), xb = X(L.sent_us[b]);
        if (Math.max(xa, xb) < LABEL_W || Math.min(xa, xb) > W) continue;
        var ya = AXIS_H + ra * rowH - yOff + rowH / 2, yb = AXIS_H + rb * rowH - yOff + rowH / 2;
        var color = E[k][2] === 0 ? "#2f9e44" : "#7048e8";
        ctx.strokeStyle = color; ctx.fillStyle = color;
        ctx.beginPath(); ctx.moveTo(xa, ya); ctx.lineTo(xb, yb); ctx.stroke();
        var ang = Math.atan2(yb - ya, xb - xa), head = 5;
        ctx.beginPath(); ctx.moveTo(xb, yb);
        ctx.lineTo(xb - head * Math.cos(ang - 0.45), yb - head * Math.sin(ang - 0.45));
        ctx.lineTo(xb - head * Math.cos(ang + 0.45), yb - head * Math.sin(ang + 0.45));
        ctx.closePath(); ctx.fill();
      }
      ctx.restore();
    }
    function fill(c, a, b, y, h) {
      if (b < LABEL_W) return;
      ctx.fillStyle = c;
      ctx.fillRect(a, y, Math.max(1, b - a), h);
    }
    function fmtSecs(us, step) {
      var digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step / 1e6))));
      return (us / 1e6).toFixed(digits);
    }
    function hit(px, py) {
      if (!L || px < LABEL_W || py < AXIS_H) return -1;
      var r = Math.floor((py - AXIS_H + yOff) / rowH);
      if (r < 0 || r >= rows) return -1;
      var tol = 3 * (x1 - x0) / (W - LABEL_W), t = T(px);
      var s = L.row_start[r], e = L.row_start[r + 1], best = -1;
      for (var i = firstVisible(s, e); i < e && L.sent_us[i] <= x1; i++) {
        if (L.eligible_us[i] - tol <= t && t <= L.done_us[i] + tol) { best = i; if (t <= L.done_us[i]) break; }
      }
      return best;
    }
    function describe(i) {
      var row = L.rows[(function () { var lo = 0, hi = rows - 1; while (lo < hi) { var m = (lo + hi + 1) >> 1; if (L.row_start[m] <= i) lo = m; else hi = m - 1; } return lo; })()];
      var f = function (us) { return us < 0 ? "null" : (us / 1e6).toFixed(6); };
      var d = function (a, b) { return a < 0 || b < 0 ? "null" : ((b - a) / 1000).toFixed(3) + " ms"; };
      if (P) {
        return [
          "planned request " + L.request[i] + "   " + ["ok", "failed", "cancelled", "warmup"][L.status[i]],
          "tree        " + row.tree + "   play " + row.play + "   copy " + row.copy + (row.lane != null ? "   lane " + row.lane : ""),
          "agent       " + row.agent + "   turn " + L.turn[i],
          "eligible_s  " + f(L.eligible_us[i]) + "   sent_s " + f(L.sent_us[i]) + "   end_s " + f(L.done_us[i]),
          "queue wait  " + (L.queue_wait_us[i] / 1000).toFixed(3) + " ms   service " + d(L.sent_us[i], L.done_us[i]),
          "tokens      in " + L.input_tokens[i] + "  out " + L.output_tokens[i]
        ].join("\n");
      }
      var lines = [
        "request     " + L.request[i] + "   status " + ["ok", "error", "cancelled", "warmup"][L.status[i]],
        "tree        " + row.tree + "   play " + row.play + "   copy " + row.copy + (row.lane != null ? "   lane " + row.lane : ""),
        "agent       " + row.agent + "   turn " + L.turn[i],
        "eligible_s  " + f(L.eligible_us[i]) + "   sent_s " + f(L.sent_us[i]),
        "first_s     " + f(L.first_us[i]) + "   done_s " + f(L.done_us[i]),
        "queue wait  " + (L.queue_wait_us[i] / 1000).toFixed(3) + " ms   lateness " + d(L.eligible_us[i], L.sent_us[i]),
        "ttft        " + d(L.sent_us[i], L.first_us[i]) + "   e2e " + d(L.sent_us[i], L.done_us[i]),
        "tokens      in " + L.input_tokens[i] + "  out " + L.output_tokens[i] + "  cached " + (L.cached_tokens[i] < 0 ? "null" : L.cached_tokens[i])
      ];
      if (L.error[i] >= 0) {
        var er = L.errors[L.error[i]];
        lines.push("error       " + er.category + ": " + er.message.slice(0, 120));
      }
      return lines.join("\n");
    }

    var drag = null;
    canvas.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var rect = canvas.getBoundingClientRect(), px = ev.clientX - rect.left;
      if (ev.shiftKey) {
        yOff = Math.max(0, Math.min(rows * rowH - plotH, yOff + ev.deltaY));
      } else {
        var t = T(Math.max(LABEL_W, px)), k = Math.exp(ev.deltaY * 0.0015);
        var span = Math.max(10, (x1 - x0) * k);
        x0 = t - (t - x0) * span / (x1 - x0);
        x1 = x0 + span;
      }
      draw();
    }, { passive: false });
    canvas.addEventListener("mousedown", function (ev) {
      drag = { x: ev.clientX, y: ev.clientY, x0: x0, x1: x1, yOff: yOff };
      canvas.classList.add("dragging");
    });
    window.addEventListener("mouseup", function () { drag = null; canvas.classList.remove("dragging"); });
    canvas.addEventListener("mousemove", function (ev) {
      var rect = canvas.getBoundingClientRect(), px = ev.clientX - rect.left, py = ev.clientY - rect.top;
      if (drag) {
        var dt = (ev.clientX - drag.x) / (W - LABEL_W) * (drag.x1 - drag.x0);
        x0 = drag.x0 - dt; x1 = drag.x1 - dt;
        yOff = Math.max(0, Math.min(Math.max(0, rows * rowH - plotH), drag.yOff - (ev.clientY - drag.y)));
        tip.style.display = "none";
        draw();
        return;
      }
      var i = hit(px, py);
      if (i < 0) { tip.style.display = "none"; return; }
      tip.textContent = describe(i);
      tip.style.display = "block";
      tip.style.left = Math.min(px + 14, W - 460) + "px";
      tip.style.top = (py + 14) + "px";
    });
    canvas.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    canvas.addEventListener("dblclick", resetView);
    reset.addEventListener("click", resetView);
    return { load: load, draw: draw, stats: stats, rows: function () { return rows; }, turns: function () { return L ? L.request.length : 0; } };
  })();

  // ---- charts (uPlot) --------------------------------------------------
  function chartWidth(box) { return Math.max(320, box.clientWidth || 620); }
  // tables: [[x...], [y...]] per series; names/colors per series.
  function plot(box, title, unitX, unitY, series, opts) {
    opts = opts || {};
    box.appendChild(el("div", { class: "chart-title", text: title }));
    var withData = series.filter(function (s) { return s.x.length > 0; });
    if (withData.length === 0) {
      box.appendChild(el("div", { class: "empty", text: opts.emptyText || "no values" }));
      return null;
    }
    var joined = withData.length === 1 ? [withData[0].x, withData[0].y]
      : uPlot.join(withData.map(function (s) { return [s.x, s.y]; }));
    var u = new uPlot({
      width: chartWidth(box), height: opts.height || 220,
      scales: { x: opts.logX ? { time: false, distr: 3 } : { time: false }, y: opts.yRange ? { range: opts.yRange } : { auto: true } },
      axes: [{ label: unitX, size: 40 }, { label: unitY, size: 60 }],
      legend: { live: true },
      series: [{ label: unitX, value: function (u, v) { return v == null ? DASH : num(v, 3); } }].concat(withData.map(function (s) {
        return {
          label: s.name, stroke: s.color, width: 1.5, spanGaps: true, dash: s.dash,
          paths: s.points ? function () { return null; } : s.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
          points: s.points ? { show: true, size: 9, fill: s.color, stroke: s.color } : undefined,
          value: function (u, v) { return v == null ? DASH : num(v, opts.digits == null ? 3 : opts.digits); }
        };
      }))
    }, joined, box);
    charts.push({ name: title, plot: u });
    return u;
  }
  function toMs(xs) { return xs.map(function (v) { return v * 1000; }); }
  function color(i) { return COLORS[i % COLORS.length]; }

  // ---- CDFs --------------------------------------------------------------
  // A distribution no source has (a plan has only queue wait, and that
  // only under --max-inflight) is left out, not drawn empty.
  var shownCdfs = CDFS.filter(function (m) { return runs.some(function (r) { return r.cdf && r.cdf[m[0]]; }); });
  app.appendChild(el("h2", { text: "Distributions (CDF)" }));
  app.appendChild(el("div", { class: "note", text: shownCdfs.length === 0 ?
    "A plan has no distributions to draw: latency is measured by a run, and the plan's queue wait exists only under --max-inflight." :
    plans ? "Fraction of planned requests (warmups included) that waited at most x ms for the --max-inflight cap." :
    "Fraction of requests at most x ms; warmups left out; up to a few hundred points per curve (denser in the top 1 %). Exact up to 100,000 values, then (and for ITL always) from a 3-significant-digit histogram, as the summary counts them." + (runs.length > 1 ? " Runs overlaid." : "") }));
  var logBox = el("input", { type: "checkbox", id: "cdf-log" });
  if (shownCdfs.length) {
    app.appendChild(el("div", { class: "controls" }, [logBox, el("label", { for: "cdf-log", text: " log scale for x (values of 0 left out)" })]));
  }
  var cdfGrid = el("div", { class: "grid" });
  app.appendChild(cdfGrid);
  function drawCdfs(log) {
    cdfGrid.textContent = "";
    shownCdfs.forEach(function (m) {
      var box = el("div", { class: "chart" });
      cdfGrid.appendChild(box);
      plot(box, m[1] + " CDF", "ms", "fraction", runs.map(function (r, i) {
        var c = (r.cdf || {})[m[0]] || { x: [], p: [], n: 0 };
        var same = c.x.length === 1 ? ", all " + num(c.x[0] * 1000, 2) + " ms" : "";
        var x = toMs(c.x), y = c.p;
        if (log) {
          var keep = x.map(function (v) { return v > 0; });
          x = x.filter(function (v, k) { return keep[k]; });
          y = y.filter(function (v, k) { return keep[k]; });
        }
        return { name: r.name + " (n=" + c.n + same + ")", color: color(i), x: x, y: y };
      }), { yRange: [0, 1], logX: log, emptyText: m[1] + ": no values" + (log ? " above 0" : "") + " (" + DASH + ")" });
    });
  }
  drawCdfs(false);
  logBox.addEventListener("change", function () { drawCdfs(logBox.checked); });

  // ---- time series -----------------------------------------------------
  app.appendChild(el("h2", { text: "Over time" }));
  var bins = runs.map(function (r) { return num(r.series.bin_s * 1000, 0) + " ms"; }).join(" / ");
  app.appendChild(el("div", { class: "note", text: plans ?
    "Seconds on the plan's virtual clock, in bins of " + bins + ". In flight: requests sent and not yet ended (warmups included, as the planned peak counts them). " +
      "Demand: input tokens/s are the prompts of the requests sent in each bin (a plan knows no prefill time); output tokens/s spread each request's output over its planned service (sent to end)." :
    "Seconds from each run's start, in bins of " + bins + ". Tokens are spread over each request's prefill (input) or streaming (output); TTFT percentiles and cache hits by the bin a request was sent in; errors by the bin it ended in." +
      " The planned series is the run's plan on its virtual clock (planned.json), from the same start." }));
  var seriesGrid = el("div", { class: "grid" });
  app.appendChild(seriesGrid);
  function seriesChart(title, unitY, make, opts) {
    var box = el("div", { class: "chart" });
    seriesGrid.appendChild(box);
    var list = [];
    runs.forEach(function (r, i) { make(r, i, list); });
    return plot(box, title, "s", unitY, list, opts);
  }
  function nameOf(r, what) { return runs.length > 1 ? r.name + ": " + what : what; }
  // The planned peak: a dashed line over the span, and (a plan's) a
  // point where it is first reached.
  function peakMarks(r, list, peak, at) {
    var s = r.series;
    if (peak == null || !s.t_s.length) return;
    var where = at == null ? "" : " at " + num(at, 3) + " s (plan's clock)";
    list.push({ name: nameOf(r, "planned peak " + num(peak, 0) + where), color: "#888", x: s.t_s, y: s.t_s.map(function () { return peak; }), dash: [8, 4] });
    if (at != null) list.push({ name: nameOf(r, "peak first reached"), color: "#d62828", x: [at], y: [peak], points: true });
  }
  seriesChart(plans ? "Planned requests in flight" : "Requests in flight, observed against planned", "requests", function (r, i, list) {
    var s = r.series;
    if (isPlan(r)) {
      list.push({ name: nameOf(r, "planned (max in bin)"), color: color(i), x: s.t_s, y: s.inflight_max, stepped: true });
      list.push({ name: nameOf(r, "planned (mean)"), color: color(i), x: s.t_s, y: s.inflight_mean, dash: [4, 3], stepped: true });
      peakMarks(r, list, get(r.summary, "peak_inflight"), get(r.summary, "peak_inflight_at_s"));
      return;
    }
    list.push({ name: nameOf(r, "observed (max in bin)"), color: color(i), x: s.t_s, y: s.inflight_max, stepped: true });
    list.push({ name: nameOf(r, "observed (mean)"), color: color(i), x: s.t_s, y: s.inflight_mean, dash: [4, 3], stepped: true });
    if (r.planned && r.planned.t_s.length) {
      list.push({ name: nameOf(r, "planned (max in bin, plan's clock)"), color: "#555", x: r.planned.t_s, y: r.planned.inflight_max, stepped: true });
    }
    peakMarks(r, list, get(r.summary, "concurrency.planned_peak"), null);
  }, { digits: 1 });
  seriesChart(plans ? "Planned demand: output tokens/s" : "Output tokens/s", "tok/s", function (r, i, list) {
    list.push({ name: nameOf(r, "output tok/s"), color: color(i), x: r.series.t_s, y: r.series.output_tok_s, stepped: true });
  }, { digits: 0 });
  seriesChart(plans ? "Planned demand: input tokens/s" : "Input tokens/s", "tok/s", function (r, i, list) {
    list.push({ name: nameOf(r, "input tok/s"), color: color(i), x: r.series.t_s, y: r.series.input_tok_s, stepped: true });
  }, { digits: 0 });
  // What only a run measured; a plan's series has none of it.
  if (measured) seriesChart("TTFT per bin (p50, p99)", "ms", function (r, i, list) {
    if (isPlan(r)) return;
    list.push({ name: nameOf(r, "p50"), color: color(i), x: r.series.t_s, y: r.series.ttft_p50_s.map(function (v) { return v == null ? null : v * 1000; }) });
    list.push({ name: nameOf(r, "p99"), color: color(i), dash: [4, 3], x: r.series.t_s, y: r.series.ttft_p99_s.map(function (v) { return v == null ? null : v * 1000; }) });
  }, { digits: 2 });
  if (measured) seriesChart("Failed requests by error class", "requests", function (r, i, list) {
    if (isPlan(r)) return;
    var classes = Object.keys(r.series.errors || {});
    if (classes.length === 0) {
      list.push({ name: nameOf(r, "no failed requests"), color: color(i), x: r.series.t_s, y: r.series.t_s.map(function () { return 0; }) });
    }
    classes.forEach(function (c, k) {
      list.push({ name: nameOf(r, c), color: COLORS[(i + k + 1) % COLORS.length], x: r.series.t_s, y: r.series.errors[c], stepped: true });
    });
  }, { digits: 0 });
  if (measured) seriesChart("Cache-hit ratio (server-reported)", "ratio", function (r, i, list) {
    if (!isPlan(r) && r.series.cache_hit.some(function (v) { return v != null; })) {
      list.push({ name: nameOf(r, "cached / input tokens"), color: color(i), x: r.series.t_s, y: r.series.cache_hit });
    }
  }, { yRange: [0, 1], emptyText: "no cached-token counts: the server's usage reported none", digits: 3 });

  // The server's own view (scraped /metrics), only when a run has it.
  var scraped = function (r) { return r.server && r.server.t_s.length > 0; };
  if (runs.some(scraped)) seriesChart("Server's view (scraped /metrics): running and waiting, against requests in flight", "requests", function (r, i, list) {
    if (!scraped(r)) return;
    var g = r.server.gauges;
    list.push({ name: nameOf(r, "in flight (client, max in bin)"), color: "#888", x: r.series.t_s, y: r.series.inflight_max, stepped: true });
    if (g.running) list.push({ name: nameOf(r, "running (server)"), color: color(i), x: r.server.t_s, y: g.running });
    if (g.waiting) list.push({ name: nameOf(r, "waiting (server)"), color: color(i), dash: [4, 3], x: r.server.t_s, y: g.waiting });
  }, { digits: 1 });

  if (runs.length > 0) lanes.load(runs[0]);

  // ---- throughput against latency (runs that differ in load) -----------
  function load(run) {
    var p = get(run.summary, "config.policy") || {};
    return JSON.stringify([p.sessions, p.arrival, p.copies, p.max_inflight, p.loop, p.duration_s]);
  }
  if (runs.length > 1) {
    app.appendChild(el("h2", { text: "Throughput against latency" }));
    var loads = runs.map(load);
    var differ = loads.some(function (l) { return l !== loads[0]; });
    if (!differ) {
      app.appendChild(el("div", { class: "note", text: "The runs have the same load (--sessions, --arrival, --copies, --max-inflight, --loop, --duration): no curve." }));
    } else {
      app.appendChild(el("div", { class: "note", text: "One point per run, by output tokens/s: TTFT p99 (ms) and job time p90 (s)." }));
      var points = runs.map(function (r) {
        return [get(r.summary, "throughput.output_tokens_per_s"), headline(r, HEADLINES[1]), headline(r, HEADLINES[8])];
      }).filter(function (p) { return p[0] != null; }).sort(function (a, b) { return a[0] - b[0]; });
      var tbox = el("div", { class: "chart" });
      app.appendChild(tbox);
      var xs = points.map(function (p) { return p[0]; });
      var pts = function (size) { return { show: true, size: size }; };
      var tu = new uPlot({
        width: chartWidth(tbox), height: 260,
        scales: { x: { time: false }, ms: { auto: true }, s: { auto: true } },
        axes: [{ label: "output tok/s", size: 40 }, { scale: "ms", label: "TTFT p99 (ms)", size: 60 },
          { scale: "s", side: 1, label: "job time p90 (s)", size: 60, grid: { show: false } }],
        series: [{ label: "output tok/s" },
          { label: "TTFT p99 (ms)", scale: "ms", stroke: COLORS[0], width: 1.5, points: pts(8) },
          { label: "job time p90 (s)", scale: "s", stroke: COLORS[1], width: 1.5, dash: [4, 3], points: pts(8) }]
      }, [xs, points.map(function (p) { return p[1]; }), points.map(function (p) { return p[2]; })], tbox);
      charts.push({ name: "throughput against latency", plot: tu });
    }
  }

  // ---- self-check --------------------------------------------------------
  checks.push(function () { return runs.length ? null : "no runs in the data"; });
  checks.push(function () {
    if (!spread) return null;
    if (!spread.metrics.length) return "the spread has no metric";
    var bare = spreadRows.filter(function (r) { return r.dots === 0; });
    return bare.length ? "spread drew no run: " + bare.map(function (r) { return r.name; }).join(", ") : null;
  });
  checks.push(function () {
    var bad = charts.filter(function (c) {
      return !c.plot.root.querySelector("canvas") || !(c.plot.data[0] && c.plot.data[0].length);
    });
    return bad.length ? "empty chart: " + bad.map(function (c) { return c.name; }).join(", ") : null;
  });
  // Records give data to the in-flight, token and error series and the
  // lateness CDF at least: fewer than six charts (three for a plan) means
  // something broke.
  var records = runs.reduce(function (n, r) { return n + (r.records || 0); }, 0);
  checks.push(function () {
    // A plan has three: in flight and the two demands.
    var least = plans ? 3 : 6;
    return records === 0 || charts.length >= least ? null : "only " + charts.length + " charts drawn";
  });
  checks.push(function () {
    return lanes.turns() === 0 || lanes.stats.drawn > 0 ? null : "swim lanes drew no bar";
  });
  if (!failed) {
    var problems = checks.map(function (c) { return c(); }).filter(function (m) { return m; });
    if (problems.length) fail(problems.join("; "));
    else document.title = "arbor report: ok";
  }
  // How long the script took to draw everything (the check prints it).
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - startedAt)));
  document.body.setAttribute("data-lane-bars", String(lanes.stats.drawn));
  // Since navigation start: loading and parsing the file included.
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
})();
