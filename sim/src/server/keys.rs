//! Prefix block keys of a prompt, in the model's blocks: one key function
//! over the prompt's text, which the emulator runs on the body it
//! received and the plan runs on the text the live client would send.
//!
//! [`TextKeys`] takes a prompt in order: framing bytes ([`TextKeys::frame`]:
//! a chat message's role and separators, which name a block but hold no
//! token) and text ([`TextKeys::text`]), cut into tokens by arbor's
//! estimate (`crate::token_rule`: a vocabulary word is one token, other
//! bytes four to a token, packed across the whole prompt as the
//! emulator's count packs them). Every `block_size` tokens close a block:
//! its content hash is FNV-1a 64 over the bytes that arrived in it, and
//! its key is FNV-1a 64 over the previous key (0 before the first) and
//! that content hash. So a key names the whole prefix up to its block,
//! and a trailing partial block has no key.
//!
//! The emulator under `--profile` feeds a chat body as `role` `\n`
//! content `\n` per message (`emulator/request.rs`). [`PromptKeys`] feeds
//! the same for a turn of a workload, as `arbor run` sends it with the
//! chat API: the recorded messages (wire roles, the cache-bust marker
//! before the first user message's content), or one user message of the
//! marker and the synthesized text. Synthesized text is not built: its
//! pieces (`arbor_engine::prompt::for_each_piece`) are vocabulary words
//! only, one token each, so a block's share of a piece is a known run of
//! words, and its content hash after that run is remembered by (content
//! hash before, seed, first word, words). Only the first time a run is
//! seen are its words written out and hashed. `proptests`' `prefix_keys`
//! property checks that this gives the keys of the live body exactly.
//!
//! Must not: know about the scheduler, or keep anything between prompts
//! that changes a key (the remembered runs only save work).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use arbor_engine::content::{fnv1a, prompt_messages, FNV_OFFSET};
use arbor_engine::model::{Role, Tree};
use arbor_engine::prompt::{for_each_piece, push_piece, wire_role};

use crate::token_rule::{scan, Run, OTHER_BYTES_PER_TOKEN};

/// Remembered runs past this many are forgotten (all at once).
const MAX_REMEMBERED: usize = 1 << 20;

/// A prompt's text in, chained block keys out (see the module doc).
#[derive(Debug, Clone)]
pub struct TextKeys {
    block_size: u32,
    /// The last full block's key (0 before the first).
    prev: u64,
    /// FNV-1a of the bytes of the block being filled.
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

    /// Bytes that name the block they fall in but hold no token (a role,
    /// a separator).
    pub fn frame(&mut self, bytes: &[u8]) {
        self.content = fnv1a(self.content, bytes);
    }

    /// Text, cut into tokens by the estimate.
    pub fn text(&mut self, text: &str) {
        scan(text.as_bytes(), |run| match run {
            Run::Word(word) => {
                self.content = fnv1a(self.content, word);
                self.advance(1);
            }
            Run::Other(bytes) => self.other(bytes),
        });
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
                self.advance(1);
            }
        }
    }

    /// Tokens the block being filled has room for.
    fn room(&self) -> u32 {
        self.block_size - self.filled
    }

    /// `n` tokens (at most [`TextKeys::room`]) joined the block being
    /// filled, their bytes hashed already.
    fn advance(&mut self, n: u32) {
        self.filled += n;
        self.tokens += u64::from(n);
        if self.filled == self.block_size {
            let key = fnv1a(
                fnv1a(FNV_OFFSET, &self.prev.to_le_bytes()),
                &self.content.to_le_bytes(),
            );
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

/// A run of a synthesized piece inside one block: its words
/// `first..first + words` of the piece `seed`, hashed after `before`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PieceRun {
    before: u64,
    seed: u64,
    first: u32,
    words: u32,
}

/// The remembered runs' keys are hashes already: one multiply each.
#[derive(Debug, Default, Clone, Copy)]
struct RunHasher(u64);

impl Hasher for RunHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(26) ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }
}

/// The plan side: block keys of a workload's turns as the live client
/// sends them (see the module doc). Reuse one for a whole run: it
/// remembers the content hashes of the synthesized runs it has seen.
#[derive(Debug, Clone)]
pub struct PromptKeys {
    block_size: u32,
    remembered: HashMap<PieceRun, u64, BuildHasherDefault<RunHasher>>,
    /// The text of the piece last written out, and its seed.
    text: String,
    text_seed: Option<u64>,
    /// Where each word of `text` starts, and its end.
    starts: Vec<usize>,
}

impl PromptKeys {
    /// Keys of `block_size`-token blocks (0 counts as 1).
    pub fn new(block_size: u32) -> PromptKeys {
        PromptKeys {
            block_size: block_size.max(1),
            remembered: HashMap::default(),
            text: String::new(),
            text_seed: None,
            starts: Vec::new(),
        }
    }

    /// Sets `out` to the keys of the full blocks of the prompt of turn
    /// `turn` of agent `agent` of `tree`, as a chat body carries it with
    /// the cache-bust `marker` (None: no marker). Returns the prompt's
    /// tokens by the estimate (`TextKeys::tokens`). Nothing for a turn
    /// out of range.
    pub fn turn(
        &mut self,
        tree: &Tree,
        agent: usize,
        turn: usize,
        marker: Option<&str>,
        out: &mut Vec<u64>,
    ) -> u64 {
        let mut keys = TextKeys::with_buffer(self.block_size, std::mem::take(out));
        if let Some(a) = tree.agents.get(agent).filter(|a| turn < a.turns.len()) {
            if a.turns[turn].text.is_some() {
                recorded(&mut keys, &prompt_messages(a, turn), marker);
            } else {
                keys.frame(wire_role(Role::User).as_bytes());
                keys.frame(b"\n");
                if let Some(marker) = marker {
                    keys.text(marker);
                }
                for_each_piece(tree, agent, turn, |seed, words| {
                    self.piece(&mut keys, seed, words)
                });
                keys.frame(b"\n");
            }
        }
        let tokens = keys.tokens();
        *out = keys.finish();
        tokens
    }

    /// Feeds the `words` words of the piece `seed`, block by block.
    fn piece(&mut self, keys: &mut TextKeys, seed: u64, words: u32) {
        let mut first = 0;
        while first < words {
            let take = keys.room().min(words - first);
            let run = PieceRun {
                before: keys.content,
                seed,
                first,
                words: take,
            };
            let after = match self.remembered.get(&run) {
                Some(&after) => after,
                None => {
                    let after = fnv1a(keys.content, self.words_of(seed, words, first, take));
                    if self.remembered.len() >= MAX_REMEMBERED {
                        self.remembered.clear();
                    }
                    self.remembered.insert(run, after);
                    after
                }
            };
            keys.content = after;
            keys.advance(take);
            first += take;
        }
    }

    /// The bytes of words `first..first + take` of the piece `seed` of
    /// `words` words.
    fn words_of(&mut self, seed: u64, words: u32, first: u32, take: u32) -> &[u8] {
        if self.text_seed != Some(seed) || self.starts.len() <= (first + take) as usize {
            self.text.clear();
            push_piece(seed, words, &mut self.text);
            self.starts.clear();
            let bytes = self.text.as_bytes();
            self.starts
                .extend((0..bytes.len()).filter(|&i| bytes[i] == b' '));
            self.starts.push(bytes.len());
            self.text_seed = Some(seed);
        }
        let from = self.starts[first as usize];
        let to = self.starts[(first + take) as usize];
        &self.text.as_bytes()[from..to]
    }
}

/// Recorded messages as a chat body carries them: each `role` `\n`
/// content `\n`, the marker before the first user message's content.
fn recorded(
    keys: &mut TextKeys,
    messages: &[arbor_engine::content::MessageRef<'_>],
    marker: Option<&str>,
) {
    let first_user = messages.iter().position(|m| m.role == Role::User);
    for (i, m) in messages.iter().enumerate() {
        keys.frame(wire_role(m.role).as_bytes());
        keys.frame(b"\n");
        match marker.filter(|_| first_user == Some(i)) {
            Some(marker) => keys.text(&format!("{marker}{}", m.content)),
            None => keys.text(m.content),
        }
        keys.frame(b"\n");
    }
}

/// Tokens a cache-bust marker adds to a prompt by the estimate. arbor's
/// marker is 20 bytes of other text: five tokens, whatever follows it.
pub fn marker_tokens(marker: &str) -> u32 {
    let mut keys = TextKeys::new(1);
    keys.text(marker);
    keys.tokens().min(u64::from(u32::MAX)) as u32
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
        let mut prompt = PromptKeys::new(5);
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

    #[test]
    fn recorded_turns_key_their_messages_with_roles() {
        let text = |messages: Vec<(Role, &str)>| TurnText {
            extends_previous: false,
            messages: messages
                .into_iter()
                .map(|(role, content)| Message {
                    role,
                    content: content.to_string(),
                })
                .collect(),
            response: None,
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
