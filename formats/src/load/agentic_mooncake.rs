//! Agentic Mooncake rows (Dynamo's DynoSim agent traces, swo-bench's
//! `agentic_mooncake` output): Mooncake rows plus `request_id`, `session_id`
//! (one agent), `wait_for` (request ids that must complete first), `delay`
//! and `tool_wait_ms`. See `docs/formats/agentic-mooncake.md`.
//!
//! Owns turning those rows into trees with explicit edges:
//! - agents are sessions; trees are the groups of sessions linked by
//!   `wait_for`;
//! - each `wait_for` id is an `End` edge with gap `delay + tool_wait_ms`;
//! - recorded starts follow the format's rule with unknown (zero)
//!   durations: a row without `wait_for` starts at its `timestamp`, any
//!   other at the latest start among its `wait_for` rows plus its gap.
//!
//! Rows are parsed one by one into compact typed structs; the graph is
//! checked (unknown ids, duplicates, cycles) once the file is read.

use std::collections::{BinaryHeap, HashMap};

use arbor_engine::error::InputError;
use arbor_engine::model::{Agent, AgentKind, Edge, EdgeKind, InputKind, Tree, Turn};
use arbor_engine::time::{Nanos, MAX_SECONDS};

use super::fields::{Count, HashIds, Id, Millis, MAX_NANOS};
use super::json::Lines;
use super::mooncake::{is_mooncake_row, new_tree, PromptChecks};
use super::sniff::{first_row, has_key};
use super::source::Source;
use super::tally::Tally;
use crate::input::{Loaded, Problem};

/// Does this start of a file look like agentic Mooncake rows (Mooncake rows
/// with `request_id` or `wait_for`)?
pub fn looks_like(text_prefix: &str) -> bool {
    first_row(text_prefix).is_some_and(|row| {
        is_mooncake_row(row) && (has_key(row, "request_id") || has_key(row, "wait_for"))
    })
}

/// What an agentic Mooncake row is, in messages.
const ROW: &str = "an agentic Mooncake row (a JSON object with `request_id`, `session_id`, `input_length`, `output_length`)";

#[derive(serde::Deserialize)]
#[serde(
    expecting = "an agentic Mooncake row (a JSON object with `request_id`, `session_id`, `input_length`, `output_length`)"
)]
struct RawRow {
    request_id: Id,
    session_id: Id,
    timestamp: Option<Millis>,
    input_length: Option<Count>,
    output_length: Count,
    hash_ids: Option<HashIds>,
    wait_for: Option<Vec<Id>>,
    delay: Option<Millis>,
    tool_wait_ms: Option<Millis>,
    text_input: Option<String>,
}

/// One row as kept until the graph is complete.
struct Row {
    line: usize,
    request_id: String,
    session: u32,
    /// `timestamp`, required (and used) only without `wait_for`.
    timestamp: Option<Nanos>,
    /// Raw `wait_for` ids, resolved to row indices once every row is read.
    wait_for: Vec<String>,
    /// `delay + tool_wait_ms`.
    gap: Nanos,
}

/// Reads one agentic Mooncake JSONL file.
pub fn load(input: impl Into<Source>) -> Result<Loaded, InputError> {
    let mut reader = Lines::open(input.into(), ROW)?;
    let file = reader.file().to_string();
    let mut loaded = Loaded::default();
    let mut checks = PromptChecks::new();
    let mut rows: Vec<Row> = Vec::new();
    // The turn of each row (without its start), taken when its tree is built.
    let mut turns: Vec<Option<Turn>> = Vec::new();
    let mut session_rows: Vec<Vec<u32>> = Vec::new();
    let mut by_id: HashMap<String, u32> = HashMap::new();
    let mut session_names: Vec<String> = Vec::new();
    let mut session_index: HashMap<String, u32> = HashMap::new();
    let mut ignored_timestamps = 0usize;

    while let Some(raw) = reader.next::<RawRow>()? {
        let line = reader.line();
        let Id(request_id) = raw.request_id;
        if let Some(&first) = by_id.get(&request_id) {
            return Err(reader.error(
                "$.request_id",
                format!(
                    "duplicate request_id \"{request_id}\" (first on line {}): expected each request_id once",
                    rows[first as usize].line
                ),
            ));
        }
        let wait_for: Vec<String> = raw
            .wait_for
            .unwrap_or_default()
            .into_iter()
            .map(|Id(id)| id)
            .collect();
        let timestamp = raw.timestamp.map(|Millis(t)| t);
        if wait_for.is_empty() && timestamp.is_none() {
            return Err(reader.error(
                "",
                "missing field `timestamp`: expected it in a row without `wait_for` (its start in milliseconds)",
            ));
        }
        if !wait_for.is_empty() && timestamp.is_some() {
            ignored_timestamps += 1;
        }
        let delay = raw.delay.map_or(0, |Millis(d)| d);
        let tool_wait = raw.tool_wait_ms.map_or(0, |Millis(d)| d);
        let prompt = checks.prompt(
            &reader,
            &mut loaded.problems,
            raw.input_length,
            raw.hash_ids,
            raw.text_input,
        )?;
        let Id(session_name) = raw.session_id;
        let session = match session_index.get(&session_name) {
            Some(&s) => s,
            None => {
                let s = u32::try_from(session_names.len()).map_err(|_| {
                    reader.error("$.session_id", "too many sessions: expected at most 2^32")
                })?;
                session_index.insert(session_name.clone(), s);
                session_names.push(session_name);
                session_rows.push(Vec::new());
                s
            }
        };
        let index = u32::try_from(rows.len())
            .map_err(|_| reader.error("", "too many rows: expected at most 2^32"))?;
        by_id.insert(request_id.clone(), index);
        session_rows[session as usize].push(index);
        rows.push(Row {
            line,
            request_id,
            session,
            timestamp,
            wait_for,
            gap: delay + tool_wait,
        });
        turns.push(Some(Turn {
            start: 0,
            duration: None,
            isl: prompt.isl,
            osl: raw.output_length.0,
            ttft: None,
            model: None,
            input_kind: if tool_wait > 0 {
                InputKind::ToolResult
            } else {
                InputKind::Unknown
            },
            hash_ids: prompt.hash_ids,
            text: prompt.text,
            tokens_estimated: prompt.estimated,
        }));
    }
    if rows.is_empty() {
        return Err(reader.empty(
            "agentic Mooncake rows (one JSON object per line with `request_id`, `session_id`, `input_length`, `output_length`)",
        ));
    }

    let mut duplicates = Tally::default();
    let deps = resolve(&rows, &by_id, &file, &mut duplicates, &mut loaded.problems)?;
    drop(by_id);
    let (abs_start, rank) = schedule(&rows, &deps, &file)?;

    let mut stats = Stats::default();
    let graph = Graph {
        rows: &rows,
        deps: &deps,
        abs_start: &abs_start,
        rank: &rank,
        session_rows: &session_rows,
        session_names: &session_names,
        file: &file,
    };
    for group in components(&rows, &deps, session_names.len()) {
        let tree = graph.build_tree(&group, &mut turns, &mut stats, &mut loaded.problems);
        loaded.trees.push(tree);
    }

    checks.report(&mut loaded, &file);
    loaded.conventions.push(format!(
        "sessions: {} in {} trees; children: {} blocking ({} join edges), {} background",
        session_names.len(),
        loaded.trees.len(),
        stats.blocking,
        stats.joins,
        stats.background
    ));
    loaded.conventions.push(
        "delay and tool_wait_ms read as milliseconds; a row with wait_for starts at the latest start of its wait_for rows + delay + tool_wait_ms".to_string(),
    );
    if ignored_timestamps > 0 {
        loaded.conventions.push(format!(
            "timestamp ignored on {ignored_timestamps} rows with wait_for (the format schedules them from their dependencies)"
        ));
    }
    duplicates.report_unlisted(&mut loaded.problems, &file, "that list a wait_for id twice");
    Ok(loaded)
}

/// A generated agentic Mooncake file of one tree with `sessions`
/// subagent sessions (for tests and benches of loading at scale): a root
/// session `main` whose first row spawns every subagent, each subagent two
/// rows (a tool call between them), and the root's last row joining them
/// all (one `wait_for` list of `sessions` ids).
pub fn generated_tree(sessions: usize) -> String {
    let mut text = String::with_capacity(sessions * 200);
    text.push_str(
        r#"{"request_id": "m0", "session_id": "main", "timestamp": 0, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2]}"#,
    );
    text.push('\n');
    for s in 0..sessions {
        text.push_str(&format!(
            r#"{{"request_id": "s{s}a", "session_id": "sub{s}", "wait_for": ["m0"], "delay": {}, "input_length": 600, "output_length": 5, "hash_ids": [1, 3]}}"#,
            s % 100
        ));
        text.push('\n');
        text.push_str(&format!(
            r#"{{"request_id": "s{s}b", "session_id": "sub{s}", "wait_for": ["s{s}a"], "tool_wait_ms": 200, "input_length": 900, "output_length": 5, "hash_ids": [1, 3, 5]}}"#
        ));
        text.push('\n');
    }
    let joins: Vec<String> = (0..sessions).map(|s| format!("\"s{s}b\"")).collect();
    text.push_str(&format!(
        r#"{{"request_id": "m1", "session_id": "main", "wait_for": [{}], "delay": 10, "input_length": 2000, "output_length": 10, "hash_ids": [1, 2, 4]}}"#,
        joins.join(", ")
    ));
    text.push('\n');
    text
}

/// Resolves `wait_for` ids to row indices (duplicates in one list dropped).
fn resolve(
    rows: &[Row],
    by_id: &HashMap<String, u32>,
    file: &str,
    duplicates: &mut Tally,
    problems: &mut Vec<Problem>,
) -> Result<Vec<Vec<u32>>, InputError> {
    let mut deps = Vec::with_capacity(rows.len());
    // `listed_by[dep]` is 1 + the last row whose list named `dep`, so a
    // duplicate is found in constant time however long the list.
    let mut listed_by: Vec<u32> = vec![0; rows.len()];
    for (index, row) in (1u32..).zip(rows) {
        let mut resolved: Vec<u32> = Vec::with_capacity(row.wait_for.len());
        for (i, id) in row.wait_for.iter().enumerate() {
            let Some(&dep) = by_id.get(id) else {
                return Err(InputError::at(
                    file,
                    format!("line {}, $.wait_for[{i}]", row.line),
                    format!("no row has request_id \"{id}\": expected the request_id of a row in this file"),
                ));
            };
            if listed_by[dep as usize] == index {
                duplicates.note(
                    problems,
                    format!("{file}:line {}, $.wait_for[{i}]", row.line),
                    format!("\"{id}\" is listed twice: counted once"),
                );
                continue;
            }
            listed_by[dep as usize] = index;
            resolved.push(dep);
        }
        deps.push(resolved);
    }
    Ok(deps)
}

/// Absolute starts (ns since the trace start) in topological order, and
/// each row's rank in that order (the smallest file index first among rows
/// that are ready, so a file already in dependency order keeps its order).
fn schedule(
    rows: &[Row],
    deps: &[Vec<u32>],
    file: &str,
) -> Result<(Vec<Nanos>, Vec<u32>), InputError> {
    let n = rows.len();
    let mut pending: Vec<u32> = deps.iter().map(|d| d.len() as u32).collect();
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (r, d) in deps.iter().enumerate() {
        for &dep in d {
            dependents[dep as usize].push(r as u32);
        }
    }
    let mut ready: BinaryHeap<std::cmp::Reverse<u32>> = (0..n as u32)
        .filter(|&r| pending[r as usize] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut start = vec![0; n];
    let mut rank = vec![u32::MAX; n];
    let mut next_rank = 0u32;
    while let Some(std::cmp::Reverse(r)) = ready.pop() {
        let row = &rows[r as usize];
        let d = &deps[r as usize];
        start[r as usize] = if d.is_empty() {
            row.timestamp.unwrap_or(0)
        } else {
            let latest = d.iter().map(|&p| start[p as usize]).max().unwrap_or(0);
            let s = latest.saturating_add(row.gap);
            if s > MAX_NANOS {
                return Err(InputError::at(
                    file,
                    format!("line {}", row.line),
                    format!(
                        "the start computed from wait_for, delay and tool_wait_ms is past the largest time a trace may state ({MAX_SECONDS:e} s): expected smaller delays"
                    ),
                ));
            }
            s
        };
        rank[r as usize] = next_rank;
        next_rank += 1;
        for &next in &dependents[r as usize] {
            pending[next as usize] -= 1;
            if pending[next as usize] == 0 {
                ready.push(std::cmp::Reverse(next));
            }
        }
    }
    if (next_rank as usize) < n {
        return Err(cycle_error(rows, deps, &rank, file));
    }
    Ok((start, rank))
}

/// Names a cycle among the rows never scheduled (`rank == u32::MAX`).
fn cycle_error(rows: &[Row], deps: &[Vec<u32>], rank: &[u32], file: &str) -> InputError {
    let unscheduled = |r: u32| rank[r as usize] == u32::MAX;
    // Every unscheduled row waits for some unscheduled row, so walking
    // those waits from any of them must come back to a row already seen.
    let mut path: Vec<u32> = Vec::new();
    let mut seen: HashMap<u32, usize> = HashMap::new();
    let mut current = (0..rows.len() as u32)
        .find(|&r| unscheduled(r))
        .unwrap_or(0);
    let cycle = loop {
        if let Some(&at) = seen.get(&current) {
            break path.split_off(at);
        }
        seen.insert(current, path.len());
        path.push(current);
        match deps[current as usize]
            .iter()
            .copied()
            .find(|&d| unscheduled(d))
        {
            Some(next) => current = next,
            None => break vec![current],
        }
    };
    // Report the cycle from its earliest row in the file.
    let first = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
    let ordered: Vec<u32> = cycle[first..]
        .iter()
        .chain(&cycle[..first])
        .copied()
        .collect();
    let head = ordered[0];
    let waits_on = ordered.get(1).copied().unwrap_or(head);
    let row = &rows[head as usize];
    let index = row
        .wait_for
        .iter()
        .position(|id| *id == rows[waits_on as usize].request_id)
        .unwrap_or(0);
    let names: Vec<String> = ordered
        .iter()
        .chain(std::iter::once(&head))
        .map(|&r| format!("\"{}\"", rows[r as usize].request_id))
        .collect();
    InputError::at(
        file,
        format!("line {}, $.wait_for[{index}]", row.line),
        format!(
            "wait_for forms a cycle ({}, each waiting for the next): expected every row to wait only for rows that can complete before it",
            names.join(" -> ")
        ),
    )
}

/// Groups the rows into trees: sessions linked by a `wait_for` across
/// sessions share a tree. Trees come in the order of their first row in
/// the file; each group lists its sessions in order of first row.
fn components(rows: &[Row], deps: &[Vec<u32>], sessions: usize) -> Vec<Vec<u32>> {
    let mut parent: Vec<u32> = (0..sessions as u32).collect();
    fn find(parent: &mut [u32], mut s: u32) -> u32 {
        while parent[s as usize] != s {
            let up = parent[parent[s as usize] as usize];
            parent[s as usize] = up;
            s = up;
        }
        s
    }
    for (r, d) in deps.iter().enumerate() {
        for &dep in d {
            let a = find(&mut parent, rows[r].session);
            let b = find(&mut parent, rows[dep as usize].session);
            if a != b {
                let (lo, hi) = if a < b { (a, b) } else { (b, a) };
                parent[hi as usize] = lo;
            }
        }
    }
    // Sessions are numbered by first row, so session order is file order.
    let mut group_of: Vec<Option<usize>> = vec![None; sessions];
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for s in 0..sessions as u32 {
        let root = find(&mut parent, s) as usize;
        let g = match group_of[root] {
            Some(g) => g,
            None => {
                groups.push(Vec::new());
                group_of[root] = Some(groups.len() - 1);
                groups.len() - 1
            }
        };
        groups[g].push(s);
    }
    groups
}

#[derive(Default)]
struct Stats {
    blocking: usize,
    background: usize,
    joins: usize,
}

/// The whole file's rows once checked and scheduled.
struct Graph<'a> {
    rows: &'a [Row],
    /// Resolved `wait_for` of each row.
    deps: &'a [Vec<u32>],
    /// Start of each row, ns since the trace start.
    abs_start: &'a [Nanos],
    /// Topological rank of each row (ties of start are broken by it).
    rank: &'a [u32],
    /// Rows of each session, in file order.
    session_rows: &'a [Vec<u32>],
    session_names: &'a [String],
    file: &'a str,
}

impl Graph<'_> {
    /// Lays out one tree (the given sessions): agents (parents first), turns
    /// in start order, explicit edges.
    fn build_tree(
        &self,
        sessions: &[u32],
        turns: &mut [Option<Turn>],
        stats: &mut Stats,
        problems: &mut Vec<Problem>,
    ) -> Tree {
        let Graph {
            rows,
            deps,
            abs_start,
            rank,
            session_rows,
            session_names,
            file,
        } = *self;
        // Rows of each session of the tree, in turn order.
        let local: HashMap<u32, usize> =
            sessions.iter().enumerate().map(|(i, &s)| (s, i)).collect();
        let mut members: Vec<Vec<u32>> = sessions
            .iter()
            .map(|&s| session_rows[s as usize].clone())
            .collect();
        let key = |r: u32| (abs_start[r as usize], rank[r as usize]);
        for m in &mut members {
            m.sort_by_key(|&r| key(r));
        }
        let session_of = |r: u32| local[&rows[r as usize].session];

        // The root: the session of the earliest row without wait_for.
        let root_row = members
            .iter()
            .flatten()
            .copied()
            .filter(|&r| deps[r as usize].is_empty())
            .min_by_key(|&r| (abs_start[r as usize], r))
            .unwrap_or(members[0][0]);
        let arrival = abs_start[root_row as usize];
        let root = session_of(root_row);

        // Parents: the session of the first wait_for of a session's first
        // row (its spawner), placed breadth first from the root; when no
        // unplaced session is spawned by a placed one, the first unplaced
        // session linked to a placed one by any wait_for is attached.
        let n = sessions.len();
        let spawner: Vec<Option<usize>> = members
            .iter()
            .enumerate()
            .map(|(s, m)| {
                let p = deps[m[0] as usize].first().map(|&d| session_of(d))?;
                (p != s).then_some(p)
            })
            .collect();
        let spawned = children_of(&spawner);
        let mut parent: Vec<Option<usize>> = vec![None; n];
        let mut placed = vec![false; n];
        let mut remaining = n - 1;
        let mut in_file_order: Vec<u32> = Vec::new();
        let mut reach = vec![root];
        placed[root] = true;
        loop {
            while let Some(p) = reach.pop() {
                for &c in &spawned[p] {
                    if !placed[c] {
                        parent[c] = Some(p);
                        placed[c] = true;
                        remaining -= 1;
                        reach.push(c);
                    }
                }
            }
            if remaining == 0 {
                break;
            }
            // No unplaced session is spawned by a placed one: attach the first
            // unplaced session linked to a placed one by any wait_for.
            if in_file_order.is_empty() {
                in_file_order = members.iter().flatten().copied().collect();
                in_file_order.sort_unstable();
            }
            let link = in_file_order
                .iter()
                .flat_map(|&r| deps[r as usize].iter().map(move |&d| (r, d)))
                .find_map(|(r, d)| {
                    let (a, b) = (session_of(r), session_of(d));
                    match (placed[a], placed[b]) {
                        (false, true) => Some((a, b, r)),
                        (true, false) => Some((b, a, r)),
                        _ => None,
                    }
                });
            let Some((child, to, r)) = link else {
                break;
            };
            parent[child] = Some(to);
            placed[child] = true;
            remaining -= 1;
            reach.push(child);
            problems.push(Problem {
                place: format!("{file}:line {}", rows[members[child][0] as usize].line),
                message: format!(
                    "session \"{}\" is not spawned by a wait_for of its first row: attached to session \"{}\" (linked on line {})",
                    session_names[sessions[child] as usize],
                    session_names[sessions[to] as usize],
                    rows[r as usize].line
                ),
            });
        }

        // Joins: a row of the parent waits for a row of the child.
        let mut joined = vec![false; n];
        for m in &members {
            for &r in m {
                let s = session_of(r);
                for &d in &deps[r as usize] {
                    let c = session_of(d);
                    if parent[c] == Some(s) {
                        joined[c] = true;
                    }
                }
            }
        }

        // Agent order: breadth first from the root, children by first turn.
        let children = children_of(&parent);
        let mut order = vec![root];
        let mut i = 0;
        while i < order.len() {
            let mut next = children[order[i]].clone();
            next.sort_by_key(|&c| key(members[c][0]));
            order.extend(next);
            i += 1;
        }
        let mut agent_of = vec![0u32; n];
        for (a, &s) in order.iter().enumerate() {
            agent_of[s] = a as u32;
        }
        let mut offsets = Vec::with_capacity(order.len());
        let mut next = 0u32;
        for &s in &order {
            offsets.push(next);
            next += members[s].len() as u32;
        }
        let mut flat: HashMap<u32, u32> = HashMap::new();
        for (a, &s) in order.iter().enumerate() {
            for (t, &r) in members[s].iter().enumerate() {
                flat.insert(r, offsets[a] + t as u32);
            }
        }
        // Is session `a` a proper ancestor of session `b`? By the span of
        // each session's subtree in a depth-first numbering (`enter` to
        // `leave`), so the question costs the same at any depth.
        let (enter, leave) = spans(&children, root);
        let is_ancestor = |a: usize, b: usize| {
            a != b && enter[a] != u32::MAX && enter[a] <= enter[b] && leave[b] <= leave[a]
        };

        let mut agents = Vec::with_capacity(order.len());
        let mut edges = Vec::new();
        for &s in &order {
            let kind = match parent[s] {
                None => AgentKind::Root,
                Some(_) if joined[s] => {
                    stats.blocking += 1;
                    AgentKind::Blocking
                }
                Some(_) => {
                    stats.background += 1;
                    AgentKind::Background
                }
            };
            for &r in &members[s] {
                for &d in &deps[r as usize] {
                    let from_session = session_of(d);
                    let kind = if from_session == s {
                        EdgeKind::Sequence
                    } else if is_ancestor(s, from_session) {
                        stats.joins += 1;
                        EdgeKind::Join
                    } else {
                        EdgeKind::Spawn
                    };
                    edges.push(Edge {
                        from: flat[&d],
                        to: flat[&r],
                        anchor: arbor_engine::model::Anchor::End,
                        gap: rows[r as usize].gap,
                        kind,
                    });
                }
            }
            agents.push(Agent {
                id: session_names[sessions[s] as usize].clone(),
                parent: parent[s].map(|p| agent_of[p]),
                kind,
                recorded_end: None,
                turns: members[s]
                    .iter()
                    .map(|&r| {
                        let mut turn = turns[r as usize].take().unwrap_or_default();
                        turn.start = abs_start[r as usize] - arrival;
                        turn
                    })
                    .collect(),
            });
        }
        let mut tree = new_tree(
            session_names[sessions[root] as usize].clone(),
            format!("{file}:line {}", rows[root_row as usize].line),
            arrival,
            agents,
        );
        tree.explicit_edges = Some(edges);
        tree
    }
}

/// The children of each session, in session order, from each session's
/// parent.
fn children_of(parent: &[Option<usize>]) -> Vec<Vec<usize>> {
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); parent.len()];
    for (c, p) in parent.iter().enumerate() {
        if let Some(p) = *p {
            children[p].push(c);
        }
    }
    children
}

/// Each session's depth-first span in the tree of `children`, rooted at
/// `root`: `enter[s]` numbers `s` and `leave[s]` is the largest number
/// within its subtree (sessions never placed keep an empty span).
fn spans(children: &[Vec<usize>], root: usize) -> (Vec<u32>, Vec<u32>) {
    let n = children.len();
    let mut enter = vec![u32::MAX; n];
    let mut leave = vec![0u32; n];
    let mut next = 0u32;
    // (session, its children visited so far)
    let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
    enter[root] = next;
    while let Some(top) = stack.last_mut() {
        let (s, visited) = *top;
        if let Some(&c) = children[s].get(visited) {
            top.1 += 1;
            next += 1;
            enter[c] = next;
            stack.push((c, 0));
        } else {
            leave[s] = next;
            stack.pop();
        }
    }
    (enter, leave)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::mooncake::tests::{recorded_starts, replay, temp_file, OTHER_FORMATS};
    use arbor_engine::model::Anchor;
    use arbor_engine::time::NANOS_PER_MS;

    /// A root session `main` (m1, m2, m3); a blocking child `sub` spawned
    /// from m1 and joined by m3; a background child `bg` spawned from m2;
    /// and an unrelated session `solo` (its own tree).
    const SAMPLE: &str = r#"{"request_id": "m1", "session_id": "main", "timestamp": 1000, "input_length": 1000, "output_length": 10, "hash_ids": [1, 2], "prefix_reset": true, "branches": ["s1"]}
{"request_id": "s1", "session_id": "sub", "wait_for": ["m1"], "delay": 50, "input_length": 600, "output_length": 5, "hash_ids": [1, 3], "prefix_reset": true}
{"request_id": "m2", "session_id": "main", "wait_for": ["m1"], "delay": 200, "tool_wait_ms": 300, "input_length": 1500, "output_length": 10, "hash_ids": [1, 2, 4], "tool_events": [{"tool_call_id": "c1", "tool_class": "bash", "status": "ok", "started_at_unix_ms": 1, "ended_at_unix_ms": 301, "duration_ms": 300}]}
{"request_id": 42, "session_id": "solo", "timestamp": 2000, "input_length": 10, "output_length": 1, "hash_ids": [9]}
{"request_id": "s2", "session_id": "sub", "wait_for": ["s1"], "tool_wait_ms": 1000, "input_length": 1100, "output_length": 5, "hash_ids": [1, 3, 5]}
{"request_id": "b1", "session_id": "bg", "wait_for": ["m2"], "delay": 10, "input_length": 100, "output_length": 5, "hash_ids": [6]}
{"request_id": "m3", "session_id": "main", "wait_for": ["m2", "s2"], "delay": 100, "timestamp": 99999, "input_length": 2000, "output_length": 10, "hash_ids": [1, 2, 4, 7]}
"#;

    fn ms(v: u64) -> Nanos {
        v * NANOS_PER_MS
    }

    fn edge(from: u32, to: u32, gap_ms: u64, kind: EdgeKind) -> Edge {
        Edge {
            from,
            to,
            anchor: Anchor::End,
            gap: ms(gap_ms),
            kind,
        }
    }

    #[test]
    fn sessions_become_agents_with_explicit_edges() {
        let path = temp_file("agentic-sample", SAMPLE);
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded.trees.len(), 2);
        let tree = &loaded.trees[0];
        assert_eq!(tree.id, "main");
        assert_eq!(tree.arrival, ms(1000));
        assert_eq!(
            (tree.block_size, tree.hash_scope),
            (512, arbor_engine::model::HashScope::Global)
        );
        let agents: Vec<(&str, Option<u32>, AgentKind, usize)> = tree
            .agents
            .iter()
            .map(|a| (a.id.as_str(), a.parent, a.kind, a.turns.len()))
            .collect();
        assert_eq!(
            agents,
            [
                ("main", None, AgentKind::Root, 3),
                ("sub", Some(0), AgentKind::Blocking, 2),
                ("bg", Some(0), AgentKind::Background, 1),
            ]
        );
        // Flat ids: m1 0, m2 1, m3 2, s1 3, s2 4, b1 5.
        assert_eq!(
            recorded_starts(tree),
            [0, ms(500), ms(1150), ms(50), ms(1050), ms(510)]
        );
        assert_eq!(
            tree.explicit_edges.as_deref().unwrap(),
            [
                edge(0, 1, 500, EdgeKind::Sequence),
                edge(1, 2, 100, EdgeKind::Sequence),
                edge(4, 2, 100, EdgeKind::Join),
                edge(0, 3, 50, EdgeKind::Spawn),
                edge(3, 4, 1000, EdgeKind::Sequence),
                edge(1, 5, 10, EdgeKind::Spawn),
            ]
        );
        let kinds: Vec<InputKind> = tree
            .agents
            .iter()
            .flat_map(|a| a.turns.iter().map(|t| t.input_kind))
            .collect();
        use InputKind::{ToolResult, Unknown};
        assert_eq!(
            kinds,
            [Unknown, ToolResult, Unknown, Unknown, ToolResult, Unknown]
        );
        let isl: Vec<u32> = tree
            .agents
            .iter()
            .flat_map(|a| a.turns.iter().map(|t| t.isl))
            .collect();
        assert_eq!(isl, [1000, 1500, 2000, 600, 1100, 100]);
        assert!(tree
            .agents
            .iter()
            .flat_map(|a| &a.turns)
            .all(|t| t.duration.is_none()));
        assert_eq!(tree.agents[0].turns[2].hash_ids.to_vec(), vec![1, 2, 4, 7]);

        let solo = &loaded.trees[1];
        assert_eq!((solo.id.as_str(), solo.arrival), ("solo", ms(2000)));
        assert_eq!(solo.agents.len(), 1);
        assert_eq!(solo.explicit_edges.as_deref(), Some(&[][..]));
        assert!(solo.source.ends_with(":line 4"), "{}", solo.source);

        assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
        assert!(
            loaded.conventions.iter().any(|c| c
                == "sessions: 4 in 2 trees; children: 1 blocking (1 join edges), 1 background"),
            "{:?}",
            loaded.conventions
        );
        assert!(loaded
            .conventions
            .iter()
            .any(|c| c.contains("timestamp ignored on 1 rows")));
    }

    #[test]
    fn replay_sends_every_turn_at_its_recorded_start() {
        let path = temp_file("agentic-identity", SAMPLE);
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let expected: Vec<Vec<Nanos>> = loaded.trees.iter().map(recorded_starts).collect();
        assert_eq!(replay(loaded.trees), expected);
    }

    #[test]
    fn rows_out_of_file_order_keep_dependencies_first() {
        // The child's row comes first in the file; a second root row of the
        // same session arrives later than the first by timestamp; a zero gap
        // ties a dependent with the row it waits for.
        let text = r#"{"request_id": "c1", "session_id": "child", "wait_for": ["p1"], "input_length": 5, "output_length": 1}
{"request_id": "p2", "session_id": "parent", "wait_for": ["p1"], "input_length": 5, "output_length": 1}
{"request_id": "p1", "session_id": "parent", "timestamp": 300, "input_length": 5, "output_length": 1}
{"request_id": "p0", "session_id": "parent", "timestamp": 100, "input_length": 5, "output_length": 1}
"#;
        let path = temp_file("agentic-order", text);
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded.trees.len(), 1);
        let tree = &loaded.trees[0];
        assert_eq!(tree.arrival, ms(100));
        let ids: Vec<&str> = tree.agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["parent", "child"]);
        // parent: p0 (0), p1 (200), p2 (200, after p1); child: c1 (200).
        assert_eq!(recorded_starts(tree), [0, ms(200), ms(200), ms(200)]);
        assert_eq!(
            tree.explicit_edges.as_deref().unwrap(),
            [
                edge(1, 2, 0, EdgeKind::Sequence),
                edge(1, 3, 0, EdgeKind::Spawn)
            ]
        );
        assert_eq!(tree.agents[1].kind, AgentKind::Background);
        let expected: Vec<Vec<Nanos>> = loaded.trees.iter().map(recorded_starts).collect();
        assert_eq!(replay(loaded.trees), expected);
    }

    #[test]
    fn a_session_not_spawned_by_its_first_row_is_attached_and_reported() {
        // `side` starts on its own timestamp; the root later waits for it.
        let text = r#"{"request_id": "a", "session_id": "main", "timestamp": 0, "input_length": 5, "output_length": 1}
{"request_id": "x", "session_id": "side", "timestamp": 10, "input_length": 5, "output_length": 1}
{"request_id": "b", "session_id": "main", "wait_for": ["a", "x"], "delay": 5, "input_length": 5, "output_length": 1}
"#;
        let path = temp_file("agentic-attach", text);
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        let tree = &loaded.trees[0];
        assert_eq!(tree.agents[1].id, "side");
        assert_eq!(tree.agents[1].kind, AgentKind::Blocking);
        assert_eq!(recorded_starts(tree), [0, ms(15), ms(10)]);
        assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
        assert!(loaded.problems[0]
            .message
            .contains("attached to session \"main\""));
        let expected: Vec<Vec<Nanos>> = loaded.trees.iter().map(recorded_starts).collect();
        assert_eq!(replay(loaded.trees), expected);
    }

    #[test]
    fn looks_like_accepts_agentic_rows_only() {
        assert!(looks_like(SAMPLE));
        assert!(looks_like(&format!("\u{feff}\n\n{}", &SAMPLE[..90])));
        assert!(!crate::load::mooncake::looks_like(SAMPLE));
        let conversation = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../testdata/mooncake-fast25/conversation_trace.head400.jsonl"
        ))
        .unwrap();
        assert!(!looks_like(&conversation));
        for other in OTHER_FORMATS {
            assert!(!looks_like(other), "{other}");
        }
        let path = temp_file("agentic-detect", SAMPLE);
        let detected = crate::load::detect(&path);
        std::fs::remove_file(&path).ok();
        assert_eq!(detected.unwrap(), crate::load::Format::AgenticMooncake);
    }

    /// Loading is linear in sessions per tree (it was quadratic: 200k
    /// sessions did not finish in 30 s): 200k subagents spawned by one row
    /// and joined by one `wait_for` list of 200k ids.
    #[test]
    fn a_tree_of_200k_sessions_loads() {
        let sessions = 200_000;
        let path = temp_file("agentic-200k", &generated_tree(sessions));
        let loaded = load(&path).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(loaded.trees.len(), 1);
        let tree = &loaded.trees[0];
        assert_eq!(tree.agents.len(), sessions + 1);
        assert_eq!(tree.agents[0].turns.len(), 2);
        assert!(tree.agents[1..]
            .iter()
            .all(|a| a.parent == Some(0) && a.kind == AgentKind::Blocking));
        let edges = tree.explicit_edges.as_deref().unwrap();
        // Per subagent a spawn, a sequence and a join.
        assert_eq!(edges.len(), 3 * sessions);
    }
}
