//! The prefix cache: content-keyed blocks with chained hashes.
//!
//! The serialized prompt is cut into [`BLOCK_BYTES`]-byte blocks (64 tokens
//! at 4 bytes a token). Block `i`'s key is FNV-1a 64 over the previous
//! block's key (8 bytes, little endian; 0 for the first block) followed by
//! the block's bytes, so a key names the whole prefix up to and including
//! its block. A trailing partial block is never cached. A request's cached
//! tokens are the bytes of its leading blocks already in the cache, on the
//! prompt's own tokens-per-byte scale (`tokens.rs`): 64 a block for text
//! without vocabulary words.

use std::collections::{HashMap, VecDeque};

/// Bytes in a cache block.
pub const BLOCK_BYTES: usize = 256;
/// Tokens in a cache block (at 4 bytes a token).
pub const BLOCK_TOKENS: u32 = 64;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Streams prompt bytes in any number of pieces and yields the chained
/// block keys of the whole.
#[derive(Debug, Clone)]
pub struct BlockHasher {
    prev: u64,
    cur: u64,
    filled: usize,
    blocks: Vec<u64>,
}

impl Default for BlockHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockHasher {
    pub fn new() -> Self {
        BlockHasher {
            prev: 0,
            cur: FNV_OFFSET,
            filled: 0,
            blocks: Vec::new(),
        }
    }

    #[inline]
    fn start_block(&mut self) {
        let mut h = FNV_OFFSET;
        for b in self.prev.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(FNV_PRIME);
        }
        self.cur = h;
    }

    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.filled == 0 {
                self.start_block();
            }
            let take = (BLOCK_BYTES - self.filled).min(data.len());
            let mut h = self.cur;
            for &b in &data[..take] {
                h ^= b as u64;
                h = h.wrapping_mul(FNV_PRIME);
            }
            self.cur = h;
            self.filled += take;
            data = &data[take..];
            if self.filled == BLOCK_BYTES {
                self.blocks.push(h);
                self.prev = h;
                self.filled = 0;
            }
        }
    }

    /// Keys of the full blocks, in order.
    pub fn finish(self) -> Vec<u64> {
        self.blocks
    }

    /// Where the hasher stands now: enough to hash more bytes after what
    /// it has seen without keeping its keys ([`BlockHasher::resume`]).
    pub fn mark(&self) -> HasherMark {
        HasherMark {
            prev: self.prev,
            cur: self.cur,
            filled: self.filled,
            blocks: self.blocks.len(),
        }
    }

    /// A hasher that continues from `mark`; its [`BlockHasher::finish`]
    /// gives only the keys of blocks completed after the mark.
    pub fn resume(mark: HasherMark) -> Self {
        BlockHasher {
            prev: mark.prev,
            cur: mark.cur,
            filled: mark.filled,
            blocks: Vec::new(),
        }
    }
}

/// A [`BlockHasher`]'s state at some byte: the chain so far, the open
/// block, and how many full blocks came before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HasherMark {
    prev: u64,
    cur: u64,
    filled: usize,
    /// Full blocks before the mark.
    pub blocks: usize,
}

/// Keys of the blocks seen, unbounded or least-recently-used.
#[derive(Debug, Default)]
pub struct PrefixCache {
    capacity: Option<usize>,
    /// Key to the tick it was last used at.
    map: HashMap<u64, u64>,
    /// Uses in tick order; entries whose tick is stale are skipped.
    order: VecDeque<(u64, u64)>,
    tick: u64,
}

impl PrefixCache {
    /// `None`: unbounded; `Some(0)`: disabled; `Some(n)`: LRU of n blocks.
    pub fn new(capacity: Option<usize>) -> Self {
        PrefixCache {
            capacity,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of leading `blocks` in the cache; marks them used.
    pub fn lookup(&mut self, blocks: &[u64]) -> usize {
        let hit = blocks
            .iter()
            .take_while(|b| self.map.contains_key(b))
            .count();
        if self.capacity.is_some() {
            for &b in &blocks[..hit] {
                self.touch(b);
            }
        }
        hit
    }

    /// Records `blocks` (after the request's prefill).
    pub fn insert(&mut self, blocks: &[u64]) {
        match self.capacity {
            Some(0) => {}
            None => {
                for &b in blocks {
                    self.map.insert(b, 0);
                }
            }
            Some(cap) => {
                for &b in blocks {
                    self.touch(b);
                }
                while self.map.len() > cap {
                    let Some((key, tick)) = self.order.pop_front() else {
                        break;
                    };
                    if self.map.get(&key) == Some(&tick) {
                        self.map.remove(&key);
                    }
                }
                if self.order.len() > 2 * cap + 1024 {
                    let map = &self.map;
                    self.order.retain(|(k, t)| map.get(k) == Some(t));
                }
            }
        }
    }

    fn touch(&mut self, key: u64) {
        self.tick += 1;
        self.map.insert(key, self.tick);
        self.order.push_back((key, self.tick));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks_of(pieces: &[&[u8]]) -> Vec<u64> {
        let mut h = BlockHasher::new();
        for p in pieces {
            h.update(p);
        }
        h.finish()
    }

    #[test]
    fn keys_ignore_how_bytes_are_split_and_chain() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let whole = blocks_of(&[&data]);
        assert_eq!(whole.len(), 3);
        let split = blocks_of(&[&data[..1], &data[1..300], &data[300..]]);
        assert_eq!(whole, split);
        // Same second block bytes after a different first block: new key.
        let mut other = data.clone();
        other[0] ^= 1;
        let changed = blocks_of(&[&other]);
        assert_ne!(whole[0], changed[0]);
        assert_ne!(whole[1], changed[1]);
        assert!(blocks_of(&[&data[..255]]).is_empty());
    }

    #[test]
    fn a_resumed_hasher_continues_the_chain() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 13 % 251) as u8).collect();
        let whole = blocks_of(&[&data]);
        for cut in [0, 1, 255, 256, 300, 999] {
            let mut h = BlockHasher::new();
            h.update(&data[..cut]);
            let mark = h.mark();
            let mut rest = BlockHasher::resume(mark);
            rest.update(&data[cut..]);
            let mut keys = whole[..mark.blocks].to_vec();
            keys.extend(rest.finish());
            assert_eq!(keys, whole, "cut at {cut}");
        }
    }

    #[test]
    fn longest_prefix_hits() {
        let mut c = PrefixCache::new(None);
        assert_eq!(c.lookup(&[1, 2, 3]), 0);
        c.insert(&[1, 2, 3]);
        assert_eq!(c.lookup(&[1, 2, 4, 5]), 2);
        assert_eq!(c.lookup(&[9, 1, 2]), 0);
    }

    #[test]
    fn lru_evicts_least_recent_and_zero_disables() {
        let mut c = PrefixCache::new(Some(3));
        c.insert(&[1, 2, 3]);
        assert_eq!(c.lookup(&[1]), 1); // 1 is now most recent
        c.insert(&[4]); // evicts 2
        assert_eq!(c.len(), 3);
        assert_eq!(c.lookup(&[1, 2]), 1);
        assert_eq!(c.lookup(&[3]), 1);
        for i in 0..10_000 {
            c.insert(&[100 + i]);
        }
        assert_eq!(c.len(), 3);
        assert!(c.order.len() <= 2 * 3 + 1024 + 1);
        let mut off = PrefixCache::new(Some(0));
        off.insert(&[1]);
        assert_eq!(off.lookup(&[1]), 0);
    }
}
