//! The request's shape on replay: what of a recorded request besides its
//! messages' text is sent and counted (docs/model.md, "Request shape").
//!
//! Owns two rules every side shares:
//!
//! - **What is counted.** A recorded prompt's text, in the order a server
//!   renders it, as pieces ([`walk`]): the tool definitions first (each
//!   tool's name, description and input schema's JSON text), then each
//!   message's content followed by its tool calls' names and arguments
//!   (the arguments' JSON text). Framing (role names, separators) names
//!   cache blocks but holds no token. `tool_choice` and the other recorded
//!   fields are sent but not counted. The plan (`arbor --tokenizer`, the
//!   server model's prompt keys) walks a turn with [`walk`]; the emulator
//!   reads the same pieces out of a body (`arbor_sim`'s
//!   `emulator/request.rs`), so both count alike.
//! - **Flattening** (`--flatten-tools`, [`flatten`]): the shape replays
//!   sent before arbor kept it. Tool definitions and the other fields are
//!   dropped, an assistant's tool calls become text after its content
//!   ([`flat_text`]: `\n`, the name, a space, the arguments), and tool
//!   results lose the call they answer (so they go as user messages).
//!
//! Must not: know an API's JSON (that is `arbor_backends`' request body).

use crate::content::{MessageRef, Recorded};
use crate::model::{Role, ToolCall, ToolPart, Workload};
use crate::prompt::wire_role_of;

/// Where a walk's pieces go: bytes that frame (no token) and text.
pub trait Pieces {
    /// Bytes that name the block they fall in but hold no token.
    fn frame(&mut self, bytes: &[u8]);
    /// Text that is counted.
    fn text(&mut self, text: &str);
}

/// The counted pieces of the tool definitions of `prompt`: each tool's
/// name, description and schema text, in order.
pub fn tool_pieces<'a>(prompt: &Recorded<'a>, mut f: impl FnMut(&'a str)) {
    for tool in prompt.shape.iter().flat_map(|s| s.tool_defs.iter()) {
        f(&tool.name);
        if let Some(d) = &tool.description {
            f(d);
        }
        if let Some(s) = &tool.schema {
            f(s);
        }
    }
}

/// The counted pieces of a message: its content, then each tool call's
/// name and arguments.
pub fn message_pieces<'a>(message: &MessageRef<'a>, mut f: impl FnMut(&'a str)) {
    f(message.content);
    calls_pieces(message.calls, f);
}

/// Each call's name and arguments, in order.
pub fn calls_pieces<'a>(calls: &'a [ToolCall], mut f: impl FnMut(&'a str)) {
    for call in calls {
        f(&call.name);
        f(&call.arguments);
    }
}

/// Walks a recorded prompt as a chat body carries it: `tools` `\n` and
/// each tool's pieces, each followed by `\n`, when it has tools; then for
/// each message its wire role ([`wire_role_of`]) and `\n`, its content
/// (the cache-bust `marker` before the first user message's), each tool
/// call as `\n` then its name and arguments, and `\n`.
pub fn walk(prompt: &Recorded<'_>, marker: Option<&str>, out: &mut impl Pieces) {
    if prompt.shape.is_some_and(|s| !s.tool_defs.is_empty()) {
        out.frame(b"tools\n");
        tool_pieces(prompt, |piece| {
            out.text(piece);
            out.frame(b"\n");
        });
    }
    let first_user = prompt.messages.iter().position(|m| m.role == Role::User);
    for (i, m) in prompt.messages.iter().enumerate() {
        out.frame(wire_role_of(m).as_bytes());
        out.frame(b"\n");
        match marker.filter(|_| first_user == Some(i)) {
            Some(marker) => out.text(&format!("{marker}{}", m.content)),
            None => out.text(m.content),
        }
        for call in m.calls {
            out.frame(b"\n");
            out.text(&call.name);
            out.text(&call.arguments);
        }
        out.frame(b"\n");
    }
}

/// An assistant's text with its tool calls written after it, as replays
/// sent them before the shape was kept: for each call a newline (none
/// before the first when there is no text), the name, a space and the
/// arguments.
pub fn flat_text(content: &str, calls: &[ToolCall]) -> String {
    let mut out = String::with_capacity(
        content.len()
            + calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len() + 2)
                .sum::<usize>(),
    );
    out.push_str(content);
    for call in calls {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&call.name);
        out.push(' ');
        out.push_str(&call.arguments);
    }
    out
}

/// What [`flatten`] changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flattened {
    /// Turns whose text carried tools, tool calls or tool results.
    pub turns: u64,
}

/// Rewrites `workload` to the flattened shape (see the module doc):
/// every tree's request shapes dropped, tool calls made text, tool
/// results left as plain tool text. Lengths (`isl`) are kept.
pub fn flatten(workload: &mut Workload) -> Flattened {
    let mut out = Flattened::default();
    for tree in &mut workload.trees {
        tree.shapes.clear();
        for agent in &mut tree.agents {
            for turn in &mut agent.turns {
                let Some(text) = turn.text.as_deref_mut() else {
                    continue;
                };
                let mut changed = text.shape.take().is_some();
                for m in &mut text.messages {
                    match m.tool.take().map(|t| *t) {
                        Some(ToolPart::Calls(calls)) => {
                            m.content = flat_text(&m.content, &calls);
                            changed = true;
                        }
                        Some(ToolPart::Result(_)) => changed = true,
                        None => {}
                    }
                }
                if !text.response_calls.is_empty() {
                    let calls = std::mem::take(&mut text.response_calls);
                    let response = text.response.take().unwrap_or_default();
                    text.response = Some(flat_text(&response, &calls));
                    changed = true;
                }
                out.turns += u64::from(changed);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::recorded_prompt;
    use crate::model::{
        Agent, AgentKind, Message, RequestShape, ToolDef, ToolResult, Tree, Turn, TurnText,
    };

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// A root agent of two turns: a call answered by a tool result.
    fn tree() -> Tree {
        let mut tree = Tree {
            id: "t".into(),
            ..Tree::default()
        };
        let shape = tree.intern_shape(RequestShape {
            tools: Some(r#"[{"type":"function"}]"#.into()),
            tool_defs: vec![ToolDef {
                name: "read".into(),
                description: Some("Reads a file".into()),
                schema: Some(r#"{"type":"object"}"#.into()),
            }],
            ..RequestShape::default()
        });
        let result = Message {
            role: Role::Tool,
            content: "42".into(),
            tool: Some(Box::new(ToolPart::Result(ToolResult {
                call_id: "c1".into(),
                name: None,
            }))),
        };
        let turn = |extends, messages, response: &str, calls| Turn {
            text: Some(Box::new(TurnText {
                extends_previous: extends,
                messages,
                response: Some(response.into()),
                response_calls: calls,
                shape,
            })),
            ..Turn::default()
        };
        tree.agents.push(Agent {
            id: "a".into(),
            parent: None,
            kind: AgentKind::Root,
            recorded_end: None,
            turns: vec![
                turn(
                    false,
                    vec![Message::text(Role::User, "hi")],
                    "",
                    vec![call("c1", "read", r#"{"p":1}"#)],
                ),
                turn(true, vec![result], "done", vec![]),
            ],
        });
        tree
    }

    #[derive(Default)]
    struct Log(Vec<String>);
    impl Pieces for Log {
        fn frame(&mut self, bytes: &[u8]) {
            self.0.push(format!("[{}]", String::from_utf8_lossy(bytes)));
        }
        fn text(&mut self, text: &str) {
            self.0.push(text.to_string());
        }
    }

    #[test]
    fn a_walk_gives_tools_then_messages_with_their_calls() {
        let tree = tree();
        let prompt = recorded_prompt(&tree, 0, 1);
        let mut log = Log::default();
        walk(&prompt, Some("M "), &mut log);
        let expected = [
            "[tools\n]",
            "read",
            "[\n]",
            "Reads a file",
            "[\n]",
            r#"{"type":"object"}"#,
            "[\n]",
            "[user]",
            "[\n]",
            "M hi",
            "[\n]",
            "[assistant]",
            "[\n]",
            "",
            "[\n]",
            "read",
            r#"{"p":1}"#,
            "[\n]",
            "[tool]",
            "[\n]",
            "42",
            "[\n]",
        ];
        assert_eq!(log.0, expected);
    }

    #[test]
    fn flattening_writes_calls_as_text_and_drops_the_shape() {
        let mut workload = Workload {
            trees: vec![tree()],
        };
        assert_eq!(flatten(&mut workload), Flattened { turns: 2 });
        let tree = &workload.trees[0];
        assert!(tree.shapes.is_empty());
        let prompt = recorded_prompt(tree, 0, 1);
        assert!(prompt.shape.is_none());
        let flat: Vec<(Role, &str, usize, bool)> = prompt
            .messages
            .iter()
            .map(|m| (m.role, m.content, m.calls.len(), m.result.is_some()))
            .collect();
        assert_eq!(
            flat,
            [
                (Role::User, "hi", 0, false),
                (Role::Assistant, r#"read {"p":1}"#, 0, false),
                (Role::Tool, "42", 0, false),
            ]
        );
        assert_eq!(wire_role_of(&prompt.messages[2]), "user");
        assert_eq!(
            flat_text("I'll look.", &[call("a", "f", "{}"), call("b", "g", "[]")]),
            "I'll look.\nf {}\ng []"
        );
    }
}
