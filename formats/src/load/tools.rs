//! Tools as chat and Messages bodies record them, read into the model's
//! neutral form (docs/model.md, "Request shape").
//!
//! Owns reading a request's `tools`, `tool_choice` and the other fields a
//! chat template renders into a [`RequestShape`] (the recorded JSON text
//! kept, the tools also read neutral), and an OpenAI assistant message's
//! `tool_calls` into [`ToolCall`]s. Anthropic's `tool_use` and
//! `tool_result` content blocks are read with the rest of a message's
//! content (`fields.rs`). Which body a request was is decided here
//! ([`ShapeApi`]): the form of its tools (`function` objects are chat,
//! `input_schema` is Messages), else the caller's guess.

use serde::Deserialize;
use serde_json::value::RawValue;

use arbor_engine::model::{RequestShape, ShapeApi, ToolCall, ToolDef};

use super::json::{self, Fault};

/// The fields besides the messages a recorded request may carry, as
/// recorded JSON text; read with the request's other fields.
#[derive(Default)]
pub(super) struct RawShape {
    pub(super) tools: Option<Box<RawValue>>,
    pub(super) tool_choice: Option<Box<RawValue>>,
    /// `parallel_tool_calls`, `response_format`, `chat_template_kwargs`.
    pub(super) fields: Vec<(&'static str, Box<RawValue>)>,
}

/// The other fields kept, in the order they are sent.
pub(super) const KEPT_FIELDS: [&str; 3] = [
    "parallel_tool_calls",
    "response_format",
    "chat_template_kwargs",
];

#[derive(Deserialize)]
#[serde(expecting = "a tool definition (an object with `function`, or with `name`)")]
struct RawTool {
    /// OpenAI chat: `{"type": "function", "function": {...}}`.
    #[serde(default)]
    function: Option<RawFunction>,
    /// Anthropic Messages: `{"name", "description", "input_schema"}`.
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    input_schema: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
#[serde(expecting = "a function object (`name`, `description`, `parameters`)")]
struct RawFunction {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Box<RawValue>>,
}

/// Reads `raw` into a shape; `guess` is the API when the tools do not
/// tell (no tools, or none of either form). `at` is the JSON path of the
/// request (`$.request`) for messages.
pub(super) fn read_shape(raw: RawShape, guess: ShapeApi, at: &str) -> Result<RequestShape, Fault> {
    let mut api = guess;
    let mut tool_defs = Vec::new();
    if let Some(tools) = &raw.tools {
        let path = format!("{at}.tools");
        let parsed: Vec<RawTool> =
            json::parse_value(tools.get(), "an array of tool definitions", &path)?;
        for (i, tool) in parsed.into_iter().enumerate() {
            match (tool.function, tool.name) {
                (Some(f), _) => {
                    api = ShapeApi::Chat;
                    tool_defs.push(ToolDef {
                        name: f.name,
                        description: f.description,
                        schema: f.parameters.map(|p| p.get().into()),
                    });
                }
                (None, Some(name)) => {
                    api = ShapeApi::Messages;
                    tool_defs.push(ToolDef {
                        name,
                        description: tool.description,
                        schema: tool.input_schema.map(|p| p.get().into()),
                    });
                }
                (None, None) => {
                    return Err(Fault::at(
                        format!("{path}[{i}]"),
                        "a tool without `function` or `name`: expected an OpenAI function \
                         tool or an Anthropic tool",
                    ))
                }
            }
        }
    }
    Ok(RequestShape {
        api,
        tools: raw.tools.map(|t| t.get().into()),
        tool_defs,
        tool_choice: raw.tool_choice.map(|t| t.get().into()),
        // By name: the order the native form writes them in.
        fields: {
            let mut fields: Vec<(Box<str>, Box<str>)> = raw
                .fields
                .into_iter()
                .map(|(k, v)| (k.into(), v.get().into()))
                .collect();
            fields.sort();
            fields
        },
    })
}

/// One entry of an OpenAI assistant message's `tool_calls`.
#[derive(Deserialize)]
#[serde(expecting = "a tool call (`id`, `function` with `name` and `arguments`)")]
pub(super) struct RawToolCall {
    #[serde(default)]
    id: Option<String>,
    function: RawCalled,
}

#[derive(Deserialize)]
#[serde(expecting = "a called function (`name`, `arguments`)")]
struct RawCalled {
    name: String,
    /// A string of JSON text (OpenAI's), or a JSON value some clients send.
    #[serde(default)]
    arguments: Option<Box<RawValue>>,
}

impl RawToolCall {
    pub(super) fn into_call(self) -> ToolCall {
        ToolCall {
            id: self.id.unwrap_or_default(),
            name: self.function.name,
            arguments: self
                .function
                .arguments
                .map(|a| arguments_text(&a))
                .unwrap_or_default(),
        }
    }
}

/// The arguments' JSON text: a JSON string's value, or the value's own
/// text (an object).
pub(super) fn arguments_text(raw: &RawValue) -> String {
    let text = raw.get();
    if text.starts_with('"') {
        serde_json::from_str::<String>(text).unwrap_or_default()
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("valid JSON")
    }

    #[test]
    fn chat_and_messages_tools_read_neutral_with_their_text_kept() {
        let chat = r#"[{"type": "function", "function": {"name": "read", "description": "Reads", "parameters": {"type": "object", "properties": {"p": {"type": "string"}}}}}]"#;
        let shape = read_shape(
            RawShape {
                tools: Some(raw(chat)),
                tool_choice: Some(raw(r#""auto""#)),
                fields: vec![("parallel_tool_calls", raw("false"))],
            },
            ShapeApi::Messages,
            "$.request",
        )
        .expect("reads");
        assert_eq!(shape.api, ShapeApi::Chat, "the tools' form decides");
        assert_eq!(shape.tools.as_deref(), Some(chat));
        assert_eq!(shape.tool_choice.as_deref(), Some(r#""auto""#));
        assert_eq!(
            shape.tool_defs,
            [ToolDef {
                name: "read".into(),
                description: Some("Reads".into()),
                schema: Some(
                    r#"{"type": "object", "properties": {"p": {"type": "string"}}}"#.into()
                ),
            }]
        );
        let messages = r#"[{"name": "read", "input_schema": {"type":"object"}}]"#;
        let shape = read_shape(
            RawShape {
                tools: Some(raw(messages)),
                ..RawShape::default()
            },
            ShapeApi::Chat,
            "$.request",
        )
        .expect("reads");
        assert_eq!(shape.api, ShapeApi::Messages);
        assert_eq!(
            shape.tool_defs[0].schema.as_deref(),
            Some(r#"{"type":"object"}"#)
        );
    }

    #[test]
    fn bad_tools_name_their_place() {
        for (tools, parts) in [
            (
                r#"{"a": 1}"#,
                &["$.request.tools", "expected a sequence"][..],
            ),
            (
                r#"[{"type": "function"}]"#,
                &["$.request.tools[0]", "without `function` or `name`"][..],
            ),
            (
                r#"[{"function": {"name": 3}}]"#,
                &["$.request.tools[0].function.name", "invalid type"][..],
            ),
        ] {
            let fault = read_shape(
                RawShape {
                    tools: Some(raw(tools)),
                    ..RawShape::default()
                },
                ShapeApi::Chat,
                "$.request",
            )
            .expect_err("refused");
            let message = fault.on_line("f", 1).to_string();
            for part in parts {
                assert!(message.contains(part), "{message} lacks {part}");
            }
        }
    }

    #[test]
    fn arguments_are_the_json_text() {
        assert_eq!(arguments_text(&raw(r#""{\"p\": 1}""#)), r#"{"p": 1}"#);
        assert_eq!(arguments_text(&raw(r#"{"p": 1}"#)), r#"{"p": 1}"#);
    }
}
