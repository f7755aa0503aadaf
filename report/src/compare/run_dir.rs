//! Reading one run directory for `compare`: the per-request values of
//! `records.jsonl` (sorted, integer nanoseconds) and the figures only
//! `summary.json` has (job time, throughput, cache hits, skipped turns),
//! read through the typed [`Summary`].
//! Owns which record counts where: warmups nowhere; server latencies
//! (TTFT, ITL, TPOT, E2E) over `ok` records only; lateness and queue wait
//! over every record that has them; counts over every record. A record is
//! read by the one reader (`arbor_runs::record_line`), which needs only its
//! `status`. Every fault names the file (and the line) and is an input
//! error (exit 2).

use std::path::Path;

use super::metric::{Latency, Metric, Stat};
use arbor_engine::stats::nearest_rank;
use arbor_error::Error;
use arbor_runs::config::RunConfig;
use arbor_runs::metric::Rate;
use arbor_runs::output::Summary;
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
#[derive(Debug, Clone)]
pub struct RunDir {
    /// The directory as given on the command line.
    pub name: String,
    samples: Samples,
    pub counts: Counts,
    /// For the figures the records alone cannot give: job time,
    /// throughput, cache hits, skipped turns.
    summary: Summary,
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
        let summary = Summary::read(dir)?;
        Ok(RunDir {
            name: shown.to_string(),
            samples,
            counts,
            summary,
        })
    }

    /// What produced the run (`summary.json`'s `config`).
    pub fn config(&self) -> &RunConfig {
        &self.summary.config
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
                None => latency.stat(s, stat).map(|seconds| seconds * 1e3),
            },
            Metric::RequestsPerS => Rate::Requests.of(s),
            Metric::InputTokensPerS => Rate::InputTokens.of(s),
            Metric::OutputTokensPerS => Rate::OutputTokens.of(s),
            Metric::Errors => count(c.failed),
            Metric::ErrorRate => {
                (c.dispatched > 0).then(|| c.failed as f64 / c.dispatched as f64 * 100.0)
            }
            Metric::CacheHitRatio => Rate::CacheHits.of(s).map(|r| r * 100.0),
            Metric::Dispatched => count(c.dispatched),
            Metric::Ok => count(c.ok),
            Metric::Cancelled => count(c.cancelled),
            Metric::Skipped => count(s.counts.skipped),
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
