//! The request body of a turn for OpenAI's Responses API (`--api
//! responses`, `POST /v1/responses`).
//!
//! Owns [`build`]: the turn's system-role content as `instructions`
//! (joined with newlines, as the Messages body's `system`), its other
//! messages as `input` items `{"role", "content"}` with the roles chat
//! sends (a tool result goes as a `user` message, as in chat, until the
//! tree model carries tool calls), synthesized text as one user item;
//! the play's cache-bust marker before the first user message's text;
//! then `"stream": true`, `"store": false` (nothing kept server-side),
//! `max_output_tokens` (the only output-length field the API takes),
//! `ignore_eos` when asked, and `--extra-body` merged last. Written
//! through a JSON map: a Responses run is not the hot path the chat
//! writer is tuned for.

use serde_json::{json, Map, Value};

use arbor_engine::prompt::{wire_role, Prompt};
use arbor_engine::Role;

/// What a Responses body carries besides its prompt (the run's
/// `BodyConfig`, as this API reads it).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a> {
    pub model: &'a str,
    pub ignore_eos: bool,
    /// `--extra-body`, merged last.
    pub extra_body: Option<&'a Map<String, Value>>,
}

/// The Responses body of `prompt`, asking for `max_tokens` output
/// tokens (at least one).
pub fn build(
    config: Fields<'_>,
    prompt: &Prompt<'_>,
    max_tokens: u32,
    marker: Option<&str>,
) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("model".into(), Value::from(config.model));
    let mut marker = marker;
    let mut marked = |content: &str| match marker.take() {
        Some(m) => format!("{m}{content}"),
        None => content.to_string(),
    };
    let mut input: Vec<Value> = Vec::new();
    match prompt {
        Prompt::Synthesized(text) => {
            input.push(json!({"role": "user", "content": marked(text)}));
        }
        Prompt::Recorded(recorded) => {
            // Tool calls and results go as text (the Responses items for
            // them are not built yet); recorded tools are not sent.
            let messages = &recorded.messages;
            let system: Vec<&str> = messages
                .iter()
                .filter(|m| m.role == Role::System)
                .map(|m| m.content)
                .collect();
            if !system.is_empty() {
                body.insert("instructions".into(), Value::from(system.join("\n")));
            }
            for m in messages.iter().filter(|m| m.role != Role::System) {
                let content = match m.role {
                    Role::User => marked(m.content),
                    _ => m.content.to_string(),
                };
                input.push(json!({"role": wire_role(m.role), "content": content}));
            }
        }
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("stream".into(), Value::Bool(true));
    body.insert("store".into(), Value::Bool(false));
    body.insert("max_output_tokens".into(), Value::from(max_tokens.max(1)));
    if config.ignore_eos {
        body.insert("ignore_eos".into(), Value::Bool(true));
    }
    if let Some(extra) = config.extra_body {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    serde_json::to_vec(&Value::Object(body)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::content::MessageRef;

    fn body(config: Fields<'_>, prompt: &Prompt<'_>, marker: Option<&str>) -> Value {
        serde_json::from_slice(&build(config, prompt, 0, marker)).expect("json")
    }

    #[test]
    fn system_is_instructions_and_the_rest_are_items() {
        let extra = serde_json::from_str::<Map<String, Value>>(r#"{"store":true}"#).ok();
        let config = Fields {
            model: "m",
            ignore_eos: true,
            extra_body: extra.as_ref(),
        };
        let m = MessageRef::text;
        let prompt = Prompt::Recorded(arbor_engine::content::Recorded {
            messages: vec![
                m(Role::System, "be brief"),
                m(Role::User, "hi"),
                m(Role::Assistant, "hello"),
                m(Role::Tool, "42"),
                m(Role::User, "again"),
            ],
            shape: None,
        });
        let b = body(config, &prompt, Some("[m]"));
        assert_eq!(b["model"], "m");
        assert_eq!(b["instructions"], "be brief");
        assert_eq!(
            b["input"],
            json!([
                {"role": "user", "content": "[m]hi"},
                {"role": "assistant", "content": "hello"},
                {"role": "user", "content": "42"},
                {"role": "user", "content": "again"},
            ])
        );
        assert_eq!(b["stream"], true);
        assert_eq!(b["store"], true, "--extra-body is merged last");
        assert_eq!(b["max_output_tokens"], 1, "at least one token");
        assert_eq!(b["ignore_eos"], true);
        for chat_only in [
            "max_tokens",
            "max_completion_tokens",
            "stream_options",
            "messages",
        ] {
            assert!(b.get(chat_only).is_none(), "{chat_only}");
        }
        let plain = body(Fields::default(), &Prompt::Synthesized(" a b".into()), None);
        assert_eq!(plain["input"], json!([{"role": "user", "content": " a b"}]));
        assert!(plain.get("instructions").is_none());
        assert_eq!(plain["store"], false);
    }
}
