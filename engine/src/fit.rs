//! Fitting a recorded workload to a server: `--isl-scale F` and
//! `--max-context N`.
//!
//! Owns the one rewrite of prompt lengths a run makes on purpose: every
//! turn's `isl`, its hash block ids, its recorded text, and the tree's
//! `tool_tokens`/`system_tokens`. It never touches times, edges, agents or
//! output lengths, so the tree and its edges are what the recording said;
//! it runs after loading (and token recounting) and before compiling.
//! Without either setting nothing changes.
//!
//! **Scale** (`F > 0`), applied first:
//! - `isl' = round(isl * F)`, at least 1 when `isl > 0`; the same for
//!   `tool_tokens` and `system_tokens`.
//! - Hash ids: new block `j` of a turn covers the old positions `p` with
//!   `src(j-1) < p <= src(j)`, where `src(j) = floor(j / F)`; a turn of `m`
//!   blocks gets `m' = #{j : src(j) < m}` (about `ceil(m * F)`) blocks. New
//!   ids are interned as a prefix hash: block `j`'s id names (block
//!   `j-1`'s id, the old ids `j` covers), numbered from 1 in order of first
//!   appearance, per tree (`HashScope::Local`) or across the workload
//!   (`Global`). So two turns' new ids agree at `j` exactly when their old
//!   ids agree at every position up to `src(j)`: two turns sharing their
//!   first `k` old blocks share exactly `S(k) = #{j : floor(j / F) < k}`
//!   new ones (about `ceil(k * F)`), and `S(0) = 0`, so no share appears
//!   that did not exist. "Prefix of" and "extends" are kept.
//! - Recorded text: every message's content and every recorded response is
//!   cut to `round(len * F)` bytes (at a character boundary) or repeated
//!   to that length. A prompt is its agent's deltas rebuilt, so a turn
//!   that extended its predecessor still does.
//! - Turns with neither (virtual blocks): only `isl` scales; their virtual
//!   blocks still grow as a prefix within the agent.
//!
//! **Cap** (`N >= 1`), applied second, turn by turn in each agent's order,
//! in agents that have a turn with `isl > N`:
//! - Hash ids (and virtual blocks, made explicit ids first for an agent
//!   that has a turn over `N`): the head is the first
//!   `h = floor((tool_tokens + system_tokens) / block_size)` blocks; the
//!   oldest blocks after it, positions `h .. h + d`, are dropped. The
//!   predecessor's `d` is reused when the turn still shares its first
//!   `h + d` blocks with the predecessor and fits in `N` with it: the
//!   capped turn then extends the capped predecessor (a turn that fits
//!   by itself is shortened so too, to keep extending it). Otherwise `d` is the
//!   fewest blocks that fit the turn in `N`. When even dropping every block
//!   after the head is not enough (a head or an unblocked tail longer than
//!   `N`), `isl' = N`: the prompt is cut at its end, which may cut into the
//!   shared head, so turns sharing that head share only its first `N`
//!   tokens. Turns of other agents that shared more than the head with a
//!   capped turn share only the head with it.
//! - Recorded text: the prompt is materialized (it no longer extends its
//!   predecessor) and its oldest non-system messages are dropped, then the
//!   front of the oldest one kept is cut, until it fits; a message's tokens
//!   are its share of `isl` by bytes. The next turn extends the capped
//!   prompt (its `isl` shrinks by what the predecessor lost), and is
//!   capped in turn if it still does not fit. System messages
//!   longer than `N` on their own are cut at their end.
//!
//! [`FitReport`] counts the capped turns and the dropped tokens.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{Agent, BlockIds, HashScope, Message, Role, Tree, Workload};

/// What to fit. The default changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Fit {
    /// `--isl-scale F`: a finite factor above 0.
    pub isl_scale: Option<f64>,
    /// `--max-context N`: at least 1 token.
    pub max_context: Option<u32>,
}

/// What fitting the prompts to the server (`--isl-scale`,
/// `--max-context`) did: `fit` in `plan --json` and in the config of
/// `summary.json` and `run.json`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct FitReport {
    /// F: every prompt and its shared prefix blocks scaled by it.
    pub isl_scale: Option<f64>,
    /// N: every prompt capped at N tokens.
    pub max_context: Option<u32>,
    /// Turns whose prompt the cap shortened.
    pub turns_capped: u64,
    /// Prompt tokens the cap dropped, over all turns.
    pub tokens_dropped: u64,
    /// The largest prompt before fitting, in tokens.
    pub largest_prompt_before: u32,
    /// The largest prompt after fitting, in tokens.
    pub largest_prompt_after: u32,
}

impl Fit {
    /// True when there is nothing to do.
    pub fn is_identity(&self) -> bool {
        self.isl_scale.is_none() && self.max_context.is_none()
    }
}

/// The largest prompt of the workload, in tokens.
pub fn largest_prompt(workload: &Workload) -> u32 {
    workload.trees.iter().map(largest_in).max().unwrap_or(0)
}

fn largest_in(tree: &Tree) -> u32 {
    tree.agents
        .iter()
        .flat_map(|a| a.turns.iter())
        .map(|t| t.isl)
        .max()
        .unwrap_or(0)
}

/// Fits `workload` in place.
pub fn apply(workload: &mut Workload, fit: &Fit) -> FitReport {
    apply_trees(workload.trees.iter_mut(), fit)
}

/// Fits trees in place, as one workload (global hash ids span them all).
pub fn apply_trees<'a>(trees: impl IntoIterator<Item = &'a mut Tree>, fit: &Fit) -> FitReport {
    let mut trees: Vec<&mut Tree> = trees.into_iter().collect();
    let largest = |trees: &[&mut Tree]| trees.iter().map(|t| largest_in(t)).max().unwrap_or(0);
    let mut report = FitReport {
        isl_scale: fit.isl_scale,
        max_context: fit.max_context,
        largest_prompt_before: largest(&trees),
        ..FitReport::default()
    };
    if let Some(factor) = fit.isl_scale {
        let mut global = Interner::default();
        for tree in trees.iter_mut() {
            let mut local = Interner::default();
            let interner = match tree.hash_scope {
                HashScope::Global => &mut global,
                HashScope::Local => &mut local,
            };
            scale_tree(tree, factor, interner);
        }
    }
    if let Some(cap) = fit.max_context {
        for tree in trees.iter_mut() {
            cap_tree(tree, cap, &mut report);
        }
    }
    report.largest_prompt_after = largest(&trees);
    report
}

/// `round(x * factor)`, at least 1 when `x > 0`, within `u32`.
fn scale_count(x: u32, factor: f64) -> u32 {
    if x == 0 {
        return 0;
    }
    let scaled = (f64::from(x) * factor).round();
    if scaled >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        (scaled as u32).max(1)
    }
}

/// The old block position new block `j` reaches: `floor(j / factor)`.
fn source(j: u64, factor: f64) -> u64 {
    let p = (j as f64 / factor).floor();
    if p >= u64::MAX as f64 {
        u64::MAX
    } else {
        p as u64
    }
}

/// New block ids, numbered from 1 in order of first appearance, keyed by
/// (the previous new id, or 0 for the first block; the old ids covered).
#[derive(Debug, Default)]
struct Interner {
    ids: BTreeMap<(u32, Vec<u32>), u32>,
}

impl Interner {
    fn id(&mut self, parent: u32, covered: Vec<u32>) -> u32 {
        let next = u32::try_from(self.ids.len() + 1).unwrap_or(u32::MAX);
        *self.ids.entry((parent, covered)).or_insert(next)
    }

    /// `ids` scaled by `factor` (see the module doc).
    fn scale(&mut self, ids: &BlockIds, factor: f64) -> BlockIds {
        let old = ids.to_vec();
        let m = old.len() as u64;
        let mut out = Vec::new();
        let (mut parent, mut next_old) = (0u32, 0usize);
        let mut j = 0u64;
        loop {
            let src = source(j, factor);
            if src >= m {
                break;
            }
            let upto = src as usize + 1;
            let covered = old
                .get(next_old.min(upto)..upto)
                .map(<[u32]>::to_vec)
                .unwrap_or_default();
            next_old = next_old.max(upto);
            parent = self.id(parent, covered);
            out.push(parent);
            j += 1;
        }
        BlockIds::from(out)
    }
}

fn scale_tree(tree: &mut Tree, factor: f64, interner: &mut Interner) {
    tree.tool_tokens = scale_count(tree.tool_tokens, factor);
    tree.system_tokens = scale_count(tree.system_tokens, factor);
    for agent in &mut tree.agents {
        for turn in &mut agent.turns {
            turn.isl = scale_count(turn.isl, factor);
            if !turn.hash_ids.is_empty() {
                turn.hash_ids = interner.scale(&turn.hash_ids, factor);
            }
            if let Some(text) = turn.text.as_deref_mut() {
                for message in &mut text.messages {
                    message.content = scale_text(&message.content, factor);
                }
                if let Some(response) = &mut text.response {
                    *response = scale_text(response, factor);
                }
            }
        }
    }
}

/// `text` cut or repeated to `round(len * factor)` bytes, at a character
/// boundary at or below that length.
fn scale_text(text: &str, factor: f64) -> String {
    let target = scale_count(u32::try_from(text.len()).unwrap_or(u32::MAX), factor) as usize;
    let mut out = String::with_capacity(target);
    while out.len() + text.len() <= target && !text.is_empty() {
        out.push_str(text);
    }
    let rest = target - out.len();
    out.push_str(&text[..char_floor(text, rest)]);
    out
}

/// The largest character boundary of `text` at or below `at`.
fn char_floor(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn cap_tree(tree: &mut Tree, cap: u32, report: &mut FitReport) {
    let block = if tree.block_size == 0 {
        crate::prompt::VIRTUAL_BLOCK_TOKENS
    } else {
        tree.block_size
    };
    let head_blocks = (tree.tool_tokens.saturating_add(tree.system_tokens) / block) as usize;
    let mut next_virtual = virtual_base(tree);
    for agent in &mut tree.agents {
        if agent.turns.iter().all(|t| t.isl <= cap) {
            continue;
        }
        make_virtual_blocks_explicit(agent, block, &mut next_virtual);
        cap_blocks(agent, block, head_blocks, cap, report);
        cap_text(agent, cap, report);
    }
}

/// The first id above every hash id of the tree.
fn virtual_base(tree: &Tree) -> u32 {
    tree.agents
        .iter()
        .flat_map(|a| a.turns.iter())
        .flat_map(|t| t.hash_ids.runs().iter())
        .map(|&(first, count)| first.saturating_add(count))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// Gives an agent's turns without ids or text explicit ids for the
/// virtual blocks the prompt builder would make (one sequence per agent),
/// so the cap can drop their oldest blocks.
fn make_virtual_blocks_explicit(agent: &mut Agent, block: u32, next: &mut u32) {
    let base = *next;
    let mut used = 0u32;
    for turn in &mut agent.turns {
        if turn.text.is_some() || !turn.hash_ids.is_empty() || turn.isl == 0 {
            continue;
        }
        let blocks = turn.isl.div_ceil(block);
        turn.hash_ids = (0..blocks).map(|i| base.saturating_add(i)).collect();
        used = used.max(blocks);
    }
    *next = base.saturating_add(used);
}

/// Tokens of the positions `from..to` of a turn of `isl` tokens in blocks
/// of `block` (the last block may be partial).
fn block_tokens(isl: u32, block: u32, from: usize, to: usize) -> u32 {
    let start = u64::from(block) * from as u64;
    let end = (u64::from(block) * to as u64).min(u64::from(isl));
    end.saturating_sub(start) as u32
}

fn cap_blocks(agent: &mut Agent, block: u32, head: usize, cap: u32, report: &mut FitReport) {
    // The previous turn's old ids and how many blocks after the head it dropped.
    let mut previous: Option<(BlockIds, usize)> = None;
    for turn in &mut agent.turns {
        if turn.text.is_some() || turn.hash_ids.is_empty() {
            continue;
        }
        let old = turn.hash_ids.clone();
        let m = old.len();
        let head = head.min(m);
        let fits = |drop: usize| turn.isl - block_tokens(turn.isl, block, head, head + drop) <= cap;
        let reused = previous.as_ref().and_then(|(ids, drop)| {
            let shared = ids.iter().zip(old.iter()).take_while(|(a, b)| a == b);
            (head + drop <= m && shared.count() >= head + drop && fits(*drop)).then_some(*drop)
        });
        let drop = match reused {
            Some(drop) => drop,
            None if turn.isl <= cap => 0,
            None => (0..=m - head).find(|&d| fits(d)).unwrap_or(m - head),
        };
        let isl = (turn.isl - block_tokens(turn.isl, block, head, head + drop)).min(cap);
        if drop > 0 {
            let ids = old.to_vec();
            turn.hash_ids = ids[..head]
                .iter()
                .chain(&ids[head + drop..])
                .copied()
                .collect();
        }
        if isl < turn.isl {
            report.turns_capped += 1;
            report.tokens_dropped += u64::from(turn.isl - isl);
            turn.isl = isl;
        }
        previous = Some((old, drop));
    }
}

fn cap_text(agent: &mut Agent, cap: u32, report: &mut FitReport) {
    // Tokens the previous turn's prompt lost: a turn extending it loses them too.
    let mut lost = 0u32;
    for i in 0..agent.turns.len() {
        let Some(text) = agent.turns[i].text.as_deref() else {
            lost = 0;
            continue;
        };
        let recorded = agent.turns[i].isl;
        let mut isl = if text.extends_previous {
            recorded.saturating_sub(lost).max(1)
        } else {
            recorded
        };
        if isl > cap {
            let messages: Vec<Message> = crate::content::prompt_messages(agent, i)
                .into_iter()
                .map(|m| m.to_message())
                .collect();
            let kept = drop_oldest(messages, isl, cap);
            if let Some(text) = agent.turns[i].text.as_deref_mut() {
                text.extends_previous = false;
                text.messages = kept;
            }
            isl = cap;
        }
        lost = recorded - isl;
        if isl < recorded {
            report.turns_capped += 1;
            report.tokens_dropped += u64::from(lost);
            agent.turns[i].isl = isl;
        }
    }
}

/// `messages` (a prompt of `isl` tokens) without its oldest non-system
/// content, so it is at most `cap` tokens: whole messages first, then the
/// front of the oldest kept one; system messages are cut at their end only
/// when they alone exceed the cap. A message's tokens are its share of
/// `isl` by bytes (its text's, and its tool calls' names and arguments).
/// A message dropped whole takes its tool calls with it; a tool result
/// whose call was dropped is kept as plain tool text (sent as a user
/// message: an API refuses a tool message without its call).
fn drop_oldest(mut messages: Vec<Message>, isl: u32, cap: u32) -> Vec<Message> {
    let bytes: usize = messages.iter().map(message_bytes).sum();
    if bytes == 0 || isl <= cap {
        return messages;
    }
    // Bytes to drop: the excess tokens' share of the bytes, rounded up.
    let excess = u64::from(isl - cap);
    let mut to_drop = (excess * bytes as u64).div_ceil(u64::from(isl)) as usize;
    for message in messages.iter_mut().filter(|m| m.role != Role::System) {
        if to_drop == 0 {
            break;
        }
        let whole = message_bytes(message);
        if to_drop >= whole {
            to_drop -= whole;
            message.content.clear();
            message.tool = None;
            continue;
        }
        let cut = char_ceil(&message.content, to_drop);
        to_drop -= cut.min(to_drop);
        message.content.drain(..cut);
        if to_drop > 0 {
            // The text is gone and part of the calls' share is left.
            to_drop = to_drop.saturating_sub(whole - cut);
            message.tool = None;
        }
    }
    if to_drop > 0 {
        for message in messages.iter_mut().rev() {
            let keep = char_floor(
                &message.content,
                message.content.len().saturating_sub(to_drop),
            );
            to_drop -= (message.content.len() - keep).min(to_drop);
            message.content.truncate(keep);
        }
    }
    messages.retain(|m| !m.content.is_empty() || m.tool.is_some());
    let calls: std::collections::BTreeSet<String> = messages
        .iter()
        .flat_map(|m| m.calls().iter().map(|c| c.id.clone()))
        .collect();
    for message in &mut messages {
        if message
            .result()
            .is_some_and(|r| !calls.contains(&r.call_id))
        {
            message.tool = None;
        }
    }
    messages.retain(|m| !m.content.is_empty() || m.tool.is_some());
    messages
}

/// A message's bytes for its share of a prompt's tokens: its text and its
/// tool calls' names and arguments.
fn message_bytes(message: &Message) -> usize {
    message.content.len()
        + message
            .calls()
            .iter()
            .map(|c| c.name.len() + c.arguments.len())
            .sum::<usize>()
}

/// The smallest character boundary of `text` at or above `at`.
fn char_ceil(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::prompt_messages;
    use crate::model::{AgentKind, BlockIds, Turn};

    fn text_turn(isl: u32, extends: bool, messages: &[(Role, &str)]) -> Turn {
        Turn {
            isl,
            text: Some(Box::new(crate::model::TurnText {
                extends_previous: extends,
                messages: messages
                    .iter()
                    .map(|(role, content)| Message::text(*role, content.to_string()))
                    .collect(),
                response: Some("ok".repeat(4)),
                ..Default::default()
            })),
            ..Turn::default()
        }
    }

    fn one_agent(turns: Vec<Turn>) -> Workload {
        Workload {
            trees: vec![Tree {
                id: "t".into(),
                agents: vec![Agent {
                    id: "root".into(),
                    parent: None,
                    kind: AgentKind::Root,
                    recorded_end: None,
                    turns,
                }],
                ..Tree::default()
            }],
        }
    }

    /// Turns of `isl` tokens with no ids and no text (virtual blocks).
    fn plain_turns(isls: &[u32]) -> Vec<Turn> {
        isls.iter()
            .map(|&isl| Turn {
                isl,
                ..Turn::default()
            })
            .collect()
    }

    #[test]
    fn nothing_changes_without_settings() {
        // Hash ids in a root and a child, recorded text, virtual blocks.
        let mut w = one_agent(plain_turns(&[600, 900]));
        let mut hashed = w.trees[0].clone();
        hashed.id = "h".into();
        hashed.block_size = 64;
        for (k, turn) in hashed.agents[0].turns.iter_mut().enumerate() {
            turn.hash_ids = BlockIds::from((1..=(9 + 5 * k as u32)).collect::<Vec<u32>>());
        }
        let mut child = hashed.agents[0].clone();
        child.id = "child".into();
        child.parent = Some(0);
        child.kind = AgentKind::Blocking;
        hashed.agents.push(child);
        w.trees.push(hashed);
        w.trees
            .extend(one_agent(vec![text_turn(10, false, &[(Role::User, "hello there")])]).trees);
        let mut same = w.clone();
        let report = apply(&mut same, &Fit::default());
        assert_eq!(same, w);
        assert_eq!((report.turns_capped, report.tokens_dropped), (0, 0));
    }

    #[test]
    fn text_scales_by_characters_and_keeps_extending() {
        assert_eq!(scale_text("abcd", 0.5), "ab");
        assert_eq!(scale_text("abc", 2.0), "abcabc");
        assert_eq!(scale_text("éé", 0.75), "é");
        let mut w = one_agent(vec![
            text_turn(10, false, &[(Role::User, "hello there")]),
            text_turn(20, true, &[(Role::User, "and more")]),
        ]);
        apply(
            &mut w,
            &Fit {
                isl_scale: Some(0.5),
                max_context: None,
            },
        );
        let agent = &w.trees[0].agents[0];
        assert_eq!(agent.turns[0].isl, 5);
        assert_eq!(prompt_messages(agent, 1)[0].content, "hello ");
        assert_eq!(prompt_messages(agent, 1).len(), 3);
    }

    #[test]
    fn capped_text_drops_the_oldest_messages_and_the_next_turn_extends_it() {
        let long = "x".repeat(400);
        let mut w = one_agent(vec![
            text_turn(100, false, &[(Role::System, "sys"), (Role::User, &long)]),
            text_turn(300, true, &[(Role::User, &"y".repeat(400))]),
            text_turn(290, true, &[(Role::User, "zzzzzzzz")]),
        ]);
        let report = apply(
            &mut w,
            &Fit {
                isl_scale: None,
                max_context: Some(150),
            },
        );
        let agent = &w.trees[0].agents[0];
        assert!(
            agent.turns.iter().all(|t| t.isl <= 150),
            "{:?}",
            agent.turns
        );
        let capped = prompt_messages(agent, 1);
        assert_eq!(capped[0].content, "sys", "the head stays");
        assert!(
            capped.iter().all(|m| !m.content.contains('x')),
            "{capped:?}"
        );
        assert!(
            capped.last().unwrap().content.ends_with('y'),
            "the newest stays"
        );
        let next = prompt_messages(agent, 2);
        assert!(
            next.starts_with(&capped) || report.turns_capped == 3,
            "{next:?}"
        );
        assert!(report.turns_capped >= 1 && report.tokens_dropped > 0);
    }

    #[test]
    fn virtual_blocks_lose_their_oldest_blocks_under_the_cap() {
        let mut w = one_agent(plain_turns(&[600, 1010, 1325, 1790, 2203]));
        assert!(largest_prompt(&w) > 700);
        let original = w.clone();
        let report = apply(
            &mut w,
            &Fit {
                isl_scale: None,
                max_context: Some(700),
            },
        );
        assert!(report.largest_prompt_after <= 700 && report.turns_capped > 0);
        let turns = &w.trees[0].agents[0].turns;
        let before = &original.trees[0].agents[0].turns;
        for (t, b) in turns.iter().zip(before) {
            assert!(t.isl <= 700 && !t.hash_ids.is_empty());
            // Whole blocks go: what is left keeps its partial newest block.
            assert_eq!((b.isl - t.isl) % 64, 0, "{} -> {}", b.isl, t.isl);
        }
    }
}
