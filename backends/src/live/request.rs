//! What one live request carries: the request body of a turn, for
//! OpenAI's chat and completions APIs or Anthropic's Messages API.
//!
//! Owns turning a turn's prompt (recorded messages or synthesized text),
//! its output length and the run's request options into the JSON body that
//! [`super::exchange`] sends. [`build_turn_body`] is the live path: the
//! same bytes as [`build_body`], with synthesized text written straight
//! into the body.

use serde_json::{Map, Value};

use arbor_engine::model::Tree;
use arbor_engine::prompt::{self, Prompt};

/// Which API to call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Api {
    #[default]
    Chat,
    Completions,
    /// Anthropic's Messages API: `system` and `messages` from the same turn
    /// content as chat (system-role content goes to `system`).
    Messages,
}

impl Api {
    /// The path requests go to.
    pub fn path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
            Api::Messages => "/v1/messages",
        }
    }

    /// Its name, as `--api` takes it: `chat`, `completions` or `messages`.
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Messages => "messages",
        }
    }
}

/// The version header the Messages API requires, and its value.
pub const ANTHROPIC_VERSION: (&str, &str) = ("anthropic-version", "2023-06-01");

/// How the output length is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MaxTokensField {
    #[default]
    MaxTokens,
    MaxCompletionTokens,
}

impl MaxTokensField {
    pub fn name(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// What every request body carries besides its prompt.
#[derive(Debug, Clone, Default)]
pub struct BodyConfig {
    pub model: String,
    pub api: Api,
    pub max_tokens_field: MaxTokensField,
    pub ignore_eos: bool,
    /// Merged last: its keys replace any the body would have had.
    pub extra_body: Option<Map<String, Value>>,
}

fn push_json_str(out: &mut Vec<u8>, text: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Synthesized text is made of plain words and spaces (see
/// `arbor_engine::prompt`): nothing to escape, so it is copied as is.
fn push_synthesized(out: &mut Vec<u8>, text: &str) {
    if text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' ') {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        push_json_str(out, text);
    }
}

/// Builds the JSON body of one request.
///
/// The body is written straight into one buffer (a prompt of 100k tokens
/// is about 600 kB: no intermediate JSON tree; a recorded turn's tools
/// and other fields are spliced in as their recorded JSON text,
/// `shape.rs`); with `--extra-body` that body is then merged with the
/// extra keys through a map, so they win.
///
/// `marker` (the play's cache-bust marker) is prepended to the first user
/// message (or to the synthesized text, which is one user message).
pub fn build_body(
    config: &BodyConfig,
    prompt: &Prompt<'_>,
    max_tokens: u32,
    marker: Option<&str>,
) -> Vec<u8> {
    let body = build_direct(config, prompt, max_tokens, marker);
    match &config.extra_body {
        None => body,
        Some(extra) => merge_extra(body, extra),
    }
}

/// [`build_body`] without `--extra-body`.
fn build_direct(
    config: &BodyConfig,
    prompt: &Prompt<'_>,
    max_tokens: u32,
    marker: Option<&str>,
) -> Vec<u8> {
    // The first user message, marked (one copy of it, only when marking).
    let marked = |content: &str| -> Option<String> { marker.map(|m| format!("{m}{content}")) };
    let first_user = match prompt {
        Prompt::Recorded(recorded) => recorded
            .messages
            .iter()
            .position(|m| m.role == arbor_engine::Role::User),
        Prompt::Synthesized(_) => None,
    };
    let max_tokens = max_tokens.max(1);
    let text_len = match prompt {
        Prompt::Synthesized(text) => text.len(),
        Prompt::Recorded(recorded) => {
            recorded
                .messages
                .iter()
                .map(|m| {
                    m.content.len()
                        + 32
                        + m.calls
                            .iter()
                            .map(|c| c.id.len() + c.name.len() + c.arguments.len() * 2 + 64)
                            .sum::<usize>()
                })
                .sum::<usize>()
                + recorded.shape.map_or(0, |s| {
                    s.tools.as_ref().map_or(0, |t| t.len() * 2)
                        + s.tool_choice.as_ref().map_or(0, |c| c.len())
                        + s.fields
                            .iter()
                            .map(|(k, v)| k.len() + v.len() + 4)
                            .sum::<usize>()
                })
        }
    };
    let mut out = Vec::with_capacity(text_len + 256);
    push_head(&mut out, config);
    match (config.api, prompt) {
        (Api::Chat | Api::Messages, Prompt::Synthesized(text)) => {
            out.extend_from_slice(br#","messages":[{"role":"user","content":"#);
            match marked(text) {
                Some(text) => push_json_str(&mut out, &text),
                None => push_synthesized(&mut out, text),
            }
            out.extend_from_slice(b"}]");
        }
        (Api::Chat | Api::Messages, Prompt::Recorded(recorded)) => {
            let messages = &recorded.messages;
            if let Some(shape) = recorded.shape {
                let api = match config.api {
                    Api::Messages => arbor_engine::model::ShapeApi::Messages,
                    _ => arbor_engine::model::ShapeApi::Chat,
                };
                super::shape::push_fields(&mut out, shape, api);
            }
            let content = |i: usize| -> std::borrow::Cow<'_, str> {
                match marked(messages[i].content).filter(|_| first_user == Some(i)) {
                    Some(marked) => std::borrow::Cow::Owned(marked),
                    None => std::borrow::Cow::Borrowed(messages[i].content),
                }
            };
            if config.api == Api::Messages {
                // Messages: system-role content is the `system` field.
                if let Some(system) = system_text(messages) {
                    out.extend_from_slice(br#","system":"#);
                    push_json_str(&mut out, &system);
                }
                out.extend_from_slice(br#","messages":["#);
                super::shape::push_messages_messages(&mut out, messages, content);
            } else {
                out.extend_from_slice(br#","messages":["#);
                for (i, m) in messages.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    super::shape::push_chat_message(&mut out, m, &content(i));
                }
            }
            out.push(b']');
        }
        (Api::Completions, Prompt::Synthesized(text)) => {
            out.extend_from_slice(br#","prompt":"#);
            match marked(text) {
                Some(text) => push_json_str(&mut out, &text),
                None => push_synthesized(&mut out, text),
            }
        }
        (Api::Completions, Prompt::Recorded(recorded)) => {
            // One text: the messages' contents, tool calls written after
            // their text (the flattened form), the tools left out.
            out.extend_from_slice(br#","prompt":"#);
            let mut joined = String::new();
            for (i, m) in recorded.messages.iter().enumerate() {
                if i > 0 {
                    joined.push('\n');
                }
                if first_user == Some(i) {
                    joined.push_str(marker.unwrap_or(""));
                }
                if m.calls.is_empty() {
                    joined.push_str(m.content);
                } else {
                    joined.push_str(&arbor_engine::shape::flat_text(m.content, m.calls));
                }
            }
            push_json_str(&mut out, &joined);
        }
    }
    push_tail(&mut out, config, max_tokens);
    out
}

/// The body of turn `turn` of agent `agent` of `tree`: byte for byte
/// `build_body(config, &prompt::build(tree, agent, turn), max_tokens,
/// marker)`.
///
/// Synthesized text (the common case, and the long prompts) is written
/// straight into the body: one allocation with room for eight bytes a
/// word, the unused room given back at the end; no prompt `String`, no
/// marked copy, no escape check. Recorded turns and `--extra-body` take
/// [`build_body`].
pub fn build_turn_body(
    config: &BodyConfig,
    tree: &Tree,
    agent: usize,
    turn: usize,
    max_tokens: u32,
    marker: Option<&str>,
) -> Vec<u8> {
    let room = match prompt::synthesized_room(tree, agent, turn) {
        Some(room) if config.extra_body.is_none() => room,
        _ => {
            return build_body(
                config,
                &prompt::build(tree, agent, turn),
                max_tokens,
                marker,
            )
        }
    };
    let max_tokens = max_tokens.max(1);
    // Escaping at most sextuples a character (`\u001f`); the rest is short.
    let escaped = |s: &str| s.len() * 6 + 2;
    let mut out =
        Vec::with_capacity(escaped(&config.model) + marker.map_or(0, escaped) + room + 192);
    push_head(&mut out, config);
    out.extend_from_slice(match config.api {
        Api::Chat | Api::Messages => br#","messages":[{"role":"user","content":"#,
        Api::Completions => br#","prompt":"#,
    });
    // The marked text as one JSON string: the marker escaped, then the text,
    // which needs no escaping.
    match marker {
        Some(m) => {
            push_json_str(&mut out, m);
            out.pop();
        }
        None => out.push(b'"'),
    }
    prompt::write_synthesized(tree, agent, turn, &mut out);
    out.push(b'"');
    if config.api != Api::Completions {
        out.extend_from_slice(b"}]");
    }
    push_tail(&mut out, config, max_tokens);
    // The room the words were written through is given back (in place).
    out.shrink_to_fit();
    out
}

/// The opening of every direct body: `{"model":"<model>"`.
fn push_head(out: &mut Vec<u8>, config: &BodyConfig) {
    out.extend_from_slice(br#"{"model":"#);
    push_json_str(out, &config.model);
}

/// The system-role content of a turn, joined by newlines; `None` when it
/// has none.
fn system_text(messages: &[arbor_engine::content::MessageRef<'_>]) -> Option<String> {
    let mut system = messages
        .iter()
        .filter(|m| m.role == arbor_engine::Role::System)
        .map(|m| m.content);
    let first = system.next()?;
    Some(system.fold(first.to_string(), |mut all, s| {
        all.push('\n');
        all.push_str(s);
        all
    }))
}

/// The name of the output-length field: the Messages API takes only
/// `max_tokens`.
fn max_tokens_name(config: &BodyConfig) -> &'static str {
    match config.api {
        Api::Messages => MaxTokensField::MaxTokens.name(),
        _ => config.max_tokens_field.name(),
    }
}

/// Everything after the prompt: stream options (OpenAI's APIs stream their
/// usage only when asked; Messages always does), the output length and
/// `ignore_eos`, and the closing brace.
fn push_tail(out: &mut Vec<u8>, config: &BodyConfig, max_tokens: u32) {
    out.extend_from_slice(match config.api {
        Api::Messages => br#","stream":true,""#.as_slice(),
        _ => br#","stream":true,"stream_options":{"include_usage":true},""#.as_slice(),
    });
    out.extend_from_slice(max_tokens_name(config).as_bytes());
    out.extend_from_slice(format!("\":{max_tokens}").as_bytes());
    if config.ignore_eos {
        out.extend_from_slice(br#","ignore_eos":true"#);
    }
    out.push(b'}');
}

/// `body` (a direct body) with `--extra-body`'s keys merged in last,
/// through a JSON map.
fn merge_extra(body: Vec<u8>, extra: &Map<String, Value>) -> Vec<u8> {
    let mut map = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    for (key, value) in extra {
        map.insert(key.clone(), value.clone());
    }
    serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::content::{MessageRef, Recorded};
    use arbor_engine::Role;

    fn recorded(messages: Vec<MessageRef<'_>>) -> Prompt<'_> {
        Prompt::Recorded(Recorded {
            messages,
            shape: None,
        })
    }

    #[test]
    fn bodies_carry_the_prompt_limits_and_extra_fields() {
        let config = BodyConfig {
            model: "m".into(),
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            ignore_eos: true,
            extra_body: serde_json::from_str::<Map<String, Value>>(
                r#"{"temperature":0,"ignore_eos":false}"#,
            )
            .ok(),
            ..BodyConfig::default()
        };
        let prompt = recorded(vec![
            MessageRef::text(Role::System, "s"),
            MessageRef::text(Role::Tool, "result"),
        ]);
        let body: Value = serde_json::from_slice(&build_body(&config, &prompt, 0, None)).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(
            body["messages"][1]["role"], "user",
            "tool results go as user messages"
        );
        assert_eq!(body["max_completion_tokens"], 1, "at least one token");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["temperature"], 0);
        assert_eq!(body["ignore_eos"], false, "--extra-body is merged last");
        assert!(body.get("max_tokens").is_none());

        let completions = BodyConfig {
            api: Api::Completions,
            ..BodyConfig::default()
        };
        let body: Value = serde_json::from_slice(&build_body(
            &completions,
            &Prompt::Synthesized(" a b".into()),
            5,
            None,
        ))
        .unwrap();
        assert_eq!(body["prompt"], " a b");
        assert_eq!(body["max_tokens"], 5);

        // The direct writer and the merging path agree on every field.
        let plain = BodyConfig {
            model: "m\"q".into(),
            ignore_eos: true,
            ..BodyConfig::default()
        };
        let merged = BodyConfig {
            extra_body: Some(Map::new()),
            ..plain.clone()
        };
        for prompt in [
            Prompt::Synthesized(" x \"y\" \n z".into()),
            recorded(vec![
                MessageRef::text(Role::System, "s\u{1}"),
                MessageRef::text(Role::Assistant, "é"),
            ]),
        ] {
            for api in [Api::Chat, Api::Completions, Api::Messages] {
                let a = BodyConfig {
                    api,
                    ..plain.clone()
                };
                let b = BodyConfig {
                    api,
                    ..merged.clone()
                };
                for marker in [None, Some("[rid:0123456789ab]\n\n")] {
                    let x: Value =
                        serde_json::from_slice(&build_body(&a, &prompt, 7, marker)).unwrap();
                    let y: Value =
                        serde_json::from_slice(&build_body(&b, &prompt, 7, marker)).unwrap();
                    assert_eq!(x, y);
                }
            }
        }
    }

    #[test]
    fn the_marker_leads_the_first_user_message_only() {
        let config = BodyConfig::default();
        let marker = Some("[rid:0123456789ab]\n\n");
        let recorded = recorded(vec![
            MessageRef::text(Role::System, "sys"),
            MessageRef::text(Role::User, "first"),
            MessageRef::text(Role::User, "second"),
        ]);
        let body: Value =
            serde_json::from_slice(&build_body(&config, &recorded, 3, marker)).unwrap();
        assert_eq!(body["messages"][0]["content"], "sys");
        assert_eq!(
            body["messages"][1]["content"],
            "[rid:0123456789ab]\n\nfirst"
        );
        assert_eq!(body["messages"][2]["content"], "second");
        let synthesized = Prompt::Synthesized(" a b".into());
        let body: Value =
            serde_json::from_slice(&build_body(&config, &synthesized, 3, marker)).unwrap();
        assert_eq!(body["messages"][0]["content"], "[rid:0123456789ab]\n\n a b");
    }

    #[test]
    fn messages_bodies_put_system_content_in_system() {
        let config = BodyConfig {
            model: "m".into(),
            api: Api::Messages,
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            ..BodyConfig::default()
        };
        let recorded = recorded(vec![
            MessageRef::text(Role::System, "be brief"),
            MessageRef::text(Role::User, "hi"),
            MessageRef::text(Role::Assistant, "hello"),
            MessageRef::text(Role::Tool, "42"),
        ]);
        let body: Value =
            serde_json::from_slice(&build_body(&config, &recorded, 9, Some("[m]"))).unwrap();
        assert_eq!(body["system"], "be brief");
        assert_eq!(body["max_tokens"], 9, "Messages takes max_tokens only");
        assert!(body.get("max_completion_tokens").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["stream"], true);
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(body["messages"][0]["content"], "[m]hi");
        let synthesized: Value = serde_json::from_slice(&build_body(
            &config,
            &Prompt::Synthesized(" a b".into()),
            2,
            None,
        ))
        .unwrap();
        assert!(synthesized.get("system").is_none());
        assert_eq!(synthesized["messages"][0]["role"], "user");
        assert_eq!(synthesized["messages"][0]["content"], " a b");
    }
}
