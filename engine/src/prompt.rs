//! What is sent for a turn: recorded messages, or text synthesized from
//! hash block ids (docs/synthetic.md and docs/formats.md).
//!
//! Owns the deterministic text of a block: equal (scope, block id) give
//! byte-identical text, so equal prefixes of ids give byte-identical
//! prompt prefixes and a server's prefix cache sees what the recording saw.
//! Different trees never share blocks unless the format's ids are global.
//!
//! A block of `n` tokens is `n` words drawn from a fixed list of short
//! common English words, each with a leading space: one token per word in
//! the BPE tokenizers of current models, so a synthesized prompt has about
//! the recorded number of tokens. (`--tokenizer` makes it exact; see
//! `arbor run`.) Turns without hash ids and without text get virtual ids:
//! blocks numbered per agent, so an agent's conversation grows as a prefix,
//! as it would have.
//!
//! [`build`] gives the text as a `String`; [`write_synthesized`] writes the
//! same bytes straight into a request body (the fast writer is `words`).

use crate::content::{fnv1a, recorded_prompt, Recorded, FNV_OFFSET};
use crate::model::{HashScope, Role, Tree};

mod words;

/// Tokens per virtual block when a turn has neither ids nor text.
pub const VIRTUAL_BLOCK_TOKENS: u32 = 64;

/// The words synthesized text is made of: short common English words with a
/// leading space, each one token in the BPE tokenizers of current models.
pub const VOCABULARY: [&str; 128] = [
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with",
    " be", " by", " on", " not", " he", " this", " are", " or", " his", " from", " at", " which",
    " but", " have", " an", " had", " they", " you", " were", " their", " one", " all", " we",
    " can", " her", " has", " there", " been", " if", " more", " when", " will", " would", " who",
    " so", " no", " out", " up", " into", " than", " them", " only", " time", " some", " new",
    " could", " these", " two", " may", " first", " then", " do", " any", " like", " my", " now",
    " over", " such", " our", " man", " me", " even", " most", " made", " after", " also", " did",
    " many", " before", " must", " through", " back", " years", " where", " much", " your", " way",
    " well", " down", " should", " because", " each", " just", " those", " people", " how", " too",
    " little", " state", " good", " very", " make", " world", " still", " own", " see", " men",
    " work", " long", " get", " here", " between", " both", " life", " being", " under", " never",
    " day", " same", " another", " know", " while", " last", " might", " great", " old",
];

/// SplitMix64's increment: its state moves by this much a draw.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64 step.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(GOLDEN_GAMMA);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Appends `words` words of the block identified by `seed` to `out`.
fn push_words(seed: u64, words: u32, out: &mut String) {
    piece_words(seed, words, |word| {
        out.push_str(VOCABULARY[usize::from(word)])
    });
}

/// Calls `f` with the index in [`VOCABULARY`] of each of the `words` words
/// of the piece `seed` of [`for_each_piece`], in order: the words of its
/// text, without the text (the server model's prefix keys hash them,
/// `arbor_sim::server::keys`). Every index is below 128.
pub fn piece_words(seed: u64, words: u32, f: impl FnMut(u8)) {
    piece_words_from(seed, words, 0, f);
}

/// Words a draw of a piece's stream serves (seven bits each).
const WORDS_PER_DRAW: u32 = 9;

/// As [`piece_words`], from word `skip` of the piece on (nothing when
/// `skip >= words`): the words a piece of `words` words has after the
/// first `skip`, so a longer piece of the same seed continues a shorter
/// one. Whole draws skipped cost nothing (the stream's state moves by a
/// constant a draw).
pub fn piece_words_from(seed: u64, words: u32, skip: u32, mut f: impl FnMut(u8)) {
    let skip = skip.min(words);
    let mut state = seed.wrapping_add(u64::from(skip / WORDS_PER_DRAW).wrapping_mul(GOLDEN_GAMMA));
    let mut left = words - skip;
    // Words of the first draw already taken.
    let mut taken = skip % WORDS_PER_DRAW;
    while left > 0 {
        // Seven bits pick a word; one draw serves nine words.
        let mut bits = next(&mut state) >> (7 * taken);
        let take = left.min(WORDS_PER_DRAW - taken);
        for _ in 0..take {
            f((bits & 127) as u8);
            bits >>= 7;
        }
        left -= take;
        taken = 0;
    }
}

/// Where block ids live: per tree (local) or shared (global).
pub fn block_scope(tree: &Tree) -> u64 {
    match tree.hash_scope {
        HashScope::Global => FNV_OFFSET,
        HashScope::Local => fnv1a(FNV_OFFSET, tree.id.as_bytes()),
    }
}

/// Text of block `id` in `scope`, `tokens` long.
pub fn push_block(scope: u64, id: u32, tokens: u32, out: &mut String) {
    push_words(fnv1a(scope, &id.to_le_bytes()), tokens, out);
}

/// The messages to send for one turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt<'a> {
    /// Recorded messages (and the request fields sent with them), sent
    /// as recorded.
    Recorded(Recorded<'a>),
    /// Synthesized text, sent as one user message.
    Synthesized(String),
}

/// Builds the prompt of turn `turn` of agent `agent` of `tree`.
///
/// Hash ids: the blocks' text in order, the last block cut (or a tail
/// added) so the prompt has `isl` words. No ids: virtual per-agent blocks
/// of [`VIRTUAL_BLOCK_TOKENS`]. Text: the recorded messages.
pub fn build(tree: &Tree, agent: usize, turn: usize) -> Prompt<'_> {
    let Some(a) = tree.agents.get(agent) else {
        return Prompt::Synthesized(String::new());
    };
    let Some(t) = a.turns.get(turn) else {
        return Prompt::Synthesized(String::new());
    };
    if t.text.is_some() {
        return Prompt::Recorded(recorded_prompt(tree, agent, turn));
    }
    let mut out = String::with_capacity(t.isl as usize * 6);
    for_each_piece(tree, agent, turn, |seed, words| {
        push_words(seed, words, &mut out)
    });
    Prompt::Synthesized(out)
}

/// The pieces of the synthesized text of turn `turn` of agent `agent`, in
/// order: `f(seed, words)` for each; equal seeds give equal text. Returns
/// false, calling nothing, when the turn has recorded text (sent as
/// recorded, see [`build`]). The server model's prefix keys walk the same
/// pieces (`arbor_sim::server::keys`).
pub fn for_each_piece(tree: &Tree, agent: usize, turn: usize, mut f: impl FnMut(u64, u32)) -> bool {
    let Some(a) = tree.agents.get(agent) else {
        return true;
    };
    let Some(t) = a.turns.get(turn) else {
        return true;
    };
    if t.text.is_some() {
        return false;
    }
    let mut remaining = t.isl;
    let scope = block_scope(tree);
    if !t.hash_ids.is_empty() {
        let block = if tree.block_size == 0 {
            64
        } else {
            tree.block_size
        };
        for id in t.hash_ids.iter() {
            if remaining == 0 {
                break;
            }
            let words = block.min(remaining);
            f(fnv1a(scope, &id.to_le_bytes()), words);
            remaining -= words;
        }
        // Tokens past the last full block: unique to this turn.
        if remaining > 0 {
            f(
                fnv1a(fnv1a(scope, a.id.as_bytes()), &(turn as u64).to_le_bytes()),
                remaining,
            );
        }
    } else {
        let agent_scope = fnv1a(scope, a.id.as_bytes());
        let mut id = 0u32;
        while remaining > 0 {
            let words = VIRTUAL_BLOCK_TOKENS.min(remaining);
            f(fnv1a(agent_scope, &id.to_le_bytes()), words);
            remaining -= words;
            id = id.wrapping_add(1);
        }
    }
    true
}

/// Room [`write_synthesized`] needs for the text of a turn: at least its
/// length (eight bytes a word). `None` when the turn has recorded text.
pub fn synthesized_room(tree: &Tree, agent: usize, turn: usize) -> Option<usize> {
    match tree.agents.get(agent).and_then(|a| a.turns.get(turn)) {
        None => Some(0),
        Some(t) if t.text.is_some() => None,
        // The pieces of a turn add up to `isl` words.
        Some(t) => Some(words::room(t.isl)),
    }
}

/// Appends the synthesized text of a turn to `out`: byte for byte the text
/// of [`build`]'s [`Prompt::Synthesized`], without building a `String`.
/// Returns false, writing nothing, when the turn has recorded text.
///
/// The text is plain words and spaces: it goes into JSON unescaped. It is
/// written through spare room that is then cut off: with
/// [`synthesized_room`] bytes of spare capacity, `out` is not reallocated.
pub fn write_synthesized(tree: &Tree, agent: usize, turn: usize, out: &mut Vec<u8>) -> bool {
    for_each_piece(tree, agent, turn, |seed, n| {
        words::write_words(seed, n, out)
    })
}

/// Where a run's cache-bust markers come from: its seed and a salt
/// (`--cache-bust-salt`, 0 by default). Markers repeat across runs of the
/// same seed and salt, and a server's prefix cache keeps what an earlier
/// run sent: runs that must start cold against the same server take
/// different salts (`arbor capacity` salts each live probe with its
/// number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBust {
    pub seed: u64,
    pub salt: u64,
}

impl CacheBust {
    /// The cache-bust marker of a play: `[rid:<12 hex>]` and a blank line,
    /// prepended to the first user message of every turn of the play, so
    /// no two plays share a prefix while all turns of one play do. Derived
    /// from the seed, the salt and the play's place in its lane (or its
    /// tree and copy in an open loop), never from timing: a run's markers
    /// are reproducible. Salt 0 gives the markers of the seed alone.
    pub fn marker(&self, play: &crate::scheduler::Play) -> String {
        use rand::Rng;
        let (a, b) = match play.lane {
            Some(lane) => (u64::from(lane), u64::from(play.lane_play)),
            None => (u64::from(play.tree) | 1 << 40, u64::from(play.copy)),
        };
        let mut rng = crate::rng::stream(
            self.stream_seed(),
            crate::rng::Purpose::CacheBust,
            a,
            b,
            u64::from(play.tree),
        );
        let id: u64 = rng.random();
        format!("[rid:{:012x}]\n\n", id & 0xFFFF_FFFF_FFFF)
    }

    /// The seed of the marker streams: the run's seed, moved by a salt
    /// other than 0 (an odd multiplier spreads consecutive salts apart).
    fn stream_seed(&self) -> u64 {
        if self.salt == 0 {
            self.seed
        } else {
            self.seed
                ^ self
                    .salt
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .rotate_left(29)
        }
    }
}

/// The role name sent on the wire for a message of plain text. A tool
/// message that names the call it answers is sent in the `tool` role (see
/// [`wire_role_of`]); one that does not (a format that records none, or a
/// flattened workload) is sent as a user message: the OpenAI API requires
/// a `tool_call_id` for the `tool` role.
pub fn wire_role(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User | Role::Tool => "user",
        Role::Assistant => "assistant",
    }
}

/// The role a chat body sends a message in: `tool` for a tool message
/// with the id of the call it answers, else [`wire_role`].
pub fn wire_role_of(message: &crate::content::MessageRef<'_>) -> &'static str {
    match (message.role, message.result) {
        (Role::Tool, Some(_)) => "tool",
        (role, _) => wire_role(role),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Agent, AgentKind, BlockIds, Turn};

    fn lane_play(lane: u32, k: u32, tree: u32) -> crate::scheduler::Play {
        let mut play = crate::scheduler::Play::planned(tree, 0, Some(lane), 0);
        play.lane_play = k;
        play
    }

    #[test]
    fn salt_zero_keeps_the_seeds_markers_and_other_salts_move_every_marker() {
        let bust = |seed, salt| CacheBust { seed, salt };
        // The markers runs have always sent: salt 0 must not change them.
        assert_eq!(
            bust(0, 0).marker(&lane_play(0, 0, 9)),
            "[rid:ede9a40f2360]\n\n"
        );
        let plays: Vec<_> = (0..4)
            .flat_map(|lane| (0..4).map(move |k| lane_play(lane, k, 3 * lane + k)))
            .collect();
        let markers = |b: CacheBust| plays.iter().map(|p| b.marker(p)).collect::<Vec<_>>();
        assert_eq!(markers(bust(7, 2)), markers(bust(7, 2)), "reproducible");
        let mut seen = std::collections::BTreeSet::new();
        for salt in 0..8 {
            for m in markers(bust(7, salt)) {
                assert!(seen.insert(m.clone()), "{m} repeats across plays or salts");
            }
        }
    }

    fn tree(id: &str, scope: HashScope, turns: Vec<(u32, Vec<u32>)>) -> Tree {
        Tree {
            id: id.into(),
            block_size: 4,
            hash_scope: scope,
            agents: vec![Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns: turns
                    .into_iter()
                    .map(|(isl, ids)| Turn {
                        isl,
                        hash_ids: BlockIds::from(ids),
                        ..Turn::default()
                    })
                    .collect(),
            }],
            ..Tree::default()
        }
    }

    fn text(p: Prompt<'_>) -> String {
        match p {
            Prompt::Synthesized(s) => s,
            Prompt::Recorded(_) => panic!("expected synthesized text"),
        }
    }

    #[test]
    fn equal_ids_give_equal_prefixes_and_the_recorded_length() {
        let t = tree(
            "a",
            HashScope::Local,
            vec![(8, vec![1, 2]), (14, vec![1, 2, 3])],
        );
        let first = text(build(&t, 0, 0));
        let second = text(build(&t, 0, 1));
        assert!(second.starts_with(&first));
        assert_eq!(first.split(' ').count() - 1, 8);
        // 3 blocks of 4 = 12 words, plus a 2-word tail.
        assert_eq!(second.split(' ').count() - 1, 14);
    }

    #[test]
    fn local_ids_differ_across_trees_and_global_ids_do_not() {
        let a = text(build(
            &tree("a", HashScope::Local, vec![(4, vec![1])]),
            0,
            0,
        ));
        let b = text(build(
            &tree("b", HashScope::Local, vec![(4, vec![1])]),
            0,
            0,
        ));
        assert_ne!(a, b);
        let a = text(build(
            &tree("a", HashScope::Global, vec![(4, vec![1])]),
            0,
            0,
        ));
        let b = text(build(
            &tree("b", HashScope::Global, vec![(4, vec![1])]),
            0,
            0,
        ));
        assert_eq!(a, b);
    }

    #[test]
    fn turns_without_ids_grow_as_a_prefix_within_an_agent() {
        let t = &tree(
            "v",
            HashScope::Local,
            vec![(150, vec![]), (230, vec![]), (300, vec![])],
        );
        let first = text(build(t, 0, 0));
        let second = text(build(t, 0, 1));
        let full =
            (t.agents[0].turns[0].isl / VIRTUAL_BLOCK_TOKENS * VIRTUAL_BLOCK_TOKENS) as usize;
        let prefix: Vec<&str> = first.split(' ').skip(1).take(full).collect();
        let again: Vec<&str> = second.split(' ').skip(1).take(full).collect();
        assert_eq!(prefix, again);
        assert_eq!(
            first.split(' ').count() - 1,
            t.agents[0].turns[0].isl as usize
        );
    }

    #[test]
    fn written_text_is_the_built_text_without_reallocating() {
        // Hash ids with a tail past the last block (turn 0) and with the
        // last block cut (turn 1), a child agent sharing its parent's first
        // blocks, virtual ids, and recorded text.
        let mut hashed = tree(
            "h",
            HashScope::Local,
            vec![(300, (1..=3).collect()), (390, (1..=7).collect())],
        );
        hashed.block_size = 64;
        let mut child = hashed.agents[0].clone();
        child.id = "child".into();
        child.parent = Some(0);
        child.kind = AgentKind::Blocking;
        child.turns[1].hash_ids = BlockIds::from((1..=3).chain(90..=95).collect::<Vec<u32>>());
        hashed.agents.push(child);
        let virtual_ids = tree(
            "v",
            HashScope::Global,
            vec![(70, vec![]), (200, vec![]), (64, vec![])],
        );
        let mut recorded = tree("r", HashScope::Local, vec![(10, vec![1]), (12, vec![])]);
        recorded.agents[0].turns[0].text = Some(Box::default());
        for t in [&hashed, &virtual_ids, &recorded] {
            for (a, agent) in t.agents.iter().enumerate() {
                for turn in 0..=agent.turns.len() {
                    let room = synthesized_room(t, a, turn);
                    let mut out = Vec::with_capacity(room.unwrap_or(0));
                    let capacity = out.capacity();
                    let written = write_synthesized(t, a, turn, &mut out);
                    match build(t, a, turn) {
                        Prompt::Synthesized(text) => {
                            assert!(written && room.is_some());
                            assert_eq!(out, text.as_bytes());
                            assert_eq!(out.capacity(), capacity, "no reallocation");
                        }
                        Prompt::Recorded(_) => {
                            assert!(!written && room.is_none() && out.is_empty());
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_pieces_words_from_a_skip_are_the_tail_of_its_words() {
        for seed in [0, 7, u64::MAX] {
            for words in [0, 1, 8, 9, 10, 27, 40] {
                let mut all = Vec::new();
                piece_words(seed, words, |w| all.push(w));
                assert_eq!(all.len(), words as usize);
                for skip in 0..=words + 2 {
                    let mut tail = Vec::new();
                    piece_words_from(seed, words, skip, |w| tail.push(w));
                    let from = (skip as usize).min(all.len());
                    assert_eq!(tail, all[from..], "seed {seed} words {words} skip {skip}");
                }
                // A longer piece of the same seed continues a shorter one.
                let mut longer = Vec::new();
                piece_words(seed, words + 5, |w| longer.push(w));
                assert_eq!(longer[..all.len()], all[..]);
            }
        }
    }

    #[test]
    fn block_text_is_stable() {
        // A change here changes what every run sends: do it on purpose.
        let mut out = String::new();
        push_block(FNV_OFFSET, 7, 5, &mut out);
        assert_eq!(out.split(' ').count() - 1, 5);
        let mut again = String::new();
        push_block(FNV_OFFSET, 7, 5, &mut again);
        assert_eq!(out, again);
    }
}
