//! AIPerf's agentic graph input, `dag_jsonl` (AIPerf 0.13+, the authored
//! form its Graph IR is compiled from; `docs/formats/aiperf-graph.md`):
//! JSONL, one conversation per line (`session_id`, `turns`), each turn an
//! OpenAI message delta with `max_tokens`, `delay` (ms) and the branches it
//! launches once it completes: `spawns` (fresh-context subagents, joined at
//! the next turn or at `join_at`) and `forks` (children that inherit the
//! parent's context). `pre_session_spawns` start background children before
//! the conversation's first turn.
//!
//! Owns turning those conversations into trees: a conversation no branch
//! names is a root, and each branch child an agent under the agent that
//! launched it (a spawn template named twice is instantiated twice). The
//! edges are the file's own (`explicit_edges`): `delay` before each turn
//! after its predecessor completes, a spawn from the launching turn, a join
//! from the child's last turn into the join turn (gap 0: AIPerf fires a
//! join turn when its children complete). The file records no times, so
//! turn starts are rebuilt from the delays with durations unknown, and
//! every tree arrives at 0. Prompt tokens are estimated from the message
//! text as arbor sends it; `max_tokens` is the output length. Must not
//! touch other formats' rows or the engine's edge rule.

use std::collections::HashMap;

use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use arbor_engine::error::InputError;
use arbor_engine::model::{
    Agent, AgentKind, Anchor, Edge, EdgeKind, HashScope, InputKind, Message, Role, Tree, Turn,
    TurnText,
};
use arbor_engine::time::{Nanos, MAX_SECONDS};

use super::fields::{
    show_number, tokens_for_bytes, Count, Millis, NonEmpty, RawMessage, MAX_NANOS,
};
use super::json::Lines;
use super::sniff::{first_row, has_key, TopKeys};
use super::source::Source;
use super::tally::Tally;
use crate::input::{Loaded, Problem};

/// What a line is, in messages.
const CONVERSATION: &str =
    "an AIPerf DAG conversation (a JSON object with `session_id` and `turns`)";

/// The most agents one file may instantiate (spawn templates named by
/// several parents are copied): far above any real graph, far below what
/// would exhaust memory.
const MAX_AGENTS: usize = 1 << 22;

/// Does this start of a file look like a `dag_jsonl` file? (Its first row
/// has `session_id` and `turns`, and a turn with `messages`, `spawns` or
/// `forks`; abench sessions, which also have `session_id` and `turns`,
/// carry `input_delta` instead.)
pub fn looks_like(text_prefix: &str) -> bool {
    let keys = TopKeys::of(text_prefix);
    keys.has("session_id")
        && keys.has("turns")
        && !keys.has_any(&["system_prompt", "source", "arbor", "request"])
        && first_row(text_prefix).is_some_and(|row| {
            ["messages", "spawns", "forks"]
                .iter()
                .any(|k| has_key(row, k))
                && !has_key(row, "input_delta")
        })
}

// ---------------------------------------------------------------------------
// Schema

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "an AIPerf DAG conversation (a JSON object with `session_id` and `turns`)")]
struct RawConversation {
    session_id: NonEmpty,
    #[serde(default)]
    turns: Vec<RawTurn>,
    #[serde(default)]
    pre_session_spawns: Vec<NonEmpty>,
    #[serde(default)]
    context_mode: Option<ContextMode>,
    /// A request-less orchestrator spine: read only to refuse it by name.
    #[serde(default)]
    orchestrator: Option<bool>,
    #[serde(default)]
    spawns: Option<IgnoredAny>,
    #[serde(default)]
    rounds: Option<IgnoredAny>,
    #[serde(default)]
    think_time_ms: Option<IgnoredAny>,
    #[serde(default)]
    think_time_sigma: Option<IgnoredAny>,
    #[serde(default)]
    think_time_min_ms: Option<IgnoredAny>,
    #[serde(default)]
    think_time_max_ms: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a DAG turn (an object with `messages`)")]
struct RawTurn {
    messages: Vec<RawMessage>,
    #[serde(default)]
    model: Option<NonEmpty>,
    #[serde(default)]
    max_tokens: Option<Count>,
    #[serde(default)]
    delay: Option<Millis>,
    #[serde(default)]
    forks: Vec<Fork>,
    #[serde(default)]
    spawns: Vec<Spawn>,
    /// Request fields AIPerf sends and arbor does not (counted).
    #[serde(default)]
    tools: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    extra: Option<IgnoredObject>,
    /// aiperf-runner's request fields (counted, not sent).
    #[serde(default)]
    endpoint: Option<IgnoredAny>,
    #[serde(default)]
    streaming: Option<IgnoredAny>,
    #[serde(default)]
    raw_system: Option<IgnoredAny>,
    #[serde(default)]
    extra_headers: Option<IgnoredAny>,
    #[serde(default)]
    request_parameters: Option<IgnoredAny>,
}

impl RawTurn {
    /// Whether the turn carries request fields arbor does not send.
    fn has_unsent_fields(&self) -> bool {
        self.tools.is_some()
            || self.extra.is_some()
            || self.endpoint.is_some()
            || self.streaming.is_some()
            || self.raw_system.is_some()
            || self.extra_headers.is_some()
            || self.request_parameters.is_some()
    }
}

/// Any JSON object, skipped.
struct IgnoredObject;

impl<'de> Deserialize<'de> for IgnoredObject {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IgnoredObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IgnoredObject, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IgnoredObject)
            }
        }
        d.deserialize_map(V)
    }
}

/// How a conversation's turns build its prompts (AIPerf's
/// `ConversationContextMode`; names are case-insensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ContextMode {
    /// `deltas_without_responses` (the default): turns accumulate; AIPerf
    /// threads its live responses into the history.
    ThreadedDeltas,
    /// `deltas_with_responses`: turns accumulate, assistant messages
    /// included; live responses are discarded.
    AuthoredDeltas,
    /// `message_array_with_responses`: each turn is its own whole prompt.
    MessageArrays,
}

const CONTEXT_MODES: &str =
    "deltas_without_responses, deltas_with_responses or message_array_with_responses";

impl<'de> Deserialize<'de> for ContextMode {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ContextMode;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                write!(f, "a context mode ({CONTEXT_MODES})")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ContextMode, E> {
                match v.to_ascii_lowercase().as_str() {
                    "deltas_without_responses" => Ok(ContextMode::ThreadedDeltas),
                    "deltas_with_responses" => Ok(ContextMode::AuthoredDeltas),
                    "message_array_with_responses" => Ok(ContextMode::MessageArrays),
                    "message_array_without_responses" => Err(E::custom(format_args!(
                        "expected {CONTEXT_MODES}, got `{v}` (reserved by AIPerf, not implemented)"
                    ))),
                    _ => Err(E::custom(format_args!(
                        "expected {CONTEXT_MODES}, got `{v}`"
                    ))),
                }
            }
        }
        d.deserialize_str(V)
    }
}

/// One `forks` entry: a session id, or `{"child", "background"}`.
struct Fork {
    child: String,
    background: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a fork object (`child`, `background`)")]
struct RawFork {
    child: NonEmpty,
    #[serde(default)]
    background: bool,
}

impl<'de> Deserialize<'de> for Fork {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fork;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a fork (a session id, or an object with `child` and `background`)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Fork, E> {
                if v.is_empty() {
                    return Err(E::custom("expected a non-empty string, got \"\""));
                }
                Ok(Fork {
                    child: v.to_owned(),
                    background: false,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Fork, A::Error> {
                let raw = RawFork::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Fork {
                    child: raw.child.0,
                    background: raw.background,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// One `spawns` entry: a session id (joined at the next turn), or
/// `{"children", "join_at"}`.
struct Spawn {
    children: Vec<String>,
    join_at: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a spawn object (`children`, `join_at`)")]
struct RawSpawn {
    children: Vec<NonEmpty>,
    #[serde(default)]
    join_at: Option<Count>,
}

impl<'de> Deserialize<'de> for Spawn {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Spawn;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a spawn (a session id, or an object with `children` and `join_at`)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Spawn, E> {
                if v.is_empty() {
                    return Err(E::custom("expected a non-empty string, got \"\""));
                }
                Ok(Spawn {
                    children: vec![v.to_owned()],
                    join_at: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Spawn, A::Error> {
                let raw = RawSpawn::deserialize(de::value::MapAccessDeserializer::new(map))?;
                if raw.children.is_empty() {
                    return Err(de::Error::custom(
                        "expected at least one child in `children`, got []",
                    ));
                }
                Ok(Spawn {
                    children: raw.children.into_iter().map(|c| c.0).collect(),
                    join_at: raw.join_at.map(|c| c.0),
                })
            }
        }
        d.deserialize_any(V)
    }
}

// ---------------------------------------------------------------------------
// Conversations as read

/// How a branch child relates to the turn that launches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A fresh-context subagent; joined at `join` when it is set.
    Spawn { join: Option<u32> },
    /// Inherits the parent's context; the parent goes on when background.
    Fork { background: bool },
}

/// One child a turn launches, as written.
struct Branch {
    child: String,
    mode: Mode,
    /// JSON path of the entry, for errors.
    path: String,
}

/// One turn as kept until its tree is built.
struct Step {
    messages: Vec<Message>,
    /// Bytes of the messages' content (the token estimate's input).
    bytes: usize,
    model: Option<u32>,
    osl: u32,
    delay: Nanos,
    branches: Vec<Branch>,
}

struct Session {
    id: String,
    line: usize,
    mode: ContextMode,
    steps: Vec<Step>,
    /// `pre_session_spawns`.
    pre: Vec<String>,
}

/// What the reader counted, for conventions and problems.
#[derive(Default)]
struct Counts {
    spawns: usize,
    forks: usize,
    pre: usize,
    copies: usize,
    no_max_tokens: Tally,
    unsent_fields: Tally,
    dropped_parts: usize,
    modes: [usize; 3],
}

/// Reads one `dag_jsonl` file.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut reader = Lines::open(input.into(), CONVERSATION)?;
    let file = reader.file().to_string();
    let mut loaded = Loaded::default();
    let mut counts = Counts::default();
    let mut sessions: Vec<Session> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut models: Vec<String> = Vec::new();
    let mut model_index: HashMap<String, u32> = HashMap::new();

    while let Some(raw) = reader.next::<RawConversation>()? {
        let session = read_session(
            raw,
            &reader,
            &mut counts,
            &mut loaded.problems,
            &mut models,
            &mut model_index,
        )?;
        if let Some(&first) = index.get(&session.id) {
            return Err(reader.error(
                "$.session_id",
                format!(
                    "duplicate session_id \"{}\" (first on line {}): expected each session_id once",
                    session.id, sessions[first].line
                ),
            ));
        }
        index.insert(session.id.clone(), sessions.len());
        sessions.push(session);
    }
    if sessions.is_empty() {
        return Err(reader.empty(
            "AIPerf DAG conversations (one JSON object per line with `session_id` and `turns`)",
        ));
    }

    let children = resolve(&sessions, &index, &file)?;
    let roots = roots_of(&sessions, &children, &file)?;
    let remaining = instances(&sessions, &children, &roots, &file)?;
    let mut builder = Builder {
        sessions: &mut sessions,
        children: &children,
        models: &models,
        file: &file,
        remaining,
        counts: &mut counts,
    };
    for root in roots {
        let tree = builder.tree(root)?;
        loaded.trees.push(tree);
    }
    report(&mut loaded, &counts, &file, index.len());
    Ok(loaded)
}

fn read_session(
    raw: RawConversation,
    reader: &Lines,
    counts: &mut Counts,
    problems: &mut Vec<Problem>,
    models: &mut Vec<String>,
    model_index: &mut HashMap<String, u32>,
) -> Result<Session, InputError> {
    if raw.orchestrator == Some(true) {
        return Err(reader.error(
            "$.orchestrator",
            "an orchestrator conversation (a request-less spine that re-fires its spawns): expected conversations with turns (arbor does not read orchestrators)",
        ));
    }
    let orchestrator_only = [
        ("spawns", raw.spawns.is_some()),
        ("rounds", raw.rounds.is_some()),
        ("think_time_ms", raw.think_time_ms.is_some()),
        ("think_time_sigma", raw.think_time_sigma.is_some()),
        ("think_time_min_ms", raw.think_time_min_ms.is_some()),
        ("think_time_max_ms", raw.think_time_max_ms.is_some()),
    ];
    if let Some((field, _)) = orchestrator_only.iter().find(|(_, set)| *set) {
        return Err(reader.error(
            &format!("$.{field}"),
            format!("`{field}` is only valid on an orchestrator conversation: expected per-turn `spawns` and `forks`"),
        ));
    }
    if raw.turns.is_empty() {
        return Err(reader.error("$.turns", "[]: expected at least one turn"));
    }
    let mode = raw.context_mode.unwrap_or(ContextMode::ThreadedDeltas);
    counts.modes[mode as usize] += 1;
    let turn_count = raw.turns.len();
    let mut steps = Vec::with_capacity(turn_count);
    for (i, turn) in raw.turns.into_iter().enumerate() {
        let at = |field: &str| format!("$.turns[{i}]{field}");
        if turn.messages.is_empty() {
            return Err(reader.error(
                &at(".messages"),
                "[]: expected at least one message (AIPerf requires a non-empty `messages`)",
            ));
        }
        if turn.has_unsent_fields() {
            counts.unsent_fields.add(1);
        }
        let osl = match turn.max_tokens {
            Some(Count(0)) => {
                return Err(reader.error(&at(".max_tokens"), "expected a positive integer, got 0"))
            }
            Some(Count(n)) => n,
            None => {
                counts.no_max_tokens.note(
                    problems,
                    reader.problem_place(&at("")),
                    "no max_tokens: output length unknown, taken as 0 (no limit is sent)"
                        .to_string(),
                );
                0
            }
        };
        let model = turn.model.map(|NonEmpty(name)| {
            *model_index.entry(name.clone()).or_insert_with(|| {
                models.push(name);
                (models.len() - 1) as u32
            })
        });
        let mut bytes = 0usize;
        let mut messages = Vec::with_capacity(turn.messages.len());
        for (m, raw) in turn.messages.into_iter().enumerate() {
            counts.dropped_parts += raw.content.dropped as usize;
            let mut split = Vec::new();
            raw.into_messages(&mut split);
            for message in split {
                let system_later = message.role == Role::System
                    && match mode {
                        ContextMode::MessageArrays => m > 0,
                        _ => i > 0,
                    };
                if system_later {
                    return Err(reader.error(
                        &format!("$.turns[{i}].messages[{m}].role"),
                        "a `system` message after the prompt's start: expected the one system prompt first in the conversation's first turn (AIPerf refuses it: chat templates drop later system messages)",
                    ));
                }
                bytes += message.content.len();
                messages.push(message);
            }
        }
        let mut branches = Vec::new();
        let mut foreground_fork = None;
        for (f, fork) in turn.forks.into_iter().enumerate() {
            if !fork.background {
                foreground_fork = Some(f);
            }
            branches.push(Branch {
                child: fork.child,
                mode: Mode::Fork {
                    background: fork.background,
                },
                path: at(&format!(".forks[{f}]")),
            });
        }
        if let Some(f) = foreground_fork.filter(|_| i + 1 < turn_count) {
            return Err(reader.error(
                &at(&format!(".forks[{f}]")),
                "a foreground fork before the conversation's last turn: expected foreground forks on the last turn only (or `\"background\": true`)",
            ));
        }
        for (s, spawn) in turn.spawns.into_iter().enumerate() {
            if let Some(join) = spawn.join_at {
                if join as usize <= i || join as usize >= turn_count {
                    return Err(reader.error(
                        &at(&format!(".spawns[{s}].join_at")),
                        format!(
                            "{join}: expected a turn after the spawning turn {i} and before the end ({turn_count} turns)"
                        ),
                    ));
                }
            }
            let join = spawn
                .join_at
                .or(Some(i as u32 + 1))
                .filter(|&j| (j as usize) < turn_count);
            for child in spawn.children {
                branches.push(Branch {
                    child,
                    mode: Mode::Spawn { join },
                    path: at(&format!(".spawns[{s}]")),
                });
            }
        }
        for (b, branch) in branches.iter().enumerate() {
            if branches[..b].iter().any(|o| o.child == branch.child) {
                return Err(reader.error(
                    &branch.path,
                    format!(
                        "\"{}\" is launched twice by this turn: expected each child once per turn",
                        branch.child
                    ),
                ));
            }
        }
        steps.push(Step {
            messages,
            bytes,
            model,
            osl,
            delay: turn.delay.map_or(0, |Millis(d)| d),
            branches,
        });
    }
    let pre: Vec<String> = raw.pre_session_spawns.into_iter().map(|c| c.0).collect();
    for (p, child) in pre.iter().enumerate() {
        if pre[..p].contains(child) {
            return Err(reader.error(
                &format!("$.pre_session_spawns[{p}]"),
                format!("\"{child}\" is listed twice: expected each child once"),
            ));
        }
    }
    Ok(Session {
        id: raw.session_id.0,
        line: reader.line(),
        mode,
        steps,
        pre,
    })
}

/// Each session's children as session indices: `(turn, branch)` entries in
/// turn order after the pre-session ones (`turn` `None`). Refuses a child
/// no line declares, a fork child with two parents, a fork into a
/// payload-isolated conversation and a pre-session child that is also
/// forked.
#[allow(clippy::type_complexity)]
fn resolve(
    sessions: &[Session],
    index: &HashMap<String, usize>,
    file: &str,
) -> Result<Vec<Vec<(usize, Option<usize>, usize)>>, InputError> {
    let mut children = Vec::with_capacity(sessions.len());
    let mut forked_by: HashMap<usize, (usize, String)> = HashMap::new();
    let unknown = |session: &Session, path: &str, child: &str| {
        InputError::at(
            file,
            format!("line {}, {path}", session.line),
            format!("\"{child}\": expected the session_id of a conversation in this file"),
        )
    };
    for session in sessions {
        let mut list = Vec::new();
        for (p, child) in session.pre.iter().enumerate() {
            let path = format!("$.pre_session_spawns[{p}]");
            let Some(&c) = index.get(child) else {
                return Err(unknown(session, &path, child));
            };
            list.push((c, None, p));
        }
        for (i, step) in session.steps.iter().enumerate() {
            for (b, branch) in step.branches.iter().enumerate() {
                let Some(&c) = index.get(&branch.child) else {
                    return Err(unknown(session, &branch.path, &branch.child));
                };
                if let Mode::Fork { .. } = branch.mode {
                    if sessions[c].mode == ContextMode::MessageArrays {
                        return Err(InputError::at(
                            file,
                            format!("line {}, {}", session.line, branch.path),
                            format!(
                                "\"{}\" is forked but its context_mode is message_array_with_responses: expected a fork child to accumulate its parent's context (AIPerf refuses payload isolation on a fork)",
                                branch.child
                            ),
                        ));
                    }
                    let place = format!("line {}, {}", session.line, branch.path);
                    if let Some((_, first)) = forked_by.get(&c) {
                        return Err(InputError::at(
                            file,
                            place,
                            format!(
                                "\"{}\" is forked twice (first at {first}): expected a fork child to have one parent",
                                branch.child
                            ),
                        ));
                    }
                    forked_by.insert(c, (i, place));
                }
                list.push((c, Some(i), b));
            }
        }
        children.push(list);
    }
    for (s, session) in sessions.iter().enumerate() {
        for (p, child) in session.pre.iter().enumerate() {
            let c = index[child];
            if let Some((_, place)) = forked_by.get(&c) {
                return Err(InputError::at(
                    file,
                    format!("line {}, $.pre_session_spawns[{p}]", sessions[s].line),
                    format!(
                        "\"{child}\" is a pre-session child and is forked ({place}): expected pre-session children to be spawned (fresh context)"
                    ),
                ));
            }
        }
    }
    Ok(children)
}

/// Sessions no branch names, in file order; refuses a cycle of branches.
fn roots_of(
    sessions: &[Session],
    children: &[Vec<(usize, Option<usize>, usize)>],
    file: &str,
) -> Result<Vec<usize>, InputError> {
    let mut named = vec![false; sessions.len()];
    for list in children {
        for &(c, _, _) in list {
            named[c] = true;
        }
    }
    // Colours: 0 new, 1 on the current path, 2 done. Iterative DFS.
    let mut state = vec![0u8; sessions.len()];
    for start in 0..sessions.len() {
        if state[start] != 0 {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = 1;
        while let Some(&mut (s, ref mut next)) = stack.last_mut() {
            if let Some(&(c, turn, b)) = children[s].get(*next) {
                *next += 1;
                match state[c] {
                    0 => {
                        state[c] = 1;
                        stack.push((c, 0));
                    }
                    1 => {
                        let from = stack.iter().position(|&(x, _)| x == c).unwrap_or(0);
                        let mut names: Vec<String> = stack[from..]
                            .iter()
                            .map(|&(x, _)| format!("\"{}\"", sessions[x].id))
                            .collect();
                        names.push(format!("\"{}\"", sessions[c].id));
                        let session = &sessions[s];
                        let path = match turn {
                            None => format!("$.pre_session_spawns[{b}]"),
                            Some(i) => session.steps[i].branches[b].path.clone(),
                        };
                        return Err(InputError::at(
                            file,
                            format!("line {}, {path}", session.line),
                            format!(
                                "branches form a cycle ({}): expected spawns and forks to form trees",
                                names.join(" -> ")
                            ),
                        ));
                    }
                    _ => {}
                }
            } else {
                state[s] = 2;
                stack.pop();
            }
        }
    }
    Ok((0..sessions.len()).filter(|&s| !named[s]).collect())
}

/// How many times each session is instantiated: once per root, and once
/// per naming by each instance of its parent. Refuses a graph of more than
/// [`MAX_AGENTS`] agents.
fn instances(
    sessions: &[Session],
    children: &[Vec<(usize, Option<usize>, usize)>],
    roots: &[usize],
    file: &str,
) -> Result<Vec<u64>, InputError> {
    let mut named = vec![0usize; sessions.len()];
    for list in children {
        for &(c, _, _) in list {
            named[c] += 1;
        }
    }
    let mut count = vec![0u64; sessions.len()];
    for &r in roots {
        count[r] = 1;
    }
    // Kahn's order over the (acyclic) naming graph.
    let mut ready: Vec<usize> = roots.to_vec();
    let mut total = 0u64;
    while let Some(s) = ready.pop() {
        total = total.saturating_add(count[s]);
        if total > MAX_AGENTS as u64 {
            return Err(InputError::at(
                file,
                format!("line {}", sessions[s].line),
                format!(
                    "the conversations instantiate more than {MAX_AGENTS} agents (a spawn template named by several turns is copied once per naming): expected a smaller graph"
                ),
            ));
        }
        for &(c, _, _) in &children[s] {
            count[c] = count[c].saturating_add(count[s]);
            named[c] -= 1;
            if named[c] == 0 {
                ready.push(c);
            }
        }
    }
    Ok(count)
}

/// How an agent was launched.
#[derive(Clone, Copy)]
enum Launch {
    Root,
    /// After turn `turn` of agent `parent` completes.
    After {
        parent: u32,
        turn: u32,
        mode: Mode,
    },
    /// Before agent `parent`'s first turn (`pre_session_spawns`).
    Before {
        parent: u32,
    },
}

/// Builds trees from the resolved sessions.
struct Builder<'a> {
    sessions: &'a mut Vec<Session>,
    children: &'a [Vec<(usize, Option<usize>, usize)>],
    models: &'a [String],
    file: &'a str,
    /// Instances of each session still to build: the last one takes the
    /// session's messages, the others copy them.
    remaining: Vec<u64>,
    counts: &'a mut Counts,
}

impl Builder<'_> {
    /// The tree rooted at session `root`: agents breadth first (a parent
    /// before its children), each with its turns, text and tokens; then the
    /// edges and the starts they give.
    fn tree(&mut self, root: usize) -> Result<Tree, InputError> {
        let mut order: Vec<(usize, Launch)> = vec![(root, Launch::Root)];
        let mut next = 0;
        while let Some(&(s, _)) = order.get(next) {
            let parent = next as u32;
            for &(c, turn, b) in &self.children[s] {
                let launch = match turn {
                    None => {
                        self.counts.pre += 1;
                        Launch::Before { parent }
                    }
                    Some(i) => {
                        let mode = self.sessions[s].steps[i].branches[b].mode;
                        match mode {
                            Mode::Spawn { .. } => self.counts.spawns += 1,
                            Mode::Fork { .. } => self.counts.forks += 1,
                        }
                        Launch::After {
                            parent,
                            turn: i as u32,
                            mode,
                        }
                    }
                };
                order.push((c, launch));
            }
            next += 1;
        }
        let mut seen: HashMap<usize, u32> = HashMap::new();
        let mut models: Vec<String> = Vec::new();
        let mut tree_model: HashMap<u32, u16> = HashMap::new();
        let mut agents: Vec<Agent> = Vec::with_capacity(order.len());
        // Per agent: bytes of its prompt so far after each turn (deltas).
        let mut prompt_bytes: Vec<Vec<usize>> = Vec::with_capacity(order.len());
        for &(s, launch) in &order {
            let copies = seen.entry(s).or_insert(0);
            *copies += 1;
            self.remaining[s] = self.remaining[s].saturating_sub(1);
            let last = self.remaining[s] == 0;
            let session = &mut self.sessions[s];
            let id = if *copies == 1 {
                session.id.clone()
            } else {
                self.counts.copies += 1;
                format!("{}#{}", session.id, copies)
            };
            let inherited = match launch {
                Launch::After {
                    parent,
                    turn,
                    mode: Mode::Fork { .. },
                } => Some(inherited_prompt(
                    &agents[parent as usize],
                    &prompt_bytes[parent as usize],
                    turn as usize,
                )),
                _ => None,
            };
            let mut turns = Vec::with_capacity(session.steps.len());
            let mut bytes_after = Vec::with_capacity(session.steps.len());
            let mut total = 0usize;
            for (k, step) in session.steps.iter_mut().enumerate() {
                let kind = input_kind(&step.messages);
                let mut messages = if last {
                    std::mem::take(&mut step.messages)
                } else {
                    step.messages.clone()
                };
                let (extends, bytes) = match (k, session.mode, &inherited) {
                    (_, ContextMode::MessageArrays, _) => (false, step.bytes),
                    (0, _, Some((prefix, prefix_bytes))) => {
                        let mut all = prefix.clone();
                        all.append(&mut messages);
                        messages = all;
                        (false, prefix_bytes + step.bytes)
                    }
                    (0, _, None) => (false, step.bytes),
                    _ => (true, total + step.bytes),
                };
                total = bytes;
                bytes_after.push(bytes);
                let model = match step.model {
                    None => None,
                    Some(g) => {
                        let next = models.len() as u16;
                        let names = self.models;
                        Some(*tree_model.entry(g).or_insert_with(|| {
                            models.push(names[g as usize].clone());
                            next
                        }))
                    }
                };
                turns.push(Turn {
                    start: 0,
                    duration: None,
                    isl: tokens_for_bytes(bytes),
                    osl: step.osl,
                    ttft: None,
                    model,
                    input_kind: kind,
                    hash_ids: Default::default(),
                    text: Some(Box::new(TurnText {
                        extends_previous: extends,
                        messages,
                        response: None,
                        ..TurnText::default()
                    })),
                    tokens_estimated: true,
                });
            }
            let (parent, kind) = match launch {
                Launch::Root => (None, AgentKind::Root),
                Launch::Before { parent } => (Some(parent), AgentKind::Background),
                Launch::After { parent, mode, .. } => (
                    Some(parent),
                    match mode {
                        Mode::Spawn { join: Some(_) } | Mode::Fork { background: false } => {
                            AgentKind::Blocking
                        }
                        _ => AgentKind::Background,
                    },
                ),
            };
            agents.push(Agent {
                id,
                parent,
                kind,
                recorded_end: None,
                turns,
            });
            prompt_bytes.push(bytes_after);
        }
        let session = &self.sessions[root];
        let mut tree = Tree {
            id: session.id.clone(),
            source: format!("{}:line {}", self.file, session.line),
            arrival: 0,
            agents,
            explicit_edges: None,
            models,
            block_size: 0,
            hash_scope: HashScope::Local,
            tool_tokens: 0,
            system_tokens: 0,
            provenance: Default::default(),
            shapes: Vec::new(),
        };
        let launches: Vec<Launch> = order.iter().map(|&(_, l)| l).collect();
        let delays: Vec<Vec<Nanos>> = order
            .iter()
            .map(|&(s, _)| self.sessions[s].steps.iter().map(|t| t.delay).collect())
            .collect();
        let edges = edges_of(&tree, &launches, &delays);
        let starts = starts_of(&tree, &edges, &launches, &delays).ok_or_else(|| {
            InputError::at(
                self.file,
                format!("line {}", session.line),
                format!(
                    "the delays add up past the largest time a trace may state ({} s): expected smaller delays",
                    show_number(MAX_SECONDS)
                ),
            )
        })?;
        let mut flat = starts.into_iter();
        for agent in &mut tree.agents {
            for turn in &mut agent.turns {
                turn.start = flat.next().unwrap_or(0);
            }
        }
        let turns = tree.turn_count() as u32;
        tree.provenance.reconstructed(
            "start rebuilt from the authored delays (no recorded times; durations unknown)",
            turns,
        );
        tree.explicit_edges = Some(edges);
        Ok(tree)
    }
}

/// The prompt a fork child inherits from agent `parent` at its turn
/// `turn`: the messages of the parent's prompt there, and their bytes.
fn inherited_prompt(parent: &Agent, bytes: &[usize], turn: usize) -> (Vec<Message>, usize) {
    let mut start = turn;
    while start > 0
        && parent.turns[start]
            .text
            .as_ref()
            .is_some_and(|t| t.extends_previous)
    {
        start -= 1;
    }
    let messages = parent.turns[start..=turn]
        .iter()
        .filter_map(|t| t.text.as_ref())
        .flat_map(|t| t.messages.iter().cloned())
        .collect();
    (messages, bytes.get(turn).copied().unwrap_or(0))
}

/// What the client added before this turn, by its last message: a tool
/// result, user text, or unknown.
fn input_kind(messages: &[Message]) -> InputKind {
    match messages.last().map(|m| m.role) {
        Some(Role::Tool) => InputKind::ToolResult,
        Some(Role::User) => InputKind::UserText,
        _ => InputKind::Unknown,
    }
}

/// The file's edges: each turn after its predecessor (gap = its delay), a
/// launched child's first turn after the launching turn (gap = the child's
/// first delay), and a join from a joined child's last turn into the join
/// turn (gap 0). Pre-session children have no incoming edge.
fn edges_of(tree: &Tree, launches: &[Launch], delays: &[Vec<Nanos>]) -> Vec<Edge> {
    let offsets = tree.turn_offsets();
    let mut edges = Vec::with_capacity(tree.turn_count() + tree.agents.len());
    let edge = |from: u32, to: u32, gap: Nanos, kind: EdgeKind| Edge {
        from,
        to,
        anchor: Anchor::End,
        gap,
        kind,
    };
    for (a, agent) in tree.agents.iter().enumerate() {
        let base = offsets[a];
        for k in 1..agent.turns.len() as u32 {
            edges.push(edge(
                base + k - 1,
                base + k,
                delays[a][k as usize],
                EdgeKind::Sequence,
            ));
        }
        let Launch::After { parent, turn, mode } = launches[a] else {
            continue;
        };
        let from = offsets[parent as usize] + turn;
        if !agent.turns.is_empty() {
            edges.push(edge(from, base, delays[a][0], EdgeKind::Spawn));
        }
        if let Mode::Spawn { join: Some(j) } = mode {
            let last = base + agent.turns.len() as u32 - 1;
            edges.push(edge(last, offsets[parent as usize] + j, 0, EdgeKind::Join));
        }
    }
    edges
}

/// Each turn's start (flat order) with durations unknown (completion =
/// send): the latest of its incoming edges' `start(from) + gap`; a root's
/// first turn at its delay; a pre-session child's first turn at its
/// parent's session start plus its own delay. `None` past the engine's
/// time range.
fn starts_of(
    tree: &Tree,
    edges: &[Edge],
    launches: &[Launch],
    delays: &[Vec<Nanos>],
) -> Option<Vec<Nanos>> {
    let offsets = tree.turn_offsets();
    let n = tree.turn_count();
    let mut incoming: Vec<Vec<(u32, Nanos)>> = vec![Vec::new(); n];
    for e in edges {
        incoming[e.to as usize].push((e.from, e.gap));
    }
    // A pre-session child waits for its parent's session start: its
    // parent's first turn less that turn's delay, then its own delay.
    let mut session_waits: Vec<Option<(u32, usize)>> = vec![None; n];
    let mut pending: Vec<usize> = incoming.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for e in edges {
        dependents[e.from as usize].push(e.to);
    }
    for (a, launch) in launches.iter().enumerate() {
        if let (Launch::Before { parent }, false) = (launch, tree.agents[a].turns.is_empty()) {
            let first = offsets[a] as usize;
            let parent_first = offsets[*parent as usize];
            if tree.agents[*parent as usize].turns.is_empty() {
                continue;
            }
            session_waits[first] = Some((parent_first, *parent as usize));
            pending[first] += 1;
            dependents[parent_first as usize].push(first as u32);
        }
    }
    let agent_of = |flat: usize| offsets.partition_point(|&o| o as usize <= flat) - 1;
    let mut start: Vec<Nanos> = vec![0; n];
    let mut ready: Vec<usize> = (0..n).filter(|&t| pending[t] == 0).collect();
    let mut done = 0usize;
    while let Some(t) = ready.pop() {
        done += 1;
        let a = agent_of(t);
        let k = t - offsets[a] as usize;
        let mut at: Nanos = if incoming[t].is_empty() && session_waits[t].is_none() {
            delays[a][k]
        } else {
            0
        };
        for &(from, gap) in &incoming[t] {
            at = at.max(start[from as usize].checked_add(gap)?);
        }
        if let Some((parent_first, parent)) = session_waits[t] {
            let session = start[parent_first as usize].saturating_sub(delays[parent][0]);
            at = at.max(session.checked_add(delays[a][k])?);
        }
        if at > MAX_NANOS {
            return None;
        }
        start[t] = at;
        for &d in &dependents[t] {
            pending[d as usize] -= 1;
            if pending[d as usize] == 0 {
                ready.push(d as usize);
            }
        }
    }
    // Launches only point backwards in turn order and joins forwards in the
    // parent, so every turn is reached; a miss would be a bug, not input.
    (done == n).then_some(start)
}

fn report(loaded: &mut Loaded, counts: &Counts, file: &str, sessions: usize) {
    let agents: usize = loaded.trees.iter().map(|t| t.agents.len()).sum();
    loaded.conventions.push(format!(
        "conversations: {sessions} in {} trees ({agents} agents: {} spawned, {} forked, {} pre-session); edges from spawns, forks, join_at and delay",
        loaded.trees.len(),
        counts.spawns,
        counts.forks,
        counts.pre
    ));
    loaded.conventions.push(
        "times: none recorded; turn starts rebuilt from `delay` (ms after the previous turn or the launching turn completes) with durations unknown; every tree arrives at 0"
            .to_string(),
    );
    loaded.conventions.push(
        "tokens: isl estimated from the message text arbor sends (1 token per 4 bytes); osl from max_tokens"
            .to_string(),
    );
    let [without, with, arrays] = counts.modes;
    loaded.conventions.push(format!(
        "context_mode: {without} deltas_without_responses, {with} deltas_with_responses, {arrays} message_array_with_responses"
    ));
    if counts.copies > 0 {
        loaded.conventions.push(format!(
            "{} extra agents: spawn templates named by more than one turn are instantiated once per naming (ids suffixed #2, #3, ...)",
            counts.copies
        ));
    }
    let mut problem = |message: String| {
        loaded.problems.push(Problem {
            place: file.to_string(),
            message,
        })
    };
    if without > 0 {
        problem(format!("{without} conversations are deltas_without_responses: AIPerf threads its live responses into later prompts, arbor sends the authored messages only (later prompts shorter by the earlier outputs)"));
    }
    if counts.dropped_parts > 0 {
        problem(format!(
            "{} non-text content parts (images, audio) dropped",
            counts.dropped_parts
        ));
    }
    counts.unsent_fields.report(&mut loaded.problems, file, |n| {
        format!("{n} turns carry `tools`, `extra` or other request fields: not sent by arbor and not counted in isl")
    });
    counts.no_max_tokens.report_unlisted(
        &mut loaded.problems,
        file,
        "without max_tokens (output length taken as 0)",
    );
}

/// A generated `dag_jsonl` file of `trees` trees (for benches of load
/// speed): each a root conversation of four turns whose second spawns two
/// subagents of three turns, joined at the root's third; messages of about
/// 2 to 8 kB of text.
pub fn generated(trees: usize) -> String {
    let words = "the quick brown fox jumps over the lazy dog while the agent reads files ";
    let body =
        |bytes: usize| -> String { words.repeat(bytes / words.len() + 1)[..bytes].to_string() };
    let mut text = String::with_capacity(trees * 3 * 22_000);
    for t in 0..trees {
        let root = format!("r{t}");
        let children = [format!("r{t}-c0"), format!("r{t}-c1")];
        let mut turns = Vec::new();
        for k in 0..4usize {
            let spawns = if k == 1 {
                format!(",\"spawns\":[\"{}\",\"{}\"]", children[0], children[1])
            } else {
                String::new()
            };
            let role = if k == 0 { "user" } else { "tool" };
            turns.push(format!(
                "{{\"messages\":[{{\"role\":\"{role}\",\"content\":\"{}\"}}],\"model\":\"m\",\"max_tokens\":200,\"delay\":{}{spawns}}}",
                body(2000 + 1500 * k),
                if k == 0 { 0.0 } else { 1500.5 }
            ));
        }
        text.push_str(&format!(
            "{{\"session_id\":\"{root}\",\"context_mode\":\"deltas_with_responses\",\"turns\":[{}]}}\n",
            turns.join(",")
        ));
        for child in &children {
            let turns: Vec<String> = (0..3usize)
                .map(|k| {
                    format!(
                        "{{\"messages\":[{{\"role\":\"user\",\"content\":\"{}\"}}],\"max_tokens\":100,\"delay\":{}}}",
                        body(1500 + 1000 * k),
                        250 * k
                    )
                })
                .collect();
            text.push_str(&format!(
                "{{\"session_id\":\"{child}\",\"turns\":[{}]}}\n",
                turns.join(",")
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_contains, scratch_file, testdata};
    use super::super::{load_path, Format};
    use super::*;

    const MS: Nanos = 1_000_000;

    /// An agent as the tests compare it: id, parent, kind, turns.
    type AgentShape = (String, Option<u32>, AgentKind, usize);
    /// A turn as the tests compare it: start, isl, osl, model, input kind.
    type TurnShape = (Nanos, u32, u32, Option<u16>, InputKind);

    fn sample() -> Loaded {
        load_path(&testdata("aiperf-graph").join("sample.dag.jsonl"), None)
            .expect("the fixture loads")
    }

    fn agents(tree: &Tree) -> Vec<AgentShape> {
        tree.agents
            .iter()
            .map(|a| (a.id.clone(), a.parent, a.kind, a.turns.len()))
            .collect()
    }

    fn turns(tree: &Tree) -> Vec<TurnShape> {
        tree.agents
            .iter()
            .flat_map(|a| a.turns.iter())
            .map(|t| (t.start, t.isl, t.osl, t.model, t.input_kind))
            .collect()
    }

    fn agent(id: &str, parent: Option<u32>, kind: AgentKind, turns: usize) -> AgentShape {
        (id.to_string(), parent, kind, turns)
    }

    fn edge(from: u32, to: u32, gap: Nanos, kind: EdgeKind) -> Edge {
        Edge {
            from,
            to,
            anchor: Anchor::End,
            gap,
            kind,
        }
    }

    fn load_text(text: &str) -> Result<Loaded, InputError> {
        let path = scratch_file("aiperf-graph", text.as_bytes());
        let loaded = load_path(&path, Some(Format::AiperfGraph));
        std::fs::remove_file(&path).ok();
        loaded
    }

    #[test]
    fn the_fixture_is_detected_by_content() {
        assert_eq!(sample().format, Some(Format::AiperfGraph));
    }

    #[test]
    fn roots_spawns_and_forks_become_the_expected_trees() {
        let loaded = sample();
        let ids: Vec<&str> = loaded.trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["plan-1", "chat-2"]);
        use AgentKind::*;
        assert_eq!(
            agents(&loaded.trees[0]),
            vec![
                agent("plan-1", None, Root, 4),
                agent("plan-1-explore", Some(0), Blocking, 2),
                agent("plan-1-test", Some(0), Blocking, 1),
                agent("plan-1-wrap", Some(0), Blocking, 1),
            ]
        );
        // chat-2's title is a pre-session child; plan-1-test, a template
        // the root's last turn spawns (no turn to join), is background.
        assert_eq!(
            agents(&loaded.trees[1]),
            vec![
                agent("chat-2", None, Root, 2),
                agent("chat-2-title", Some(0), Background, 1),
                agent("plan-1-test", Some(0), Background, 1),
            ]
        );
        assert!(loaded.trees.iter().all(|t| t.arrival == 0
            && t.block_size == 0
            && t.agents
                .iter()
                .all(|a| a.turns.iter().all(|t| t.duration.is_none()
                    && t.ttft.is_none()
                    && t.hash_ids.is_empty()
                    && t.tokens_estimated))));
    }

    #[test]
    fn edges_are_the_files_own() {
        let loaded = sample();
        use EdgeKind::*;
        // Flat turns: plan-1 0..=3, explore 4..=5, test 6, wrap 7.
        assert_eq!(
            loaded.trees[0].explicit_edges.as_deref(),
            Some(
                &[
                    edge(0, 1, 1200 * MS, Sequence),
                    edge(1, 2, 500 * MS, Sequence),
                    edge(2, 3, 2000 * MS, Sequence),
                    edge(4, 5, 300 * MS + MS / 2, Sequence),
                    edge(1, 4, 100 * MS, Spawn),
                    edge(5, 2, 0, Join),
                    edge(1, 6, 250 * MS, Spawn),
                    edge(6, 3, 0, Join),
                    edge(3, 7, 0, Spawn),
                ][..]
            )
        );
        // chat-2 0..=1, title 2 (pre-session: no edge), test 3 (no join).
        assert_eq!(
            loaded.trees[1].explicit_edges.as_deref(),
            Some(&[edge(0, 1, 3000 * MS, Sequence), edge(1, 3, 250 * MS, Spawn)][..])
        );
    }

    #[test]
    fn starts_are_rebuilt_from_the_delays_and_tokens_from_the_text() {
        let loaded = sample();
        use InputKind::*;
        assert_eq!(
            turns(&loaded.trees[0]),
            vec![
                // Deltas: the prompt accumulates (bytes 100, 151, 179, 216).
                (0, 25, 120, Some(0), UserText),
                (1200 * MS, 38, 80, Some(0), ToolResult),
                // The join waits for explore's end at 1600.5 ms: 1200 + 500.
                (1700 * MS, 45, 60, Some(0), ToolResult),
                (3700 * MS, 54, 200, Some(0), UserText),
                (1300 * MS, 9, 40, Some(1), UserText),
                (1600 * MS + MS / 2, 16, 30, Some(1), ToolResult),
                (1450 * MS, 9, 50, Some(1), UserText),
                // The fork inherits the root's 216 bytes and adds 44.
                (3700 * MS, 65, 64, Some(0), UserText),
            ]
        );
        assert_eq!(loaded.trees[0].models, ["qwen3-coder", "qwen3-small"]);
        assert_eq!(
            turns(&loaded.trees[1]),
            vec![
                (10 * MS, 8, 90, None, UserText),
                // No max_tokens: osl 0.
                (3010 * MS, 24, 0, None, UserText),
                // The parent's session starts at 0; the title's delay is 50.
                (50 * MS, 14, 12, None, UserText),
                (3260 * MS, 9, 50, Some(0), UserText),
            ]
        );
        assert_eq!(loaded.trees[1].models, ["qwen3-small"]);
        let rule = &loaded.trees[0].provenance.timing;
        assert_eq!(rule.len(), 1);
        assert_eq!(rule[0].turns, 8);
    }

    #[test]
    fn text_is_kept_as_deltas_and_a_fork_inherits_its_parents_prompt() {
        let loaded = sample();
        let text = |tree: usize, agent: usize, turn: usize| {
            loaded.trees[tree].agents[agent].turns[turn]
                .text
                .as_deref()
                .expect("text")
                .clone()
        };
        let root0 = text(0, 0, 0);
        assert!(!root0.extends_previous);
        assert_eq!(root0.messages.len(), 2);
        assert_eq!(root0.messages[0].role, Role::System);
        let root1 = text(0, 0, 1);
        assert!(root1.extends_previous);
        assert_eq!(root1.messages.len(), 1);
        assert_eq!(root1.messages[0].role, Role::Tool);
        let wrap = text(0, 3, 0);
        assert!(!wrap.extends_previous);
        let roles: Vec<Role> = wrap.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::System,
                Role::User,
                Role::Tool,
                Role::Tool,
                Role::User,
                Role::User
            ]
        );
        assert_eq!(
            wrap.messages.last().map(|m| m.content.as_str()),
            Some("Summarize the change for the commit message.")
        );
        // Payload-isolated: the title's turn is its own whole prompt.
        assert!(!text(1, 1, 0).extends_previous);
        assert!(text(1, 0, 1).extends_previous);
    }

    #[test]
    fn the_reader_says_what_it_inferred_and_dropped() {
        let loaded = sample();
        let conventions = loaded.conventions.join("\n");
        assert_contains(
            &conventions,
            &[
                "conversations: 6 in 2 trees (7 agents: 3 spawned, 1 forked, 1 pre-session)",
                "turn starts rebuilt from `delay`",
                "context_mode: 4 deltas_without_responses, 1 deltas_with_responses, 1 message_array_with_responses",
            ],
        );
        let problems: Vec<&str> = loaded.problems.iter().map(|p| p.message.as_str()).collect();
        assert!(problems
            .iter()
            .any(|p| p.starts_with("4 conversations are deltas_without_responses")));
        assert!(problems
            .iter()
            .any(|p| p.starts_with("2 turns carry `tools`, `extra`")));
        assert!(problems.iter().any(|p| p.starts_with("no max_tokens")));
        let place = loaded
            .problems
            .iter()
            .find(|p| p.message.starts_with("no max_tokens"))
            .map(|p| p.place.clone())
            .unwrap_or_default();
        assert!(
            place.ends_with("sample.dag.jsonl:line 5, $.turns[1]"),
            "{place}"
        );
    }

    #[test]
    fn the_trees_compile_with_their_edges() {
        use arbor_engine::dag::compile;
        use arbor_engine::derive::DeriveOptions;
        use arbor_engine::model::Workload;
        use arbor_engine::policy::Policy;
        let workload = Workload {
            trees: sample().trees,
        };
        compile(&workload, &Policy::default(), &DeriveOptions::default())
            .expect("the edges form a valid DAG");
    }

    #[test]
    fn a_template_spawned_twice_in_one_tree_is_copied_with_a_suffix() {
        let text = concat!(
            r#"{"session_id":"r","turns":[{"messages":[{"role":"user","content":"a"}],"spawns":["t"]},{"messages":[{"role":"user","content":"b"}],"spawns":["t"]},{"messages":[{"role":"user","content":"c"}]}]}"#,
            "\n",
            r#"{"session_id":"t","turns":[{"messages":[{"role":"user","content":"hello"}],"max_tokens":3}]}"#,
            "\n"
        );
        let loaded = load_text(text).expect("loads");
        assert_eq!(loaded.trees.len(), 1);
        use AgentKind::*;
        assert_eq!(
            agents(&loaded.trees[0]),
            vec![
                agent("r", None, Root, 3),
                agent("t", Some(0), Blocking, 1),
                agent("t#2", Some(0), Blocking, 1),
            ]
        );
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.starts_with("1 extra agents")));
    }

    #[test]
    fn bad_graphs_are_refused_with_the_place() {
        let line = |turns: &str| format!(r#"{{"session_id":"r","turns":[{turns}]}}"#);
        let msg = r#"{"role":"user","content":"x"}"#;
        let cases: Vec<(String, &[&str])> = vec![
            (
                format!(
                    "{}\n",
                    line(&format!(r#"{{"messages":[{msg}],"spawns":["nobody"]}}"#))
                ),
                &[
                    "line 1, $.turns[0].spawns[0]",
                    "\"nobody\": expected the session_id",
                ],
            ),
            (
                format!(
                    "{}\n{}\n",
                    line(&format!(r#"{{"messages":[{msg}],"forks":["b"]}}"#)),
                    r#"{"session_id":"b","turns":[{"messages":[{"role":"user","content":"y"}],"forks":["r"]}]}"#
                ),
                &["branches form a cycle (\"r\" -> \"b\" -> \"r\")"],
            ),
            (
                format!(
                    "{}\n",
                    line(&format!(
                        r#"{{"messages":[{msg}],"forks":["r"]}},{{"messages":[{msg}]}}"#
                    ))
                ),
                &[
                    "line 1, $.turns[0].forks[0]",
                    "a foreground fork before the conversation's last turn",
                ],
            ),
            (
                format!(
                    "{}\n",
                    line(&format!(
                        r#"{{"messages":[{msg}],"spawns":[{{"children":["r"],"join_at":0}}]}},{{"messages":[{msg}]}}"#
                    ))
                ),
                &[
                    "$.turns[0].spawns[0].join_at",
                    "0: expected a turn after the spawning turn 0",
                ],
            ),
            (
                format!("{}\n", line(r#"{"messages":[]}"#)),
                &[
                    "line 1, $.turns[0].messages",
                    "expected at least one message",
                ],
            ),
            (
                format!(
                    "{}\n",
                    line(&format!(r#"{{"messages":[{msg}],"max_tokens":true}}"#))
                ),
                &[
                    "line 1, $.turns[0].max_tokens",
                    "invalid type: boolean `true`",
                ],
            ),
            (
                format!(
                    "{}\n",
                    line(&format!(r#"{{"messages":[{msg}],"temperature":0.5}}"#))
                ),
                &["line 1, $.turns[0]", "unknown field `temperature`"],
            ),
            (
                format!(
                    "{}\n{}\n",
                    line(&format!(r#"{{"messages":[{msg}]}}"#)),
                    line(&format!(r#"{{"messages":[{msg}]}}"#))
                ),
                &[
                    "line 2, $.session_id",
                    "duplicate session_id \"r\" (first on line 1)",
                ],
            ),
            (
                format!(
                    "{}\n",
                    line(&format!(r#"{{"messages":[{msg}],"delay":-1}}"#))
                ),
                &[
                    "line 1, $.turns[0].delay",
                    "expected a non-negative finite number of milliseconds",
                ],
            ),
            (
                r#"{"session_id":"o","orchestrator":true,"spawns":["r"]}"#.to_string() + "\n",
                &["line 1, $.orchestrator", "an orchestrator conversation"],
            ),
        ];
        for (text, parts) in cases {
            let err = load_text(&text).expect_err(&text).to_string();
            assert_contains(&err, parts);
        }
    }

    #[test]
    fn a_generated_graph_loads_to_its_stated_shape() {
        let loaded = load_text(&generated(20)).expect("the generated graph loads");
        assert_eq!(loaded.trees.len(), 20);
        assert!(loaded
            .trees
            .iter()
            .all(|t| t.agents.len() == 3 && t.turn_count() == 10));
    }

    /// Every leaf of every conversation of the fixture replaced, in turn,
    /// by a hostile value: each file loads or is refused, never a panic.
    #[test]
    fn never_panics_on_any_field_value() {
        use serde_json::Value;
        fn leaves(v: &Value, at: String, out: &mut Vec<String>) {
            match v {
                Value::Object(map) => map
                    .iter()
                    .for_each(|(k, v)| leaves(v, format!("{at}/{k}"), out)),
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .for_each(|(i, v)| leaves(v, format!("{at}/{i}"), out)),
                _ => out.push(at),
            }
        }
        let text = std::fs::read_to_string(testdata("aiperf-graph").join("sample.dag.jsonl"))
            .expect("read");
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let nasties = [
            serde_json::json!(null),
            serde_json::json!(-1),
            serde_json::json!(0),
            serde_json::json!(1e300),
            serde_json::json!("plan-1"),
            serde_json::json!("chat-2"),
            serde_json::json!([]),
        ];
        let mut loads = 0;
        for (i, record) in records.iter().enumerate() {
            let mut paths = Vec::new();
            leaves(record, String::new(), &mut paths);
            for leaf in paths {
                for nasty in &nasties {
                    let mut changed = records.clone();
                    if let Some(slot) = changed[i].pointer_mut(&leaf) {
                        *slot = nasty.clone();
                    }
                    let body: String = changed.iter().map(|r| format!("{r}\n")).collect();
                    let _ = load_text(&body);
                    loads += 1;
                }
            }
        }
        assert!(loads > 300, "only {loads} variants");
    }
}
