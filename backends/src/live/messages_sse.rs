//! Server-sent events of an Anthropic Messages stream, read without
//! allocating per chunk.
//!
//! Owns telling what one `data:` payload of a `/v1/messages` stream holds:
//! a text delta (content), the end of the message, usage, an error, or
//! something malformed; and adding up the usage a stream reports in
//! pieces ([`MessagesUsage`]). Splitting body bytes into lines is
//! [`super::sse`]'s (`LineSplitter`, `data_of`), shared with the OpenAI
//! streams; this module never reads a clock (the caller stamps each read
//! before handing it over) and never touches the record.
//!
//! The event's type is read from its payload (`"type":"..."`, which every
//! Anthropic event carries); `event:` lines are not needed. The common
//! payload (`content_block_delta`) is classified by substring searches;
//! only `message_start`, `message_delta` and `error` (once or twice a
//! stream) are parsed as JSON. Unknown event types are ignored, as the
//! API asks of clients. A payload is malformed when it is not a JSON object
//! (`{` ... `}`) in valid UTF-8, or when a payload that had to be parsed does not parse.

use memchr::memmem;
use serde::Deserialize;

use super::sse::{has_text, is_json_object_text};

/// Token counts a Messages stream reported, field by field: `message_start`
/// carries the input side, `message_delta` the output (and, from some
/// servers, the input side again). A later value of a field replaces an
/// earlier one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct MessagesUsage {
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
}

impl MessagesUsage {
    /// Takes every field `later` reports.
    pub fn merge(&mut self, later: MessagesUsage) {
        self.input_tokens = later.input_tokens.or(self.input_tokens);
        self.cache_read_input_tokens = later
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = later
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
        self.output_tokens = later.output_tokens.or(self.output_tokens);
    }

    /// The whole prompt: `input_tokens` counts only the tokens after the
    /// last cache breakpoint, so the prompt is `input_tokens +
    /// cache_read_input_tokens + cache_creation_input_tokens`. `None` when
    /// none of them was reported.
    pub fn prompt_tokens(&self) -> Option<u64> {
        let parts = [
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        ];
        parts
            .iter()
            .any(Option::is_some)
            .then(|| parts.iter().flatten().sum())
    }

    /// Prompt tokens served from the cache: `cache_read_input_tokens`.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.cache_read_input_tokens
    }

    pub fn completion_tokens(&self) -> Option<u64> {
        self.output_tokens
    }
}

/// An `error` event's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventError {
    /// Its `type`, such as `overloaded_error`.
    pub kind: Option<String>,
    pub message: String,
}

/// What one `data:` payload said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Event {
    /// A non-empty text (or thinking) delta.
    pub content: bool,
    /// `message_delta` set a `stop_reason`.
    pub finish: bool,
    /// `message_stop`: the message is complete.
    pub stop: bool,
    pub usage: Option<MessagesUsage>,
    pub error: Option<EventError>,
    pub malformed: bool,
}

#[derive(Deserialize)]
struct Rare {
    #[serde(default)]
    message: Option<StartedMessage>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Searchers built once (see `sse.rs`). An event type, quoted, can only be
/// the payload's `type` value: quotes inside text are escaped.
struct Keys {
    content_block_delta: memmem::Finder<'static>,
    content_block_start: memmem::Finder<'static>,
    message_start: memmem::Finder<'static>,
    message_delta: memmem::Finder<'static>,
    message_stop: memmem::Finder<'static>,
    error: memmem::Finder<'static>,
    text: memmem::Finder<'static>,
    thinking: memmem::Finder<'static>,
}

static KEYS: std::sync::LazyLock<Keys> = std::sync::LazyLock::new(|| Keys {
    content_block_delta: memmem::Finder::new(b"\"content_block_delta\""),
    content_block_start: memmem::Finder::new(b"\"content_block_start\""),
    message_start: memmem::Finder::new(b"\"message_start\""),
    message_delta: memmem::Finder::new(b"\"message_delta\""),
    message_stop: memmem::Finder::new(b"\"message_stop\""),
    error: memmem::Finder::new(b"\"error\""),
    text: memmem::Finder::new(b"\"text\""),
    thinking: memmem::Finder::new(b"\"thinking\""),
});

/// Classifies one payload (the text after `data:`).
pub fn classify(payload: &[u8]) -> Event {
    let payload = payload.trim_ascii();
    if !is_json_object_text(payload) {
        return Event {
            malformed: true,
            ..Event::default()
        };
    }
    let keys = &*KEYS;
    let has = |key: &memmem::Finder<'_>| key.find(payload).is_some();
    let text = || has_text(payload, &keys.text) || has_text(payload, &keys.thinking);
    if has(&keys.content_block_delta) || has(&keys.content_block_start) {
        return Event {
            content: text(),
            ..Event::default()
        };
    }
    if has(&keys.message_stop) {
        return Event {
            stop: true,
            ..Event::default()
        };
    }
    let rare = has(&keys.message_start) || has(&keys.message_delta) || has(&keys.error);
    if !rare {
        // `ping`, `content_block_stop`, and types added later.
        return Event::default();
    }
    match serde_json::from_slice::<Rare>(payload) {
        Ok(r) => {
            let mut usage = r.message.and_then(|m| m.usage);
            if let Some(later) = r.usage {
                usage
                    .get_or_insert_with(MessagesUsage::default)
                    .merge(later);
            }
            Event {
                finish: r.delta.is_some_and(|d| d.stop_reason.is_some()),
                usage,
                error: r.error.map(|e| EventError {
                    message: e.message.unwrap_or_else(|| "error".into()),
                    kind: e.kind,
                }),
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
    fn deltas_are_content_and_the_rest_is_not() {
        let delta = br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#;
        let e = classify(delta);
        assert!(e.content && !e.stop && !e.malformed && e.usage.is_none());
        let empty = br#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#;
        assert_eq!(classify(empty), Event::default());
        let thinking = br#"{"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}}"#;
        assert!(classify(thinking).content);
        let quoted = br#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"say \"message_stop\""}}"#;
        let e = classify(quoted);
        assert!(e.content && !e.stop);
        assert_eq!(classify(br#"{"type": "ping"}"#), Event::default());
        assert_eq!(
            classify(br#"{"type":"content_block_stop","index":0}"#),
            Event::default()
        );
        assert!(classify(br#"{"type":"message_stop"}"#).stop);
        assert_eq!(classify(br#"{"type":"something_new"}"#), Event::default());
    }

    #[test]
    fn usage_adds_up_across_start_and_delta() {
        let start = br#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":1}}}"#;
        let mut usage = classify(start).usage.unwrap();
        let delta = br#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#;
        let e = classify(delta);
        assert!(e.finish);
        usage.merge(e.usage.unwrap());
        assert_eq!(usage.prompt_tokens(), Some(28));
        assert_eq!(usage.cached_tokens(), Some(20));
        assert_eq!(usage.completion_tokens(), Some(15));
        assert_eq!(MessagesUsage::default().prompt_tokens(), None);
    }

    #[test]
    fn the_documented_stream_split_into_small_reads() {
        let stream = include_str!("../../../testdata/messages/documented.sse");
        let mut splitter = super::super::sse::LineSplitter::default();
        let (mut content, mut stops, mut pings) = (0, 0, 0);
        let mut usage = MessagesUsage::default();
        for piece in stream.as_bytes().chunks(7) {
            splitter
                .feed(piece, |line| {
                    let Some(data) = super::super::sse::data_of(line) else {
                        return;
                    };
                    let event = classify(data);
                    assert!(!event.malformed && event.error.is_none(), "{event:?}");
                    content += usize::from(event.content);
                    stops += usize::from(event.stop);
                    pings += usize::from(event == Event::default());
                    if let Some(u) = event.usage {
                        usage.merge(u);
                    }
                })
                .expect("short lines");
        }
        assert_eq!((content, stops), (2, 1));
        // ping, both block starts and stops, both input_json deltas.
        assert_eq!(pings, 7);
        assert_eq!(
            (
                usage.prompt_tokens(),
                usage.cached_tokens(),
                usage.completion_tokens()
            ),
            (Some(28), Some(20), Some(15))
        );
    }

    #[test]
    fn errors_and_malformed_payloads() {
        let e = classify(
            br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        );
        assert_eq!(
            e.error,
            Some(EventError {
                kind: Some("overloaded_error".into()),
                message: "Overloaded".into()
            })
        );
        assert!(classify(b"{not json").malformed);
        assert!(classify(b"[DONE]").malformed);
        assert!(classify(br#"{"type":"message_delta","usage":{"output_tokens":"x"}}"#).malformed);
    }
}
