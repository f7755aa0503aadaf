//! `arbor record --redact`: every text of a capture line replaced by
//! synthesized text of the same length, so a capture of private code can
//! be shared and still replays as the original did.
//!
//! Owns [`Redactor`]. A string becomes as many bytes of capital letters
//! (never one of arbor's one-token vocabulary words, which are lowercase),
//! made 16 bytes at a time from a SHA-256 chain over a salt drawn when the
//! proxy starts and the original's bytes so far. So equal strings redact
//! equal, two strings sharing a prefix share it (to 16 bytes) after
//! redaction, and a conversation's next request, which repeats the
//! previous messages and answer, still extends it: the prefix-cache
//! structure and the inferred agents survive. Nothing else does: the text
//! cannot be recovered without the salt, which is never written, and
//! equal words in different places redact differently.
//!
//! Kept as they are: numbers (token counts, `max_tokens`), booleans,
//! object keys, and the strings that name structure at their places in
//! the OpenAI chat completions, Anthropic Messages and OpenAI Responses
//! schemas (a request, a response, a stream chunk's `choices`, the
//! capture's short form `{content, usage}`): the model, the response's
//! `id`, `object` and `status`, roles, content block and tool call types
//! and ids, `tool_call_id`, `tool_use_id`, a `source`'s `type` and
//! `media_type`, finish and stop reasons, `tool_choice`'s mode, a
//! Responses item's `type`, `id`, `call_id` and `status`, and
//! `previous_response_id`. The same key anywhere else (a tool's
//! input, a JSON schema in `tools`, `metadata`) is content, and redacted:
//! the walk goes by position, not by key ([`Redactor::body`]). Knows no
//! HTTP and no I/O.

use serde_json::value::{to_raw_value, RawValue};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The modes `tool_choice` may name as a string (chat's and Messages').
const TOOL_CHOICE_MODES: [&str; 4] = ["auto", "none", "required", "any"];

/// Bytes synthesized per link of the chain.
const LINK: usize = 16;

/// Redacts capture lines with one recording's secret salt.
pub struct Redactor {
    salt: [u8; 32],
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor::new()
    }
}

impl Redactor {
    /// A redactor with a fresh random salt.
    pub fn new() -> Redactor {
        Redactor {
            salt: rand::random(),
        }
    }

    /// `text` as synthesized capital letters of the same byte length.
    pub fn text(&self, text: &str) -> String {
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(bytes.len());
        let mut state: [u8; 32] = Sha256::new().chain_update(self.salt).finalize().into();
        for link in bytes.chunks(LINK) {
            state = Sha256::new()
                .chain_update(self.salt)
                .chain_update(state)
                .chain_update(link)
                .finalize()
                .into();
            for &b in state.iter().take(link.len()) {
                out.push(char::from(b'A' + b % 26));
            }
        }
        out
    }

    /// A request body (raw JSON), redacted; `None` if it is not JSON.
    pub fn request(&self, raw: &RawValue) -> Option<Box<RawValue>> {
        let mut request = serde_json::from_str::<Value>(raw.get()).ok()?;
        self.body(&mut request);
        to_raw_value(&request).ok()
    }

    /// A chat completions or Messages body (request, response, stream
    /// chunk, or the capture's short form `{content, usage}`), in place:
    /// its structural strings kept, every other string redacted.
    pub fn body(&self, value: &mut Value) {
        let keep = [
            "model",
            "id",
            "object",
            "type",
            "role",
            "stop_reason",
            "status",
            "previous_response_id",
        ];
        self.fields(value, &keep, |r, key, v| {
            match key {
                "messages" => r.each(v, Self::message),
                "choices" => r.each(v, Self::choice),
                "system" | "content" => r.content(v),
                "tools" => r.each(v, Self::tool),
                "tool_choice" => r.tool_choice(v),
                "input" | "output" => r.items(v),
                "response_format" | "thinking" | "cache_control" | "error" => r.typed(v),
                _ => return false,
            }
            true
        });
    }

    /// Every string of `value`, at any depth, redacted (keys kept).
    fn all(&self, value: &mut Value) {
        match value {
            Value::String(s) => *s = self.text(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.all(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.all(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// A structural string, kept; anything else in its place redacted.
    fn kept(&self, value: &mut Value) {
        if !value.is_string() {
            self.all(value);
        }
    }

    /// Each item of an array, by `item`; anything else redacted.
    fn each(&self, value: &mut Value, item: fn(&Self, &mut Value)) {
        match value {
            Value::Array(items) => items.iter_mut().for_each(|v| item(self, v)),
            other => self.all(other),
        }
    }

    /// `value`'s fields: those `keep` names kept, those `walk` places
    /// walked by their function, the rest redacted.
    fn fields(&self, value: &mut Value, keep: &[&str], walk: fn(&Self, &str, &mut Value) -> bool) {
        let Value::Object(map) = value else {
            return self.all(value);
        };
        for (key, v) in map.iter_mut() {
            if keep.contains(&key.as_str()) {
                self.kept(v);
            } else if !walk(self, key, v) {
                self.all(v);
            }
        }
    }

    /// A chat or Messages message (or a chat stream's `delta`).
    fn message(&self, value: &mut Value) {
        self.fields(value, &["role", "tool_call_id"], |r, key, v| {
            match key {
                "content" => r.content(v),
                "tool_calls" => r.each(v, Self::tool_call),
                _ => return false,
            }
            true
        });
    }

    /// A chat completion's choice.
    fn choice(&self, value: &mut Value) {
        self.fields(value, &["finish_reason"], |r, key, v| {
            match key {
                "message" | "delta" => r.message(v),
                _ => return false,
            }
            true
        });
    }

    /// A message's content: a text, or an array of content blocks.
    fn content(&self, value: &mut Value) {
        match value {
            Value::Array(_) => self.each(value, Self::block),
            other => self.all(other),
        }
    }

    /// A content block (chat's content parts, Messages' blocks).
    fn block(&self, value: &mut Value) {
        self.fields(value, &["type", "id", "tool_use_id"], |r, key, v| {
            match key {
                "content" => r.content(v),
                "cache_control" => r.typed(v),
                "source" => r.fields(v, &["type", "media_type"], |_, _, _| false),
                _ => return false,
            }
            true
        });
    }

    /// A Responses `input` or `output`: a text, or items.
    fn items(&self, value: &mut Value) {
        match value {
            Value::Array(_) => self.each(value, Self::item),
            other => self.all(other),
        }
    }

    /// A Responses item (a message, a function call or its output): its
    /// type, role, ids and status kept, its content walked as blocks, its
    /// name, arguments and output redacted.
    fn item(&self, value: &mut Value) {
        let keep = ["type", "role", "id", "call_id", "status"];
        self.fields(value, &keep, |r, key, v| {
            if key != "content" {
                return false;
            }
            r.content(v);
            true
        });
    }

    /// A chat tool call: its id and type kept, its function redacted.
    fn tool_call(&self, value: &mut Value) {
        self.fields(value, &["id", "type"], |_, _, _| false);
    }

    /// A tool definition: its type kept, its name, description and schema
    /// redacted.
    fn tool(&self, value: &mut Value) {
        self.fields(value, &["type"], |r, key, v| {
            if key != "cache_control" {
                return false;
            }
            r.typed(v);
            true
        });
    }

    /// `tool_choice`: a mode, or an object naming its type (and a tool).
    fn tool_choice(&self, value: &mut Value) {
        match value {
            Value::String(s) if TOOL_CHOICE_MODES.contains(&s.as_str()) => {}
            Value::Object(_) => self.typed(value),
            other => self.all(other),
        }
    }

    /// An object whose `type` is structure and the rest content.
    fn typed(&self, value: &mut Value) {
        self.fields(value, &["type"], |_, _, _| false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_length_same_prefixes_no_original_text() {
        let r = Redactor::new();
        let a = "The quick brown fox jumps over the lazy dog, twice over.";
        let b = "The quick brown fox jumps over the lazy cat, twice over.";
        let (ra, rb) = (r.text(a), r.text(b));
        assert_eq!(ra.len(), a.len());
        assert_eq!(r.text(a), ra, "deterministic");
        let shared = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        // Whole links before the first difference are kept; the link
        // holding it differs (its first letters may still agree by chance).
        let aligned = shared / LINK * LINK;
        assert_eq!(ra[..aligned], rb[..aligned]);
        assert_ne!(ra[aligned..aligned + LINK], rb[aligned..aligned + LINK]);
        assert!(ra.bytes().all(|c| c.is_ascii_uppercase()));
        assert_eq!(r.text("héllo").len(), "héllo".len());
        // Another recording, another salt.
        assert_ne!(Redactor::new().text(a), ra);
    }

    #[test]
    fn structure_and_numbers_stay_content_goes() {
        let r = Redactor::new();
        let mut v = json!({"model": "gpt-x", "max_tokens": 5, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "secret plan"}]},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
              "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]}]});
        r.body(&mut v);
        let text = v.to_string();
        for gone in ["secret plan", "a.rs", "\"read\""] {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(v["model"], "gpt-x");
        assert_eq!(v["max_tokens"], 5);
        assert_eq!(v["messages"][0]["content"][0]["type"], "text");
        assert_eq!(v["messages"][1]["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            v["messages"][0]["content"][0]["text"]
                .as_str()
                .map(str::len),
            Some(11)
        );
    }

    /// Issue 27, item 4: a structural key name is kept only at its
    /// structural place; inside tool inputs, tool schemas, metadata or
    /// unknown fields it is content.
    #[test]
    fn structural_keys_anywhere_else_are_redacted() {
        let r = Redactor::new();
        let secret = json!({"id": "JIRA-SECRET-4711", "type": "SECRET-TYPE", "model": "SECRET-MODEL",
                            "role": "SECRET-ROLE", "object": "SECRET-OBJECT"});
        let mut messages_request = json!({
            "model": "claude-x", "max_tokens": 9, "metadata": {"user_id": "SECRET-USER", "id": "SECRET-META"},
            "system": [{"type": "text", "text": "SECRET-SYSTEM", "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": "SECRET-TOOL", "description": "SECRET-DESC",
                       "input_schema": {"type": "object", "properties": {"id": {"type": "string"}}}}],
            "tool_choice": {"type": "tool", "name": "SECRET-TOOL"},
            "messages": [
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "SECRET-TOOL", "input": secret.clone()}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1",
                     "content": [{"type": "text", "text": "SECRET-RESULT"}]},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "SECRET-DATA"}}]},
                {"role": "user", "content": "SECRET-USER-TEXT", "extra": secret.clone()}]});
        r.body(&mut messages_request);
        let mut chat_response = json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-x",
            "extra": secret.clone(),
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
                "content": "SECRET-ANSWER", "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "SECRET-FN", "arguments": "{}", "id": "SECRET-FN-ID"}}]}}],
            "usage": {"prompt_tokens": 3, "model": "SECRET-USAGE"}});
        r.body(&mut chat_response);
        let mut short_form = json!({"content": [{"type": "tool_use", "id": "toolu_2", "name": "SECRET-TOOL",
            "input": {"items": [secret]}}], "usage": {"output_tokens": 4}});
        r.body(&mut short_form);
        for v in [&messages_request, &chat_response, &short_form] {
            let text = v.to_string();
            assert!(!text.contains("SECRET"), "{text}");
        }
        let m = &messages_request;
        assert_eq!(m["model"], "claude-x");
        assert_eq!(m["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(m["tool_choice"]["type"], "tool");
        assert_eq!(m["messages"][0]["role"], "assistant");
        assert_eq!(m["messages"][0]["content"][0]["type"], "tool_use");
        assert_eq!(m["messages"][0]["content"][0]["id"], "toolu_1");
        assert_eq!(m["messages"][1]["content"][0]["tool_use_id"], "toolu_1");
        assert_eq!(
            m["messages"][1]["content"][1]["source"]["media_type"],
            "image/png"
        );
        assert_eq!(
            m["messages"][0]["content"][0]["input"]["id"]
                .as_str()
                .map(str::len),
            Some(16)
        );
        let c = &chat_response;
        assert_eq!(
            (&c["id"], &c["object"], &c["model"]),
            (
                &json!("chatcmpl-1"),
                &json!("chat.completion"),
                &json!("gpt-x")
            )
        );
        assert_eq!(c["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(c["choices"][0]["message"]["tool_calls"][0]["id"], "call_1");
        assert_eq!(c["usage"]["prompt_tokens"], 3);
        assert_eq!(short_form["content"][0]["id"], "toolu_2");
        let mut responses = json!({"model": "gpt-x", "instructions": "SECRET-SYSTEM",
            "previous_response_id": "resp_0", "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "SECRET-ASK"}]},
                {"type": "function_call", "call_id": "call_1", "name": "SECRET-FN", "arguments": "{\"id\":\"SECRET\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "SECRET-OUT"}]});
        r.body(&mut responses);
        let mut answer = json!({"id": "resp_1", "status": "completed", "output": [
            {"type": "message", "id": "msg_1", "role": "assistant",
             "content": [{"type": "output_text", "text": "SECRET-ANSWER"}]}],
            "usage": {"input_tokens": 3}});
        r.body(&mut answer);
        let mut plain = json!({"input": "SECRET-PLAIN"});
        r.body(&mut plain);
        for v in [&responses, &answer, &plain] {
            assert!(!v.to_string().contains("SECRET"), "{v}");
        }
        assert_eq!(responses["previous_response_id"], "resp_0");
        assert_eq!(responses["input"][0]["content"][0]["type"], "input_text");
        assert_eq!(responses["input"][1]["type"], "function_call");
        assert_eq!(responses["input"][2]["call_id"], "call_1");
        assert_eq!(answer["output"][0]["content"][0]["type"], "output_text");
        assert_eq!(
            (&answer["id"], &answer["status"]),
            (&json!("resp_1"), &json!("completed"))
        );
        assert_eq!(plain["input"].as_str().map(str::len), Some(12));
        let mut modes = json!({"tool_choice": "auto", "messages": []});
        r.body(&mut modes);
        assert_eq!(modes["tool_choice"], "auto");
    }
}
