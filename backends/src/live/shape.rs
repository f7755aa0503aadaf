//! The request's shape in a body: a recorded turn's tools, tool choice and
//! other fields, and its messages' tool calls and results, written for the
//! API a run calls (docs/run.md, "What is sent").
//!
//! Owns the mapping between OpenAI chat and Anthropic Messages:
//!
//! | neutral (the model)      | chat                                   | Messages                                        |
//! |--------------------------|----------------------------------------|-------------------------------------------------|
//! | tool definition          | `{"type":"function","function":{name, description, parameters}}` | `{name, description, input_schema}` |
//! | tool choice              | `"auto"`, `"required"`, `"none"`, `{"type":"function","function":{"name"}}` | `{"type":"auto"}`, `{"type":"any"}`, `{"type":"none"}`, `{"type":"tool","name"}` |
//! | parallel calls off       | `"parallel_tool_calls": false`         | `tool_choice.disable_parallel_tool_use: true`   |
//! | assistant's tool calls   | `tool_calls: [{id, "type":"function", function: {name, arguments}}]` (arguments a string) | `tool_use` blocks `{id, name, input}` after the text block |
//! | tool result              | `{"role":"tool","tool_call_id", "content"}` (and `name` if recorded) | a `tool_result` block `{tool_use_id, content}` in a user message; consecutive results, and the user text right after them, share one user message |
//!
//! Fields recorded in the API a run calls go out as the recorded JSON text
//! (spliced as bytes, never parsed); for the other API they are converted
//! as above, and `response_format` and `chat_template_kwargs` (chat only)
//! are left out of a Messages body. Arguments that are not a JSON object
//! go to Messages as an empty `input` object.
//!
//! Must not: build the rest of the body (`request.rs`).

use arbor_engine::content::MessageRef;
use arbor_engine::model::{RequestShape, Role, ShapeApi, ToolCall};
use arbor_engine::prompt::wire_role_of;
use serde_json::Value;

fn push_json_str(out: &mut Vec<u8>, text: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Writes `,"tools":...`, `,"tool_choice":...` and the other fields of
/// `shape` for a body of the API `api` (chat or Messages).
pub(super) fn push_fields(out: &mut Vec<u8>, shape: &RequestShape, api: ShapeApi) {
    if shape.api == api {
        if let Some(tools) = &shape.tools {
            out.extend_from_slice(br#","tools":"#);
            out.extend_from_slice(tools.as_bytes());
        }
        if let Some(choice) = &shape.tool_choice {
            out.extend_from_slice(br#","tool_choice":"#);
            out.extend_from_slice(choice.as_bytes());
        }
        for (name, value) in &shape.fields {
            out.push(b',');
            push_json_str(out, name);
            out.push(b':');
            out.extend_from_slice(value.as_bytes());
        }
        return;
    }
    if shape.tools.is_some() {
        push_converted_tools(out, shape, api);
    }
    let choice = shape
        .tool_choice
        .as_deref()
        .and_then(|c| serde_json::from_str::<Value>(c).ok());
    let parallel_off = match shape.api {
        ShapeApi::Chat => field(shape, "parallel_tool_calls") == Some(Value::Bool(false)),
        ShapeApi::Messages => choice
            .as_ref()
            .and_then(|c| c.get("disable_parallel_tool_use"))
            .is_some_and(|d| d == &Value::Bool(true)),
    };
    let kind = choice.as_ref().and_then(ChoiceKind::of);
    match api {
        ShapeApi::Messages => {
            let mut object = serde_json::Map::new();
            match &kind {
                Some(ChoiceKind::Auto) => object.insert("type".into(), "auto".into()),
                Some(ChoiceKind::Any) => object.insert("type".into(), "any".into()),
                Some(ChoiceKind::None) => object.insert("type".into(), "none".into()),
                Some(ChoiceKind::Tool(name)) => {
                    object.insert("type".into(), "tool".into());
                    object.insert("name".into(), name.clone().into())
                }
                None if parallel_off => object.insert("type".into(), "auto".into()),
                None => None,
            };
            if parallel_off {
                object.insert("disable_parallel_tool_use".into(), true.into());
            }
            if !object.is_empty() {
                out.extend_from_slice(br#","tool_choice":"#);
                let _ = serde_json::to_writer(&mut *out, &object);
            }
        }
        ShapeApi::Chat => {
            let value: Option<Value> = match &kind {
                Some(ChoiceKind::Auto) => Some("auto".into()),
                Some(ChoiceKind::Any) => Some("required".into()),
                Some(ChoiceKind::None) => Some("none".into()),
                Some(ChoiceKind::Tool(name)) => {
                    Some(serde_json::json!({"type": "function", "function": {"name": name}}))
                }
                None => None,
            };
            if let Some(value) = value {
                out.extend_from_slice(br#","tool_choice":"#);
                let _ = serde_json::to_writer(&mut *out, &value);
            }
            if parallel_off {
                out.extend_from_slice(br#","parallel_tool_calls":false"#);
            }
        }
    }
}

/// A recorded field's value.
fn field(shape: &RequestShape, name: &str) -> Option<Value> {
    shape
        .fields
        .iter()
        .find(|(k, _)| &**k == name)
        .and_then(|(_, v)| serde_json::from_str(v).ok())
}

/// A tool choice, neutral.
enum ChoiceKind {
    Auto,
    /// Some tool must be called (chat's `required`, Messages' `any`).
    Any,
    None,
    Tool(String),
}

impl ChoiceKind {
    fn of(choice: &Value) -> Option<ChoiceKind> {
        let kind = match choice {
            Value::String(s) => s.as_str(),
            Value::Object(o) => o.get("type").and_then(Value::as_str)?,
            _ => return None,
        };
        Some(match kind {
            "auto" => ChoiceKind::Auto,
            "required" | "any" => ChoiceKind::Any,
            "none" => ChoiceKind::None,
            "function" => ChoiceKind::Tool(
                choice
                    .pointer("/function/name")
                    .and_then(Value::as_str)?
                    .to_string(),
            ),
            "tool" => ChoiceKind::Tool(choice.get("name").and_then(Value::as_str)?.to_string()),
            _ => return None,
        })
    }
}

/// The tools in `api`'s form, from their neutral definitions (the schema
/// spliced as recorded).
fn push_converted_tools(out: &mut Vec<u8>, shape: &RequestShape, api: ShapeApi) {
    out.extend_from_slice(br#","tools":["#);
    for (i, tool) in shape.tool_defs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let messages = api == ShapeApi::Messages;
        out.extend_from_slice(if messages {
            br#"{"name":"#.as_slice()
        } else {
            br#"{"type":"function","function":{"name":"#.as_slice()
        });
        push_json_str(out, &tool.name);
        if let Some(description) = &tool.description {
            out.extend_from_slice(br#","description":"#);
            push_json_str(out, description);
        }
        if let Some(schema) = &tool.schema {
            out.extend_from_slice(if messages {
                br#","input_schema":"#.as_slice()
            } else {
                br#","parameters":"#.as_slice()
            });
            out.extend_from_slice(schema.as_bytes());
        }
        out.extend_from_slice(if messages { b"}".as_slice() } else { b"}}" });
    }
    out.push(b']');
}

/// One message of a chat body: `{"role":...,"content":...}` with its tool
/// calls or the call it answers. `content` is the text to send (the
/// message's, or marked); empty text with calls goes as `null`.
pub(super) fn push_chat_message(out: &mut Vec<u8>, m: &MessageRef<'_>, content: &str) {
    out.extend_from_slice(br#"{"role":""#);
    out.extend_from_slice(wire_role_of(m).as_bytes());
    out.extend_from_slice(br#"","content":"#);
    if content.is_empty() && !m.calls.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        push_json_str(out, content);
    }
    if !m.calls.is_empty() {
        out.extend_from_slice(br#","tool_calls":["#);
        for (i, call) in m.calls.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(br#"{"id":"#);
            push_json_str(out, &call.id);
            out.extend_from_slice(br#","type":"function","function":{"name":"#);
            push_json_str(out, &call.name);
            out.extend_from_slice(br#","arguments":"#);
            push_json_str(out, &call.arguments);
            out.extend_from_slice(b"}}");
        }
        out.push(b']');
    }
    if let (Role::Tool, Some(result)) = (m.role, m.result) {
        out.extend_from_slice(br#","tool_call_id":"#);
        push_json_str(out, &result.call_id);
        if let Some(name) = &result.name {
            out.extend_from_slice(br#","name":"#);
            push_json_str(out, name);
        }
    }
    out.push(b'}');
}

/// The `messages` array's items of a Messages body (system messages
/// left out: they are the `system` field). `content(i)` is the text to
/// send for message `i` (its own, or marked).
pub(super) fn push_messages_messages<'t>(
    out: &mut Vec<u8>,
    messages: &[MessageRef<'t>],
    content: impl Fn(usize) -> std::borrow::Cow<'t, str>,
) {
    let mut first = true;
    // Inside a user message of tool results (its content array open).
    let mut in_results = false;
    for (i, m) in messages.iter().enumerate() {
        if m.role == Role::System {
            continue;
        }
        let text = content(i);
        let is_result = m.role == Role::Tool && m.result.is_some();
        if in_results && m.role == Role::User {
            // The user's text after tool results: a text block of theirs.
            if !text.is_empty() {
                out.extend_from_slice(br#",{"type":"text","text":"#);
                push_json_str(out, &text);
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
            in_results = false;
            continue;
        }
        if in_results && !is_result {
            out.extend_from_slice(b"]}");
            in_results = false;
        }
        if is_result {
            if in_results {
                out.push(b',');
            } else {
                if !first {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"role":"user","content":["#);
                in_results = true;
            }
            out.extend_from_slice(br#"{"type":"tool_result","tool_use_id":"#);
            push_json_str(out, m.result.map_or("", |r| r.call_id.as_str()));
            out.extend_from_slice(br#","content":"#);
            push_json_str(out, &text);
            out.push(b'}');
            first = false;
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(br#"{"role":""#);
        out.extend_from_slice(wire_role_of(m).as_bytes());
        out.extend_from_slice(br#"","content":"#);
        if m.calls.is_empty() {
            push_json_str(out, &text);
        } else {
            out.push(b'[');
            let mut block = false;
            if !text.is_empty() {
                out.extend_from_slice(br#"{"type":"text","text":"#);
                push_json_str(out, &text);
                out.push(b'}');
                block = true;
            }
            for call in m.calls {
                if block {
                    out.push(b',');
                }
                push_tool_use(out, call);
                block = true;
            }
            out.push(b']');
        }
        out.push(b'}');
    }
    if in_results {
        out.extend_from_slice(b"]}");
    }
}

/// A `tool_use` block: the arguments spliced as the `input` object.
fn push_tool_use(out: &mut Vec<u8>, call: &ToolCall) {
    out.extend_from_slice(br#"{"type":"tool_use","id":"#);
    push_json_str(out, &call.id);
    out.extend_from_slice(br#","name":"#);
    push_json_str(out, &call.name);
    out.extend_from_slice(br#","input":"#);
    if is_object(&call.arguments) {
        out.extend_from_slice(call.arguments.as_bytes());
    } else {
        out.extend_from_slice(b"{}");
    }
    out.push(b'}');
}

/// Whether `text` is one JSON object.
fn is_object(text: &str) -> bool {
    text.trim_start().starts_with('{')
        && serde_json::from_str::<&serde_json::value::RawValue>(text).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::model::ToolDef;

    fn fields_of(shape: &RequestShape, api: ShapeApi) -> Value {
        let mut out = b"{\"x\":0".to_vec();
        push_fields(&mut out, shape, api);
        out.push(b'}');
        serde_json::from_slice(&out).expect("JSON")
    }

    fn messages_shape(choice: &str) -> RequestShape {
        RequestShape {
            api: ShapeApi::Messages,
            tools: Some(
                r#"[{"name":"f","input_schema":{"type":"object"},"cache_control":{}}]"#.into(),
            ),
            tool_defs: vec![ToolDef {
                name: "f".into(),
                description: Some("d".into()),
                schema: Some(r#"{"type":"object"}"#.into()),
            }],
            tool_choice: Some(choice.into()),
            fields: Vec::new(),
        }
    }

    #[test]
    fn the_same_api_gets_the_recorded_text_and_the_other_a_conversion() {
        let shape = messages_shape(r#"{"type":"any","disable_parallel_tool_use":true}"#);
        // Messages to Messages: as recorded, byte for byte.
        let mut out = Vec::new();
        push_fields(&mut out, &shape, ShapeApi::Messages);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#","tools":[{"name":"f","input_schema":{"type":"object"},"cache_control":{}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}"#
        );
        // Messages to chat: converted.
        let chat = fields_of(&shape, ShapeApi::Chat);
        assert_eq!(
            chat["tools"],
            serde_json::json!([{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}])
        );
        assert_eq!(chat["tool_choice"], "required");
        assert_eq!(chat["parallel_tool_calls"], false);
        let named = fields_of(
            &messages_shape(r#"{"type":"tool","name":"f"}"#),
            ShapeApi::Chat,
        );
        assert_eq!(
            named["tool_choice"],
            serde_json::json!({"type": "function", "function": {"name": "f"}})
        );
        // Chat to Messages: `none`, and chat-only fields left out.
        let chat_shape = RequestShape {
            api: ShapeApi::Chat,
            tools: Some("[]".into()),
            tool_choice: Some(r#""none""#.into()),
            fields: vec![
                ("parallel_tool_calls".into(), "false".into()),
                ("response_format".into(), r#"{"type":"json_object"}"#.into()),
            ],
            ..RequestShape::default()
        };
        let messages = fields_of(&chat_shape, ShapeApi::Messages);
        assert_eq!(
            messages["tool_choice"],
            serde_json::json!({"type": "none", "disable_parallel_tool_use": true})
        );
        assert!(messages.get("response_format").is_none());
        assert_eq!(
            fields_of(&chat_shape, ShapeApi::Chat)["response_format"]["type"],
            "json_object"
        );
    }
}
