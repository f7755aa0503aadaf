//! Prefix block keys of a workload's prompts, in the model's blocks.
//!
//! A prompt is what arbor sends for a turn (`arbor_engine::prompt`): the
//! text of its hash-id blocks in order and a tail unique to the turn, or
//! virtual per-agent blocks, or the recorded messages. Here it is seen as
//! a sequence of token segments, each named by the seed its text is drawn
//! from; equal seeds give equal text, so two prompts have equal leading
//! segments exactly when they have equal leading text. The segments are
//! cut into the model's blocks of `block_size` tokens; block `i`'s key is
//! FNV-1a 64 over block `i-1`'s key (the salt for block 0) and the
//! (seed, offset, length) of the pieces of segments it holds. So a key
//! names the whole prefix up to its block, a trailing partial block has
//! no key, and the hash scope of the trace decides what trees share (the
//! seeds carry it). A salt other than 0 (the play's cache-bust marker)
//! keeps plays from sharing anything. Recorded text is hashed as bytes,
//! four to a token, in blocks of `4 · block_size` bytes, at most
//! `isl / block_size` of them.
//!
//! Must not: hold state between prompts, know about the scheduler.

use arbor_engine::content::{fnv1a, prompt_messages, FNV_OFFSET};
use arbor_engine::model::Tree;
use arbor_engine::prompt::for_each_piece;

/// Bytes of recorded text per token.
const TEXT_BYTES_PER_TOKEN: u32 = 4;

/// Cuts a stream of segments (or bytes) into chained block keys.
struct Chain<'a> {
    block_size: u32,
    prev: u64,
    cur: u64,
    filled: u32,
    /// Full blocks still wanted.
    room: usize,
    out: &'a mut Vec<u64>,
}

impl<'a> Chain<'a> {
    fn new(block_size: u32, salt: u64, room: usize, out: &'a mut Vec<u64>) -> Self {
        Chain {
            block_size: block_size.max(1),
            prev: salt,
            cur: 0,
            filled: 0,
            room,
            out,
        }
    }

    fn start_block(&mut self) {
        self.cur = fnv1a(FNV_OFFSET, &self.prev.to_le_bytes());
    }

    fn end_block(&mut self) {
        self.out.push(self.cur);
        self.prev = self.cur;
        self.filled = 0;
        self.room -= 1;
    }

    /// `len` tokens of the text drawn from `seed`, from its start.
    fn segment(&mut self, seed: u64, len: u32) {
        let mut offset = 0u32;
        while offset < len && self.room > 0 {
            if self.filled == 0 {
                self.start_block();
            }
            let take = (self.block_size - self.filled).min(len - offset);
            let mut piece = [0u8; 16];
            piece[..8].copy_from_slice(&seed.to_le_bytes());
            piece[8..12].copy_from_slice(&offset.to_le_bytes());
            piece[12..].copy_from_slice(&take.to_le_bytes());
            self.cur = fnv1a(self.cur, &piece);
            self.filled += take;
            offset += take;
            if self.filled == self.block_size {
                self.end_block();
            }
        }
    }

    /// Raw bytes, `TEXT_BYTES_PER_TOKEN` to a token.
    fn bytes(&mut self, mut data: &[u8]) {
        let block_bytes = self.block_size as usize * TEXT_BYTES_PER_TOKEN as usize;
        while !data.is_empty() && self.room > 0 {
            if self.filled == 0 {
                self.start_block();
            }
            let take = (block_bytes - self.filled as usize).min(data.len());
            self.cur = fnv1a(self.cur, &data[..take]);
            self.filled += take as u32;
            data = &data[take..];
            if self.filled as usize == block_bytes {
                self.end_block();
            }
        }
    }
}

/// Appends to `out` the keys of the full `block_size`-token blocks of the
/// prompt of turn `turn` of agent `agent` of `tree`, salted by `salt`
/// (0: none). Nothing for a turn out of range.
pub fn prompt_blocks(
    tree: &Tree,
    agent: usize,
    turn: usize,
    block_size: u32,
    salt: u64,
    out: &mut Vec<u64>,
) {
    let Some(a) = tree.agents.get(agent) else {
        return;
    };
    let Some(t) = a.turns.get(turn) else {
        return;
    };
    let room = (t.isl / block_size.max(1)) as usize;
    out.reserve(room);
    let mut chain = Chain::new(block_size, salt, room, out);
    if t.text.is_some() {
        for m in prompt_messages(a, turn) {
            chain.bytes(m.role.as_str().as_bytes());
            chain.bytes(b"\n");
            chain.bytes(m.content.as_bytes());
            chain.bytes(b"\0");
        }
        return;
    }
    for_each_piece(tree, agent, turn, |seed, words| chain.segment(seed, words));
}

/// The salt of a cache-bust marker's text: what makes a play's prompts
/// its own.
pub fn marker_salt(marker: &str) -> u64 {
    fnv1a(FNV_OFFSET, marker.as_bytes()) | 1
}
