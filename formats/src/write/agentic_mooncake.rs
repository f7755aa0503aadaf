//! Writes agentic Mooncake rows: Mooncake rows with `request_id`,
//! `session_id` and explicit dependencies (`wait_for`, `delay`,
//! `tool_wait_ms`), as Dynamo's agentic converter writes them.
//!
//! Owns the inverse of the agentic Mooncake reader for what the format can
//! hold: every agent is a session (the root named after the tree), every
//! edge of the tree (stated, else derived from the times) a `wait_for`
//! entry, a subagent's first row waiting for its parent's row first (the
//! reader takes its parent from there). A row has one gap for everything
//! it waits for: the gap of the edge that decided the turn's recorded
//! start; it is `tool_wait_ms` before a tool result, else `delay`. Rows
//! that wait for nothing carry their absolute `timestamp`. The reader
//! knows no durations, so it rebuilds a waiting row's start as the latest
//! start of what it waits for plus the gap; the account counts the turns
//! that move.

use std::io::{self, Write};

use arbor_engine::model::{AgentKind, Anchor, Edge, InputKind, Tree};
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
const GAPS: Item = Item {
    key: "gaps",
    what: "one gap per row: turns waiting on edges of different gaps take the gap of the edge that decided their start",
};
const PARENTS: Item = Item {
    key: "parents",
    what: "subagents whose first turn waits for no turn of their parent: the reader attaches them by its fallback rule (or makes them trees of their own)",
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
        let (mut anchors, mut mixed) = (0, 0);
        let mut rows: Vec<Row> = Vec::with_capacity(places.len());
        for (flat, list) in incoming.iter_mut().enumerate() {
            let (agent, _) = places[flat];
            let parent = tree.agents[agent as usize].parent;
            // The parent's edges first: the reader's parent is the session
            // of the first row waited for.
            list.sort_by_key(|e| (Some(places[e.from as usize].0) != parent, e.from));
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
            let gap = binding.map_or(0, |e| e.gap);
            if list.iter().any(|e| e.anchor == Anchor::Start) {
                anchors += 1;
            }
            if list.iter().any(|e| e.gap != gap) {
                mixed += 1;
            }
            rows.push(Row {
                flat,
                waits: list.iter().map(|e| e.from).collect(),
                gap,
            });
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

        note_turns(account, Side::Lost, ANCHORS, anchors);
        note_turns(account, Side::Lost, GAPS, mixed);
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
        let offsets = tree.turn_offsets();
        let mut orphans = 0;
        for (i, agent) in tree.agents.iter().enumerate() {
            let (Some(p), false) = (agent.parent, agent.turns.is_empty()) else {
                continue;
            };
            let first = &incoming[offsets[i] as usize];
            if first.first().is_none_or(|e| places[e.from as usize].0 != p) {
                orphans += 1;
            }
        }
        note_agents(account, Side::Lost, PARENTS, orphans);
        let mut changed_kind = 0;
        for (i, agent) in tree.agents.iter().enumerate() {
            let Some(p) = agent.parent else { continue };
            let joined = edges
                .iter()
                .any(|e| places[e.from as usize].0 as usize == i && places[e.to as usize].0 == p);
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
