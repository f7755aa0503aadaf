//! Writes AIPerf agentic graphs (`dag_jsonl`): one conversation per agent,
//! each turn a message delta with `model`, `max_tokens`, `delay` and the
//! subagents it spawns (joined at the next turn or at `join_at`).
//!
//! Owns the inverse of the AIPerf graph reader for what the format can
//! hold. The tree's edges (stated, else derived from the times) become the
//! graph: each turn's `delay` is the gap after its agent's previous turn, a
//! subagent is spawned by the parent turn its first turn waits for (the
//! gap is its first `delay`) and joined at the parent turn that waits for
//! its last turn; a subagent whose first turn waits for no parent turn is
//! a pre-session spawn. The format has no times, so the reader rebuilds
//! starts from the delays with unknown durations. Recorded text is written
//! as it is sent (deltas when each prompt extends the previous one, else
//! each turn's whole prompt); a turn without text gets filler text of its
//! isl (4 bytes a token, the reader's estimate), the same filler for the
//! whole agent so each prompt extends the previous one as the recorded
//! lengths say. The account counts every edge, start, token count and kind
//! that does not come back as it was.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, Write};

use arbor_engine::content::prompt_messages;
use arbor_engine::model::{Agent, AgentKind, Anchor, Edge, EdgeKind, InputKind, Role, Tree};
use arbor_engine::time::{Nanos, NANOS_PER_MS};

use super::account::{
    agents_where, note_agents, note_provenance, note_turns, turns_where, Account, Item, Side,
};
use super::edges::{edges_of, places, rebuilt_starts};
use super::names::Names;
use super::{decimal, write_str, TreeWriter};

/// What an AIPerf graph keeps.
pub const KEPT: &[&str] = &[
    "agents as conversations, parents (spawns), blocking or background (joins)",
    "edges within agents and spawn and join points, with their gaps (delay)",
    "osl (max_tokens), models, recorded text; isl as text of that length where there is none",
];

const SESSION_IDS: Item = Item {
    key: "session_ids",
    what: "conversations named after the tree (its root) and the agent ids, with #N where a name was taken",
};
const FILLER: Item = Item {
    key: "filler_text",
    what: "turns without text get filler text of their isl (4 bytes a token), each prompt extending its agent's previous one as the lengths say",
};
const EDGES_ADDED: Item = Item {
    key: "edges_added",
    what: "edges the graph states that the source did not (a join at the parent's last turn, a turn after its agent's previous one)",
};
const EMPTY_MESSAGES: Item = Item {
    key: "empty_messages",
    what: "turns whose text adds no message get an empty user message (AIPerf requires one)",
};
const EDGES: Item = Item {
    key: "edges",
    what: "edges the graph cannot state (between turns other than an agent's consecutive turns, a spawn and a join): the turns listed lose them",
};
const ANCHORS: Item = Item {
    key: "anchors",
    what: "delays count from completion: edges from a turn's send written as from its completion",
};
const EDGE_KINDS: Item = Item {
    key: "edge_kinds",
    what: "an edge's kind is read back from the graph (within an agent, a spawn, a join): these edges change kind",
};
const JOIN_GAPS: Item = Item {
    key: "join_gaps",
    what: "a join turn is sent as soon as its subagents complete: the gap after a subagent's end is dropped",
};
const BACKGROUND: Item = Item {
    key: "background",
    what: "spawns without a join only end a conversation: background subagents spawned earlier are joined at their parent's last turn",
};
const KINDS: Item = Item {
    key: "kinds",
    what: "a subagent reads back blocking when it is joined, else background: these agents change kind",
};
const STARTS: Item = Item {
    key: "starts",
    what: "no times: the reader rebuilds starts from the delays with unknown durations; these turns move",
};
const ARRIVAL: Item = Item {
    key: "arrival",
    what: "no arrival times: every tree reads back arriving at 0",
};
const DURATIONS: Item = Item {
    key: "durations",
    what: "no durations: read back unknown",
};
const TTFT: Item = Item {
    key: "ttft",
    what: "no time to first token",
};
const ISL: Item = Item {
    key: "isl",
    what: "isl is read back estimated from the text (1 token per 4 bytes): recorded counts that differ are lost",
};
const HASH_IDS: Item = Item {
    key: "hash_ids",
    what: "no hash ids: prompts are text, shared only within an agent's own prompts (filler) or where the recorded text is shared",
};
const TEXT_DROPPED: Item = Item {
    key: "text_dropped",
    what: "recorded text of agents where some turns have none is replaced by filler",
};
const RESPONSES: Item = Item {
    key: "responses",
    what: "recorded answers are written into the next prompt; an agent's last answer has none to go in",
};
const SYSTEM: Item = Item {
    key: "system_messages",
    what: "system messages after a prompt's start written as user messages (AIPerf refuses them)",
};
const INPUT_KIND: Item = Item {
    key: "input_kind",
    what: "the input kind is read back from the last message's role (tool result, user text): these turns change",
};
const TOKENS: Item = Item {
    key: "tool_system_tokens",
    what: "no tool and system token counts",
};
const AGENT_END: Item = Item {
    key: "agent_end",
    what: "no agent ends (a subagent's recorded end)",
};
const EMPTY_AGENTS: Item = Item {
    key: "empty_agents",
    what: "agents without turns are not written (AIPerf requires turns): their subagents read back as trees of their own",
};

/// The AIPerf graph writer: conversation names, unique in the file.
#[derive(Default)]
pub struct Writer {
    names: Names,
}

/// How an agent is launched in the graph.
#[derive(Debug, Clone, Copy)]
enum Launch {
    Root,
    /// Spawned after its parent's turn `turn`; joined at `join`.
    After {
        turn: u32,
        join: Option<u32>,
    },
    /// Before its parent's first turn.
    Before,
}

/// One message as written: role and content.
struct Out {
    role: Role,
    content: String,
}

impl TreeWriter for Writer {
    fn write_tree(
        &mut self,
        tree: &Tree,
        out: &mut dyn Write,
        account: &mut Account,
    ) -> io::Result<()> {
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
        let plan = Plan::of(tree);
        plan.note(tree, account);
        for (a, agent) in tree.agents.iter().enumerate() {
            if agent.turns.is_empty() {
                continue;
            }
            let (mode, texts) = texts(tree, a, account);
            out.write_all(b"{\"session_id\":")?;
            write_str(out, &sessions[a])?;
            write!(out, ",\"context_mode\":\"{mode}\"")?;
            let pre: Vec<usize> = plan.children[a]
                .iter()
                .copied()
                .filter(|&c| matches!(plan.launch[c], Launch::Before))
                .collect();
            if !pre.is_empty() {
                out.write_all(b",\"pre_session_spawns\":[")?;
                for (i, &c) in pre.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    write_str(out, &sessions[c])?;
                }
                out.write_all(b"]")?;
            }
            out.write_all(b",\"turns\":[")?;
            for (k, turn) in agent.turns.iter().enumerate() {
                if k > 0 {
                    out.write_all(b",")?;
                }
                out.write_all(b"{\"messages\":[")?;
                for (i, m) in texts[k].iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",")?;
                    }
                    write!(out, "{{\"role\":\"{}\",\"content\":", m.role.as_str())?;
                    write_str(out, &m.content)?;
                    out.write_all(b"}")?;
                }
                out.write_all(b"]")?;
                if let Some(model) = turn.model.and_then(|m| tree.models.get(m as usize)) {
                    out.write_all(b",\"model\":")?;
                    write_str(out, model)?;
                }
                if turn.osl > 0 {
                    write!(out, ",\"max_tokens\":{}", turn.osl)?;
                }
                let delay = plan.delays[a][k];
                if delay > 0 {
                    write!(out, ",\"delay\":{}", decimal(delay, NANOS_PER_MS))?;
                }
                // Children spawned after this turn, grouped by join turn.
                let mut groups: BTreeMap<Option<u32>, Vec<usize>> = BTreeMap::new();
                for &c in &plan.children[a] {
                    if let Launch::After { turn: i, join } = plan.launch[c] {
                        if i as usize == k {
                            groups.entry(join).or_default().push(c);
                        }
                    }
                }
                if !groups.is_empty() {
                    out.write_all(b",\"spawns\":[")?;
                    let mut first = true;
                    for (join, children) in &groups {
                        if !std::mem::take(&mut first) {
                            out.write_all(b",")?;
                        }
                        let bare = join.is_none_or(|j| j as usize == k + 1);
                        if bare {
                            for (i, &c) in children.iter().enumerate() {
                                if i > 0 {
                                    out.write_all(b",")?;
                                }
                                write_str(out, &sessions[c])?;
                            }
                        } else {
                            out.write_all(b"{\"children\":[")?;
                            for (i, &c) in children.iter().enumerate() {
                                if i > 0 {
                                    out.write_all(b",")?;
                                }
                                write_str(out, &sessions[c])?;
                            }
                            write!(out, "],\"join_at\":{}}}", join.unwrap_or(0))?;
                        }
                    }
                    out.write_all(b"]")?;
                }
                out.write_all(b"}")?;
            }
            out.write_all(b"]}\n")?;
        }
        note(tree, account);
        Ok(())
    }
}

/// The graph of one tree: how each agent is launched, its children, each
/// turn's delay, and the edges the reader will build from them.
struct Plan {
    launch: Vec<Launch>,
    children: Vec<Vec<usize>>,
    delays: Vec<Vec<Nanos>>,
    /// The reader's edges (all End-anchored), flat indices.
    written: Vec<Edge>,
    /// The source's edges written (one per pair of turns written).
    chosen: Vec<Edge>,
    /// Pre-session children: (flat first turn, parent agent).
    before: Vec<(usize, usize)>,
    /// Background subagents joined at their parent's last turn.
    late_joins: usize,
}

impl Plan {
    fn of(tree: &Tree) -> Plan {
        let offsets = tree.turn_offsets();
        let flat = |a: usize, k: u32| offsets[a] + k;
        let places = places(tree);
        let edges = edges_of(tree);
        let mut incoming: Vec<Vec<&Edge>> = vec![Vec::new(); places.len()];
        for e in &edges {
            if let Some(list) = incoming.get_mut(e.to as usize) {
                list.push(e);
            }
        }
        let n = tree.agents.len();
        let mut launch = vec![Launch::Root; n];
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut delays: Vec<Vec<Nanos>> =
            tree.agents.iter().map(|a| vec![0; a.turns.len()]).collect();
        let mut written: Vec<Edge> = Vec::new();
        let mut chosen: Vec<Edge> = Vec::new();
        let mut before = Vec::new();
        let mut late_joins = 0;
        let edge = |from: u32, to: u32, gap: Nanos, kind: EdgeKind| Edge {
            from,
            to,
            anchor: Anchor::End,
            gap,
            kind,
        };
        for (a, agent) in tree.agents.iter().enumerate() {
            let turns = &agent.turns;
            // Within the agent: each turn after the previous one.
            for k in 1..turns.len() as u32 {
                let to = flat(a, k);
                let from = to - 1;
                let stated = incoming[to as usize]
                    .iter()
                    .filter(|e| e.from == from)
                    .max_by_key(|e| (e.gap, e.anchor == Anchor::End));
                if let Some(e) = stated {
                    chosen.push(**e);
                }
                let gap = stated.map_or_else(
                    || {
                        let prev = &turns[k as usize - 1];
                        turns[k as usize].start.saturating_sub(prev.end())
                    },
                    |e| e.gap,
                );
                delays[a][k as usize] = gap;
                written.push(edge(from, to, gap, EdgeKind::Sequence));
            }
            if turns.is_empty() {
                continue;
            }
            let first = flat(a, 0);
            let Some(p) = agent.parent.map(|p| p as usize) else {
                delays[a][0] = turns[0].start;
                continue;
            };
            children[p].push(a);
            let parent = &tree.agents[p];
            if parent.turns.is_empty() {
                // Nothing to spawn it: before the (empty) parent.
                launch[a] = Launch::Before;
                before.push((first as usize, p));
                continue;
            }
            // The spawn: the latest parent turn the first turn waits for.
            let stated = incoming[first as usize]
                .iter()
                .filter(|e| places[e.from as usize].0 as usize == p)
                .max_by_key(|e| (e.anchor == Anchor::End, e.from, e.gap));
            let Some((i, gap)) = stated.map(|e| (places[e.from as usize].1, e.gap)) else {
                // It waits for no parent turn: a pre-session spawn, at the
                // parent's session start plus its own delay.
                launch[a] = Launch::Before;
                before.push((first as usize, p));
                let session = parent.turns[0].start.saturating_sub(delays[p][0]);
                delays[a][0] = turns[0].start.saturating_sub(session);
                continue;
            };
            delays[a][0] = gap;
            chosen.extend(stated.map(|e| **e));
            written.push(edge(flat(p, i), first, gap, EdgeKind::Spawn));
            // The join: the earliest parent turn after the spawn that one
            // of the child's turns leads to.
            let last = flat(a, turns.len() as u32 - 1);
            let stated_join = edges
                .iter()
                .filter(|e| {
                    places[e.from as usize].0 as usize == a
                        && places[e.to as usize].0 as usize == p
                        && places[e.to as usize].1 > i
                })
                .map(|e| places[e.to as usize].1)
                .min();
            let last_parent = parent.turns.len() as u32 - 1;
            let join = match stated_join {
                Some(j) => Some(j),
                None if i < last_parent => {
                    late_joins += 1;
                    Some(last_parent)
                }
                None => None,
            };
            if let Some(j) = join {
                let to = flat(p, j);
                let stated = incoming[to as usize]
                    .iter()
                    .filter(|e| e.from == last)
                    .max_by_key(|e| (e.gap, e.anchor == Anchor::End));
                chosen.extend(stated.map(|e| **e));
                written.push(edge(last, to, 0, EdgeKind::Join));
            }
            launch[a] = Launch::After { turn: i, join };
        }
        Plan {
            launch,
            children,
            delays,
            written,
            chosen,
            before,
            late_joins,
        }
    }

    /// Notes what the graph changes of the tree's structure and times.
    fn note(&self, tree: &Tree, account: &mut Account) {
        // Identical edges are one.
        let mut original = edges_of(tree);
        original.sort_unstable();
        original.dedup();
        let same = |a: &Edge, b: &Edge| a.from == b.from && a.to == b.to;
        let mut lost_to: HashSet<u32> = HashSet::new();
        let (mut anchors, mut join_gaps, mut kinds_changed) = (0, 0, 0);
        // Of several edges between the same two turns one is written (the
        // one chosen); the others are lost.
        let mut kept = self.chosen.clone();
        for e in &original {
            let written = self.written.iter().find(|w| same(w, e));
            let chosen = kept.iter().position(|c| c == e);
            match (written, chosen) {
                (Some(w), Some(c)) => {
                    kept.swap_remove(c);
                    anchors += usize::from(e.anchor == Anchor::Start);
                    join_gaps += usize::from(w.kind == EdgeKind::Join && e.gap != w.gap);
                    kinds_changed += usize::from(w.kind != e.kind);
                }
                _ => {
                    lost_to.insert(e.to);
                }
            }
        }
        let added: HashSet<u32> = self
            .written
            .iter()
            .filter(|w| !original.iter().any(|e| same(e, w)))
            .map(|w| w.to)
            .collect();
        note_turns(account, Side::Lost, EDGES, lost_to.len());
        note_turns(account, Side::Inferred, EDGES_ADDED, added.len());
        note_turns(account, Side::Lost, ANCHORS, anchors);
        note_turns(account, Side::Lost, EDGE_KINDS, kinds_changed);
        note_turns(account, Side::Lost, JOIN_GAPS, join_gaps);
        note_agents(account, Side::Lost, BACKGROUND, self.late_joins);
        let kinds = tree
            .agents
            .iter()
            .zip(&self.launch)
            .filter(|(agent, launch)| {
                let read = match launch {
                    Launch::Root => AgentKind::Root,
                    Launch::After { join: Some(_), .. } => AgentKind::Blocking,
                    _ => AgentKind::Background,
                };
                !agent.turns.is_empty() && read != agent.kind
            })
            .count();
        note_agents(account, Side::Lost, KINDS, kinds);
        // Starts as the reader rebuilds them (tree arrival 0).
        let offsets = tree.turn_offsets();
        let mut base: Vec<Nanos> = Vec::with_capacity(tree.turn_count());
        for (a, agent) in tree.agents.iter().enumerate() {
            for k in 0..agent.turns.len() {
                base.push(self.delays[a][k]);
            }
        }
        let edges: Vec<(u32, u32, Nanos)> =
            self.written.iter().map(|e| (e.from, e.to, e.gap)).collect();
        let Some(mut starts) = rebuilt_starts(base.len(), &edges, &base) else {
            return;
        };
        // A pre-session child starts at its parent's session start (its
        // first turn less that turn's delay) plus its own delay; parents
        // come before their children, so one pass in agent order settles
        // them.
        let mut pinned = base;
        for &(first, p) in &self.before {
            if tree.agents[p].turns.is_empty() {
                continue;
            }
            let a = offsets.partition_point(|&o| o as usize <= first) - 1;
            let session = starts[offsets[p] as usize].saturating_sub(self.delays[p][0]);
            pinned[first] = session.saturating_add(self.delays[a][0]);
            match rebuilt_starts(pinned.len(), &edges, &pinned) {
                Some(again) => starts = again,
                None => return,
            }
        }
        let moved = tree
            .agents
            .iter()
            .flat_map(|a| a.turns.iter())
            .zip(&starts)
            .filter(|(t, &s)| t.start != s)
            .count();
        note_turns(account, Side::Lost, STARTS, moved);
    }
}

/// The context mode and each turn's messages of agent `a`: its recorded
/// text when every turn has some, else filler of the recorded lengths.
fn texts(tree: &Tree, a: usize, account: &mut Account) -> (&'static str, Vec<Vec<Out>>) {
    let agent = &tree.agents[a];
    let all_text = agent.turns.iter().all(|t| t.text.is_some());
    let (mode, mut texts) = if all_text {
        recorded(agent, account)
    } else {
        let with_text = agent.turns.iter().filter(|t| t.text.is_some()).count();
        note_turns(account, Side::Lost, TEXT_DROPPED, with_text);
        note_turns(account, Side::Inferred, FILLER, agent.turns.len());
        filler_texts(tree, a)
    };
    let mut empty = 0;
    for messages in &mut texts {
        if messages.is_empty() {
            empty += 1;
            messages.push(Out {
                role: Role::User,
                content: String::new(),
            });
        }
    }
    note_turns(account, Side::Inferred, EMPTY_MESSAGES, empty);
    // What the reader makes of it: isl from the bytes, input kind from the
    // roles.
    let mut total = 0usize;
    let (mut isl, mut kinds) = (0, 0);
    for (turn, messages) in agent.turns.iter().zip(&texts) {
        let bytes: usize = messages.iter().map(|m| m.content.len()).sum();
        total = if mode == DELTAS { total + bytes } else { bytes };
        if estimate(total) != turn.isl {
            isl += 1;
        }
        let read = match messages.last().map(|m| m.role) {
            Some(Role::Tool) => InputKind::ToolResult,
            Some(Role::User) => InputKind::UserText,
            _ => InputKind::Unknown,
        };
        if read != turn.input_kind {
            kinds += 1;
        }
    }
    note_turns(account, Side::Lost, ISL, isl);
    note_turns(account, Side::Lost, INPUT_KIND, kinds);
    (mode, texts)
}

const DELTAS: &str = "deltas_with_responses";
const ARRAYS: &str = "message_array_with_responses";

/// Tokens the AIPerf graph reader estimates for a prompt of `bytes` bytes
/// of text: one per four, rounded up (`load::estimate_tokens`' rule).
fn estimate(bytes: usize) -> u32 {
    bytes.div_ceil(4).min(u32::MAX as usize) as u32
}

/// Recorded text: deltas when every later turn extends the previous one
/// (its answer written at the start of the next delta), else each turn's
/// whole prompt. System messages after the prompt's start become user
/// messages.
fn recorded(agent: &Agent, account: &mut Account) -> (&'static str, Vec<Vec<Out>>) {
    let extends = agent
        .turns
        .iter()
        .skip(1)
        .all(|t| t.text.as_ref().is_some_and(|x| x.extends_previous));
    let mut system = 0;
    let mut texts = Vec::with_capacity(agent.turns.len());
    let mode = if extends {
        for (k, turn) in agent.turns.iter().enumerate() {
            let mut messages = Vec::new();
            if k > 0 {
                if let Some(response) = agent.turns[k - 1]
                    .text
                    .as_ref()
                    .and_then(|t| t.response.clone())
                {
                    messages.push(Out {
                        role: Role::Assistant,
                        content: response,
                    });
                }
            }
            for m in turn.text.iter().flat_map(|t| t.messages.iter()) {
                let late = m.role == Role::System && k > 0;
                system += usize::from(late);
                messages.push(Out {
                    role: if late { Role::User } else { m.role },
                    content: m.content.clone(),
                });
            }
            texts.push(messages);
        }
        DELTAS
    } else {
        for k in 0..agent.turns.len() {
            let mut messages = Vec::new();
            for m in prompt_messages(agent, k) {
                let late = m.role == Role::System && !messages.is_empty();
                system += usize::from(late);
                messages.push(Out {
                    role: if late { Role::User } else { m.role },
                    content: m.content.to_string(),
                });
            }
            texts.push(messages);
        }
        ARRAYS
    };
    note_turns(account, Side::Lost, SYSTEM, system);
    let last_answer = agent
        .turns
        .last()
        .and_then(|t| t.text.as_ref())
        .is_some_and(|t| t.response.is_some());
    if last_answer {
        account.lost(RESPONSES, 1, 1);
    }
    (mode, texts)
}

/// Filler text of each turn's isl: deltas of one stream per agent while
/// the lengths do not shrink, else each turn's whole prompt from the
/// stream's start. A turn before a tool result is a tool message.
fn filler_texts(tree: &Tree, a: usize) -> (&'static str, Vec<Vec<Out>>) {
    let agent = &tree.agents[a];
    let seed = fnv(tree.id.as_bytes()) ^ fnv(agent.id.as_bytes()).rotate_left(17) ^ a as u64;
    let grows = agent.turns.windows(2).all(|w| w[1].isl >= w[0].isl);
    let role = |kind: InputKind| match kind {
        InputKind::ToolResult => Role::Tool,
        _ => Role::User,
    };
    let mut previous = 0u32;
    let texts = agent
        .turns
        .iter()
        .map(|t| {
            let from = if grows { previous } else { 0 };
            previous = t.isl;
            vec![Out {
                role: role(t.input_kind),
                content: filler(seed, from, t.isl),
            }]
        })
        .collect();
    (if grows { DELTAS } else { ARRAYS }, texts)
}

/// Tokens `from..to` of the filler stream `seed`: four bytes each, three
/// lowercase letters and a space, token `i` a function of `seed` and `i`.
fn filler(seed: u64, from: u32, to: u32) -> String {
    let mut text = String::with_capacity(4 * to.saturating_sub(from) as usize);
    for i in from..to {
        let mut z = seed.wrapping_add(u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        for shift in [0, 8, 16] {
            text.push(char::from(b'a' + ((z >> shift) % 26) as u8));
        }
        text.push(' ');
    }
    text
}

/// FNV-1a 64 of `bytes` (the filler's seed).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Notes what the graph of `tree` loses whatever its structure.
fn note(tree: &Tree, account: &mut Account) {
    if tree.arrival != 0 {
        account.lost(ARRIVAL, 0, 0);
    }
    let lost_turns = [
        (DURATIONS, turns_where(tree, |t| t.duration.is_some())),
        (TTFT, turns_where(tree, |t| t.ttft.is_some())),
        (HASH_IDS, turns_where(tree, |t| !t.hash_ids.is_empty())),
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
    note_agents(
        account,
        Side::Lost,
        EMPTY_AGENTS,
        agents_where(tree, |a| a.turns.is_empty()),
    );
    note_provenance(account, tree);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filler_is_four_bytes_a_token_and_extends_itself() {
        let whole = filler(7, 0, 10);
        assert_eq!(whole.len(), 40);
        assert_eq!(format!("{}{}", filler(7, 0, 4), filler(7, 4, 10)), whole);
        assert_ne!(filler(8, 0, 10), whole);
        assert_eq!(estimate(whole.len()), 10);
    }
}
