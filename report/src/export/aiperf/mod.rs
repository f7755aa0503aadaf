//! `arbor export RUN_DIR --aiperf DIR`: a run as AIPerf 0.13's artifacts,
//! for `aiperf plot` and the leaderboard pipelines that read AIPerf's
//! results.
//!
//! Writes `DIR/profile_export_aiperf.json` ([`profile`]: the `metadata`
//! block, the metric blocks, the `arbor` extension) and
//! `DIR/profile_export.jsonl` ([`request`]: one line per record of
//! `records.jsonl`, warmups marked `benchmark_phase: "warmup"`). Reads
//! `summary.json` ([`run_summary`]) and `records.jsonl` once; block
//! statistics are [`metric`]'s. Must not touch the run directory. A
//! missing or bad input is exit 2 naming the file; a file that cannot be
//! written exits 1, and neither file is left behind.
//!
//! A `--repeat` directory ([`write_repeat`]) is exported as AIPerf writes
//! `--num-profile-runs`: `DIR/profile_export_aiperf_aggregate.json`
//! ([`aggregate`], from the aggregate re-resolved from the run
//! directories, fail-closed) and each run's two files under `DIR/run-k/`.

mod aggregate;
mod metric;
mod profile;
mod request;
mod run_summary;

use std::io::{self, Write};
use std::path::Path;

use super::output::{Output, Staged};
use super::records;
use aggregate::{AggregateProfile, AGGREGATE_FILE};
use arbor_error::Error;
use arbor_runs::aggregate::runs::RunState;
use arbor_runs::output::Summary;
use profile::{Measured, Profile};
use request::Request;

/// The file names AIPerf's loaders look for.
pub const PROFILE_FILE: &str = "profile_export_aiperf.json";
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// Writes both files into `dir` (created if missing); the report's line.
/// Both are staged (named when the whole export commits).
pub fn write(run_dir: &Path, dir: &Path, staged: &mut Vec<Staged>) -> Result<String, Error> {
    records::check_dir(run_dir)?;
    let summary = Summary::read(run_dir)?;
    let epoch_ns = run_summary::epoch_unix_ns(&summary).unwrap_or(0);
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", dir.display())))?;
    let mut lines_out = Output::create(&dir.join(RECORDS_FILE))?;
    let mut measured = Measured::default();
    let mut lines = 0usize;
    let mut write_error: Option<io::Error> = None;
    let read = records::for_each(run_dir, |record| {
        let line = Request::of(&record, epoch_ns);
        if !record.warmup {
            measured.add(&Request::metrics(&record));
        }
        lines += 1;
        write_line(lines_out.writer(), &line).map_err(|e| {
            let why = e.to_string();
            write_error = Some(e);
            why
        })
    });
    if let Some(e) = write_error {
        return Err(lines_out.fail(e));
    }
    read?;
    let benchmark_id = run_dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let profile = Profile::of(benchmark_id, &summary, measured)?;
    staged.push(write_pretty(&dir.join(PROFILE_FILE), &profile)?);
    staged.push(lines_out.finish()?);
    Ok(format!(
        "wrote {}: {PROFILE_FILE} and {RECORDS_FILE} ({lines} requests) in AIPerf 0.13's schema",
        dir.display()
    ))
}

/// Writes the aggregate of the `--repeat` directory `repeat_dir` into
/// `dir`, and each run that wrote a summary into `dir/run-k`; the
/// report's lines. Writes nothing into `repeat_dir`.
pub fn write_repeat(
    repeat_dir: &Path,
    dir: &Path,
    staged: &mut Vec<Staged>,
) -> Result<Vec<String>, Error> {
    let aggregate = arbor_runs::aggregate::resolve(repeat_dir)?;
    let mut report = Vec::new();
    for run in &aggregate.runs {
        if matches!(run.state, RunState::Failed | RunState::Missing) {
            report.push(format!(
                "note: {} has no summary.json: not exported",
                run.dir
            ));
            continue;
        }
        report.push(write(
            &repeat_dir.join(&run.dir),
            &dir.join(&run.dir),
            staged,
        )?);
    }
    let path = dir.join(AGGREGATE_FILE);
    let profile = AggregateProfile::of(&aggregate);
    staged.push(write_pretty(&path, &profile)?);
    report.push(format!(
        "wrote {}: {} metrics over {} of {} runs, submission_valid: {}",
        path.display(),
        profile.metrics.len(),
        aggregate.runs_complete,
        profile.metadata.num_profile_runs,
        aggregate.submission_valid
    ));
    Ok(report)
}

/// Writes `value` as pretty JSON to `path`, staged; nothing is left
/// behind on failure.
fn write_pretty<T: serde::Serialize>(path: &Path, value: &T) -> Result<Staged, Error> {
    let mut out = Output::create(path)?;
    serde_json::to_writer_pretty(out.writer(), value).map_err(|e| out.fail(io::Error::other(e)))?;
    out.finish()
}

fn write_line(out: &mut dyn Write, line: &Request) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line).map_err(io::Error::other)?;
    out.write_all(b"\n")
}
