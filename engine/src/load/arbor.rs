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

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::InputError;
use crate::model::{
    Agent, AgentKind, Anchor, Edge, EdgeKind, HashScope, InputKind, Message, Role, Tree, Turn,
    TurnText,
};
use crate::time::{Nanos, MAX_SECONDS, NANOS_PER_SEC};

/// The largest time the format accepts, in nanoseconds (as for every format).
const MAX_NANOS: Nanos = (MAX_SECONDS as u64) * NANOS_PER_SEC;

pub const VERSION: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TreeRecord {
    arbor: u32,
    id: String,
    #[serde(default)]
    arrival_ns: Nanos,
    #[serde(default)]
    block_size: u32,
    #[serde(default)]
    hash_scope: ScopeRecord,
    #[serde(default)]
    tool_tokens: u32,
    #[serde(default)]
    system_tokens: u32,
    #[serde(default)]
    models: Vec<String>,
    agents: Vec<AgentRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edges: Option<Vec<EdgeRecord>>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentRecord {
    id: String,
    #[serde(default)]
    parent: Option<u32>,
    kind: KindRecord,
    #[serde(default)]
    end_ns: Option<Nanos>,
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
struct TurnRecord {
    start_ns: Nanos,
    #[serde(default)]
    duration_ns: Option<Nanos>,
    isl: u32,
    osl: u32,
    #[serde(default)]
    ttft_ns: Option<Nanos>,
    #[serde(default)]
    model: Option<u16>,
    #[serde(default)]
    input: InputRecord,
    #[serde(default)]
    hash_ids: Vec<u32>,
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
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageRecord {
    role: RoleRecord,
    content: String,
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
struct EdgeRecord {
    from: [u32; 2],
    to: [u32; 2],
    anchor: AnchorRecord,
    gap_ns: Nanos,
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
pub fn load_path(path: &Path) -> Result<Vec<Tree>, InputError> {
    let name = path.display().to_string();
    let file =
        File::open(path).map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
    let mut trees = Vec::new();
    let mut line = String::new();
    let mut reader = BufReader::new(file);
    let mut number = 0usize;
    loop {
        line.clear();
        number += 1;
        let read = reader.read_line(&mut line).map_err(|e| {
            InputError::at(&name, format!("line {number}"), format!("cannot read: {e}"))
        })?;
        if read == 0 {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        trees.push(parse_line(&line, &name, number)?);
    }
    if trees.is_empty() {
        return Err(InputError::whole(
            name,
            "empty input: expected one arbor tree (a JSON object) per line",
        ));
    }
    Ok(trees)
}

/// Parses one line (one tree). `file` and `line` name it in errors.
pub fn parse_line(text: &str, file: &str, line: usize) -> Result<Tree, InputError> {
    let place = |path: String| format!("line {line}, {path}");
    let mut de = serde_json::Deserializer::from_str(text);
    let record: TreeRecord = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        InputError::at(file, place(format!("$.{path}")), format!("{inner}"))
    })?;
    de.end().map_err(|e| {
        InputError::at(
            file,
            format!("line {line}"),
            format!("expected one JSON object per line: {e}"),
        )
    })?;
    into_tree(record, &format!("{file}:line {line}"))
        .map_err(|(path, message)| InputError::at(file, place(path), message))
}

fn check_time(value: Nanos, path: impl FnOnce() -> String) -> Result<Nanos, (String, String)> {
    if value > MAX_NANOS {
        return Err((
            path(),
            format!("expected at most {MAX_NANOS} ns, got {value}"),
        ));
    }
    Ok(value)
}

fn into_tree(record: TreeRecord, source: &str) -> Result<Tree, (String, String)> {
    if record.arbor != VERSION {
        return Err((
            "$.arbor".into(),
            format!("expected format version {VERSION}, got {}", record.arbor),
        ));
    }
    let models = record.models.len();
    let mut agents = Vec::with_capacity(record.agents.len());
    for (a, agent) in record.agents.into_iter().enumerate() {
        let mut turns = Vec::with_capacity(agent.turns.len());
        for (t, turn) in agent.turns.into_iter().enumerate() {
            let at = |field: &str| format!("$.agents[{a}].turns[{t}].{field}");
            if let Some(m) = turn.model {
                if m as usize >= models {
                    return Err((
                        at("model"),
                        format!("expected an index into `models` ({models} entries), got {m}"),
                    ));
                }
            }
            turns.push(Turn {
                start: check_time(turn.start_ns, || at("start_ns"))?,
                duration: turn
                    .duration_ns
                    .map(|d| check_time(d, || at("duration_ns")))
                    .transpose()?,
                isl: turn.isl,
                osl: turn.osl,
                ttft: turn
                    .ttft_ns
                    .map(|d| check_time(d, || at("ttft_ns")))
                    .transpose()?,
                model: turn.model,
                input_kind: match turn.input {
                    InputRecord::ToolResult => InputKind::ToolResult,
                    InputRecord::UserText => InputKind::UserText,
                    InputRecord::Unknown => InputKind::Unknown,
                },
                hash_ids: turn.hash_ids.into(),
                text: turn.text.map(|t| {
                    Box::new(TurnText {
                        extends_previous: t.extends_previous,
                        messages: t
                            .messages
                            .into_iter()
                            .map(|m| Message {
                                role: m.role.into(),
                                content: m.content,
                            })
                            .collect(),
                        response: t.response,
                    })
                }),
                tokens_estimated: turn.tokens_estimated,
            });
        }
        agents.push(Agent {
            id: agent.id,
            parent: agent.parent,
            kind: match agent.kind {
                KindRecord::Root => AgentKind::Root,
                KindRecord::Blocking => AgentKind::Blocking,
                KindRecord::Background => AgentKind::Background,
            },
            recorded_end: agent
                .end_ns
                .map(|e| check_time(e, || format!("$.agents[{a}].end_ns")))
                .transpose()?,
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
            let flat = |[agent, turn]: [u32; 2], path: String| -> Result<u32, (String, String)> {
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
                    gap: check_time(edge.gap_ns, || format!("$.edges[{i}].gap_ns"))?,
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
        arrival: check_time(record.arrival_ns, || "$.arrival_ns".into())?,
        agents,
        explicit_edges,
        models: record.models,
        block_size: record.block_size,
        hash_scope: match record.hash_scope {
            ScopeRecord::Local => HashScope::Local,
            ScopeRecord::Global => HashScope::Global,
        },
        tool_tokens: record.tool_tokens,
        system_tokens: record.system_tokens,
    })
}

/// Writes one tree as one line of the native form. Explicit edges are
/// written when the tree has them.
pub fn write_tree(tree: &Tree, out: &mut impl Write) -> std::io::Result<()> {
    let offsets = tree.turn_offsets();
    let pair = |flat: u32| -> [u32; 2] {
        let agent = offsets.partition_point(|&o| o <= flat).saturating_sub(1);
        [agent as u32, flat - offsets[agent]]
    };
    let record = TreeRecord {
        arbor: VERSION,
        id: tree.id.clone(),
        arrival_ns: tree.arrival,
        block_size: tree.block_size,
        hash_scope: match tree.hash_scope {
            HashScope::Local => ScopeRecord::Local,
            HashScope::Global => ScopeRecord::Global,
        },
        tool_tokens: tree.tool_tokens,
        system_tokens: tree.system_tokens,
        models: tree.models.clone(),
        agents: tree
            .agents
            .iter()
            .map(|a| AgentRecord {
                id: a.id.clone(),
                parent: a.parent,
                kind: match a.kind {
                    AgentKind::Root => KindRecord::Root,
                    AgentKind::Blocking => KindRecord::Blocking,
                    AgentKind::Background => KindRecord::Background,
                },
                end_ns: a.recorded_end,
                turns: a
                    .turns
                    .iter()
                    .map(|t| TurnRecord {
                        start_ns: t.start,
                        duration_ns: t.duration,
                        isl: t.isl,
                        osl: t.osl,
                        ttft_ns: t.ttft,
                        model: t.model,
                        input: match t.input_kind {
                            InputKind::ToolResult => InputRecord::ToolResult,
                            InputKind::UserText => InputRecord::UserText,
                            InputKind::Unknown => InputRecord::Unknown,
                        },
                        hash_ids: t.hash_ids.to_vec(),
                        text: t.text.as_ref().map(|text| TextRecord {
                            extends_previous: text.extends_previous,
                            messages: text
                                .messages
                                .iter()
                                .map(|m| MessageRecord {
                                    role: m.role.into(),
                                    content: m.content.clone(),
                                })
                                .collect(),
                            response: text.response.clone(),
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
                    gap_ns: e.gap,
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
    use crate::load::synthetic::SyntheticSpec;

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
                "expected u64",
            ),
            (
                TWO_TURNS.replace("\"start_ns\":10", "\"start_ns\":2000000000000000000") + "}",
                "start_ns",
                "expected at most",
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
        let err =
            crate::dag::compile_tree(&tree, &Default::default(), &Default::default()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("f.jsonl:line 2: tree `t`: the edges form a cycle"),
            "{err}"
        );
    }
}
