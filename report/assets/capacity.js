// arbor capacity page: draws a capacity search's directory from the JSON
// blob in #arbor-data (report/src/page/capacity/data.rs). Answer first: the
// headline (how much load holds within the SLOs), the knee and how it was
// measured; then the goodput curve and each SLO metric against the load
// with its limit, the knee's bracket shaded, a live search's prediction
// dashed beside it; the load in agents and jobs per hour and the Pareto
// of jobs/h per replica against jobs/h per user (an SVG); then every
// probe's verdict by load. Uses the vendored
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
  if (data.agents_line) line("In agents", data.agents_line);
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

  // A reading's interval at each load: a vertical whisker from lo to hi
  // (to the chart's top when hi falls on a failed request), capped.
  function drawWhiskers(u, w) {
    var ctx = u.ctx, top = u.bbox.top, bottom = top + u.bbox.height, cap = 4 * devicePixelRatio;
    ctx.save(); ctx.strokeStyle = w.color; ctx.lineWidth = 1.5 * devicePixelRatio;
    w.x.forEach(function (load, i) {
      var px = u.valToPos(load, "x", true);
      var y0 = Math.min(bottom, u.valToPos(w.lo[i], "y", true));
      var y1 = w.hi[i] == null ? top : Math.max(top, u.valToPos(w.hi[i], "y", true));
      // Drawn after the page's own check: a whisker that cannot be placed
      // fails the page here.
      if (!isFinite(px) || !isFinite(y0) || !isFinite(y1)) { fail("interval whisker of " + w.name + " at " + load + " could not be placed"); return; }
      ctx.beginPath(); ctx.moveTo(px, y0); ctx.lineTo(px, y1);
      ctx.moveTo(px - cap, y0); ctx.lineTo(px + cap, y0);
      if (w.hi[i] != null) { ctx.moveTo(px - cap, y1); ctx.lineTo(px + cap, y1); }
      ctx.stroke();
    });
    ctx.restore();
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
        draw: [function (u) { (opts.whiskers || []).forEach(function (w) { drawWhiskers(u, w); }); }],
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
    (opts.whiskers || []).filter(function (w) { return w.x.length; }).forEach(function (w) {
      legend.appendChild(el("span", { class: "legend-item" }, [el("span", { class: "cap-whisker", style: "border-color:" + w.color }), w.name]));
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
      "A percentile that falls on a failed request has no value (the table says so). " +
      "Whiskers, when the probes have them (virtual, under the server model): each reading's interval from resamples of the probe's requests under each draw of the profile; " +
      "without draws, the sample's share alone." }));
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
      // Each reading's interval (virtual probes under the server model).
      function whiskers(c, name, color) {
        var pts = c.points.filter(function (p) { var r = p.readings[k]; return r && r.s != null && r.interval; });
        return { name: name, color: color, x: pts.map(function (p) { return p.load; }),
          lo: pts.map(function (p) { return p.readings[k].interval[0] * u[1]; }),
          hi: pts.map(function (p) { var hi = p.readings[k].interval[1]; return hi == null ? null : hi * u[1]; }) };
      }
      var withInterval = function (c) { return c.points.filter(function (p) { var r = p.readings[k]; return r && r.interval; })[0]; };
      var ivName = function (c, what) {
        var r = withInterval(c).readings[k];
        return what + num(r.interval_level * 100, 0) + " % interval" + (r.fit_known ? "" : " (sample only: no draws in the profile)");
      };
      var wl = [];
      if (withInterval(curve)) wl.push(whiskers(curve, ivName(curve, ""), LIVE));
      if (predicted && withInterval(predicted)) wl.push(whiskers(predicted, ivName(predicted, "predicted: "), PREDICTED));
      // A chart with only its limit drawn is empty: no reading at all.
      if (!list[0].y.some(function (v) { return v != null; }) && !(predicted && list[1].y.some(function (v) { return v != null; }))) list = [];
      plot(grid, bound.metric, bound.metric + " (limit " + reading(bound, bound.limit_s) + ")", u[0], list, {
        emptyText: "no probe has a value of " + bound.metric + " (each falls on a failed request, or there was nothing to measure)",
        show: function (v) { return num(v, u[2]) + " " + u[0]; },
        whiskers: wl,
        // The whiskers' ends inside the chart.
        yRange: wl.length ? function (plot, min, max) {
          var ends = [max];
          wl.forEach(function (w) { w.hi.concat(w.lo).forEach(function (v) { if (v != null) ends.push(v); }); });
          return uPlot.rangeNum(Math.min(min, Math.min.apply(null, ends)), Math.max.apply(null, ends), 0.1, true);
        } : undefined
      });
    });
  }

  // ---- in agents and jobs per hour ---------------------------------------------
  function withAgents(c) { return c.points.filter(function (p) { return p.agents && p.verdict !== "unresolved"; }); }
  function agentSeries(c, field, label, color, dash) {
    var pts = withAgents(c);
    return { name: label, color: color, dash: dash, x: pts.map(function (p) { return p.load; }),
      y: pts.map(function (p) { var v = p.agents[field]; return v == null ? null : v; }) };
  }
  if (withAgents(curve).length) {
    app.appendChild(el("h2", { text: "In agents and jobs per hour" }));
    app.appendChild(el("div", { class: "note", text: "An agent is a tree: one job of a top-level agent with its subagents, a play of the tree from its first request sent to its last done. " +
      "Concurrent agents are the trees in flight over the probe's window (the first request of any play sent to the last one done): their mean and their peak; counting subagents, each agent (the top-level one and every subagent) from its own first request to its last. " +
      "Jobs are the plays that ran every turn, per hour of the window; within the job SLOs: those whose job time met every job bound (the goodput of trees)." }));
    var ag = el("div", { class: "grid cap-grid" });
    app.appendChild(ag);
    var ca = [agentSeries(curve, "trees_mean", "agents (" + ownName + ")", LIVE),
      agentSeries(curve, "trees_peak", "agents, peak", LIVE, [2, 3]),
      agentSeries(curve, "agents_mean", "counting subagents", TREES)];
    if (predicted) ca.push(agentSeries(predicted, "trees_mean", "agents (predicted)", PREDICTED, [6, 4]));
    plot(ag, "agents", "Concurrent agents (trees in flight)", "agents", ca, {
      emptyText: "no probe had a tree in flight", show: function (v) { return num(v, 1); }
    });
    var cj = [agentSeries(curve, "jobs_per_hour", "jobs/h (" + ownName + ")", LIVE),
      agentSeries(curve, "good_jobs_per_hour", "within the job SLOs", "#137333")];
    if (predicted) cj.push(agentSeries(predicted, "jobs_per_hour", "jobs/h (predicted)", PREDICTED, [6, 4]));
    plot(ag, "jobs", "Jobs per hour", "jobs/h", cj, {
      emptyText: "no probe completed a job", show: function (v) { return num(v, v < 10 ? 1 : 0) + " jobs/h"; }
    });
  }

  // ---- Pareto ------------------------------------------------------------------
  // Jobs/h per replica (throughput) against jobs/h per user
  // (interactivity), one point a load; the non-dominated ones joined.
  var SVG = "http://www.w3.org/2000/svg";
  function svgEl(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text != null) e.textContent = text;
    return e;
  }
  // About five round steps over [lo, hi].
  function ticks(lo, hi) {
    var span = hi - lo || Math.abs(hi) || 1, raw = span / 5, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = [1, 2, 5, 10].map(function (m) { return m * mag; }).filter(function (s) { return s >= raw; })[0];
    var out = [];
    for (var v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Math.round(v / step) * step);
    return out;
  }
  function paretoChart(parent, pareto, prediction) {
    var pts = pareto.points, guess = prediction ? prediction.points : [];
    var b = el("div", { class: "chart" });
    parent.appendChild(b);
    b.appendChild(el("div", { class: "chart-title", text: "Jobs/h per replica against jobs/h per user" +
      (pareto.replicas > 1 ? " (" + pareto.replicas + " replicas)" : "") }));
    var W = chartWidth(b), H = 300, L = 70, R = 24, T = 12, B = 44;
    var both = pts.concat(guess);
    var xsP = both.map(function (p) { return p.jobs_per_hour_per_user; }), ysP = both.map(function (p) { return p.jobs_per_hour_per_replica; });
    function range(v) {
      var lo = Math.min.apply(null, v), hi = Math.max.apply(null, v), pad = (hi - lo) * 0.08 || Math.abs(hi) * 0.1 || 1;
      return [Math.max(0, lo - pad), hi + pad];
    }
    var xr = range(xsP), yr = range(ysP);
    function X(v) { return L + (v - xr[0]) / (xr[1] - xr[0]) * (W - L - R); }
    function Y(v) { return T + (1 - (v - yr[0]) / (yr[1] - yr[0])) * (H - T - B); }
    var svg = svgEl("svg", { width: W, height: H, class: "cap-pareto", role: "img" });
    ticks(xr[0], xr[1]).forEach(function (v) {
      svg.appendChild(svgEl("line", { x1: X(v), x2: X(v), y1: T, y2: H - B, class: "grid" }));
      svg.appendChild(svgEl("text", { x: X(v), y: H - B + 15, "text-anchor": "middle" }, num(v, v < 10 ? 1 : 0)));
    });
    ticks(yr[0], yr[1]).forEach(function (v) {
      svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: Y(v), y2: Y(v), class: "grid" }));
      svg.appendChild(svgEl("text", { x: L - 6, y: Y(v) + 4, "text-anchor": "end" }, num(v, v < 10 ? 1 : 0)));
    });
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: H - B, y2: H - B, class: "axis" }));
    svg.appendChild(svgEl("line", { x1: L, x2: L, y1: T, y2: H - B, class: "axis" }));
    svg.appendChild(svgEl("text", { x: (L + W - R) / 2, y: H - 8, "text-anchor": "middle", class: "label" },
      "jobs/h per user (interactivity: 3600 s / mean job time)"));
    svg.appendChild(svgEl("text", { x: 14, y: (T + H - B) / 2, "text-anchor": "middle", class: "label",
      transform: "rotate(-90 14 " + (T + H - B) / 2 + ")" }, "jobs/h per replica (throughput)"));
    var readout = el("div", { class: "cap-readout" });
    function about(p) {
      return data.knob + " " + loadShort(p.load) + ": " + num(p.jobs_per_hour_per_replica, 1) + " jobs/h per replica · " +
        num(p.jobs_per_hour_per_user, 1) + " jobs/h per user · " + (p.dominated ? "dominated" : "on the frontier") +
        (p.pass ? " · passes" : " · fails the SLO");
    }
    // The prediction's frontier dashed, its points small grey squares.
    var guessFront = guess.filter(function (p) { return !p.dominated; })
      .sort(function (p, q) { return p.jobs_per_hour_per_user - q.jobs_per_hour_per_user; });
    if (guess.length) {
      svg.appendChild(svgEl("polyline", { fill: "none", stroke: PREDICTED, "stroke-width": 1.5, "stroke-dasharray": "6 4",
        points: guessFront.map(function (p) { return X(p.jobs_per_hour_per_user) + "," + Y(p.jobs_per_hour_per_replica); }).join(" ") }));
      guess.forEach(function (p) {
        var cx = X(p.jobs_per_hour_per_user), cy = Y(p.jobs_per_hour_per_replica);
        var g = svgEl("g", { class: "cap-pareto-predicted" });
        g.appendChild(svgEl("rect", { x: cx - 3, y: cy - 3, width: 6, height: 6, fill: p.dominated ? "#fff" : PREDICTED, stroke: PREDICTED }));
        g.appendChild(svgEl("title", {}, "predicted: " + about(p)));
        g.addEventListener("mouseenter", function () { readout.textContent = "predicted: " + about(p); });
        g.addEventListener("mouseleave", function () { readout.textContent = ""; });
        svg.appendChild(g);
      });
    }
    var front = pts.filter(function (p) { return !p.dominated; })
      .sort(function (p, q) { return p.jobs_per_hour_per_user - q.jobs_per_hour_per_user; });
    svg.appendChild(svgEl("polyline", { fill: "none", stroke: LIVE, "stroke-width": 2,
      points: front.map(function (p) { return X(p.jobs_per_hour_per_user) + "," + Y(p.jobs_per_hour_per_replica); }).join(" ") }));
    pts.forEach(function (p) {
      var cx = X(p.jobs_per_hour_per_user), cy = Y(p.jobs_per_hour_per_replica);
      var g = svgEl("g", { class: "cap-pareto-point" + (p.dominated ? " dominated" : "") });
      if (!p.pass) g.appendChild(svgEl("circle", { cx: cx, cy: cy, r: 7.5, fill: "none", stroke: FAILS, "stroke-width": 1.5 }));
      if (p.load === a.passing) g.appendChild(svgEl("circle", { cx: cx, cy: cy, r: 7.5, fill: "none", stroke: "#137333", "stroke-width": 2 }));
      g.appendChild(svgEl("circle", { cx: cx, cy: cy, r: 4, fill: p.dominated ? "#fff" : LIVE, stroke: p.dominated ? PREDICTED : LIVE, "stroke-width": 1.5 }));
      if (!p.dominated) g.appendChild(svgEl("text", { x: cx + 7, y: cy - 7, class: "load" }, loadShort(p.load)));
      g.appendChild(svgEl("title", {}, about(p)));
      g.addEventListener("mouseenter", function () { readout.textContent = about(p); });
      g.addEventListener("mouseleave", function () { readout.textContent = ""; });
      svg.appendChild(g);
    });
    b.appendChild(svg);
    var legend = el("div", { class: "legend" }, [
      el("span", { class: "legend-item" }, [el("span", { class: "line", style: "border-top-color:" + LIVE }), "non-dominated loads (labelled)"]),
      el("span", { class: "legend-item" }, [el("span", { class: "cap-ring", style: "border-color:" + PREDICTED }), "dominated"]),
      el("span", { class: "legend-item" }, [el("span", { class: "cap-ring", style: "border-color:" + FAILS }), "fails the SLO"])
    ]);
    if (guess.length) legend.appendChild(el("span", { class: "legend-item" }, [
      el("span", { class: "line dashed", style: "border-top-color:" + PREDICTED }), "predicted (virtual clock)"]));
    if (a.passing != null) legend.appendChild(el("span", { class: "legend-item" }, [
      el("span", { class: "cap-ring", style: "border-color:#137333" }), "the answer, " + loadShort(a.passing)]));
    b.appendChild(legend);
    b.appendChild(readout);
    if (svg.querySelectorAll("g.cap-pareto-point").length !== pts.length) problems.push("pareto: not every point drawn");
  }
  if (data.pareto && data.pareto.points.length) {
    app.appendChild(el("h2", { text: "Pareto: throughput against interactivity" }));
    app.appendChild(el("div", { class: "note", text: "Each probed load that completed a job, as jobs per hour per replica (throughput: its jobs/h over the " +
      data.pareto.replicas + " replica" + (data.pareto.replicas === 1 ? "" : "s") + " it was spread over) against jobs per hour per user (interactivity: 3600 s over the mean job time, how often one user waiting on each job gets one done). " +
      "Joined and filled: the non-dominated loads (no other load is as good on both axes and better on one), each labelled with its load; hollow: dominated. Hover a point for its figures." +
      (data.predicted_pareto ? " Grey squares, dashed: the prediction on the virtual clock (one server)." : "") }));
    var pbox = el("div", { class: "cap-wide" });
    app.appendChild(pbox);
    paretoChart(pbox, data.pareto, data.predicted_pareto);
  } else if (withAgents(curve).some(function (p) { return p.agents.jobs > 0; })) {
    problems.push("pareto: probes completed jobs but capacity.json has no Pareto point");
  }

  // ---- probes ------------------------------------------------------------------
  var VERDICT = { pass: ["pass", "good"], fail: ["FAIL", "bad"], too_small: ["too small", "warn"], unresolved: ["unresolved", "warn"],
    undecided: ["unresolved", "warn"] };
  function probeTable(c) {
    var t = el("table", { class: "cap-probes" });
    var head = ["probe", data.knob, "verdict", "reason", "requests", "failed", "goodput req", "goodput trees"]
      .concat(data.bounds.map(function (b) { return b.metric; }), ["agents", "jobs/h", "output tok/s"]);
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
        var text = r.failed ? "failed" : reading(b, r.s);
        if (!r.failed && r.interval) {
          text += " [" + reading(b, r.interval[0]) + ", " + (r.interval[1] == null ? "failed" : reading(b, r.interval[1])) + "]";
        }
        if (r.ci) text += " " + r.ci;
        cells.push(el("td", { class: p.verdict !== "unresolved" && !r.pass ? "bad" : "", text: text }));
      });
      var ag = p.agents;
      cells.push(el("td", { title: ag ? "peak " + ag.trees_peak + "; counting subagents " + num(ag.agents_mean, 1) + " (peak " + ag.agents_peak + ")" : "",
        text: ag ? num(ag.trees_mean, 1) : DASH }));
      cells.push(el("td", { title: ag && ag.good_jobs_per_hour != null ? num(ag.good_jobs_per_hour, 0) + " jobs/h within the job SLOs" : "",
        text: ag ? num(ag.jobs_per_hour, ag.jobs_per_hour != null && ag.jobs_per_hour < 10 ? 1 : 0) : DASH }));
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
