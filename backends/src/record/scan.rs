//! What a response said, read from its bytes as they pass through: the
//! answer's text and usage, or its error, in the shape the openai-log
//! reader takes (docs/formats/openai-log.md).
//!
//! Owns [`ResponseScan`], fed every body chunk in order and asked once
//! at the end. Four shapes: an OpenAI chat stream (SSE chunks: the
//! `delta.content`s joined, the `delta.tool_calls` pieces joined by their
//! `index` into whole calls, the last `usage`), an Anthropic Messages
//! stream (SSE events: the content blocks rebuilt, text and `tool_use`
//! with its input, and the usage of `message_start` updated by
//! `message_delta`), an OpenAI Responses stream (its output items rebuilt
//! by `super::responses_scan`), or a whole JSON body (a chat completion, a
//! Messages `message` or a Responses `response`, kept as it is). What it
//! keeps is capped at [`KEEP_CAP`] bytes; past it the rest still passes through the proxy, uncaptured.
//! A stream line that is not SSE (a field other than `data`, `event`, `id`
//! or `retry`, a comment or a blank) or whose `data` is neither JSON nor
//! `[DONE]` is counted ([`Scanned::malformed`]), so the capture line says
//! what it could not read. Knows no HTTP and no I/O.

use serde_json::{json, Map, Value};

use super::responses_scan::ResponsesStream;

/// The most bytes of a response's text (or of a whole body) kept for the
/// capture.
pub const KEEP_CAP: usize = 16 << 20;

/// The longest SSE line kept whole (a longer one is skipped, and the
/// response marked truncated).
const LINE_CAP: usize = 1 << 20;

/// The response's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    ChatStream,
    MessagesStream,
    /// An OpenAI Responses stream (`/v1/responses`).
    ResponsesStream,
    Whole,
}

/// One Messages content block being rebuilt.
#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: Value,
        name: Value,
        json: String,
    },
}

/// What a response's bytes said so far.
#[derive(Debug)]
pub struct ResponseScan {
    shape: Shape,
    /// The SSE line not yet ended.
    line: Vec<u8>,
    /// A chat stream's text.
    text: String,
    /// A chat stream's tool calls, by their `index`: id, name, arguments.
    calls: Vec<(u64, String, String, String)>,
    /// A Messages stream's blocks, by their index.
    blocks: Vec<(u64, Block)>,
    /// A Responses stream's items.
    responses: ResponsesStream,
    usage: Option<Map<String, Value>>,
    /// A whole body.
    whole: Vec<u8>,
    error: Option<String>,
    kept: usize,
    truncated: bool,
    malformed: u64,
}

/// What a finished scan says.
#[derive(Debug, Default)]
pub struct Scanned {
    /// The answer (a short-form `{content, usage}` object, or the whole
    /// JSON body).
    pub response: Option<Value>,
    /// An error object or event's message.
    pub error: Option<String>,
    pub truncated: bool,
    /// Stream lines that were not SSE, or whose `data` was not JSON.
    pub malformed: u64,
}

impl ResponseScan {
    pub fn new(shape: Shape) -> ResponseScan {
        ResponseScan {
            shape,
            line: Vec::new(),
            text: String::new(),
            calls: Vec::new(),
            blocks: Vec::new(),
            responses: ResponsesStream::default(),
            usage: None,
            whole: Vec::new(),
            error: None,
            kept: 0,
            truncated: false,
            malformed: 0,
        }
    }

    /// Reads the next bytes of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.shape == Shape::Whole {
            if self.whole.len() + bytes.len() <= KEEP_CAP {
                self.whole.extend_from_slice(bytes);
            } else {
                self.truncated = true;
            }
            return;
        }
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            let (head, tail) = rest.split_at(at);
            if self.line.len() + head.len() <= LINE_CAP {
                self.line.extend_from_slice(head);
                let line = std::mem::take(&mut self.line);
                self.on_line(&line);
                self.line = line;
            } else {
                self.truncated = true;
            }
            self.line.clear();
            rest = tail.get(1..).unwrap_or_default();
        }
        if self.line.len() + rest.len() <= LINE_CAP {
            self.line.extend_from_slice(rest);
        } else {
            self.truncated = true;
            self.line.clear();
        }
    }

    fn on_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b":") {
            return;
        }
        let (field, payload) = match line.iter().position(|&b| b == b':') {
            Some(at) => (&line[..at], &line[at + 1..]),
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {}
            b"event" | b"id" | b"retry" => return,
            _ => {
                self.malformed += 1;
                return;
            }
        }
        let payload = payload.strip_prefix(b" ").unwrap_or(payload);
        if payload == b"[DONE]" {
            return;
        }
        let Ok(value) = serde_json::from_slice::<Value>(payload) else {
            self.malformed += 1;
            return;
        };
        if let Some(error) = value.get("error") {
            self.error = Some(error_message(error));
            return;
        }
        match self.shape {
            Shape::ChatStream => self.on_chat_chunk(value),
            Shape::MessagesStream => self.on_messages_event(value),
            Shape::ResponsesStream => {
                let (kept, truncated) = (&mut self.kept, &mut self.truncated);
                self.responses
                    .event(value, &mut |text| fits(kept, truncated, text));
            }
            Shape::Whole => {}
        }
    }

    fn keep(&mut self, text: &str) -> bool {
        fits(&mut self.kept, &mut self.truncated, text)
    }

    fn on_chat_chunk(&mut self, value: Value) {
        let delta = value
            .pointer("/choices/0/delta/content")
            .and_then(Value::as_str);
        if let Some(text) = delta {
            if self.keep(text) {
                self.text.push_str(text);
            }
        }
        let calls = value.pointer("/choices/0/delta/tool_calls");
        for call in calls.and_then(Value::as_array).into_iter().flatten() {
            self.on_call_delta(call);
        }
        if let Some(Value::Object(usage)) = value.get("usage") {
            self.usage = Some(usage.clone());
        }
    }

    /// A piece of a chat tool call: its first delta names it (`id`,
    /// `function.name`), later ones add to its `function.arguments`.
    fn on_call_delta(&mut self, call: &Value) {
        let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
        let piece = |pointer: &str| call.pointer(pointer).and_then(Value::as_str).unwrap_or("");
        let (id, name, arguments) = (
            piece("/id"),
            piece("/function/name"),
            piece("/function/arguments"),
        );
        if !self.keep(id) || !self.keep(name) || !self.keep(arguments) {
            return;
        }
        let at = match self.calls.iter().position(|c| c.0 == index) {
            Some(at) => at,
            None => {
                self.calls
                    .push((index, String::new(), String::new(), String::new()));
                self.calls.len() - 1
            }
        };
        let (_, i, n, a) = &mut self.calls[at];
        i.push_str(id);
        n.push_str(name);
        a.push_str(arguments);
    }

    fn on_messages_event(&mut self, value: Value) {
        let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
        match value.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                if let Some(Value::Object(usage)) = value.pointer("/message/usage") {
                    self.usage = Some(usage.clone());
                }
            }
            Some("message_delta") => {
                if let Some(Value::Object(usage)) = value.get("usage") {
                    let merged = self.usage.get_or_insert_with(Map::new);
                    for (k, v) in usage {
                        merged.insert(k.clone(), v.clone());
                    }
                }
            }
            Some("content_block_start") => {
                let block = value.get("content_block");
                let kind = block.and_then(|b| b.get("type")).and_then(Value::as_str);
                let field = |name: &str| {
                    block
                        .and_then(|b| b.get(name))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                let block = match kind {
                    Some("text") => {
                        Block::Text(field("text").as_str().unwrap_or_default().to_string())
                    }
                    Some("tool_use") => Block::ToolUse {
                        id: field("id"),
                        name: field("name"),
                        json: String::new(),
                    },
                    _ => return,
                };
                self.blocks.push((index, block));
            }
            Some("content_block_delta") => {
                let delta = value.get("delta");
                let piece = delta
                    .and_then(|d| d.get("text").or_else(|| d.get("partial_json")))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                if !self.keep(&piece) {
                    return;
                }
                match self.blocks.iter_mut().rev().find(|(i, _)| *i == index) {
                    Some((_, Block::Text(text))) => text.push_str(&piece),
                    Some((_, Block::ToolUse { json, .. })) => json.push_str(&piece),
                    None => {}
                }
            }
            _ => {}
        }
    }

    /// What the response said, at its end (or where it was cut).
    pub fn finish(mut self, status: Option<u16>) -> Scanned {
        let ok = status.is_some_and(|s| (200..300).contains(&s));
        let response = match self.shape {
            Shape::ChatStream => ok.then(|| {
                let mut r = Map::new();
                r.insert(
                    "content".into(),
                    Value::String(std::mem::take(&mut self.text)),
                );
                if !self.calls.is_empty() {
                    let calls: Vec<Value> = std::mem::take(&mut self.calls)
                        .into_iter()
                        .map(|(_, id, name, arguments)| {
                            json!({"id": id, "type": "function",
                                   "function": {"name": name, "arguments": arguments}})
                        })
                        .collect();
                    r.insert("tool_calls".into(), Value::Array(calls));
                }
                if let Some(usage) = self.usage.take() {
                    r.insert("usage".into(), Value::Object(usage));
                }
                Value::Object(r)
            }),
            Shape::MessagesStream => ok.then(|| {
                let blocks: Vec<Value> = std::mem::take(&mut self.blocks)
                    .into_iter()
                    .map(|(_, b)| match b {
                        Block::Text(text) => json!({"type": "text", "text": text}),
                        Block::ToolUse { id, name, json } => {
                            let input = serde_json::from_str::<Value>(&json)
                                .unwrap_or_else(|_| Value::Object(Map::new()));
                            json!({"type": "tool_use", "id": id, "name": name, "input": input})
                        }
                    })
                    .collect();
                let mut r = Map::new();
                r.insert("content".into(), Value::Array(blocks));
                if let Some(usage) = self.usage.take() {
                    r.insert("usage".into(), Value::Object(usage));
                }
                Value::Object(r)
            }),
            Shape::ResponsesStream => {
                let stream = std::mem::take(&mut self.responses);
                self.error = self.error.take().or(stream.error.clone());
                ok.then(|| stream.finish())
            }
            Shape::Whole => {
                let parsed = (!self.truncated)
                    .then(|| serde_json::from_slice::<Value>(&self.whole).ok())
                    .flatten();
                match parsed {
                    Some(value) if ok => Some(value),
                    Some(value) => {
                        if let Some(error) = value.get("error") {
                            self.error = Some(error_message(error));
                        }
                        None
                    }
                    None => None,
                }
            }
        };
        Scanned {
            response,
            error: self.error,
            truncated: self.truncated,
            malformed: self.malformed,
        }
    }
}

/// Whether `text` still fits the cap on what is kept (counting it when it
/// does; marking the response truncated when not).
fn fits(kept: &mut usize, truncated: &mut bool, text: &str) -> bool {
    if *kept + text.len() > KEEP_CAP {
        *truncated = true;
        return false;
    }
    *kept += text.len();
    true
}

/// An error object's message (OpenAI `{message, type}`, Anthropic
/// `{type, message}`), or the value itself as text.
fn error_message(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_string(),
        None => match error {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(shape: Shape, pieces: &[&str], status: u16) -> Scanned {
        let mut s = ResponseScan::new(shape);
        for p in pieces {
            s.feed(p.as_bytes());
        }
        s.finish(Some(status))
    }

    #[test]
    fn a_chat_stream_split_anywhere_gives_its_text_and_usage() {
        let body = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n\
                    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n\
                    data: [DONE]\n\n";
        for cut in [1, 7, 40, body.len() - 3] {
            let (a, b) = body.split_at(cut);
            let out = scan(Shape::ChatStream, &[a, b], 200);
            let r = out.response.expect("response");
            assert_eq!(r["content"], "Hello");
            assert_eq!(r["usage"]["completion_tokens"], 2);
            assert!(out.error.is_none() && !out.truncated);
        }
    }

    #[test]
    fn a_chat_stream_rebuilds_its_tool_calls() {
        let chunks = [
            r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"p\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"ls","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
        ];
        let body: Vec<String> = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        let pieces: Vec<&str> = body.iter().map(String::as_str).collect();
        let out = scan(Shape::ChatStream, &pieces, 200);
        let r = out.response.expect("response");
        assert_eq!(r["content"], "");
        assert_eq!(
            r["tool_calls"],
            json!([
                {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{\"p\":1}"}},
                {"id": "call_2", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ])
        );
    }

    #[test]
    fn a_messages_stream_rebuilds_text_and_tool_use_blocks() {
        let events = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":4,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Reading."}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pa"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"th\":\"a.rs\"}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let body: String = events
            .iter()
            .map(|e| format!("event: x\r\ndata: {e}\r\n\r\n"))
            .collect();
        let out = scan(Shape::MessagesStream, &[&body], 200);
        let r = out.response.expect("response");
        assert_eq!(r["content"][0], json!({"type": "text", "text": "Reading."}));
        assert_eq!(r["content"][1]["input"], json!({"path": "a.rs"}));
        assert_eq!(r["content"][1]["name"], "read");
        assert_eq!(r["usage"]["input_tokens"], 10);
        assert_eq!(r["usage"]["output_tokens"], 9);
    }

    #[test]
    fn a_responses_stream_split_anywhere_gives_its_items_and_usage() {
        let events = [
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_7","object":"response","status":"in_progress","output":[],"usage":null}}"#,
            r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
            r#"{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi "}"#,
            r#"{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"there"}"#,
            r#"{"type":"response.completed","sequence_number":4,"response":{"id":"resp_7","object":"response","status":"completed","usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11}}}"#,
        ];
        let body: String = events
            .iter()
            .map(|e| format!("event: x\ndata: {e}\n\n"))
            .collect();
        for cut in [1, 50, body.len() / 2, body.len() - 2] {
            let (a, b) = body.split_at(cut);
            let out = scan(Shape::ResponsesStream, &[a, b], 200);
            let r = out.response.expect("response");
            assert_eq!(r["id"], "resp_7");
            assert_eq!(r["output"][0]["content"][0]["text"], "Hi there");
            assert_eq!(r["usage"]["input_tokens"], 9);
            assert!(out.error.is_none() && out.malformed == 0);
        }
    }

    #[test]
    fn errors_in_a_body_or_a_stream_are_kept_as_messages() {
        let out = scan(
            Shape::Whole,
            &[r#"{"error":{"message":"too long","type":"BadRequestError"}}"#],
            400,
        );
        assert!(out.response.is_none());
        assert_eq!(out.error.as_deref(), Some("too long"));
        let out = scan(
            Shape::ChatStream,
            &["data: {\"error\":{\"message\":\"boom\"}}\n\n"],
            200,
        );
        assert_eq!(out.error.as_deref(), Some("boom"));
    }

    #[test]
    fn a_whole_body_past_the_cap_is_marked_truncated_not_kept() {
        let mut s = ResponseScan::new(Shape::Whole);
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..17 {
            s.feed(&chunk);
        }
        let out = s.finish(Some(200));
        assert!(out.truncated && out.response.is_none());
    }

    /// Issue 27: a malformed stream line is counted, not dropped unseen;
    /// comments, blanks and the other SSE fields are not malformed.
    #[test]
    fn malformed_stream_lines_are_counted() {
        let body = ": keep-alive\n\
                    event: x\nid: 1\nretry: 5\n\n\
                    data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\n\
                    data: {\"choices\":[{\"delta\":\n\n\
                    garbage without a field\n\
                    data: [DONE]\n\n";
        let out = scan(Shape::ChatStream, &[body], 200);
        assert_eq!(out.malformed, 2);
        assert_eq!(out.response.expect("response")["content"], "ok");
        let clean = scan(
            Shape::MessagesStream,
            &["event: ping\ndata: {\"type\":\"ping\"}\n\n"],
            200,
        );
        assert_eq!(clean.malformed, 0);
    }
}
