//! Lines of the OpenAI Responses API (`POST /v1/responses`, as Codex
//! uses it) in an openai-log capture: the request's `instructions` and
//! `input`, the response's `output`, and `previous_response_id` chains
//! (docs/formats/openai-log.md, "Responses API requests").
//!
//! Owns reading [`RawInput`] and output items ([`RawItem`]) into the
//! loader's messages and answer text, and [`chain`]. Items become messages
//! this way:
//!
//! - `message` items (or items with a `role` and no `type`): their role
//!   (`developer` is system) and content, a string or parts whose
//!   `input_text`, `output_text` and `text` parts (and a `refusal`'s text)
//!   are joined with `\n`; other parts (images, files, audio) are dropped
//!   and counted;
//! - `function_call` and `custom_tool_call` items: assistant text, the
//!   tool's name, a space and its `arguments` (or `input`), as a Messages
//!   `tool_use` block reads, so the text has the call's length until the
//!   tree model carries tool calls;
//! - `function_call_output` and `custom_tool_call_output` items: a tool
//!   message, their `output` (a string or parts);
//! - anything else (`reasoning`, `web_search_call`, `item_reference`, ...)
//!   is dropped and counted.
//!
//! Consecutive assistant-side items (an assistant message and the calls
//! that follow it) are one assistant message, their texts joined with
//! `\n`; an answer's `output` is read the same way, so a turn that resends
//! the previous turn's output after its prompt extends it. Knows no I/O.

use std::collections::BTreeMap;
use std::fmt;

use arbor_engine::model::{Message, Role};
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::super::fields::RoleName;
use super::Placed;

/// A request's `input`: a string (one user message) or items.
pub(super) struct RawInput(Vec<RawItem>);

impl<'de> Deserialize<'de> for RawInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawInput;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Responses input (a string, or an array of input items)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawInput, E> {
                Ok(RawInput(vec![RawItem::user(v.to_owned())]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawInput, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(RawInput(items))
            }
        }
        d.deserialize_any(V)
    }
}

/// One input or output item.
#[derive(Deserialize)]
#[serde(expecting = "a Responses item object (`type`, or a message's `role`)")]
pub(super) struct RawItem {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    role: Option<RoleName>,
    #[serde(default)]
    content: Option<ItemContent>,
    /// A call's tool name.
    #[serde(default)]
    name: Option<String>,
    /// A function call's arguments (JSON text).
    #[serde(default)]
    arguments: Option<String>,
    /// A custom tool call's input (free text).
    #[serde(default)]
    input: Option<String>,
    /// A call output's result.
    #[serde(default)]
    output: Option<ItemContent>,
}

impl RawItem {
    fn user(text: String) -> RawItem {
        RawItem {
            kind: None,
            role: Some(RoleName(Role::User)),
            content: Some(ItemContent { text, dropped: 0 }),
            name: None,
            arguments: None,
            input: None,
            output: None,
        }
    }
}

/// An item's content (or a call output's result): a string, `null`, or
/// parts whose text parts are joined with `\n`.
#[derive(Default)]
pub(super) struct ItemContent {
    text: String,
    /// Parts that are not text, dropped.
    dropped: u32,
}

#[derive(Deserialize)]
#[serde(expecting = "a content part object (`type`, and `text` for text parts)")]
struct RawPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

impl<'de> Deserialize<'de> for ItemContent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ItemContent;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("item content (a string, or an array of content parts)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ItemContent, E> {
                Ok(ItemContent {
                    text: v.to_owned(),
                    dropped: 0,
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<ItemContent, E> {
                Ok(ItemContent::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ItemContent, A::Error> {
                let mut out = ItemContent::default();
                let mut texts: Vec<String> = Vec::new();
                while let Some(part) = seq.next_element::<RawPart>()? {
                    let text = match part.kind.as_str() {
                        "input_text" | "output_text" | "text" => part.text.ok_or_else(|| {
                            de::Error::custom(format_args!(
                                "missing field `text`: expected it in a part of type `{}`",
                                part.kind
                            ))
                        })?,
                        "refusal" => part.refusal.unwrap_or_default(),
                        _ => {
                            out.dropped += 1;
                            continue;
                        }
                    };
                    texts.push(text);
                }
                out.text = texts.join("\n");
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

/// What an item is, as a message.
enum Said {
    /// A message of its role.
    Message(Role, String),
    /// Assistant-side text (an assistant message or a call).
    Assistant(String),
    /// A tool's result.
    Tool(String),
    Dropped,
}

impl RawItem {
    fn said(self, dropped: &mut u32) -> Said {
        let mut content = |c: Option<ItemContent>| {
            let c = c.unwrap_or_default();
            *dropped += c.dropped;
            c.text
        };
        let call = |name: Option<String>, args: Option<String>| {
            let mut text = name.unwrap_or_default();
            if let Some(args) = args {
                text.push(' ');
                text.push_str(&args);
            }
            text
        };
        match (self.kind.as_deref(), self.role) {
            (Some("message") | None, Some(RoleName(role))) => match role {
                Role::Assistant => Said::Assistant(content(self.content)),
                role => Said::Message(role, content(self.content)),
            },
            (Some("function_call"), _) => Said::Assistant(call(self.name, self.arguments)),
            (Some("custom_tool_call"), _) => Said::Assistant(call(self.name, self.input)),
            (Some("function_call_output" | "custom_tool_call_output"), _) => {
                Said::Tool(content(self.output))
            }
            _ => {
                *dropped += 1;
                Said::Dropped
            }
        }
    }
}

/// Items as messages (see the module doc); `dropped` counts what was left
/// out.
fn into_messages(items: Vec<RawItem>, dropped: &mut u32) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(items.len());
    // The previous message is assistant-side text still open to merging.
    let mut open = false;
    for item in items {
        let (role, text) = match item.said(dropped) {
            Said::Dropped => continue,
            Said::Assistant(text) => {
                if let Some(last) = out.last_mut().filter(|_| open) {
                    last.content.push('\n');
                    last.content.push_str(&text);
                    continue;
                }
                (Role::Assistant, text)
            }
            Said::Message(role, text) => (role, text),
            Said::Tool(text) => (Role::Tool, text),
        };
        open = role == Role::Assistant;
        out.push(Message::text(role, text));
    }
    out
}

/// A request's `instructions` (a system message) and `input`, as
/// messages; `dropped` counts parts and items left out.
pub(super) fn request_messages(
    instructions: Option<String>,
    input: RawInput,
    dropped: &mut u32,
) -> Vec<Message> {
    let mut messages = Vec::with_capacity(input.0.len() + 1);
    if let Some(system) = instructions.filter(|s| !s.is_empty()) {
        messages.push(Message::text(Role::System, system));
    }
    messages.extend(into_messages(input.0, dropped));
    messages
}

/// A response's `output`, as the answer's text: its assistant-side items
/// joined with `\n` (the merged assistant message a next turn resends).
pub(super) fn answer(output: Vec<RawItem>, dropped: &mut u32) -> String {
    into_messages(output, dropped)
        .into_iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| m.content)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Turns that continue a response by `previous_response_id` get its
/// context: the previous turn's whole prompt and its answer come before
/// their own input, the previous `instructions` left out (the API does
/// not carry them over; the turn's own come first). Chains resolve in
/// any line order.
/// Returns how many turns name a response the capture does not have
/// (their earlier context is missing).
pub(super) fn chain(read: &mut [Placed]) -> usize {
    let by_id: BTreeMap<String, usize> = read
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.entry.response_id.clone().map(|id| (id, i)))
        .collect();
    let mut done = vec![false; read.len()];
    let mut missing = 0;
    for i in 0..read.len() {
        missing += resolve(read, &by_id, &mut done, i, 0);
    }
    missing
}

/// The longest chain followed (a guard: ids could form a cycle).
const MAX_CHAIN: usize = 100_000;

/// Resolves turn `i`'s chain (its predecessors first); 1 when it names a
/// response the capture lacks.
fn resolve(
    read: &mut [Placed],
    by_id: &BTreeMap<String, usize>,
    done: &mut [bool],
    i: usize,
    depth: usize,
) -> usize {
    if done.get(i).copied().unwrap_or(true) || depth > MAX_CHAIN {
        return 0;
    }
    if let Some(d) = done.get_mut(i) {
        *d = true;
    }
    let Some(previous) = read
        .get(i)
        .and_then(|p| p.entry.previous_response_id.clone())
    else {
        return 0;
    };
    let Some(&j) = by_id.get(&previous).filter(|&&j| j != i) else {
        return 1;
    };
    let missing = resolve(read, by_id, done, j, depth + 1);
    let (Some(before), Some(this)) = (read.get(j), read.get(i)) else {
        return missing;
    };
    let own_system = this.entry.instructions;
    let skip = usize::from(before.entry.instructions);
    let mut messages: Vec<Message> =
        Vec::with_capacity(before.entry.messages.len() + this.entry.messages.len() + 1);
    let own = &this.entry.messages;
    if own_system {
        messages.extend(own.first().cloned());
    }
    messages.extend(before.entry.messages.iter().skip(skip).cloned());
    if let Some(answer) = &before.entry.response {
        messages.push(Message::text(Role::Assistant, answer.clone()));
    }
    messages.extend(own.iter().skip(usize::from(own_system)).cloned());
    if let Some(this) = read.get_mut(i) {
        this.entry.messages = messages;
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::super::super::test_support::{assert_contains, scratch_file};
    use super::super::load;
    use crate::input::Loaded;
    use arbor_engine::error::InputError;
    use arbor_engine::model::{InputKind, Role, TurnText};
    use serde_json::{json, Value};

    const S: u64 = 1_800_000_000_000_000_000;

    fn line(start_ms: u64, request: Value, response: Value) -> String {
        json!({
            "start": (S + start_ms * 1_000_000) as f64 / 1e9,
            "start_ns": S + start_ms * 1_000_000,
            "end_ns": S + (start_ms + 100) * 1_000_000,
            "infer": true,
            "path": "/v1/responses",
            "request": request,
            "response": response,
        })
        .to_string()
    }

    fn load_lines(lines: &[String]) -> Result<Loaded, InputError> {
        let path = scratch_file("responses", lines.join("\n").as_bytes());
        let loaded = load(&path);
        std::fs::remove_file(&path).ok();
        loaded
    }

    fn roles(text: &TurnText) -> Vec<Role> {
        text.messages.iter().map(|m| m.role).collect()
    }

    fn message_out(text: &str) -> Value {
        json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]})
    }

    /// Codex's shape: instructions, items resent whole each turn, function
    /// calls and their outputs, reasoning items; usage in Responses names.
    #[test]
    fn a_codex_conversation_loads_as_one_agent_whose_turns_extend() {
        let user = json!({"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "List the files."}]});
        let reasoning = json!({"type": "reasoning", "summary": [], "encrypted_content": "xyz"});
        let call = json!({"type": "function_call", "name": "shell", "call_id": "call_1",
                          "arguments": "{\"command\":[\"ls\"]}"});
        let call_out =
            json!({"type": "function_call_output", "call_id": "call_1", "output": "a.rs\nb.rs"});
        let usage = |i: u32, o: u32| {
            json!({"input_tokens": i, "input_tokens_details": {"cached_tokens": 0},
                                            "output_tokens": o, "total_tokens": i + o})
        };
        let lines = [
            line(
                0,
                json!({"model": "gpt-5-codex", "instructions": "You are Codex.", "input": [user],
                       "stream": true, "store": false}),
                json!({"id": "resp_1", "output": [reasoning, message_out("Listing."), call],
                       "usage": usage(120, 30)}),
            ),
            line(
                1000,
                json!({"model": "gpt-5-codex", "instructions": "You are Codex.",
                       "input": [user, reasoning, message_out("Listing."), call, call_out], "stream": true}),
                json!({"id": "resp_2", "output": [message_out("Two files.")], "usage": usage(160, 5)}),
            ),
        ];
        let loaded = load_lines(&lines).expect("loads");
        assert_eq!(loaded.trees.len(), 1);
        let agent = &loaded.trees[0].agents[0];
        assert_eq!(agent.turns.len(), 2);
        let first = agent.turns[0].text.as_deref().expect("text");
        assert_eq!(roles(first), [Role::System, Role::User]);
        assert_eq!(first.messages[0].content, "You are Codex.");
        assert_eq!(
            first.response.as_deref(),
            Some("Listing.\nshell {\"command\":[\"ls\"]}")
        );
        assert_eq!((agent.turns[0].isl, agent.turns[0].osl), (120, 30));
        assert!(!agent.turns[0].tokens_estimated);
        // The second turn resends the first's output: only the tool
        // result is new.
        let second = agent.turns[1].text.as_deref().expect("text");
        assert!(second.extends_previous);
        assert_eq!(roles(second), [Role::Tool]);
        assert_eq!(second.messages[0].content, "a.rs\nb.rs");
        assert_eq!(agent.turns[1].input_kind, InputKind::ToolResult);
        // Both reasoning items dropped (and counted): an output and an input.
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("2 non-text content parts")));
    }

    /// `previous_response_id`: the turn sends only its new input; the
    /// loader puts the earlier context back, in any line order.
    #[test]
    fn previous_response_ids_chain_in_any_order_and_a_missing_one_is_counted() {
        let lines = [
            line(
                2000,
                json!({"instructions": "Be brief.", "previous_response_id": "resp_b", "input": "And then?"}),
                json!({"id": "resp_c", "output": [message_out("Done.")]}),
            ),
            line(
                0,
                json!({"instructions": "Be brief.", "input": "Start."}),
                json!({"id": "resp_a", "output": [message_out("Started.")]}),
            ),
            line(
                1000,
                json!({"instructions": "Be brief.", "previous_response_id": "resp_a",
                       "input": [{"role": "developer", "content": "Note."}, {"role": "user", "content": "Next?"}]}),
                json!({"id": "resp_b", "output": [message_out("Next.")]}),
            ),
            line(
                9000,
                json!({"previous_response_id": "resp_gone", "input": "Lost."}),
                json!({"output": [message_out("?")]}),
            ),
        ];
        let loaded = load_lines(&lines).expect("loads");
        let turns = &loaded.trees[0].agents[0].turns;
        assert_eq!(turns.len(), 3);
        let contents = |t: usize| -> Vec<String> {
            turns[t]
                .text
                .as_deref()
                .expect("text")
                .messages
                .iter()
                .map(|m| m.content.clone())
                .collect()
        };
        assert_eq!(contents(0), ["Be brief.", "Start."]);
        // Each later turn extends its predecessor: only its input is new.
        assert!(turns[1].text.as_deref().expect("text").extends_previous);
        assert_eq!(contents(1), ["Note.", "Next?"]);
        assert_eq!(
            turns[1].text.as_deref().expect("text").messages[0].role,
            Role::System
        );
        assert!(turns[2].text.as_deref().expect("text").extends_previous);
        assert_eq!(contents(2), ["And then?"]);
        // The turn whose predecessor is not in the capture is its own tree.
        assert_eq!(loaded.trees.len(), 2);
        assert!(loaded.problems.iter().any(|p| p
            .message
            .contains("1 Responses turns continue a response not in the capture")));
    }

    #[test]
    fn bad_items_are_refused_at_their_path() {
        let cases: [(Value, &[&str]); 3] = [
            (
                json!({"input": [{"type": "message", "role": "critic", "content": "x"}]}),
                &["$.request.input[0].role", "`critic`"],
            ),
            (
                json!({"input": [{"role": "user", "content": [{"type": "input_text"}]}]}),
                &["$.request.input[0].content", "missing field `text`"],
            ),
            (
                json!({"input": 5}),
                &["$.request.input", "a Responses input"],
            ),
        ];
        for (request, parts) in cases {
            let msg = load_lines(&[line(0, request.clone(), json!({}))])
                .expect_err("refused")
                .to_string();
            assert_contains(&msg, parts);
        }
    }
}
