//! Writes Mooncake request traces with AIPerf's session extension: one
//! row per turn (`session_id`, `timestamp` ms, `input_length`,
//! `output_length`, `hash_ids`).
//!
//! Owns the inverse of the Mooncake reader for what the format can hold:
//! a session is a chain of requests, so each agent is written as a
//! session of its own (the root named after the tree) and reads back as a
//! tree of one agent. Every row has its absolute `timestamp` (the tree's
//! arrival plus the turn's start, in exact decimal milliseconds), so
//! starts come back to the nanosecond. Hash ids of trees whose ids are per
//! tree are renumbered so they stay distinct in the file, where Mooncake's
//! are global.

use std::io::{self, Write};

use arbor_engine::model::{InputKind, Tree};

use super::account::{
    agents_where, note_agents, note_provenance, note_turns, turns_where, Account, Item, Side,
};
use super::edges::stated_lost;
use super::names::{FileIds, Names};
use super::{decimal, write_str, TreeWriter};

/// Mooncake's block size (not stated in its files).
const BLOCK_SIZE: u32 = 512;

/// What Mooncake keeps.
pub const KEPT: &[&str] = &[
    "turn starts (absolute timestamps, to the nanosecond)",
    "isl, osl and hash ids",
];

const SUBAGENTS: Item = Item {
    key: "subagents",
    what: "no subagents: each agent is written as a session of its own and reads back as a tree of one agent (parent and kind lost)",
};
const SESSION_IDS: Item = Item {
    key: "session_ids",
    what:
        "sessions named after the tree (its root) and the agent ids, with #N where a name was taken",
};
const ARRIVAL: Item = Item {
    key: "arrival",
    what: "a session arrives at its first row: agents whose first turn is after the tree's arrival read back as trees arriving then",
};
const DURATIONS: Item = Item {
    key: "durations",
    what: "no durations: read back unknown (edges then replay start to start)",
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
    what: "no input kinds (tool result, user text): read back unknown",
};
const TEXT: Item = Item {
    key: "text",
    what: "recorded text dropped (hash ids and lengths only)",
};
const EDGES: Item = Item {
    key: "edges",
    what: "stated edges not written: each session is a chain replayed start to start; the turns listed get other incoming edges",
};
const BLOCK: Item = Item {
    key: "block_size",
    what: "hash ids written as they are, but Mooncake readers take 512 tokens a block",
};
const TOKENS: Item = Item {
    key: "tool_system_tokens",
    what: "no tool and system token counts",
};
const AGENT_END: Item = Item {
    key: "agent_end",
    what: "no agent ends (a subagent's recorded end)",
};
const HASH_IDS: Item = Item {
    key: "hash_ids",
    what: "hash ids renumbered in order of first appearance in the file, per-tree ids kept apart across trees (Mooncake's ids are global)",
};

/// The Mooncake writer: session names and the file-wide hash ids.
#[derive(Default)]
pub struct Writer {
    names: Names,
    ids: FileIds,
}

impl TreeWriter for Writer {
    fn write_tree(
        &mut self,
        tree: &Tree,
        out: &mut dyn Write,
        account: &mut Account,
    ) -> io::Result<()> {
        self.ids.next_tree();
        let mut renamed = 0;
        for (a, agent) in tree.agents.iter().enumerate() {
            let wanted = if a == 0 { &tree.id } else { &agent.id };
            let session = self.names.claim(wanted);
            if session != agent.id {
                renamed += 1;
            }
            for turn in &agent.turns {
                out.write_all(b"{\"session_id\":")?;
                write_str(out, &session)?;
                write!(
                    out,
                    ",\"timestamp\":{},\"input_length\":{},\"output_length\":{},\"hash_ids\":[",
                    decimal(tree.arrival.saturating_add(turn.start), 1_000_000),
                    turn.isl,
                    turn.osl
                )?;
                for (i, id) in turn.hash_ids.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    write!(out, "{}", self.ids.id(id, tree.hash_scope))?;
                }
                out.write_all(b"]}\n")?;
            }
        }
        note_agents(account, Side::Inferred, SESSION_IDS, renamed);
        note(tree, account);
        Ok(())
    }
}

/// Notes what the Mooncake rows of `tree` lose.
fn note(tree: &Tree, account: &mut Account) {
    let subagents = tree.agents.len().saturating_sub(1);
    note_agents(account, Side::Lost, SUBAGENTS, subagents);
    let late = agents_where(tree, |a| a.turns.first().is_some_and(|t| t.start > 0));
    note_agents(account, Side::Lost, ARRIVAL, late);
    let lost_turns = [
        (DURATIONS, turns_where(tree, |t| t.duration.is_some())),
        (TTFT, turns_where(tree, |t| t.ttft.is_some())),
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
    if let Some(stated) = &tree.explicit_edges {
        // Read back: each agent a chain of its own, durations unknown
        // (edges between agents go with the subagents, noted above).
        let mut as_read = tree.clone();
        for agent in &mut as_read.agents {
            agent.parent = None;
            agent.turns.iter_mut().for_each(|t| t.duration = None);
        }
        let offsets = tree.turn_offsets();
        let agent_of = |flat: u32| offsets.partition_point(|&o| o <= flat);
        let mut within = tree.clone();
        within.explicit_edges = Some(
            stated
                .iter()
                .filter(|e| agent_of(e.from) == agent_of(e.to))
                .copied()
                .collect(),
        );
        note_turns(account, Side::Lost, EDGES, stated_lost(&within, &as_read));
    }
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
