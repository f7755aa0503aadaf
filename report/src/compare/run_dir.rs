//! Reading one run directory for `compare`: the per-request values of
//! `records.jsonl` (sorted, integer nanoseconds) and the figures only
//! `summary.json` has (job time, throughput, cache hits, skipped turns).
//! Owns which record counts where: warmups nowhere; server latencies
//! (TTFT, ITL, TPOT, E2E) over `ok` records only; lateness and queue wait
//! over every record that has them; counts over every record. A record is
//! read by the one reader (`arbor_runs::record_line`), which needs only its
//! `status`. Every fault names the file (and the line) and is an input
//! error (exit 2).

use std::path::Path;

use arbor_engine::stats::nearest_rank;
use serde_json::Value;

use super::metric::{Latency, Metric, Stat};
use arbor_error::Error;
use arbor_runs::record::{secs_ns as ns, Status};
use arbor_runs::record_line;
use arbor_runs::records_file::RECORDS_FILE;

/// Requests by outcome, from the records (warmups left out).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counts {
    pub dispatched: u64,
    pub ok: u64,
    pub failed: u64,
    pub cancelled: u64,
}

/// What `summary.json` adds: figures the records alone cannot give.
#[derive(Debug, Clone, PartialEq)]
struct SummaryFigures {
    /// Job time mean, p50, p90, p99 in ms (`None` without complete plays).
    job_time: [Option<f64>; 4],
    requests_per_s: f64,
    input_tokens_per_s: f64,
    output_tokens_per_s: f64,
    /// In percent; `None` when the server reported no cached tokens.
    cache_hit_ratio: Option<f64>,
    skipped: u64,
}

/// Per-request values of the records, sorted, in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq)]
struct Samples {
    ttft: Vec<u64>,
    itl: Vec<u64>,
    tpot: Vec<u64>,
    e2e: Vec<u64>,
    lateness: Vec<u64>,
    queue_wait: Vec<u64>,
}

impl Samples {
    /// Job time is per play, not per record: `None`.
    fn get(&self, latency: Latency) -> Option<&[u64]> {
        Some(match latency {
            Latency::Ttft => &self.ttft,
            Latency::Itl => &self.itl,
            Latency::Tpot => &self.tpot,
            Latency::E2e => &self.e2e,
            Latency::Lateness => &self.lateness,
            Latency::QueueWait => &self.queue_wait,
            Latency::JobTime => return None,
        })
    }

    fn sort(&mut self) {
        for values in [
            &mut self.ttft,
            &mut self.itl,
            &mut self.tpot,
            &mut self.e2e,
            &mut self.lateness,
            &mut self.queue_wait,
        ] {
            values.sort_unstable();
        }
    }
}

/// One run, as compare sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDir {
    /// The directory as given on the command line.
    pub name: String,
    samples: Samples,
    pub counts: Counts,
    summary: SummaryFigures,
}

impl RunDir {
    /// Reads `dir/records.jsonl` and `dir/summary.json`.
    pub fn read(dir: &Path) -> Result<RunDir, Error> {
        let shown = dir.display();
        if !dir.is_dir() {
            return Err(Error::input(format!(
                "{shown}: not a run directory (expected a directory written by `arbor run`, with records.jsonl and summary.json)"
            )));
        }
        let (samples, counts) = read_records(&dir.join(RECORDS_FILE))?;
        let summary = read_summary(&dir.join("summary.json"))?;
        Ok(RunDir {
            name: shown.to_string(),
            samples,
            counts,
            summary,
        })
    }

    /// The sorted nanoseconds of a latency, when the records hold them
    /// (job time comes from the summary: `None`).
    pub fn sorted(&self, latency: Latency) -> Option<&[u64]> {
        self.samples.get(latency)
    }

    /// A metric's value in its unit; `None` when the run has none (no
    /// successful request, no cache report, no complete play).
    pub fn value(&self, metric: Metric) -> Option<f64> {
        let count = |n: u64| Some(n as f64);
        let c = &self.counts;
        let s = &self.summary;
        match metric {
            Metric::Latency(latency, stat) => match self.sorted(latency) {
                Some(sorted) => stat_ms(sorted, stat),
                None => s.job_time[Stat::ALL.iter().position(|&x| x == stat)?],
            },
            Metric::RequestsPerS => Some(s.requests_per_s),
            Metric::InputTokensPerS => Some(s.input_tokens_per_s),
            Metric::OutputTokensPerS => Some(s.output_tokens_per_s),
            Metric::Errors => count(c.failed),
            Metric::ErrorRate => {
                (c.dispatched > 0).then(|| c.failed as f64 / c.dispatched as f64 * 100.0)
            }
            Metric::CacheHitRatio => s.cache_hit_ratio,
            Metric::Dispatched => count(c.dispatched),
            Metric::Ok => count(c.ok),
            Metric::Cancelled => count(c.cancelled),
            Metric::Skipped => count(s.skipped),
        }
    }
}

/// The mean or a nearest-rank percentile of sorted nanoseconds, in ms.
fn stat_ms(sorted: &[u64], stat: Stat) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    Some(match stat.quantile() {
        Some(q) => nearest_rank(sorted, q) as f64 / 1e6,
        None => {
            let sum: u128 = sorted.iter().map(|&v| u128::from(v)).sum();
            sum as f64 / sorted.len() as f64 / 1e6
        }
    })
}

fn read_records(path: &Path) -> Result<(Samples, Counts), Error> {
    let mut samples = Samples::default();
    let mut counts = Counts::default();
    let mut itl = Vec::new();
    record_line::read(path, |r, _| {
        if r.is_warmup() {
            return Ok(());
        }
        counts.dispatched += 1;
        samples.lateness.extend(r.lateness_s.map(ns));
        samples.queue_wait.extend(r.queue_wait_s.map(ns));
        match r.status {
            Status::Ok => counts.ok += 1,
            Status::Cancelled => {
                counts.cancelled += 1;
                return Ok(());
            }
            Status::Error => {
                counts.failed += 1;
                return Ok(());
            }
        }
        samples.ttft.extend(r.ttft_s.map(ns));
        r.itl_s.read_into(&mut itl)?;
        samples.itl.extend(itl.iter().map(|&v| ns(v)));
        samples.tpot.extend(r.tpot_s.map(ns));
        samples.e2e.extend(r.e2e_s.map(ns));
        Ok(())
    })?;
    samples.sort();
    Ok((samples, counts))
}

fn read_summary(path: &Path) -> Result<SummaryFigures, Error> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::input(format!(
            "{shown}: cannot read ({e}); expected the summary.json `arbor run` writes"
        ))
    })?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| Error::input(format!("{shown}: not JSON: {e}")))?;
    let number = |pointer: &str| -> Result<Option<f64>, Error> {
        match json.pointer(pointer) {
            Some(Value::Null) => Ok(None),
            Some(v) => v.as_f64().map(Some).ok_or_else(|| missing(&shown, pointer)),
            None => Err(missing(&shown, pointer)),
        }
    };
    let required = |pointer: &str| number(pointer)?.ok_or_else(|| missing(&shown, pointer));
    let complete = required("/latency/job_time/count")? > 0.0;
    let mut job_time = [None; 4];
    for (slot, stat) in job_time.iter_mut().zip(Stat::ALL) {
        let seconds = required(&format!("/latency/job_time/{}_s", stat.name()))?;
        *slot = complete.then_some(seconds * 1e3);
    }
    Ok(SummaryFigures {
        job_time,
        requests_per_s: required("/throughput/requests_per_s")?,
        input_tokens_per_s: required("/throughput/input_tokens_per_s")?,
        output_tokens_per_s: required("/throughput/output_tokens_per_s")?,
        cache_hit_ratio: number("/cache/hit_ratio")?.map(|r| r * 100.0),
        skipped: required("/counts/skipped")? as u64,
    })
}

fn missing(file: &impl std::fmt::Display, pointer: &str) -> Error {
    let key = pointer.trim_start_matches('/').replace('/', ".");
    Error::input(format!(
        "{file}: expected a number at `{key}` (a summary.json written by `arbor run`)"
    ))
}
