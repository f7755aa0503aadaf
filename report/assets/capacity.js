// arbor capacity page: draws a capacity search's directory from the JSON
// blob in #arbor-data (report/src/page/capacity/data.rs). Answer first: the
// headline (how much load holds within the SLOs), the knee and how it was
// measured; then the goodput curve and each SLO metric against the load
// with its limit, the knee's bracket shaded, a live search's prediction
// dashed beside it; then every probe's verdict by load. Uses the vendored
// uPlot and report.css (capacity.css after it). When every chart has
// drawn with data the page sets document.title to "arbor report: ok"; on
// any error, to "arbor report: error: ..." (scripts/check-report.sh reads
// it), and says so in a banner on the page.
(function () {
  "use strict";

  var startedAt = performance.now();
  var page = window.arborPage, fail = page.fail, el = page.el, num = page.num, pct = page.pct, DASH = page.DASH;

  var LIVE = "#2563eb", TREES = "#e8590c", PREDICTED = "#6b7280", LIMIT = "#b3261e", FAILS = "#b3261e", SMALL = "#8a4b00";


  var data, app = document.getElementById("app");
  try {
    data = JSON.parse(document.getElementById("arbor-data").textContent);
  } catch (e) {
    fail("the page's data cannot be read: " + e);
    return;
  }
  var sessions = data.knob === "sessions";
  var curve = data.curve, predicted = data.predicted;
  function load(v) {
    return sessions ? num(v, 0) + (v === 1 ? " session" : " sessions") : num(v, 3).replace(/\.?0+$/, "") + " trees/s";
  }
  function loadShort(v) { return sessions ? num(v, 0) : num(v, 3).replace(/\.?0+$/, ""); }

  // A bound's unit: seconds for limits of 1 s and more, else ms.
  function unitOf(bound) { return bound.limit_s >= 1 ? ["s", 1, 3] : ["ms", 1000, 1]; }
  function reading(bound, s) {
    var u = unitOf(bound);
    return s == null ? DASH : num(s * u[1], u[2]) + " " + u[0];
  }

  // ---- the answer ----------------------------------------------------------
  app.appendChild(el("h1", { text: "arbor capacity" }));
  app.appendChild(el("div", { class: "sub", text: data.path + " · " +
    (data.mode === "live" ? "live search" : "on the virtual clock") + " · arbor " + data.arbor_version }));

  var a = data.answer;
  var state = !data.complete ? "stopped" : data.bound_line ? "stopped" : a.passing == null ? "none" : "holds";
  var box = el("div", { class: "cap-verdict " + state });
  box.appendChild(el("div", { class: "cap-headline", text: data.headline }));
  function line(k, v) { box.appendChild(el("div", { class: "cap-line" }, [el("span", { class: "cap-k", text: k + " " }), v])); }
  line("SLO", data.slo + (data.goodput_threshold == null ? " (a load passes when every bound holds)" :
    " (a load passes when at least " + pct(data.goodput_threshold) + " of requests, and of trees, meet every bound of their kind)"));
  if (a.passing != null && a.failing != null) {
    line(data.bound_line ? "Bracket" : "Knee", "between " + load(a.passing) + " (passes) and " + load(a.failing) + " (fails), searched to a step of " + loadShort(data.step));
  }
  var measuredBy = data.mode === "live" ?
    curve.points.length + " live probe" + (curve.points.length === 1 ? "" : "s") + ", each an arbor run in its own directory" :
    curve.points.length + " load" + (curve.points.length === 1 ? "" : "s") + " planned on the virtual clock under --service " + data.service;
  line("Measured", measuredBy + "; --search " + data.knob + ":" + loadShort(data.range[0]) + ".." + loadShort(data.range[1]));
  if (data.above_knee_line) line("Above the knee", data.above_knee_line);
  if (data.predicted_line) line("Prediction", data.predicted_line);
  if (data.stopped_line) line("Stopped", data.stopped_line);
  // An answer that is only a bound, and the confirmation run (live).
  if (data.bound_line) line("Not a point", "a live probe stayed unresolved after its extensions (its 95 % interval " +
    "reached across a limit, or it had fewer requests than --min-requests): lengthen the probes (--duration) or raise --max-extensions");
  if (data.confirmation_line) line("Confirmation", data.confirmation_line);
  app.appendChild(box);

  // ---- charts ----------------------------------------------------------------
  var charts = [];     // {name, plot, values}: drawn
  var problems = [];   // what could not be drawn
  function chartWidth(b) { return Math.max(320, b.clientWidth || 620); }
  var allLoads = [];
  [curve].concat(predicted ? [predicted] : []).forEach(function (c) {
    c.points.forEach(function (p) { allLoads.push(p.load); });
  });
  var xMin = Math.min.apply(null, allLoads), xMax = Math.max.apply(null, allLoads);
  // The x axis spans the loads and a little more; a limit is a line from
  // edge to edge (also over a single load).
  var pad = (xMax - xMin) * 0.04 || 1;
  var across = [xMin - pad, xMax + pad];
  function level(v) { return [v, v]; }

  // The knee's bracket shaded behind the series, its ends marked; a
  // prediction's bracket outlined, dashed.
  function kneeHook(u) {
    var ctx = u.ctx, top = u.bbox.top, h = u.bbox.height, left = u.bbox.left, right = left + u.bbox.width;
    function x(v) { return Math.round(u.valToPos(v, "x", true)); }
    function vline(v, color, dash) {
      if (v == null) return;
      var px = x(v);
      if (px < left || px > right) return;
      ctx.save(); ctx.strokeStyle = color; ctx.lineWidth = 1.5 * devicePixelRatio;
      ctx.setLineDash(dash || []); ctx.beginPath(); ctx.moveTo(px, top); ctx.lineTo(px, top + h); ctx.stroke(); ctx.restore();
    }
    if (predicted) {
      var pa = predicted.answer;
      vline(pa.passing, PREDICTED, [5 * devicePixelRatio, 4 * devicePixelRatio]);
      vline(pa.failing, PREDICTED, [5 * devicePixelRatio, 4 * devicePixelRatio]);
    }
    if (a.passing != null && a.failing != null) {
      var x0 = Math.max(left, x(a.passing)), x1 = Math.min(right, x(a.failing));
      ctx.save(); ctx.fillStyle = "rgba(232, 89, 12, 0.13)"; ctx.fillRect(x0, top, Math.max(1, x1 - x0), h); ctx.restore();
    }
    vline(a.passing, "#137333");
    vline(a.failing, LIMIT);
  }
  // The legend's entries of the knee's marks, after the series'.
  function kneeLegend(legend) {
    if (a.passing != null && a.failing != null) {
      legend.appendChild(el("span", { class: "legend-item" }, [el("span", { class: "cap-band" }),
        "knee: " + loadShort(a.passing) + " passes, " + loadShort(a.failing) + " fails"]));
    } else if (a.passing != null || a.failing != null) {
      var only = a.passing != null ? a.passing : a.failing;
      legend.appendChild(el("span", { class: "legend-item" }, [
        el("span", { class: "line", style: "border-top-color:" + (a.passing != null ? "#137333" : LIMIT) }),
        (a.passing != null ? "largest passing: " : "first failing: ") + loadShort(only)]));
    }
    var pa = predicted && predicted.answer;
    if (pa && (pa.passing != null || pa.failing != null)) {
      legend.appendChild(el("span", { class: "legend-item" }, [
        el("span", { class: "line dashed", style: "border-top-color:" + PREDICTED }),
        "predicted knee" + (pa.passing != null ? ": " + loadShort(pa.passing) + " passes" : "") +
          (pa.failing != null ? (pa.passing != null ? ", " : ": ") + loadShort(pa.failing) + " fails" : "")]));
    }
  }

  // series: {name, color, x, y, dash, points (rings only, no line), limit
  // (a line edge to edge, no markers, read out only beside a curve)}
  function plot(parent, name, title, yLabel, series, opts) {
    var b = el("div", { class: "chart" });
    parent.appendChild(b);
    b.appendChild(el("div", { class: "chart-title", text: title }));
    var shown = series.filter(function (s) { return s.y.some(function (v) { return v != null && isFinite(v); }); });
    if (shown.length === 0) {
      b.appendChild(el("div", { class: "empty", text: opts.emptyText }));
      problems.push(name + ": no value to draw (" + opts.emptyText + ")");
      return;
    }
    var joined = uPlot.join(shown.map(function (s) { return [s.x, s.y]; }));
    var readout = el("div", { class: "cap-readout" });
    var u = new uPlot({
      width: chartWidth(b), height: opts.height || 230,
      legend: { show: false },
      scales: { x: { time: false, range: [xMin - pad, xMax + pad] }, y: opts.yRange ? { range: opts.yRange } : { auto: true } },
      axes: [
        { label: data.axis, size: 40, incrs: sessions ? [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] : undefined },
        { label: yLabel, size: 64 }
      ],
      series: [{}].concat(shown.map(function (s) {
        return {
          label: s.name, stroke: s.color, width: s.points ? 0 : 2, dash: s.dash, spanGaps: true,
          paths: s.points ? function () { return null; } : undefined,
          points: s.points ? { show: true, size: 11, fill: "#fff", stroke: s.color, width: 2 } :
            s.limit ? { show: false } : { show: true, size: 6, fill: s.color, stroke: s.color }
        };
      })),
      hooks: {
        drawAxes: [kneeHook],
        setCursor: [function (u) {
          var i = u.cursor.idx;
          if (i == null) { readout.textContent = ""; return; }
          // A curve's values at the load under the cursor; a limit's
          // only beside them (its ends are past the loads).
          var parts = [], curves = 0;
          shown.forEach(function (s, k) {
            var v = u.data[k + 1][i];
            if (v == null || s.points) return;
            if (!s.limit) curves++;
            parts.push(s.name + " " + opts.show(v));
          });
          readout.textContent = curves ? data.knob + " " + loadShort(u.data[0][i]) + ": " + parts.join(" · ") : "";
        }]
      }
    }, joined, b);
    var legend = el("div", { class: "legend" });
    shown.forEach(function (s) {
      var mark = s.points ? el("span", { class: "cap-ring", style: "border-color:" + s.color }) :
        el("span", { class: "line" + (s.dash ? " dashed" : ""), style: "border-top-color:" + s.color });
      legend.appendChild(el("span", { class: "legend-item" }, [mark, s.name]));
    });
    kneeLegend(legend);
    b.appendChild(legend);
    b.appendChild(readout);
    charts.push({ name: name, plot: u });
  }
  function xs(c) { return c.points.map(function (p) { return p.load; }); }
  function measured(c) { return c.points.filter(function (p) { return p.verdict !== "unresolved"; }); }
  var ownName = data.mode === "live" ? "live" : "virtual";

  if (curve.points.length === 0) {
    problems.push("no probe to draw: " + data.headline);
  } else {
    // -- goodput --
    app.appendChild(el("h2", { text: "Goodput against load" }));
    app.appendChild(el("div", { class: "note", text: "The share of requests that met every request bound (TTFT, ITL, TPOT, E2E), and of trees (plays that ran all their turns) that met every job bound, at each probed load. " +
      "A kind with no bound in the SLO has no goodput. The shaded band is the knee: the largest passing load and the smallest failing one above it." +
      (predicted ? " Dashed: the prediction on the virtual clock the live search started from (its knee as dashed lines)." : "") }));
    var g = [];
    function goodputSeries(c, field, label, color, dash) {
      var pts = c.points.filter(function (p) { return p.verdict !== "unresolved"; });
      return { name: label, color: color, dash: dash, x: pts.map(function (p) { return p.load; }),
        y: pts.map(function (p) { return p[field] == null ? null : p[field] * 100; }) };
    }
    g.push(goodputSeries(curve, "request_goodput", "requests (" + ownName + ")", LIVE));
    g.push(goodputSeries(curve, "job_goodput", "trees (" + ownName + ")", TREES));
    if (predicted) {
      g.push(goodputSeries(predicted, "request_goodput", "requests (predicted)", LIVE, [6, 4]));
      g.push(goodputSeries(predicted, "job_goodput", "trees (predicted)", TREES, [6, 4]));
    }
    if (data.goodput_threshold != null) {
      g.push({ name: "goodput threshold " + pct(data.goodput_threshold), color: LIMIT, dash: [3, 3], limit: true,
        x: across, y: level(data.goodput_threshold * 100) });
    }
    var fails = measured(curve).filter(function (p) {
      return p.verdict === "fail" && (p.request_goodput != null || p.job_goodput != null);
    });
    g.push({ name: "probes that fail", color: FAILS, points: true, x: fails.map(function (p) { return p.load; }),
      y: fails.map(function (p) { return (p.request_goodput != null ? p.request_goodput : p.job_goodput) * 100; }) });
    var small = curve.points.filter(function (p) {
      return (p.verdict === "too_small" || p.verdict === "undecided") && (p.request_goodput != null || p.job_goodput != null);
    });
    g.push({ name: "unresolved", color: SMALL, points: true, x: small.map(function (p) { return p.load; }),
      y: small.map(function (p) { return (p.request_goodput != null ? p.request_goodput : p.job_goodput) * 100; }) });
    var gbox = el("div", { class: "cap-wide" });
    app.appendChild(gbox);
    plot(gbox, "goodput", "Goodput (% meeting the SLO)", "%", g, {
      // Up to 100 %, down to the tens below the least value (or the
      // threshold), so a curve between 90 and 100 % is not flattened.
      yRange: function (u, min) {
        var least = Math.min(min, data.goodput_threshold == null ? 100 : data.goodput_threshold * 100);
        return [Math.max(0, Math.floor((least - 1) / 10) * 10), 100];
      },
      height: 260, emptyText: "no probe measured a goodput",
      show: function (v) { return num(v, 1) + " %"; }
    });

    // -- each bound --
    app.appendChild(el("h2", { text: "SLO metrics against load" }));
    app.appendChild(el("div", { class: "note", text: "Each bound's percentile at each probed load (nearest rank over the probe's requests, or trees for job), with its limit as a red dashed line; circled: over the limit. " +
      "A percentile that falls on a failed request has no value (the table says so)." }));
    var grid = el("div", { class: "grid cap-grid" });
    app.appendChild(grid);
    data.bounds.forEach(function (bound, k) {
      var u = unitOf(bound);
      function ys(c) { return c.points.map(function (p) { var s = p.readings[k] && p.readings[k].s; return s == null ? null : s * u[1]; }); }
      var list = [{ name: ownName, color: LIVE, x: xs(curve), y: ys(curve) }];
      if (predicted) list.push({ name: "predicted", color: PREDICTED, dash: [6, 4], x: xs(predicted), y: ys(predicted) });
      list.push({ name: "limit " + reading(bound, bound.limit_s), color: LIMIT, dash: [3, 3], limit: true,
        x: across, y: level(bound.limit_s * u[1]) });
      var over = curve.points.filter(function (p) { var r = p.readings[k]; return r && r.s != null && !r.pass; });
      list.push({ name: "over the limit", color: FAILS, points: true, x: over.map(function (p) { return p.load; }),
        y: over.map(function (p) { return p.readings[k].s * u[1]; }) });
      var small = curve.points.filter(function (p) { var r = p.readings[k]; return (p.verdict === "too_small" || p.verdict === "undecided") && r && r.s != null; });
      list.push({ name: "unresolved", color: SMALL, points: true, x: small.map(function (p) { return p.load; }),
        y: small.map(function (p) { return p.readings[k].s * u[1]; }) });
      // A chart with only its limit drawn is empty: no reading at all.
      if (!list[0].y.some(function (v) { return v != null; }) && !(predicted && list[1].y.some(function (v) { return v != null; }))) list = [];
      plot(grid, bound.metric, bound.metric + " (limit " + reading(bound, bound.limit_s) + ")", u[0], list, {
        emptyText: "no probe has a value of " + bound.metric + " (each falls on a failed request, or there was nothing to measure)",
        show: function (v) { return num(v, u[2]) + " " + u[0]; }
      });
    });
  }

  // ---- probes ------------------------------------------------------------------
  var VERDICT = { pass: ["pass", "good"], fail: ["FAIL", "bad"], too_small: ["too small", "warn"], unresolved: ["unresolved", "warn"],
    undecided: ["unresolved", "warn"] };
  function probeTable(c) {
    var t = el("table", { class: "cap-probes" });
    var head = ["probe", data.knob, "verdict", "reason", "requests", "failed", "goodput req", "goodput trees"]
      .concat(data.bounds.map(function (b) { return b.metric; }), ["output tok/s"]);
    t.appendChild(el("tr", {}, head.map(function (h, i) { return el("th", { class: i === 3 ? "k" : "", text: h }); })));
    c.points.forEach(function (p) {
      var v = VERDICT[p.verdict] || [p.verdict, ""];
      var cells = [
        el("td", { text: String(p.probe) }),
        el("td", { text: loadShort(p.load) }),
        el("td", { class: "cap-verdict-cell " + v[1], text: v[0] }),
        el("td", { class: "v", text: p.reason }),
        el("td", { text: p.verdict === "unresolved" ? DASH : String(p.requests) }),
        el("td", { text: p.verdict === "unresolved" ? DASH : String(p.failed) }),
        el("td", { text: pct(p.request_goodput) }),
        el("td", { text: pct(p.job_goodput) })
      ];
      data.bounds.forEach(function (b, k) {
        var r = p.readings[k] || {};
        var text = (r.failed ? "failed" : reading(b, r.s)) + (r.ci ? " " + r.ci : "");
        cells.push(el("td", { class: p.verdict !== "unresolved" && !r.pass ? "bad" : "", text: text }));
      });
      cells.push(el("td", { text: num(p.output_tokens_per_s, 0) }));
      var row = el("tr", { class: p.load === a.passing || p.load === a.failing ? "cap-knee-row" : "" }, cells);
      if (p.dir) row.title = p.dir;
      t.appendChild(row);
    });
    return el("div", { class: "scroll" }, [t]);
  }
  app.appendChild(el("h2", { text: "Probes, by load" }));
  app.appendChild(el("div", { class: "note", text: "Each probe's verdict against the SLO and why; red: a reading over its limit; highlighted: the knee's two loads. " +
    "A live probe is judged on 95 % intervals (shown in brackets after each reading): it passes when the whole interval meets the limit, fails when the whole interval misses it, " +
    "and is otherwise unresolved (as is one too small to decide, with fewer successful requests than --min-requests); an unresolved probe is extended, and one still unresolved makes the answer a bound. One whose run failed has no reading. " +
    "Output tokens/s from the probe's summary.json. Probe K at load N is the directory probe-K-" + data.knob + "-N" +
    (predicted ? " (the prediction's under predicted/)" : "") + (data.mode === "live" ? ", a run with its own report.html." : "; arbor report on several overlays them like runs.") }));
  if (curve.points.length) app.appendChild(probeTable(curve));
  else app.appendChild(el("div", { class: "note", text: "No probe was measured." }));
  if (predicted) {
    var details = el("details", { class: "cap-predicted" }, [el("summary", { text: "The prediction's probes (virtual clock, predicted/): " + predicted.points.length })]);
    details.appendChild(probeTable(predicted));
    app.appendChild(details);
  }

  // ---- self-check --------------------------------------------------------------
  charts.forEach(function (c) {
    if (!c.plot.root.querySelector("canvas") || !(c.plot.data[0] && c.plot.data[0].length)) problems.push("empty chart: " + c.name);
  });
  if (!page.failed()) {
    if (problems.length) fail(problems.join("; "));
    else document.title = "arbor report: ok";
  }
  document.body.setAttribute("data-render-ms", String(Math.round(performance.now() - startedAt)));
  document.body.setAttribute("data-charts", String(charts.length));
  document.body.setAttribute("data-ready-ms", String(Math.round(performance.now())));
})();
