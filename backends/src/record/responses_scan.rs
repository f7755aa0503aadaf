//! An OpenAI Responses stream (`POST /v1/responses` with `"stream":
//! true`), read event by event as it passes through the proxy: the
//! response it streams, rebuilt in the shape of a non-streamed one.
//!
//! Owns [`ResponsesStream`]. Output items are rebuilt by their
//! `output_index` from the events that carry them in pieces: a message's
//! text from `response.output_text.delta`, a function call's name and
//! `call_id` from `response.output_item.added` and its arguments from
//! `response.function_call_arguments.delta`; other items (reasoning, web
//! searches) are left out. The response's `id` and `usage` come from the
//! terminal event (`response.completed`, `response.incomplete` or
//! `response.failed`, whose `response.error` is the error), or from
//! `response.created` when the stream was cut before one; an `error`
//! event's `message` is the error. The text kept is counted against the
//! caller's cap (`keep`). Knows no HTTP and no I/O.

use serde_json::{json, Map, Value};

/// One output item being rebuilt.
#[derive(Debug)]
enum Item {
    Message(String),
    FunctionCall {
        name: Value,
        call_id: Value,
        arguments: String,
    },
}

/// What a Responses stream said so far.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    /// Output items by their `output_index`.
    items: Vec<(u64, Item)>,
    id: Option<Value>,
    usage: Option<Value>,
    pub error: Option<String>,
}

impl ResponsesStream {
    /// Reads one event's JSON; `keep` says whether a piece of text still
    /// fits the capture's cap (and counts it).
    pub fn event(&mut self, value: Value, keep: &mut dyn FnMut(&str) -> bool) {
        let index = value
            .get("output_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        match value.get("type").and_then(Value::as_str) {
            Some("response.output_item.added") => {
                let item = value.get("item");
                let field = |name: &str| {
                    item.and_then(|i| i.get(name))
                        .cloned()
                        .unwrap_or(Value::Null)
                };
                let item = match field("type").as_str() {
                    Some("message") => Item::Message(String::new()),
                    Some("function_call") => Item::FunctionCall {
                        name: field("name"),
                        call_id: field("call_id"),
                        arguments: String::new(),
                    },
                    _ => return,
                };
                self.items.push((index, item));
            }
            Some(
                kind @ ("response.output_text.delta" | "response.function_call_arguments.delta"),
            ) => {
                let piece = value.get("delta").and_then(Value::as_str).unwrap_or("");
                if !keep(piece) {
                    return;
                }
                let text_delta = kind == "response.output_text.delta";
                if text_delta && !self.items.iter().any(|(i, _)| *i == index) {
                    // A server that skips `output_item.added`.
                    self.items.push((index, Item::Message(String::new())));
                }
                match self.items.iter_mut().rev().find(|(i, _)| *i == index) {
                    Some((_, Item::Message(text))) if text_delta => text.push_str(piece),
                    Some((_, Item::FunctionCall { arguments, .. })) if !text_delta => {
                        arguments.push_str(piece)
                    }
                    _ => {}
                }
            }
            Some(
                kind @ ("response.created"
                | "response.in_progress"
                | "response.completed"
                | "response.incomplete"
                | "response.failed"),
            ) => {
                let Some(response) = value.get("response") else {
                    return;
                };
                if let Some(id) = response.get("id").filter(|v| !v.is_null()) {
                    self.id = Some(id.clone());
                }
                if let Some(usage) = response.get("usage").filter(|v| v.is_object()) {
                    self.usage = Some(usage.clone());
                }
                if kind == "response.failed" {
                    let message = response
                        .pointer("/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("the response failed");
                    self.error = Some(message.to_string());
                }
            }
            Some("error") => {
                let message = value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                self.error = Some(message.to_string());
            }
            _ => {}
        }
    }

    /// The response rebuilt: `{"id", "output": [items], "usage"}` (the
    /// fields a non-streamed response has that a capture reads).
    pub fn finish(self) -> Value {
        let output: Vec<Value> = self
            .items
            .into_iter()
            .map(|(_, item)| match item {
                Item::Message(text) => json!({
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text}],
                }),
                Item::FunctionCall {
                    name,
                    call_id,
                    arguments,
                } => json!({
                    "type": "function_call",
                    "name": name,
                    "call_id": call_id,
                    "arguments": arguments,
                }),
            })
            .collect();
        let mut r = Map::new();
        if let Some(id) = self.id {
            r.insert("id".into(), id);
        }
        r.insert("output".into(), Value::Array(output));
        if let Some(usage) = self.usage {
            r.insert("usage".into(), usage);
        }
        Value::Object(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(events: &[Value]) -> ResponsesStream {
        let mut s = ResponsesStream::default();
        for e in events {
            s.event(e.clone(), &mut |_| true);
        }
        s
    }

    #[test]
    fn text_and_function_calls_are_rebuilt_with_id_and_usage() {
        let usage = json!({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 8},
                           "output_tokens": 5, "total_tokens": 17});
        let s = read(&[
            json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "usage": null}}),
            json!({"type": "response.output_item.added", "output_index": 0,
                   "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.output_item.added", "output_index": 1,
                   "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Hel"}),
            json!({"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "lo"}),
            json!({"type": "response.output_item.added", "output_index": 2,
                   "item": {"type": "function_call", "name": "shell", "call_id": "call_9", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "{\"cmd\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "delta": "\"ls\"}"}),
            json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed", "usage": usage}}),
        ]);
        assert!(s.error.is_none());
        assert_eq!(
            s.finish(),
            json!({"id": "resp_1", "usage": usage, "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello"}]},
                {"type": "function_call", "name": "shell", "call_id": "call_9", "arguments": "{\"cmd\":\"ls\"}"},
            ]})
        );
    }

    #[test]
    fn errors_and_a_cut_stream_keep_what_came() {
        let s = read(&[
            json!({"type": "response.created", "response": {"id": "resp_2"}}),
            json!({"type": "response.output_text.delta", "output_index": 0, "delta": "par"}),
            json!({"type": "error", "code": "server_error", "message": "boom", "param": null}),
        ]);
        assert_eq!(s.error.as_deref(), Some("boom"));
        let r = s.finish();
        assert_eq!(r["id"], "resp_2");
        assert_eq!(r["output"][0]["content"][0]["text"], "par");
        let failed = read(&[json!({"type": "response.failed",
            "response": {"id": "resp_3", "error": {"code": "x", "message": "too long"}}})]);
        assert_eq!(failed.error.as_deref(), Some("too long"));
        // Past the cap, text is not kept.
        let mut s = ResponsesStream::default();
        let mut budget = 4usize;
        for piece in ["ab", "cd", "ef"] {
            s.event(
                json!({"type": "response.output_text.delta", "output_index": 0, "delta": piece}),
                &mut |t: &str| {
                    let fits = t.len() <= budget;
                    budget = budget.saturating_sub(t.len());
                    fits
                },
            );
        }
        assert_eq!(s.finish()["output"][0]["content"][0]["text"], "abcd");
    }
}
