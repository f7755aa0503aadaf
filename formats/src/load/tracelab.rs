//! TraceLab rounds (the normalized round trace of `uw-syfi/TraceLab`, a
//! public corpus of Claude Code and Codex sessions; `docs/formats/tracelab.md`):
//! JSONL, one line per LLM round, with its session, its place in the
//! session (`round_index`), its prompt split into the provider's cached
//! prefix (`prefix_tokens`) and newly appended tokens, its output tokens,
//! its timing events (user messages, tool results, reasoning, text, tool
//! calls, usage reports) and its tool calls with their latencies. No text,
//! no block hashes, no parent links.
//!
//! Owns turning rounds into trees. A session is an agent and its rounds, in
//! `round_index` order, its turns. What the file does not state is
//! reconstructed, and recorded as such in `Tree::provenance`: each turn's
//! start and duration (from its timing events), its block ids (from the
//! prefix/append split, [`BLOCK_SIZE`]-token blocks) and subagents (a
//! session run wholly inside another session's `Task`/`Agent` tool call, in
//! the same project, is that session's blocking subagent: timing
//! containment). Edges are derived from the times. Must not touch other
//! formats' rows or the engine's edge rule.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use arbor_engine::error::InputError;
use arbor_engine::model::{
    Agent, AgentKind, BlockIds, BlockIdsBuilder, HashScope, InputKind, LinkSource, Tree, Turn,
};
use arbor_engine::time::MAX_SECONDS;

use super::fields::{show_number, Count, NonEmpty, Rfc3339, MAX_NANOS};
use super::json::Lines;
use super::sniff::TopKeys;
use super::source::Source;
use crate::input::{Loaded, Problem};

/// Tokens per rebuilt block.
pub const BLOCK_SIZE: u32 = 64;

/// Tool names that run a subagent the caller waits for (Claude Code's
/// subagent tool, named `Task` and later `Agent`).
pub const AGENT_TOOLS: [&str; 2] = ["Task", "Agent"];

/// The inference rule of a subagent's parent, as `arbor inspect` names it.
pub const CONTAINMENT: &str = "timing containment";

/// The timing rules, as `arbor inspect` names them.
pub const TIMED: &str = "start at the last input event, end at the last output event";
pub const AFTER_PREVIOUS: &str = "no input event: start at the previous round's end";
pub const FIRST_EVENT: &str = "no input event, first round: start at its first event";

/// What a row is, in messages.
const ROW: &str = "a TraceLab round (a JSON object with `session_id`, `round_index`, `input_tokens_total`, `output_tokens` and `timing_events`)";

/// Does this start of a file look like TraceLab rounds? (The first row has
/// a session, a round index and the prefix/append split or timing events.)
pub fn looks_like(text_prefix: &str) -> bool {
    let keys = TopKeys::of(text_prefix);
    keys.has("session_id")
        && keys.has("round_index")
        && keys.has_any(&["newly_append_tokens", "prefix_tokens", "timing_events"])
}

#[derive(Deserialize)]
#[serde(
    expecting = "a TraceLab round (a JSON object with `session_id`, `round_index`, `input_tokens_total`, `output_tokens` and `timing_events`)"
)]
struct RawRound {
    provider: Option<String>,
    project: Option<String>,
    session_id: NonEmpty,
    round_index: Count,
    model: Option<String>,
    input_tokens_total: Count,
    prefix_tokens: Option<Count>,
    newly_append_tokens: Option<Count>,
    output_tokens: Count,
    timing_events: Vec<RawEvent>,
    #[serde(default)]
    tools: Option<Vec<RawTool>>,
}

#[derive(Deserialize)]
#[serde(expecting = "a timing event (an object with `event_type` and `timestamp`)")]
struct RawEvent {
    event_type: EventKind,
    timestamp: Option<Rfc3339>,
}

#[derive(Deserialize)]
#[serde(expecting = "a tool call (an object with `tool_name`, `emitted_at`, `result_at`)")]
struct RawTool {
    tool_name: Option<ToolName>,
    emitted_at: Option<Rfc3339>,
    result_at: Option<Rfc3339>,
}

/// A timing event's type: what the client sent (input) or what the model
/// produced (everything else: reasoning, text, tool calls, usage reports).
#[derive(Clone, Copy, PartialEq, Eq)]
enum EventKind {
    UserMessage,
    ToolResult,
    Output,
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = EventKind;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event type (a string such as user_message, tool_result or text)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<EventKind, E> {
                Ok(match v {
                    "user_message" => EventKind::UserMessage,
                    "tool_result" => EventKind::ToolResult,
                    _ => EventKind::Output,
                })
            }
        }
        d.deserialize_str(V)
    }
}

/// A tool's name, reduced to whether it runs a subagent ([`AGENT_TOOLS`]).
struct ToolName(bool);

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ToolName;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a tool name (a string)")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ToolName, E> {
                Ok(ToolName(AGENT_TOOLS.contains(&v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One round as kept until its session's turns are built: unix times.
struct Round {
    line: usize,
    index: u32,
    /// The last user message or tool result.
    last_input: Option<u64>,
    /// The first event of any kind.
    first_event: Option<u64>,
    /// The last event that is not input.
    last_output: Option<u64>,
    input_kind: InputKind,
    isl: u32,
    prefix: u32,
    osl: u32,
    model: Option<u32>,
}

struct Session {
    id: String,
    /// Interned `(provider, project)`: subagents are looked for within it.
    group: u32,
    first_line: usize,
    rounds: Vec<Round>,
    /// `(emitted, result)` of each `Task`/`Agent` call, unix ns.
    agent_calls: Vec<(u64, u64)>,
}

/// A session's rounds as turns, unix-ns starts, with what was
/// reconstructed.
struct Built {
    turns: Vec<Turn>,
    prefixes: Vec<u32>,
    timed: u32,
    after_previous: u32,
    first_event: u32,
    /// The earliest start and the latest end (or start) of its turns.
    span: (u64, u64),
}

/// What was counted while reading, for `inspect`.
#[derive(Default)]
struct Counts {
    duplicates: usize,
    prefix_over_isl: usize,
    split_mismatch: usize,
    no_split: usize,
    unknown_durations: usize,
    first_prefix: usize,
    prefix_over_context: usize,
}

/// Reads one TraceLab round-trace JSONL file.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut lines = Lines::open(input.into(), ROW)?;
    let file = lines.file().to_string();
    let mut sessions: Vec<Session> = Vec::new();
    let mut session_index: HashMap<String, usize> = HashMap::new();
    let mut groups: HashMap<(Option<String>, Option<String>), u32> = HashMap::new();
    let mut models: Vec<String> = Vec::new();
    let mut model_index: HashMap<String, u32> = HashMap::new();
    let mut counts = Counts::default();

    while let Some(raw) = lines.next::<RawRound>()? {
        let line = lines.line();
        let Count(isl) = raw.input_tokens_total;
        let prefix = match (raw.prefix_tokens, raw.newly_append_tokens) {
            (Some(Count(p)), Some(Count(a))) => {
                if p.checked_add(a) != Some(isl) {
                    counts.split_mismatch += 1;
                }
                p
            }
            (Some(Count(p)), None) => p,
            (None, _) => {
                counts.no_split += 1;
                0
            }
        };
        if prefix > isl {
            counts.prefix_over_isl += 1;
        }
        let (mut last_input, mut first_event, mut last_output) = (None, None, None);
        let (mut user, mut tool) = (false, false);
        for event in &raw.timing_events {
            let at = event.timestamp.as_ref().map(|t| t.0);
            first_event = min_of(first_event, at);
            match event.event_type {
                EventKind::UserMessage => {
                    user = true;
                    last_input = max_of(last_input, at);
                }
                EventKind::ToolResult => {
                    tool = true;
                    last_input = max_of(last_input, at);
                }
                EventKind::Output => last_output = max_of(last_output, at),
            }
        }
        let input_kind = match (user, tool) {
            (true, _) => InputKind::UserText,
            (false, true) => InputKind::ToolResult,
            (false, false) => InputKind::Unknown,
        };
        let model = raw.model.map(|name| {
            let next = models.len() as u32;
            *model_index.entry(name).or_insert_with_key(|name| {
                models.push(name.clone());
                next
            })
        });
        let next_group = groups.len() as u32;
        let NonEmpty(id) = raw.session_id;
        let index = match session_index.get(&id) {
            Some(&s) => s,
            None => {
                let group = *groups
                    .entry((raw.provider, raw.project))
                    .or_insert(next_group);
                session_index.insert(id.clone(), sessions.len());
                sessions.push(Session {
                    id,
                    group,
                    first_line: line,
                    rounds: Vec::new(),
                    agent_calls: Vec::new(),
                });
                sessions.len() - 1
            }
        };
        let Some(session) = sessions.get_mut(index) else {
            continue;
        };
        for call in raw.tools.iter().flatten() {
            if let (Some(ToolName(true)), Some(emitted), Some(result)) =
                (&call.tool_name, &call.emitted_at, &call.result_at)
            {
                if result.0 >= emitted.0 {
                    session.agent_calls.push((emitted.0, result.0));
                }
            }
        }
        session.rounds.push(Round {
            line,
            index: raw.round_index.0,
            last_input,
            first_event,
            last_output,
            input_kind,
            isl,
            prefix: prefix.min(isl),
            osl: raw.output_tokens.0,
            model,
        });
    }
    if sessions.is_empty() {
        return Err(lines.empty(
            "TraceLab rounds (one JSON object per line with `session_id`, `round_index` and `timing_events`)",
        ));
    }

    let mut built = Vec::with_capacity(sessions.len());
    for session in &mut sessions {
        built.push(build_session(session, &file, &mut counts)?);
    }
    let parents = attach_subagents(&sessions, &built);
    let earliest = built.iter().map(|b| b.span.0).min().unwrap_or(0);

    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    for (s, parent) in parents.iter().enumerate() {
        if let Some(p) = parent {
            children[*p].push(s);
        }
    }
    for list in &mut children {
        list.sort_by_key(|&c| (built[c].span.0, c));
    }
    let mut loaded = Loaded::default();
    let mut slots: Vec<Option<Built>> = built.into_iter().map(Some).collect();
    let mut subagents = 0usize;
    for root in 0..sessions.len() {
        if parents[root].is_some() {
            continue;
        }
        // Breadth first, so a parent comes before its children.
        let mut order: Vec<(usize, Option<u32>)> = vec![(root, None)];
        let mut next = 0;
        while let Some(&(s, _)) = order.get(next) {
            for &c in &children[s] {
                order.push((c, Some(next as u32)));
            }
            next += 1;
        }
        let mut tree = Tree {
            id: sessions[root].id.clone(),
            source: format!("{file}:line {}", sessions[root].first_line),
            block_size: BLOCK_SIZE,
            hash_scope: HashScope::Local,
            ..Tree::default()
        };
        let origin = slots[root].as_ref().map_or(earliest, |b| b.span.0);
        let mut next_block = 0u32;
        for (s, parent) in order {
            let Some(mut session) = slots.get_mut(s).and_then(Option::take) else {
                continue;
            };
            let agent = tree.agents.len() as u32;
            if parent.is_some() {
                subagents += 1;
                tree.provenance
                    .parent(agent, LinkSource::Inferred(CONTAINMENT.into()));
            }
            tree.provenance.reconstructed(TIMED, session.timed);
            tree.provenance
                .reconstructed(AFTER_PREVIOUS, session.after_previous);
            tree.provenance
                .reconstructed(FIRST_EVENT, session.first_event);
            let rounds = &sessions[s].rounds;
            for (turn, round) in session.turns.iter_mut().zip(rounds) {
                turn.start = turn.start.checked_sub(origin).filter(|&n| n <= MAX_NANOS).ok_or_else(|| {
                    InputError::at(
                        &file,
                        format!("line {}, $.timing_events", round.line),
                        format!(
                            "the round starts more than {} s after its tree's first round (line {}): expected a tree's rounds within that span",
                            show_number(MAX_SECONDS),
                            sessions[root].first_line
                        ),
                    )
                })?;
                turn.model = round
                    .model
                    .and_then(|m| models.get(m as usize))
                    .map(|name| tree_model(&mut tree.models, name));
            }
            rebuild_blocks(
                &mut session.turns,
                &session.prefixes,
                &mut next_block,
                &mut counts,
            )
            .map_err(|()| {
                InputError::at(
                    &file,
                    format!("line {}", sessions[s].first_line),
                    "more than 4294967295 blocks in one tree: expected fewer tokens in all",
                )
            })?;
            tree.agents.push(Agent {
                id: sessions[s].id.clone(),
                parent,
                kind: if parent.is_some() {
                    AgentKind::Blocking
                } else {
                    AgentKind::Root
                },
                recorded_end: None,
                turns: session.turns,
            });
        }
        tree.arrival = origin - earliest;
        if tree.arrival > MAX_NANOS {
            return Err(InputError::at(
                &file,
                format!("line {}, $.timing_events", sessions[root].first_line),
                format!(
                    "the session starts more than {} s after the file's first round: expected the file's rounds within that span",
                    show_number(MAX_SECONDS)
                ),
            ));
        }
        loaded.trees.push(tree);
    }
    // Stable: trees arriving together keep their order of appearance.
    loaded.trees.sort_by_key(|t| t.arrival);
    describe(&mut loaded, &file, sessions.len(), subagents, &counts);
    Ok(loaded)
}

fn min_of(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_of(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The index of model `name` in a tree's list, added when new.
fn tree_model(models: &mut Vec<String>, name: &str) -> u16 {
    match models.iter().position(|m| m == name) {
        Some(i) => i as u16,
        None => {
            models.push(name.to_string());
            (models.len() - 1) as u16
        }
    }
}

/// A session's rounds in `round_index` order (a repeated index keeps its
/// first row) as turns with unix-ns starts, timed by their events.
fn build_session(
    session: &mut Session,
    file: &str,
    counts: &mut Counts,
) -> Result<Built, InputError> {
    // Stable: a repeated index keeps file order, and the first is kept.
    session.rounds.sort_by_key(|r| r.index);
    let before = session.rounds.len();
    session.rounds.dedup_by_key(|r| r.index);
    counts.duplicates += before - session.rounds.len();

    let mut built = Built {
        turns: Vec::with_capacity(session.rounds.len()),
        prefixes: Vec::with_capacity(session.rounds.len()),
        timed: 0,
        after_previous: 0,
        first_event: 0,
        span: (u64::MAX, 0),
    };
    let mut previous: Option<(u64, Option<u64>, usize, u32)> = None; // start, end, line, index
    for round in &session.rounds {
        let start = match (round.last_input, previous) {
            (Some(at), _) => {
                built.timed += 1;
                at
            }
            (None, Some((start, end, _, _))) => {
                built.after_previous += 1;
                end.unwrap_or(start)
            }
            (None, None) => match round.first_event {
                Some(at) => {
                    built.first_event += 1;
                    at
                }
                None => {
                    return Err(InputError::at(
                        file,
                        format!("line {}, $.timing_events", round.line),
                        "no event with a timestamp: expected at least one to place the session's first round",
                    ))
                }
            },
        };
        if let Some((before, _, line, index)) = previous {
            if start < before {
                return Err(InputError::at(
                    file,
                    format!("line {}, $.timing_events", round.line),
                    format!(
                        "round {} starts {} s before round {index} (line {line}): expected a session's rounds in time order",
                        round.index,
                        show_number((before - start) as f64 / 1e9)
                    ),
                ));
            }
        }
        let end = round.last_output.filter(|&end| end >= start);
        let duration = end.map(|end| end - start);
        if duration.is_some_and(|d| d > MAX_NANOS) {
            return Err(InputError::at(
                file,
                format!("line {}, $.timing_events", round.line),
                format!(
                    "the round lasts past the largest time a trace may state ({} s): expected its events closer together",
                    show_number(MAX_SECONDS)
                ),
            ));
        }
        if end.is_none() {
            counts.unknown_durations += 1;
        }
        built.span.0 = built.span.0.min(start);
        built.span.1 = built.span.1.max(end.unwrap_or(start));
        built.turns.push(Turn {
            start,
            duration,
            isl: round.isl,
            osl: round.osl,
            input_kind: round.input_kind,
            ..Turn::default()
        });
        built.prefixes.push(round.prefix);
        previous = Some((start, end, round.line, round.index));
    }
    Ok(built)
}

/// Each session's parent: the session, in the same provider and project,
/// one of whose `Task`/`Agent` calls (emitted to result) contains the whole
/// session (its first start to its last end); of several, the call emitted
/// last (the innermost), then the one ending first. A parent always starts
/// before its child (ties: file order), so parents form trees. A sweep over
/// time, per group: a session looks only at the calls still running when
/// it starts.
fn attach_subagents(sessions: &[Session], built: &[Built]) -> Vec<Option<usize>> {
    let mut parents = vec![None; sessions.len()];
    // Per group: its sessions, and its calls `(emitted, result, session)`.
    type Group = (Vec<usize>, Vec<(u64, u64, usize)>);
    let mut by_group: HashMap<u32, Group> = HashMap::new();
    for (s, session) in sessions.iter().enumerate() {
        let (members, calls) = by_group.entry(session.group).or_default();
        members.push(s);
        calls.extend(session.agent_calls.iter().map(|&(e, r)| (e, r, s)));
    }
    let order = |s: usize| (built[s].span.0, s);
    for (mut members, mut calls) in by_group.into_values() {
        if calls.is_empty() {
            continue;
        }
        members.sort_by_key(|&s| order(s));
        calls.sort_unstable();
        let mut next = 0;
        let mut running: Vec<(u64, u64, usize)> = Vec::new();
        for child in members {
            let (start, end) = built[child].span;
            while let Some(&call) = calls.get(next) {
                if call.0 > start {
                    break;
                }
                running.push(call);
                next += 1;
            }
            running.retain(|&(_, result, _)| result >= start);
            let best = running
                .iter()
                .filter(|&&(_, result, parent)| {
                    result >= end && parent != child && order(parent) < order(child)
                })
                .max_by_key(|&&(emitted, result, parent)| {
                    (
                        emitted,
                        std::cmp::Reverse(result),
                        std::cmp::Reverse(parent),
                    )
                });
            parents[child] = best.map(|&(_, _, parent)| parent);
        }
    }
    parents
}

/// Block ids of one agent's turns, rebuilt from the prefix/append split:
/// a turn's first `min(prefix, previous prompt) / BLOCK_SIZE` blocks
/// (whole blocks only) are the previous turn's, the rest of its
/// `ceil(isl / BLOCK_SIZE)` blocks new, numbered from `next` (per tree).
/// `Err` when a tree would need more than 2^32 block ids.
fn rebuild_blocks(
    turns: &mut [Turn],
    prefixes: &[u32],
    next: &mut u32,
    counts: &mut Counts,
) -> Result<(), ()> {
    let mut previous: Option<(u32, BlockIds)> = None;
    for (turn, &prefix) in turns.iter_mut().zip(prefixes) {
        let cached = prefix / BLOCK_SIZE;
        let shared = match &previous {
            None => {
                if prefix > 0 {
                    counts.first_prefix += 1;
                }
                0
            }
            Some((isl, _)) => {
                let whole = isl / BLOCK_SIZE;
                if cached > whole {
                    counts.prefix_over_context += 1;
                }
                cached.min(whole)
            }
        };
        let blocks = turn.isl.div_ceil(BLOCK_SIZE);
        let fresh = blocks - shared;
        let mut ids = BlockIdsBuilder::default();
        if let Some((_, before)) = &previous {
            let mut left = shared;
            for &(first, count) in before.runs() {
                if left == 0 {
                    break;
                }
                let take = count.min(left);
                ids.push_run(first, take);
                left -= take;
            }
        }
        ids.push_run(*next, fresh);
        *next = next.checked_add(fresh).ok_or(())?;
        let ids = ids.finish();
        turn.hash_ids = ids.clone();
        previous = Some((turn.isl, ids));
    }
    Ok(())
}

/// The conventions and problems `inspect` reports.
fn describe(loaded: &mut Loaded, file: &str, sessions: usize, subagents: usize, counts: &Counts) {
    let turns: usize = loaded.trees.iter().map(Tree::turn_count).sum();
    loaded.conventions.push(format!(
        "sessions: {sessions} in {} trees ({subagents} subagent sessions inferred by {CONTAINMENT} in a Task/Agent call); spawn and join inferred from the times",
        loaded.trees.len()
    ));
    loaded.conventions.push(format!(
        "times: {turns} rounds timed from their timing events (start at the last user message or tool result, end at the last output event); no ttft"
    ));
    loaded.conventions.push(format!(
        "blocks: rebuilt from prefix_tokens / newly_append_tokens, {BLOCK_SIZE}-token blocks, per tree (a round's cached prefix is the previous round's blocks)"
    ));
    loaded
        .conventions
        .push("isl input_tokens_total; osl output_tokens (reasoning included)".to_string());
    if counts.first_prefix > 0 {
        loaded.conventions.push(format!(
            "{} sessions start with a cached prefix (from earlier sessions): read as new blocks",
            counts.first_prefix
        ));
    }
    let mut problem = |message: String| {
        loaded.problems.push(Problem {
            place: file.to_string(),
            message,
        })
    };
    if counts.duplicates > 0 {
        problem(format!(
            "{} rounds repeat a round_index of their session: the first row of each is kept",
            counts.duplicates
        ));
    }
    if counts.no_split > 0 {
        problem(format!(
            "{} rounds have no prefix_tokens: every block new",
            counts.no_split
        ));
    }
    if counts.split_mismatch > 0 {
        problem(format!(
            "{} rounds' prefix_tokens + newly_append_tokens differ from input_tokens_total: isl is input_tokens_total",
            counts.split_mismatch
        ));
    }
    if counts.prefix_over_isl > 0 {
        problem(format!(
            "{} rounds have prefix_tokens above input_tokens_total: the prefix is cut to the input",
            counts.prefix_over_isl
        ));
    }
    if counts.prefix_over_context > 0 {
        problem(format!(
            "{} rounds have a cached prefix longer than the previous round's prompt (the provider cached more, such as the previous output): the excess is new blocks",
            counts.prefix_over_context
        ));
    }
    if counts.unknown_durations > 0 {
        problem(format!(
            "{} rounds have no output event after their start: duration unknown",
            counts.unknown_durations
        ));
    }
}

/// A generated round trace of `sessions` parent sessions (for benches of
/// load speed), in TraceLab's row shape with every field its collector
/// writes: each a Claude Code session of 8 rounds whose third round calls
/// `Task`, answered by a subagent session of 4 rounds inside the call;
/// prompts growing from 20k tokens, most of each cached.
pub fn generated(sessions: usize) -> String {
    let mut text = String::with_capacity(sessions * 12 * 2100);
    let mut row = |session: &str,
                   project: &str,
                   index: u32,
                   at_ms: u64,
                   isl: u32,
                   prefix: u32,
                   user: bool,
                   task: Option<(u64, u64)>| {
        let time = |ms: u64| {
            // 2026-06-01T00:00:00Z plus ms, as RFC 3339 with milliseconds.
            let (secs, milli) = (ms / 1000, ms % 1000);
            let (days, rest) = (secs / 86_400, secs % 86_400);
            format!(
                "2026-06-{:02}T{:02}:{:02}:{:02}.{milli:03}Z",
                1 + days % 28,
                rest / 3600,
                rest % 3600 / 60,
                rest % 60
            )
        };
        let input = if user {
            format!(
                "{{\"event_type\":\"user_message\",\"timestamp\":\"{}\",\"source\":\"user.message\",\"content_chars\":146}}",
                time(at_ms)
            )
        } else {
            format!(
                "{{\"event_type\":\"tool_result\",\"timestamp\":\"{}\",\"source\":\"user.content.tool_result\",\"tool_call_id\":\"toolu_2a5ccaf03cb1cdbd5fe2bf\",\"result_chars\":231,\"is_error\":false}}",
                time(at_ms)
            )
        };
        let (name, emitted, result) = match task {
            Some((e, r)) => ("Task", e, r),
            None => ("Bash", at_ms + 4000, at_ms + 4800),
        };
        text.push_str(&format!(
            "{{\"provider\":\"claude\",\"project\":\"{project}\",\"session_id\":\"{session}\",\"round_index\":{index},\"round_id\":\"msg_3e0cf83dc2523801f59077fd\",\"model\":\"claude-opus-4-8\",\"input_tokens_total\":{isl},\"prefix_tokens\":{prefix},\"newly_append_tokens\":{},\"claude_uncached_input_tokens\":3,\"claude_cache_creation_input_tokens\":{},\"claude_cache_read_input_tokens\":{prefix},\"output_tokens\":412,\"reasoning_output_tokens\":null,\"timing_events\":[{input},{{\"event_type\":\"reasoning\",\"timestamp\":\"{}\",\"source\":\"assistant.content.thinking\",\"content_chars\":0}},{{\"event_type\":\"text\",\"timestamp\":\"{}\",\"source\":\"assistant.content.text\",\"content_chars\":116}},{{\"event_type\":\"tool_call\",\"timestamp\":\"{}\",\"source\":\"assistant.content.tool_use\",\"tool_call_id\":\"toolu_fa282ca228ccfde5098ce6\",\"tool_name\":\"{name}\",\"tool_index\":0}}],\"tools\":[{{\"tool_index\":0,\"tool_name\":\"{name}\",\"tool_call_id\":\"toolu_fa282ca228ccfde5098ce6\",\"emitted_at\":\"{}\",\"input_chars\":168,\"result_chars\":231,\"tool_wall_latency_ms\":{},\"tool_internal_latency_ms\":null,\"is_error\":false,\"result_at\":\"{}\"}}],\"current_input_event_count\":1,\"current_user_message_count\":{},\"current_tool_result_count\":{},\"current_user_message_chars\":146,\"current_tool_result_chars\":0,\"current_input_chars\":146,\"first_input_event_type\":\"{}\",\"store\":\".claude\",\"trace_key\":\"claude:{session}:msg_3e0cf83dc2523801f59077fd\"}}\n",
            isl - prefix,
            isl - prefix - 3,
            time(at_ms + 2500),
            time(at_ms + 3100),
            time(emitted),
            time(emitted),
            result - emitted,
            time(result),
            u8::from(user),
            u8::from(!user),
            if user { "user_message" } else { "tool_result" },
        ));
    };
    for s in 0..sessions as u64 {
        let t0 = s * 37_000;
        let project = format!("project_{:08x}", s % 97);
        let parent = format!("claude:{:08x}-429c-e80b-5db6-5381512f4697", s);
        let child = format!("claude:{:08x}-5e6f-7081-92a3-b4c5d6e7f809", s);
        let mut isl = 20_000u32;
        for k in 0..8u32 {
            let at = t0 + u64::from(k) * 6000 + if k >= 3 { 40_000 } else { 0 };
            let task = (k == 2).then_some((at + 4000, at + 44_000));
            let prefix = if k == 0 { 16_000 } else { isl - 300 };
            isl += 1500;
            row(&parent, &project, k, at, isl, prefix, k == 0, task);
        }
        let mut isl = 8000u32;
        for k in 0..4u32 {
            let at = t0 + 12_000 + 5000 + u64::from(k) * 8000;
            let prefix = if k == 0 { 6000 } else { isl - 200 };
            isl += 2000;
            row(&child, &project, k, at, isl, prefix, k == 0, None);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{scratch_file, scratch_path, testdata};
    use super::super::{load_path, Format};
    use super::*;
    use arbor_engine::derive::{derive_edges, DeriveOptions};
    use arbor_engine::model::{Anchor, Edge, EdgeKind, ParentLink, Reconstructed};
    use arbor_engine::time::Nanos;

    const MS: Nanos = 1_000_000;
    /// An agent as the tests compare it: id, parent, kind, turns.
    type AgentShape = (String, Option<u32>, AgentKind, usize);
    const CLAUDE: &str = "claude:92ee5b8a-429c-e80b-5db6-5381512f4697";
    const CODEX: &str = "codex:a611041f-625d-6fad-5e59-845850dc6543";

    fn sample() -> Loaded {
        load_path(&testdata("tracelab").join("round_trace.jsonl"), None).expect("the fixture loads")
    }

    fn subagents() -> Loaded {
        load_path(&testdata("tracelab").join("subagents.jsonl"), None)
            .expect("the subagent fixture loads")
    }

    #[test]
    fn the_fixtures_are_detected_by_content() {
        assert_eq!(sample().format, Some(Format::Tracelab));
        assert_eq!(subagents().format, Some(Format::Tracelab));
    }

    #[test]
    fn each_session_is_a_tree_of_its_rounds() {
        let loaded = sample();
        // (id, arrival, agents, turns, isl sum, osl sum)
        let shape: Vec<(String, Nanos, usize, usize, u64, u64)> = loaded
            .trees
            .iter()
            .map(|t| {
                let turns = t.agents.iter().flat_map(|a| &a.turns);
                let isl = turns.clone().map(|t| u64::from(t.isl)).sum();
                let osl = turns.map(|t| u64::from(t.osl)).sum();
                (
                    t.id.clone(),
                    t.arrival,
                    t.agents.len(),
                    t.turn_count(),
                    isl,
                    osl,
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                // Codex's session (2026-03-21) arrives first.
                (CODEX.to_string(), 0, 1, 9, 95_819, 1_912),
                (
                    CLAUDE.to_string(),
                    (1_780_292_420_151 - 1_774_087_559_328) * MS,
                    1,
                    10,
                    418_193,
                    9_423
                ),
            ]
        );
        for tree in &loaded.trees {
            assert_eq!(tree.agents[0].kind, AgentKind::Root);
            assert!(tree.explicit_edges.is_none());
            assert!(tree.provenance.parents.is_empty(), "no subagent marker");
            assert_eq!(
                tree.provenance.timing,
                vec![Reconstructed {
                    rule: TIMED.into(),
                    turns: tree.turn_count() as u32
                }]
            );
            assert_eq!((tree.block_size, tree.hash_scope), (64, HashScope::Local));
        }
        assert_eq!(loaded.trees[1].models, vec!["claude-opus-4-8".to_string()]);
        assert_eq!(loaded.trees[0].models, vec!["gpt-5.4".to_string()]);
    }

    #[test]
    fn rounds_are_timed_from_their_last_input_to_their_last_output() {
        let loaded = sample();
        let claude = &loaded.trees[1].agents[0];
        // (start ms, duration ms, isl, osl, input)
        let got: Vec<(Nanos, Nanos, u32, u32, InputKind)> = claude
            .turns
            .iter()
            .map(|t| {
                (
                    t.start / MS,
                    t.duration.expect("known") / MS,
                    t.isl,
                    t.osl,
                    t.input_kind,
                )
            })
            .collect();
        let (u, tool) = (InputKind::UserText, InputKind::ToolResult);
        assert_eq!(
            got,
            vec![
                (0, 11_496, 32_272, 931, u),
                (30_787, 13_924, 35_740, 1_016, tool),
                (57_399, 26_465, 38_592, 2_475, tool),
                (105_331, 2_681, 41_131, 117, tool),
                (108_157, 15_112, 41_589, 1_275, tool),
                (143_182, 3_489, 42_876, 273, u),
                (162_784, 3_315, 44_901, 232, tool),
                (168_620, 20_299, 45_279, 2_162, tool),
                (189_049, 1_619, 47_508, 90, tool),
                (190_855, 10_829, 48_305, 852, tool),
            ]
        );
        assert!(claude.turns.iter().all(|t| t.ttft.is_none()));
        // Codex: the end is its usage report; output counts reasoning.
        let codex = &loaded.trees[0].agents[0].turns;
        assert_eq!((codex[0].duration, codex[0].osl), (Some(6_214 * MS), 444));
    }

    #[test]
    fn block_ids_follow_the_prefix_and_append_split() {
        let loaded = sample();
        let ids =
            |tree: usize, turn: usize| loaded.trees[tree].agents[0].turns[turn].hash_ids.to_vec();
        // Claude round 0: 32,272 tokens, all new: 505 blocks.
        assert_eq!(ids(1, 0), (0..505).collect::<Vec<u32>>());
        // Round 1: 29,380 cached tokens = 459 whole blocks of round 0,
        // then 100 new ones (35,740 tokens in 559 blocks).
        let mut want: Vec<u32> = (0..459).collect();
        want.extend(505..605);
        assert_eq!(ids(1, 1), want);
        // Codex round 3: only 3,456 tokens cached (54 blocks) of round 2's.
        let (before, after) = (ids(0, 2), ids(0, 3));
        assert_eq!(after.len(), 159);
        assert_eq!(after[..54], before[..54]);
        assert!(after[54..].iter().all(|id| !before.contains(id)));
        // Every turn has ceil(isl / 64) blocks.
        for tree in &loaded.trees {
            for turn in &tree.agents[0].turns {
                assert_eq!(turn.hash_ids.len() as u32, turn.isl.div_ceil(BLOCK_SIZE));
            }
        }
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.starts_with("2 sessions start with a cached prefix")));
    }

    #[test]
    fn a_session_inside_a_task_call_of_the_same_project_is_its_subagent() {
        let loaded = subagents();
        let shape: Vec<(String, Vec<AgentShape>)> = loaded
            .trees
            .iter()
            .map(|t| {
                let agents = t
                    .agents
                    .iter()
                    .map(|a| (a.id.clone(), a.parent, a.kind, a.turns.len()))
                    .collect();
                (t.id.clone(), agents)
            })
            .collect();
        let parent = "claude:0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
        let child = "claude:1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809";
        let early = "claude:2b3c4d5e-6f70-8192-a3b4-c5d6e7f8091a";
        let other = "claude:3c4d5e6f-7081-92a3-b4c5-d6e7f8091a2b";
        let agent = |id: &str, parent, kind, turns| (id.to_string(), parent, kind, turns);
        assert_eq!(
            shape,
            vec![
                (
                    parent.to_string(),
                    vec![
                        agent(parent, None, AgentKind::Root, 4),
                        agent(child, Some(0), AgentKind::Blocking, 3),
                    ]
                ),
                (
                    early.to_string(),
                    vec![agent(early, None, AgentKind::Root, 2)]
                ),
                (
                    other.to_string(),
                    vec![agent(other, None, AgentKind::Root, 1)]
                ),
            ]
        );
        assert_eq!(
            loaded.trees[0].provenance.parents,
            vec![ParentLink {
                agent: 1,
                source: LinkSource::Inferred(CONTAINMENT.into())
            }]
        );
        assert!(loaded.trees[1..]
            .iter()
            .all(|t| t.provenance.parents.is_empty()));
        // The child's times are from the parent's first round (10:00:00).
        let starts: Vec<Nanos> = loaded.trees[0].agents[1]
            .turns
            .iter()
            .map(|t| t.start / MS)
            .collect();
        assert_eq!(starts, vec![6_000, 12_000, 22_500]);
        assert_eq!(loaded.trees[1].arrival, 2_000 * MS);
    }

    #[test]
    fn the_subagent_is_spawned_by_the_task_round_and_joined_at_the_next() {
        let loaded = subagents();
        let (edges, _) = derive_edges(&loaded.trees[0], &DeriveOptions::default());
        let mut crossing: Vec<Edge> = edges
            .into_iter()
            .filter(|e| e.kind != EdgeKind::Sequence)
            .collect();
        crossing.sort();
        // Flat turns: parent 0..=3, child 4..=6.
        let edge = |from, to, gap_ms: Nanos, kind| Edge {
            from,
            to,
            anchor: Anchor::End,
            gap: gap_ms * MS,
            kind,
        };
        assert_eq!(
            crossing,
            vec![
                // Round 0 ends at its Task call (5 s); the child starts at 6 s.
                edge(0, 4, 1_000, EdgeKind::Spawn),
                // The child ends at 59 s; the parent's round 1 starts at 65 s.
                edge(6, 1, 6_000, EdgeKind::Join),
            ]
        );
    }

    #[test]
    fn a_generated_trace_loads_to_its_stated_shape() {
        let path = scratch_file("tracelab-gen", generated(40).as_bytes());
        let loaded = load_path(&path, None);
        std::fs::remove_file(&path).ok();
        let loaded = loaded.expect("the generated trace loads");
        assert_eq!(loaded.format, Some(Format::Tracelab));
        assert_eq!(loaded.trees.len(), 40);
        assert!(loaded.trees.iter().all(|t| t.agents.len() == 2
            && t.turn_count() == 12
            && t.provenance.parents.len() == 1));
    }

    /// Every leaf of every row of the subagent fixture replaced, in turn,
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
        let text =
            std::fs::read_to_string(testdata("tracelab").join("subagents.jsonl")).expect("read");
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let nasties = [
            serde_json::json!(null),
            serde_json::json!(-1),
            serde_json::json!(0),
            serde_json::json!(1e300),
            serde_json::json!(u64::MAX),
            serde_json::json!("2026-06-01T10:00:00Z"),
            serde_json::json!("9999-12-31T23:59:59Z"),
            serde_json::json!([]),
        ];
        let path = scratch_path("tracelab-nasty", ".jsonl");
        let mut loads = 0;
        for (i, row) in rows.iter().enumerate() {
            let mut paths = Vec::new();
            leaves(row, String::new(), &mut paths);
            for leaf in paths {
                for nasty in &nasties {
                    let mut changed = rows.clone();
                    if let Some(slot) = changed[i].pointer_mut(&leaf) {
                        *slot = nasty.clone();
                    }
                    let body: String = changed.iter().map(|r| format!("{r}\n")).collect();
                    std::fs::write(&path, body).expect("write");
                    let _ = load_path(&path, Some(Format::Tracelab));
                    loads += 1;
                }
            }
        }
        std::fs::remove_file(&path).ok();
        assert!(loads > 1000, "only {loads} variants");
    }
}
