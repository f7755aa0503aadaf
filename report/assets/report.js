// arbor report: draws the page from the JSON blob in #arbor-data.
// Sections, the answer first: the verdict (one run: its status, what ran
// against what and how long, headline figures, SLOs, errors in the
// server's words; a plan: its planned figures; several runs: one row each
// in load order and their curves against load), warnings, where the time
// went (the critical path in classes, a run's beside its plan's), the
// summary, deltas (two to four runs), the configuration (several runs:
// only what differs), swim lanes, CDFs and time series. A --repeat
// directory's page has the aggregate's spread on top. A source is a run
// directory (source "run") or a plan on the virtual clock (source "plan",
// `arbor plan --report`); what a source lacks is left out, and a chart
// with no value is not drawn but named in its section's note. When
// everything has rendered non-empty the page sets document.title to
// "arbor report: ok"; on any error, to "arbor report: error: ..."
// (scripts/check-report.sh reads it).
(function () {
  "use strict";

  var startedAt = performance.now();
  var page = window.arborPage, fail = page.fail, el = page.el, num = page.num, pct = page.pct, DASH = page.DASH;

  var COLORS = ["#2563eb", "#e8590c", "#0f9d58", "#9c27b0", "#d81b60", "#00897b", "#795548", "#546e7a"];
  var METRICS = [
    ["ttft", "TTFT"], ["itl", "ITL"], ["tpot", "TPOT"], ["e2e", "E2E"],
    ["lateness", "lateness"], ["queue_wait", "queue wait"], ["job_time", "job time"]
  ];
  var CDFS = METRICS.slice(0, 6);

  function get(obj, path) {
    return path.split(".").reduce(function (o, k) { return o == null ? undefined : o[k]; }, obj);
  }
  function ms(s) { return s == null ? DASH : num(s * 1000, s * 1000 >= 100 ? 1 : 2); }
  function swatch(i) { return el("span", { class: "swatch", style: "background:" + color(i) }); }
  function runLabel(run, i) { return el("span", {}, [swatch(i), run.name]); }
  // left: indexes of further columns aligned left (text, not numbers).
  function table(head, rows, left) {
    var t = el("table");
    left = left || [];
    t.appendChild(el("tr", {}, head.map(function (h, i) {
      return el("th", { class: i === 0 || left.indexOf(i) >= 0 ? "k" : "" }, [h]);
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
  var notDrawn = []; // charts left out for want of values, by name
  function isPlan(r) { return r.source === "plan"; }
  var plans = runs.length > 0 && runs.every(isPlan);
  var measured = runs.some(function (r) { return !isPlan(r); });

  // ---- order: many runs by their load ------------------------------------
  // Runs that differ in load (--sessions, --arrival, --copies,
  // --max-inflight, --duration) are drawn in the order of that load, never
  // in the order a shell glob gave them; otherwise in the order given. A
  // --repeat page keeps its order (the spread refers to it).
  var LOAD_KEYS = [["sessions", "sessions"], ["arrival", "arrival"], ["copies", "copies"],
    ["max_inflight", "max in flight"], ["duration_s", "duration (s)"]];
  function policyOf(r) { return get(r.summary, "config.policy") || {}; }
  // The first load key whose value differs between the runs, or null.
  var knob = null;
  if (!data.spread && runs.length > 1 && runs.every(function (r) { return !isPlan(r); })) {
    LOAD_KEYS.some(function (k) {
      var first = JSON.stringify(policyOf(runs[0])[k[0]]);
      if (runs.some(function (r) { return JSON.stringify(policyOf(r)[k[0]]) !== first; })) { knob = k; return true; }
      return false;
    });
  }
  // A load as a number on its knob's axis (the rate of "poisson:12.5").
  function loadValue(r) {
    if (!knob) return null;
    var v = policyOf(r)[knob[0]];
    if (typeof v === "number") return v;
    var m = v == null ? null : String(v).match(/[0-9]+(\.[0-9]+)?/);
    return m ? Number(m[0]) : null;
  }
  function loadLabel(r) {
    if (!knob) return DASH;
    var v = policyOf(r)[knob[0]];
    return v == null ? "none" : String(v);
  }
  if (knob) {
    runs = runs.map(function (r, i) { return { r: r, i: i, v: loadValue(r) }; }).sort(function (a, b) {
      if (a.v == null || b.v == null) return a.v == null ? (b.v == null ? a.i - b.i : 1) : -1;
      return a.v - b.v || a.i - b.i;
    }).map(function (o) { return o.r; });
  }

  // ---- header ----------------------------------------------------------
  app.appendChild(el("h1", { text: plans ? "arbor plan" : "arbor report" }));
  app.appendChild(el("div", { class: "sub", text: plans ?
    "a plan on the virtual clock (--service " + (get(runs[0], "summary.service") || DASH) + "): nothing was sent · " +
      runs[0].path + " · arbor " + data.arbor_version :
    runs.length + " run" + (runs.length === 1 ? "" : "s") + ": " + (runs.length <= 4 ? runs.map(function (r) { return r.path; }).join(", ") :
      runs[0].path + " … " + runs[runs.length - 1].path) + " · arbor " + data.arbor_version }));

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

  // ---- verdict: what ran, against what, and what it came to --------------
  // First on every page: one run's status, headline figures, SLOs and
  // errors in the server's own words; a plan's planned figures; several
  // runs' one row each.
  function secs(s) {
    if (s == null || !isFinite(s)) return DASH;
    if (s >= 120) return num(s / 60, 1) + " min";
    return num(s, s >= 10 ? 1 : 2) + " s";
  }
  // A latency in the unit it reads best in.
  function lat(s) {
    if (s == null || !isFinite(s)) return DASH;
    if (s >= 1) return num(s, s >= 10 ? 1 : 2) + " s";
    var m = s * 1000;
    return num(m, m >= 100 ? 0 : m >= 10 ? 1 : 2) + " ms";
  }
  function dist(s, name) { var d = get(s, "latency." + name); return d && d.count ? d : null; }
  function against(s) {
    var c = s.config || {};
    if (c.emulator) return "the built-in emulator (" + c.emulator + ")";
    var where = c.endpoints && c.endpoints.length > 1
      ? c.endpoints.length + " replicas (" + c.endpoints.join(", ") + "), placement " + (c.placement || DASH)
      : (c.url || c.endpoint || DASH);
    return where + (c.model ? " · model " + c.model : "");
  }
  function loadWords(p) {
    p = p || {};
    var w = [];
    if (p.sessions != null) w.push(p.sessions + " sessions (closed loop)");
    if (p.arrival && p.arrival !== "recorded") w.push("arrival " + p.arrival);
    else if (p.sessions == null) w.push("recorded arrivals");
    if (p.copies != null && p.copies !== 1) w.push(p.copies + " copies");
    if (p.max_inflight != null) w.push("at most " + p.max_inflight + " in flight");
    if (p.duration_s != null) w.push("for " + secs(p.duration_s));
    return w.join(", ");
  }
  // Error classes, most frequent first, with the first failure's words.
  function errorRows(s) {
    var samples = s.error_samples || {};
    return Object.keys(s.errors || {}).map(function (k) {
      var e = samples[k] || {};
      var words = e.message || "";
      if (e.http_status) words = "HTTP " + e.http_status + (words ? ": " + words : "");
      return [k, s.errors[k], words || "(no message recorded)"];
    }).sort(function (a, b) { return b[1] - a[1] || (a[0] < b[0] ? -1 : 1); });
  }
  // The run's state in a word and a sentence: ok, partial, failed, stopped.
  function status(s) {
    var c = s.counts || {};
    var settled = (c.ok || 0) + (c.failed || 0);
    var stop = s.stopped_by === "abort_after" ? "stopped by the circuit breaker (--abort-after)" :
      s.stopped_by ? "stopped by " + s.stopped_by : s.cancelled ? "cancelled" : "";
    if (!c.dispatched) return ["failed", "Nothing was measured: no request was sent" + (stop ? " (" + stop + ")" : "") + "."];
    if (!c.ok) return ["failed", "Every request failed: " + num(c.failed, 0) + " of " + num(c.dispatched, 0) +
      (stop ? ", then " + stop : "") + ". There is no latency to report; the server's words are below."];
    if (stop) {
      return ["stopped", "Stopped early (" + stop + "): " + num(c.ok, 0) + " of " + num(c.dispatched, 0) +
        " requests ok; the figures cover what ran."];
    }
    if (c.failed) return ["partial", num(c.failed, 0) + " of " + num(settled, 0) + " requests failed (" +
      num(100 * c.failed / settled, 1) + " %): the latencies describe the " + num(c.ok, 0) + " that succeeded."];
    return ["ok", "All " + num(c.ok, 0) + " requests succeeded" + (c.cancelled ? " (" + num(c.cancelled, 0) + " cancelled)" : "") + "."];
  }
  function tile(label, main, sub) {
    return el("div", { class: "tile" }, [el("div", { class: "tile-k", text: label }),
      el("div", { class: "tile-v", text: main }), el("div", { class: "tile-s", text: sub || "" })]);
  }
  function pair(d, a, b) { return d ? lat(d[a]) + " · " + lat(d[b]) : DASH; }
  function runVerdict(run) {
    var s = run.summary || {}, c = s.counts || {}, t = s.throughput || {}, cfg = s.config || {};
    var st = status(s);
    // The SLO's verdict leads when the run was judged (arbor run --slo).
    var slo = run.slo;
    if (slo && slo.too_small) st = ["partial", "SLO undecided: only " + num(slo.measured, 0) + " requests succeeded, fewer than the " +
      num(slo.min_requests, 0) + " a verdict needs. " + st[1]];
    else if (slo && !slo.pass) st = ["failed", "SLO missed (" + (slo.bounds || []).filter(function (b) { return !b.pass; })
      .map(function (b) { return b.metric; }).concat(slo.goodput != null ? ["goodput ≥ " + pct(slo.goodput)] : []).join(", ") + "). " + st[1]];
    else if (slo) st = [st[0], "SLO met (" + slo.spec + "). " + st[1]];
    var box = el("div", { class: "verdict " + st[0] });
    box.appendChild(el("div", { class: "verdict-line", text: st[1] }));
    box.appendChild(el("div", { class: "verdict-what", text: (cfg.inputs || (cfg.input_paths || []).join(", ") || DASH) +
      " · " + num(c.trees, 0) + " trees, " + num(c.plays, 0) + " plays · " + loadWords(cfg.policy) }));
    box.appendChild(el("div", { class: "verdict-what", text: "against " + against(s) }));
    box.appendChild(el("div", { class: "verdict-what", text: secs(s.elapsed_s) + " from " + (s.started_at || DASH) +
      (s.scenario ? " · recipe " + s.scenario + ": " + (s.submission_valid ? "submission valid" :
        "NOT a valid submission (" + (s.submission_invalid_reasons || []).join("; ") + ")") : "") }));
    var tiles = el("div", { class: "tiles" });
    var ttft = dist(s, "ttft"), itl = dist(s, "itl"), e2e = dist(s, "e2e"), job = dist(s, "job_time");
    tiles.appendChild(tile("TTFT p50 · p99", pair(ttft, "p50_s", "p99_s"), ttft ? num(ttft.count, 0) + " requests" : "no successful request"));
    tiles.appendChild(tile("ITL p50 · p99", pair(itl, "p50_s", "p99_s"), itl ? num(itl.count, 0) + " gaps" : "no gap"));
    tiles.appendChild(tile("E2E p50 · p99", pair(e2e, "p50_s", "p99_s"), e2e ? num(e2e.count, 0) + " requests" : "no successful request"));
    tiles.appendChild(tile("throughput", num(t.requests_per_s, 2) + " req/s",
      num(t.output_tokens_per_s, 0) + " output tok/s · " + num(t.input_tokens_per_s, 0) + " input tok/s"));
    tiles.appendChild(tile("job time p50 · p90", job ? secs(job.p50_s) + " · " + secs(job.p90_s) : DASH,
      job ? num(job.count, 0) + " complete plays" : "no complete play"));
    var hit = get(s, "cache.hit_ratio");
    tiles.appendChild(tile("cache hits", hit == null ? DASH : pct(hit), hit == null ? "the server reported none" : "of input tokens, server-reported"));
    box.appendChild(tiles);
    if (run.slo) box.appendChild(sloTable(run.slo));
    var errs = errorRows(s);
    if (errs.length) {
      box.appendChild(el("div", { class: "verdict-k", text: "Errors by class (the first failure's own words)" }));
      box.appendChild(table(["class", "requests", "message"], errs.map(function (e) {
        return [e[0], num(e[1], 0), { text: e[2], cls: "v msg" }];
      }), [2]));
    }
    return box;
  }
  // A run's --slo judged: each bound, goodput, the verdict.
  function sloTable(slo) {
    var box = el("div", {});
    box.appendChild(el("div", { class: "verdict-k", text: "SLO " + (slo.spec || "") + ": " + (slo.pass ? "PASS" : slo.too_small ? "UNDECIDED (too few requests)" : "FAIL") }));
    var rows = (slo.bounds || []).map(function (b) {
      var r = b.reading || {};
      var seen = r.kind === "value" ? lat(r.ns / 1e9) : r.kind === "failed" ? "falls on a failed request" : "nothing measured";
      return [b.metric, "≤ " + lat(b.limit_ns / 1e9), seen, { text: b.pass ? "pass" : "fail", cls: b.pass ? "good" : "bad" }];
    });
    if (slo.request_goodput != null) rows.push(["goodput (requests)", slo.goodput == null ? DASH : "≥ " + pct(slo.goodput), pct(slo.request_goodput), ""]);
    if (slo.job_goodput != null) rows.push(["goodput (trees)", slo.goodput == null ? DASH : "≥ " + pct(slo.goodput), pct(slo.job_goodput), ""]);
    box.appendChild(table(["bound", "limit", "observed", ""], rows));
    return box;
  }
  function planVerdict(run) {
    var s = run.summary || {}, d = s.demand || {};
    var box = el("div", { class: "verdict plan" });
    box.appendChild(el("div", { class: "verdict-line", text: "A plan: " + num(s.dispatched, 0) + " requests over " + secs(s.makespan_s) +
      " on the virtual clock; nothing was sent." }));
    box.appendChild(el("div", { class: "verdict-what", text: (s.inputs || DASH) + " · " + num(s.trees, 0) + " trees, " + num(s.plays, 0) + " plays · " +
      loadWords(s.policy) + " · --service " + (s.service || DASH) }));
    var tiles = el("div", { class: "tiles" });
    tiles.appendChild(tile("planned peak in flight", num(s.peak_inflight, 0), "first at " + secs(s.peak_inflight_at_s)));
    tiles.appendChild(tile("makespan", secs(s.makespan_s), num(s.idle_shifts, 0) + " idle gaps cut (" + secs(s.idle_skipped_s) + ")"));
    tiles.appendChild(tile("demand", num(d.requests_per_s, 2) + " req/s", num(d.output_tokens_per_s, 0) + " output tok/s · " + num(d.input_tokens_per_s, 0) + " input tok/s"));
    var q = s.queue_wait;
    if (q && q.count) tiles.appendChild(tile("queue wait p50 · p99", lat(q.p50_s) + " · " + lat(q.p99_s), "for --max-inflight"));
    box.appendChild(tiles);
    return box;
  }
  // Several runs: one row each, in load order.
  function runsTable() {
    var head = ["run"].concat(knob ? [knob[1]] : []).concat(["ok / failed", "TTFT p50", "TTFT p99", "ITL p50", "E2E p50", "E2E p99",
      "req/s", "output tok/s", "job p90", "errors"]);
    var t = table(head, []);
    runs.forEach(function (r, i) {
      var s = r.summary || {}, c = s.counts || {}, ttft = dist(s, "ttft"), itl = dist(s, "itl"), e2e = dist(s, "e2e"), job = dist(s, "job_time");
      var errs = errorRows(s);
      var cells = [el("td", { class: "k" }, [runLabel(r, i)])];
      if (knob) cells.push(el("td", { text: loadLabel(r) }));
      var failed = el("td", { class: c.failed ? "bad" : "", text: num(c.ok, 0) + " / " + num(c.failed, 0) });
      cells.push(failed);
      [ttft && ttft.p50_s, ttft && ttft.p99_s, itl && itl.p50_s, e2e && e2e.p50_s, e2e && e2e.p99_s].forEach(function (v) {
        cells.push(el("td", { text: lat(v) }));
      });
      cells.push(el("td", { text: num(get(s, "throughput.requests_per_s"), 2) }));
      cells.push(el("td", { text: num(get(s, "throughput.output_tokens_per_s"), 0) }));
      cells.push(el("td", { text: job ? secs(job.p90_s) : DASH }));
      cells.push(el("td", { class: "v msg" + (errs.length ? " bad" : ""), text: errs.length ?
        errs.map(function (e) { return e[0] + " " + e[1]; }).join(", ") + ": " + errs[0][2] : "none" }));
      t.appendChild(el("tr", {}, cells));
    });
    return t;
  }
  // (A --repeat page has its spread above: the runs' table follows it.)
  {
    if (runs.length === 1) app.appendChild(isPlan(runs[0]) ? planVerdict(runs[0]) : runVerdict(runs[0]));
    else if (runs.length > 1) {
      app.appendChild(el("h2", { text: "Runs" + (knob ? " by " + knob[1] : "") }));
      app.appendChild(el("div", { class: "note", text: (knob ? "Ordered by " + knob[1] + ", the load setting that differs. " : "In the order given. ") +
        "Latencies over successful requests; ITL over every gap; errors: classes and counts, then the most frequent class's first message." }));
      app.appendChild(runsTable());
      if (knob) loadCurves();
      // An all-failed run among several: its words, loudly.
      runs.forEach(function (r) {
        var s = r.summary || {};
        if (isPlan(r) || get(s, "counts.ok") || !get(s, "counts.dispatched")) return;
        app.appendChild(el("div", { class: "banner", text: r.name + ": every request failed: " +
          errorRows(s).map(function (e) { return e[0] + " " + e[1] + " (" + e[2] + ")"; }).join("; ") }));
      });
    }
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

  // ---- where the time went -------------------------------------------------
  // The critical path in classes (summary.json's time_breakdown: the run's
  // observed path beside its plan's; a plan's own). Shares are of the path
  // as replayed (every class but the idle caps' cut), so they add up to
  // 100 %; what the caps cut is its own row.
  function breakdownOf(r) {
    var s = r.summary || {};
    if (isPlan(r)) return s.time_breakdown ? { observed: null, planned: s.time_breakdown } : null;
    return s.time_breakdown || null;
  }
  function timeTable(b) {
    var o = b.observed, p = b.planned;
    var sides = [o, p].filter(function (x) { return x; });
    var byClass = function (x, k) { return x ? x.classes.filter(function (c) { return c.class === k; })[0] : null; };
    var classes = sides[0].classes.map(function (c) { return c.class; }).filter(function (k) {
      return k !== "idle_skipped" && sides.some(function (x) { var c = byClass(x, k); return c && c.ns !== 0; });
    });
    var head = ["class"];
    if (o) head.push("run (s)", "share");
    if (p) head.push((o ? "plan" : "planned") + " (s)", "share");
    head.push("scaled by");
    var cell = function (x, k, what) {
      var c = byClass(x, k);
      if (!c) return [DASH, DASH];
      return [num(c.s, 3), pct(c.share)];
    };
    var rows = classes.map(function (k) {
      var row = [k];
      if (o) row = row.concat(cell(o, k));
      if (p) row = row.concat(cell(p, k));
      row.push((byClass(sides[0], k) || {}).scaled_by || "");
      return row;
    });
    var cut = sides.some(function (x) { var c = byClass(x, "idle_skipped"); return c && c.ns !== 0; });
    if (cut) {
      var replayed = ["path as replayed"], saved = ["cut by the idle caps"], made = ["makespan"];
      sides.forEach(function (x) {
        var c = byClass(x, "idle_skipped");
        replayed.push(num(x.replayed_ns / 1e9, 3), "100 %");
        saved.push(num(c ? c.s : 0, 3), pct(c ? c.share : 0));
        made.push(num(x.makespan_ns / 1e9, 3), "");
      });
      replayed.push(""); saved.push("--idle-gap-cap, --tree-idle-cap"); made.push("");
      rows.push(replayed, saved, made);
    }
    var t = table(head, rows, [head.length - 1]);
    t.querySelectorAll("tr").forEach(function (tr) { var c = tr.lastChild; if (c && c.tagName === "TD") c.className = "k"; });
    return t;
  }
  var broken = runs.filter(function (r) { return breakdownOf(r); });
  if (broken.length && runs.length <= 4) {
    app.appendChild(el("h2", { text: "Where the time went" }));
    app.appendChild(el("div", { class: "note", text: "The critical path (from the request that ended last, back along what held each request) in classes: " +
      "service is the server's time, queue the wait for --max-inflight (and, in a run, the driver's lag), the gaps the replayed tool, think, spawn and join times, arrival the wait for a play's start. " +
      "Shares are of the path as replayed and add up to 100 %; the idle caps then cut recorded idle time, shown on its own row, which leaves the makespan." +
      (plans ? "" : " A run's path is beside its plan's (the same workload on the virtual clock).") }));
    broken.forEach(function (r) {
      var b = breakdownOf(r);
      var src = b.observed || b.planned;
      app.appendChild(el("h3", {}, (runs.length > 1 ? [runLabel(r, runs.indexOf(r)), " · "] : []).concat([
        "critical path of " + num(src.path_requests, 0) + " requests, makespan " + secs(src.makespan_ns / 1e9)])));
      app.appendChild(timeTable(b));
    });
  }

  // ---- summary -----------------------------------------------------------
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
    if (q && q.count) {
      app.appendChild(table(["planned (ms)", "count", "mean", "p50", "p90", "p95", "p99", "max"],
        [["queue wait", num(q.count, 0), ms(q.mean_s), ms(q.p50_s), ms(q.p90_s), ms(q.p95_s), ms(q.p99_s), ms(q.max_s)]]));
    }
    if (s.server) predictions(s.server, s);
  }

  // ---- the server model's predictions, with their intervals ---------------
  // plan --service server:PROFILE: each figure's p50, p90 and p99, with the
  // interval of `server.intervals` (a whisker from lo to hi around the
  // central dot, one axis per figure) when it has them.
  var PREDICTED = [["ttft", "TTFT"], ["itl", "ITL"], ["e2e", "E2E"], ["job", "job time"]];
  var RANKS = ["p50", "p90", "p99"];
  var whiskers = { want: 0, drawn: 0 };
  function predictions(p, s) {
    var iv = p.intervals;
    app.appendChild(el("h3", { text: "Predicted by the server model: " + p.profile + " (" + p.origin + ")" }));
    app.appendChild(el("div", { class: "note", text: iv
      ? "Milliseconds; in brackets each figure's " + num(iv.level * 100, 0) + " % interval: " + iv.method + "." +
        (iv.fit_known ? "" : " So these are the sample's share alone: narrower than what the model can be wrong by.")
      : "Milliseconds. No intervals (--intervals off)." }));
    var cell = function (d, i, rank) {
      var v = ms(d[rank + "_s"]);
      return i ? v + " [" + ms(i[rank].lo_s) + ", " + ms(i[rank].hi_s) + "]" : v;
    };
    app.appendChild(table(["predicted (ms)", "count", "p50", "p90", "p99", "max"],
      PREDICTED.filter(function (m) { return p[m[0]]; }).map(function (m) {
        var d = p[m[0]], i = iv && iv[m[0]];
        return [m[1], num(d.count, 0), cell(d, i, "p50"), cell(d, i, "p90"), cell(d, i, "p99"), ms(d.max_s)];
      })));
    if (iv && iv.makespan) {
      app.appendChild(el("div", { class: "note", text: "Makespan over the draws: " + num(iv.makespan.lo_s, 3) + " to " +
        num(iv.makespan.hi_s, 3) + " s (the plan's: " + num(s.makespan_s, 3) + " s)." }));
    }
    if (!iv) return;
    var box = el("div", { class: "chart" });
    box.appendChild(el("div", { class: "chart-title", text: "Predicted percentiles with their " + num(iv.level * 100, 0) + " % intervals (ms)" }));
    box.appendChild(intervalBars(p, iv));
    app.appendChild(box);
  }
  // One row per (figure, percentile): the central value a dot, the
  // interval a whisker, each figure on its own axis from 0 to its largest
  // upper end; the fit's share alone a thicker band when known.
  function intervalBars(p, iv) {
    var W = 900, LEFT = 110, RIGHT = 250, ROW = 20, GAP = 26, TOP = 6;
    var plotW = W - LEFT - RIGHT;
    var figures = PREDICTED.filter(function (m) { return p[m[0]] && p[m[0]].count > 0 && iv[m[0]]; });
    var H = TOP + figures.length * (RANKS.length * ROW + GAP);
    var kids = [], y = TOP;
    var txt = function (attrs, t) { return svgEl("text", attrs, [document.createTextNode(t)]); };
    figures.forEach(function (m) {
      var d = p[m[0]], i = iv[m[0]];
      var top = Math.max.apply(null, RANKS.map(function (r) { return Math.max(i[r].hi_s, d[r + "_s"]); })) || 1;
      var x = function (v) { return LEFT + plotW * v / top; };
      kids.push(txt({ x: 0, y: y + ROW * 1.5 + 4, "font-size": 12.5, "font-weight": 600, fill: "#1d2330" }, m[1]));
      kids.push(svgEl("line", { x1: LEFT, x2: LEFT + plotW, y1: y + RANKS.length * ROW + 2, y2: y + RANKS.length * ROW + 2, stroke: "#d9dee7" }));
      [0, 0.5, 1].forEach(function (f) {
        kids.push(txt({ x: LEFT + plotW * f, y: y + RANKS.length * ROW + 15, "text-anchor": "middle", "font-size": 10, fill: "#667085" }, ms(top * f)));
      });
      RANKS.forEach(function (r, k) {
        var cy = y + k * ROW + ROW / 2, c = d[r + "_s"], lo = i[r].lo_s, hi = i[r].hi_s;
        whiskers.want++;
        kids.push(txt({ x: LEFT - 8, y: cy + 4, "text-anchor": "end", "font-size": 11, fill: "#667085" }, r));
        if (i[r].fit) {
          kids.push(svgEl("rect", { x: x(i[r].fit.lo_s), y: cy - 4, width: Math.max(1, x(i[r].fit.hi_s) - x(i[r].fit.lo_s)), height: 8,
            fill: "#2563eb", "fill-opacity": 0.18 }));
        }
        kids.push(svgEl("line", { x1: x(lo), x2: x(hi), y1: cy, y2: cy, stroke: "#2563eb", "stroke-width": 1.5 }));
        [lo, hi].forEach(function (v) {
          kids.push(svgEl("line", { x1: x(v), x2: x(v), y1: cy - 5, y2: cy + 5, stroke: "#2563eb", "stroke-width": 1.5 }));
        });
        kids.push(svgEl("circle", { cx: x(c), cy: cy, r: 3.5, fill: "#1d2330" }, [svgEl("title", {}, [document.createTextNode(
          m[1] + " " + r + ": " + ms(c) + " ms, " + num(iv.level * 100, 0) + " % interval " + ms(lo) + " to " + ms(hi) + " ms" +
          (i[r].fit ? "; the fit's share alone " + ms(i[r].fit.lo_s) + " to " + ms(i[r].fit.hi_s) : "; the fit's share unknown"))])]));
        kids.push(txt({ x: LEFT + plotW + 10, y: cy + 4, "font-size": 11, fill: "#1d2330" }, ms(c) + " [" + ms(lo) + ", " + ms(hi) + "]"));
        whiskers.drawn++;
      });
      y += RANKS.length * ROW + GAP;
    });
    var legend = el("div", { class: "legend" }, [
      el("span", { class: "legend-item" }, [el("span", { class: "dot", style: "background:#1d2330" }), "predicted (the plan under the profile)"]),
      el("span", { class: "legend-item" }, [el("span", { class: "line", style: "border-color:#2563eb" }), iv.fit_known ? "interval (fit and sample)" : "interval (sample only)"]),
      iv.fit_known ? el("span", { class: "legend-item" }, [el("span", { class: "swatch", style: "background:rgba(37,99,235,0.18)" }), "the fit's share alone"])
        : el("span", { class: "legend-item" }, ["the fit's share unknown (no draws in the profile)"])
    ]);
    return el("div", {}, [svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "interval-bars" }, kids), legend]);
  }
  function runSummary(s) {
    var c = s.counts || {}, t = s.throughput || {}, k = s.concurrency || {};
    app.appendChild(facts([
      ["requests", num(c.dispatched, 0) + " dispatched, " + num(c.ok, 0) + " ok, " + num(c.failed, 0) + " failed, " + num(c.cancelled, 0) + " cancelled, " + num(c.skipped, 0) + " skipped"],
      ["throughput", num(t.requests_per_s, 2) + " req/s, " + num(t.input_tokens_per_s, 0) + " input tok/s, " + num(t.output_tokens_per_s, 0) + " output tok/s over " + num(t.window_s, 3) + " s"],
      ["peak in flight", num(k.observed_peak, 0) + " observed, " + num(k.planned_peak, 0) + " planned"],
      ["cache hits", pct(get(s, "cache.hit_ratio")) + " server-reported"]
    ]));
    var rows = METRICS.filter(function (m) { return dist(s, m[0]); }).map(function (m) {
      var d = dist(s, m[0]);
      return [m[1], num(d.count, 0), ms(d.mean_s), ms(d.p50_s), ms(d.p90_s), ms(d.p95_s), ms(d.p99_s), ms(d.max_s)];
    });
    var missing = METRICS.filter(function (m) { return !dist(s, m[0]); }).map(function (m) { return m[1]; });
    if (rows.length) app.appendChild(table(["metric (ms)", "count", "mean", "p50", "p90", "p95", "p99", "max"], rows));
    if (missing.length) app.appendChild(el("div", { class: "note", text: "No values: " + missing.join(", ") + "." }));
  }
  if (runs.length === 1) {
    app.appendChild(el("h2", { text: "Summary" }));
    if (measured) app.appendChild(el("div", { class: "note", text: "Milliseconds. TTFT, ITL, TPOT and E2E over successful requests; lateness and queue wait over every request with the stamps; job time per complete play." }));
    if (plans) {
      app.appendChild(el("div", { class: "note", text: get(runs[0], "summary.server")
        ? "What the plan asks of a server, and what the batching server model (--service server:) predicts it answers (below); a run measures it."
        : "What the plan asks of a server. A plan measures no latency: TTFT, ITL, TPOT, E2E and lateness come from a run." }));
      planSummary(runs[0].summary || {});
    } else runSummary(runs[0].summary || {});
  }

  // ---- replicas (several endpoints) ---------------------------------------
  // summary.json's replicas (docs/routing.md): one row per replica, every
  // replica the run named, a totals row (the rows add up to it), the
  // imbalance, and bars of each replica's share of requests beside its
  // cache-hit ratio.
  function svgText(attrs, text) { return svgEl("text", attrs, [document.createTextNode(text)]); }
  function replicaBars(list) {
    var W = 620, row = 26, top = 22, left = 90, width = W - left - 90;
    var H = top + list.length * row + 8;
    var kids = [
      svgText({ x: left, y: 14, "font-size": 12, fill: color(0) }, "share of requests"),
      svgText({ x: left + 160, y: 14, "font-size": 12, fill: color(1) }, "cache-hit ratio")
    ];
    list.forEach(function (f, i) {
      var y = top + i * row;
      kids.push(svgText({ x: 0, y: y + 15, "font-size": 12 }, "replica " + f.replica));
      var share = Math.max(0, Math.min(1, f.share || 0)), hit = f.cache && f.cache.hit_ratio;
      kids.push(svgEl("rect", { x: left, y: y + 2, width: share * width, height: 9, fill: color(0) }));
      kids.push(svgText({ x: left + share * width + 4, y: y + 11, "font-size": 10 }, pct(share)));
      if (hit != null) {
        kids.push(svgEl("rect", { x: left, y: y + 12, width: Math.max(0, Math.min(1, hit)) * width, height: 9, fill: color(1) }));
        kids.push(svgText({ x: left + Math.min(1, hit) * width + 4, y: y + 21, "font-size": 10 }, pct(hit)));
      }
    });
    return svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "replica-bars" }, kids);
  }
  function replicaTable(s, r) {
    var rows = r.replicas.map(function (f) {
      var c = f.cache || {}, w = (f.throughput || {});
      return ["replica " + f.replica, f.endpoint || DASH, num(f.requests, 0), pct(f.share),
        ms(get(f, "ttft.p50_s")), ms(get(f, "ttft.p99_s")), ms(get(f, "e2e.p50_s")),
        num(w.output_tokens_per_s, 0), num(c.cached_tokens, 0), num(c.input_tokens, 0),
        pct(c.hit_ratio), num((f.failed || 0) + (f.cancelled || 0), 0)];
    });
    var sum = function (k) { return r.replicas.reduce(function (a, f) { return a + (get(f, k) || 0); }, 0); };
    rows.push(["all", "", num(sum("requests"), 0), pct(1), ms(get(s, "latency.ttft.p50_s")), ms(get(s, "latency.ttft.p99_s")),
      ms(get(s, "latency.e2e.p50_s")), num(get(s, "throughput.output_tokens_per_s"), 0), num(sum("cache.cached_tokens"), 0),
      num(sum("cache.input_tokens"), 0), pct(get(s, "cache.hit_ratio")), num(sum("failed") + sum("cancelled"), 0)]);
    return table(["replica", "endpoint", "requests", "share", "TTFT p50 (ms)", "TTFT p99 (ms)", "E2E p50 (ms)",
      "output tok/s", "cached tok", "input tok", "cache hit", "failed"], rows, [1]);
  }
  var replicated = runs.filter(function (r) { return r.summary && r.summary.replicas; });
  if (replicated.length && runs.length <= 4) {
    app.appendChild(el("h2", { text: "Replicas" }));
    app.appendChild(el("div", { class: "note", text: "Measured requests by the replica they were sent to (--endpoint repeated, --placement; docs/routing.md). " +
      "The rows add up to the run's requests and tokens. Cache hits are the server's cached_tokens over its input tokens; " +
      "a placement that scatters conversations lowers them." }));
    replicated.forEach(function (r) {
      var s = r.summary, rep = s.replicas, i = rep.imbalance || {};
      var p = get(s, "config.placement"), how = p ? " · placement " + p : "";
      app.appendChild(el("h3", {}, (runs.length > 1 ? [runLabel(r, runs.indexOf(r)), " · "] : []).concat([
        rep.replicas.length + " replicas" + how + " · busiest (replica " + i.busiest + ") has " + num(i.requests_max_over_mean, 2) +
        "x the mean requests" + (i.hit_ratio_spread == null ? "" : ", cache-hit ratios " + num(i.hit_ratio_spread * 100, 1) + " points apart")])));
      app.appendChild(replicaTable(s, rep));
      app.appendChild(replicaBars(rep.replicas));
    });
  }

  // ---- deltas (a few runs) -----------------------------------------------
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
    var d = h[1].match(/^latency\.(\w+)\./);
    if (d && !get(s, "latency." + d[1] + ".count")) return null;
    var v = get(s, h[1]);
    return v == null ? null : v * h[2];
  }
  if (runs.length > 1 && runs.length <= 4 && !spread) {
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

  // ---- configuration -----------------------------------------------------
  // One run: every setting. Several: only what differs between them, with
  // what they share in a sentence below.
  function workload(c) {
    var w = c.inputs || (c.input_paths || []).join(", ") || DASH;
    if (c.format) w += " (" + c.format + ")";
    return w;
  }
  // A policy: one row a key when runs are compared (so what differs shows),
  // one row of "key value" pairs for a single source.
  function policyRows(p) {
    p = p || {};
    if (runs.length > 1) return Object.keys(p).map(function (k) { return ["policy: " + k, show(p[k])]; });
    return [["policy", Object.keys(p).map(function (k) { return k + " " + show(p[k]); }).join(" · ") || DASH]];
  }
  function show(v) { return v == null ? DASH : typeof v === "object" ? JSON.stringify(v) : String(v); }
  // [label, value] of every setting of one source.
  function settings(r) {
    var s = r.summary || {};
    if (isPlan(r)) {
      var rows = [["workload", s.inputs || DASH], ["service", "--service " + (s.service || DASH) + " (virtual clock: nothing sent)"],
        ["seed", show(s.seed)], ["arbor version", data.arbor_version || DASH], ["planned requests", String(r.records)]];
      policyRows(s.policy).forEach(function (row) { rows.push(row); });
      return rows;
    }
    var c = s.config || {};
    var out = [
      ["workload", workload(c)],
      ["endpoint", c.emulator ? "the built-in emulator" : c.endpoints && c.endpoints.length > 1 ? c.endpoints.join(" ") : (c.url || c.endpoint || DASH)],
      ["emulator", c.emulator || DASH],
      ["model", (c.model || DASH) + (c.model_from ? " (from " + c.model_from + ")" : "")],
      ["api", show(c.api)], ["session routing", show(c.session_routing)], ["placement", show(c.placement)],
      ["history", c.history || "recorded"],
      ["planned with", "--service " + show(c.service)], ["seed", show(c.seed)],
      ["recipe", s.scenario ? s.scenario + (s.submission_valid ? ": valid" : ": INVALID: " + (s.submission_invalid_reasons || []).join("; ")) : "none (not a submission)"],
      ["threads", show(c.threads)], ["timeout (s)", show(c.timeout_s)], ["retries", show(c.retries)],
      ["arbor version", s.arbor_version || DASH], ["started", s.started_at || DASH], ["records", String(r.records)]
    ];
    policyRows(c.policy).forEach(function (row) { out.push(row); });
    return out;
  }
  app.appendChild(el("h2", { text: "Configuration" }));
  var every = runs.map(settings);
  var labels = [];
  every.forEach(function (rows) { rows.forEach(function (row) { if (labels.indexOf(row[0]) < 0) labels.push(row[0]); }); });
  function valueOf(i, label) { var f = every[i].filter(function (row) { return row[0] === label; })[0]; return f ? f[1] : DASH; }
  // started, records and the like always differ: they are no setting.
  var ALWAYS = ["started", "records", "planned requests"];
  var differing = labels.filter(function (l) {
    return runs.length === 1 || runs.some(function (r, i) { return valueOf(i, l) !== valueOf(0, l); });
  });
  var common = runs.length > 1 ? labels.filter(function (l) { return differing.indexOf(l) < 0 && ALWAYS.indexOf(l) < 0; }) : [];
  var shownLabels = runs.length > 1 ? differing.filter(function (l) { return ALWAYS.indexOf(l) < 0; }) : differing;
  if (runs.length > 1) {
    app.appendChild(el("div", { class: "note", text: shownLabels.length ?
      "What differs between the runs (" + shownLabels.length + " of " + labels.length + " settings); the rest is common, below." :
      "The runs have the same settings (below); they differ only in when they ran." }));
  }
  if (shownLabels.length && runs.length > 4) {
    // Many runs: a row a run, a column a setting that differs.
    app.appendChild(table(["run"].concat(shownLabels), runs.map(function (r, i) {
      return [r.name].concat(shownLabels.map(function (l) { return { text: valueOf(i, l), cls: "v" }; }));
    }), shownLabels.map(function (l, k) { return k + 1; })));
  } else if (shownLabels.length) {
    var cfg = el("table", { class: "config" });
    cfg.appendChild(el("tr", {}, [el("th", { class: "k", text: "" })].concat(runs.map(function (r, i) {
      return el("th", { class: "k" }, [runLabel(r, i)]);
    }))));
    shownLabels.forEach(function (l) {
      cfg.appendChild(el("tr", {}, [el("td", { class: "k", text: l })].concat(runs.map(function (r, i) {
        return el("td", { class: "v", text: valueOf(i, l) });
      }))));
    });
    var wrapCfg = el("div", { class: "scroll" });
    wrapCfg.appendChild(cfg);
    app.appendChild(wrapCfg);
  }
  if (common.length) {
    app.appendChild(el("div", { class: "common" }, [el("span", { class: "k", text: "Common to all " + runs.length + " runs: " }),
      common.map(function (l) { return l + " " + valueOf(0, l); }).join(" · ")]));
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
          kept.toLocaleString("en-US") + " of " + (kept + L.left_out).toLocaleString("en-US") + " turns (this page keeps about " + (L.budget || 100000).toLocaleString("en-US") +
          " a run" + (runs.length > 1 ? ", its share of a page's 100,000" : "") + "); every turn is in the charts above and in records.jsonl.";
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
  // An axis tick in few characters (1.2M, 15k, 0.25), so labels never
  // run into the axis title; as many decimals as the ticks' step needs
  // (10.5k, 10.6k rather than 11k, 11k).
  // The unit of ticks up to `top`: [divisor, suffix].
  function tickUnit(top) {
    if (top >= 1e9) return [1e9, "G"];
    if (top >= 1e6) return [1e6, "M"];
    if (top >= 1e4) return [1e3, "k"];
    return [1, ""];
  }
  // Decimals that write every multiple of `step` exactly (0.25: 2).
  function stepDigits(step) {
    if (!step || !isFinite(step)) return 2;
    var d = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    while (d < 6 && Math.abs(step * Math.pow(10, d) - Math.round(step * Math.pow(10, d))) > 1e-6) d++;
    return d;
  }
  function compact(v, step, unit) {
    if (v == null) return "";
    unit = unit || tickUnit(Math.abs(v));
    return num(v / unit[0], stepDigits(step / unit[0])) + unit[1];
  }
  function ticks(u, splits, axis, space, step) {
    var unit = tickUnit(Math.max.apply(null, splits.map(function (v) { return Math.abs(v || 0); })));
    return splits.map(function (v) { return compact(v, step, unit); });
  }
  // Charts with no value anywhere are not drawn; their names are said
  // once per section (in `notDrawn`).
  // series: {name, color, x, y, dash, stepped, points}. The legend is the
  // page's own: one entry per distinct name (no placeholder values), and
  // under the chart the values at the cursor.
  function plot(box, title, unitX, unitY, series, opts) {
    opts = opts || {};
    var withData = series.filter(function (s) { return s.x.length > 0 && s.y.some(function (v) { return v != null; }); });
    if (withData.length === 0) {
      notDrawn.push(opts.emptyText || title);
      if (box.parentNode) box.parentNode.removeChild(box);
      return null;
    }
    box.appendChild(el("div", { class: "chart-title", text: title }));
    var joined = withData.length === 1 ? [withData[0].x, withData[0].y]
      : uPlot.join(withData.map(function (s) { return [s.x, s.y]; }));
    var digits = opts.digits == null ? 3 : opts.digits;
    var readout = el("div", { class: "readout", text: "hover for values" });
    var u = new uPlot({
      width: chartWidth(box), height: opts.height || 220,
      scales: { x: opts.logX ? { time: false, distr: 3 } : { time: false }, y: opts.yRange ? { range: opts.yRange } : { auto: true } },
      axes: [{ label: unitX, size: 40, values: ticks }, { label: unitY, size: 56, values: ticks }],
      legend: { show: false },
      hooks: { setCursor: [function (u) {
        var i = u.cursor.idx;
        if (i == null) { readout.textContent = "hover for values"; return; }
        var parts = [unitX + " " + num(u.data[0][i], 3)];
        for (var k = 1; k < u.series.length; k++) {
          var v = u.data[k][i];
          if (v != null) parts.push(u.series[k].label + " " + num(v, digits));
        }
        readout.textContent = parts.join(" · ");
      }] },
      series: [{ label: unitX }].concat(withData.map(function (s) {
        return {
          label: s.name, stroke: s.color, width: 1.5, spanGaps: true, dash: s.dash,
          paths: s.points ? function () { return null; } : s.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined,
          points: s.points ? { show: true, size: 9, fill: s.color, stroke: s.color } :
            s.marks ? { show: true, size: 7, fill: s.color, stroke: s.color } : undefined
        };
      }))
    }, joined, box);
    box.appendChild(legendOf(withData));
    box.appendChild(readout);
    charts.push({ name: title, plot: u });
    return u;
  }
  // One entry per series of one run; with several runs, one per kind of
  // line (solid, dashed) in grey, the runs' colours being the key at the
  // section's top.
  function legendOf(list) {
    var box = el("div", { class: "legend" });
    var seen = {};
    list.forEach(function (s) {
      // Several runs: one entry per kind of line, in grey; the run key
      // above says whose colour is whose (a CDF's, without kinds, keeps
      // one entry a run up to four runs).
      var grouped = runs.length > 1 && s.what && !s.fixed;
      if (runs.length > 4 && !s.what) return;
      var what = grouped ? s.what : s.name;
      if (seen[what]) return;
      seen[what] = true;
      var c = grouped ? "#667085" : s.color;
      var mark = s.points ? el("span", { class: "dot", style: "background:" + c }) :
        el("span", { class: "line" + (s.dash ? (s.dash[0] <= 2 ? " dotted" : " dashed") : ""), style: "border-color:" + c });
      box.appendChild(el("span", { class: "legend-item" }, [mark, what]));
    });
    return box;
  }
  function runKey() {
    return el("div", { class: "legend runkey" }, runs.map(function (r, i) {
      return el("span", { class: "legend-item" }, [swatch(i), r.name + (knob ? " (" + loadLabel(r) + ")" : "")]);
    }));
  }
  // The note of a section's charts not drawn (no values), filled once
  // the section is drawn.
  function notDrawnNote(start) {
    var names = notDrawn.slice(start);
    return names.length ? el("div", { class: "note", text: "Not drawn, no values: " + names.join("; ") + "." }) : null;
  }
  function toMs(xs) { return xs.map(function (v) { return v * 1000; }); }
  // Up to 8 runs in fixed colours; more spread evenly round the wheel.
  function color(i) {
    if (runs.length <= COLORS.length) return COLORS[i % COLORS.length];
    return "hsl(" + Math.round((215 + i * 360 / runs.length) % 360) + ", 70%, " + (i % 2 ? 38 : 50) + "%)";
  }

  // ---- load curves (runs that differ in load) ------------------------------
  // One point per run on the knob that differs: the latencies an SLO is
  // set on, throughput and job time, each against the load.
  function loadCurves() {
    var at = runs.map(loadValue);
    var usable = runs.map(function (r, i) { return at[i] != null; });
    function curve(title, unit, metrics, digits) {
      var box = el("div", { class: "chart" });
      grid.appendChild(box);
      plot(box, title, knob[1], unit, metrics.map(function (m, k) {
        var xs = [], ys = [];
        runs.forEach(function (r, i) {
          var v = get(r.summary, m[1]);
          var d = m[1].match(/^latency\.(\w+)\./);
          if (!usable[i] || v == null || (d && !get(r.summary, "latency." + d[1] + ".count"))) return;
          xs.push(at[i]); ys.push(v * m[2]);
        });
        return { name: m[0], what: m[0], fixed: true, color: COLORS[k], x: xs, y: ys, marks: true, dash: k ? [4, 3] : undefined };
      }), { digits: digits, height: 200, emptyText: title + " (no run measured it)" });
    }
    app.appendChild(el("h2", { text: "Against load (" + knob[1] + ")" }));
    app.appendChild(el("div", { class: "note", text: "One point per run at its " + knob[1] + ". Latencies over successful requests; a run with none has no point." }));
    var grid = el("div", { class: "grid" });
    app.appendChild(grid);
    var start = notDrawn.length;
    curve("TTFT", "ms", [["p50", "latency.ttft.p50_s", 1000], ["p99", "latency.ttft.p99_s", 1000]], 2);
    curve("ITL", "ms", [["p50", "latency.itl.p50_s", 1000], ["p99", "latency.itl.p99_s", 1000]], 2);
    curve("E2E", "ms", [["p50", "latency.e2e.p50_s", 1000], ["p99", "latency.e2e.p99_s", 1000]], 1);
    curve("Output tokens/s", "tok/s", [["output tok/s", "throughput.output_tokens_per_s", 1]], 0);
    curve("Requests/s", "req/s", [["ok requests/s", "throughput.requests_per_s", 1]], 2);
    curve("Job time", "s", [["p50", "latency.job_time.p50_s", 1], ["p90", "latency.job_time.p90_s", 1]], 2);
    var n = notDrawnNote(start);
    if (n) app.appendChild(n);
  }

  // ---- CDFs --------------------------------------------------------------
  // A distribution no source has (a plan has only queue wait, and that
  // only under --max-inflight) is left out, not drawn empty; so is a
  // queue wait that is 0 for every request (nothing waited for the cap).
  function cdfOf(r, key) { var c = (r.cdf || {})[key]; return c && c.n > 0 ? c : null; }
  function allZero(c) { return c.x.length === 1 && c.x[0] === 0; }
  var shownCdfs = CDFS.filter(function (m) {
    return runs.some(function (r) { var c = cdfOf(r, m[0]); return c && !(m[0] === "queue_wait" && allZero(c)); });
  });
  var cdfStart = notDrawn.length;
  CDFS.forEach(function (m) {
    if (shownCdfs.indexOf(m) >= 0) return;
    var any = runs.some(function (r) { return cdfOf(r, m[0]); });
    if (m[0] === "queue_wait" && any) notDrawn.push("queue wait CDF (every request waited 0 ms: --max-inflight never held one)");
    else if (measured) notDrawn.push(m[1] + " CDF");
  });
  app.appendChild(el("h2", { text: "Distributions (CDF)" }));
  app.appendChild(el("div", { class: "note", text: shownCdfs.length === 0 ?
    (plans ? "A plan has no distributions to draw: latency is measured by a run, and the plan's queue wait exists only under --max-inflight." :
      "Nothing to draw: no request succeeded.") :
    plans ? "Fraction of planned requests (warmups included) that waited at most x ms for the --max-inflight cap." :
    "Fraction of requests at most x ms; warmups left out; up to a few hundred points per curve (denser in the top 1 %). Exact up to 100,000 values, then (and for ITL always) from a 3-significant-digit histogram, as the summary counts them." + (runs.length > 1 ? " Runs overlaid." : "") }));
  var logBox = el("input", { type: "checkbox", id: "cdf-log" });
  if (shownCdfs.length) {
    app.appendChild(el("div", { class: "controls" }, [logBox, el("label", { for: "cdf-log", text: " log scale for x (values of 0 left out)" })]));
  }
  if (runs.length > 4 && shownCdfs.length) app.appendChild(runKey());
  var cdfGrid = el("div", { class: "grid" });
  app.appendChild(cdfGrid);
  var cdfNote = el("div");
  app.appendChild(cdfNote);
  function drawCdfs(log) {
    cdfGrid.textContent = "";
    charts = charts.filter(function (c) { return c.kind !== "cdf"; });
    notDrawn.length = cdfStart;
    shownCdfs.forEach(function (m) {
      var box = el("div", { class: "chart" });
      cdfGrid.appendChild(box);
      var u = plot(box, m[1] + " CDF", "ms", "fraction", runs.map(function (r, i) {
        var c = cdfOf(r, m[0]) || { x: [], p: [], n: 0 };
        var same = c.x.length === 1 ? ", all " + num(c.x[0] * 1000, 2) + " ms" : "";
        var x = toMs(c.x), y = c.p;
        if (log) {
          var keep = x.map(function (v) { return v > 0; });
          x = x.filter(function (v, k) { return keep[k]; });
          y = y.filter(function (v, k) { return keep[k]; });
        }
        return { name: r.name + " (n=" + num(c.n, 0) + same + ")", color: color(i), x: x, y: y };
      }), { yRange: [0, 1], logX: log, digits: 3, emptyText: m[1] + " CDF (no values" + (log ? " above 0" : "") + ")" });
      if (u) charts[charts.length - 1].kind = "cdf";
    });
    cdfNote.textContent = "";
    var n = notDrawnNote(cdfStart);
    if (n) cdfNote.appendChild(n);
  }
  drawCdfs(false);
  logBox.addEventListener("change", function () { drawCdfs(logBox.checked); });

  // ---- time series -----------------------------------------------------
  app.appendChild(el("h2", { text: "Over time" }));
  var bins = runs.map(function (r) { return num(r.series.bin_s * 1000, 0) + " ms"; }).filter(function (b, i, all) { return all.indexOf(b) === i; }).join(" / ");
  var many = runs.length > 4;
  app.appendChild(el("div", { class: "note", text: plans ?
    "Seconds on the plan's virtual clock, in bins of " + bins + ". In flight: requests sent and not yet ended (warmups included, as the planned peak counts them). " +
      "Demand: input tokens/s are the prompts of the requests sent in each bin (a plan knows no prefill time); output tokens/s spread each request's output over its planned service (sent to end)." :
    "Seconds from each run's start, in bins of " + bins + ". Tokens are spread over each request's prefill (input) or streaming (output); TTFT percentiles and cache hits by the bin a request was sent in; errors by the bin it ended in." +
      (many ? " With more than four runs, one line per run (in flight: the most at once in each bin; TTFT: p50; errors: every class)." :
        " The planned series is the run's plan on its virtual clock (planned.json), from the same start.") }));
  if (runs.length > 1) app.appendChild(runKey());
  var seriesStart = notDrawn.length;
  var seriesGrid = el("div", { class: "grid" });
  app.appendChild(seriesGrid);
  function seriesChart(title, unitY, make, opts) {
    var box = el("div", { class: "chart" });
    seriesGrid.appendChild(box);
    var list = [];
    runs.forEach(function (r, i) { make(r, i, list); });
    return plot(box, title, "s", unitY, list, opts);
  }
  // A line of run `r` (index i): named for its run when there are several.
  function line(r, i, what, props) {
    var s = { name: runs.length > 1 ? r.name + ": " + what : what, what: what, color: color(i) };
    Object.keys(props).forEach(function (k) { s[k] = props[k]; });
    return s;
  }
  // The planned peak: a dashed line over the span, and (a plan's) a
  // point where it is first reached.
  function peakMarks(r, i, list, peak, at) {
    var s = r.series;
    if (peak == null || !s.t_s.length || many) return;
    list.push(line(r, i, "planned peak " + num(peak, 0), { color: "#888", x: s.t_s, y: s.t_s.map(function () { return peak; }), dash: [8, 4] }));
    if (at != null) list.push(line(r, i, "peak first reached at " + num(at, 3) + " s", { color: "#d62828", x: [at], y: [peak], points: true }));
  }
  seriesChart(plans ? "Planned requests in flight" : many ? "Requests in flight (most at once per bin)" : "Requests in flight, observed against planned", "requests", function (r, i, list) {
    var s = r.series;
    if (isPlan(r)) {
      list.push(line(r, i, "planned (max in bin)", { x: s.t_s, y: s.inflight_max, stepped: true }));
      list.push(line(r, i, "planned (mean)", { x: s.t_s, y: s.inflight_mean, dash: [4, 3], stepped: true }));
      peakMarks(r, i, list, get(r.summary, "peak_inflight"), get(r.summary, "peak_inflight_at_s"));
      return;
    }
    list.push(line(r, i, "observed (max in bin)", { x: s.t_s, y: s.inflight_max, stepped: true }));
    if (many) return;
    list.push(line(r, i, "observed (mean)", { x: s.t_s, y: s.inflight_mean, dash: [4, 3], stepped: true }));
    if (r.planned && r.planned.t_s.length) {
      list.push(line(r, i, "planned (max in bin, plan's clock)", { color: runs.length > 1 ? color(i) : "#555", dash: runs.length > 1 ? [1, 3] : undefined,
        x: r.planned.t_s, y: r.planned.inflight_max, stepped: true }));
    }
    peakMarks(r, i, list, get(r.summary, "concurrency.planned_peak"), null);
  }, { digits: 1 });
  seriesChart(plans ? "Planned demand: output tokens/s" : "Output tokens/s", "tok/s", function (r, i, list) {
    list.push(line(r, i, "output tok/s", { x: r.series.t_s, y: r.series.output_tok_s, stepped: true }));
  }, { digits: 0 });
  seriesChart(plans ? "Planned demand: input tokens/s" : "Input tokens/s", "tok/s", function (r, i, list) {
    list.push(line(r, i, "input tok/s", { x: r.series.t_s, y: r.series.input_tok_s, stepped: true }));
  }, { digits: 0 });
  // What only a run measured; a plan's series has none of it.
  if (measured) seriesChart(many ? "TTFT per bin (p50)" : "TTFT per bin (p50, p99)", "ms", function (r, i, list) {
    if (isPlan(r)) return;
    var toMsOrNull = function (v) { return v == null ? null : v * 1000; };
    list.push(line(r, i, "p50", { x: r.series.t_s, y: r.series.ttft_p50_s.map(toMsOrNull) }));
    if (!many) list.push(line(r, i, "p99", { dash: [4, 3], x: r.series.t_s, y: r.series.ttft_p99_s.map(toMsOrNull) }));
  }, { digits: 2, emptyText: "TTFT per bin (no successful request)" });
  var failures = runs.some(function (r) { return !isPlan(r) && Object.keys(r.series.errors || {}).length; });
  if (measured && !failures) notDrawn.push("failed requests over time (none failed)");
  if (failures) seriesChart("Failed requests" + (many ? "" : " by error class"), "requests", function (r, i, list) {
    if (isPlan(r)) return;
    var classes = Object.keys(r.series.errors || {});
    if (many) {
      if (!classes.length) return;
      var sum = r.series.t_s.map(function (t, k) { return classes.reduce(function (n, c) { return n + (r.series.errors[c][k] || 0); }, 0); });
      list.push(line(r, i, "failed", { x: r.series.t_s, y: sum, stepped: true }));
      return;
    }
    classes.forEach(function (c, k) {
      list.push(line(r, i, c, { color: COLORS[(i + k + 1) % COLORS.length], x: r.series.t_s, y: r.series.errors[c], stepped: true }));
    });
  }, { digits: 0 });
  if (measured) seriesChart("Cache-hit ratio (server-reported)", "ratio", function (r, i, list) {
    if (!isPlan(r) && r.series.cache_hit.some(function (v) { return v != null; })) {
      list.push(line(r, i, "cached / input tokens", { x: r.series.t_s, y: r.series.cache_hit }));
    }
  }, { yRange: [0, 1], emptyText: "cache-hit ratio (the server's usage reported no cached tokens)", digits: 3 });

  // The server's own view (scraped /metrics), only when a run has it.
  var scraped = function (r) { return r.server && r.server.t_s.length > 0; };
  if (runs.some(scraped)) seriesChart("Server's view (scraped /metrics): running and waiting" + (many ? "" : ", against requests in flight"), "requests", function (r, i, list) {
    if (!scraped(r)) return;
    var g = r.server.gauges;
    if (!many) list.push(line(r, i, "in flight (client, max in bin)", { color: "#888", x: r.series.t_s, y: r.series.inflight_max, stepped: true }));
    if (g.running) list.push(line(r, i, "running (server)", { x: r.server.t_s, y: g.running }));
    if (g.waiting && !many) list.push(line(r, i, "waiting (server)", { dash: [4, 3], x: r.server.t_s, y: g.waiting }));
  }, { digits: 1 });
  var sn = notDrawnNote(seriesStart);
  if (sn) app.appendChild(sn);

  // ---- prefix reuse: best possible, predicted, achieved --------------------
  // From the summary's `reuse` (a run's: by the gap since the agent's
  // previous turn; a plan's: its totals). Bars are shares of the bin's
  // prompt tokens.
  var REUSE = [["best_tokens", "best possible", "#9aa5b1"], ["predicted_tokens", "predicted (server model)", "#2563eb"],
    ["achieved_tokens", "achieved (server-reported)", "#0f9d58"]];
  var reuseRuns = runs.filter(function (r) { return r.summary && r.summary.reuse; });
  function share(n, of) { return n == null || !of ? null : n / of; }
  function reuseBars(groups) {
    var W = Math.min(760, 60 + 150 * groups.length), H = 240, LEFT = 44, BOTTOM = 38, TOP = 16, plotH = H - TOP - BOTTOM;
    var gw = (W - LEFT - 10) / groups.length, bw = Math.min(34, (gw - 18) / 3);
    var kids = [];
    [0, 0.25, 0.5, 0.75, 1].forEach(function (f) {
      var y = TOP + plotH * (1 - f);
      kids.push(svgEl("line", { x1: LEFT, x2: W - 6, y1: y, y2: y, stroke: f === 0 ? "#667085" : "#e5e8ee" }));
      kids.push(svgEl("text", { x: LEFT - 6, y: y + 4, "text-anchor": "end", "font-size": 11, fill: "#667085" },
        [document.createTextNode(Math.round(f * 100) + " %")]));
    });
    groups.forEach(function (g, k) {
      var x0 = LEFT + k * gw + (gw - 3 * bw - 8) / 2;
      REUSE.forEach(function (m, j) {
        var v = share(g[m[0]], g.prompt_tokens);
        var x = x0 + j * (bw + 4);
        if (v == null) {
          if (g.requests && m[0] === "predicted_tokens") {
            kids.push(svgEl("text", { x: x + bw / 2, y: TOP + plotH - 4, "text-anchor": "middle", "font-size": 10, fill: "#667085" },
              [document.createTextNode("n/a")]));
          }
          return;
        }
        var h = Math.max(v > 0 ? 1 : 0, plotH * Math.min(1, v));
        kids.push(svgEl("rect", { x: x, y: TOP + plotH - h, width: bw, height: h, fill: m[2] },
          [svgEl("title", {}, [document.createTextNode(g.gap + ", " + m[1] + ": " + num(g[m[0]], 0) + " of " + num(g.prompt_tokens, 0) +
            " prompt tokens (" + num(v * 100, 1) + " %)")])]));
        kids.push(svgEl("text", { x: x + bw / 2, y: TOP + plotH - h - 3, "text-anchor": "middle", "font-size": 10, fill: "#1d2330" },
          [document.createTextNode(num(v * 100, 0))]));
      });
      kids.push(svgEl("text", { x: LEFT + k * gw + gw / 2, y: H - BOTTOM + 16, "text-anchor": "middle", "font-size": 12, fill: "#1d2330" },
        [document.createTextNode(g.gap)]));
      kids.push(svgEl("text", { x: LEFT + k * gw + gw / 2, y: H - BOTTOM + 30, "text-anchor": "middle", "font-size": 10.5, fill: "#667085" },
        [document.createTextNode(num(g.requests, 0) + " requests")]));
    });
    return svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "reuse-bars" }, kids);
  }
  if (reuseRuns.length) {
    app.appendChild(el("h2", { text: "Prefix reuse: best possible, predicted, achieved" }));
    app.appendChild(el("div", { class: "note", text: "Per request, the prompt tokens the workload could reuse at best (an infinite cache, token by token, " +
      "a prompt's longest prefix shared with any request sent before it in the plan's order, the agent's previous answer counted), what the plan's server model " +
      "predicted (--service server:PROFILE; none without one) and what the server reported (cached_tokens). Bars: shares of the prompt tokens, " +
      "by the gap since the agent's previous turn ended on the plan's clock: a cache that evicts over long tool gaps falls behind the best there." }));
    reuseRuns.forEach(function (r) {
      var u = r.summary.reuse;
      if (runs.length > 1) app.appendChild(el("h3", { text: r.name }));
      var total = { gap: "all", requests: u.requests, prompt_tokens: u.prompt_tokens, best_tokens: u.best_tokens,
        predicted_tokens: u.predicted_tokens, achieved_tokens: isPlan(r) ? null : u.achieved_tokens };
      var groups = [total].concat((u.by_gap || []).filter(function (b) { return b.requests > 0; }));
      var box = el("div", { class: "chart" });
      box.appendChild(el("div", { class: "chart-title", text: "Prefix reuse: best possible, predicted, achieved (% of prompt tokens)" }));
      box.appendChild(reuseBars(groups));
      box.appendChild(el("div", { class: "legend" }, REUSE.filter(function (m) { return !isPlan(r) || m[0] !== "achieved_tokens"; }).map(function (m) {
        return el("span", { class: "legend-item" }, [el("span", { class: "swatch", style: "background:" + m[2] }), m[1]]);
      })));
      app.appendChild(box);
      if (u.predicted_tokens == null) app.appendChild(el("div", { class: "note", text: "No server model: no prediction." }));
      if (isPlan(r)) app.appendChild(el("div", { class: "note", text: "A plan sends nothing: a run adds what the server achieved, by gap bin." }));
      var tok = function (n, of) { return n == null ? DASH : num(n, 0) + (of ? " (" + num(n * 100 / of, 1) + " %)" : ""); };
      app.appendChild(table(["gap", "requests", "prompt tokens", "best possible", "predicted", "achieved", "achieved / best"],
        groups.map(function (g) {
          return [g.gap, num(g.requests, 0), num(g.prompt_tokens, 0), tok(g.best_tokens, g.prompt_tokens), tok(g.predicted_tokens, g.prompt_tokens),
            tok(g.achieved_tokens, g.prompt_tokens), g.achieved_tokens == null || !g.best_tokens ? DASH : num(g.achieved_tokens * 100 / g.best_tokens, 1) + " %"];
        })));
    });
  }

  if (runs.length > 0) lanes.load(runs[0]);

  // ---- self-check --------------------------------------------------------
  checks.push(function () { return runs.length ? null : "no runs in the data"; });
  // The replica rows add up to the run's measured requests and tokens.
  checks.push(function () {
    var wrong = replicated.filter(function (r) {
      var s = r.summary, rows = s.replicas.replicas;
      var sum = function (k) { return rows.reduce(function (a, f) { return a + (get(f, k) || 0); }, 0); };
      return sum("requests") !== get(s, "counts.dispatched") || sum("cache.cached_tokens") !== get(s, "cache.cached_tokens") ||
        sum("cache.input_tokens") !== get(s, "cache.input_tokens");
    });
    return wrong.length ? "replica rows do not add up: " + wrong.map(function (r) { return r.name; }).join(", ") : null;
  });
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
  // lateness CDF at least: fewer than four charts (three for a plan) means
  // something broke.
  var records = runs.reduce(function (n, r) { return n + (r.records || 0); }, 0);
  checks.push(function () {
    // A plan has three: in flight and the two demands.
    var least = plans ? 3 : 4;
    return records === 0 || charts.length >= least ? null : "only " + charts.length + " charts drawn";
  });
  checks.push(function () {
    return lanes.turns() === 0 || lanes.stats.drawn > 0 ? null : "swim lanes drew no bar";
  });
  checks.push(function () {
    return whiskers.drawn === whiskers.want ? null : "interval whiskers: " + whiskers.drawn + " of " + whiskers.want + " drawn";
  });
  if (!page.failed()) {
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
