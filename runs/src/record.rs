//! The line of `records.jsonl` (docs/run.md): one [`RequestRecord`] per
//! request, written as it completes, with its error class
//! ([`ErrorCategory`]) and where its token counts came from
//! ([`TokenSource`]); what the client stamped while it ran ([`Stamps`],
//! [`Response`]); and where finished records go ([`RecordSink`]).
//!
//! Times are nanoseconds since the run's epoch (a monotonic clock),
//! stamped when bytes arrive, before any parsing. Derived figures (TTFT,
//! ITL, TPOT, E2E, lateness) are computed here from those stamps, once
//! ([`RequestRecord::new`]), so the summary and the records agree. Also
//! owns the records' schema version ([`RECORDS_SCHEMA`]); the JSON Schema
//! of a line is derived from [`RequestRecord`]. Also owns the words a
//! line's two closed sets are read back by ([`Status`], [`ErrorCategory`]:
//! an unknown one is an error saying what was expected); readers read the
//! lines back as [`crate::record_line::RecordLine`]s.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use arbor_engine::time::{nanos_to_secs, secs_to_nanos, Nanos};

/// The schema of a line of `records.jsonl` (named in `run.json`, not on
/// every line; the title of docs/schema/records.schema.json).
pub const RECORDS_SCHEMA: &str = "arbor.records/1";

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCategory {
    /// No connection could be made (refused, reset before a response).
    Connect,
    /// The request took longer than `--timeout`.
    Timeout,
    /// The server answered with a non-success status.
    HttpStatus,
    /// The stream ended before `[DONE]` (connection closed or cut).
    StreamCut,
    /// A line of the stream was not valid SSE/JSON.
    MalformedSse,
    /// The prompt was longer than the model's context.
    ContextOverflow,
    /// The stream carried an error object.
    ServerError,
    /// The server said it is overloaded: HTTP 529, or an error of type
    /// `overloaded_error` (the Anthropic Messages API's way), in the
    /// status's body or in the stream.
    Overloaded,
    /// Cancelled at the end of the grace period.
    Cancelled,
    /// The client's own failure, not the server's: it ran out of file
    /// descriptors (EMFILE, ENFILE), buffers (ENOBUFS), memory (ENOMEM) or
    /// ephemeral ports (EADDRNOTAVAIL) opening a connection.
    Client,
    /// The server sent more than a cap allows (a response head, an SSE
    /// line, a chunk-size line; docs/reliability.md lists the caps); the
    /// message names the cap.
    Oversized,
}

impl ErrorCategory {
    /// Every category, in the order of the enum.
    pub const ALL: [ErrorCategory; 11] = [
        ErrorCategory::Connect,
        ErrorCategory::Timeout,
        ErrorCategory::HttpStatus,
        ErrorCategory::StreamCut,
        ErrorCategory::MalformedSse,
        ErrorCategory::ContextOverflow,
        ErrorCategory::ServerError,
        ErrorCategory::Overloaded,
        ErrorCategory::Cancelled,
        ErrorCategory::Client,
        ErrorCategory::Oversized,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCategory::Connect => "connect",
            ErrorCategory::Timeout => "timeout",
            ErrorCategory::HttpStatus => "http_status",
            ErrorCategory::StreamCut => "stream_cut",
            ErrorCategory::MalformedSse => "malformed_sse",
            ErrorCategory::ContextOverflow => "context_overflow",
            ErrorCategory::ServerError => "server_error",
            ErrorCategory::Overloaded => "overloaded",
            ErrorCategory::Cancelled => "cancelled",
            ErrorCategory::Client => "client",
            ErrorCategory::Oversized => "oversized",
        }
    }
}

/// The fields whose words form a closed set, as their errors name them.
const CLOSED: [&str; 2] = ["status", "error category"];

/// What a reader says of a word outside a closed set: the field, what was
/// expected, what was found.
fn unknown_word(field: &str, expected: &[&str], got: &str) -> String {
    let list = match expected {
        [init @ .., last] if !init.is_empty() => format!("{} or {last}", init.join(", ")),
        _ => expected.join(", "),
    };
    format!("expected {field} {list}, got `{got}`")
}

/// The words of a line's unknown status or error category, without the
/// position serde adds (a reader names the line); `None` for any other
/// error.
pub fn unknown_word_of(e: &serde_json::Error) -> Option<String> {
    if e.classify() != serde_json::error::Category::Data {
        return None;
    }
    let text = e.to_string();
    let at = format!(" at line {} column {}", e.line(), e.column());
    let why = text.strip_suffix(&at).unwrap_or(&text);
    CLOSED
        .iter()
        .any(|field| why.starts_with(&format!("expected {field} ")))
        .then(|| why.to_string())
}

/// A string of the line, borrowed when it holds no escape.
fn word<'de, D: Deserializer<'de>>(d: D) -> Result<Cow<'de, str>, D::Error> {
    #[derive(Deserialize)]
    struct Word<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Word::deserialize(d)?.0)
}

impl<'de> Deserialize<'de> for ErrorCategory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ErrorCategory, D::Error> {
        let text = word(d)?;
        ErrorCategory::ALL
            .into_iter()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| {
                let names = ErrorCategory::ALL.map(ErrorCategory::as_str);
                serde::de::Error::custom(unknown_word("error category", &names, &text))
            })
    }
}

/// What became of a request: a record's `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Error,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 3] = [Status::Ok, Status::Error, Status::Cancelled];

    /// The status of a request that ended with `error` (`None`: it
    /// succeeded): a cancellation is `cancelled`, any other error `error`.
    pub fn of(error: Option<&RequestError>) -> Status {
        match error {
            None => Status::Ok,
            Some(e) if e.category == ErrorCategory::Cancelled => Status::Cancelled,
            Some(_) => Status::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Error => "error",
            Status::Cancelled => "cancelled",
        }
    }
}

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let text = word(d)?;
        Status::ALL
            .into_iter()
            .find(|s| s.as_str() == text)
            .ok_or_else(|| {
                let names = Status::ALL.map(Status::as_str);
                serde::de::Error::custom(unknown_word("status", &names, &text))
            })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RequestError {
    pub category: ErrorCategory,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<f64>,
}

impl RequestError {
    /// The status and the message on one short line (`HTTP 404: The model
    /// ... does not exist`), for the console: a server's HTML error page
    /// is its words too, so at most 200 characters of it.
    pub fn in_words(&self) -> String {
        in_words(self.http_status, &self.message)
    }
}

/// A failure's status and message on one short line (see
/// [`RequestError::in_words`]); also for a record read back.
pub fn in_words(status: Option<u16>, message: &str) -> String {
    let status = status.map(|s| format!("HTTP {s}: ")).unwrap_or_default();
    let said = said_in_json(message);
    let message = said.as_deref().unwrap_or(message);
    let words: Vec<&str> = message.split_whitespace().collect();
    let words: String = words.join(" ").chars().take(200).collect();
    format!("{status}{words}")
}

/// The message inside a JSON error body: OpenAI's and Anthropic's
/// `{"error": {"message": ...}}`, vLLM's and others' `{"message": ...}`,
/// or `{"error": "..."}`; `None` when the text is not such a body.
fn said_in_json(text: &str) -> Option<String> {
    let body: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let text_of = |v: &serde_json::Value| v.as_str().map(str::to_string);
    let error = body.get("error");
    error
        .and_then(|e| e.get("message"))
        .and_then(text_of)
        .or_else(|| error.and_then(text_of))
        .or_else(|| body.get("message").and_then(text_of))
        .or_else(|| body.get("detail").and_then(text_of))
}

/// Where a token count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage`.
    Usage,
    /// Counted content chunks (no usage in the stream).
    Counted,
    /// What the plan intended (no usage, nothing counted).
    Planned,
}

impl TokenSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenSource::Usage => "usage",
            TokenSource::Counted => "counted",
            TokenSource::Planned => "planned",
        }
    }
}

/// Stamps taken while a request ran, ns since the run epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamps {
    pub sent: Option<Nanos>,
    pub headers: Option<Nanos>,
    pub first_byte: Option<Nanos>,
    pub first_content: Option<Nanos>,
    /// Arrival of every chunk that carried content.
    pub content: Vec<Nanos>,
    pub done: Option<Nanos>,
}

/// What the server said about a finished request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    pub stamps: Stamps,
    pub http_status: Option<u16>,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub error: Option<RequestError>,
    /// Times the request was tried: the first try, each connect retry
    /// (`--retries`) and the one resend.
    pub attempts: u32,
    /// Times the request was sent again because it provably never left
    /// (0 or 1; see `exchange`).
    pub resends: u32,
    /// Times it was tried again after a refusal with a `--retry-on`
    /// status (counted in `attempts` too).
    pub retries: u32,
    /// The model the stream's first payload named, when it is not the
    /// model the request asked for (`None` when it is, or when the stream
    /// named none).
    pub answered_model: Option<String>,
    /// The value of the response header that names the replica which
    /// served the request (`--replica-header`), when asked for and given.
    pub served_by: Option<String>,
    /// The text the server generated (the content deltas joined), captured
    /// only when a request is asked to (`--history live`: `Some` before the
    /// exchange); `None` otherwise. Never recorded.
    pub generated: Option<String>,
    /// The value of the response header `--session-routing token` names:
    /// the session token the server issued, echoed on the agent's later
    /// requests (never recorded).
    pub session_token: Option<String>,
}

/// The message of a request cancelled at the end of the grace period.
pub const CANCELLED_MESSAGE: &str = "cancelled at the end of the grace period";

impl Response {
    /// Ends a request still running at `at`, when the grace period ran out:
    /// what was measured so far stays; the request is `cancelled`.
    pub fn cancel(&mut self, at: Nanos) {
        self.stamps.done = Some(at);
        self.error = Some(RequestError {
            category: ErrorCategory::Cancelled,
            message: CANCELLED_MESSAGE.into(),
            http_status: None,
            retry_after_s: None,
        });
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn secs(ns: Option<Nanos>) -> Option<f64> {
    ns.map(nanos_to_secs)
}

fn span(from: Option<Nanos>, to: Option<Nanos>) -> Option<f64> {
    match (from, to) {
        (Some(a), Some(b)) if b >= a => Some(nanos_to_secs(b - a)),
        _ => None,
    }
}

/// A record's seconds (a stamp or a span) as nanoseconds, the one way
/// every reader of a record takes them: [`secs_to_nanos`], and 0 for a
/// value that is not a time (negative, not finite, absurd).
pub fn secs_ns(seconds: f64) -> Nanos {
    secs_to_nanos(seconds).unwrap_or(0)
}

/// One line of `records.jsonl`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[schemars(title = RECORDS_SCHEMA)]
pub struct RequestRecord {
    pub request: u64,
    pub tree: String,
    pub tree_index: u32,
    pub agent: String,
    pub turn: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    pub play: u32,
    /// A warmup request (one output token, full prefix): recorded, never
    /// counted in metrics.
    pub warmup: bool,
    #[schemars(extend("enum" = ["ok", "error", "cancelled"]))]
    pub status: &'static str,
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
    /// Gaps between content chunks, in seconds.
    pub itl_s: Vec<f64>,
    pub planned_input_tokens: u32,
    pub planned_output_tokens: u32,
    pub input_tokens: u64,
    pub input_tokens_source: TokenSource,
    pub output_tokens: u64,
    pub output_tokens_source: TokenSource,
    pub cached_tokens: Option<u64>,
    pub http_status: Option<u16>,
    /// Times the request was tried (connect retries and the resend
    /// included).
    pub attempts: u32,
    /// Times it was sent again because it provably never left the client
    /// (0 or 1): a failed write with nothing written.
    pub resends: u32,
    /// Times it was tried again after a refusal with a `--retry-on`
    /// status (counted in `attempts` too); absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    pub error: Option<RequestError>,
    /// The model the server answered with, when it is not the one asked
    /// for; absent when it is (or when the stream named none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_model: Option<String>,
    /// The replica (its index in `config.endpoints`) the request was sent
    /// to; absent when the run had one endpoint (docs/routing.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
    /// The session-routing key sent with the request (`--session-routing`):
    /// one per agent of each play; absent with `--session-routing none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// Which replica the server or router said served the request (the
    /// value of `--replica-header`); absent when it said nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_by: Option<String>,
    /// Prompt tokens the workload could reuse at best (the plan's: an
    /// infinite cache, token by token, in the plan's dispatch order, the
    /// agent's previous answer counted; docs/run.md, "Prefix reuse");
    /// absent when the run did not plan reuse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_best_tokens: Option<u64>,
    /// Cached tokens the plan's server model predicted for this request;
    /// absent without a server model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_predicted_tokens: Option<u64>,
    /// Seconds from the end of the agent's previous turn to this send, on
    /// the plan's clock; absent for an agent's first turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_gap_s: Option<f64>,
}

/// Identity of a request in the workload.
#[derive(Debug, Clone)]
pub struct RequestIdentity {
    pub request: u64,
    pub tree: String,
    pub tree_index: u32,
    pub agent: String,
    pub turn: u32,
    pub copy: u32,
    pub lane: Option<u32>,
    pub play: u32,
    pub eligible: Nanos,
    pub dispatched: Nanos,
    pub queue_wait: Nanos,
    /// A warmup (one token, not measured).
    pub warmup: bool,
    pub planned_input_tokens: u32,
    pub planned_output_tokens: u32,
    /// The replica it was sent to, with several endpoints.
    pub replica: Option<u32>,
    /// The session-routing key sent with it.
    pub session_key: Option<String>,
}

impl RequestRecord {
    pub fn new(id: RequestIdentity, response: &Response) -> RequestRecord {
        let s = &response.stamps;
        let counted = s.content.len() as u64;
        let (output_tokens, output_tokens_source) = match response.completion_tokens {
            Some(n) => (n, TokenSource::Usage),
            None if counted > 0 || s.done.is_some() => (counted, TokenSource::Counted),
            None => (u64::from(id.planned_output_tokens), TokenSource::Planned),
        };
        let (input_tokens, input_tokens_source) = match response.prompt_tokens {
            Some(n) => (n, TokenSource::Usage),
            None => (u64::from(id.planned_input_tokens), TokenSource::Planned),
        };
        let itl_s = s
            .content
            .windows(2)
            .map(|w| nanos_to_secs(w[1] - w[0]))
            .collect();
        let tpot_s = match (s.first_content, s.done) {
            (Some(first), Some(done)) if output_tokens > 1 && done >= first => {
                Some(nanos_to_secs(done - first) / (output_tokens - 1) as f64)
            }
            _ => None,
        };
        let status = Status::of(response.error.as_ref()).as_str();
        RequestRecord {
            request: id.request,
            tree: id.tree,
            tree_index: id.tree_index,
            agent: id.agent,
            turn: id.turn,
            copy: id.copy,
            lane: id.lane,
            play: id.play,
            warmup: id.warmup,
            status,
            eligible_s: nanos_to_secs(id.eligible),
            dispatched_s: nanos_to_secs(id.dispatched),
            sent_s: secs(s.sent),
            headers_s: secs(s.headers),
            first_byte_s: secs(s.first_byte),
            first_content_s: secs(s.first_content),
            done_s: secs(s.done),
            queue_wait_s: nanos_to_secs(id.queue_wait),
            lateness_s: span(Some(id.eligible), s.sent),
            ttft_s: span(s.sent, s.first_content),
            e2e_s: span(s.sent, s.done),
            tpot_s,
            itl_s,
            planned_input_tokens: id.planned_input_tokens,
            planned_output_tokens: id.planned_output_tokens,
            input_tokens,
            input_tokens_source,
            output_tokens,
            output_tokens_source,
            cached_tokens: response.cached_tokens,
            http_status: response.http_status,
            attempts: response.attempts,
            resends: response.resends,
            retries: response.retries,
            error: response.error.clone(),
            answered_model: response.answered_model.clone(),
            replica: id.replica,
            session_key: id.session_key,
            served_by: response.served_by.clone(),
            reuse_best_tokens: None,
            reuse_predicted_tokens: None,
            reuse_gap_s: None,
        }
    }
}

/// Where records go, as requests finish.
pub trait RecordSink {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()>;

    /// The loop has no more events at hand: records held so far should be
    /// written now (a sink may batch the records of one burst).
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_error_body_is_told_by_its_message() {
        let openai = r#"{"error":{"code":404,"message":"The model `x` does not exist.","type":"NotFoundError"}}"#;
        assert_eq!(
            in_words(Some(404), openai),
            "HTTP 404: The model `x` does not exist."
        );
        let vllm = r#"{"object":"error","message":"too long","type":"BadRequestError"}"#;
        assert_eq!(in_words(Some(400), vllm), "HTTP 400: too long");
        assert_eq!(in_words(None, r#"{"error":"busy"}"#), "busy");
        // Not such a body: the text as it is, its whitespace folded.
        assert_eq!(
            in_words(Some(502), "<html>\n Bad   gateway</html>"),
            "HTTP 502: <html> Bad gateway</html>"
        );
    }

    /// Every string a JSON Schema lists (`const` and `enum` values), in
    /// order.
    fn schema_words(v: &serde_json::Value, out: &mut Vec<String>) {
        use serde_json::Value;
        match v {
            Value::Object(m) => {
                if let Some(Value::String(s)) = m.get("const") {
                    out.push(s.clone());
                }
                if let Some(Value::Array(words)) = m.get("enum") {
                    out.extend(words.iter().filter_map(|w| w.as_str().map(str::to_string)));
                }
                for (key, value) in m {
                    if key != "const" && key != "enum" {
                        schema_words(value, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| schema_words(i, out)),
            _ => {}
        }
    }

    /// The variants the derives see (the JSON Schema is derived from the
    /// enum itself): `ALL` must hold each once, in order, and `as_str`
    /// must be its serialized word, or the reader would refuse a word the
    /// writer writes.
    fn check_all<T: JsonSchema + Serialize + Copy>(all: &[T], as_str: fn(T) -> &'static str) {
        let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
        let mut derived = Vec::new();
        schema_words(&schema, &mut derived);
        let listed: Vec<String> = all.iter().map(|&v| as_str(v).to_string()).collect();
        assert_eq!(derived, listed);
        for &v in all {
            assert_eq!(serde_json::to_value(v).unwrap(), as_str(v));
        }
    }

    #[test]
    fn all_holds_every_error_category_and_status_the_enums_have() {
        check_all(&ErrorCategory::ALL, ErrorCategory::as_str);
        check_all(&Status::ALL, Status::as_str);
    }

    fn identity() -> RequestIdentity {
        RequestIdentity {
            request: 3,
            tree: "t".into(),
            tree_index: 0,
            agent: "a".into(),
            turn: 1,
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
        }
    }

    #[test]
    fn derived_figures_follow_the_semantics() {
        let response = Response {
            stamps: Stamps {
                sent: Some(2_000),
                headers: Some(2_500),
                first_byte: Some(2_600),
                first_content: Some(3_000),
                content: vec![3_000, 4_000, 6_000],
                done: Some(7_000),
            },
            http_status: Some(200),
            ..Response::default()
        };
        let r = RequestRecord::new(identity(), &response);
        assert_eq!(r.ttft_s, Some(1e-6));
        assert_eq!(r.e2e_s, Some(5e-6));
        assert_eq!(r.lateness_s, Some(1e-6));
        assert_eq!(r.queue_wait_s, 5e-7);
        assert_eq!(r.itl_s, vec![1e-6, 2e-6]);
        // No usage: three counted chunks; TPOT = (7000 - 3000) / 2.
        assert_eq!(
            (r.output_tokens, r.output_tokens_source),
            (3, TokenSource::Counted)
        );
        assert_eq!(r.tpot_s, Some(2e-6));
        assert_eq!(r.input_tokens_source, TokenSource::Planned);
        assert_eq!(r.status, "ok");
    }
}
