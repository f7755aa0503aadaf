//! Reading `records.jsonl` back for a summary: one [`RecordLine`] per
//! line, seen by the collector as the same [`Facts`] the run saw.
//!
//! Owns the summary's view of a record only: it reads the fields a summary
//! needs (others, and fields a later arbor adds, are ignored). The reading
//! rules (line numbers, torn last lines) are [`crate::records_file`]'s.

use std::path::Path;

use crate::record::TokenSource;
use serde::Deserialize;

use crate::collector::Facts;
use crate::records_file::{for_each_line, not_a_record, Lines};
use arbor_error::Error;

/// What a line of `records.jsonl` says, as far as a summary reads it.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordLine {
    pub tree_index: u32,
    pub agent: String,
    pub turn: u32,
    pub lane: Option<u32>,
    pub play: u32,
    pub warmup: bool,
    pub status: String,
    pub dispatched_s: f64,
    pub sent_s: Option<f64>,
    pub first_content_s: Option<f64>,
    pub done_s: Option<f64>,
    pub queue_wait_s: f64,
    pub lateness_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub e2e_s: Option<f64>,
    pub itl_s: Vec<f64>,
    pub planned_input_tokens: u32,
    pub input_tokens: u64,
    #[serde(deserialize_with = "source")]
    pub input_tokens_source: TokenSource,
    pub output_tokens: u64,
    #[serde(deserialize_with = "source")]
    pub output_tokens_source: TokenSource,
    pub cached_tokens: Option<u64>,
    /// Absent from records written before arbor counted resends.
    #[serde(default)]
    pub resends: u32,
    pub error: Option<LineError>,
}

/// The part of a record's `error` a summary reads.
#[derive(Debug, Clone, Deserialize)]
pub struct LineError {
    pub category: String,
}

fn source<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TokenSource, D::Error> {
    let text = String::deserialize(d)?;
    match text.as_str() {
        "usage" => Ok(TokenSource::Usage),
        "counted" => Ok(TokenSource::Counted),
        "planned" => Ok(TokenSource::Planned),
        other => Err(serde::de::Error::unknown_variant(
            other,
            &["usage", "counted", "planned"],
        )),
    }
}

impl RecordLine {
    pub fn facts(&self) -> Facts<'_> {
        Facts {
            tree_index: self.tree_index,
            agent: &self.agent,
            turn: self.turn,
            lane: self.lane,
            play: self.play,
            warmup: self.warmup,
            status: &self.status,
            error_category: self.error.as_ref().map(|e| e.category.as_str()),
            resends: self.resends,
            sent_s: self.sent_s,
            first_content_s: self.first_content_s,
            done_s: self.done_s,
            queue_wait_s: self.queue_wait_s,
            lateness_s: self.lateness_s,
            ttft_s: self.ttft_s,
            e2e_s: self.e2e_s,
            itl_s: &self.itl_s,
            planned_input_tokens: self.planned_input_tokens,
            input_tokens: self.input_tokens,
            input_tokens_source: self.input_tokens_source,
            output_tokens: self.output_tokens,
            output_tokens_source: self.output_tokens_source,
            cached_tokens: self.cached_tokens,
        }
    }
}

/// Reads `path`, handing every record to `each` in file order (the
/// shared rules of [`crate::records_file`]: an error names the file and
/// the line; a torn last line is skipped and reported).
pub fn read(path: &Path, mut each: impl FnMut(&RecordLine)) -> Result<Lines, Error> {
    for_each_line(path, |_, text| {
        let line: RecordLine = serde_json::from_str(text).map_err(|e| not_a_record(&e))?;
        each(&line);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RequestIdentity, RequestRecord, Response, Stamps};

    fn record(request: u64) -> RequestRecord {
        let id = RequestIdentity {
            request,
            tree: "t".into(),
            tree_index: 0,
            agent: "a".into(),
            turn: request as u32,
            copy: 0,
            lane: None,
            play: 0,
            eligible: 1_000,
            dispatched: 1_500,
            queue_wait: 500,
            warmup: false,
            planned_input_tokens: 100,
            planned_output_tokens: 4,
        };
        let response = Response {
            stamps: Stamps {
                sent: Some(2_000),
                headers: Some(2_500),
                first_byte: Some(2_600),
                first_content: Some(3_000),
                content: vec![3_000, 4_001, 6_003, 7_000],
                done: Some(7_000),
            },
            http_status: Some(200),
            completion_tokens: Some(4),
            ..Response::default()
        };
        RequestRecord::new(id, &response)
    }

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let path =
            std::env::temp_dir().join(format!("arbor-records-{}-{name}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn line(r: &RequestRecord) -> String {
        serde_json::to_string(r).unwrap() + "\n"
    }

    #[test]
    fn a_line_reads_back_as_the_facts_of_its_record() {
        let r = record(0);
        let path = file("one", &line(&r));
        let mut seen = Vec::new();
        let Ok(found) = read(&path, |l| seen.push(l.clone())) else {
            panic!("the line reads back")
        };
        assert_eq!((found.records, found.torn), (1, None));
        let (a, b) = (Facts::from(&r), seen[0].facts());
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error() {
        let whole = line(&record(0));
        let torn = &line(&record(1))[..40];
        let path = file("torn", &format!("{whole}{whole}{torn}"));
        let Ok(found) = read(&path, |_| {}) else {
            panic!("a torn last line is not an error")
        };
        assert_eq!(found.records, 2);
        assert_eq!(found.torn.map(|t| t.line), Some(3));

        let path = file("bad", &format!("{whole}{torn}\n{whole}"));
        let Err(err) = read(&path, |_| {}) else {
            panic!("a bad middle line is an error")
        };
        assert!(
            err.message.contains("line 2: expected a record"),
            "{}",
            err.message
        );
        let _ = std::fs::remove_file(path);
    }
}
