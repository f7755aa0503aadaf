//! Writes trees in the Weka kv-cache-tester layout: one JSON object per
//! tree (`arbor convert --to weka -o DIR` writes one file a tree; the
//! benches' corpora put one a line, the SemiAnalysis layout).
//!
//! Owns the inverse of the Weka reader. Subagents are written as inline
//! `type: "subagent"` entries after the parent request that precedes their
//! spawn, in the *relative* convention (marker `t` is the completion,
//! inner `t` relative to the spawn; background children as
//! `async_launched` with `t` the launch). Times are written as exact
//! decimal seconds of the model's nanoseconds, so reading the output back
//! gives the same times. Edges are not written: the reader derives them
//! from those times. The account says what the layout cannot hold (text,
//! stated edges, hash ids shared across trees, ...).

use std::io::{self, Write};

use arbor_engine::model::{Agent, AgentKind, HashScope, InputKind, Tree, Turn};
use arbor_engine::time::Nanos;

use super::account::{
    agents_where, note_agents, note_provenance, note_turns, turns_where, Account, Item, Side,
};
use super::edges::stated_lost;
use super::names::Names;
use super::TreeWriter;

/// What the Weka layout keeps.
pub const KEPT: &[&str] = &[
    "subagents (parent, blocking or background)",
    "turn starts, durations (api_time) and ttft to the nanosecond",
    "isl, osl, models, input kinds (tool result or text), hash ids and block size",
    "tool and system tokens",
];

const TEXT: Item = Item {
    key: "text",
    what: "recorded text dropped (the layout has hash ids only; the text is synthesized again from them)",
};
const EDGES: Item = Item {
    key: "edges",
    what: "stated edges not written: the reader derives them from the times; the turns listed get other incoming edges",
};
const HASH_SCOPE: Item = Item {
    key: "hash_scope",
    what:
        "hash ids are per trace in this layout: blocks shared with other trees are no longer shared",
};
const ROOT_ID: Item = Item {
    key: "root_id",
    what: "the root agent is read back named after the trace id",
};
const AGENT_END: Item = Item {
    key: "agent_end",
    what: "a blocking subagent's end is written as the later of its recorded end and its last turn's end; a background one's and the root's are not written",
};
const BLOCK_SIZE: Item = Item {
    key: "block_size",
    what: "no block size in the source: 64 written (the layout's default)",
};
const MODEL_UNKNOWN: Item = Item {
    key: "model_unknown",
    what: "turns without a model written with model `unknown` (the layout requires one)",
};
const ARRIVAL: Item = Item {
    key: "arrival",
    what: "a trace starts at 0: trees arriving later read back arriving at 0",
};
const FILE_NAMES: Item = Item {
    key: "file_names",
    what: "file names made from the tree ids (other characters as `_`), numbered in corpus order so the directory reads back in the same order",
};

/// The Weka writer of `arbor convert`: one file per tree.
#[derive(Default)]
pub struct Writer {
    names: Names,
    files: u64,
}

impl TreeWriter for Writer {
    fn tree_file(&mut self, tree: &Tree) -> Option<String> {
        let safe: String = tree
            .id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .take(100)
            .collect();
        let name = self.names.claim(&format!("{:08}-{safe}", self.files));
        self.files += 1;
        Some(format!("{name}.json"))
    }

    fn write_tree(
        &mut self,
        tree: &Tree,
        out: &mut dyn Write,
        account: &mut Account,
    ) -> io::Result<()> {
        write_trace(tree, out)?;
        note(tree, account);
        Ok(())
    }
}

/// Notes what writing `tree` in the Weka layout loses or infers.
fn note(tree: &Tree, account: &mut Account) {
    account.inferred(FILE_NAMES, 0, 0);
    if tree.arrival != 0 {
        account.lost(ARRIVAL, 0, 0);
    }
    note_turns(
        account,
        Side::Lost,
        TEXT,
        turns_where(tree, |t| t.text.is_some()),
    );
    note_turns(account, Side::Lost, EDGES, stated_lost(tree, tree));
    let has_ids = turns_where(tree, |t| !t.hash_ids.is_empty());
    if tree.hash_scope == HashScope::Global && has_ids > 0 {
        account.lost(HASH_SCOPE, 0, has_ids);
    }
    if tree.agents.first().is_some_and(|a| a.id != tree.id) {
        account.lost(ROOT_ID, 1, 0);
    }
    let ends = agents_where(tree, |a| match a.kind {
        AgentKind::Root | AgentKind::Background => a.recorded_end.is_some(),
        AgentKind::Blocking => a.recorded_end != Some(end_of(a)),
    });
    note_agents(account, Side::Lost, AGENT_END, ends);
    if tree.block_size == 0 && has_ids > 0 {
        account.inferred(BLOCK_SIZE, 0, has_ids);
    }
    note_turns(
        account,
        Side::Inferred,
        MODEL_UNKNOWN,
        turns_where(tree, |t| {
            t.model.and_then(|m| tree.models.get(m as usize)).is_none()
        }),
    );
    note_provenance(account, tree);
}

/// Seconds with nine decimals, trailing zeros trimmed (exact for ns).
fn write_secs(out: &mut impl Write, ns: Nanos) -> io::Result<()> {
    let (whole, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return write!(out, "{whole}.0");
    }
    let digits = format!("{frac:09}");
    write!(out, "{whole}.{}", digits.trim_end_matches('0'))
}

/// Milliseconds with six decimals, trailing zeros trimmed (exact for ns).
fn write_millis(out: &mut impl Write, ns: Nanos) -> io::Result<()> {
    let (whole, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        return write!(out, "{whole}");
    }
    let digits = format!("{frac:06}");
    write!(out, "{whole}.{}", digits.trim_end_matches('0'))
}

fn write_str(out: &mut impl Write, text: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *out, text).map_err(io::Error::other)
}

/// Writes one tree as one line.
pub fn write_trace(tree: &Tree, mut out: &mut dyn Write) -> io::Result<()> {
    let out = &mut out;
    out.write_all(b"{\"id\":")?;
    write_str(out, &tree.id)?;
    out.write_all(b",\"models\":[")?;
    for (i, model) in tree.models.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write_str(out, model)?;
    }
    let block_size = if tree.block_size == 0 {
        64
    } else {
        tree.block_size
    };
    write!(
        out,
        "],\"block_size\":{block_size},\"hash_id_scope\":\"local\",\"tool_tokens\":{},\"system_tokens\":{},\"requests\":",
        tree.tool_tokens, tree.system_tokens
    )?;
    let children = children_of(tree);
    write_requests(out, tree, &children, 0, 0)?;
    out.write_all(b"}\n")
}

/// Child agent indices of each agent, ordered by first turn start.
fn children_of(tree: &Tree) -> Vec<Vec<usize>> {
    let mut children = vec![Vec::new(); tree.agents.len()];
    for (index, agent) in tree.agents.iter().enumerate() {
        if let Some(parent) = agent.parent.and_then(|p| children.get_mut(p as usize)) {
            parent.push(index);
        }
    }
    for list in &mut children {
        list.sort_by_key(|&c| (spawn_of(&tree.agents[c]), c));
    }
    children
}

fn spawn_of(agent: &Agent) -> Nanos {
    agent.turns.first().map_or(0, |t| t.start)
}

fn end_of(agent: &Agent) -> Nanos {
    let last = agent.turns.iter().map(Turn::end).max().unwrap_or(0);
    agent.recorded_end.unwrap_or(0).max(last)
}

/// Writes the `requests` array of `agent`: its turns with times relative to
/// `base`, and after each turn the subagents spawned before the next one.
fn write_requests(
    out: &mut impl Write,
    tree: &Tree,
    children: &[Vec<usize>],
    agent: usize,
    base: Nanos,
) -> io::Result<()> {
    let turns = &tree.agents[agent].turns;
    let kids = &children[agent];
    let mut next_kid = 0;
    out.write_all(b"[")?;
    let mut first = true;
    let mut separator = |out: &mut dyn Write| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        Ok(())
    };
    for (i, turn) in turns.iter().enumerate() {
        // Children spawned before this turn (and after the previous one).
        while let Some(&kid) = kids.get(next_kid) {
            if i == 0 || spawn_of(&tree.agents[kid]) >= turn.start {
                break;
            }
            separator(out)?;
            write_subagent(out, tree, children, kid, base)?;
            next_kid += 1;
        }
        separator(out)?;
        write_request(out, tree, turn, base)?;
    }
    for &kid in &kids[next_kid..] {
        separator(out)?;
        write_subagent(out, tree, children, kid, base)?;
    }
    out.write_all(b"]")
}

fn write_request(out: &mut impl Write, tree: &Tree, turn: &Turn, base: Nanos) -> io::Result<()> {
    out.write_all(b"{\"t\":")?;
    write_secs(out, turn.start.saturating_sub(base))?;
    // A streamed request (`s`) is the one that carries a TTFT.
    let kind = if turn.ttft.is_some() { "s" } else { "n" };
    write!(out, ",\"type\":\"{kind}\",\"model\":")?;
    let model = turn
        .model
        .and_then(|m| tree.models.get(m as usize))
        .map_or("unknown", String::as_str);
    write_str(out, model)?;
    write!(
        out,
        ",\"in\":{},\"out\":{},\"hash_ids\":[",
        turn.isl, turn.osl
    )?;
    for (i, id) in turn.hash_ids.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        write!(out, "{id}")?;
    }
    let input = match turn.input_kind {
        InputKind::ToolResult => "[\"tool_result\"]",
        InputKind::UserText => "[\"text\"]",
        InputKind::Unknown => "[\"text\",\"tool_result\"]",
    };
    write!(
        out,
        "],\"input_types\":{input},\"output_types\":[\"text\"],\"stop\":\"end_turn\""
    )?;
    if let Some(duration) = turn.duration {
        out.write_all(b",\"api_time\":")?;
        write_secs(out, duration)?;
    }
    if let Some(ttft) = turn.ttft {
        out.write_all(b",\"ttft\":")?;
        write_secs(out, ttft)?;
    }
    out.write_all(b"}")
}

fn write_subagent(
    out: &mut impl Write,
    tree: &Tree,
    children: &[Vec<usize>],
    kid: usize,
    base: Nanos,
) -> io::Result<()> {
    let agent = &tree.agents[kid];
    let spawn = spawn_of(agent);
    out.write_all(b"{\"t\":")?;
    match agent.kind {
        AgentKind::Background => {
            write_secs(out, spawn.saturating_sub(base))?;
            out.write_all(b",\"type\":\"subagent\",\"agent_id\":")?;
            write_str(out, &agent.id)?;
            out.write_all(b",\"subagent_type\":\"general-purpose\",\"duration_ms\":null,\"status\":\"async_launched\"")?;
        }
        _ => {
            let duration = end_of(agent).saturating_sub(spawn);
            write_secs(out, (spawn + duration).saturating_sub(base))?;
            out.write_all(b",\"type\":\"subagent\",\"agent_id\":")?;
            write_str(out, &agent.id)?;
            out.write_all(b",\"subagent_type\":\"Explore\",\"duration_ms\":")?;
            write_millis(out, duration)?;
            out.write_all(b",\"status\":\"completed\"")?;
        }
    }
    // The models its requests use, in order of first use (AIPerf's
    // schema requires the list).
    out.write_all(b",\"models\":[")?;
    let mut named: Vec<&str> = Vec::new();
    for turn in &agent.turns {
        let model = turn
            .model
            .and_then(|m| tree.models.get(m as usize))
            .map_or("unknown", String::as_str);
        if !named.contains(&model) {
            if !named.is_empty() {
                out.write_all(b",")?;
            }
            write_str(out, model)?;
            named.push(model);
        }
    }
    out.write_all(b"],\"requests\":")?;
    write_requests(out, tree, children, kid, spawn)?;
    out.write_all(b"}")
}
