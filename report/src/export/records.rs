//! Reading `records.jsonl` back (docs/run.md describes the line), for the
//! exports: every line is a [`Record`], its inter-token latencies summarised
//! as they are read ([`ItlSummary`]: the full list stays in the file), and
//! [`Record::fields`] flattens a record into named values in the line's
//! order, the one list both the CSV columns and the trace's slice args are
//! made of.
//!
//! Owns the exports' view of a record: fields a later arbor adds are
//! ignored, and the few an older one lacked default. The reading rules
//! (line numbers, blank and torn last lines) are [`arbor_runs::records_file`]'s.

use std::path::Path;

use arbor_engine::stats::nearest_rank;
use arbor_engine::time::{secs_to_nanos, Nanos};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use arbor_error::Error;
use arbor_runs::records_file::{for_each_line, not_a_record, RECORDS_FILE};

/// One line of `records.jsonl`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
pub struct Record {
    pub request: u64,
    pub tree: String,
    pub tree_index: u32,
    pub agent: String,
    pub turn: u32,
    #[serde(default)]
    pub copy: u32,
    #[serde(default)]
    pub lane: Option<u32>,
    pub play: u32,
    #[serde(default)]
    pub warmup: bool,
    pub status: String,
    pub eligible_s: f64,
    pub dispatched_s: f64,
    #[serde(default)]
    pub sent_s: Option<f64>,
    #[serde(default)]
    pub headers_s: Option<f64>,
    #[serde(default)]
    pub first_byte_s: Option<f64>,
    #[serde(default)]
    pub first_content_s: Option<f64>,
    #[serde(default)]
    pub done_s: Option<f64>,
    #[serde(default)]
    pub queue_wait_s: f64,
    #[serde(default)]
    pub lateness_s: Option<f64>,
    #[serde(default)]
    pub ttft_s: Option<f64>,
    #[serde(default)]
    pub e2e_s: Option<f64>,
    #[serde(default)]
    pub tpot_s: Option<f64>,
    #[serde(default, rename = "itl_s", deserialize_with = "itl_summary")]
    pub itl: ItlSummary,
    #[serde(default)]
    pub planned_input_tokens: u64,
    #[serde(default)]
    pub planned_output_tokens: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub input_tokens_source: Option<String>,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub output_tokens_source: Option<String>,
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    #[serde(default)]
    pub http_status: Option<u16>,
    #[serde(default)]
    pub attempts: u32,
    /// Absent (0) in records written before arbor counted resends.
    #[serde(default)]
    pub resends: u32,
    #[serde(default)]
    pub error: Option<RecordError>,
}

/// `error` of a failed request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RecordError {
    pub category: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub http_status: Option<u16>,
    #[serde(default)]
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
        let mut ns: Vec<Nanos> = gaps
            .iter()
            .map(|&s| secs_to_nanos(s).unwrap_or(0))
            .collect();
        ns.sort_unstable();
        ItlSummary {
            count: gaps.len() as u64,
            mean_s: Some(gaps.iter().sum::<f64>() / gaps.len() as f64),
            p99_s: Some(nearest_rank(&ns, 0.99) as f64 / 1e9),
            first_s: gaps.first().copied(),
        }
    }
}

fn itl_summary<'de, D: Deserializer<'de>>(d: D) -> Result<ItlSummary, D::Error> {
    let gaps: Option<Vec<f64>> = Option::deserialize(d)?;
    Ok(ItlSummary::of(gaps.as_deref().unwrap_or(&[])))
}

impl Record {
    /// Every field of the record, flat and in the line's order: `itl_s`
    /// as `itl_count`, `itl_mean_s`, `itl_p99_s`; `error` as
    /// `error_category`, `error_message`, `error_http_status`,
    /// `error_retry_after_s`. Absent values are `null`.
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
    for_each_line(&dir.join(RECORDS_FILE), |_, text| {
        each(serde_json::from_str(text).map_err(|e| not_a_record(&e))?)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"request":0,"tree":"t","tree_index":0,"agent":"a","turn":0,"copy":0,"lane":null,"play":0,"warmup":false,"status":"ok","eligible_s":0.0,"dispatched_s":3.936e-6,"sent_s":0.000444792,"headers_s":0.012454928,"first_byte_s":0.032690967,"first_content_s":0.032690967,"done_s":0.112015894,"queue_wait_s":0.0,"lateness_s":0.000444792,"ttft_s":0.032246175,"e2e_s":0.111571102,"tpot_s":0.026441642333333334,"itl_s":[0.020206525,0.020367305,0.022235485],"planned_input_tokens":10261,"planned_output_tokens":251,"input_tokens":12155,"input_tokens_source":"usage","output_tokens":4,"output_tokens_source":"usage","cached_tokens":0,"http_status":200,"attempts":1,"error":null}"#;

    #[test]
    fn a_record_of_run_md_reads_and_flattens() {
        let r: Record = serde_json::from_str(LINE).unwrap();
        assert_eq!(r.itl.count, 3);
        assert_eq!(r.itl.p99_s, Some(0.022235485));
        assert_eq!(r.itl.first_s, Some(0.020206525));
        let mean = (0.020206525 + 0.020367305 + 0.022235485) / 3.0;
        assert!((r.itl.mean_s.unwrap() - mean).abs() < 1e-15);
        let fields = r.fields();
        let names: Vec<&str> = fields.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.first(), Some(&"request"));
        assert_eq!(names.last(), Some(&"error_retry_after_s"));
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
