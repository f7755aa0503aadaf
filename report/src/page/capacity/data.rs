//! What the capacity page draws, as the JSON its script reads: the answer
//! in words, the SLO bounds with their limits, and each curve (the
//! search's own, and a live search's prediction when its directory has
//! one) as points by load, each with its verdict, reason, goodput,
//! every bound's reading and its figures in agents and jobs per hour;
//! the answer in agents and the Pareto. A summary, never a probe's records: the page
//! of a 20-load sweep is a few kB of data. Owns the shape of that JSON;
//! the wording is [`super::words`]', the reading [`super::file`]'s.

use std::path::Path;

use serde::Serialize;

use arbor_error::Error;

use super::file::{self, Agents, Answer, Cause, Knob, Mode, Pareto, Probe, Reading, Search};
use super::words::{self, Verdict};

/// Everything the page shows.
#[derive(Debug, Serialize)]
pub struct CapacityPage {
    pub arbor_version: &'static str,
    /// The capacity directory, as given.
    pub path: String,
    pub mode: Mode,
    pub complete: bool,
    pub knob: Knob,
    /// The x axis: `sessions`, `arrival rate (trees/s)`.
    pub axis: &'static str,
    pub slo: String,
    pub goodput_threshold: Option<f64>,
    pub service: String,
    pub range: [f64; 2],
    pub step: f64,
    /// The answer sentence (or why there is none).
    pub headline: String,
    /// A live search's prediction in words.
    pub predicted_line: Option<String>,
    /// The loads that pass past the first failing one, in words.
    pub above_knee_line: Option<String>,
    /// Why the search stopped, in the probe's own words.
    pub stopped_line: Option<String>,
    /// An answer that is only a bound (`answer.kind`), in words: the page
    /// says it loudly; `None` for a point.
    pub bound_line: Option<String>,
    /// The confirmation run at the answer, in words.
    pub confirmation_line: Option<String>,
    pub answer: Answer,
    /// Every bound of the SLOs, in the order given.
    pub bounds: Vec<BoundLimit>,
    /// The search's own points, by load.
    pub curve: Curve,
    /// The virtual search a live one started from (`predicted/`).
    pub predicted: Option<Curve>,
    /// The answer in agents and jobs per hour, in words (`None`: no load
    /// passed, or a file from before it).
    pub agents_line: Option<String>,
    /// Jobs/h per replica against jobs/h per user over the search's own
    /// probes.
    pub pareto: Option<Pareto>,
    /// The same over a live search's prediction (`predicted/`).
    pub predicted_pareto: Option<Pareto>,
}

/// One SLO bound.
#[derive(Debug, Serialize)]
pub struct BoundLimit {
    /// `ttft_p99`.
    pub metric: String,
    pub limit_s: f64,
}

/// One search's points.
#[derive(Debug, Serialize)]
pub struct Curve {
    /// `live`, `virtual`, `predicted`.
    pub name: &'static str,
    pub answer: Answer,
    /// By load (then by probe); a probe whose run failed has no reading.
    pub points: Vec<Point>,
}

/// One probe.
#[derive(Debug, Serialize)]
pub struct Point {
    pub probe: usize,
    pub load: f64,
    /// Its directory, relative to the capacity directory.
    pub dir: String,
    pub verdict: Verdict,
    pub reason: String,
    pub request_goodput: Option<f64>,
    pub job_goodput: Option<f64>,
    pub requests: u64,
    pub failed: u64,
    /// One per [`CapacityPage::bounds`], in that order.
    pub readings: Vec<PointReading>,
    /// From the probe's `summary.json`, when it wrote one.
    pub output_tokens_per_s: Option<f64>,
    /// The point in agents and jobs per hour (`None`: its run failed, or
    /// a file from before them).
    pub agents: Option<Agents>,
}

/// A bound's reading at a point.
#[derive(Debug, Serialize)]
pub struct PointReading {
    /// Seconds; `None` when the percentile falls on a failed request
    /// (`failed`) or there was nothing to measure.
    pub s: Option<f64>,
    pub failed: bool,
    pub pass: bool,
    /// The reading's interval, seconds: `[lo, hi]`, `hi` null when it
    /// falls on a failed request; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<(f64, Option<f64>)>,
    /// The interval's level (0.9), and whether the fit's share is in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval_level: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fit_known: Option<bool>,
    /// A live probe's 95 % interval of the percentile, in words
    /// (`[301.2 ms, 402.0 ms]`).
    pub ci: Option<String>,
}

/// The page of the capacity directory `dir`: its `capacity.json`, its
/// probes' summaries, and `predicted/capacity.json` when there is one.
pub fn read(dir: &Path) -> Result<CapacityPage, Error> {
    let search = file::read(&dir.join(file::CAPACITY_FILE))?;
    let predicted_dir = dir.join("predicted");
    let predicted = if predicted_dir.join(file::CAPACITY_FILE).is_file() {
        Some(file::read(&predicted_dir.join(file::CAPACITY_FILE))?)
    } else {
        None
    };
    let bounds = bounds_of(&search, predicted.as_ref());
    let own = curve(
        match search.mode {
            Mode::Live => "live",
            Mode::Virtual => "virtual",
        },
        &search,
        dir,
        &bounds,
    )?;
    let predicted_curve = predicted
        .as_ref()
        .map(|p| curve("predicted", p, &predicted_dir, &bounds))
        .transpose()?;
    Ok(CapacityPage {
        arbor_version: env!("CARGO_PKG_VERSION"),
        path: dir.display().to_string(),
        mode: search.mode,
        complete: search.complete,
        knob: search.knob,
        axis: match search.knob {
            Knob::Sessions => "sessions",
            Knob::Rate => "arrival rate (trees/s)",
        },
        slo: search.slo.clone(),
        goodput_threshold: search.goodput_threshold,
        service: search.service.clone(),
        range: search.range,
        step: search.step,
        headline: words::headline(&search),
        predicted_line: words::predicted(&search),
        above_knee_line: words::above_knee(&search),
        stopped_line: search.stopped.as_ref().map(|s| {
            format!(
                "Probe {} ({}): {}",
                s.probe,
                words::load(search.knob, s.load),
                s.message
            )
        }),
        bound_line: words::bound(&search),
        confirmation_line: words::confirmation(&search),
        answer: search.answer,
        bounds,
        curve: own,
        predicted: predicted_curve,
        agents_line: words::in_agents(&search),
        pareto: search.pareto.clone(),
        predicted_pareto: predicted.as_ref().and_then(|p| p.pareto.clone()),
    })
}

/// Every bound of the SLOs, as the probes judged them (in the order
/// given), with those only the prediction has after them.
fn bounds_of(search: &Search, predicted: Option<&Search>) -> Vec<BoundLimit> {
    let mut bounds: Vec<BoundLimit> = Vec::new();
    let probes = search
        .probes
        .iter()
        .chain(predicted.into_iter().flat_map(|p| p.probes.iter()));
    for probe in probes {
        for b in &probe.bounds {
            if !bounds.iter().any(|known| known.metric == b.metric) {
                bounds.push(BoundLimit {
                    metric: b.metric.clone(),
                    limit_s: b.limit_ns as f64 / 1e9,
                });
            }
        }
    }
    bounds
}

/// The points of `search` (its probe directories under `dir`), by load;
/// a probe whose run failed and stopped the search is a point with no
/// reading.
fn curve(
    name: &'static str,
    search: &Search,
    dir: &Path,
    bounds: &[BoundLimit],
) -> Result<Curve, Error> {
    let mut points = search
        .probes
        .iter()
        .map(|p| point(p, search.goodput_threshold, dir, bounds))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(stop) = search.stopped.as_ref().filter(|s| s.cause == Cause::Failed) {
        points.push(Point {
            probe: stop.probe,
            load: stop.load,
            dir: String::new(),
            verdict: Verdict::Unresolved,
            reason: words::unresolved(stop),
            request_goodput: None,
            job_goodput: None,
            requests: 0,
            failed: 0,
            readings: bounds
                .iter()
                .map(|_| PointReading {
                    s: None,
                    failed: false,
                    pass: false,
                    interval: None,
                    interval_level: None,
                    fit_known: None,
                    ci: None,
                })
                .collect(),
            output_tokens_per_s: None,
            agents: None,
        });
    }
    points.sort_by(|a, b| a.load.total_cmp(&b.load).then(a.probe.cmp(&b.probe)));
    Ok(Curve {
        name,
        answer: search.answer,
        points,
    })
}

fn point(
    probe: &Probe,
    goodput_threshold: Option<f64>,
    dir: &Path,
    bounds: &[BoundLimit],
) -> Result<Point, Error> {
    let (verdict, reason) = words::verdict(probe, goodput_threshold);
    let readings = bounds
        .iter()
        .map(|limit| {
            let judged = probe.bounds.iter().find(|b| b.metric == limit.metric);
            PointReading {
                s: judged.and_then(|b| match b.reading {
                    Reading::Value(ns) => Some(ns as f64 / 1e9),
                    Reading::Failed | Reading::Missing => None,
                }),
                failed: judged.is_some_and(|b| b.reading == Reading::Failed),
                pass: judged.is_some_and(|b| b.pass),
                interval: judged
                    .and_then(|b| b.interval)
                    .map(|i| (i.lo_ns as f64 / 1e9, i.hi_ns.map(|hi| hi as f64 / 1e9))),
                interval_level: judged.and_then(|b| b.interval).map(|i| i.level),
                fit_known: judged.and_then(|b| b.interval).map(|i| i.fit_known),
                ci: judged
                    .and_then(|b| b.confidence.as_ref())
                    .map(words::interval),
            }
        })
        .collect();
    let output_tokens_per_s = if probe.dir.is_empty() {
        None
    } else {
        file::output_tokens_per_s(&dir.join(&probe.dir))?
    };
    Ok(Point {
        probe: probe.probe,
        load: probe.load,
        dir: probe.dir.clone(),
        verdict,
        reason,
        request_goodput: probe.request_goodput,
        job_goodput: probe.job_goodput,
        requests: probe.requests,
        failed: probe.failed,
        readings,
        output_tokens_per_s,
        agents: probe.agents.clone(),
    })
}
