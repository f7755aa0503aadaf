//! The one reader of a `records.jsonl` line: [`RecordLine`], what every
//! reader of the file (`summarize`, `merge`, `compare`, `export`, the
//! report's pages, capacity's live probe, calibration) takes a line as.
//!
//! Borrowed from the line's text: strings are borrowed when they hold no
//! escape, `itl_s` is kept as the line's text ([`Gaps`]) until a reader
//! asks for the values, and `status` and `error.category` are read into
//! their enums ([`Status`], [`ErrorCategory`]); an unknown word is an error
//! saying what was expected, on the line's number. Times stay the line's
//! seconds; a reader takes them as nanoseconds with
//! [`crate::record::secs_ns`].
//!
//! Owns which fields a line may lack. Only `status` is required: every
//! other field is `Option`, because some writer leaves it out or writes
//! `null` — [`RequestRecord`](crate::record::RequestRecord) writes `null`
//! for a stamp never reached and leaves out an error's `http_status` and
//! `retry_after_s`; records of an arbor before resends were counted lack
//! `resends`; the virtual probe of a capacity search writes only what the
//! report's page reads (no `itl_s`, token sources, `attempts`, ...); hand-
//! made lines (tests, scripts) give what their reader reads. What a reader
//! cannot do without it asks for with [`need`], which names the field
//! (the summary's [`RecordLine::facts`]: every field a summary adds up).
//! Fields a later arbor adds are ignored. The reading rules (line
//! numbers, blank and torn last lines) are [`crate::records_file`]'s.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::collector::{ErrorSeen, Facts};
use crate::record::{unknown_word_of, ErrorCategory, Status, TokenSource};
use crate::records_file::{for_each_line, not_a_record, Lines};
use crate::seen::RequestIds;
use arbor_error::Error;

/// One line of `records.jsonl` (docs/run.md), as written; `None` where
/// the line lacks the field or holds `null`.
#[derive(Debug, Clone, Deserialize)]
pub struct RecordLine<'a> {
    pub request: Option<u64>,
    #[serde(borrow, default, deserialize_with = "text")]
    pub tree: Option<Cow<'a, str>>,
    pub tree_index: Option<u32>,
    #[serde(borrow, default, deserialize_with = "text")]
    pub agent: Option<Cow<'a, str>>,
    pub turn: Option<u32>,
    pub copy: Option<u32>,
    pub lane: Option<u32>,
    pub play: Option<u32>,
    pub warmup: Option<bool>,
    pub status: Status,
    pub eligible_s: Option<f64>,
    pub dispatched_s: Option<f64>,
    pub sent_s: Option<f64>,
    pub headers_s: Option<f64>,
    pub first_byte_s: Option<f64>,
    pub first_content_s: Option<f64>,
    pub done_s: Option<f64>,
    pub queue_wait_s: Option<f64>,
    pub lateness_s: Option<f64>,
    pub ttft_s: Option<f64>,
    pub e2e_s: Option<f64>,
    pub tpot_s: Option<f64>,
    #[serde(borrow, default)]
    pub itl_s: Gaps<'a>,
    pub planned_input_tokens: Option<u32>,
    pub planned_output_tokens: Option<u32>,
    pub input_tokens: Option<u64>,
    pub input_tokens_source: Option<TokenSource>,
    pub output_tokens: Option<u64>,
    pub output_tokens_source: Option<TokenSource>,
    pub cached_tokens: Option<u64>,
    pub http_status: Option<u16>,
    pub attempts: Option<u32>,
    /// Absent from records written before arbor counted resends (0).
    pub resends: Option<u32>,
    /// Absent when 0, and from records before `--retry-on`.
    pub retries: Option<u32>,
    #[serde(borrow)]
    pub error: Option<LineError<'a>>,
    /// The model the server answered with, when it was not the one asked
    /// for (absent otherwise, and from records before arbor checked).
    #[serde(borrow, default, deserialize_with = "text")]
    pub answered_model: Option<Cow<'a, str>>,
    /// The replica it was sent to (absent with one endpoint).
    pub replica: Option<u32>,
    /// The session-routing key sent with it.
    #[serde(borrow, default, deserialize_with = "text")]
    pub session_key: Option<Cow<'a, str>>,
    /// The replica the server or router named.
    #[serde(borrow, default, deserialize_with = "text")]
    pub served_by: Option<Cow<'a, str>>,
    /// The plan's prefix reuse (`crate::reuse`); absent when the run did
    /// not plan it, and from records before arbor did.
    pub reuse_best_tokens: Option<u64>,
    pub reuse_predicted_tokens: Option<u64>,
    pub reuse_gap_s: Option<f64>,
}

/// A failed request's `error` object.
#[derive(Debug, Clone, Deserialize)]
pub struct LineError<'a> {
    pub category: ErrorCategory,
    #[serde(borrow, default, deserialize_with = "text")]
    pub message: Option<Cow<'a, str>>,
    pub http_status: Option<u16>,
    pub retry_after_s: Option<f64>,
}

/// A string field, borrowed from the line when it holds no escape.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Text<'de>>::deserialize(d)?.map(|t| t.0))
}

/// A line's `itl_s` (the gaps between content chunks, in seconds), kept
/// as the line's text: read by the readers that want the values
/// ([`Gaps::read_into`]), skipped by the others.
#[derive(Debug, Clone, Copy, Default)]
pub struct Gaps<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Gaps<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Gaps<'a>, D::Error> {
        Ok(Gaps(Option::<&'a RawValue>::deserialize(d)?))
    }
}

impl<'a> Gaps<'a> {
    /// Whether the line lists its gaps (the field is there, not `null`).
    pub fn is_listed(&self) -> bool {
        self.0.is_some()
    }

    /// The array's text as the line holds it (`None` when not listed).
    pub fn text(&self) -> Option<&'a str> {
        self.0.map(RawValue::get)
    }

    /// Replaces `out` with the gaps (none when not listed), read as serde
    /// reads an array of numbers; an error names `itl_s`.
    pub fn read_into(&self, out: &mut Vec<f64>) -> Result<(), String> {
        out.clear();
        let Some(raw) = self.0 else {
            return Ok(());
        };
        let mut de = serde_json::Deserializer::from_str(raw.get());
        Fill(out)
            .deserialize(&mut de)
            .and_then(|()| de.end())
            .map_err(|e| bad("itl_s", &e))
    }

    /// The gaps, in a new vector.
    pub fn values(&self) -> Result<Vec<f64>, String> {
        let mut out = Vec::new();
        self.read_into(&mut out)?;
        Ok(out)
    }
}

/// Appends an array's numbers to a vector.
struct Fill<'v>(&'v mut Vec<f64>);

impl<'de> DeserializeSeed<'de> for Fill<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Fill<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of seconds")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(v) = seq.next_element::<f64>()? {
            self.0.push(v);
        }
        Ok(())
    }
}

/// The words for a field a line holds but a reader cannot take.
fn bad(field: &str, why: &dyn fmt::Display) -> String {
    format!("expected a record of `arbor run` (docs/run.md): {field}: {why}")
}

/// `value`, or the words for a line that lacks `field` (or holds `null`)
/// where the reader needs it.
pub fn need<T>(value: Option<T>, field: &str) -> Result<T, String> {
    value.ok_or_else(|| {
        format!("expected a record of `arbor run` (docs/run.md): missing field `{field}`")
    })
}

impl<'a> RecordLine<'a> {
    /// Reads one line. An unknown status or error category says what was
    /// expected; any other fault is [`not_a_record`].
    pub fn parse(text: &'a str) -> Result<RecordLine<'a>, String> {
        serde_json::from_str(text)
            .map_err(|e| unknown_word_of(&e).unwrap_or_else(|| not_a_record(&e)))
    }

    /// Marked a warmup (`false` when the line does not say).
    pub fn is_warmup(&self) -> bool {
        self.warmup.unwrap_or(false)
    }

    /// The error's category, when the request failed.
    pub fn error_category(&self) -> Option<ErrorCategory> {
        self.error.as_ref().map(|e| e.category)
    }

    /// The line as the summary reads it, with its gaps read into `itl`
    /// ([`Gaps::read_into`]): every field a summary adds up is needed.
    pub fn facts<'s>(&'s self, itl: &'s [f64]) -> Result<Facts<'s>, String> {
        need(self.itl_s.text(), "itl_s")?;
        Ok(Facts {
            tree_index: need(self.tree_index, "tree_index")?,
            agent: need(self.agent.as_deref(), "agent")?,
            turn: need(self.turn, "turn")?,
            lane: self.lane,
            play: need(self.play, "play")?,
            warmup: need(self.warmup, "warmup")?,
            status: self.status,
            error_category: self.error_category(),
            resends: self.resends.unwrap_or(0),
            retries: self.retries.unwrap_or(0),
            dispatched_s: need(self.dispatched_s, "dispatched_s")?,
            sent_s: self.sent_s,
            first_content_s: self.first_content_s,
            done_s: self.done_s,
            queue_wait_s: need(self.queue_wait_s, "queue_wait_s")?,
            lateness_s: self.lateness_s,
            ttft_s: self.ttft_s,
            e2e_s: self.e2e_s,
            itl_s: itl,
            planned_input_tokens: need(self.planned_input_tokens, "planned_input_tokens")?,
            planned_output_tokens: need(self.planned_output_tokens, "planned_output_tokens")?,
            input_tokens: need(self.input_tokens, "input_tokens")?,
            input_tokens_source: need(self.input_tokens_source, "input_tokens_source")?,
            output_tokens: need(self.output_tokens, "output_tokens")?,
            output_tokens_source: need(self.output_tokens_source, "output_tokens_source")?,
            cached_tokens: self.cached_tokens,
            error: self.error.as_ref().map(|e| ErrorSeen {
                http_status: e.http_status.or(self.http_status),
                message: e.message.as_deref().unwrap_or(""),
            }),
            answered_model: self.answered_model.as_deref(),
            replica: self.replica,
            reuse_best_tokens: self.reuse_best_tokens,
            reuse_predicted_tokens: self.reuse_predicted_tokens,
            reuse_gap_s: self.reuse_gap_s,
        })
    }
}

/// Reads `path`, handing every record (and the line's text) to `each` in
/// file order (the shared rules of [`crate::records_file`]: an error, a
/// line's or one `each` gives, names the file and the line; a torn last
/// line is skipped and reported). A request id seen twice is an error
/// ([`RequestIds`]).
pub fn read(
    path: &Path,
    mut each: impl FnMut(&RecordLine<'_>, &str) -> Result<(), String>,
) -> Result<Lines, Error> {
    let mut ids = RequestIds::default();
    for_each_line(path, |_, text| {
        let line = RecordLine::parse(text)?;
        ids.add(line.request)?;
        each(&line, text)
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
            replica: None,
            session_key: None,
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
        let Ok(found) = read(&path, |l, _| {
            let itl = l.itl_s.values()?;
            seen.push(format!("{:?}", l.facts(&itl)?));
            Ok(())
        }) else {
            panic!("the line reads back")
        };
        assert_eq!((found.records, found.torn), (1, None));
        assert_eq!(format!("{:?}", Facts::from(&r)), seen[0]);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_torn_last_line_is_skipped_and_a_bad_middle_line_is_an_error() {
        let (first, second) = (line(&record(0)), line(&record(2)));
        let torn = &line(&record(1))[..40];
        let path = file("torn", &format!("{first}{second}{torn}"));
        let Ok(found) = read(&path, |_, _| Ok(())) else {
            panic!("a torn last line is not an error")
        };
        assert_eq!(found.records, 2);
        assert_eq!(found.torn.map(|t| t.line), Some(3));

        let path = file("bad", &format!("{first}{torn}\n{second}"));
        let Err(err) = read(&path, |_, _| Ok(())) else {
            panic!("a bad middle line is an error")
        };
        assert!(
            err.message.contains("line 2: expected a record"),
            "{}",
            err.message
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_record_twice_is_refused_naming_its_second_line() {
        // Issue 27, item 2: a records.jsonl appended to itself was read as
        // twice the requests, complete.
        let one = line(&record(0));
        let path = file("twice", &format!("{one}{}{one}", line(&record(1))));
        let Err(err) = read(&path, |_, _| Ok(())) else {
            panic!("a request recorded twice is refused")
        };
        assert!(err.is_input(), "{}", err.message);
        assert!(
            err.message.contains("line 3: request 0 is recorded twice"),
            "{}",
            err.message
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_nul_tail_and_an_endless_line_are_refused_where_they_start() {
        // Issue 27, items 13 and 19: a tail of NULs (or records.jsonl
        // linked to /dev/zero) was read whole before any reader refused it.
        let mut bytes = line(&record(0)).into_bytes();
        bytes.extend(std::iter::repeat_n(0u8, 1 << 20));
        let path = file("nul", "");
        std::fs::write(&path, &bytes).unwrap();
        let Err(err) = read(&path, |_, _| Ok(())) else {
            panic!("NULs are refused")
        };
        assert!(
            err.message
                .contains("line 2: a NUL byte at byte 1 of the line"),
            "{}",
            err.message
        );
        let zero = file("zero", "");
        let _ = std::fs::remove_file(&zero);
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let Err(err) = read(&zero, |_, _| Ok(())) else {
            panic!("/dev/zero is refused")
        };
        assert!(
            err.message.contains("line 1: a NUL byte"),
            "{}",
            err.message
        );
        let long = file("long", "");
        std::fs::write(&long, vec![b' '; crate::records_file::LINE_CAP + 10]).unwrap();
        let Err(err) = read(&long, |_, _| Ok(())) else {
            panic!("a line over the cap is refused")
        };
        assert!(
            err.message.contains("line 1: a line longer than 64 MiB"),
            "{}",
            err.message
        );
        for p in [path, zero, long] {
            let _ = std::fs::remove_file(p);
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let text = r#"{"status":"ok","tree":"t","agent":"a\"b","error":{"category":"timeout","message":"slow"}}"#;
        let Ok(l) = RecordLine::parse(text) else {
            panic!("a line")
        };
        assert!(matches!(l.tree, Some(Cow::Borrowed("t"))));
        assert!(matches!(l.agent.as_deref(), Some("a\"b")));
        let e = l.error.as_ref().and_then(|e| e.message.as_ref());
        assert!(matches!(e, Some(Cow::Borrowed("slow"))));
    }
}
