//! `records.jsonl` read back (docs/run.md describes the line), for the
//! exports: every line, read by the one reader
//! ([`arbor_runs::record_line::RecordLine`]), becomes an owned [`Record`]
//! (the trace holds them all), its inter-token latencies summarised as they
//! are read ([`ItlSummary`]: the full list stays in the file), and
//! [`Record::fields`] flattens a record into named values in the line's
//! order, the one list both the CSV columns and the trace's slice args are
//! made of.
//!
//! Owns the exports' view of a record: which fields an export needs
//! ([`Record::of`]), and the defaults of the others a line may lack (an
//! older arbor's, a virtual probe's). The reading rules (line numbers,
//! blank and torn last lines) are [`arbor_runs::records_file`]'s.

use std::path::Path;

use arbor_engine::stats::nearest_rank;
use arbor_engine::time::{secs_to_nanos, Nanos};
use serde_json::Value;

use arbor_error::Error;
use arbor_runs::record::{secs_ns, TokenSource};
use arbor_runs::record_line::{self, need, RecordLine};
use arbor_runs::records_file::RECORDS_FILE;

/// One line of `records.jsonl`, owned.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Record {
    pub request: u64,
    pub tree: String,
    pub tree_index: u32,
    pub agent: String,
    pub turn: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    pub play: u32,
    pub warmup: bool,
    pub status: String,
    pub eligible_s: f64,
    pub dispatched_s: f64,
    pub sent_s: Option<f64>,
    pub headers_s: Option<f64>,
    pub first_byte_s: Option<f64>,
    pub first_content_s: Option<f64>,
    pub done_s: Option<f64>,
    pub queue_wait_s: f64,
    pub lateness_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub e2e_s: Option<f64>,
    pub tpot_s: Option<f64>,
    pub itl: ItlSummary,
    pub planned_input_tokens: u64,
    pub planned_output_tokens: u64,
    pub input_tokens: u64,
    pub input_tokens_source: Option<String>,
    pub output_tokens: u64,
    pub output_tokens_source: Option<String>,
    pub cached_tokens: Option<u64>,
    pub http_status: Option<u16>,
    pub attempts: u32,
    /// Absent (0) in records written before arbor counted resends.
    pub resends: u32,
    /// Tries again after a `--retry-on` refusal (absent: 0).
    pub retries: u32,
    pub error: Option<RecordError>,
    /// The model the server answered with, when not the one asked for.
    pub answered_model: Option<String>,
    /// The replica it was sent to, with several endpoints.
    pub replica: Option<u32>,
    /// The session-routing key it carried.
    pub session_key: Option<String>,
    /// The replica the server or router said served it.
    pub served_by: Option<String>,
    /// The plan's prefix reuse of it: best possible, predicted, and the
    /// gap since its agent's previous turn (docs/run.md, "Prefix reuse").
    pub reuse_best_tokens: Option<u64>,
    pub reuse_predicted_tokens: Option<u64>,
    pub reuse_gap_s: Option<f64>,
}

/// `error` of a failed request.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordError {
    pub category: String,
    pub message: String,
    pub http_status: Option<u16>,
    pub retry_after_s: Option<f64>,
}

/// A request's inter-token latencies in three figures.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ItlSummary {
    pub count: u64,
    /// `None` without gaps.
    pub mean_s: Option<f64>,
    /// Nearest-rank, as every percentile arbor prints.
    pub p99_s: Option<f64>,
    /// The first gap: first content to the next chunk (AIPerf's time to
    /// second token).
    pub first_s: Option<f64>,
}

impl ItlSummary {
    pub fn of(gaps: &[f64]) -> ItlSummary {
        if gaps.is_empty() {
            return ItlSummary::default();
        }
        let mut ns: Vec<Nanos> = gaps.iter().map(|&s| secs_ns(s)).collect();
        ns.sort_unstable();
        ItlSummary {
            count: gaps.len() as u64,
            mean_s: Some(gaps.iter().sum::<f64>() / gaps.len() as f64),
            p99_s: Some(nearest_rank(&ns, 0.99) as f64 / 1e9),
            first_s: gaps.first().copied(),
        }
    }
}

impl Record {
    /// The record of a line, its gaps read into `itl` (a buffer): the
    /// fields that place a request in the run and on the clock are needed,
    /// the others default (0, `null`).
    pub fn of(line: &RecordLine, itl: &mut Vec<f64>) -> Result<Record, String> {
        line.itl_s.read_into(itl)?;
        let source = |s: Option<TokenSource>| s.map(|s| s.as_str().to_string());
        Ok(Record {
            request: need(line.request, "request")?,
            tree: need(line.tree.as_deref(), "tree")?.to_string(),
            tree_index: need(line.tree_index, "tree_index")?,
            agent: need(line.agent.as_deref(), "agent")?.to_string(),
            turn: need(line.turn, "turn")?,
            copy: line.copy.unwrap_or(0),
            lane: line.lane,
            play: need(line.play, "play")?,
            warmup: line.is_warmup(),
            status: line.status.as_str().to_string(),
            eligible_s: need(line.eligible_s, "eligible_s")?,
            dispatched_s: need(line.dispatched_s, "dispatched_s")?,
            sent_s: line.sent_s,
            headers_s: line.headers_s,
            first_byte_s: line.first_byte_s,
            first_content_s: line.first_content_s,
            done_s: line.done_s,
            queue_wait_s: line.queue_wait_s.unwrap_or(0.0),
            lateness_s: line.lateness_s,
            ttft_s: line.ttft_s,
            e2e_s: line.e2e_s,
            tpot_s: line.tpot_s,
            itl: ItlSummary::of(itl),
            planned_input_tokens: line.planned_input_tokens.map_or(0, u64::from),
            planned_output_tokens: line.planned_output_tokens.map_or(0, u64::from),
            input_tokens: line.input_tokens.unwrap_or(0),
            input_tokens_source: source(line.input_tokens_source),
            output_tokens: line.output_tokens.unwrap_or(0),
            output_tokens_source: source(line.output_tokens_source),
            cached_tokens: line.cached_tokens,
            http_status: line.http_status,
            attempts: line.attempts.unwrap_or(0),
            resends: line.resends.unwrap_or(0),
            retries: line.retries.unwrap_or(0),
            answered_model: line.answered_model.as_deref().map(str::to_string),
            replica: line.replica,
            session_key: line.session_key.as_deref().map(str::to_string),
            served_by: line.served_by.as_deref().map(str::to_string),
            reuse_best_tokens: line.reuse_best_tokens,
            reuse_predicted_tokens: line.reuse_predicted_tokens,
            reuse_gap_s: line.reuse_gap_s,
            error: line.error.as_ref().map(|e| RecordError {
                category: e.category.as_str().to_string(),
                message: e.message.as_deref().unwrap_or("").to_string(),
                http_status: e.http_status,
                retry_after_s: e.retry_after_s,
            }),
        })
    }

    /// Every field of the record, flat and in the line's order: `itl_s`
    /// as `itl_count`, `itl_mean_s`, `itl_p99_s`; `error` as
    /// `error_category`, `error_message`, `error_http_status`,
    /// `error_retry_after_s`; `answered_model` last. Absent values are
    /// `null`.
    pub fn fields(&self) -> Vec<(&'static str, Value)> {
        let error = self.error.as_ref();
        vec![
            ("request", self.request.into()),
            ("tree", self.tree.as_str().into()),
            ("tree_index", self.tree_index.into()),
            ("agent", self.agent.as_str().into()),
            ("turn", self.turn.into()),
            ("copy", self.copy.into()),
            ("lane", self.lane.into()),
            ("play", self.play.into()),
            ("warmup", self.warmup.into()),
            ("status", self.status.as_str().into()),
            ("eligible_s", self.eligible_s.into()),
            ("dispatched_s", self.dispatched_s.into()),
            ("sent_s", self.sent_s.into()),
            ("headers_s", self.headers_s.into()),
            ("first_byte_s", self.first_byte_s.into()),
            ("first_content_s", self.first_content_s.into()),
            ("done_s", self.done_s.into()),
            ("queue_wait_s", self.queue_wait_s.into()),
            ("lateness_s", self.lateness_s.into()),
            ("ttft_s", self.ttft_s.into()),
            ("e2e_s", self.e2e_s.into()),
            ("tpot_s", self.tpot_s.into()),
            ("itl_count", self.itl.count.into()),
            ("itl_mean_s", self.itl.mean_s.into()),
            ("itl_p99_s", self.itl.p99_s.into()),
            ("planned_input_tokens", self.planned_input_tokens.into()),
            ("planned_output_tokens", self.planned_output_tokens.into()),
            ("input_tokens", self.input_tokens.into()),
            (
                "input_tokens_source",
                self.input_tokens_source.clone().into(),
            ),
            ("output_tokens", self.output_tokens.into()),
            (
                "output_tokens_source",
                self.output_tokens_source.clone().into(),
            ),
            ("cached_tokens", self.cached_tokens.into()),
            ("http_status", self.http_status.into()),
            ("attempts", self.attempts.into()),
            ("resends", self.resends.into()),
            ("retries", self.retries.into()),
            ("error_category", error.map(|e| e.category.clone()).into()),
            ("error_message", error.map(|e| e.message.clone()).into()),
            (
                "error_http_status",
                error.and_then(|e| e.http_status).into(),
            ),
            (
                "error_retry_after_s",
                error.and_then(|e| e.retry_after_s).into(),
            ),
            ("replica", self.replica.into()),
            ("session_key", self.session_key.clone().into()),
            ("served_by", self.served_by.clone().into()),
            ("reuse_best_tokens", self.reuse_best_tokens.into()),
            ("reuse_predicted_tokens", self.reuse_predicted_tokens.into()),
            ("reuse_gap_s", self.reuse_gap_s.into()),
            ("answered_model", self.answered_model.clone().into()),
        ]
    }

    /// A stamp in nanoseconds since the run's epoch; `None` when absent
    /// or not a time (negative, not finite).
    pub fn ns(secs: Option<f64>) -> Option<Nanos> {
        secs.and_then(secs_to_nanos)
    }
}

/// A missing directory is an input error (exit 2) naming it.
pub fn check_dir(dir: &Path) -> Result<(), Error> {
    if dir.is_dir() {
        return Ok(());
    }
    Err(Error::input(format!(
        "{}: not a run directory (expected the --out DIR of arbor run)",
        dir.display()
    )))
}

/// Hands every record of `dir/records.jsonl` to `each`, in file order,
/// holding none. A missing directory or file, or a line that is not a
/// record, is an input error (exit 2) naming the path and line; so is an
/// error `each` gives, on the line it was given.
pub fn for_each(
    dir: &Path,
    mut each: impl FnMut(Record) -> Result<(), String>,
) -> Result<(), Error> {
    check_dir(dir)?;
    let mut itl = Vec::new();
    record_line::read(&dir.join(RECORDS_FILE), |line, _| {
        each(Record::of(line, &mut itl)?)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"request":0,"tree":"t","tree_index":0,"agent":"a","turn":0,"copy":0,"lane":null,"play":0,"warmup":false,"status":"ok","eligible_s":0.0,"dispatched_s":3.936e-6,"sent_s":0.000444792,"headers_s":0.012454928,"first_byte_s":0.032690967,"first_content_s":0.032690967,"done_s":0.112015894,"queue_wait_s":0.0,"lateness_s":0.000444792,"ttft_s":0.032246175,"e2e_s":0.111571102,"tpot_s":0.026441642333333334,"itl_s":[0.020206525,0.020367305,0.022235485],"planned_input_tokens":10261,"planned_output_tokens":251,"input_tokens":12155,"input_tokens_source":"usage","output_tokens":4,"output_tokens_source":"usage","cached_tokens":0,"http_status":200,"attempts":1,"error":null}"#;

    #[test]
    fn a_record_of_run_md_reads_and_flattens() {
        let r = Record::of(&RecordLine::parse(LINE).unwrap(), &mut Vec::new()).unwrap();
        assert_eq!(r.itl.count, 3);
        assert_eq!(r.itl.p99_s, Some(0.022235485));
        assert_eq!(r.itl.first_s, Some(0.020206525));
        let mean = (0.020206525 + 0.020367305 + 0.022235485) / 3.0;
        assert!((r.itl.mean_s.unwrap() - mean).abs() < 1e-15);
        let fields = r.fields();
        let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.first(), Some(&"request"));
        assert_eq!(names.last(), Some(&"answered_model"));
        assert!(!names.contains(&"itl_s"), "the list is summarised");
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "no name twice");
    }

    #[test]
    fn itl_percentile_is_nearest_rank() {
        let gaps: Vec<f64> = (1..=200).map(|i| i as f64 / 1000.0).collect();
        let s = ItlSummary::of(&gaps);
        assert_eq!(s.count, 200);
        assert_eq!(s.p99_s, Some(0.198));
        assert_eq!(ItlSummary::of(&[]), ItlSummary::default());
    }
}
