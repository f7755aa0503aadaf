//! arbor's capture format of OpenAI chat requests and responses
//! (`docs/formats/openai-log.md`): JSONL, one recorded request per line,
//! with its unix start (and optional end) time, session and agent ids, the
//! request body (OpenAI chat completions, or Anthropic Messages: `system`
//! and `messages` of content blocks) and the response.
//!
//! Owns reading such a file into [`Tree`]s: one tree per `session_id`
//! (ordered by first start), agents by `agent_id` (the root is the one
//! agent without `parent_agent_id`; children are blocking unless their
//! first line says `background: true`), ordered parents before children by
//! first start. Times are differences of unix seconds, so a tree's arrival
//! is its first start minus the file's earliest. A turn whose `messages`
//! begin with the previous turn's prompt and answer is stored as a delta.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use serde::Deserialize;

mod identity;
mod infer;
mod responses;

use arbor_engine::error::InputError;
use arbor_engine::model::{
    intern_shape, Agent, AgentKind, InputKind, LinkSource, Message, Provenance, RequestShape, Role,
    ShapeApi, ToolCall, Tree, Turn, TurnText,
};
use arbor_engine::time::{Nanos, MAX_SECONDS, NANOS_PER_SEC};
use serde_json::value::RawValue;

use super::fields::{
    show_number, tokens_for_bytes, Content, Count, RawMessage, UnixSecs, MAX_NANOS,
};
use super::json::Lines;
use super::sniff::TopKeys;
use super::source::Source;
use super::tally::Tally;
use super::tools::{read_shape, RawShape, RawToolCall, KEPT_FIELDS};
use crate::input::{Loaded, Problem};

/// The latest unix time accepted, in seconds (year 2286): anything later is
/// corrupt input, and f64 seconds lose sub-microsecond precision beyond it.
const MAX_UNIX_SECONDS: f64 = 1.0e10;

/// What a line is, in messages.
const LINE: &str = "a recorded request (a JSON object with `start` and `request`)";

/// The session of lines without `session_id`.
pub const DEFAULT_SESSION: &str = "default";

// ---------------------------------------------------------------------------
// Schema

#[derive(Deserialize)]
#[serde(expecting = "a recorded request (a JSON object with `start` and `request`)")]
struct RawLine {
    start: UnixSecs,
    #[serde(default)]
    end: Option<UnixSecs>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    agent_id: Option<String>,
    #[serde(default)]
    parent_agent_id: Option<String>,
    #[serde(default)]
    background: Option<bool>,
    /// `start` and `end` as exact unix nanoseconds (`arbor record` writes
    /// both forms); preferred over the seconds when present.
    #[serde(default)]
    start_ns: Option<u64>,
    #[serde(default)]
    end_ns: Option<u64>,
    /// When the response's first byte arrived, unix nanoseconds (`arbor
    /// record` writes it): the turn's recorded TTFT counts from `start`.
    #[serde(default)]
    first_byte_ns: Option<u64>,
    /// Agent and parent inferred from the traffic ([`infer`]) for a line
    /// without `agent_id`.
    #[serde(default)]
    infer: Option<bool>,
    /// What the agent's own identity headers said ([`identity`]).
    #[serde(default)]
    identity: Option<identity::RawIdentity>,
    request: RawRequest,
    #[serde(default)]
    response: Option<RawResponse>,
}

#[derive(Deserialize)]
#[serde(expecting = "a chat completions request body (an object with `messages`)")]
struct RawRequest {
    /// Chat completions and Messages; a Responses request has `input`.
    #[serde(default)]
    messages: Option<Vec<RawMessage>>,
    /// The Responses API's: its system prompt, its items ([`responses`]),
    /// and the response it continues.
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    input: Option<responses::RawInput>,
    #[serde(default)]
    previous_response_id: Option<String>,
    /// A Messages body's system prompt (a string or text blocks): the
    /// turn's first message, with the system role.
    #[serde(default)]
    system: Option<Content>,
    #[serde(default)]
    model: Option<String>,
    /// The request's shape besides its messages (`tools.rs`), as
    /// recorded JSON text.
    #[serde(default)]
    tools: Option<Box<RawValue>>,
    #[serde(default)]
    tool_choice: Option<Box<RawValue>>,
    #[serde(default)]
    parallel_tool_calls: Option<Box<RawValue>>,
    #[serde(default)]
    response_format: Option<Box<RawValue>>,
    #[serde(default)]
    chat_template_kwargs: Option<Box<RawValue>>,
}

/// Either an OpenAI chat completion object (`choices[0].message.content`),
/// the short form `{"content", "usage"}`, or an Anthropic message
/// (`content` blocks, `usage` with `input_tokens` and `output_tokens`).
#[derive(Deserialize)]
#[serde(expecting = "a response object (a chat completion, or `content` and `usage`)")]
struct RawResponse {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    choices: Option<Vec<RawChoice>>,
    /// A Responses response's items and its id (which a later request's
    /// `previous_response_id` names).
    #[serde(default)]
    output: Option<Vec<responses::RawItem>>,
    #[serde(default)]
    id: Option<String>,
    /// The short form's tool calls (chat's shape).
    #[serde(default)]
    tool_calls: Option<Vec<RawToolCall>>,
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
#[serde(expecting = "a choice object (with `message`)")]
struct RawChoice {
    #[serde(default)]
    message: Option<RawAnswer>,
}

#[derive(Deserialize)]
#[serde(expecting = "a message object (with `content`)")]
struct RawAnswer {
    #[serde(default)]
    content: Content,
    #[serde(default)]
    tool_calls: Option<Vec<RawToolCall>>,
}

#[derive(Deserialize)]
#[serde(expecting = "a usage object (`prompt_tokens`, `completion_tokens`)")]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<Count>,
    #[serde(default)]
    completion_tokens: Option<Count>,
    /// Anthropic's: the prompt is `input_tokens + cache_read_input_tokens
    /// + cache_creation_input_tokens`; the output `output_tokens`.
    #[serde(default)]
    input_tokens: Option<Count>,
    #[serde(default)]
    cache_read_input_tokens: Option<Count>,
    #[serde(default)]
    cache_creation_input_tokens: Option<Count>,
    #[serde(default)]
    output_tokens: Option<Count>,
    #[serde(default)]
    #[allow(dead_code)] // read to check its type; arbor has no use for it
    prompt_tokens_details: Option<RawDetails>,
}

#[derive(Deserialize)]
#[serde(expecting = "an object (with `cached_tokens`)")]
struct RawDetails {
    #[serde(default)]
    #[allow(dead_code)]
    cached_tokens: Option<Count>,
}

// ---------------------------------------------------------------------------
// Lines, sessions, agents

/// A line and where it goes: its session (tree) and agent, stated or
/// inferred.
struct Placed {
    session: String,
    agent: String,
    /// Session, agent and parent are to be inferred ([`infer::place`]).
    inferred: bool,
    /// The line named its session (`session_id`, or a header session).
    session_given: bool,
    /// What its identity headers said, for a line without `agent_id`
    /// ([`identity::place`]).
    told: Option<identity::Told>,
    entry: Entry,
}

/// One line, checked and flattened.
struct Entry {
    line: usize,
    /// Unix nanoseconds.
    start: u64,
    end: Option<u64>,
    /// Nanoseconds from the start to the response's first byte.
    ttft: Option<u64>,
    parent: Option<String>,
    /// Where `parent` came from when not from the file's
    /// `parent_agent_id`: a header, or an inference rule.
    parent_source: Option<LinkSource>,
    background: bool,
    messages: Vec<Message>,
    /// The request's tools and the other fields sent with the messages.
    shape: RequestShape,
    model: Option<String>,
    response: Option<String>,
    /// The tool calls the response made.
    response_calls: Vec<ToolCall>,
    prompt_tokens: Option<u32>,
    completion_tokens: Option<u32>,
    /// A Responses turn: its response's id, the response it continues,
    /// and whether its first message is its `instructions`.
    response_id: Option<String>,
    previous_response_id: Option<String>,
    instructions: bool,
}

struct AgentEntries {
    id: String,
    /// Turns in line order until sorted by start.
    entries: Vec<Entry>,
}

struct Session {
    id: String,
    first_line: usize,
    agents: Vec<AgentEntries>,
    by_agent: BTreeMap<String, usize>,
}

/// Counts for the report.
#[derive(Default)]
struct Counts {
    turns: usize,
    extends: usize,
    no_end: Tally,
    estimated: Tally,
    no_response: Tally,
    dropped_parts: Tally,
    background_root: Tally,
    /// Responses turns continuing a response the capture lacks.
    unchained: Tally,
    /// Inferred lines, agents and trees.
    inferred: infer::Inferred,
    /// Lines and parents the identity headers placed.
    from_headers: identity::FromHeaders,
}

/// Does this start of a file look like arbor's OpenAI capture log?
pub fn looks_like(text_prefix: &str) -> bool {
    let keys = TopKeys::of(text_prefix);
    let ours = keys.has("request")
        || (keys.has("start") && keys.has_any(&["agent_id", "session_id", "parent_agent_id"]));
    ours && !keys.has_any(&["arbor", "requests", "turns", "input_length", "hash_ids"])
}

/// Reads one capture log.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut lines = Lines::open(input.into(), LINE)?;
    let file = lines.file().to_string();
    let mut tally = Counts::default();
    let mut read: Vec<Placed> = Vec::new();
    let mut earliest: Option<u64> = None;
    while let Some(mut raw) = lines.next::<RawLine>()? {
        let line = lines.line();
        // The file's own agent_id wins over any header.
        let told = match (&raw.agent_id, raw.identity.take()) {
            (None, Some(identity)) => Some(identity.into_told()),
            _ => None,
        };
        let named = raw
            .session_id
            .clone()
            .or_else(|| told.as_ref()?.session.as_ref().map(|s| s.id.clone()));
        let session_given = named.is_some();
        let session = named.unwrap_or_else(|| DEFAULT_SESSION.to_string());
        let inferred = raw.infer == Some(true) && raw.agent_id.is_none();
        let agent = raw.agent_id.clone().unwrap_or_else(|| session.clone());
        let entry = into_entry(raw, &file, line, &mut tally)?;
        if earliest.is_none_or(|e| entry.start < e) {
            earliest = Some(entry.start);
        }
        read.push(Placed {
            session,
            agent,
            inferred,
            session_given,
            told,
            entry,
        });
    }
    tally.unchained.add(responses::chain(&mut read));
    tally.from_headers = identity::place(&mut read, &file)?;
    tally.inferred = infer::place(&mut read);

    let mut sessions: Vec<Session> = Vec::new();
    let mut by_session: BTreeMap<String, usize> = BTreeMap::new();
    for Placed {
        session: session_id,
        agent: agent_id,
        entry,
        ..
    } in read
    {
        let line = entry.line;
        let s = *by_session.entry(session_id.clone()).or_insert_with(|| {
            sessions.push(Session {
                id: session_id,
                first_line: line,
                agents: Vec::new(),
                by_agent: BTreeMap::new(),
            });
            sessions.len() - 1
        });
        let Some(session) = sessions.get_mut(s) else {
            continue;
        };
        let a = *session.by_agent.entry(agent_id.clone()).or_insert_with(|| {
            session.agents.push(AgentEntries {
                id: agent_id,
                entries: Vec::new(),
            });
            session.agents.len() - 1
        });
        if let Some(agent) = session.agents.get_mut(a) {
            agent.entries.push(entry);
        }
    }
    let Some(earliest) = earliest else {
        return Err(lines.empty(
            "one recorded request (a JSON object with `start` and \
             `request`) per line",
        ));
    };

    let mut trees = Vec::with_capacity(sessions.len());
    for session in sessions {
        trees.push(into_tree(session, earliest, &file, &mut tally)?);
    }
    // Stable: sessions starting together keep their order of appearance.
    trees.sort_by_key(|t| t.arrival);
    let conventions = vec![
        "times: unix seconds; tree arrival = session's first start minus the file's earliest \
         start; turn start = start minus the session's first start"
            .to_string(),
        format!(
            "text: {} of {} turns extend their agent's previous prompt and answer (stored as \
             deltas); the others are stored whole",
            tally.extends, tally.turns
        ),
    ];
    let mut conventions = conventions;
    if tally.from_headers.lines > 0 {
        conventions.push(format!(
            "agents: {} lines placed by the agents' own identity headers; {} parents taken \
             from a header",
            tally.from_headers.lines, tally.from_headers.parents
        ));
    }
    if tally.inferred.lines > 0 {
        conventions.push(format!(
            "agents: {} lines without agent_id inferred into {} agents of {} trees by \
             conversation continuity (a child starts while its parent waits on a tool result)",
            tally.inferred.lines, tally.inferred.agents, tally.inferred.trees
        ));
    }
    Ok(Loaded {
        trees,
        conventions,
        problems: tally.problems(&file),
        ..Loaded::default()
    })
}

impl Counts {
    fn problems(&self, file: &str) -> Vec<Problem> {
        let mut out = Vec::new();
        self.no_end.report(&mut out, file, |n| {
            format!(
                "durations unknown for {n} turns (no `end`): gaps after them replay start to start"
            )
        });
        self.estimated.report(&mut out, file, |n| {
            format!(
                "{n} turns lack usage token counts: estimated from text length (1 token per 4 \
                 bytes)"
            )
        });
        self.no_response.report(&mut out, file, |n| {
            format!("{n} turns have no recorded response")
        });
        self.dropped_parts.report(&mut out, file, |n| {
            format!("{n} non-text content parts (images, audio, reasoning) dropped")
        });
        self.unchained.report(&mut out, file, |n| {
            format!(
                "{n} Responses turns continue a response not in the capture \
                 (previous_response_id): their earlier context is missing"
            )
        });
        self.background_root.report(&mut out, file, |n| {
            format!("`background` ignored on {n} root agents (a root is never a background child)")
        });
        out
    }
}

fn into_entry(
    raw: RawLine,
    file: &str,
    line: usize,
    tally: &mut Counts,
) -> Result<Entry, InputError> {
    let at =
        |path: &str, message: String| InputError::at(file, format!("line {line}, {path}"), message);
    let unix = |value: f64, path: &str| {
        unix_nanos(value).ok_or_else(|| {
            at(
                path,
                format!(
                    "expected unix seconds up to {} (year 2286), got {}",
                    show_number(MAX_UNIX_SECONDS),
                    show_number(value)
                ),
            )
        })
    };
    let exact = |value: u64, path: &str| {
        if value as f64 > MAX_UNIX_SECONDS * 1e9 {
            Err(at(
                path,
                format!("expected unix nanoseconds up to 10^19 (year 2286), got {value}"),
            ))
        } else {
            Ok(value)
        }
    };
    let start = match raw.start_ns {
        Some(ns) => exact(ns, "$.start_ns")?,
        None => unix(raw.start.0, "$.start")?,
    };
    let end = match (raw.end_ns, raw.end) {
        (Some(ns), _) => Some(exact(ns, "$.end_ns")?),
        (None, Some(e)) => Some(unix(e.0, "$.end")?),
        (None, None) => None,
    };
    if let Some(end_ns) = end {
        if end_ns < start {
            let (path, shown_end, shown_start) = match raw.end_ns {
                Some(ns) => ("$.end_ns", ns.to_string(), start.to_string()),
                None => (
                    "$.end",
                    raw.end.map_or_else(String::new, |e| show_number(e.0)),
                    show_number(raw.start.0),
                ),
            };
            return Err(at(
                path,
                format!("end {shown_end} is before start {shown_start}: expected end >= start"),
            ));
        }
    }
    let request = raw.request;
    let (chat, input) = match (request.messages, request.input) {
        (Some(chat), _) => (chat, None),
        (None, Some(input)) => (Vec::new(), Some(input)),
        (None, None) => {
            return Err(at(
                "$.request",
                "missing field `messages`: expected it in a chat completions or Messages \
                 request body (or `input` in a Responses request body)"
                    .to_string(),
            ))
        }
    };
    let mut messages = Vec::with_capacity(chat.len() + 1);
    let has_system = request.system.is_some();
    if let Some(system) = request.system {
        tally.dropped_parts.add(system.dropped as usize);
        if !system.text.is_empty() {
            messages.push(Message::text(Role::System, system.text));
        }
    }
    let mut tool_blocks = false;
    for m in chat {
        tally.dropped_parts.add(m.content.dropped as usize);
        tool_blocks |= m.content.has_tool_blocks();
        m.into_messages(&mut messages);
    }
    let instructions =
        input.is_some() && request.instructions.as_ref().is_some_and(|s| !s.is_empty());
    if let Some(input) = input {
        let mut dropped = 0;
        messages.extend(responses::request_messages(
            request.instructions,
            input,
            &mut dropped,
        ));
        tally.dropped_parts.add(dropped as usize);
    }
    // A Messages body has `system` or tool blocks; the tools' form decides
    // when there are tools.
    let guess = if has_system || tool_blocks {
        ShapeApi::Messages
    } else {
        ShapeApi::Chat
    };
    let kept = [
        request.parallel_tool_calls,
        request.response_format,
        request.chat_template_kwargs,
    ];
    let shape = read_shape(
        RawShape {
            tools: request.tools,
            tool_choice: request.tool_choice,
            fields: KEPT_FIELDS
                .into_iter()
                .zip(kept)
                .filter_map(|(name, value)| value.map(|v| (name, v)))
                .collect(),
        },
        guess,
        "$.request",
    )
    .map_err(|fault| fault.on_line(file, line))?;
    let mut response_id = None;
    let (response, response_calls, usage) = match raw.response {
        None => (None, Vec::new(), None),
        Some(r) => {
            response_id = r.id;
            let from_choices = r
                .choices
                .and_then(|c| c.into_iter().next())
                .and_then(|c| c.message);
            let (content, calls) = match from_choices {
                Some(m) => (Some(m.content), m.tool_calls),
                None => (r.content, r.tool_calls),
            };
            if let Some(c) = &content {
                tally.dropped_parts.add(c.dropped as usize);
            }
            let mut response_calls: Vec<ToolCall> = Vec::new();
            let text = match (content, r.output) {
                (Some(c), _) => {
                    response_calls = c.calls;
                    Some(c.text)
                }
                (None, Some(output)) => {
                    let mut dropped = 0;
                    let text = responses::answer(output, &mut dropped);
                    tally.dropped_parts.add(dropped as usize);
                    Some(text)
                }
                (None, None) => None,
            };
            response_calls.extend(calls.into_iter().flatten().map(RawToolCall::into_call));
            let text = match text {
                None if !response_calls.is_empty() => Some(String::new()),
                text => text,
            };
            (text, response_calls, r.usage)
        }
    };
    let (prompt_tokens, completion_tokens) = match usage {
        Some(u) => (
            u.prompt(),
            u.completion_tokens.or(u.output_tokens).map(|c| c.0),
        ),
        None => (None, None),
    };
    // A first byte outside [start, end] is no TTFT (left out, not wrong).
    let ttft = raw
        .first_byte_ns
        .filter(|&f| f >= start && end.is_none_or(|e| f <= e))
        .map(|f| f - start);
    Ok(Entry {
        line,
        start,
        end,
        ttft,
        parent: raw.parent_agent_id,
        parent_source: None,
        background: raw.background.unwrap_or(false),
        messages,
        shape,
        model: request.model.filter(|m| !m.is_empty()),
        response,
        response_calls,
        prompt_tokens,
        completion_tokens,
        response_id,
        previous_response_id: request.previous_response_id,
        instructions,
    })
}

impl RawUsage {
    /// `prompt_tokens`, else Anthropic's three input counts added up.
    fn prompt(&self) -> Option<u32> {
        if let Some(Count(n)) = self.prompt_tokens {
            return Some(n);
        }
        let parts = [
            self.input_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        ];
        parts.iter().any(Option::is_some).then(|| {
            parts
                .iter()
                .flatten()
                .fold(0u32, |sum, c| sum.saturating_add(c.0))
        })
    }
}

/// Unix seconds as written (the shortest decimal that reads back as the
/// same `f64`, which is what JSON writers print) to exact integer
/// nanoseconds, rounded to the nearest. Differences of these are exact, where
/// differences of the `f64`s would carry their binary noise (about 0.2 µs at
/// today's unix times). `None` when negative, not finite or above
/// [`MAX_UNIX_SECONDS`].
fn unix_nanos(value: f64) -> Option<u64> {
    if !value.is_finite() || !(0.0..=MAX_UNIX_SECONDS).contains(&value) {
        return None;
    }
    let text = format!("{value}");
    let (whole, fraction) = text.split_once('.').unwrap_or((text.as_str(), ""));
    let mut nanos: u128 = whole.parse::<u128>().ok()? * u128::from(NANOS_PER_SEC);
    let mut scale = u128::from(NANOS_PER_SEC);
    let mut digits = fraction.bytes();
    for d in digits.by_ref().take(9) {
        scale /= 10;
        nanos += u128::from(d.checked_sub(b'0')?) * scale;
    }
    if digits.next().is_some_and(|d| d >= b'5') {
        nanos += 1;
    }
    u64::try_from(nanos).ok()
}

/// Nanoseconds from `origin` to `value` (unix ns, `value >= origin`).
fn since(
    value: u64,
    origin: u64,
    file: &str,
    line: usize,
    path: &str,
    what: &str,
) -> Result<Nanos, InputError> {
    let span = value.saturating_sub(origin);
    if span > MAX_NANOS {
        return Err(InputError::at(
            file,
            format!("line {line}, {path}"),
            format!(
                "{} s is {} s after {what}: expected times within {} s of each other",
                show_number(value as f64 / 1e9),
                show_number(span as f64 / 1e9),
                show_number(MAX_SECONDS)
            ),
        ));
    }
    Ok(span)
}

fn into_tree(
    mut session: Session,
    earliest: u64,
    file: &str,
    tally: &mut Counts,
) -> Result<Tree, InputError> {
    for agent in &mut session.agents {
        // Stable: equal starts keep line order.
        agent.entries.sort_by_key(|e| e.start);
    }
    let first_start = session
        .agents
        .iter()
        .filter_map(|a| a.entries.first())
        .map(|e| e.start)
        .min()
        .unwrap_or(earliest);
    let session_line = session.first_line;
    let arrival = since(
        first_start,
        earliest,
        file,
        session_line,
        "$.start",
        "the file's earliest start",
    )?;

    // Parents: stated on the agent's lines; they must agree and exist.
    let mut parents: Vec<Option<usize>> = Vec::with_capacity(session.agents.len());
    // Where each agent's parent came from, when not from the file.
    let mut sources: Vec<Option<LinkSource>> = Vec::with_capacity(session.agents.len());
    let mut roots: Vec<usize> = Vec::new();
    for (a, agent) in session.agents.iter().enumerate() {
        let mut stated: Option<(&str, usize, &Option<LinkSource>)> = None;
        for e in &agent.entries {
            if let Some(p) = e.parent.as_deref() {
                match stated {
                    None => stated = Some((p, e.line, &e.parent_source)),
                    Some((q, q_line, _)) if q != p => {
                        return Err(InputError::at(
                            file,
                            format!("line {}, {}", e.line, parent_path(&e.parent_source)),
                            format!(
                                "agent `{}` has parent `{q}` on line {q_line} but `{p}` here: \
                                 expected one parent per agent",
                                agent.id
                            ),
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        match stated {
            None => {
                parents.push(None);
                sources.push(None);
                roots.push(a);
            }
            Some((p, line, source)) => {
                let path = parent_path(source);
                sources.push(source.clone());
                let Some(&index) = session.by_agent.get(p) else {
                    return Err(InputError::at(
                        file,
                        format!("line {line}, {path}"),
                        format!(
                            "parent agent `{p}` of agent `{}` is not in session `{}`: expected \
                             the agent_id of an agent with lines in the same session",
                            agent.id, session.id
                        ),
                    ));
                };
                if index == a {
                    return Err(InputError::at(
                        file,
                        format!("line {line}, {path}"),
                        format!("agent `{p}` names itself as its parent"),
                    ));
                }
                parents.push(Some(index));
            }
        }
    }
    let root = match roots.as_slice() {
        [one] => *one,
        [] => {
            return Err(InputError::at(
                file,
                format!("line {session_line}"),
                format!(
                    "session `{}` has no root agent (every agent has a parent_agent_id, so \
                     the parents form a cycle): expected exactly one agent without one",
                    session.id
                ),
            ));
        }
        [first, second, ..] => {
            let name = |a: usize| session.agents.get(a).map_or("", |x| x.id.as_str());
            let line = |a: usize| {
                session
                    .agents
                    .get(a)
                    .and_then(|x| x.entries.iter().map(|e| e.line).min())
                    .unwrap_or(session_line)
            };
            return Err(InputError::at(
                file,
                format!("line {}", line(*second)),
                format!(
                    "session `{}` has {} root agents (`{}`, `{}`{}): expected exactly one \
                     agent without parent_agent_id",
                    session.id,
                    roots.len(),
                    name(*first),
                    name(*second),
                    if roots.len() > 2 { ", ..." } else { "" }
                ),
            ));
        }
    };

    // Order: parents before children, by first start (then appearance).
    let first_of = |a: usize| -> (Nanos, usize) {
        let start = session
            .agents
            .get(a)
            .and_then(|x| x.entries.first())
            .map_or(0, |e| e.start.saturating_sub(first_start));
        (start, a)
    };
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); session.agents.len()];
    for (a, p) in parents.iter().enumerate() {
        if let Some(p) = p {
            if let Some(list) = children.get_mut(*p) {
                list.push(a);
            }
        }
    }
    let mut order = Vec::with_capacity(session.agents.len());
    let mut ready = BinaryHeap::new();
    ready.push(Reverse(first_of(root)));
    while let Some(Reverse((_, a))) = ready.pop() {
        order.push(a);
        for &c in children.get(a).into_iter().flatten() {
            ready.push(Reverse(first_of(c)));
        }
    }
    if order.len() != session.agents.len() {
        let mut placed = vec![false; session.agents.len()];
        for &a in &order {
            if let Some(p) = placed.get_mut(a) {
                *p = true;
            }
        }
        let stray = placed.iter().position(|p| !p).unwrap_or(0);
        let agent = session.agents.get(stray);
        return Err(InputError::at(
            file,
            format!(
                "line {}, $.parent_agent_id",
                agent
                    .and_then(|x| x.entries.first())
                    .map_or(session_line, |e| e.line)
            ),
            format!(
                "agent `{}` of session `{}` is in a parent cycle: expected every agent to \
                 descend from the root",
                agent.map_or("", |x| x.id.as_str()),
                session.id
            ),
        ));
    }
    let mut new_index = vec![0u32; session.agents.len()];
    for (i, &a) in order.iter().enumerate() {
        if let Some(slot) = new_index.get_mut(a) {
            *slot = i as u32;
        }
    }

    // Models: distinct request.model values, in line order.
    let mut lines_models: Vec<(usize, &str)> = session
        .agents
        .iter()
        .flat_map(|a| a.entries.iter())
        .filter_map(|e| e.model.as_deref().map(|m| (e.line, m)))
        .collect();
    lines_models.sort_by_key(|(line, _)| *line);
    let mut models: Vec<String> = Vec::new();
    for (line, m) in lines_models {
        if !models.iter().any(|x| x == m) {
            if models.len() > u16::MAX as usize {
                return Err(InputError::at(
                    file,
                    format!("line {line}, $.request.model"),
                    "more than 65536 distinct models in one session",
                ));
            }
            models.push(m.to_string());
        }
    }

    let mut shapes: Vec<RequestShape> = Vec::new();
    let mut slots: Vec<Option<AgentEntries>> = session.agents.into_iter().map(Some).collect();
    let mut agents = Vec::with_capacity(order.len());
    let mut provenance = Provenance::default();
    for &a in &order {
        let Some(entries) = slots.get_mut(a).and_then(Option::take) else {
            continue;
        };
        if let Some(source) = sources.get(a).cloned().flatten() {
            provenance.parent(agents.len() as u32, source);
        }
        let parent = parents
            .get(a)
            .copied()
            .flatten()
            .and_then(|p| new_index.get(p).copied());
        let background = entries.entries.first().is_some_and(|e| e.background);
        let kind = match (parent, background) {
            (None, b) => {
                tally.background_root.add(usize::from(b));
                AgentKind::Root
            }
            (Some(_), true) => AgentKind::Background,
            (Some(_), false) => AgentKind::Blocking,
        };
        let turns = into_turns(
            entries.entries,
            first_start,
            &models,
            &mut shapes,
            file,
            tally,
        )?;
        agents.push(Agent {
            id: entries.id,
            parent,
            kind,
            recorded_end: None,
            turns,
        });
    }
    Ok(Tree {
        id: session.id,
        source: format!("{file}:line {session_line}"),
        arrival,
        agents,
        explicit_edges: None,
        models,
        provenance,
        shapes,
        ..Tree::default()
    })
}

/// Where a parent stated by `source` is, for error messages.
fn parent_path(source: &Option<LinkSource>) -> &'static str {
    match source {
        Some(LinkSource::Header(_)) => "$.identity.parent_agent",
        _ => "$.parent_agent_id",
    }
}

fn into_turns(
    entries: Vec<Entry>,
    first_start: u64,
    models: &[String],
    shapes: &mut Vec<RequestShape>,
    file: &str,
    tally: &mut Counts,
) -> Result<Vec<Turn>, InputError> {
    let mut turns: Vec<Turn> = Vec::with_capacity(entries.len());
    // The previous turn's whole prompt, its response and the response's
    // tool calls.
    let mut previous: Option<(Vec<Message>, Option<String>, Vec<ToolCall>)> = None;
    for e in entries {
        let start = since(
            e.start,
            first_start,
            file,
            e.line,
            "$.start",
            "the session's first start",
        )?;
        let duration = match e.end {
            None => {
                tally.no_end.add(1);
                None
            }
            Some(end) => Some(since(
                end,
                e.start,
                file,
                e.line,
                "$.end",
                "the request's start",
            )?),
        };
        let prompt_bytes: usize = e.messages.iter().map(message_bytes).sum::<usize>()
            + e.shape
                .tool_defs
                .iter()
                .map(|t| {
                    t.name.len()
                        + t.description.as_ref().map_or(0, String::len)
                        + t.schema.as_ref().map_or(0, |s| s.len())
                })
                .sum::<usize>();
        let answer_bytes =
            e.response.as_ref().map_or(0, String::len) + calls_bytes(&e.response_calls);
        if e.response.is_none() {
            tally.no_response.add(1);
        }
        let estimated = e.prompt_tokens.is_none() || e.completion_tokens.is_none();
        if estimated {
            tally.estimated.add(1);
        }
        let isl = e
            .prompt_tokens
            .unwrap_or_else(|| tokens_for_bytes(prompt_bytes).max(1));
        let osl = e
            .completion_tokens
            .unwrap_or_else(|| tokens_for_bytes(answer_bytes).max(1));
        let input_kind = match e.messages.last().map(|m| m.role) {
            Some(Role::Tool) => InputKind::ToolResult,
            Some(Role::User) => InputKind::UserText,
            _ => InputKind::Unknown,
        };
        let model = e
            .model
            .as_deref()
            .and_then(|m| models.iter().position(|x| x == m))
            .and_then(|i| u16::try_from(i).ok());
        let delta = previous.as_ref().and_then(|(prompt, answer, calls)| {
            delta_after(&e.messages, prompt, answer.as_deref(), calls)
        });
        let extends = delta.is_some();
        tally.extends += usize::from(extends);
        let messages = match delta {
            Some(rest) => {
                // The calls as the agent sent them back (equal as JSON to
                // the response's, perhaps not as text): what a replay sends.
                let sent = e.messages.get(e.messages.len() - rest.len() - 1);
                if let (Some(sent), Some(last)) = (sent, turns.last_mut()) {
                    if let Some(text) = last.text.as_deref_mut() {
                        if text.response_calls != sent.calls() {
                            text.response_calls = sent.calls().to_vec();
                        }
                    }
                }
                rest.to_vec()
            }
            None => e.messages.clone(),
        };
        let shape = intern_shape(shapes, e.shape);
        turns.push(Turn {
            start,
            duration,
            isl,
            osl,
            ttft: e.ttft,
            model,
            input_kind,
            hash_ids: Default::default(),
            text: Some(Box::new(TurnText {
                extends_previous: extends,
                messages,
                response: e.response.clone(),
                response_calls: e.response_calls.clone(),
                shape,
            })),
            tokens_estimated: estimated,
        });
        previous = Some((e.messages, e.response, e.response_calls));
    }
    tally.turns += turns.len();
    Ok(turns)
}

/// The messages after `prompt` and an assistant message equal to `answer`
/// with the tool calls `calls`, when `messages` begins with both; `None`
/// otherwise. Calls are equal when their ids and names are and their
/// arguments are equal JSON (a recorder may write the answer's arguments
/// with other spacing or key order than the agent sends them back).
fn delta_after<'m>(
    messages: &'m [Message],
    prompt: &[Message],
    answer: Option<&str>,
    calls: &[ToolCall],
) -> Option<&'m [Message]> {
    let answer = answer?;
    let head = messages.get(..prompt.len())?;
    let reply = messages.get(prompt.len())?;
    let same_calls = reply.calls().len() == calls.len()
        && reply.calls().iter().zip(calls).all(|(a, b)| {
            a.id == b.id && a.name == b.name && same_json(&a.arguments, &b.arguments)
        });
    (head == prompt && reply.role == Role::Assistant && reply.content == answer && same_calls)
        .then(|| messages.get(prompt.len() + 1..))
        .flatten()
}

/// Equal texts, or texts of equal JSON values.
fn same_json(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (
                serde_json::from_str::<serde_json::Value>(a),
                serde_json::from_str::<serde_json::Value>(b),
            ),
            (Ok(x), Ok(y)) if x == y
        )
}

/// A message's bytes for the token estimate: its text and its tool
/// calls' names and arguments.
fn message_bytes(message: &Message) -> usize {
    message.content.len() + calls_bytes(message.calls())
}

fn calls_bytes(calls: &[ToolCall]) -> usize {
    calls.iter().map(|c| c.name.len() + c.arguments.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_contains, scratch_file, testdata};
    use super::*;
    use arbor_engine::time::{NANOS_PER_MS, NANOS_PER_SEC};
    use std::path::PathBuf;

    fn sample(name: &str) -> PathBuf {
        testdata("openai-log").join(name)
    }

    fn load_text(text: &str) -> Result<Loaded, InputError> {
        let path = scratch_file("text", text.as_bytes());
        let out = load(&path);
        std::fs::remove_file(&path).ok();
        out
    }

    fn ms(n: u64) -> Nanos {
        n * NANOS_PER_MS
    }

    #[test]
    fn sample_agents_kinds_and_parents() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        assert_eq!(loaded.trees.len(), 1);
        let tree = &loaded.trees[0];
        assert_eq!(tree.id, "fix-date-parsing");
        assert_eq!(tree.arrival, 0);
        assert!(
            tree.source.ends_with("sample.jsonl:line 1"),
            "{}",
            tree.source
        );
        let agents: Vec<(&str, Option<u32>, AgentKind, usize)> = tree
            .agents
            .iter()
            .map(|a| (a.id.as_str(), a.parent, a.kind, a.turns.len()))
            .collect();
        assert_eq!(
            agents,
            [
                ("main", None, AgentKind::Root, 4),
                ("explore-tests", Some(0), AgentKind::Blocking, 2),
                ("lint-watch", Some(0), AgentKind::Background, 1),
            ]
        );
        assert_eq!(tree.models, ["claude-sonnet-4-6", "claude-haiku-4-5"]);
        assert_eq!(tree.agents[0].turns[0].model, Some(0));
        assert_eq!(tree.agents[1].turns[0].model, Some(1));
    }

    #[test]
    fn sample_starts_and_durations() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        let tree = &loaded.trees[0];
        let times = |a: usize| -> Vec<(Nanos, Option<Nanos>)> {
            tree.agents[a]
                .turns
                .iter()
                .map(|t| (t.start, t.duration))
                .collect()
        };
        assert_eq!(
            times(0),
            [
                (0, Some(ms(2350))),
                (ms(4100), Some(ms(2800))),
                (ms(16_250), Some(ms(2125))),
                (ms(24_000), Some(ms(3500))),
            ]
        );
        assert_eq!(
            times(1),
            [(ms(7200), Some(ms(1800))), (ms(9750), Some(ms(3250)))]
        );
        // The background agent's turn has no `end`.
        assert_eq!(times(2), [(ms(7500), None)]);
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("durations unknown for 1 turns")));
        // The blocking child ends (13.0 s) before the join turn (16.25 s).
        let child_end = tree.agents[1].turns.iter().map(Turn::end).max();
        assert_eq!(child_end, Some(13 * NANOS_PER_SEC));
    }

    #[test]
    fn sample_text_deltas_both_ways() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        let tree = &loaded.trees[0];
        let text = |a: usize, t: usize| tree.agents[a].turns[t].text.as_deref().expect("text");
        // Root turn 0: whole prompt.
        assert!(!text(0, 0).extends_previous);
        assert_eq!(text(0, 0).messages.len(), 2);
        assert_eq!(text(0, 0).messages[0].role, Role::System);
        // Root turns 1 and 2 extend: only the tool result is new.
        for t in [1, 2] {
            let x = text(0, t);
            assert!(x.extends_previous, "turn {t}");
            assert_eq!(x.messages.len(), 1);
            assert_eq!(x.messages[0].role, Role::Tool);
            assert_eq!(tree.agents[0].turns[t].input_kind, InputKind::ToolResult);
        }
        assert!(text(0, 2).messages[0]
            .content
            .contains("tests/test_dates.py"));
        // Root turn 3: the client compacted its context; stored whole.
        let x = text(0, 3);
        assert!(!x.extends_previous);
        assert_eq!(x.messages.len(), 2);
        assert_eq!(x.messages[1].role, Role::User);
        assert!(x.messages[1]
            .content
            .starts_with("Summary of the work so far"));
        assert_eq!(tree.agents[0].turns[3].input_kind, InputKind::UserText);
        // Responses: chat completion object and the short form.
        assert!(text(0, 0)
            .response
            .as_deref()
            .expect("response")
            .starts_with("I'll start by reading"));
        assert!(text(2, 0)
            .response
            .as_deref()
            .expect("response")
            .contains("ruff"));
        // Content parts are joined with a newline.
        assert_eq!(
            text(1, 0).messages[1].content,
            "List the tests that cover date parsing.\nReport file and test names only."
        );
        assert!(text(1, 1).extends_previous);
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("3 of 7 turns extend")));
    }

    #[test]
    fn a_messages_capture_loads_as_turns() {
        let loaded = load(&sample("messages.jsonl")).expect("Messages capture loads");
        assert_eq!(loaded.trees.len(), 1);
        let agent = &loaded.trees[0].agents[0];
        assert_eq!(agent.turns.len(), 3);
        let text = |t: usize| agent.turns[t].text.as_deref().expect("text");
        // `system` is the first message; the user's text follows.
        let first = text(0);
        assert!(!first.extends_previous);
        assert_eq!(first.messages.len(), 2);
        assert_eq!(first.messages[0].role, Role::System);
        assert!(first.messages[0]
            .content
            .starts_with("You are a coding agent"));
        // The answer's text, and its tool_use block as a call (the input's
        // JSON text as recorded).
        assert_eq!(
            first.response.as_deref(),
            Some("I'll read the ISO parser first.")
        );
        assert_eq!(
            first.response_calls,
            [ToolCall {
                id: "toolu_01".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "src/dateparse/iso.py"}"#.into(),
            }]
        );
        // Turns 1 and 2 extend the previous prompt and answer (whether the
        // system prompt was written as blocks or as a string): only the
        // tool result is new, a tool message.
        for t in [1, 2] {
            let x = text(t);
            assert!(x.extends_previous, "turn {t}");
            assert_eq!(x.messages.len(), 1, "turn {t}");
            assert_eq!(x.messages[0].role, Role::Tool, "turn {t}");
            assert_eq!(agent.turns[t].input_kind, InputKind::ToolResult);
        }
        let answered = |t: usize| text(t).messages[0].result().map(|r| r.call_id.clone());
        assert_eq!(answered(1).as_deref(), Some("toolu_01"));
        assert_eq!(answered(2).as_deref(), Some("toolu_02"));
        assert!(text(1).messages[0].content.contains("fromisoformat(s)"));
        assert_eq!(text(2).messages[0].content, "2 failed, 14 passed");
        // Input tokens: input + cache_read + cache_creation.
        let t0 = &agent.turns[0];
        assert_eq!((t0.isl, t0.osl, t0.tokens_estimated), (310, 42, false));
        let t1 = &agent.turns[1];
        assert_eq!((t1.isl, t1.osl, t1.tokens_estimated), (404, 30, false));
        assert!(agent.turns[2].tokens_estimated);
        assert!(!loaded
            .problems
            .iter()
            .any(|p| p.message.contains("dropped")));
    }

    #[test]
    fn sample_usage_vs_estimated_tokens() {
        let loaded = load(&sample("sample.jsonl")).expect("sample loads");
        let tree = &loaded.trees[0];
        let t0 = &tree.agents[0].turns[0];
        assert_eq!((t0.isl, t0.osl, t0.tokens_estimated), (1412, 96, false));
        // The background turn's response has no usage: estimated from text.
        let bg = &tree.agents[2].turns[0];
        assert!(bg.tokens_estimated);
        let text = bg.text.as_deref().expect("text");
        let prompt: usize = text.messages.iter().map(|m| m.content.len()).sum();
        assert_eq!(bg.isl as usize, prompt.div_ceil(4));
        assert_eq!(
            bg.osl as usize,
            text.response
                .as_deref()
                .expect("response")
                .len()
                .div_ceil(4)
        );
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("1 turns lack usage token counts")));
    }

    #[test]
    fn defaults_sessions_and_ordering() {
        // No session_id: session "default"; no agent_id: the session id.
        // Sessions ordered by first start; arrival from the file's earliest.
        let text = r#"{"start": 1767225610.5, "request": {"messages": [{"role": "user", "content": "a"}]}}
{"start": 1767225600.25, "session_id": "early", "agent_id": "r", "request": {"messages": [{"role": "user", "content": "b"}]}, "response": {"content": "ok", "usage": {"prompt_tokens": 3, "completion_tokens": 1}}}
{"start": 1767225601.0, "session_id": "early", "agent_id": "kid", "parent_agent_id": "r", "background": false, "request": {"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": null}]}}
{"start": 1767225600.75, "session_id": "early", "agent_id": "r", "request": {"messages": [{"role": "user", "content": "b"}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "c"}]}}
"#;
        let loaded = load_text(text).expect("loads");
        let ids: Vec<&str> = loaded.trees.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["early", "default"]);
        assert_eq!(loaded.trees[0].arrival, 0);
        assert_eq!(loaded.trees[1].arrival, 10_250 * NANOS_PER_MS);
        assert_eq!(loaded.trees[1].agents[0].id, "default");
        let early = &loaded.trees[0];
        assert_eq!(early.agents[0].turns[1].start, ms(500));
        let t1 = early.agents[0].turns[1].text.as_deref().expect("text");
        assert!(t1.extends_previous);
        assert_eq!(t1.messages[0].content, "c");
        assert_eq!(early.agents[1].kind, AgentKind::Blocking);
        assert_eq!(early.agents[1].turns[0].start, ms(750));
        assert_eq!(early.agents[1].turns[0].input_kind, InputKind::Unknown);
        assert!(early.models.is_empty());
    }

    #[test]
    fn unix_seconds_to_exact_nanoseconds() {
        assert_eq!(unix_nanos(1767225604.1), Some(1_767_225_604_100_000_000));
        assert_eq!(unix_nanos(1767225600.0), Some(1_767_225_600_000_000_000));
        assert_eq!(
            unix_nanos(1760587801.647311),
            Some(1_760_587_801_647_311_000)
        );
        assert_eq!(unix_nanos(0.0000001), Some(100));
        assert_eq!(unix_nanos(1.0000000005), Some(1_000_000_001));
        assert_eq!(unix_nanos(12.5), Some(12_500_000_000));
        assert_eq!(unix_nanos(1e10), Some(10_000_000_000_000_000_000));
        assert_eq!(unix_nanos(1.0e10 + 1.0), None);
        assert_eq!(unix_nanos(-1.0), None);
        assert_eq!(unix_nanos(f64::NAN), None);
        assert_eq!(unix_nanos(f64::INFINITY), None);
    }

    #[test]
    fn extends_needs_the_exact_prompt_and_answer() {
        let m = |role: Role, c: &str| Message::text(role, c);
        let prompt = [m(Role::System, "s"), m(Role::User, "u")];
        let next = [
            m(Role::System, "s"),
            m(Role::User, "u"),
            m(Role::Assistant, "a"),
            m(Role::Tool, "t"),
        ];
        assert_eq!(
            delta_after(&next, &prompt, Some("a"), &[]),
            Some(&next[3..])
        );
        assert_eq!(delta_after(&next, &prompt, Some("b"), &[]), None);
        assert_eq!(delta_after(&next, &prompt, None, &[]), None);
        assert_eq!(delta_after(&next[..2], &prompt, Some("a"), &[]), None);
        let edited = [
            m(Role::System, "S"),
            m(Role::User, "u"),
            m(Role::Assistant, "a"),
        ];
        assert_eq!(delta_after(&edited, &prompt, Some("a"), &[]), None);
        // Exactly prompt + answer: an empty delta still extends.
        assert_eq!(
            delta_after(&next[..3], &prompt, Some("a"), &[]),
            Some(&next[3..3])
        );
    }

    #[test]
    fn looks_like_accepts_capture_logs_only() {
        let bytes = std::fs::read(sample("sample.jsonl")).expect("read");
        let prefix = String::from_utf8_lossy(&bytes);
        assert!(looks_like(&prefix));
        assert_eq!(
            super::super::detect(&sample("sample.jsonl")).expect("detects"),
            super::super::Format::OpenaiLog
        );
        assert!(looks_like(
            r#"{"start": 1.0, "session_id": "s", "request": {"messages": [{"role": "user", "content": "very long"#
        ));
        let others = [
            r#"{"id":"t","requests":[{"t":0,"in":1,"out":1}]}"#,
            r#"{"arbor": 1, "id": "t1", "agents": []}"#,
            r#"{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}"#,
            r#"{"timestamp": 1760587801647311, "input": "x", "output": "", "session_id": "22ff"}"#,
            r#"{"session_id": "s", "system_prompt": "x", "turns": []}"#,
            "",
            "[]",
        ];
        for text in others {
            assert!(!looks_like(text), "{text}");
        }
    }

    // ----- errors -----

    #[test]
    fn error_conflicting_parents() {
        let msg = load_text(
            r#"{"start": 1, "agent_id": "r", "request": {"messages": []}}
{"start": 1, "agent_id": "q", "request": {"messages": []}, "parent_agent_id": "r"}
{"start": 2, "agent_id": "c", "parent_agent_id": "r", "request": {"messages": []}}
{"start": 3, "agent_id": "c", "parent_agent_id": "q", "request": {"messages": []}}"#,
        )
        .expect_err("rejected")
        .to_string();
        assert_contains(
            &msg,
            &[
                "line 4, $.parent_agent_id",
                "agent `c` has parent `r` on line 3 but `q` here",
            ],
        );
    }

    #[test]
    fn error_values_and_shapes() {
        let cases: [(&str, &[&str]); 9] = [
            (
                r#"{"start": "yesterday", "request": {"messages": []}}"#,
                &[
                    "line 1, $.start",
                    "expected a non-negative finite number of seconds",
                ],
            ),
            (
                r#"{"start": 1, "end": 1e400, "request": {"messages": []}}"#,
                &["line 1", "number out of range"],
            ),
            (
                r#"{"start": 1, "request": {"messages": [{"role": "user", "content": [{"type": "text"}]}]}}"#,
                &[
                    "$.request.messages[0].content",
                    "missing field `text`: expected it in a part of type `text`",
                ],
            ),
            (
                r#"{"start": 1, "request": {"messages": []}, "response": {"usage": {"prompt_tokens": -1}}}"#,
                &["$.response.usage.prompt_tokens", "got -1"],
            ),
            (
                r#"{"start": 1, "request": {"messages": []}, "response": {"choices": [{"message": {"content": 5}}]}}"#,
                &["$.response.choices[0].message.content", "invalid type"],
            ),
            (
                r#"{"start": 1, "background": "yes", "request": {"messages": []}}"#,
                &["$.background", "invalid type: string"],
            ),
            (
                r#"{"start": 1, "request": {"messages": [{"content": "x"}]}}"#,
                &["$.request.messages[0]", "missing field `role`"],
            ),
            (
                r#"{"request": {"messages": []}}"#,
                &["line 1", "missing field `start`"],
            ),
            (
                r#"[{"start": 1}]"#,
                &["line 1", "expected a recorded request"],
            ),
        ];
        for (text, parts) in cases {
            let msg = load_text(text).expect_err(text).to_string();
            assert_contains(&msg, parts);
        }
    }

    #[test]
    fn the_first_byte_gives_the_recorded_ttft_when_inside_the_turn() {
        let loaded = load_text(
            r#"{"start": 1, "start_ns": 1000000000, "first_byte_ns": 1000000300, "end_ns": 1000000900, "request": {"messages": []}}
{"start": 2, "start_ns": 2000000000, "first_byte_ns": 2000000950, "end_ns": 2000000900, "request": {"messages": []}}
{"start": 3, "start_ns": 3000000000, "first_byte_ns": 2999999999, "request": {"messages": []}}
{"start": 4, "start_ns": 4000000000, "request": {"messages": []}}"#,
        )
        .expect("loads");
        let ttfts: Vec<Option<u64>> = loaded.trees[0].agents[0]
            .turns
            .iter()
            .map(|t| t.ttft)
            .collect();
        assert_eq!(ttfts, [Some(300), None, None, None]);
    }

    #[test]
    fn exact_nanoseconds_win_over_seconds_and_are_checked() {
        let loaded = load_text(
            r#"{"start": 1800000000.0, "start_ns": 1800000000000000001, "end_ns": 1800000000000000008, "request": {"messages": []}}
{"start": 1800000001.0, "start_ns": 1800000000000000009, "request": {"messages": []}}"#,
        )
        .expect("loads");
        let turns = &loaded.trees[0].agents[0].turns;
        assert_eq!((turns[0].start, turns[0].duration), (0, Some(7)));
        assert_eq!(turns[1].start, 8);
        let msg = load_text(
            r#"{"start": 1, "start_ns": 1000000005, "end_ns": 1000000004, "request": {"messages": []}}"#,
        )
        .expect_err("rejected")
        .to_string();
        assert_contains(
            &msg,
            &[
                "line 1, $.end_ns",
                "end 1000000004 is before start 1000000005",
            ],
        );
        let msg = load_text(
            r#"{"start": 1, "start_ns": 18446744073709551615, "request": {"messages": []}}"#,
        )
        .expect_err("rejected")
        .to_string();
        assert_contains(&msg, &["$.start_ns", "up to 10^19"]);
    }

    #[test]
    fn content_parts_drop_non_text() {
        let loaded = load_text(
            r#"{"start": 1, "request": {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "text", "text": "b"}]}]}}"#,
        )
        .expect("loads");
        let text = loaded.trees[0].agents[0].turns[0]
            .text
            .as_deref()
            .expect("t");
        assert_eq!(text.messages[0].content, "a\nb");
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.contains("1 non-text content parts")));
    }

    /// The chat capture with tools (testdata/openai-log/tools-chat.jsonl):
    /// the tools, tool choice and `parallel_tool_calls` kept once for the
    /// tree, the assistant's `tool_calls` and the `tool` messages'
    /// `tool_call_id`s kept, turns stored as deltas after the answer's
    /// calls.
    #[test]
    fn a_chat_capture_keeps_tools_calls_and_results() {
        let loaded = load(&sample("tools-chat.jsonl")).expect("loads");
        let tree = &loaded.trees[0];
        assert_eq!(tree.shapes.len(), 1, "one set of tools for three turns");
        let shape = &tree.shapes[0];
        assert_eq!(shape.api, ShapeApi::Chat);
        let names: Vec<&str> = shape.tool_defs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["read_file", "run_tests"]);
        assert!(shape
            .tools
            .as_deref()
            .unwrap()
            .starts_with(r#"[{"type": "function""#));
        assert_eq!(shape.tool_choice.as_deref(), Some(r#""auto""#));
        assert_eq!(
            shape.fields,
            [("parallel_tool_calls".into(), "true".into())]
        );
        let turns = &tree.agents[0].turns;
        let text = |t: usize| turns[t].text.as_deref().expect("text");
        assert!((0..3).all(|t| text(t).shape == Some(0)));
        // Turn 0's answer is a call without text.
        assert_eq!(text(0).response.as_deref(), Some(""));
        assert_eq!(
            text(0).response_calls,
            [ToolCall {
                id: "call_7hQ2".into(),
                name: "read_file".into(),
                arguments: r#"{"path": "src/dateparse/iso.py"}"#.into(),
            }]
        );
        // Turns 1 and 2 extend: only the tool results are new.
        for (t, ids) in [
            (1, &["call_7hQ2"][..]),
            (2, &["call_Lm4x", "call_9vPe"][..]),
        ] {
            assert!(text(t).extends_previous, "turn {t}");
            let answered: Vec<&str> = text(t)
                .messages
                .iter()
                .map(|m| m.result().expect("a tool result").call_id.as_str())
                .collect();
            assert_eq!(answered, ids, "turn {t}");
        }
        assert_eq!(text(1).response_calls.len(), 2);
        // The whole prompt of turn 2: the assistant turns carry their calls.
        let prompt = arbor_engine::content::prompt_messages(&tree.agents[0], 2);
        let shape: Vec<(Role, usize, bool)> = prompt
            .iter()
            .map(|m| (m.role, m.calls.len(), m.result.is_some()))
            .collect();
        assert_eq!(
            shape,
            [
                (Role::System, 0, false),
                (Role::User, 0, false),
                (Role::Assistant, 1, false),
                (Role::Tool, 0, true),
                (Role::Assistant, 2, false),
                (Role::Tool, 0, true),
                (Role::Tool, 0, true),
            ]
        );
    }

    /// The Messages capture with tools: `tool_use` blocks are calls, each
    /// `tool_result` block a tool message, the user's text after them a
    /// user message; the tools read neutral from `input_schema`.
    #[test]
    fn a_messages_capture_keeps_tool_use_and_tool_result_blocks() {
        let loaded = load(&sample("tools-messages.jsonl")).expect("loads");
        let tree = &loaded.trees[0];
        assert_eq!(tree.shapes.len(), 1);
        assert_eq!(tree.shapes[0].api, ShapeApi::Messages);
        assert_eq!(
            tree.shapes[0].tool_defs[0]
                .schema
                .as_deref()
                .map(|s| &s[..16]),
            Some(r#"{"type": "object"#)
        );
        assert_eq!(
            tree.shapes[0].tool_choice.as_deref(),
            Some(r#"{"type": "auto"}"#)
        );
        let turns = &tree.agents[0].turns;
        let text = |t: usize| turns[t].text.as_deref().expect("text");
        assert_eq!(text(0).response_calls[0].id, "toolu_01A");
        assert_eq!(
            text(1).response.as_deref(),
            Some("`fromisoformat` before Python 3.11 rejects a `Z` suffix. I'll run the failing test and read it.")
        );
        assert_eq!(text(1).response_calls.len(), 2);
        assert!(text(2).extends_previous);
        let last: Vec<(Role, Option<&str>, &str)> = text(2)
            .messages
            .iter()
            .map(|m| {
                (
                    m.role,
                    m.result().map(|r| r.call_id.as_str()),
                    &m.content[..],
                )
            })
            .collect();
        assert_eq!(last.len(), 3);
        assert_eq!((last[0].0, last[0].1), (Role::Tool, Some("toolu_02B")));
        assert!(last[0].2.starts_with("FAILED tests/test_iso.py"));
        assert_eq!((last[1].0, last[1].1), (Role::Tool, Some("toolu_02C")));
        assert_eq!(
            last[2],
            (
                Role::User,
                None,
                "Keep the error message for other bad inputs."
            )
        );
        assert_eq!(turns[2].input_kind, InputKind::UserText);
    }

    /// Tool definitions and calls count toward a turn's estimated tokens.
    #[test]
    fn tools_and_calls_count_in_the_estimate() {
        let with = r#"{"start": 1, "request": {"tools": [{"type": "function", "function": {"name": "abcd", "parameters": {}}}], "messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "efgh", "arguments": "{}"}}]}]}}"#;
        let loaded = load_text(with).expect("loads");
        // "abcd" + "{}" + "efgh" + "{}": 12 bytes, 3 tokens.
        assert_eq!(loaded.trees[0].agents[0].turns[0].isl, 3);
        let msg = load_text(
            r#"{"start": 1, "request": {"tools": [{"type": "function", "function": {"name": 1}}], "messages": []}}"#,
        )
        .expect_err("refused")
        .to_string();
        assert_contains(
            &msg,
            &["line 1, $.request.tools[0].function.name", "invalid type"],
        );
    }
}
