//! Writes Dynamo request traces (`dynamo.request.trace.v1`): one
//! `request_end` record per turn, with the agent's session and its parent
//! session, the request's timings and token counts and, when the turn has
//! hash ids, its prompt's block hashes (`replay`).
//!
//! Owns the inverse of the Dynamo reader for what the format can hold:
//! every agent is a session (the root named after the tree), every
//! subagent a child session (the format has blocking subagents only).
//! Times are unix milliseconds from a fixed epoch (2026-01-01): the
//! receive time is a whole millisecond, durations and TTFT exact decimals.
//! The reader times a tree from its root's first request, so a turn that
//! would start before it is moved to it. Hash ids become u64 sequence
//! hashes (per-tree ids kept apart across trees; the reader renumbers
//! them), written only when their count is `ceil(isl / block size)` with
//! one block size for the whole file, as the format requires. Edges are
//! not written: the reader derives them from the times.

use std::io::{self, Write};

use arbor_engine::model::{AgentKind, InputKind, Tree};
use arbor_engine::time::{Nanos, NANOS_PER_MS};

use super::account::{
    agents_where, note_agents, note_provenance, note_turns, turns_where, Account, Item, Side,
};
use super::edges::stated_lost;
use super::names::{FileIds, Names};
use super::{decimal, write_str, TreeWriter};

/// The schema every record names.
const SCHEMA: &str = "dynamo.request.trace.v1";

/// Unix milliseconds of time 0 (2026-01-01T00:00:00Z).
const EPOCH_MS: u64 = 1_767_225_600_000;

/// What a Dynamo request trace keeps.
pub const KEPT: &[&str] = &[
    "agents as sessions and their parent sessions",
    "durations (total_time_ms) and ttft to the nanosecond; starts to the millisecond",
    "isl, osl; hash ids as sequence hashes (one block size per file)",
];

const SESSION_IDS: Item = Item {
    key: "session_ids",
    what:
        "sessions named after the tree (its root) and the agent ids, with #N where a name was taken",
};
const HASH_IDS: Item = Item {
    key: "hash_ids",
    what: "hash ids written as u64 sequence hashes (per-tree ids kept apart across trees); the reader renumbers them in order of first appearance",
};
const START_MS: Item = Item {
    key: "start_ms",
    what:
        "receive times are whole milliseconds: turns whose start is not are rounded to the nearest",
};
const EARLY_TURNS: Item = Item {
    key: "early_turns",
    what: "the reader times a tree from its root's first request: turns before it are moved to it",
};
const ARRIVAL: Item = Item {
    key: "arrival",
    what: "a tree arrives at its root's first request: trees whose root starts after the tree's arrival shift",
};
const TIME_ORIGIN: Item = Item {
    key: "time_origin",
    what: "the reader counts arrivals from the file's first request, which is not at time 0 here: every tree shifts by as much",
};
const KINDS: Item = Item {
    key: "kinds",
    what: "child sessions are blocking subagents: background subagents read back blocking",
};
const EDGES: Item = Item {
    key: "edges",
    what: "stated edges not written: the reader derives them from the times; the turns listed get other incoming edges",
};
const PARTIAL_BLOCKS: Item = Item {
    key: "partial_blocks",
    what: "prompts whose hash ids cover full blocks only get a hash of their own for the partial last block (the format hashes ceil(isl / block size) blocks)",
};
const HASHES_DROPPED: Item = Item {
    key: "hash_ids_dropped",
    what: "hash ids not written where their count is not ceil(isl / block size) or the tree's block size differs from the file's first: no prefix sharing there",
};
const EMPTY_AGENTS: Item = Item {
    key: "empty_agents",
    what: "agents without turns have no record: their children are attached to the nearest ancestor with turns",
};
const MODELS: Item = Item {
    key: "models",
    what: "model names written (`request.model`) but not read back",
};
const INPUT_KIND: Item = Item {
    key: "input_kind",
    what: "no input kinds (tool result, user text): read back unknown",
};
const TEXT: Item = Item {
    key: "text",
    what: "recorded text dropped (the format has block hashes only)",
};
const TOKENS: Item = Item {
    key: "tool_system_tokens",
    what: "no tool and system token counts",
};
const AGENT_END: Item = Item {
    key: "agent_end",
    what: "no agent ends (a subagent's recorded end)",
};

/// The Dynamo writer: session names, the file's hashes and block size.
#[derive(Default)]
pub struct Writer {
    names: Names,
    ids: FileIds,
    block_size: Option<u32>,
    /// The earliest receive time written (ms from the epoch).
    earliest: Option<u64>,
}

/// Nearest whole millisecond of `ns`.
fn nearest_ms(ns: Nanos) -> u64 {
    ns.saturating_add(NANOS_PER_MS / 2) / NANOS_PER_MS
}

impl TreeWriter for Writer {
    fn write_tree(
        &mut self,
        tree: &Tree,
        out: &mut dyn Write,
        account: &mut Account,
    ) -> io::Result<()> {
        self.ids.next_tree();
        let mut sessions: Vec<Option<String>> = Vec::with_capacity(tree.agents.len());
        let mut renamed = 0;
        for (a, agent) in tree.agents.iter().enumerate() {
            if agent.turns.is_empty() {
                sessions.push(None);
                continue;
            }
            let wanted = if a == 0 { &tree.id } else { &agent.id };
            let session = self.names.claim(wanted);
            if session != agent.id {
                renamed += 1;
            }
            sessions.push(Some(session));
        }
        note_agents(account, Side::Inferred, SESSION_IDS, renamed);
        note_agents(
            account,
            Side::Lost,
            EMPTY_AGENTS,
            agents_where(tree, |a| a.turns.is_empty()),
        );
        // The session of the nearest ancestor with turns.
        let parent_session = |mut a: usize| -> Option<&str> {
            while let Some(p) = tree.agents[a].parent {
                a = p as usize;
                if let Some(s) = &sessions[a] {
                    return Some(s);
                }
            }
            None
        };
        let origin = tree
            .agents
            .first()
            .and_then(|a| a.turns.first())
            .map(|t| nearest_ms(tree.arrival.saturating_add(t.start)));
        let (mut rounded, mut early, mut dropped, mut hashed, mut partial) = (0, 0, 0, 0, 0);
        for (a, agent) in tree.agents.iter().enumerate() {
            let Some(session) = &sessions[a] else {
                continue;
            };
            for (k, turn) in agent.turns.iter().enumerate() {
                let absolute = tree.arrival.saturating_add(turn.start);
                if absolute % NANOS_PER_MS != 0 {
                    rounded += 1;
                }
                let mut ms = nearest_ms(absolute);
                if let Some(origin) = origin.filter(|&o| ms < o) {
                    ms = origin;
                    early += 1;
                }
                self.earliest = Some(self.earliest.map_or(ms, |e| e.min(ms)));
                let received = EPOCH_MS.saturating_add(ms);
                out.write_all(b"{\"schema\":\"")?;
                out.write_all(SCHEMA.as_bytes())?;
                out.write_all(b"\",\"event_type\":\"request_end\"")?;
                if let Some(d) = turn.duration {
                    write!(out, ",\"event_time_unix_ms\":{}", received + nearest_ms(d))?;
                }
                out.write_all(b",\"event_source\":\"arbor\",\"agent_context\":{\"session_id\":")?;
                write_str(out, session)?;
                if let Some(parent) = parent_session(a) {
                    out.write_all(b",\"parent_session_id\":")?;
                    write_str(out, parent)?;
                }
                out.write_all(b"},\"request\":{\"request_id\":")?;
                write_str(out, &format!("{session}:{k}"))?;
                if let Some(model) = turn.model.and_then(|m| tree.models.get(m as usize)) {
                    out.write_all(b",\"model\":")?;
                    write_str(out, model)?;
                }
                write!(
                    out,
                    ",\"input_tokens\":{},\"output_tokens\":{},\"request_received_ms\":{received}",
                    turn.isl, turn.osl
                )?;
                if let Some(ttft) = turn.ttft {
                    write!(out, ",\"ttft_ms\":{}", decimal(ttft, NANOS_PER_MS))?;
                }
                if let Some(d) = turn.duration {
                    write!(out, ",\"total_time_ms\":{}", decimal(d, NANOS_PER_MS))?;
                }
                let size = tree.block_size;
                let ids = turn.hash_ids.len();
                let whole = size > 0 && ids == (turn.isl / size) as usize && turn.isl % size != 0;
                let fits = size > 0
                    && (ids == turn.isl.div_ceil(size) as usize || whole)
                    && self.block_size.is_none_or(|b| b == size);
                if !turn.hash_ids.is_empty() && fits {
                    self.block_size = Some(size);
                    hashed += 1;
                    write!(
                        out,
                        ",\"replay\":{{\"trace_block_size\":{size},\"input_length\":{},\"input_sequence_hashes\":[",
                        turn.isl
                    )?;
                    for (i, id) in turn.hash_ids.iter().enumerate() {
                        if i > 0 {
                            out.write_all(b",")?;
                        }
                        write!(out, "{}", u64::from(self.ids.id(id, tree.hash_scope)))?;
                    }
                    if whole {
                        partial += 1;
                        write!(out, ",{}", u64::from(self.ids.fresh()))?;
                    }
                    out.write_all(b"]}")?;
                } else if !turn.hash_ids.is_empty() {
                    dropped += 1;
                }
                out.write_all(b"}}\n")?;
            }
        }
        note_turns(account, Side::Inferred, HASH_IDS, hashed);
        note_turns(account, Side::Inferred, PARTIAL_BLOCKS, partial);
        note_turns(account, Side::Lost, HASHES_DROPPED, dropped);
        note_turns(account, Side::Lost, START_MS, rounded);
        note_turns(account, Side::Lost, EARLY_TURNS, early);
        note(tree, account);
        Ok(())
    }

    fn finish(&mut self, account: &mut Account) {
        if self.earliest.is_some_and(|e| e > 0) {
            account.note_file(Side::Lost, TIME_ORIGIN);
        }
    }
}

/// Notes what the records of `tree` lose whatever their times.
fn note(tree: &Tree, account: &mut Account) {
    if tree
        .agents
        .first()
        .and_then(|a| a.turns.first())
        .is_some_and(|t| t.start > 0)
    {
        account.lost(ARRIVAL, 0, 0);
    }
    note_agents(
        account,
        Side::Lost,
        KINDS,
        agents_where(tree, |a| a.kind == AgentKind::Background),
    );
    if tree.explicit_edges.is_some() {
        // Read back: blocking subagents, no agent ends, starts to the ms.
        let mut as_read = tree.clone();
        for agent in as_read.agents.iter_mut().skip(1) {
            agent.kind = AgentKind::Blocking;
        }
        for agent in &mut as_read.agents {
            agent.recorded_end = None;
            for t in &mut agent.turns {
                let at = nearest_ms(tree.arrival.saturating_add(t.start)) * NANOS_PER_MS;
                t.start = at.saturating_sub(tree.arrival);
            }
        }
        note_turns(account, Side::Lost, EDGES, stated_lost(tree, &as_read));
    }
    let lost_turns = [
        (MODELS, turns_where(tree, |t| t.model.is_some())),
        (
            INPUT_KIND,
            turns_where(tree, |t| t.input_kind != InputKind::Unknown),
        ),
        (TEXT, turns_where(tree, |t| t.text.is_some())),
    ];
    for (item, turns) in lost_turns {
        note_turns(account, Side::Lost, item, turns);
    }
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
