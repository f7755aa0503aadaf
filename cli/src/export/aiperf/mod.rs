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

mod metric;
mod profile;
mod request;
mod run_summary;

use std::io::{self, Write};
use std::path::Path;

use super::output::Output;
use super::records;
use crate::failure::Failure;
use profile::{Measured, Profile};
use request::Request;
use run_summary::RunSummary;

/// The file names AIPerf's loaders look for.
pub const PROFILE_FILE: &str = "profile_export_aiperf.json";
pub const RECORDS_FILE: &str = "profile_export.jsonl";

/// Writes both files into `dir` (created if missing); the report's line.
pub fn write(run_dir: &Path, dir: &Path) -> Result<String, Failure> {
    records::check_dir(run_dir)?;
    let summary = RunSummary::read(run_dir)?;
    let epoch_ns = summary.epoch_unix_ns().unwrap_or(0);
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::other(format!("{}: cannot create: {e}", dir.display())))?;
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
        let failure = lines_out.fail(e);
        lines_out.discard();
        return Err(failure);
    }
    if let Err(failure) = read {
        lines_out.discard();
        return Err(failure);
    }
    let benchmark_id = run_dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let profile = Profile::of(benchmark_id, &summary, measured);
    let profile_path = dir.join(PROFILE_FILE);
    let written = Output::create(&profile_path).and_then(|mut out| {
        match serde_json::to_writer_pretty(out.writer(), &profile) {
            Ok(()) => out.finish(),
            Err(e) => {
                let failure = out.fail(io::Error::other(e));
                out.discard();
                Err(failure)
            }
        }
    });
    if let Err(failure) = written.and_then(|()| lines_out.finish()) {
        let _ = std::fs::remove_file(&profile_path);
        let _ = std::fs::remove_file(dir.join(RECORDS_FILE));
        return Err(failure);
    }
    Ok(format!(
        "wrote {}: {PROFILE_FILE} and {RECORDS_FILE} ({lines} requests) in AIPerf 0.13's schema",
        dir.display()
    ))
}

fn write_line(out: &mut dyn Write, line: &Request) -> io::Result<()> {
    serde_json::to_writer(&mut *out, line).map_err(io::Error::other)?;
    out.write_all(b"\n")
}
