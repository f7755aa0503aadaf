//! Writes agentic Mooncake rows: Mooncake rows with `request_id`,
//! `session_id` and explicit dependencies (`wait_for`, `delay`,
//! `tool_wait_ms`), as Dynamo's agentic converter writes them.
//!
//! Owns the inverse of the agentic Mooncake reader for what the format can
//! hold: every agent is a session (the root named after the tree), every
//! edge of the tree (stated, else derived from the times) a `wait_for`
//! entry, a subagent's first row waiting for its parent's row first (the
//! reader takes its parent from there; one that waits for none is given a
//! wait on the parent's latest turn started by then), and every turn waits
//! for its agent's previous one (so the reader keeps their order). A row has one gap for everything
//! it waits for: the gap of the edge that decided the turn's recorded
//! start; it is `tool_wait_ms` before a tool result, else `delay`. Rows
//! that wait for nothing carry their absolute `timestamp`. The reader
//! knows no durations, so it rebuilds a waiting row's start as the latest
//! start of what it waits for plus the gap; the account counts the turns
//! that move.

use std::io::{self, Write};

use arbor_engine::model::{AgentKind, Anchor, Edge, EdgeKind, InputKind, Tree};
use arbor_engine::time::Nanos;

use super::account::{
    agents_where, note_agents, note_provenance, note_turns, turns_where, Account, Item, Side,
};
use super::edges::{edges_of, places, rebuilt_starts};
use super::names::{FileIds, Names};
use super::{decimal, write_str, TreeWriter};

/// The block size agentic Mooncake readers take (Mooncake's).
const BLOCK_SIZE: u32 = 512;

/// What agentic Mooncake keeps.
pub const KEPT: &[&str] = &[
    "agents as sessions, parents (from the first row a subagent waits for)",
    "edges as wait_for with their gaps (End-anchored)",
    "isl, osl, hash ids; tool-result inputs (tool_wait_ms)",
];

const SESSION_IDS: Item = Item {
    key: "session_ids",
    what: "sessions named after the tree (its root) and the agent ids, with #N where a name was taken; requests named SESSION:TURN",
};
const HASH_IDS: Item = Item {
    key: "hash_ids",
    what: "hash ids renumbered in order of first appearance in the file, per-tree ids kept apart across trees (the format's ids are global)",
};
const STARTS: Item = Item {
    key: "starts",
    what: "starts of rows that wait are rebuilt by the reader as the latest start of what they wait for plus the gap (durations unknown): these turns move",
};
const ARRIVAL: Item = Item {
    key: "arrival",
    what: "a tree arrives at its root's first row: trees whose root starts after the tree's arrival shift",
};
const ANCHORS: Item = Item {
    key: "anchors",
    what: "wait_for counts from completion: edges from a turn's send (overlap within an agent) written as from its completion",
};
const EDGE_KINDS: Item = Item {
    key: "edge_kinds",
    what: "the reader names an edge's kind (within a session, into an ancestor, else a spawn): these edges change kind",
};
const GAPS: Item = Item {
    key: "gaps",
    what: "one gap per row: turns waiting on edges of different gaps take the gap of the edge that decided their start",
};
const DROPPED_EDGES: Item = Item {
    key: "edges",
    what: "edges not written: into the root's first turn (the reader's root is the session of the earliest row that waits for nothing), or closing a loop with a subagent's wait on its parent",
};
const EDGES_ADDED: Item = Item {
    key: "edges_added",
    what: "rows given a wait the source does not state: on the agent's previous turn (so the reader keeps an agent's turns in order), or a subagent's first on its parent's latest turn started by then (so the reader finds its parent)",
};
const KINDS: Item = Item {
    key: "kinds",
    what: "a subagent is read back blocking when a parent row waits for it, else background: these agents change kind",
};
const DURATIONS: Item = Item {
    key: "durations",
    what: "no durations: read back unknown",
};
const TTFT: Item = Item {
    key: "ttft",
    what: "no time to first token",
};
const MODELS: Item = Item {
    key: "models",
    what: "no model names",
};
const INPUT_KIND: Item = Item {
    key: "input_kind",
    what: "only a tool result before a nonzero gap is kept (as tool_wait_ms): other input kinds read back unknown",
};
const TEXT: Item = Item {
    key: "text",
    what: "recorded text dropped (hash ids and lengths only)",
};
const BLOCK: Item = Item {
    key: "block_size",
    what: "hash ids written as they are, but the reader takes 512 tokens a block",
};
const TOKENS: Item = Item {
    key: "tool_system_tokens",
    what: "no tool and system token counts",
};
const AGENT_END: Item = Item {
    key: "agent_end",
    what: "no agent ends (a subagent's recorded end)",
};

/// The agentic Mooncake writer: session names and the file-wide hash ids.
#[derive(Default)]
pub struct Writer {
    names: Names,
    ids: FileIds,
}

/// One row as decided before it is written.
struct Row {
    flat: usize,
    waits: Vec<u32>,
    gap: Nanos,
}

impl TreeWriter for Writer {
    fn write_tree(
        &mut self,
        tree: &Tree,
        out: &mut dyn Write,
        account: &mut Account,
    ) -> io::Result<()> {
        self.ids.next_tree();
        let mut sessions = Vec::with_capacity(tree.agents.len());
        let mut renamed = 0;
        for (a, agent) in tree.agents.iter().enumerate() {
            let wanted = if a == 0 { &tree.id } else { &agent.id };
            let session = self.names.claim(wanted);
            if session != agent.id {
                renamed += 1;
            }
            sessions.push(session);
        }
        note_agents(account, Side::Inferred, SESSION_IDS, renamed);

        let places = places(tree);
        let turn = |flat: usize| {
            let (a, k) = places[flat];
            &tree.agents[a as usize].turns[k as usize]
        };
        let edges = edges_of(tree);
        let mut incoming: Vec<Vec<&Edge>> = vec![Vec::new(); places.len()];
        for e in &edges {
            if let Some(list) = incoming.get_mut(e.to as usize) {
                list.push(e);
            }
        }
        let offsets = tree.turn_offsets();
        // The reader's root is the session of the earliest row that waits
        // for nothing: the root's first turn waits for nothing.
        let mut dropped = 0;
        if let Some(first) = incoming.first_mut().filter(|_| !places.is_empty()) {
            dropped += first.len();
            first.clear();
        }
        let mut added = 0;
        let mut rows: Vec<Row> = Vec::with_capacity(places.len());
        for (flat, list) in incoming.iter_mut().enumerate() {
            let bound = |e: &Edge| {
                let from = turn(e.from as usize);
                let at = match e.anchor {
                    Anchor::End => from.end(),
                    Anchor::Start => from.start,
                };
                at.saturating_add(e.gap)
            };
            let binding = list
                .iter()
                .max_by_key(|e| (bound(e), std::cmp::Reverse(e.from)));
            let mut gap = binding.map_or(0, |e| e.gap);
            let mut waits: Vec<u32> = Vec::with_capacity(list.len() + 1);
            for e in list.iter() {
                if !waits.contains(&e.from) {
                    waits.push(e.from);
                }
            }
            // Each turn after its agent's previous one, so the reader keeps
            // the agent's turns in order.
            if places[flat].1 > 0 && !waits.contains(&(flat as u32 - 1)) {
                if waits.is_empty() {
                    gap = turn(flat).start.saturating_sub(turn(flat - 1).start);
                }
                waits.push(flat as u32 - 1);
                added += 1;
            }
            rows.push(Row { flat, waits, gap });
        }
        // A subagent's first row waits for its parent first (the reader's
        // parent is the session of the first row waited for): one that
        // waits for no parent turn waits for the parent's latest turn
        // started by then, the gap counted from that turn's start as the
        // reader counts it; waits that would close a loop through it go.
        for (a, agent) in tree.agents.iter().enumerate() {
            let (Some(p), false) = (agent.parent, agent.turns.is_empty()) else {
                continue;
            };
            let own = &tree.agents[p as usize].turns;
            let first = offsets[a] as usize;
            let base = offsets[p as usize];
            let row = &mut rows[first];
            row.waits.sort_by_key(|&w| places[w as usize].0 != p);
            if own.is_empty()
                || row
                    .waits
                    .first()
                    .is_some_and(|&w| places[w as usize].0 == p)
            {
                continue;
            }
            let start = turn(first).start;
            let i = own.iter().rposition(|t| t.start <= start).unwrap_or(0) as u32;
            let spawner = base + i;
            let after = downstream(&rows, first);
            if after[spawner as usize] {
                let before = upstream(&rows, spawner as usize);
                for r in rows.iter_mut().filter(|r| before[r.flat]) {
                    let n = r.waits.len();
                    r.waits.retain(|&w| !after[w as usize]);
                    dropped += n - r.waits.len();
                }
            }
            let row = &mut rows[first];
            if row.waits.is_empty() {
                row.gap = start.saturating_sub(own[i as usize].start);
            }
            row.waits.insert(0, spawner);
            added += 1;
        }
        // Of the edges written: those from a send, and rows whose edges
        // have other gaps than the one written.
        let (mut anchors, mut mixed) = (0, 0);
        for row in &rows {
            let kept = incoming[row.flat]
                .iter()
                .filter(|e| row.waits.contains(&e.from));
            let (start, other) = kept.fold((false, false), |(s, o), e| {
                (s || e.anchor == Anchor::Start, o || e.gap != row.gap)
            });
            anchors += usize::from(start);
            mixed += usize::from(other);
        }
        let absolute = |flat: usize| tree.arrival.saturating_add(turn(flat).start);
        rows.sort_by_key(|r| (turn(r.flat).start, r.flat));
        let request = |flat: usize| {
            let (a, k) = places[flat];
            format!("{}:{k}", sessions[a as usize])
        };
        for row in &rows {
            let t = turn(row.flat);
            let (a, _) = places[row.flat];
            out.write_all(b"{\"request_id\":")?;
            write_str(out, &request(row.flat))?;
            out.write_all(b",\"session_id\":")?;
            write_str(out, &sessions[a as usize])?;
            if row.waits.is_empty() {
                write!(
                    out,
                    ",\"timestamp\":{}",
                    decimal(absolute(row.flat), 1_000_000)
                )?;
            } else {
                out.write_all(b",\"wait_for\":[")?;
                for (i, &w) in row.waits.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    write_str(out, &request(w as usize))?;
                }
                let field = if t.input_kind == InputKind::ToolResult {
                    "tool_wait_ms"
                } else {
                    "delay"
                };
                write!(out, "],\"{field}\":{}", decimal(row.gap, 1_000_000))?;
            }
            write!(
                out,
                ",\"input_length\":{},\"output_length\":{},\"hash_ids\":[",
                t.isl, t.osl
            )?;
            for (i, id) in t.hash_ids.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write!(out, "{}", self.ids.id(id, tree.hash_scope))?;
            }
            out.write_all(b"]}\n")?;
        }

        note_turns(account, Side::Inferred, EDGES_ADDED, added);
        note_turns(account, Side::Lost, DROPPED_EDGES, dropped);
        note_turns(account, Side::Lost, ANCHORS, anchors);
        note_turns(account, Side::Lost, GAPS, mixed);
        // Edge kinds as the reader names them: within a session a
        // sequence, into an ancestor's row a join, else a spawn.
        let ancestor = |mut a: u32, of: u32| {
            while let Some(p) = tree.agents[a as usize].parent {
                if p == of {
                    return true;
                }
                a = p;
            }
            false
        };
        let kinds_changed = edges
            .iter()
            .filter(|e| {
                let (from, to) = (places[e.from as usize].0, places[e.to as usize].0);
                let read = if from == to {
                    EdgeKind::Sequence
                } else if ancestor(from, to) {
                    EdgeKind::Join
                } else {
                    EdgeKind::Spawn
                };
                let kept = rows
                    .iter()
                    .any(|r| r.flat == e.to as usize && r.waits.contains(&e.from));
                kept && read != e.kind
            })
            .count();
        note_turns(account, Side::Lost, EDGE_KINDS, kinds_changed);
        // What the reader will rebuild: starts, parents, kinds.
        let written: Vec<(u32, u32, Nanos)> = rows
            .iter()
            .flat_map(|r| r.waits.iter().map(move |&w| (w, r.flat as u32, r.gap)))
            .collect();
        let base: Vec<Nanos> = (0..places.len()).map(absolute).collect();
        if let Some(starts) = rebuilt_starts(places.len(), &written, &base) {
            let moved = (0..places.len()).filter(|&f| starts[f] != base[f]).count();
            note_turns(account, Side::Lost, STARTS, moved);
        }
        let mut changed_kind = 0;
        for (i, agent) in tree.agents.iter().enumerate() {
            let Some(p) = agent.parent else { continue };
            let joined = written.iter().any(|&(from, to, _)| {
                places[from as usize].0 as usize == i && places[to as usize].0 == p
            });
            let read = if joined {
                AgentKind::Blocking
            } else {
                AgentKind::Background
            };
            if read != agent.kind {
                changed_kind += 1;
            }
        }
        note_agents(account, Side::Lost, KINDS, changed_kind);
        if tree
            .agents
            .first()
            .and_then(|a| a.turns.first())
            .is_some_and(|t| t.start > 0)
        {
            account.lost(ARRIVAL, 0, 0);
        }
        note(tree, &rows, account);
        Ok(())
    }
}

/// Which rows wait, directly or not, for row `from` (itself included).
fn downstream(rows: &[Row], from: usize) -> Vec<bool> {
    let mut following: Vec<Vec<usize>> = vec![Vec::new(); rows.len()];
    for r in rows {
        for &w in &r.waits {
            following[w as usize].push(r.flat);
        }
    }
    reach(&following, from)
}

/// Which rows row `to` waits for, directly or not (itself included).
fn upstream(rows: &[Row], to: usize) -> Vec<bool> {
    let waits: Vec<Vec<usize>> = rows
        .iter()
        .map(|r| r.waits.iter().map(|&w| w as usize).collect())
        .collect();
    reach(&waits, to)
}

/// The nodes reachable from `from` along `next` (itself included).
fn reach(next: &[Vec<usize>], from: usize) -> Vec<bool> {
    let mut seen = vec![false; next.len()];
    let mut stack = vec![from];
    while let Some(t) = stack.pop() {
        if std::mem::replace(&mut seen[t], true) {
            continue;
        }
        stack.extend(next[t].iter().copied());
    }
    seen
}

/// Notes what the rows of `tree` lose whatever their edges.
fn note(tree: &Tree, rows: &[Row], account: &mut Account) {
    let lost_turns = [
        (DURATIONS, turns_where(tree, |t| t.duration.is_some())),
        (TTFT, turns_where(tree, |t| t.ttft.is_some())),
        (MODELS, turns_where(tree, |t| t.model.is_some())),
        (TEXT, turns_where(tree, |t| t.text.is_some())),
    ];
    for (item, turns) in lost_turns {
        note_turns(account, Side::Lost, item, turns);
    }
    let offsets = tree.turn_offsets();
    let kind_of = |flat: usize| {
        let a = offsets.partition_point(|&o| o as usize <= flat) - 1;
        tree.agents[a].turns[flat - offsets[a] as usize].input_kind
    };
    let kinds_lost = rows
        .iter()
        .filter(|r| match kind_of(r.flat) {
            InputKind::Unknown => false,
            InputKind::UserText => true,
            InputKind::ToolResult => r.waits.is_empty() || r.gap == 0,
        })
        .count();
    note_turns(account, Side::Lost, INPUT_KIND, kinds_lost);
    let with_ids = turns_where(tree, |t| !t.hash_ids.is_empty());
    if with_ids > 0 && tree.block_size != BLOCK_SIZE {
        account.lost(BLOCK, 0, with_ids);
    }
    note_turns(account, Side::Inferred, HASH_IDS, with_ids);
    if tree.tool_tokens > 0 || tree.system_tokens > 0 {
        account.lost(TOKENS, 0, 0);
    }
    note_agents(
        account,
        Side::Lost,
        AGENT_END,
        agents_where(tree, |a| a.recorded_end.is_some()),
    );
    note_provenance(account, tree);
}
