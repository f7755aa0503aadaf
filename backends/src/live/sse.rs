//! Server-sent events of an OpenAI-compatible stream, read without
//! allocating per chunk.
//!
//! Owns splitting body bytes into lines and telling, cheaply, what each
//! `data:` payload holds: generated content, the end of generation, the
//! usage block, an error, or something malformed. The caller stamps the
//! time *before* handing bytes here (docs/run.md): nothing in this
//! module reads a clock.
//!
//! The common chunk (one token of content) is classified by a few substring
//! searches; only the rare payloads that carry `usage` or `error` are
//! parsed as JSON. A payload is malformed when it is neither `[DONE]` nor a
//! JSON object (`{` ... `}`), when it is not valid UTF-8 (JSON text is
//! UTF-8: invalid bytes inside a string are not a token), or when a payload
//! that had to be parsed does not parse.
//!
//! Cap: one line may hold at most [`SSE_LINE_CAP`] bytes; a longer line is
//! an error ([`LineTooLong`]) and the splitter never holds more than the
//! cap.
//!
//! The line splitter, [`data_of`] and the non-empty-string test are shared
//! with [`super::messages_sse`], which classifies Anthropic Messages events.

use memchr::memmem;
use serde::Deserialize;

/// Token counts the server reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

impl Usage {
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }
}

/// What one `data:` payload said.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Payload {
    /// Generated text or reasoning was in it.
    pub content: bool,
    /// A `finish_reason` was set.
    pub finish: bool,
    /// `data: [DONE]`.
    pub done: bool,
    pub usage: Option<Usage>,
    /// An `error` object's message.
    pub error: Option<String>,
    pub malformed: bool,
}

#[derive(Deserialize)]
struct Rare {
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<ErrorBody>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ErrorBody {
    Object {
        #[serde(default)]
        message: Option<String>,
    },
    Text(String),
}

/// Searchers built once: building one per search was the top symbol of
/// the client's profile.
struct Keys {
    content: memmem::Finder<'static>,
    reasoning_content: memmem::Finder<'static>,
    reasoning: memmem::Finder<'static>,
    text: memmem::Finder<'static>,
    finish_reason: memmem::Finder<'static>,
    usage: memmem::Finder<'static>,
    error: memmem::Finder<'static>,
}

static KEYS: std::sync::LazyLock<Keys> = std::sync::LazyLock::new(|| Keys {
    content: memmem::Finder::new(b"\"content\""),
    reasoning_content: memmem::Finder::new(b"\"reasoning_content\""),
    reasoning: memmem::Finder::new(b"\"reasoning\""),
    text: memmem::Finder::new(b"\"text\""),
    finish_reason: memmem::Finder::new(b"\"finish_reason\""),
    usage: memmem::Finder::new(b"\"usage\""),
    error: memmem::Finder::new(b"\"error\""),
});

/// True when the finder's key occurs followed by a non-empty string value,
/// e.g. `"content":"x"` (not `"content":""` nor `"content":null`).
pub(crate) fn has_text(payload: &[u8], key: &memmem::Finder<'_>) -> bool {
    let mut rest = payload;
    while let Some(pos) = key.find(rest) {
        let after = &rest[pos + key.needle().len()..];
        let value = after
            .iter()
            .position(|b| !b.is_ascii_whitespace() && *b != b':')
            .map_or(&[][..], |i| &after[i..]);
        if value.first() == Some(&b'"') && value.get(1).is_some_and(|&b| b != b'"') {
            return true;
        }
        rest = after;
    }
    false
}

/// The key of the model a stream's payloads name.
pub(crate) static MODEL_KEY: std::sync::LazyLock<memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memmem::Finder::new(b"\"model\""));

/// The string value of the first `key` in `payload` that is a key (followed
/// by `:`) and holds a string (`"model":"m"` gives `m`), unescaped; `None`
/// when there is none. Borrowed unless the value holds an escape. Read on
/// a stream's first payload (the model), and per chunk only under
/// `--history live` (the generated text, `history.rs`).
pub(crate) fn string_value<'a>(
    payload: &'a [u8],
    key: &memmem::Finder<'_>,
) -> Option<std::borrow::Cow<'a, str>> {
    let mut rest = payload;
    while let Some(pos) = key.find(rest) {
        let after = &rest[pos + key.needle().len()..];
        rest = after;
        let Some(value) = after.trim_ascii_start().strip_prefix(b":") else {
            continue;
        };
        let value = value.trim_ascii_start();
        if value.first() != Some(&b'"') {
            continue;
        }
        // The closing quote: the first one no backslash escapes.
        let mut end = 1;
        while end < value.len() {
            match value[end] {
                b'\\' => end += 2,
                b'"' => break,
                _ => end += 1,
            }
        }
        let quoted = value.get(..=end)?;
        if quoted.contains(&b'\\') {
            return serde_json::from_slice::<String>(quoted)
                .ok()
                .map(std::borrow::Cow::Owned);
        }
        return std::str::from_utf8(&quoted[1..end])
            .ok()
            .map(std::borrow::Cow::Borrowed);
    }
    None
}

/// Classifies one payload (the text after `data:`).
pub fn classify(payload: &[u8]) -> Payload {
    let payload = payload.trim_ascii();
    if payload == b"[DONE]" {
        return Payload {
            done: true,
            ..Payload::default()
        };
    }
    if !is_json_object_text(payload) {
        return Payload {
            malformed: true,
            ..Payload::default()
        };
    }
    let keys = &*KEYS;
    let mut out = Payload {
        content: has_text(payload, &keys.content)
            || has_text(payload, &keys.reasoning_content)
            || has_text(payload, &keys.reasoning)
            || has_text(payload, &keys.text),
        finish: has_text(payload, &keys.finish_reason),
        ..Payload::default()
    };
    let rare = keys.usage.find(payload).is_some() || keys.error.find(payload).is_some();
    if rare {
        match serde_json::from_slice::<Rare>(payload) {
            Ok(r) => {
                out.usage = r.usage;
                out.error = r.error.map(|e| match e {
                    ErrorBody::Object { message } => message.unwrap_or_else(|| "error".into()),
                    ErrorBody::Text(t) => t,
                });
            }
            Err(_) => out.malformed = true,
        }
    }
    out
}

/// Could `payload` (trimmed) be a JSON object: `{` ... `}` and valid
/// UTF-8? (Shared with [`super::messages_sse`].)
pub(crate) fn is_json_object_text(payload: &[u8]) -> bool {
    payload.first() == Some(&b'{')
        && payload.last() == Some(&b'}')
        && std::str::from_utf8(payload).is_ok()
}

/// The longest SSE line accepted, in bytes (without its line end).
pub const SSE_LINE_CAP: usize = 1024 * 1024;

/// A line passed [`SSE_LINE_CAP`]: `seen` bytes of it had arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE line passed {} MiB (the cap on one line) after {seen} bytes", SSE_LINE_CAP / (1024 * 1024))]
pub struct LineTooLong {
    pub seen: usize,
}

/// Splits body bytes into lines across chunk boundaries, holding at most
/// [`SSE_LINE_CAP`] bytes of an unfinished line.
#[derive(Debug, Default)]
pub struct LineSplitter {
    partial: Vec<u8>,
}

impl LineSplitter {
    /// Feeds one body chunk; calls `on_line` with each complete line
    /// (without its `\n` or `\r\n`). A line longer than the cap is an
    /// error; the splitter must not be fed after one.
    pub fn feed(
        &mut self,
        mut chunk: &[u8],
        mut on_line: impl FnMut(&[u8]),
    ) -> Result<(), LineTooLong> {
        while let Some(pos) = memchr::memchr(b'\n', chunk) {
            let (line, rest) = chunk.split_at(pos);
            if self.partial.is_empty() {
                self.check(0, line)?;
                on_line(line.strip_suffix(b"\r").unwrap_or(line));
            } else {
                self.check(self.partial.len(), line)?;
                self.partial.extend_from_slice(line);
                let whole = std::mem::take(&mut self.partial);
                on_line(whole.strip_suffix(b"\r").unwrap_or(&whole));
                self.partial = whole;
                self.partial.clear();
            }
            chunk = &rest[1..];
        }
        self.check(self.partial.len(), chunk)?;
        self.partial.extend_from_slice(chunk);
        Ok(())
    }

    /// A line of `held` bytes then `more` is within the cap (a final `\r`,
    /// which may be the line's end, not counted).
    fn check(&self, held: usize, more: &[u8]) -> Result<(), LineTooLong> {
        let last = more.last().or(self.partial.last());
        let len = held + more.len() - usize::from(last == Some(&b'\r'));
        if len > SSE_LINE_CAP {
            Err(LineTooLong { seen: len })
        } else {
            Ok(())
        }
    }

    /// Bytes after the last newline (an unterminated final line).
    pub fn rest(&self) -> &[u8] {
        &self.partial
    }
}

/// The payload of an SSE line, if it is a `data:` field.
pub fn data_of(line: &[u8]) -> Option<&[u8]> {
    let value = line.strip_prefix(b"data:")?;
    Some(value.strip_prefix(b" ").unwrap_or(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_chunks_and_the_end() {
        let chunk = br#"{"id":"x","choices":[{"index":0,"delta":{"content":" tok"},"finish_reason":null}]}"#;
        let p = classify(chunk);
        assert!(p.content && !p.finish && !p.malformed && p.usage.is_none());
        let role = br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#;
        assert!(!classify(role).content);
        let null = br#"{"choices":[{"delta":{"content":null,"reasoning_content":"hmm"}}]}"#;
        assert!(classify(null).content, "reasoning counts as content");
        let fin = br#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#;
        assert!(classify(fin).finish);
        assert!(classify(b"[DONE]").done);
        let completion = br#"{"choices":[{"text":" a","index":0}]}"#;
        assert!(classify(completion).content);
    }

    #[test]
    fn the_model_a_payload_names_is_read_unescaped() {
        let chunk =
            br#"{"id":"c","object":"chat.completion.chunk","model":"qwen/q-0.5b","choices":[]}"#;
        assert_eq!(
            string_value(chunk, &MODEL_KEY).as_deref(),
            Some("qwen/q-0.5b")
        );
        let spaced = br#"{"model" : "m\"x\\y", "choices":[]}"#;
        assert_eq!(string_value(spaced, &MODEL_KEY).as_deref(), Some("m\"x\\y"));
        // Nested, as in a Messages stream's message_start.
        let start = br#"{"type":"message_start","message":{"model":"claude-x"}}"#;
        assert_eq!(string_value(start, &MODEL_KEY).as_deref(), Some("claude-x"));
        for none in [
            &br#"{"choices":[]}"#[..],
            br#"{"model":null}"#,
            br#"{"model":"unterminated}"#,
            br#"{"delta":{"content":"say \"model\" here"}}"#,
        ] {
            assert_eq!(
                string_value(none, &MODEL_KEY),
                None,
                "{}",
                String::from_utf8_lossy(none)
            );
        }
    }

    #[test]
    fn usage_errors_and_malformed_payloads() {
        let usage = br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8}}}"#;
        let p = classify(usage);
        let u = p.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens()),
            (Some(12), Some(3), Some(8))
        );
        let err = br#"{"error":{"message":"This model's maximum context length is 10 tokens","code":400}}"#;
        assert_eq!(
            classify(err).error.as_deref(),
            Some("This model's maximum context length is 10 tokens")
        );
        assert!(classify(b"{not json").malformed);
        assert!(classify(br#"{"usage": {"prompt_tokens": "x"}}"#).malformed);
        assert!(classify(b"hello").malformed);
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut splitter = LineSplitter::default();
        let mut lines: Vec<Vec<u8>> = Vec::new();
        for part in [&b"data: {\"a\""[..], b":1}\r\n\ndata: [DO", b"NE]\n"] {
            splitter
                .feed(part, |l| lines.push(l.to_vec()))
                .expect("short lines");
        }
        assert_eq!(
            lines,
            vec![
                b"data: {\"a\":1}".to_vec(),
                b"".to_vec(),
                b"data: [DONE]".to_vec()
            ]
        );
        assert_eq!(data_of(&lines[0]), Some(&b"{\"a\":1}"[..]));
        assert_eq!(data_of(b": comment"), None);
        assert!(splitter.rest().is_empty());
    }

    #[test]
    fn a_line_past_the_cap_is_an_error_and_memory_stays_bounded() {
        let mut splitter = LineSplitter::default();
        let piece = vec![b'x'; 16 * 1024];
        let mut fed = 0;
        let err = loop {
            match splitter.feed(&piece, |_| panic!("no line ends")) {
                Ok(()) => fed += piece.len(),
                Err(e) => break e,
            }
            assert!(
                fed <= SSE_LINE_CAP + piece.len(),
                "the cap was not enforced"
            );
        };
        assert!(err.seen > SSE_LINE_CAP, "{err}");
        assert!(
            splitter.partial.capacity() <= 2 * SSE_LINE_CAP,
            "held {} bytes",
            splitter.partial.capacity()
        );
        assert!(err
            .to_string()
            .starts_with("an SSE line passed 1 MiB (the cap on one line) after "));
        // A line of exactly the cap, split across reads, is fine.
        let mut splitter = LineSplitter::default();
        let mut lines = 0;
        for part in [&vec![b'y'; SSE_LINE_CAP - 1][..], b"y\r", b"\n"] {
            splitter
                .feed(part, |l| {
                    assert_eq!(l.len(), SSE_LINE_CAP);
                    lines += 1;
                })
                .expect("within the cap");
        }
        assert_eq!(lines, 1);
        // One line longer than the cap inside a single chunk.
        let mut one = vec![b'z'; SSE_LINE_CAP + 1];
        one.push(b'\n');
        assert!(LineSplitter::default().feed(&one, |_| {}).is_err());
    }

    #[test]
    fn invalid_utf8_in_a_payload_is_malformed() {
        let bad = b"{\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}";
        let p = classify(bad);
        assert!(p.malformed && !p.content, "{p:?}");
        let good = "{\"choices\":[{\"delta\":{\"content\":\"é\"}}]}";
        assert!(!classify(good.as_bytes()).malformed);
    }
}
