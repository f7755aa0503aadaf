//! Dynamo request traces (`dynamo.request.trace.v1`, written by the Dynamo
//! frontend's request tracing; `docs/formats/dynamo.md`): JSONL records,
//! one `request_end` per model request, with the session
//! (`agent_context.session_id`), its parent session
//! (`agent_context.parent_session_id`), request timings (unix-ms
//! `request_received_ms`, `ttft_ms`, `total_time_ms`), token counts and the
//! prompt's block hashes (`request.replay.input_sequence_hashes`).
//!
//! Owns turning those records into trees: a session is an agent, a parent
//! session the agent's parent (a blocking subagent), a root session and its
//! descendants one tree. Edges are not written: they are derived from the
//! recorded times (`docs/model.md`, "Edges"), which is how Dynamo's own
//! lowering infers launch and join without tool evidence. Sequence hashes
//! (u64) are renumbered densely in order of first appearance, file-wide:
//! equal hashes stay equal, so prefix sharing within and across trees is
//! kept. Tool events (`tool_start`, `tool_end`, `tool_error`) are counted
//! and skipped. A line may also be the recorder's envelope `{"timestamp",
//! "event": record}`. Must not touch other formats' rows or the engine's
//! edge rule (it only leaves `explicit_edges` unset).

use std::collections::HashMap;

use serde::Deserialize;

use arbor_engine::error::InputError;
use arbor_engine::model::{Agent, AgentKind, BlockIdsBuilder, HashScope, InputKind, Tree, Turn};
use arbor_engine::time::{Nanos, MAX_SECONDS};

use super::fields::{show_number, Count, Id, Millis, NonEmpty, MAX_NANOS};
use super::json::Lines;
use super::sniff::first_row;
use super::source::Source;
use crate::input::{Loaded, Problem};

/// Hashes a sequence hash for the renumbering map: the splitmix64
/// finaliser (a bijection, so distinct hashes stay distinct), several times
/// cheaper than the default SipHash on the hot path of a load. Sequence
/// hashes are the server's own, not chosen by an adversary.
#[derive(Default)]
struct MixHasher(u64);

impl std::hash::Hasher for MixHasher {
    fn finish(&self) -> u64 {
        let mut z = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type HashIdMap = HashMap<u64, u32, std::hash::BuildHasherDefault<MixHasher>>;

/// The `schema` value every record carries.
pub const SCHEMA: &str = "dynamo.request.trace.v1";

/// What a record is, in messages.
const RECORD: &str = "a Dynamo request-trace record (a JSON object with `schema`, `event_type`, `agent_context` and `request`)";

/// Does this start of a file look like a Dynamo request trace? (Its first
/// row names the schema.)
pub fn looks_like(text_prefix: &str) -> bool {
    first_row(text_prefix).is_some_and(|row| row.contains(SCHEMA) && row.contains("\"schema\""))
}

/// One line: a record, or the recorder's envelope `{"timestamp", "event":
/// record}` (Dynamo's docs show both). `schema` and `event_type` are
/// required on the record itself; optional here only so that an envelope
/// may omit them.
#[derive(Deserialize)]
#[serde(
    expecting = "a Dynamo request-trace record (a JSON object with `schema`, `event_type`, `agent_context` and `request`)"
)]
struct RawLine {
    schema: Option<String>,
    event_type: Option<String>,
    event_time_unix_ms: Option<u64>,
    agent_context: Option<RawContext>,
    request: Option<RawRequest>,
    event: Option<Box<RawRecord>>,
}

#[derive(Deserialize)]
#[serde(
    expecting = "a Dynamo request-trace record (a JSON object with `schema`, `event_type`, `agent_context` and `request`)"
)]
struct RawRecord {
    schema: String,
    event_type: String,
    event_time_unix_ms: Option<u64>,
    agent_context: Option<RawContext>,
    request: Option<RawRequest>,
}

impl RawLine {
    /// The record and the JSON path it sits at (`$` or `$.event`).
    fn record(self, reader: &Lines) -> Result<(RawRecord, &'static str), InputError> {
        if let Some(event) = self.event {
            return Ok((*event, "$.event"));
        }
        let missing = |field: &str| {
            reader.error(
                "",
                format!("missing field `{field}`: expected it in {RECORD}"),
            )
        };
        Ok((
            RawRecord {
                schema: self.schema.ok_or_else(|| missing("schema"))?,
                event_type: self.event_type.ok_or_else(|| missing("event_type"))?,
                event_time_unix_ms: self.event_time_unix_ms,
                agent_context: self.agent_context,
                request: self.request,
            },
            "$",
        ))
    }
}

#[derive(Deserialize)]
#[serde(expecting = "an agent context (an object with `session_id`)")]
struct RawContext {
    session_id: NonEmpty,
    parent_session_id: Option<NonEmpty>,
}

#[derive(Deserialize)]
#[serde(
    expecting = "request metrics (an object with `request_id`, `request_received_ms`, `output_tokens`)"
)]
struct RawRequest {
    /// Required by the schema; identity only (nothing refers to it).
    #[allow(dead_code)]
    request_id: Id,
    input_tokens: Option<Count>,
    output_tokens: Option<Count>,
    request_received_ms: Option<u64>,
    ttft_ms: Option<Millis>,
    total_time_ms: Option<Millis>,
    replay: Option<RawReplay>,
}

#[derive(Deserialize)]
#[serde(
    expecting = "replay metrics (an object with `trace_block_size`, `input_length`, `input_sequence_hashes`)"
)]
struct RawReplay {
    trace_block_size: Count,
    input_length: Count,
    input_sequence_hashes: Vec<SequenceHash>,
}

/// One entry of `input_sequence_hashes`: an unsigned 64-bit integer.
struct SequenceHash(u64);

impl<'de> Deserialize<'de> for SequenceHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SequenceHash;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a sequence hash (an integer in 0..=18446744073709551615)")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<SequenceHash, E> {
                Ok(SequenceHash(v))
            }
        }
        d.deserialize_u64(V)
    }
}

/// One request as kept until its session's tree is built.
struct Request {
    line: usize,
    received_ms: u64,
    turn: Turn,
}

struct Session {
    id: String,
    first_line: usize,
    /// Parent session name and the line that named it.
    parent: Option<(String, usize)>,
    requests: Vec<Request>,
}

/// Reads one Dynamo request-trace JSONL file.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut reader = Lines::open(input.into(), RECORD)?;
    let file = reader.file().to_string();
    let mut sessions: Vec<Session> = Vec::new();
    let mut session_index: HashMap<String, usize> = HashMap::new();
    let mut hash_ids = HashIdMap::default();
    let mut block_size: Option<(u32, usize)> = None;
    let mut tool_events = 0usize;
    let mut no_hashes = 0usize;
    let mut end_from_event = 0usize;
    let mut unknown_durations = 0usize;
    let mut earliest: Option<u64> = None;

    let mut wrapped = 0usize;
    while let Some(raw) = reader.next::<RawLine>()? {
        let line = reader.line();
        let (raw, at) = raw.record(&reader)?;
        if at != "$" {
            wrapped += 1;
        }
        let path = |field: &str| format!("{at}{field}");
        if raw.schema != SCHEMA {
            return Err(reader.error(
                &path(".schema"),
                format!("\"{}\": expected \"{SCHEMA}\"", raw.schema),
            ));
        }
        match raw.event_type.as_str() {
            "request_end" => {}
            "tool_start" | "tool_end" | "tool_error" => {
                tool_events += 1;
                continue;
            }
            other => {
                return Err(reader.error(
                    &path(".event_type"),
                    format!(
                        "\"{other}\": expected request_end, tool_start, tool_end or tool_error"
                    ),
                ))
            }
        }
        let Some(context) = raw.agent_context else {
            return Err(reader.error(
                &path(".agent_context"),
                "missing: expected the agent context with `session_id` on every request (start Dynamo's request tracing with the session headers)",
            ));
        };
        let Some(request) = raw.request else {
            return Err(reader.error(
                &path(".request"),
                "missing: expected the request's metrics on a request_end record",
            ));
        };
        let Some(received_ms) = request.request_received_ms else {
            return Err(reader.error(
                &path(".request.request_received_ms"),
                "missing: expected when the request was received (unix milliseconds)",
            ));
        };
        let Some(Count(osl)) = request.output_tokens else {
            return Err(reader.error(
                &path(".request.output_tokens"),
                "missing: expected the request's output token count",
            ));
        };
        let (isl, ids) = match request.replay {
            Some(replay) => {
                let size = replay.trace_block_size.0;
                if size == 0 {
                    return Err(reader.error(
                        &path(".request.replay.trace_block_size"),
                        "0: expected a positive number of tokens per block",
                    ));
                }
                match block_size {
                    Some((first, first_line)) if first != size => {
                        return Err(reader.error(
                &path(".request.replay.trace_block_size"),
                            format!("{size}: expected the same block size on every record ({first} on line {first_line})"),
                        ))
                    }
                    Some(_) => {}
                    None => block_size = Some((size, line)),
                }
                let isl = replay.input_length.0;
                let blocks = isl.div_ceil(size) as usize;
                if replay.input_sequence_hashes.len() != blocks {
                    return Err(reader.error(
                &path(".request.replay.input_sequence_hashes"),
                        format!(
                            "{} hashes: expected {blocks} (input_length {isl} in blocks of {size}, rounded up)",
                            replay.input_sequence_hashes.len()
                        ),
                    ));
                }
                let mut builder = BlockIdsBuilder::default();
                for SequenceHash(hash) in replay.input_sequence_hashes {
                    let next = hash_ids.len();
                    let id = *hash_ids.entry(hash).or_insert_with(|| {
                        // More than 2^32 distinct blocks cannot be read
                        // into memory anyway (the input cap is far lower).
                        u32::try_from(next).unwrap_or(u32::MAX)
                    });
                    builder.push(id);
                }
                (isl, builder.finish())
            }
            None => {
                no_hashes += 1;
                let Some(Count(isl)) = request.input_tokens else {
                    return Err(reader.error(
                &path(".request"),
                        "no `replay.input_length` and no `input_tokens`: expected the prompt's token count in one of them",
                    ));
                };
                (isl, Default::default())
            }
        };
        let duration = match (request.total_time_ms, raw.event_time_unix_ms) {
            (Some(Millis(d)), _) => Some(d),
            (None, Some(end_ms)) => {
                end_from_event += 1;
                Some(end_ms.saturating_sub(received_ms).saturating_mul(1_000_000))
            }
            (None, None) => {
                unknown_durations += 1;
                None
            }
        };
        if duration.is_some_and(|d| d > MAX_NANOS) {
            return Err(reader.error(
                &path(".request"),
                format!("the request lasts past the largest time a trace may state ({} s): expected a shorter total_time_ms", show_number(MAX_SECONDS)),
            ));
        }
        let ttft = request.ttft_ms.map(|Millis(t)| t);
        earliest = Some(earliest.map_or(received_ms, |e: u64| e.min(received_ms)));
        let NonEmpty(session_name) = context.session_id;
        let parent = context.parent_session_id.map(|NonEmpty(p)| (p, line));
        let index = match session_index.get(&session_name) {
            Some(&s) => s,
            None => {
                session_index.insert(session_name.clone(), sessions.len());
                sessions.push(Session {
                    id: session_name,
                    first_line: line,
                    parent: None,
                    requests: Vec::new(),
                });
                sessions.len() - 1
            }
        };
        let Some(session) = sessions.get_mut(index) else {
            continue;
        };
        match (&session.parent, parent) {
            (Some((known, known_line)), Some((named, _))) if *known != named => {
                return Err(reader.error(
                &path(".agent_context.parent_session_id"),
                    format!("\"{named}\": expected the parent this session named on line {known_line} (\"{known}\")"),
                ))
            }
            (None, Some(named)) => session.parent = Some(named),
            _ => {}
        }
        session.requests.push(Request {
            line,
            received_ms,
            turn: Turn {
                start: 0,
                duration,
                isl,
                osl,
                ttft,
                model: None,
                input_kind: InputKind::Unknown,
                hash_ids: ids,
                text: None,
                tokens_estimated: false,
            },
        });
    }
    let Some(earliest) = earliest else {
        return Err(reader.empty(
            "Dynamo request-trace records (one JSON object per line with `schema` \"dynamo.request.trace.v1\" and `event_type` request_end)",
        ));
    };

    let parents = resolve_parents(&sessions, &session_index, &file)?;
    let mut loaded = Loaded::default();
    let mut early_children = 0usize;
    let block_size = block_size.map_or(0, |(size, _)| size);
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sessions.len()];
    for (s, parent) in parents.iter().enumerate() {
        if let Some(p) = parent {
            children[*p].push(s);
        }
    }
    // Children in order of their first request (ties: file order).
    let first_received: Vec<u64> = sessions
        .iter()
        .map(|s| s.requests.iter().map(|r| r.received_ms).min().unwrap_or(0))
        .collect();
    for list in &mut children {
        list.sort_by_key(|&c| first_received[c]);
    }
    let mut slots: Vec<Option<Session>> = sessions.into_iter().map(Some).collect();
    let mut subagents = 0usize;
    for (root, parent) in parents.iter().enumerate() {
        if parent.is_some() {
            continue;
        }
        // Breadth first from the root, so a parent always comes before its
        // children, as the model requires.
        let mut order: Vec<(usize, Option<u32>)> = vec![(root, None)];
        let mut next = 0;
        while let Some(&(s, _)) = order.get(next) {
            for &c in &children[s] {
                order.push((c, Some(next as u32)));
            }
            next += 1;
        }
        let mut agents = Vec::with_capacity(order.len());
        let mut first_line = 0;
        for (s, parent) in order {
            let Some(mut session) = slots.get_mut(s).and_then(Option::take) else {
                continue;
            };
            if parent.is_none() {
                first_line = session.first_line;
            }
            // Stable: requests received together keep file order.
            session.requests.sort_by_key(|r| r.received_ms);
            agents.push((session, parent));
        }
        let arrival_ms = agents
            .first()
            .and_then(|(s, _)| s.requests.first())
            .map_or(earliest, |r| r.received_ms);
        let mut built = Vec::with_capacity(agents.len());
        let mut first_starts: Vec<Nanos> = Vec::with_capacity(agents.len());
        for (session, parent) in agents {
            let mut turns = Vec::with_capacity(session.requests.len());
            for request in session.requests {
                let start = to_nanos(request.received_ms, arrival_ms).ok_or_else(|| {
                    InputError::at(
                        &file,
                        format!("line {}, $.request.request_received_ms", request.line),
                        format!(
                            "{} ms is more than {} s from its tree's first request ({arrival_ms} ms): expected a tree's requests within that span",
                            request.received_ms,
                            show_number(MAX_SECONDS)
                        ),
                    )
                })?;
                turns.push(Turn {
                    start,
                    ..request.turn
                });
            }
            let first = turns.first().map_or(0, |t| t.start);
            if let Some(p) = parent {
                subagents += 1;
                if first_starts.get(p as usize).is_some_and(|&ps| ps >= first) {
                    early_children += 1;
                }
            }
            first_starts.push(first);
            built.push(Agent {
                id: session.id,
                parent,
                kind: if parent.is_some() {
                    AgentKind::Blocking
                } else {
                    AgentKind::Root
                },
                recorded_end: None,
                turns,
            });
        }
        let arrival = to_nanos(arrival_ms, earliest).unwrap_or(MAX_NANOS);
        loaded.trees.push(Tree {
            id: built.first().map_or_else(String::new, |a| a.id.clone()),
            source: format!("{file}:line {first_line}"),
            arrival,
            agents: built,
            explicit_edges: None,
            models: vec![],
            block_size,
            hash_scope: HashScope::Global,
            tool_tokens: 0,
            system_tokens: 0,
            provenance: Default::default(),
            shapes: Vec::new(),
        });
    }
    // Stable: trees arriving together keep their order of appearance.
    loaded.trees.sort_by_key(|t| t.arrival);

    loaded.conventions.push(format!(
        "sessions: {} in {} trees ({subagents} subagent sessions, blocking); spawn and join inferred from the recorded times",
        slots.len(),
        loaded.trees.len()
    ));
    loaded.conventions.push(
        "times: request_received_ms (unix ms) from each tree's first request; duration total_time_ms; ttft ttft_ms".to_string(),
    );
    loaded.conventions.push(format!(
        "input_sequence_hashes: {} distinct u64 hashes renumbered in order of first appearance (file-wide; block size {block_size})",
        hash_ids.len()
    ));
    if wrapped > 0 {
        loaded.conventions.push(format!(
            "{wrapped} records read from the recorder's envelope (`event`)"
        ));
    }
    if tool_events > 0 {
        loaded.conventions.push(format!(
            "{tool_events} tool events skipped (tool time is in the gaps between requests)"
        ));
    }
    let mut problem = |message: String| {
        loaded.problems.push(Problem {
            place: file.clone(),
            message,
        })
    };
    if no_hashes > 0 {
        problem(format!("{no_hashes} requests have no `replay` block: no block hashes (no prefix sharing), isl from input_tokens"));
    }
    if end_from_event > 0 {
        problem(format!("{end_from_event} requests have no total_time_ms: duration = event_time_unix_ms - request_received_ms (millisecond resolution)"));
    }
    if unknown_durations > 0 {
        problem(format!("{unknown_durations} requests have neither total_time_ms nor event_time_unix_ms: duration unknown, gaps replay start to start"));
    }
    if early_children > 0 {
        problem(format!("{early_children} subagent sessions start no later than their parent's first request: no parent request precedes them to spawn them"));
    }
    Ok(loaded)
}

/// `ms - from` in nanoseconds, when within the engine's time range.
fn to_nanos(ms: u64, from: u64) -> Option<Nanos> {
    ms.checked_sub(from)?
        .checked_mul(1_000_000)
        .filter(|&n| n <= MAX_NANOS)
}

/// Each session's parent index; fails on a parent never seen as a session
/// or on a loop of parents.
fn resolve_parents(
    sessions: &[Session],
    index: &HashMap<String, usize>,
    file: &str,
) -> Result<Vec<Option<usize>>, InputError> {
    let mut parents = Vec::with_capacity(sessions.len());
    for session in sessions {
        let parent = match &session.parent {
            None => None,
            Some((name, line)) => match index.get(name) {
                Some(&p) => Some(p),
                None => {
                    return Err(InputError::at(
                        file,
                        format!("line {line}, $.agent_context.parent_session_id"),
                        format!("\"{name}\": expected the session_id of a session in this file"),
                    ))
                }
            },
        };
        parents.push(parent);
    }
    // A loop of parents: walk up from each session, at most n steps
    // (colours make the whole check linear).
    let mut state = vec![0u8; sessions.len()]; // 0 new, 1 on the path, 2 done
    for start in 0..sessions.len() {
        let mut path = Vec::new();
        let mut s = start;
        while state[s] == 0 {
            state[s] = 1;
            path.push(s);
            match parents[s] {
                Some(p) => s = p,
                None => break,
            }
        }
        if state[s] == 1 && parents[s].is_some() {
            let session = &sessions[s];
            let line = session
                .parent
                .as_ref()
                .map_or(session.first_line, |(_, l)| *l);
            return Err(InputError::at(
                file,
                format!("line {line}, $.agent_context.parent_session_id"),
                format!(
                    "session \"{}\" is its own ancestor: expected parent sessions to form trees",
                    session.id
                ),
            ));
        }
        for p in path {
            state[p] = 2;
        }
    }
    Ok(parents)
}

/// A generated trace of `trees` trees (for benches of load speed): each a
/// root session of four requests whose second spawns two subagent
/// sessions of three requests, joined at the root's third; prompts of
/// 2k to 8k tokens in 64-token blocks sharing the root's prefix.
pub fn generated(trees: usize) -> String {
    let mut text = String::with_capacity(trees * 12 * 1400);
    let mut line = |session: &str,
                    parent: Option<&str>,
                    id: &str,
                    at: u64,
                    blocks: u64,
                    base: u64| {
        let parent = parent.map_or(String::new(), |p| format!(",\"parent_session_id\":\"{p}\""));
        // Full-width u64s, as Dynamo's rolling hashes are; the first 16
        // blocks are the tree's shared prefix.
        let hashes: Vec<String> = (0..blocks)
            .map(|b| {
                let key = if b < 16 { base } else { base ^ 0x5bd1_e995 };
                key.wrapping_mul(1_000_003)
                    .wrapping_add(b)
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .to_string()
            })
            .collect();
        text.push_str(&format!(
            "{{\"schema\":\"{SCHEMA}\",\"event_type\":\"request_end\",\"event_time_unix_ms\":{},\"event_source\":\"dynamo\",\"agent_context\":{{\"session_id\":\"{session}\"{parent}}},\"request\":{{\"request_id\":\"{id}\",\"model\":\"m\",\"input_tokens\":{},\"output_tokens\":200,\"cached_tokens\":0,\"request_received_ms\":{at},\"ttft_ms\":120.5,\"total_time_ms\":2000.0,\"replay\":{{\"trace_block_size\":64,\"input_length\":{},\"input_sequence_hashes\":[{}]}}}}}}\n",
            at + 2000,
            blocks * 64,
            blocks * 64,
            hashes.join(",")
        ));
    };
    for t in 0..trees as u64 {
        let t0 = 1_760_000_000_000 + t * 1000;
        let root = format!("r{t}");
        for (k, at) in [0u64, 3000, 14000, 17000].into_iter().enumerate() {
            line(
                &root,
                None,
                &format!("{root}-{k}"),
                t0 + at,
                32 + 16 * k as u64,
                t,
            );
        }
        for c in 0..2 {
            let child = format!("r{t}-c{c}");
            for k in 0..3u64 {
                line(
                    &child,
                    Some(&root),
                    &format!("{child}-{k}"),
                    t0 + 5500 + k * 2500,
                    40 + 8 * k,
                    t + 7 + c,
                );
            }
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::super::test_support::testdata;
    use super::super::{load_path, Format};
    use super::*;
    use arbor_engine::derive::{derive_edges, DeriveOptions};
    use arbor_engine::model::{Anchor, Edge, EdgeKind};

    const MS: Nanos = 1_000_000;

    /// An agent as the tests compare it: id, parent, kind, turns.
    type AgentShape = (String, Option<u32>, AgentKind, usize);
    /// A turn as the tests compare it: start, duration, isl, osl, ttft.
    type TurnShape = (Nanos, Option<Nanos>, u32, u32, Option<Nanos>);

    fn sample() -> Loaded {
        load_path(&testdata("dynamo").join("sample.jsonl"), None).expect("the fixture loads")
    }

    #[test]
    fn the_fixture_is_detected_by_content() {
        assert_eq!(sample().format, Some(Format::Dynamo));
    }

    #[test]
    fn sessions_become_agents_and_parent_sessions_their_parents() {
        let loaded = sample();
        let shape: Vec<(String, Nanos, Vec<AgentShape>)> = loaded
            .trees
            .iter()
            .map(|t| {
                let agents = t
                    .agents
                    .iter()
                    .map(|a| (a.id.clone(), a.parent, a.kind, a.turns.len()))
                    .collect();
                (t.id.clone(), t.arrival, agents)
            })
            .collect();
        let agent = |id: &str, parent, kind, turns| (id.to_string(), parent, kind, turns);
        assert_eq!(
            shape,
            vec![
                (
                    "thread-1".to_string(),
                    0,
                    vec![
                        agent("thread-1", None, AgentKind::Root, 4),
                        agent("thread-1-explore", Some(0), AgentKind::Blocking, 2),
                        agent("thread-1-test", Some(0), AgentKind::Blocking, 1),
                    ]
                ),
                (
                    "thread-2".to_string(),
                    4000 * MS,
                    vec![agent("thread-2", None, AgentKind::Root, 2)]
                ),
            ]
        );
        assert!(loaded.trees.iter().all(|t| t.block_size == 16
            && t.hash_scope == HashScope::Global
            && t.explicit_edges.is_none()));
    }

    #[test]
    fn requests_keep_their_times_and_tokens() {
        let loaded = sample();
        let root = &loaded.trees[0].agents[0];
        let got: Vec<TurnShape> = root
            .turns
            .iter()
            .map(|t| (t.start, t.duration, t.isl, t.osl, t.ttft))
            .collect();
        let ttft = Some(85 * MS);
        assert_eq!(
            got,
            vec![
                (0, Some(1500 * MS), 40, 30, ttft),
                (2000 * MS, Some(1200 * MS), 70, 20, ttft),
                (7000 * MS, Some(1000 * MS), 100, 40, ttft),
                (9000 * MS, Some(500 * MS), 120, 10, ttft),
            ]
        );
        // Without total_time_ms the duration is event time - received.
        let second = &loaded.trees[1].agents[0].turns[1];
        assert_eq!((second.start, second.duration), (2000 * MS, Some(700 * MS)));
        assert!(loaded
            .problems
            .iter()
            .any(|p| p.message.starts_with("1 requests have no total_time_ms")));
    }

    #[test]
    fn equal_sequence_hashes_become_equal_block_ids() {
        let loaded = sample();
        let ids = |tree: usize, agent: usize, turn: usize| {
            loaded.trees[tree].agents[agent].turns[turn]
                .hash_ids
                .to_vec()
        };
        // The root's prompts grow: each extends the previous one.
        assert_eq!(ids(0, 0, 0), vec![0, 1, 2]);
        assert_eq!(ids(0, 0, 1), vec![0, 1, 2, 3, 4]);
        assert!(ids(0, 0, 3).starts_with(&ids(0, 0, 2)));
        // Subagents and the other tree share only the first block.
        assert_eq!(ids(0, 1, 0)[0], 0);
        assert_eq!(ids(1, 0, 0)[0], 0);
        assert!(ids(0, 1, 1).starts_with(&ids(0, 1, 0)));
        assert!(!ids(0, 1, 0)[1..].iter().any(|id| ids(0, 0, 3).contains(id)));
        let lengths: Vec<usize> = loaded.trees[0]
            .agents
            .iter()
            .flat_map(|a| a.turns.iter().map(|t| t.hash_ids.len()))
            .collect();
        assert_eq!(lengths, vec![3, 5, 7, 8, 3, 4, 2]);
    }

    #[test]
    fn subagents_are_spawned_by_the_preceding_parent_turn_and_joined_at_the_next() {
        let loaded = sample();
        let (edges, _) = derive_edges(&loaded.trees[0], &DeriveOptions::default());
        let mut crossing: Vec<Edge> = edges
            .into_iter()
            .filter(|e| e.kind != EdgeKind::Sequence)
            .collect();
        crossing.sort();
        // Flat turns: root 0..=3, explore 4..=5, test 6.
        let edge = |from, to, gap_ms: Nanos, kind| Edge {
            from,
            to,
            anchor: Anchor::End,
            gap: gap_ms * MS,
            kind,
        };
        let mut expected = vec![
            // req-2 ended at 3.2 s; the subagents start at 3.5 s and 3.6 s.
            edge(1, 4, 300, EdgeKind::Spawn),
            edge(1, 6, 400, EdgeKind::Spawn),
            // They end at 5.9 s and 6.1 s; the root's next request is at 7 s.
            edge(5, 2, 1100, EdgeKind::Join),
            edge(6, 2, 900, EdgeKind::Join),
        ];
        expected.sort();
        assert_eq!(crossing, expected);
    }

    #[test]
    fn records_in_the_recorders_envelope_load_the_same() {
        let plain = std::fs::read_to_string(testdata("dynamo").join("sample.jsonl")).expect("read");
        let wrapped: String = plain
            .lines()
            .enumerate()
            .map(|(i, l)| format!("{{\"timestamp\": {i}, \"event\": {l}}}\n"))
            .collect();
        let path = super::super::test_support::scratch_file("dynamo-envelope", wrapped.as_bytes());
        let loaded = load_path(&path, None);
        std::fs::remove_file(&path).ok();
        let loaded = loaded.expect("the wrapped fixture loads");
        assert_eq!(loaded.format, Some(Format::Dynamo));
        let trees = |l: &Loaded| -> Vec<(String, usize, usize)> {
            l.trees
                .iter()
                .map(|t| (t.id.clone(), t.agents.len(), t.turn_count()))
                .collect()
        };
        assert_eq!(trees(&loaded), trees(&sample()));
        assert_eq!(
            loaded.trees[0].agents[1].turns,
            sample().trees[0].agents[1].turns
        );
        // Errors inside the envelope name its path.
        let bad = wrapped.replacen("\"output_tokens\":30", "\"output_tokens\":\"x\"", 1);
        let path = super::super::test_support::scratch_file("dynamo-envelope", bad.as_bytes());
        let err = load_path(&path, None).expect_err("a string token count");
        std::fs::remove_file(&path).ok();
        assert!(
            err.to_string()
                .contains("line 1, $.event.request.output_tokens"),
            "{err}"
        );
    }

    /// Every leaf of every record of the fixture replaced, in turn, by a
    /// hostile value: each file loads or is refused, never a panic.
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
        let text = std::fs::read_to_string(testdata("dynamo").join("sample.jsonl")).expect("read");
        let records: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        let nasties = [
            serde_json::json!(null),
            serde_json::json!(-1),
            serde_json::json!(0),
            serde_json::json!(1e300),
            serde_json::json!(u64::MAX),
            serde_json::json!("thread-1"),
            serde_json::json!([]),
        ];
        let path = super::super::test_support::scratch_path("dynamo-nasty", ".jsonl");
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
                    std::fs::write(&path, body).expect("write");
                    let _ = load_path(&path, Some(Format::Dynamo));
                    loads += 1;
                }
            }
        }
        std::fs::remove_file(&path).ok();
        assert!(loads > 1000, "only {loads} variants");
    }

    #[test]
    fn tool_events_are_skipped_and_counted() {
        assert!(sample()
            .conventions
            .iter()
            .any(|c| c.starts_with("1 tool events skipped")));
    }

    #[test]
    fn a_generated_trace_loads_to_its_stated_shape() {
        let path = super::super::test_support::scratch_file("dynamo-gen", generated(50).as_bytes());
        let loaded = load_path(&path, None).expect("the generated trace loads");
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded.format, Some(Format::Dynamo));
        assert_eq!(loaded.trees.len(), 50);
        assert!(loaded
            .trees
            .iter()
            .all(|t| t.agents.len() == 3 && t.turn_count() == 10));
    }
}
