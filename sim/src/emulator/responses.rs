//! The OpenAI Responses API (`POST /v1/responses`) in the emulator: a
//! request's prompt as the emulator counts and keys it, and the answer's
//! bodies (streamed events or one `response` object).
//!
//! Owns [`prompt`] (an `instructions` string and `input`, a string or
//! items, walked into the same prompt stream as the chat body of the same
//! turn: `instructions` is a system message, each item with a `role` a
//! message of that role, a `function_call` an assistant message of its
//! name and arguments, a `function_call_output` a tool message; other
//! items add nothing), through the [`Walk`] a request's prompt offers,
//! and the body text: [`head`], [`template`] (the events before the first
//! token and each `response.output_text.delta`) and [`tail`]
//! (`response.output_text.done` through `response.completed`, with the
//! usage), and [`whole`] (the non-streamed object). The answer always ends
//! `completed`. `server`, `body` and `request` use it; it uses none of
//! them.

use serde::Deserialize;
use serde_json::value::RawValue;

/// What the prompt walk feeds: a request's prompt (`request.rs`), which
/// counts text and hashes everything into its blocks.
pub(crate) trait Walk {
    type Error;
    /// Framing: blocks, no tokens.
    fn frame(&mut self, bytes: &[u8]);
    /// The `\n` that ends a message (framing; where the answer would
    /// have been appended to it, `super::answer`).
    fn close(&mut self);
    /// Prompt text.
    fn text(&mut self, text: &str);
    /// A JSON string's text (quotes and escapes included).
    fn json_string(&mut self, json: &str) -> Result<(), Self::Error>;
    /// A message's content: a string, parts or null.
    fn content(&mut self, raw: &RawValue) -> Result<(), Self::Error>;
    /// A body that is not a Responses request.
    fn bad(&self, what: String) -> Self::Error;
}

/// One input item, as the emulator reads it.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    role: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    output: Option<&'a RawValue>,
}

/// Walks a Responses request's `instructions` and `input` into `prompt`
/// (see the module doc).
pub(crate) fn prompt<W: Walk>(
    instructions: Option<&RawValue>,
    input: Option<&RawValue>,
    prompt: &mut W,
) -> Result<(), W::Error> {
    if let Some(system) = instructions.filter(|v| v.get() != "null") {
        prompt.frame(b"system\n");
        prompt.content(system)?;
        prompt.close();
    }
    let input = input.ok_or_else(|| prompt.bad("`input` is required".into()))?;
    let text = input.get();
    if text.starts_with('"') {
        prompt.frame(b"user\n");
        prompt.json_string(text)?;
        prompt.close();
        return Ok(());
    }
    let items: Vec<Item> = serde_json::from_str(text).map_err(|e| {
        prompt.bad(format!(
            "`input` must be a string or an array of items: {e}"
        ))
    })?;
    for item in &items {
        let (role, body): (&str, Option<&RawValue>) = match (item.kind.as_deref(), &item.role) {
            (Some("message") | None, Some(role)) => (role, item.content),
            (Some("function_call"), _) => {
                // The call as one text: its name, a space, its arguments.
                let mut call = item.name.as_deref().unwrap_or("").to_string();
                if let Some(args) = item.arguments.as_deref() {
                    call.push(' ');
                    call.push_str(args);
                }
                prompt.frame(b"assistant\n");
                prompt.text(&call);
                prompt.close();
                continue;
            }
            (Some("function_call_output"), _) => ("tool", item.output),
            _ => continue,
        };
        prompt.frame(role.as_bytes());
        prompt.frame(b"\n");
        if let Some(c) = body {
            prompt.content(c)?;
        }
        prompt.close();
    }
    Ok(())
}

/// `{"id":...,"object":"response","created_at":...,"model":...` (no
/// closing brace): the response object's first fields.
pub(crate) fn head(seq: u64, created: u64, model_json: &str) -> String {
    format!(
        r#"{{"id":"resp_arbor-{seq}","object":"response","created_at":{created},"model":{model_json}"#
    )
}

/// The usage object of a response of `prompt` tokens (`cached` of them
/// from the cache) and `output` tokens.
pub(crate) fn usage(prompt: u32, cached: u32, output: u32) -> String {
    format!(
        r#"{{"input_tokens":{prompt},"input_tokens_details":{{"cached_tokens":{cached}}},"output_tokens":{output},"output_tokens_details":{{"reasoning_tokens":0}},"total_tokens":{}}}"#,
        prompt as u64 + output as u64
    )
}

/// One server-sent event.
fn push_event(s: &mut String, name: &str, data: &str) {
    s.push_str("event: ");
    s.push_str(name);
    s.push_str("\ndata: ");
    s.push_str(data);
    s.push_str("\n\n");
}

/// The message item's id in request `seq`'s answer.
fn item_id(seq: u64) -> String {
    format!("msg_arbor-{seq}")
}

const DELTA_SUFFIX: &[u8] = b"\"}\n\n";

/// The stream's text around each token (a chunk is `first` or `each`,
/// then the token's number, then `suffix`): `response.created`,
/// `response.in_progress`, the message item's and its text part's
/// `added` events lead the first delta.
pub(crate) struct Template {
    pub(crate) first: String,
    pub(crate) each: String,
    pub(crate) suffix: &'static [u8],
}

pub(crate) fn template(seq: u64, head: &str) -> Template {
    let id = item_id(seq);
    let delta = format!(
        r#"event: response.output_text.delta
data: {{"type":"response.output_text.delta","item_id":"{id}","output_index":0,"content_index":0,"delta":" tok"#
    );
    let mut first = String::with_capacity(head.len() * 2 + 600);
    let open = format!(r#"{head},"status":"in_progress","output":[],"usage":null}}"#);
    push_event(
        &mut first,
        "response.created",
        &format!(r#"{{"type":"response.created","response":{open}}}"#),
    );
    push_event(
        &mut first,
        "response.in_progress",
        &format!(r#"{{"type":"response.in_progress","response":{open}}}"#),
    );
    push_event(
        &mut first,
        "response.output_item.added",
        &format!(
            r#"{{"type":"response.output_item.added","output_index":0,"item":{{"id":"{id}","type":"message","status":"in_progress","role":"assistant","content":[]}}}}"#
        ),
    );
    push_event(
        &mut first,
        "response.content_part.added",
        &format!(
            r#"{{"type":"response.content_part.added","item_id":"{id}","output_index":0,"content_index":0,"part":{{"type":"output_text","text":"","annotations":[]}}}}"#
        ),
    );
    first.push_str(&delta);
    Template {
        first,
        each: delta,
        suffix: DELTA_SUFFIX,
    }
}

/// The answer's text: ` tok0 tok1 ...`, as the stream sent it.
pub(crate) fn text(n: u32) -> String {
    let mut text = String::with_capacity(n as usize * 8);
    for k in 0..n {
        text.push_str(" tok");
        text.push_str(&k.to_string());
    }
    text
}

/// The finished message item of request `seq` whose text is `text_json`
/// (a JSON string).
fn message(seq: u64, text_json: &str) -> String {
    format!(
        r#"{{"id":"{}","type":"message","status":"completed","role":"assistant","content":[{{"type":"output_text","text":{text_json},"annotations":[]}}]}}"#,
        item_id(seq)
    )
}

/// The non-streamed answer: the whole `response` object.
pub(crate) fn whole(seq: u64, head: &str, n: u32, usage_json: &str) -> String {
    let text_json = serde_json::to_string(&text(n)).unwrap_or_else(|_| "\"\"".into());
    format!(
        r#"{head},"status":"completed","output":[{}],"usage":{usage_json}}}"#,
        message(seq, &text_json)
    )
}

/// The end of a stream of `n` tokens: the text's, part's and item's
/// `done` events and `response.completed` with the whole response and its
/// usage, as one frame.
pub(crate) fn tail(seq: u64, head: &str, n: u32, usage_json: &str) -> bytes::Bytes {
    let id = item_id(seq);
    let text_json = serde_json::to_string(&text(n)).unwrap_or_else(|_| "\"\"".into());
    let mut s = String::with_capacity(3 * text_json.len() + head.len() + 800);
    push_event(
        &mut s,
        "response.output_text.done",
        &format!(
            r#"{{"type":"response.output_text.done","item_id":"{id}","output_index":0,"content_index":0,"text":{text_json}}}"#
        ),
    );
    push_event(
        &mut s,
        "response.content_part.done",
        &format!(
            r#"{{"type":"response.content_part.done","item_id":"{id}","output_index":0,"content_index":0,"part":{{"type":"output_text","text":{text_json},"annotations":[]}}}}"#
        ),
    );
    let item = message(seq, &text_json);
    push_event(
        &mut s,
        "response.output_item.done",
        &format!(r#"{{"type":"response.output_item.done","output_index":0,"item":{item}}}"#),
    );
    push_event(
        &mut s,
        "response.completed",
        &format!(
            r#"{{"type":"response.completed","response":{head},"status":"completed","output":[{item}],"usage":{usage_json}}}}}"#
        ),
    );
    s.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The stream's events, parsed: every `data:` is JSON whose `type` is
    /// its `event:` line's name.
    fn events(text: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut name = None;
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("event: ") {
                name = Some(n.to_string());
            } else if let Some(data) = line.strip_prefix("data: ") {
                let v: Value = serde_json::from_str(data).expect("json");
                assert_eq!(v["type"].as_str(), name.as_deref(), "{data}");
                out.push(v);
            }
        }
        out
    }

    #[test]
    fn a_stream_reads_as_responses_events_with_text_and_usage() {
        let head = head(7, 1_800_000_000, "\"m\"");
        let t = template(7, &head);
        let mut stream = String::new();
        for k in 0..3u32 {
            let prefix = if k == 0 { &t.first } else { &t.each };
            stream.push_str(prefix);
            stream.push_str(&k.to_string());
            stream.push_str(std::str::from_utf8(t.suffix).expect("utf-8"));
        }
        let usage = usage(20, 16, 3);
        stream.push_str(std::str::from_utf8(&tail(7, &head, 3, &usage)).expect("utf-8"));
        let events = events(&stream);
        let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        let deltas: String = events.iter().filter_map(|e| e["delta"].as_str()).collect();
        assert_eq!(deltas, " tok0 tok1 tok2");
        let done = events.last().expect("completed");
        assert_eq!(done["response"]["id"], "resp_arbor-7");
        assert_eq!(done["response"]["usage"]["input_tokens"], 20);
        assert_eq!(
            done["response"]["usage"]["input_tokens_details"]["cached_tokens"],
            16
        );
        assert_eq!(
            done["response"]["output"][0]["content"][0]["text"],
            deltas.as_str()
        );
        let whole: Value = serde_json::from_str(&whole(7, &head, 3, &usage)).expect("json");
        assert_eq!(whole["status"], "completed");
        assert_eq!(whole["output"][0]["content"][0]["text"], deltas.as_str());
        assert_eq!(whole["usage"]["output_tokens"], 3);
    }
}
