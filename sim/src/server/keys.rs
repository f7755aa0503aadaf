//! Prefix block keys of a prompt, in the model's blocks: one key function
//! over the prompt's text, which the emulator runs on the body it
//! received and the plan runs on the text the live client would send.
//!
//! [`TextKeys`] takes a prompt in order: framing bytes ([`TextKeys::frame`]:
//! a chat message's role and separators, which name a block but hold no
//! token) and text ([`TextKeys::text`]), cut into tokens by arbor's
//! estimate (`crate::token_rule`: a vocabulary word is one token, other
//! bytes four to a token, packed across the whole prompt as the
//! emulator's count packs them). Every `block_size` tokens close a block.
//! Its content hash runs over what arrived in it, in order: a framing or
//! other byte is one FNV-1a 64 step on the byte, a vocabulary word is one
//! multiply step on its index in `arbor_engine::prompt::VOCABULARY` (not
//! on its bytes: one step a token). Its key mixes the previous key (0
//! before the first) with that content hash (SplitMix64's finalizer). So
//! a key names the whole prefix up to its block, and a trailing partial
//! block has no key.
//!
//! The emulator under `--profile` feeds a chat body as `role` `\n`
//! content `\n` per message (`emulator/request.rs`); its scan finds each
//! word's index as it looks the word up. [`PromptKeys`] feeds the same
//! for a turn of a workload, as `arbor run` sends it with the chat API:
//! the recorded prompt as `arbor_engine::shape::walk` gives it (the tool
//! definitions, then the messages: wire roles, the cache-bust marker
//! before the first user message's content, tool calls after the
//! content), or one user message of the marker and
//! the synthesized text. Synthesized text is not built: its pieces
//! (`arbor_engine::prompt::for_each_piece`) are vocabulary words only, and
//! `arbor_engine::prompt::piece_words` gives their indices straight from
//! each piece's seeded word stream. `proptests`' `prefix_keys` property
//! checks that this gives the keys of the live body exactly.
//!
//! An agent's turn mostly extends its previous turn's prompt (the same
//! leading pieces, the last one perhaps longer: a piece of the same seed
//! draws the same words). [`PromptKeys::next_turn`] takes the previous
//! turn's keys (same marker, same block size) and keeps those of the
//! blocks wholly inside the shared leading tokens (the marker's and the
//! shared words'), provided they end past the marker's bytes; it resumes
//! [`TextKeys`] at that block boundary and feeds only the words after it
//! (`arbor_engine::prompt::piece_words_from` skips the words before). The
//! keys are [`PromptKeys::turn`]'s exactly; a turn with recorded text, or
//! after one, is keyed whole.
//!
//! Must not: know about the scheduler. What is kept between prompts is
//! the caller's: [`PromptKeys`] keeps only scratch piece lists (no
//! allocation per turn once warm); the previous turn's keys are kept by
//! whoever walks an agent's turns in order (`WorkloadKeys::new`, and per
//! live agent of a play `arbor_backends`' `agent_keys` for the virtual
//! replay).

use arbor_engine::content::{fnv1a, recorded_prompt, FNV_OFFSET};
use arbor_engine::model::{Role, Tree};
use arbor_engine::prompt::{for_each_piece, piece_words, piece_words_from, wire_role};
use arbor_engine::shape::{walk, Pieces};

use crate::token_rule::{scan, Run, OTHER_BYTES_PER_TOKEN};

/// The odd multiplier of a word's step in a block's content hash (the
/// golden ratio in 64 bits: not FNV's prime, so a word and a byte of
/// equal value step apart).
const WORD_MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

/// A prompt's text in, chained block keys out (see the module doc).
#[derive(Debug, Clone)]
pub struct TextKeys {
    block_size: u32,
    /// The last full block's key (0 before the first).
    prev: u64,
    /// The content hash of the block being filled.
    content: u64,
    /// Tokens in the block being filled.
    filled: u32,
    /// Other bytes of a token not yet complete.
    pending: u32,
    tokens: u64,
    keys: Vec<u64>,
}

impl TextKeys {
    /// Keys of `block_size`-token blocks (0 counts as 1).
    pub fn new(block_size: u32) -> TextKeys {
        TextKeys::with_buffer(block_size, Vec::new())
    }

    /// As [`TextKeys::new`], writing the keys into `buffer` (cleared).
    pub fn with_buffer(block_size: u32, mut buffer: Vec<u64>) -> TextKeys {
        buffer.clear();
        TextKeys {
            block_size: block_size.max(1),
            prev: 0,
            content: FNV_OFFSET,
            filled: 0,
            pending: 0,
            tokens: 0,
            keys: buffer,
        }
    }

    /// The state after the full blocks `keys` of a prompt whose other
    /// bytes left `pending` of a token incomplete: the next token opens
    /// block `keys.len()`. Writes into `buffer` (cleared).
    fn resumed(block_size: u32, keys: &[u64], pending: u32, buffer: Vec<u64>) -> TextKeys {
        let mut resumed = TextKeys::with_buffer(block_size, buffer);
        resumed.keys.extend_from_slice(keys);
        resumed.prev = keys.last().copied().unwrap_or(0);
        resumed.pending = pending;
        resumed.tokens = keys.len() as u64 * u64::from(resumed.block_size);
        resumed
    }

    /// Bytes that name the block they fall in but hold no token (a role,
    /// a separator).
    pub fn frame(&mut self, bytes: &[u8]) {
        self.content = fnv1a(self.content, bytes);
    }

    /// Text, cut into tokens by the estimate.
    pub fn text(&mut self, text: &str) {
        scan(text.as_bytes(), |run| match run {
            Run::Word { index, .. } => self.word(index),
            Run::Other(bytes) => self.other(bytes),
        });
    }

    /// The vocabulary word of index `index`: one token, one step.
    fn word(&mut self, index: u8) {
        self.content = (self.content ^ u64::from(index)).wrapping_mul(WORD_MULTIPLIER);
        self.advance();
    }

    /// Bytes counted as other text, four to a token (a completion
    /// prompt's token ids, four bytes each).
    pub fn other(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let take = ((OTHER_BYTES_PER_TOKEN - self.pending) as usize).min(bytes.len());
            self.content = fnv1a(self.content, &bytes[..take]);
            self.pending += take as u32;
            bytes = &bytes[take..];
            if self.pending == OTHER_BYTES_PER_TOKEN {
                self.pending = 0;
                self.advance();
            }
        }
    }

    /// A token joined the block being filled, its bytes hashed already.
    fn advance(&mut self) {
        self.filled += 1;
        self.tokens += 1;
        if self.filled == self.block_size {
            let key = chain(self.prev, self.content);
            self.keys.push(key);
            self.prev = key;
            self.content = FNV_OFFSET;
            self.filled = 0;
        }
    }

    /// Tokens so far, a trailing partial token of other bytes included
    /// (the emulator's `usage.prompt_tokens` without a tokenizer).
    pub fn tokens(&self) -> u64 {
        self.tokens + u64::from(self.pending > 0)
    }

    /// The keys of the full blocks so far.
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// The keys of the full blocks.
    pub fn finish(self) -> Vec<u64> {
        self.keys
    }
}

/// A block's key from the previous block's key and its own content hash:
/// the two combined, then SplitMix64's finalizer (a bijection), so every
/// bit of both reaches every bit of the key.
fn chain(prev: u64, content: u64) -> u64 {
    let mut z = prev.wrapping_mul(WORD_MULTIPLIER) ^ content;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The plan side: block keys of a workload's turns as the live client
/// sends them (see the module doc).
#[derive(Debug, Clone)]
pub struct PromptKeys {
    block_size: u32,
    /// The pieces (seed, words) of the previous turn and of this one in
    /// [`PromptKeys::next_turn`]: buffers kept warm, no allocation per
    /// turn.
    previous: Vec<(u64, u32)>,
    current: Vec<(u64, u32)>,
}

impl PromptKeys {
    /// Keys of `block_size`-token blocks (0 counts as 1).
    pub fn new(block_size: u32) -> PromptKeys {
        PromptKeys {
            block_size: block_size.max(1),
            previous: Vec::new(),
            current: Vec::new(),
        }
    }

    /// Sets `out` to the keys of the full blocks of the prompt of turn
    /// `turn` of agent `agent` of `tree`, as a chat body carries it with
    /// the cache-bust `marker` (None: no marker). Returns the prompt's
    /// tokens by the estimate (`TextKeys::tokens`). Nothing for a turn
    /// out of range.
    pub fn turn(
        &self,
        tree: &Tree,
        agent: usize,
        turn: usize,
        marker: Option<&str>,
        out: &mut Vec<u64>,
    ) -> u64 {
        let mut keys = TextKeys::with_buffer(self.block_size, std::mem::take(out));
        if let Some(a) = tree.agents.get(agent).filter(|a| turn < a.turns.len()) {
            if a.turns[turn].text.is_some() {
                walk(&recorded_prompt(tree, agent, turn), marker, &mut keys);
            } else {
                keys.frame(wire_role(Role::User).as_bytes());
                keys.frame(b"\n");
                if let Some(marker) = marker {
                    keys.text(marker);
                }
                for_each_piece(tree, agent, turn, |seed, words| {
                    piece_words(seed, words, |word| keys.word(word))
                });
                keys.frame(b"\n");
            }
        }
        let tokens = keys.tokens();
        *out = keys.finish();
        tokens
    }

    /// As [`PromptKeys::turn`] (the same keys and tokens), given
    /// `previous`: the keys [`PromptKeys::turn`] gives, in this block
    /// size and with the same `marker`, for turn `turn - 1` of the same
    /// agent. When both turns are synthesized, the blocks wholly inside
    /// their shared leading text (the marker and the words of their
    /// common leading pieces) are `previous`' first keys, and only the
    /// words after them are hashed; otherwise (recorded text, no shared
    /// full block past the marker, turn 0) the keys are computed whole.
    pub fn next_turn(
        &mut self,
        tree: &Tree,
        agent: usize,
        turn: usize,
        marker: Option<&str>,
        previous: &[u64],
        out: &mut Vec<u64>,
    ) -> u64 {
        let (marker_done, pending) = marker_state(marker);
        let Some(shared) = self.shared_words(tree, agent, turn) else {
            return self.turn(tree, agent, turn, marker, out);
        };
        // Full blocks of the shared tokens, not past what `previous` has.
        let block = u64::from(self.block_size);
        let full = ((marker_done + shared) / block).min(previous.len() as u64);
        let marker_all = marker_done + u64::from(pending > 0);
        if full == 0 || full * block < marker_all {
            return self.turn(tree, agent, turn, marker, out);
        }
        let mut keys = TextKeys::resumed(
            self.block_size,
            &previous[..full as usize],
            pending,
            std::mem::take(out),
        );
        // Words already in the resumed blocks.
        let mut skip = full * block - marker_done;
        for &(seed, words) in &self.current {
            if skip >= u64::from(words) {
                skip -= u64::from(words);
                continue;
            }
            piece_words_from(seed, words, skip as u32, |word| keys.word(word));
            skip = 0;
        }
        keys.frame(b"\n");
        let tokens = keys.tokens();
        *out = keys.finish();
        tokens
    }

    /// Words of the synthesized text of turn `turn` that the previous
    /// turn of the agent starts with too, by their pieces (a piece of the
    /// same seed draws the same words, so a longer one extends a shorter
    /// one); the turn's pieces left in `self.current`. None when either
    /// turn has recorded text, for turn 0 and for a turn out of range.
    fn shared_words(&mut self, tree: &Tree, agent: usize, turn: usize) -> Option<u64> {
        let before = turn.checked_sub(1)?;
        tree.agents.get(agent).filter(|a| turn < a.turns.len())?;
        let (previous, current) = (&mut self.previous, &mut self.current);
        previous.clear();
        current.clear();
        let synthesized =
            for_each_piece(tree, agent, before, |seed, words| {
                previous.push((seed, words))
            }) && for_each_piece(tree, agent, turn, |seed, words| current.push((seed, words)));
        if !synthesized {
            return None;
        }
        let mut shared = 0;
        for (&(was, had), &(seed, words)) in previous.iter().zip(current.iter()) {
            if was != seed {
                break;
            }
            shared += u64::from(had.min(words));
            if had != words {
                break;
            }
        }
        Some(shared)
    }
}

/// The plan's walk of a recorded prompt (`arbor_engine::shape::walk`:
/// tools, then each message's wire role, content and tool calls) keyed
/// as the emulator keys the body.
impl Pieces for TextKeys {
    fn frame(&mut self, bytes: &[u8]) {
        TextKeys::frame(self, bytes);
    }

    fn text(&mut self, text: &str) {
        TextKeys::text(self, text);
    }
}

/// Tokens a cache-bust marker adds to a prompt by the estimate. arbor's
/// marker is 20 bytes of other text: five tokens, whatever follows it.
pub fn marker_tokens(marker: &str) -> u32 {
    let (done, pending) = marker_state(Some(marker));
    (done + u64::from(pending > 0)).min(u64::from(u32::MAX)) as u32
}

/// The tokens a marker completes and the other bytes it leaves pending
/// (of a token the words after it do not complete).
fn marker_state(marker: Option<&str>) -> (u64, u32) {
    // No block closes: no key is pushed, nothing allocated.
    let mut keys = TextKeys::new(u32::MAX);
    if let Some(marker) = marker {
        keys.text(marker);
    }
    (keys.tokens, keys.pending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::model::{Agent, AgentKind, BlockIds, HashScope, Message, Turn, TurnText};
    use arbor_engine::prompt::{build, Prompt};

    fn keys_of_text(block_size: u32, text: &str) -> Vec<u64> {
        let mut keys = TextKeys::new(block_size);
        keys.frame(b"user\n");
        keys.text(text);
        keys.frame(b"\n");
        keys.finish()
    }

    fn tree(turns: Vec<Turn>) -> Tree {
        Tree {
            id: "t".into(),
            block_size: 8,
            hash_scope: HashScope::Local,
            agents: vec![Agent {
                id: "root".into(),
                parent: None,
                kind: AgentKind::Root,
                recorded_end: None,
                turns,
            }],
            ..Tree::default()
        }
    }

    #[test]
    fn synthesized_turns_key_as_their_text_does() {
        let t = tree(vec![
            Turn {
                isl: 37,
                hash_ids: BlockIds::from(vec![1, 2, 3, 4, 5]),
                ..Turn::default()
            },
            Turn {
                isl: 45,
                hash_ids: BlockIds::from(vec![1, 2, 3, 4, 5, 6]),
                ..Turn::default()
            },
            Turn {
                isl: 70,
                ..Turn::default()
            },
        ]);
        let prompt = PromptKeys::new(5);
        let mut out = Vec::new();
        for marker in [None, Some("[rid:0123456789ab]\n\n"), Some("odd")] {
            for turn in 0..3 {
                let Prompt::Synthesized(text) = build(&t, 0, turn) else {
                    panic!("synthesized");
                };
                let marked = format!("{}{text}", marker.unwrap_or(""));
                let tokens = prompt.turn(&t, 0, turn, marker, &mut out);
                assert_eq!(out, keys_of_text(5, &marked), "turn {turn} {marker:?}");
                let isl = u64::from(t.agents[0].turns[turn].isl);
                assert_eq!(tokens, isl + u64::from(marker.map_or(0, marker_tokens)));
            }
        }
        // The second turn extends the first: their keys share a prefix.
        prompt.turn(&t, 0, 0, None, &mut out);
        let first = out.clone();
        prompt.turn(&t, 0, 1, None, &mut out);
        assert_eq!(first.len(), 7);
        assert_eq!(out[..7], first[..]);
    }

    /// Every turn of every agent of `trees` keyed whole and from the
    /// agent's previous turn's keys: the same keys and tokens. Returns the
    /// turns whose keys reused a block of the previous turn's.
    fn incremental_equals_whole(trees: &[Tree], marker: Option<&str>, block_size: u32) -> usize {
        let mut prompt = PromptKeys::new(block_size);
        let (mut previous, mut whole, mut next, mut poisoned) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut reused = 0;
        for (i, tree) in trees.iter().enumerate() {
            for (a, agent) in tree.agents.iter().enumerate() {
                for t in 0..agent.turns.len() + 1 {
                    let at = format!("tree {i} agent {a} turn {t} {marker:?} {block_size}");
                    let tokens = prompt.turn(tree, a, t, marker, &mut whole);
                    let again = prompt.next_turn(tree, a, t, marker, &previous, &mut next);
                    assert_eq!((again, &next), (tokens, &whole), "{at}");
                    // Keys not recomputed are `previous`' own: poison them
                    // (the keys after chain from the poisoned ones).
                    poisoned.clear();
                    poisoned.extend(previous.iter().map(|k| !k));
                    prompt.next_turn(tree, a, t, marker, &poisoned, &mut next);
                    let from_previous = next.iter().zip(&poisoned).take_while(|(n, p)| n == p);
                    reused += usize::from(from_previous.count() > 0);
                    std::mem::swap(&mut previous, &mut whole);
                }
                previous.clear();
            }
        }
        reused
    }

    #[test]
    fn a_turns_keys_from_the_previous_turns_are_its_whole_keys() {
        let markers = [
            None,
            Some("[rid:0123456789ab]\n\n"),
            Some("odd"),
            Some(" the of x"),
        ];
        for spec in [
            "trees=3,turns=6,child_turns=3,depth=1,spawn=0.4,hash_ids=true,isl=150,isl_growth=90,max_isl=700,seed=4",
            "trees=3,turns=6,child_turns=3,depth=1,spawn=0.4,isl=150,isl_growth=90,max_isl=700,seed=4",
        ] {
            let spec: arbor_formats::synthetic::SyntheticSpec = spec.parse().expect("spec");
            let trees = spec.generate().trees;
            for marker in markers {
                for block_size in [1, 3, 16, 64] {
                    let reused = incremental_equals_whole(&trees, marker, block_size);
                    assert!(reused > 10, "{spec:?} {marker:?} {block_size}: {reused}");
                }
            }
        }
        // Hash ids: a turn shorter than the last inside a shared block, a
        // turn sharing nothing (the marker's blocks alone in common: where
        // its pending bytes fall decides), a turn extending it.
        let ids = |isl, ids: Vec<u32>| Turn {
            isl,
            hash_ids: BlockIds::from(ids),
            ..Turn::default()
        };
        let t = tree(vec![
            ids(20, vec![1, 2, 3]),
            ids(19, vec![1, 2, 3]),
            ids(16, vec![5, 6]),
            ids(30, vec![5, 6, 7, 8]),
        ]);
        for marker in markers {
            for block_size in [1, 2, 3, 16] {
                incremental_equals_whole(std::slice::from_ref(&t), marker, block_size);
            }
        }
        // Recorded text before, after or between synthesized turns: keyed
        // whole, never from the other turn's keys.
        let mut t = tree(vec![
            Turn {
                isl: 40,
                ..Turn::default()
            },
            Turn {
                isl: 30,
                text: Some(Box::new(TurnText {
                    extends_previous: false,
                    messages: vec![Message::text(
                        Role::User,
                        " the of and to in is that for it as was",
                    )],
                    response: None,
                    ..Default::default()
                })),
                ..Turn::default()
            },
            Turn {
                isl: 90,
                ..Turn::default()
            },
            Turn {
                isl: 130,
                ..Turn::default()
            },
        ]);
        for marker in markers {
            for block_size in [1, 3, 16, 64] {
                let reused = incremental_equals_whole(std::slice::from_ref(&t), marker, block_size);
                // Only turn 3 extends a synthesized turn.
                assert_eq!(reused, 1, "{marker:?} {block_size}");
            }
        }
        // Recorded, synthesized, recorded, synthesized: nothing reused.
        t.agents[0].turns.swap(0, 1);
        t.agents[0].turns[2].text = t.agents[0].turns[0].text.clone();
        assert_eq!(incremental_equals_whole(&[t], None, 8), 0);
    }

    #[test]
    fn recorded_turns_key_their_messages_with_roles() {
        let text = |messages: Vec<(Role, &str)>| TurnText {
            extends_previous: false,
            messages: messages
                .into_iter()
                .map(|(role, content)| Message::text(role, content))
                .collect(),
            response: None,
            ..Default::default()
        };
        let t = tree(vec![Turn {
            isl: 10,
            text: Some(Box::new(text(vec![
                (Role::System, "be brief, the of"),
                (Role::Tool, "42"),
                (Role::User, " the of and it was"),
            ]))),
            ..Turn::default()
        }]);
        let mut out = Vec::new();
        PromptKeys::new(2).turn(&t, 0, 0, Some("[m]"), &mut out);
        let mut expect = TextKeys::new(2);
        // Tool results go as user messages; the marker leads the first
        // message recorded as the user's (as the live body puts it).
        for (role, content) in [
            ("system", "be brief, the of"),
            ("user", "42"),
            ("user", "[m] the of and it was"),
        ] {
            expect.frame(role.as_bytes());
            expect.frame(b"\n");
            expect.text(content);
            expect.frame(b"\n");
        }
        assert_eq!(out, expect.finish());
        assert!(!out.is_empty());
    }

    #[test]
    fn blocks_cut_at_tokens_and_chain() {
        // Four vocabulary words and eight other bytes: six tokens.
        let mut keys = TextKeys::new(2);
        keys.text(" the of");
        keys.text("abcdefgh and to");
        assert_eq!(keys.tokens(), 6);
        assert_eq!(keys.keys().len(), 3);
        // A changed first block changes every key after it.
        let a = keys_of_text(2, " the of and to in is");
        let b = keys_of_text(2, " of the and to in is");
        assert_eq!(a.len(), 3);
        assert!(a.iter().zip(&b).all(|(x, y)| x != y));
        // Same text, different framing: different keys.
        let mut framed = TextKeys::new(2);
        framed.frame(b"system\n");
        framed.text(" the of and to in is");
        assert_ne!(framed.finish(), a);
        // A partial token of other bytes counts, a partial block has no key.
        let mut partial = TextKeys::new(4);
        partial.text("abcde the");
        assert_eq!((partial.tokens(), partial.keys().len()), (3, 0));
        assert_eq!(marker_tokens("[rid:0123456789ab]\n\n"), 5);
    }
}
