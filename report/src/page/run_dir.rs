//! One run directory read into the page's data: `summary.json` as written
//! (a run's checked by [`Summary::parse`]),
//! `records.jsonl` streamed once through [`arbor_runs::record_line`] (a
//! record's strings are borrowed from its line) into the CDFs, the time
//! series and the swim lanes, the plan's in-flight series
//! (`planned.json`) when the run wrote one, and the server's gauges
//! (`metrics.jsonl`) when it scraped them.

use std::collections::BTreeMap;
use std::path::Path;

use hdrhistogram::Histogram;
use serde_json::Value;

use arbor_error::Error;
use arbor_runs::record::secs_ns;
use arbor_runs::record_line;
use arbor_runs::records_file::RECORDS_FILE;

use super::cdf::Cdf;
use super::data::{RunPage, Source};
use super::lanes::LaneBuilder;
use super::planned;
use super::record::{check, for_each_itl, Status};
use super::series;
use super::server;

pub use arbor_runs::output::SUMMARY_FILE;
use arbor_runs::output::{Summary, SUMMARY_SCHEMA};

/// Values of the distributions with exact CDFs, in nanoseconds.
#[derive(Default)]
struct Values {
    ttft: Vec<u64>,
    tpot: Vec<u64>,
    e2e: Vec<u64>,
    lateness: Vec<u64>,
    queue_wait: Vec<u64>,
}

/// Reads `dir` (a directory `arbor run` wrote). A missing directory or
/// file, or a line that is not a record, is bad input (exit 2).
pub fn read(dir: &Path) -> Result<RunPage, Error> {
    if !dir.is_dir() {
        return Err(Error::input(format!(
            "{}: no such run directory",
            dir.display()
        )));
    }
    let summary_path = dir.join(SUMMARY_FILE);
    let summary_text = arbor_runs::file_cap::read_to_string(&summary_path).map_err(|e| {
        Error::input(format!(
            "{}: not a finished run directory: cannot read {SUMMARY_FILE} ({e})",
            dir.display()
        ))
    })?;
    let summary: Value = serde_json::from_str(&summary_text)
        .map_err(|e| Error::input(format!("{}: {e}", summary_path.display())))?;
    if !summary.is_object() {
        return Err(Error::input(format!(
            "{}: expected a JSON object",
            summary_path.display()
        )));
    }
    // The page draws the document as written: a run's summary, or the
    // summary-shaped file of a virtual capacity probe. A run's is checked
    // by the one typed reader, so a damaged one is refused, not drawn.
    if summary["schema_version"] == SUMMARY_SCHEMA {
        Summary::parse(summary_text.as_bytes(), &summary_path)?;
    }

    let mut values = Values::default();
    let mut itl = Histogram::<u64>::new(3)
        .map_err(|e| Error::other(format!("cannot make a histogram: {e}")))?;
    let mut lanes = LaneBuilder::default();
    record_line::read(&dir.join(RECORDS_FILE), |record, line| {
        check(record)?;
        let turn = lanes.add(record);
        if turn.status == Status::Warmup {
            return Ok(());
        }
        if turn.status == Status::Ok {
            let ns = |v: Option<f64>| v.map(secs_ns);
            values.ttft.extend(ns(record.ttft_s));
            values.tpot.extend(ns(record.tpot_s));
            values.e2e.extend(ns(record.e2e_s));
            for_each_itl(line, |gap| {
                // Values beyond the histogram's reach (none in practice)
                // are left out rather than failing the report.
                let _ = itl.record(secs_ns(gap));
            });
        }
        values.lateness.extend(record.lateness_s.map(secs_ns));
        values.queue_wait.extend(record.queue_wait_s.map(secs_ns));
        Ok(())
    })?;

    let series = series::build(lanes.turns(), &lanes.classes());
    let records = lanes.turns().count() as u64;
    let lanes = lanes.finish();
    let edges = arbor_runs::shape::read(dir)?.map(|trees| lanes.arrows(&trees));
    let mut cdf = BTreeMap::new();
    cdf.insert("ttft", Cdf::of_values(values.ttft));
    cdf.insert("itl", Cdf::of_histogram(&itl));
    cdf.insert("tpot", Cdf::of_values(values.tpot));
    cdf.insert("e2e", Cdf::of_values(values.e2e));
    cdf.insert("lateness", Cdf::of_values(values.lateness));
    cdf.insert("queue_wait", Cdf::of_values(values.queue_wait));
    Ok(RunPage {
        source: Source::Run,
        name: dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        path: dir.display().to_string(),
        summary,
        records,
        cdf,
        series,
        lanes,
        edges,
        planned: planned::read(dir)?,
        server: server::read(dir)?,
    })
}
