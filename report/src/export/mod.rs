//! `arbor export RUN_DIR`: a run directory in other tools' formats.
//!
//! - `--perfetto FILE` ([`perfetto`]): the Chrome trace-event JSON that the
//!   Perfetto UI and chrome://tracing open: plays as processes, agents as
//!   threads, turns as slices with their phases, spawns and joins as flows
//!   (from `trees.jsonl`; a run directory without it is exported without
//!   flows, with a note), requests in flight as a counter.
//! - `--csv FILE` ([`csv`]): one flat row per request.
//! - `--aiperf DIR` ([`aiperf`]): AIPerf 0.13's `profile_export_aiperf.json`
//!   and `profile_export.jsonl`, from `summary.json` and the records (a
//!   read of its own); of a `--repeat` directory, also AIPerf's
//!   `profile_export_aiperf_aggregate.json`, each run under `DIR/run-k/`.
//!
//! [`export`] writes what [`ExportOptions`] asks for and returns the lines
//! that say what was written; the notes along the way (a run directory
//! without `trees.jsonl`, records with no usable time) go to the caller's
//! `note` as they arise, so a front end says them in order.
//!
//! A file whose name ends in `.gz` is gzipped ([`output`]). Reads
//! `records.jsonl` once ([`records`]), writing each CSV row as its line is
//! read; the trace, written in time order, keeps the records (not their
//! events) until the last one is read, at most `perfetto::MAX_TURNS` of
//! them: a longer run's trace is its first stretch of time, whole
//! (`perfetto::Window`), and a note says where it stops. Reads `trees.jsonl`
//! ([`arbor_runs::shape`]) for the trace; writes only the files it is asked
//! for. A missing directory or file, or a bad line, is an input error
//! (exit 2) naming the file and line, and leaves no output file behind; a
//! file that cannot be written exits 1.

mod aiperf;
mod csv;
mod output;
mod perfetto;
mod records;

use std::io;
use std::path::{Path, PathBuf};

use arbor_runs::shape;

use arbor_error::Error;
use output::{Output, Staged};

/// What `arbor export` writes, of which run directory.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// A run directory, or a `--repeat` directory (for `aiperf`).
    pub run_dir: PathBuf,
    /// The Chrome trace-event file (gzipped when its name ends in `.gz`).
    pub perfetto: Option<PathBuf>,
    /// One CSV row per request (gzipped when its name ends in `.gz`).
    pub csv: Option<PathBuf>,
    /// The directory of AIPerf's result files (created if missing).
    pub aiperf: Option<PathBuf>,
}

/// `arbor export`: writes every file `options` asks for; the lines that
/// say what was written, in order. `note` hears each note as it arises
/// (`note: ...`, said before the lines).
pub fn export(options: &ExportOptions, note: &mut dyn FnMut(&str)) -> Result<Vec<String>, Error> {
    let repeat = arbor_runs::aggregate::is_repeat_dir(&options.run_dir);
    if !repeat || options.perfetto.is_some() || options.csv.is_some() {
        records::check_dir(&options.run_dir)?;
    }
    // Every file is staged under a temporary name and named only once all
    // are written: a failure at the last leaves none behind.
    let mut staged = Vec::new();
    let mut report = Vec::new();
    if options.perfetto.is_some() || options.csv.is_some() {
        report = trace_and_rows(options, &mut staged, note)?;
    }
    if let Some(dir) = &options.aiperf {
        if repeat {
            report.extend(aiperf::write_repeat(&options.run_dir, dir, &mut staged)?);
        } else {
            report.push(aiperf::write(&options.run_dir, dir, &mut staged)?);
        }
    }
    output::commit_all(staged)?;
    Ok(report)
}

/// `--perfetto` and `--csv`: one read of the records; the report's lines.
fn trace_and_rows(
    options: &ExportOptions,
    staged: &mut Vec<Staged>,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<String>, Error> {
    let mut csv_out = options.csv.as_deref().map(Output::create).transpose()?;
    let report = trace_and_csv(options, csv_out.as_mut(), staged, note)?;
    if let Some(out) = csv_out {
        staged.push(out.finish()?);
    }
    Ok(report)
}

/// Reads the records once, writing the CSV rows as they come, then the
/// trace; the report's lines.
fn trace_and_csv(
    options: &ExportOptions,
    mut csv_out: Option<&mut Output>,
    staged: &mut Vec<Staged>,
    note: &mut dyn FnMut(&str),
) -> Result<Vec<String>, Error> {
    if let Some(out) = csv_out.as_deref_mut() {
        csv::write_header(out.writer()).map_err(|e| out.fail(e))?;
    }
    // The trace holds the run's first stretch of time (a window of at
    // most perfetto::MAX_TURNS records); the CSV holds none.
    let mut window = options
        .perfetto
        .as_ref()
        .map(|_| perfetto::Window::default());
    let mut rows = 0usize;
    let mut write_error: Option<io::Error> = None;
    let read = records::for_each(&options.run_dir, |record| {
        if let Some(out) = csv_out.as_deref_mut() {
            csv::write_row(out.writer(), &record).map_err(|e| {
                let why = e.to_string();
                write_error = Some(e);
                why
            })?;
        }
        rows += 1;
        if let Some(w) = window.as_mut() {
            w.add(record);
        }
        Ok(())
    });
    if let (Some(e), Some(out)) = (write_error, csv_out.as_deref()) {
        return Err(out.fail(e));
    }
    read?;
    let mut report = Vec::new();
    if let (Some(path), Some(window)) = (&options.perfetto, window) {
        report.push(trace(
            &options.run_dir,
            path,
            window.finish(),
            staged,
            note,
        )?);
    }
    if let Some(out) = csv_out {
        report.push(format!(
            "wrote {}: {rows} rows, one per request",
            out.path().display()
        ));
    }
    Ok(report)
}

/// Writes the trace of the records `kept` to `path`; the report's line.
fn trace(
    dir: &Path,
    path: &Path,
    kept: perfetto::Kept,
    staged: &mut Vec<Staged>,
    note: &mut dyn FnMut(&str),
) -> Result<String, Error> {
    let shapes = shape::read(dir)?;
    if shapes.is_none() {
        note(&format!(
            "note: {} has no {} (written by arbor run since it draws spawns and joins): \
             the trace has no spawn or join flows",
            dir.display(),
            shape::TREES_FILE
        ));
    }
    let mut out = Output::create(path)?;
    let written = perfetto::write(out.writer(), &kept.records, shapes.as_deref(), kept.cut)
        .map_err(|e| out.fail(e))?;
    staged.push(out.finish()?);
    if kept.undrawn > 0 {
        note(&format!(
            "note: {} records have no usable time and are not drawn",
            kept.undrawn
        ));
    }
    if let Some(cut) = kept.cut {
        note(&format!(
            "note: the trace holds the run's first {:.3} s, every turn eligible before then \
             ({} of {} turns; a trace holds at most {}, which the Perfetto UI opens): \
             {} later turns are left out, and the in-flight counter stops at {:.3} s; \
             --csv and records.jsonl have every request",
            cut.0 as f64 / 1e9,
            written.turns,
            written.turns as u64 + kept.left_out,
            perfetto::MAX_TURNS,
            kept.left_out,
            cut.0 as f64 / 1e9,
        ));
    }
    Ok(format!(
        "wrote {}: {} turns in {} plays, {} spawn/join flows (open it at ui.perfetto.dev or chrome://tracing)",
        path.display(),
        written.turns,
        written.plays,
        written.flows
    ))
}
