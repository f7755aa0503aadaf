//! Server-sent events of an OpenAI Responses stream (`--api responses`),
//! read without allocating per chunk.
//!
//! Owns telling what one `data:` payload of a `/v1/responses` stream
//! holds: generated text (a non-empty `response.output_text.delta`: the
//! first one is the first token), the end of the response (a terminal
//! event: `response.completed`, `response.incomplete` or
//! `response.failed`), its usage, an error, or something malformed.
//! Splitting body bytes into lines is [`super::sse`]'s, shared with the
//! other streams; this module never reads a clock and never touches the
//! record.
//!
//! The event's type is read from its payload's quoted `type` value (a
//! quote inside text is escaped, so the search cannot hit text). The
//! common payload (a delta) is classified by substring search; only the
//! terminal events and `error` (once a stream) are parsed as JSON. Other
//! event types (`response.created`, item and part events, reasoning
//! deltas, and types added later) say nothing. OpenAI's stream has no
//! `[DONE]`; one from a server that adds it ends the stream too. Any
//! other payload that is not a JSON object (in valid UTF-8), or a
//! terminal event that does not parse, is malformed.

use memchr::memmem;
use serde::Deserialize;

use super::sse::{has_text, is_json_object_text};

/// A response's token counts: `input_tokens` is the whole prompt, of which
/// `input_tokens_details.cached_tokens` came from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct ResponsesUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct InputDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

impl ResponsesUsage {
    pub fn cached_tokens(&self) -> Option<u64> {
        self.input_tokens_details.and_then(|d| d.cached_tokens)
    }
}

/// What one `data:` payload said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// A non-empty output text delta.
    pub content: bool,
    /// A terminal event: the response is complete (or failed).
    pub end: bool,
    pub usage: Option<ResponsesUsage>,
    /// An `error` event's, or a failed response's, error.
    pub error: Option<EventError>,
    pub malformed: bool,
}

/// An error a stream reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    /// Its `code`, such as `server_error` or `rate_limit_exceeded`.
    pub code: Option<String>,
    pub message: String,
}

#[derive(Deserialize)]
struct Terminal {
    #[serde(default)]
    response: Option<Finished>,
    /// An `error` event's own fields.
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct Finished {
    #[serde(default)]
    usage: Option<ResponsesUsage>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Searchers built once (see `sse.rs`).
struct Keys {
    text_delta: memmem::Finder<'static>,
    delta: memmem::Finder<'static>,
    completed: memmem::Finder<'static>,
    incomplete: memmem::Finder<'static>,
    failed: memmem::Finder<'static>,
    error: memmem::Finder<'static>,
}

static KEYS: std::sync::LazyLock<Keys> = std::sync::LazyLock::new(|| Keys {
    text_delta: memmem::Finder::new(b"\"response.output_text.delta\""),
    delta: memmem::Finder::new(b"\"delta\""),
    completed: memmem::Finder::new(b"\"response.completed\""),
    incomplete: memmem::Finder::new(b"\"response.incomplete\""),
    failed: memmem::Finder::new(b"\"response.failed\""),
    error: memmem::Finder::new(b"\"error\""),
});

/// Classifies one payload (the text after `data:`).
pub fn classify(payload: &[u8]) -> Event {
    let payload = payload.trim_ascii();
    if payload == b"[DONE]" {
        return Event {
            end: true,
            ..Event::default()
        };
    }
    if !is_json_object_text(payload) {
        return Event {
            malformed: true,
            ..Event::default()
        };
    }
    let keys = &*KEYS;
    let has = |key: &memmem::Finder<'_>| key.find(payload).is_some();
    if has(&keys.text_delta) {
        return Event {
            content: has_text(payload, &keys.delta),
            ..Event::default()
        };
    }
    let failed = has(&keys.failed);
    let end = failed || has(&keys.completed) || has(&keys.incomplete);
    // An `error` event's type is the quoted `"error"`; a terminal event
    // may also hold an `"error"` key (null unless it failed).
    if !end && !has(&keys.error) {
        return Event::default();
    }
    match serde_json::from_slice::<Terminal>(payload) {
        Ok(t) => {
            let (usage, failure) = match t.response {
                Some(r) => (r.usage, r.error),
                None => (None, None),
            };
            let error = match (end, failure) {
                (true, Some(e)) if failed => Some(EventError {
                    code: e.code,
                    message: e.message.unwrap_or_else(|| "the response failed".into()),
                }),
                (true, _) if failed => Some(EventError {
                    code: None,
                    message: "the response failed".into(),
                }),
                (true, _) => None,
                (false, _) => t.message.map(|message| EventError {
                    code: t.code,
                    message,
                }),
            };
            Event {
                end,
                usage,
                error,
                ..Event::default()
            }
        }
        Err(_) => Event {
            malformed: true,
            ..Event::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_deltas_are_content_and_the_rest_is_not() {
        let delta = br#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}"#;
        assert_eq!(
            classify(delta),
            Event {
                content: true,
                ..Event::default()
            }
        );
        let empty = br#"{"type":"response.output_text.delta","output_index":0,"delta":""}"#;
        assert_eq!(classify(empty), Event::default());
        let quoted =
            br#"{"type":"response.output_text.delta","delta":"say \"response.completed\""}"#;
        let e = classify(quoted);
        assert!(e.content && !e.end);
        for other in [
            &br#"{"type":"response.created","response":{"id":"r","status":"in_progress","error":null,"usage":null}}"#[..],
            br#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message"}}"#,
            br#"{"type":"response.reasoning_summary_text.delta","delta":"thinking"}"#,
            br#"{"type":"response.function_call_arguments.delta","delta":"{\"a\""}"#,
            br#"{"type":"something.new"}"#,
        ] {
            assert_eq!(classify(other), Event::default(), "{other:?}");
        }
    }

    #[test]
    fn a_terminal_event_ends_the_stream_with_its_usage() {
        let done = br#"{"type":"response.completed","sequence_number":9,"response":{"id":"r","status":"completed","error":null,"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":16},"output_tokens":4,"total_tokens":34}}}"#;
        let e = classify(done);
        assert!(e.end && e.error.is_none() && !e.malformed);
        let usage = e.usage.expect("usage");
        assert_eq!(
            (
                usage.input_tokens,
                usage.cached_tokens(),
                usage.output_tokens
            ),
            (Some(30), Some(16), Some(4))
        );
        let cut = br#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":8}}}"#;
        let e = classify(cut);
        assert!(e.end && e.error.is_none());
        assert_eq!(e.usage.and_then(|u| u.output_tokens), Some(8));
    }

    #[test]
    fn errors_and_malformed_payloads() {
        let failed = br#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#;
        let e = classify(failed);
        assert!(e.end);
        assert_eq!(
            e.error,
            Some(EventError {
                code: Some("server_error".into()),
                message: "boom".into()
            })
        );
        let error =
            br#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#;
        let e = classify(error);
        assert!(!e.end);
        assert_eq!(e.error.map(|e| e.message).as_deref(), Some("slow down"));
        assert!(classify(b"[DONE]").end);
        assert!(classify(b"DONE").malformed);
        assert!(classify(b"{not json").malformed);
        assert!(
            classify(br#"{"type":"response.completed","response":{"usage":{"input_tokens":"x"}}}"#)
                .malformed
        );
    }
}
