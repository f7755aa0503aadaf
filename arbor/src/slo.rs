//! `arbor run --slo SPEC`: the finished run judged against latency targets
//! (the grammar and the judging are `arbor_capacity`'s, as for a capacity
//! probe), written to the run directory as `slo.json`, shown by the
//! console and the page, and turned into the run's exit when it misses.
//! Owns only the file and the words of a miss.

use std::path::Path;

use arbor_capacity::observed::Verdict;
use arbor_capacity::slo::Slo;
use arbor_error::{Error, Kind};
use arbor_runs::journal;
use serde::Serialize;

pub use arbor_runs::output::SLO_FILE;
/// The schema of `slo.json`.
pub const SLO_SCHEMA: &str = "arbor.slo/1";

/// `slo.json`: the targets as given and the run's verdict on them.
#[derive(Debug, Clone, Serialize)]
pub struct SloReport {
    pub schema_version: &'static str,
    /// `--slo` as given.
    pub spec: String,
    /// `goodput>=G` of the spec, when given.
    pub goodput: Option<f64>,
    /// The fewest successful requests the verdict needs.
    pub min_requests: u64,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// Parses `--slo`: a bad spec is bad input naming the flag.
pub fn parse(spec: &str) -> Result<Slo, Error> {
    Slo::parse(spec).map_err(|e| Error::input(format!("--slo {e}")))
}

/// Judges the run in `dir` against `slo` (parsed from `spec`) and writes
/// `dir/slo.json`.
pub fn judge(dir: &Path, spec: &str, slo: &Slo) -> Result<SloReport, Error> {
    let observed = arbor_capacity::run_dir::read(dir)?;
    let min_requests = arbor_capacity::DEFAULT_MIN_REQUESTS;
    let report = SloReport {
        schema_version: SLO_SCHEMA,
        spec: spec.to_string(),
        goodput: slo.goodput,
        min_requests,
        verdict: observed.judge(slo, min_requests),
    };
    let bytes = serde_json::to_vec_pretty(&report)
        .map_err(|e| Error::other(format!("cannot encode {SLO_FILE}: {e}")))?;
    journal::write_atomic(dir, SLO_FILE, &bytes)?;
    Ok(report)
}

/// How a judged run ends: `None` when it met its targets; else the error
/// that says which it missed (exit 6), or that too few requests succeeded
/// to decide (exit 5).
pub fn miss(report: &SloReport, dir: &Path) -> Option<Error> {
    let v = &report.verdict;
    if v.too_small {
        return Some(Error {
            kind: Kind::TooFewMeasured,
            message: format!(
                "--slo {}: undecided: {} requests succeeded, fewer than the {} a verdict needs \
                 (lengthen the run); the verdict is in {}",
                report.spec,
                v.measured,
                report.min_requests,
                dir.join(SLO_FILE).display()
            ),
        });
    }
    if v.pass {
        return None;
    }
    let missed: Vec<&str> = v
        .bounds
        .iter()
        .filter(|b| !b.pass)
        .map(|b| b.metric.as_str())
        .collect();
    let goodput =
        |name: &str, g: Option<f64>| g.map(|g| format!("{name} goodput {:.1} %", g * 100.0));
    let shares: Vec<String> = [
        goodput("request", v.request_goodput),
        goodput("tree", v.job_goodput),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some(Error {
        kind: Kind::SloMissed,
        message: format!(
            "--slo {}: missed{}{}; the verdict is in {}",
            report.spec,
            if missed.is_empty() {
                String::new()
            } else {
                format!(" {}", missed.join(", "))
            },
            if shares.is_empty() {
                String::new()
            } else {
                format!(" ({})", shares.join(", "))
            },
            dir.join(SLO_FILE).display()
        ),
    })
}
