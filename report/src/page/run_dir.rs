//! One run directory read into the page's data: `summary.json` as written
//! (a run's checked by [`Summary::parse`]),
//! `records.jsonl` streamed once through [`arbor_runs::record_line`] (a
//! record's strings are borrowed from its line) into the CDFs, the time
//! series and the swim lanes, the plan's in-flight series
//! (`planned.json`) when the run wrote one, and the server's gauges
//! (`metrics.jsonl`) when it scraped them.
//!
//! Memory is bounded whatever the number of records: the CDFs keep the
//! summary's precision rule (`arbor_runs::latency`), the series their
//! time cells, the lanes their first plays; no record is kept.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use arbor_error::Error;
use arbor_runs::latency::Values as LatencyValues;
use arbor_runs::record::secs_ns;
use arbor_runs::record_line;
use arbor_runs::records_file::RECORDS_FILE;

use super::cdf::Cdf;
use super::data::{RunPage, Source};
use super::lanes::LaneBuilder;
use super::planned;
use super::record::{check, for_each_itl, Status, Turn};
use super::series::SeriesBuilder;
use super::server;

pub use arbor_runs::output::SUMMARY_FILE;
use arbor_runs::output::{Summary, SLO_FILE, SUMMARY_SCHEMA};

/// Values of the distributions drawn as CDFs, in nanoseconds.
struct Values {
    ttft: LatencyValues,
    itl: LatencyValues,
    tpot: LatencyValues,
    e2e: LatencyValues,
    lateness: LatencyValues,
    queue_wait: LatencyValues,
}

/// `slo.json` when the run was judged (`arbor run --slo`), as written: a
/// file that is not a JSON object is bad input naming it.
fn read_slo(dir: &Path) -> Result<Option<Value>, Error> {
    let path = dir.join(SLO_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let text = arbor_runs::file_cap::read_to_string(&path)
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(v) if v.is_object() => Ok(Some(v)),
        Ok(_) => Err(Error::input(format!(
            "{}: expected a JSON object",
            path.display()
        ))),
        Err(e) => Err(Error::input(format!("{}: {e}", path.display()))),
    }
}

/// Reads `dir` (a directory `arbor run` wrote), its swim lanes taking
/// plays up to `lane_turns` turns. A missing directory or
/// file, or a line that is not a record, is bad input (exit 2).
pub fn read(dir: &Path, lane_turns: usize) -> Result<RunPage, Error> {
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

    let mut values = Values {
        ttft: LatencyValues::default(),
        // As the summary's: millions of them, folded from the first.
        itl: LatencyValues::folded(),
        tpot: LatencyValues::default(),
        e2e: LatencyValues::default(),
        lateness: LatencyValues::default(),
        queue_wait: LatencyValues::default(),
    };
    let mut series = SeriesBuilder::run();
    let mut lanes = LaneBuilder::with_budget(lane_turns);
    let mut records = 0u64;
    record_line::read(&dir.join(RECORDS_FILE), |record, line| {
        check(record)?;
        records += 1;
        let turn = Turn::of(record);
        if turn.status != Status::Warmup {
            let class = record.error.as_ref().map(|e| e.category.as_str());
            series.add(&turn, class);
            if turn.status == Status::Ok {
                let push = |v: &mut LatencyValues, s: Option<f64>| {
                    if let Some(s) = s {
                        v.push(secs_ns(s));
                    }
                };
                push(&mut values.ttft, record.ttft_s);
                push(&mut values.tpot, record.tpot_s);
                push(&mut values.e2e, record.e2e_s);
                for_each_itl(line, |gap| values.itl.push(secs_ns(gap)));
            }
            if let Some(s) = record.lateness_s {
                values.lateness.push(secs_ns(s));
            }
            if let Some(s) = record.queue_wait_s {
                values.queue_wait.push(secs_ns(s));
            }
        }
        lanes.add(record, turn);
        Ok(())
    })?;

    let series = series.finish();
    let lanes = lanes.finish();
    let edges = arbor_runs::shape::read(dir)?.map(|trees| lanes.arrows(&trees));
    let mut cdf = BTreeMap::new();
    cdf.insert("ttft", Cdf::of_latency(&mut values.ttft));
    cdf.insert("itl", Cdf::of_latency(&mut values.itl));
    cdf.insert("tpot", Cdf::of_latency(&mut values.tpot));
    cdf.insert("e2e", Cdf::of_latency(&mut values.e2e));
    cdf.insert("lateness", Cdf::of_latency(&mut values.lateness));
    cdf.insert("queue_wait", Cdf::of_latency(&mut values.queue_wait));
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
        slo: read_slo(dir)?,
    })
}
