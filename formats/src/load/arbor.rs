//! The native arbor format: JSONL, one tree per line, in integer
//! nanoseconds, with optional explicit edges.
//!
//! Owns reading and writing that form. It is the normalized form other
//! formats convert to, and the way to hand arbor a DAG whose edges are
//! stated rather than derived. Schema (version 1):
//!
//! ```json
//! {"arbor": 1, "id": "t1", "arrival_ns": 0, "block_size": 64,
//!  "tool_tokens": 0, "system_tokens": 0, "models": ["m"],
//!  "agents": [
//!    {"id": "root", "parent": null, "kind": "root", "end_ns": null,
//!     "turns": [{"start_ns": 0, "duration_ns": 1500000000, "isl": 100,
//!                "osl": 10, "ttft_ns": null, "model": 0,
//!                "input": "user_text", "hash_ids": [1, 2]}]}],
//!  "edges": [{"from": [0, 0], "to": [0, 1], "anchor": "end",
//!             "gap_ns": 1000000000, "kind": "sequence"}]}
//! ```
//!
//! `edges` absent (or `null`) means "derive them from the recorded times";
//! present, they are taken as stated and must form a DAG over existing
//! turns (`[agent index, turn index]`). Unknown keys are an error: the form
//! is written by machines and a typo should not pass silently.

use std::collections::BTreeMap;
use std::io::Write;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use arbor_engine::error::InputError;
use arbor_engine::model::{
    Agent, AgentKind, Anchor, Edge, EdgeKind, HashScope, InputKind, Message, RequestShape, Role,
    ShapeApi, ToolCall, ToolPart, ToolResult, Tree, Turn, TurnText,
};

use super::fields::{Count, HashIds, Ns};
use super::json::{self, Lines};
use super::source::Source;
use super::tools::{read_shape, RawShape};
use crate::input::Loaded;

pub const VERSION: u32 = 1;

/// What a line is, in messages.
const TREE: &str = "an arbor tree (a JSON object with `arbor`, `id` and `agents`)";

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "an arbor tree (a JSON object with `arbor`, `id` and `agents`)")]
struct TreeRecord {
    arbor: Count,
    id: String,
    #[serde(default)]
    arrival_ns: Ns,
    #[serde(default)]
    block_size: Count,
    #[serde(default)]
    hash_scope: ScopeRecord,
    #[serde(default)]
    tool_tokens: Count,
    #[serde(default)]
    system_tokens: Count,
    #[serde(default)]
    models: Vec<String>,
    /// The request shapes turns' text sent (`TurnText::shape` indexes it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    shapes: Vec<ShapeRecord>,
    agents: Vec<AgentRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edges: Option<Vec<EdgeRecord>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "an agent object (`id`, `kind`, `turns`)")]
struct AgentRecord {
    id: String,
    #[serde(default)]
    parent: Option<Count>,
    kind: KindRecord,
    #[serde(default)]
    end_ns: Option<Ns>,
    turns: Vec<TurnRecord>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum KindRecord {
    Root,
    Blocking,
    Background,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a turn object (`start_ns`, `isl`, `osl`)")]
struct TurnRecord {
    start_ns: Ns,
    #[serde(default)]
    duration_ns: Option<Ns>,
    isl: Count,
    osl: Count,
    #[serde(default)]
    ttft_ns: Option<Ns>,
    #[serde(default)]
    model: Option<Count>,
    #[serde(default)]
    input: InputRecord,
    #[serde(default)]
    hash_ids: HashIds,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<TextRecord>,
    #[serde(default, skip_serializing_if = "is_false")]
    tokens_estimated: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ScopeRecord {
    #[default]
    Local,
    Global,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TextRecord {
    #[serde(default)]
    extends_previous: bool,
    messages: Vec<MessageRecord>,
    #[serde(default)]
    response: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    response_calls: Vec<CallRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shape: Option<Count>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageRecord {
    role: RoleRecord,
    content: String,
    /// An assistant's tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallRecord>,
    /// The call a tool message answers, and the tool's name if recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a tool call object (`id`, `name`, `arguments`)")]
struct CallRecord {
    id: String,
    name: String,
    /// The arguments' JSON text, as a string.
    arguments: String,
}

/// A request shape: the fields sent besides the messages, as recorded
/// JSON (see `arbor_engine::model::RequestShape`).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a request shape object (`api`, `tools`, `tool_choice`, `fields`)")]
struct ShapeRecord {
    api: ApiRecord,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Box<RawValue>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    fields: BTreeMap<String, Box<RawValue>>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ApiRecord {
    Chat,
    Messages,
}

impl CallRecord {
    fn of(call: &ToolCall) -> CallRecord {
        CallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
        }
    }

    fn into_call(self) -> ToolCall {
        ToolCall {
            id: self.id,
            name: self.name,
            arguments: self.arguments,
        }
    }
}

impl MessageRecord {
    fn of(m: &Message) -> MessageRecord {
        MessageRecord {
            role: m.role.into(),
            content: m.content.clone(),
            tool_calls: m.calls().iter().map(CallRecord::of).collect(),
            tool_call_id: m.result().map(|r| r.call_id.clone()),
            name: m.result().and_then(|r| r.name.clone()),
        }
    }

    fn into_message(self) -> Message {
        let tool = if !self.tool_calls.is_empty() {
            Some(Box::new(ToolPart::Calls(
                self.tool_calls
                    .into_iter()
                    .map(CallRecord::into_call)
                    .collect(),
            )))
        } else {
            self.tool_call_id.map(|call_id| {
                Box::new(ToolPart::Result(ToolResult {
                    call_id,
                    name: self.name,
                }))
            })
        };
        Message {
            role: self.role.into(),
            content: self.content,
            tool,
        }
    }
}

impl ShapeRecord {
    fn of(shape: &RequestShape) -> ShapeRecord {
        let raw = |text: &str| RawValue::from_string(text.to_string()).ok();
        ShapeRecord {
            api: match shape.api {
                ShapeApi::Chat => ApiRecord::Chat,
                ShapeApi::Messages => ApiRecord::Messages,
            },
            tools: shape.tools.as_deref().and_then(raw),
            tool_choice: shape.tool_choice.as_deref().and_then(raw),
            fields: shape
                .fields
                .iter()
                .filter_map(|(k, v)| Some((k.to_string(), raw(v)?)))
                .collect(),
        }
    }

    fn into_shape(self, at: &str) -> Result<RequestShape, (String, String)> {
        let api = match self.api {
            ApiRecord::Chat => ShapeApi::Chat,
            ApiRecord::Messages => ShapeApi::Messages,
        };
        let mut shape = read_shape(
            RawShape {
                tools: self.tools,
                tool_choice: self.tool_choice,
                fields: Vec::new(),
            },
            api,
            at,
        )
        .map_err(|fault| fault.into_parts())?;
        if shape.api != api {
            return Err((
                format!("{at}.api"),
                format!(
                    "the tools are in the {} form: expected `api` \"{}\"",
                    shape.api.as_str(),
                    shape.api.as_str()
                ),
            ));
        }
        shape.fields = self
            .fields
            .into_iter()
            .map(|(k, v)| (k.into(), v.get().into()))
            .collect();
        Ok(shape)
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RoleRecord {
    System,
    User,
    Assistant,
    Tool,
}

impl From<RoleRecord> for Role {
    fn from(r: RoleRecord) -> Role {
        match r {
            RoleRecord::System => Role::System,
            RoleRecord::User => Role::User,
            RoleRecord::Assistant => Role::Assistant,
            RoleRecord::Tool => Role::Tool,
        }
    }
}

impl From<Role> for RoleRecord {
    fn from(r: Role) -> RoleRecord {
        match r {
            Role::System => RoleRecord::System,
            Role::User => RoleRecord::User,
            Role::Assistant => RoleRecord::Assistant,
            Role::Tool => RoleRecord::Tool,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum InputRecord {
    ToolResult,
    UserText,
    #[default]
    Unknown,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "an edge object (`from`, `to`, `anchor`, `gap_ns`)")]
struct EdgeRecord {
    from: [Count; 2],
    to: [Count; 2],
    anchor: AnchorRecord,
    gap_ns: Ns,
    #[serde(default = "sequence")]
    kind: KindOfEdge,
}

fn sequence() -> KindOfEdge {
    KindOfEdge::Sequence
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum AnchorRecord {
    End,
    Start,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum KindOfEdge {
    Sequence,
    Spawn,
    Join,
}

/// Does this start of a file look like the native form?
pub fn looks_like_arbor(text_prefix: &str) -> bool {
    let text = text_prefix.trim_start_matches('\u{feff}').trim_start();
    text.starts_with('{')
        && text.split_once("\"arbor\"").is_some_and(|(before, after)| {
            !before.contains('[') && after.trim_start().starts_with(':')
        })
}

/// Reads a native JSONL file: one tree per non-empty line.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut lines = Lines::open(input.into(), TREE)?;
    let mut trees = Vec::new();
    while let Some(record) = lines.next::<TreeRecord>()? {
        let source = format!("{}:line {}", lines.file(), lines.line());
        let tree =
            into_tree(record, &source).map_err(|(path, message)| lines.error(&path, message))?;
        trees.push(tree);
    }
    if trees.is_empty() {
        return Err(lines.empty("one arbor tree (a JSON object) per line"));
    }
    Ok(Loaded {
        trees,
        ..Loaded::default()
    })
}

/// Parses one line (one tree). `file` and `line` name it in errors.
pub fn parse_line(text: &str, file: &str, line: usize) -> Result<Tree, InputError> {
    let record: TreeRecord = json::parse(text, TREE).map_err(|f| f.on_line(file, line))?;
    into_tree(record, &format!("{file}:line {line}"))
        .map_err(|(path, message)| InputError::at(file, json::place(line, &path), message))
}

fn into_tree(record: TreeRecord, source: &str) -> Result<Tree, (String, String)> {
    if record.arbor.0 != VERSION {
        return Err((
            "$.arbor".into(),
            format!("expected format version {VERSION}, got {}", record.arbor.0),
        ));
    }
    let models = record.models.len();
    let mut shapes = Vec::with_capacity(record.shapes.len());
    for (i, shape) in record.shapes.into_iter().enumerate() {
        shapes.push(shape.into_shape(&format!("$.shapes[{i}]"))?);
    }
    let mut agents = Vec::with_capacity(record.agents.len());
    for (a, agent) in record.agents.into_iter().enumerate() {
        let mut turns = Vec::with_capacity(agent.turns.len());
        for (t_index, turn) in agent.turns.into_iter().enumerate() {
            let t = t_index;
            let model = match turn.model {
                None => None,
                Some(Count(m)) => match u16::try_from(m) {
                    Ok(m) if (m as usize) < models => Some(m),
                    _ => {
                        return Err((
                            format!("$.agents[{a}].turns[{t}].model"),
                            format!("expected an index into `models` ({models} entries), got {m}"),
                        ))
                    }
                },
            };
            turns.push(Turn {
                start: turn.start_ns.0,
                duration: turn.duration_ns.map(|d| d.0),
                isl: turn.isl.0,
                osl: turn.osl.0,
                ttft: turn.ttft_ns.map(|d| d.0),
                model,
                input_kind: match turn.input {
                    InputRecord::ToolResult => InputKind::ToolResult,
                    InputRecord::UserText => InputKind::UserText,
                    InputRecord::Unknown => InputKind::Unknown,
                },
                hash_ids: turn.hash_ids.ids,
                text: match turn.text {
                    None => None,
                    Some(t) => {
                        let shape = match t.shape {
                            None => None,
                            Some(Count(i)) if (i as usize) < shapes.len() => Some(i),
                            Some(Count(i)) => {
                                return Err((
                                    format!("$.agents[{a}].turns[{t}].text.shape", t = t_index),
                                    format!(
                                        "expected an index into `shapes` ({} entries), got {i}",
                                        shapes.len()
                                    ),
                                ))
                            }
                        };
                        Some(Box::new(TurnText {
                            extends_previous: t.extends_previous,
                            messages: t
                                .messages
                                .into_iter()
                                .map(MessageRecord::into_message)
                                .collect(),
                            response: t.response,
                            response_calls: t
                                .response_calls
                                .into_iter()
                                .map(CallRecord::into_call)
                                .collect(),
                            shape,
                        }))
                    }
                },
                tokens_estimated: turn.tokens_estimated,
            });
        }
        agents.push(Agent {
            id: agent.id,
            parent: agent.parent.map(|p| p.0),
            kind: match agent.kind {
                KindRecord::Root => AgentKind::Root,
                KindRecord::Blocking => AgentKind::Blocking,
                KindRecord::Background => AgentKind::Background,
            },
            recorded_end: agent.end_ns.map(|e| e.0),
            turns,
        });
    }
    let explicit_edges = match record.edges {
        None => None,
        Some(edges) => {
            let mut offsets = Vec::with_capacity(agents.len());
            let mut next = 0u32;
            for agent in &agents {
                offsets.push(next);
                next = next.saturating_add(agent.turns.len() as u32);
            }
            let flat = |[Count(agent), Count(turn)]: [Count; 2],
                        path: String|
             -> Result<u32, (String, String)> {
                let Some(a) = agents.get(agent as usize) else {
                    return Err((
                        path,
                        format!(
                            "expected an agent index below {}, got {agent}",
                            agents.len()
                        ),
                    ));
                };
                if turn as usize >= a.turns.len() {
                    return Err((
                        path,
                        format!(
                            "agent {agent} (`{}`) has {} turns, there is no turn {turn}",
                            a.id,
                            a.turns.len()
                        ),
                    ));
                }
                Ok(offsets[agent as usize] + turn)
            };
            let mut out = Vec::with_capacity(edges.len());
            for (i, edge) in edges.into_iter().enumerate() {
                out.push(Edge {
                    from: flat(edge.from, format!("$.edges[{i}].from"))?,
                    to: flat(edge.to, format!("$.edges[{i}].to"))?,
                    anchor: match edge.anchor {
                        AnchorRecord::End => Anchor::End,
                        AnchorRecord::Start => Anchor::Start,
                    },
                    gap: edge.gap_ns.0,
                    kind: match edge.kind {
                        KindOfEdge::Sequence => EdgeKind::Sequence,
                        KindOfEdge::Spawn => EdgeKind::Spawn,
                        KindOfEdge::Join => EdgeKind::Join,
                    },
                });
            }
            Some(out)
        }
    };
    Ok(Tree {
        id: record.id,
        source: source.to_string(),
        arrival: record.arrival_ns.0,
        agents,
        explicit_edges,
        models: record.models,
        block_size: record.block_size.0,
        hash_scope: match record.hash_scope {
            ScopeRecord::Local => HashScope::Local,
            ScopeRecord::Global => HashScope::Global,
        },
        tool_tokens: record.tool_tokens.0,
        system_tokens: record.system_tokens.0,
        provenance: Default::default(),
        shapes,
    })
}

/// Writes one tree as one line of the native form. Explicit edges are
/// written when the tree has them.
pub fn write_tree(tree: &Tree, out: &mut impl Write) -> std::io::Result<()> {
    let offsets = tree.turn_offsets();
    let pair = |flat: u32| -> [Count; 2] {
        let agent = offsets.partition_point(|&o| o <= flat).saturating_sub(1);
        [Count(agent as u32), Count(flat - offsets[agent])]
    };
    let record = TreeRecord {
        arbor: Count(VERSION),
        id: tree.id.clone(),
        arrival_ns: Ns(tree.arrival),
        block_size: Count(tree.block_size),
        hash_scope: match tree.hash_scope {
            HashScope::Local => ScopeRecord::Local,
            HashScope::Global => ScopeRecord::Global,
        },
        tool_tokens: Count(tree.tool_tokens),
        system_tokens: Count(tree.system_tokens),
        models: tree.models.clone(),
        shapes: tree.shapes.iter().map(ShapeRecord::of).collect(),
        agents: tree
            .agents
            .iter()
            .map(|a| AgentRecord {
                id: a.id.clone(),
                parent: a.parent.map(Count),
                kind: match a.kind {
                    AgentKind::Root => KindRecord::Root,
                    AgentKind::Blocking => KindRecord::Blocking,
                    AgentKind::Background => KindRecord::Background,
                },
                end_ns: a.recorded_end.map(Ns),
                turns: a
                    .turns
                    .iter()
                    .map(|t| TurnRecord {
                        start_ns: Ns(t.start),
                        duration_ns: t.duration.map(Ns),
                        isl: Count(t.isl),
                        osl: Count(t.osl),
                        ttft_ns: t.ttft.map(Ns),
                        model: t.model.map(|m| Count(m.into())),
                        input: match t.input_kind {
                            InputKind::ToolResult => InputRecord::ToolResult,
                            InputKind::UserText => InputRecord::UserText,
                            InputKind::Unknown => InputRecord::Unknown,
                        },
                        hash_ids: HashIds {
                            ids: t.hash_ids.clone(),
                            has_zero: false,
                        },
                        text: t.text.as_ref().map(|text| TextRecord {
                            extends_previous: text.extends_previous,
                            messages: text.messages.iter().map(MessageRecord::of).collect(),
                            response: text.response.clone(),
                            response_calls: text
                                .response_calls
                                .iter()
                                .map(CallRecord::of)
                                .collect(),
                            shape: text.shape.map(Count),
                        }),
                        tokens_estimated: t.tokens_estimated,
                    })
                    .collect(),
            })
            .collect(),
        edges: tree.explicit_edges.as_ref().map(|edges| {
            edges
                .iter()
                .map(|e| EdgeRecord {
                    from: pair(e.from),
                    to: pair(e.to),
                    anchor: match e.anchor {
                        Anchor::End => AnchorRecord::End,
                        Anchor::Start => AnchorRecord::Start,
                    },
                    gap_ns: Ns(e.gap),
                    kind: match e.kind {
                        EdgeKind::Sequence => KindOfEdge::Sequence,
                        EdgeKind::Spawn => KindOfEdge::Spawn,
                        EdgeKind::Join => KindOfEdge::Join,
                    },
                })
                .collect()
        }),
    };
    serde_json::to_writer(&mut *out, &record).map_err(std::io::Error::other)?;
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::SyntheticSpec;

    const TWO_TURNS: &str = r#"{"arbor":1,"id":"t","agents":[{"id":"root","kind":"root","turns":[{"start_ns":0,"duration_ns":5,"isl":1,"osl":1},{"start_ns":10,"isl":1,"osl":1}]}]"#;

    fn with_edges(edges: &str) -> String {
        format!("{TWO_TURNS},\"edges\":{edges}}}")
    }

    #[test]
    fn round_trips_generated_workloads() {
        let workload = "trees=3,turns=6,depth=2,spawn=0.5,hash_ids=true,unknown=0.2,seed=9"
            .parse::<SyntheticSpec>()
            .unwrap()
            .generate();
        for tree in &workload.trees {
            let mut bytes = Vec::new();
            write_tree(tree, &mut bytes).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            assert!(looks_like_arbor(&text));
            let back = parse_line(&text, "f", 1).unwrap();
            assert_eq!(
                back,
                Tree {
                    source: "f:line 1".into(),
                    ..tree.clone()
                }
            );
        }
    }

    /// The recorded shape (tools, calls, results, the answer's calls)
    /// survives a write and a read, in chat and Messages captures.
    #[test]
    fn round_trips_the_request_shape() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/openai-log");
        for name in ["tools-chat.jsonl", "tools-messages.jsonl"] {
            let loaded = super::super::openai_log::load(&dir.join(name)).expect("loads");
            let tree = &loaded.trees[0];
            assert!(!tree.shapes.is_empty());
            let mut bytes = Vec::new();
            write_tree(tree, &mut bytes).unwrap();
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.contains(r#""shapes":[{"api":"#), "{name}");
            let back = parse_line(&text, "f", 1).unwrap();
            assert_eq!(
                back,
                Tree {
                    source: "f:line 1".into(),
                    ..tree.clone()
                },
                "{name}"
            );
        }
        // A shape index past `shapes` is refused with its place.
        let bad = r#"{"arbor":1,"id":"t","agents":[{"id":"r","kind":"root","turns":[{"start_ns":0,"isl":1,"osl":1,"text":{"messages":[],"shape":2}}]}]}"#;
        let msg = parse_line(bad, "f", 1).unwrap_err().to_string();
        assert!(
            msg.contains("$.agents[0].turns[0].text.shape") && msg.contains("0 entries"),
            "{msg}"
        );
        let bad = r#"{"arbor":1,"id":"t","shapes":[{"api":"chat","tools":[{"name":"x","input_schema":{}}]}],"agents":[]}"#;
        let msg = parse_line(bad, "f", 1).unwrap_err().to_string();
        assert!(msg.contains("$.shapes[0].api"), "{msg}");
    }

    #[test]
    fn explicit_edges_are_read_as_flat_ids() {
        let tree = parse_line(
            &with_edges(
                r#"[{"from":[0,0],"to":[0,1],"anchor":"start","gap_ns":7,"kind":"sequence"}]"#,
            ),
            "f",
            1,
        )
        .unwrap();
        let edges = tree.explicit_edges.clone().unwrap();
        assert_eq!(
            edges,
            vec![Edge {
                from: 0,
                to: 1,
                anchor: Anchor::Start,
                gap: 7,
                kind: EdgeKind::Sequence
            }]
        );
        let mut bytes = Vec::new();
        write_tree(&tree, &mut bytes).unwrap();
        assert_eq!(
            parse_line(std::str::from_utf8(&bytes).unwrap(), "f", 1).unwrap(),
            tree
        );
    }

    #[test]
    fn errors_name_line_path_and_expectation() {
        let cases = [
            (
                with_edges(r#"[{"from":[0,0],"to":[0,7],"anchor":"end","gap_ns":0}]"#),
                "line 4, $.edges[0].to",
                "there is no turn 7",
            ),
            (
                with_edges(r#"[{"from":[3,0],"to":[0,1],"anchor":"end","gap_ns":0}]"#),
                "$.edges[0].from",
                "agent index below 1",
            ),
            (
                TWO_TURNS.replace("\"start_ns\":10", "\"start_ns\":-10") + "}",
                "$.agents[0].turns[1].start_ns",
                "-10",
            ),
            (
                TWO_TURNS.replace("\"start_ns\":10", "\"start_ns\":\"soon\"") + "}",
                "$.agents[0].turns[1].start_ns",
                "invalid type: string \"soon\": expected a non-negative integer number of nanoseconds",
            ),
            (
                TWO_TURNS.replace("\"start_ns\":10", "\"start_ns\":2000000000000000000") + "}",
                "start_ns",
                "(at most 1000000000000000000), got 2000000000000000000",
            ),
            (
                TWO_TURNS.replace("\"arbor\":1", "\"arbor\":2") + "}",
                "$.arbor",
                "version 1",
            ),
            (
                TWO_TURNS.replace(
                    "\"isl\":1,\"osl\":1}]",
                    "\"isl\":1,\"osl\":1,\"colour\":3}]",
                ) + "}",
                "colour",
                "unknown field",
            ),
            (TWO_TURNS.to_string(), "line 4", "EOF"),
        ];
        for (text, place, expectation) in cases {
            let err = parse_line(&text, "file.jsonl", 4).unwrap_err().to_string();
            assert!(err.starts_with("file.jsonl: line 4"), "{err}");
            assert!(err.contains(place), "{place} not in {err}");
            assert!(err.contains(expectation), "{expectation} not in {err}");
        }
    }

    #[test]
    fn a_cycle_is_caught_when_compiled() {
        let tree = parse_line(
            &with_edges(
                r#"[{"from":[0,0],"to":[0,1],"anchor":"end","gap_ns":0},{"from":[0,1],"to":[0,0],"anchor":"end","gap_ns":0}]"#,
            ),
            "f.jsonl",
            2,
        )
        .unwrap();
        let err = arbor_engine::dag::compile_tree(&tree, &Default::default(), &Default::default())
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("f.jsonl:line 2: tree `t`: the edges form a cycle"),
            "{err}"
        );
    }
}
