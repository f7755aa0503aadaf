//! The KV block pool: reference-counted blocks, a hash-chained prefix
//! cache of full blocks, and a least-recently-freed queue to evict from.
//!
//! A block with no reference sits in the free queue; if it holds a cached
//! prefix block it stays findable until it is handed out again (evicted
//! from the head of the queue). Freed blocks go to the tail, a request's
//! blocks last-first, so a prefix's tail is evicted before its head. Only
//! full prompt blocks get a key. Must not: decide who gets blocks (the
//! batch does), iterate the key table (`key_table.rs`).
//!
//! The free queue is a ring of (block, the block's free count when it
//! was queued). Taking a free block back by a cache hit leaves its entry
//! in place: the entry is stale once the block has a reference again or
//! was queued anew, and the head skips stale entries. So handing out a
//! block reads the ring in order instead of following links from block
//! to block, and the blocks it hands out next are known ahead.
//!
//! Runs of keys go in chunks of [`WARM`]: the table entries a chunk will
//! touch are read first, all at once (see `key_table.rs`), then the chunk
//! is done: a computed prefill's keys (to name), a prompt's keys (to look
//! up).

use std::collections::VecDeque;

use super::key_table::{KeyTable, Probe};

const NONE: u32 = u32::MAX;

/// Table entries read ahead of a chunk of work: enough reads in flight to
/// cover memory's latency, few enough to sit in the core's window.
const WARM: usize = 16;

/// A block's bookkeeping, 12 bytes (its key lives in the table).
#[derive(Debug, Clone)]
struct Block {
    refs: u32,
    /// Times it was freed: its live entry in the queue carries this.
    freed: u32,
    /// Its entry in `KvPool::cached` while it is named there (NONE: not
    /// named).
    entry: u32,
}

/// A pool of `total` KV blocks.
///
/// The invariants the updates rely on: a block's `entry` is the place in
/// `cached` that maps its key to it, exactly while it is named; a block
/// with no reference has exactly one live entry in `queue`, `(block,
/// freed)`, in the order it was freed.
#[derive(Debug, Clone)]
pub struct KvPool {
    blocks: Vec<Block>,
    /// Key to the block holding it (never more keys than blocks).
    cached: KeyTable,
    /// The key each block was last named by (meaningful while its
    /// `entry` is set): what [`KvPool::hits`] checks a guess against.
    keys_of: Vec<u64>,
    /// The free queue, least recently freed first, stale entries among
    /// the live ones (see the module doc).
    queue: VecDeque<(u32, u32)>,
    free: u32,
}

impl KvPool {
    pub fn new(total: u32) -> KvPool {
        KvPool {
            blocks: vec![
                Block {
                    refs: 0,
                    freed: 0,
                    entry: NONE,
                };
                total as usize
            ],
            cached: KeyTable::new(total),
            keys_of: vec![0; total as usize],
            queue: (0..total).map(|block| (block, 0)).collect(),
            free: total,
        }
    }

    pub fn total(&self) -> u32 {
        self.blocks.len() as u32
    }

    /// Blocks with no reference (cached ones included: they can be evicted).
    pub fn free(&self) -> u32 {
        self.free
    }

    pub fn used(&self) -> u32 {
        self.total() - self.free
    }

    /// Sets `out` to the blocks holding the leading `keys` that are
    /// cached, in order. What `out` holds on entry is a guess (the hits
    /// of the last call, for the request still first in line while it
    /// does not fit): its leading blocks that still hold their keys are
    /// kept, checked against `keys_of` without reading the table, and
    /// the table is probed from the first that does not.
    pub fn hits(&self, keys: &[u64], out: &mut Vec<u32>) {
        let kept = out
            .iter()
            .zip(keys)
            .take_while(|&(&block, &key)| self.holds(block, key))
            .count();
        out.truncate(kept);
        for chunk in keys[kept..].chunks(WARM) {
            self.warm_keys(chunk);
            for key in chunk {
                match self.cached.get(*key) {
                    Some(block) => out.push(block),
                    None => return,
                }
            }
        }
    }

    /// Whether `block` is named by `key` (a key names one block at most,
    /// so then the table maps `key` to `block`).
    fn holds(&self, block: u32, key: u64) -> bool {
        let named = self
            .blocks
            .get(block as usize)
            .is_some_and(|b| b.entry != NONE);
        named && self.keys_of[block as usize] == key
    }

    /// Reads ahead the table entries of `keys` (see the module doc).
    fn warm_keys(&self, keys: &[u64]) {
        let mut folded = 0;
        for &key in keys {
            folded ^= self.cached.warm_key(key);
        }
        std::hint::black_box(folded);
    }

    /// Of `blocks`, how many sit in the free queue (taking them costs free
    /// blocks).
    pub fn unreferenced(&self, blocks: &[u32]) -> u32 {
        blocks
            .iter()
            .filter(|&&b| self.blocks[b as usize].refs == 0)
            .count() as u32
    }

    /// Takes a reference to a block found by [`KvPool::hits`] (its queue
    /// entry goes stale).
    pub fn touch(&mut self, block: u32) {
        let b = &mut self.blocks[block as usize];
        if b.refs == 0 {
            self.free -= 1;
        }
        b.refs += 1;
    }

    /// Hands out the least recently freed blocks, evicting their keys,
    /// until `out` holds `count` (or every block is referenced).
    pub fn allocate_into(&mut self, out: &mut Vec<u32>, count: usize) {
        out.reserve(count.saturating_sub(out.len()));
        while out.len() < count {
            let Some((block, freed)) = self.queue.pop_front() else {
                return;
            };
            let b = &mut self.blocks[block as usize];
            if b.refs != 0 || b.freed != freed {
                continue;
            }
            b.refs = 1;
            self.free -= 1;
            let entry = std::mem::replace(&mut b.entry, NONE);
            if entry != NONE {
                let blocks = &mut self.blocks;
                self.cached
                    .remove(entry, |moved, to| blocks[moved as usize].entry = to);
            }
            out.push(block);
        }
    }

    /// Drops one reference to each of `blocks`, last first.
    pub fn release(&mut self, blocks: &[u32]) {
        for &block in blocks.iter().rev() {
            let b = &mut self.blocks[block as usize];
            if b.refs == 0 {
                continue;
            }
            b.refs -= 1;
            if b.refs == 0 {
                b.freed = b.freed.wrapping_add(1);
                self.queue.push_back((block, b.freed));
                self.free += 1;
            }
        }
        // Stale entries are dropped once they outnumber the blocks, so
        // the ring stays within a few times the pool.
        if self.queue.len() > 2 * self.blocks.len() + 64 {
            let blocks = &self.blocks;
            self.queue.retain(|&(block, freed)| {
                let b = &blocks[block as usize];
                b.refs == 0 && b.freed == freed
            });
        }
    }

    /// Names each of `blocks` by its key in `keys` (pairwise), as
    /// [`KvPool::cache`], in chunks read ahead (see the module doc).
    pub fn cache_all(&mut self, blocks: &[u32], keys: &[u64]) {
        for (blocks, keys) in blocks.chunks(WARM).zip(keys.chunks(WARM)) {
            self.warm_keys(keys);
            for (&block, &key) in blocks.iter().zip(keys) {
                self.cache(block, key);
            }
        }
    }

    /// Names `block` (full, computed) by `key`, unless the key is cached
    /// already (a twin computed at the same time stays anonymous).
    fn cache(&mut self, block: u32, key: u64) {
        let b = &mut self.blocks[block as usize];
        if b.entry != NONE {
            return;
        }
        if let Probe::Vacant { at } = self.cached.probe(key) {
            self.cached.fill(at, key, block);
            b.entry = at;
            self.keys_of[block as usize] = key;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of `total` blocks holding `keys` in fresh blocks, released.
    fn pool_with(total: u32, keys: &[u64]) -> (KvPool, Vec<u32>) {
        let mut pool = KvPool::new(total);
        let mut blocks = Vec::new();
        pool.allocate_into(&mut blocks, keys.len());
        pool.cache_all(&blocks, keys);
        pool.release(&blocks);
        (pool, blocks)
    }

    #[test]
    fn hits_from_a_guess_equal_hits_from_nothing() {
        let keys: Vec<u64> = (100..108).collect();
        let (mut pool, blocks) = pool_with(12, &keys);
        let fresh = |pool: &KvPool, keys: &[u64]| {
            let mut out = Vec::new();
            pool.hits(keys, &mut out);
            out
        };
        assert_eq!(fresh(&pool, &keys), blocks);
        // A guess that is right is kept whole; one for other keys is
        // dropped; one half right is kept up to where it goes wrong.
        let mut guess = blocks.clone();
        pool.hits(&keys, &mut guess);
        assert_eq!(guess, blocks);
        let other: Vec<u64> = (200..204).collect();
        pool.hits(&other, &mut guess);
        assert!(guess.is_empty());
        let mut half = blocks[..4].to_vec();
        half.extend([blocks[7], blocks[6]]);
        pool.hits(&keys, &mut half);
        assert_eq!(half, blocks);
        // Evicting blocks (the four never used first, then the released
        // ones tail first) invalidates the guess from the first one
        // evicted on.
        let mut taken = Vec::new();
        pool.allocate_into(&mut taken, 6);
        let mut guess = blocks.clone();
        pool.hits(&keys, &mut guess);
        assert_eq!(guess, fresh(&pool, &keys));
        assert_eq!(guess, blocks[..6].to_vec());
        // A key named again in another block is found there, not in the
        // guess's block.
        pool.cache_all(&taken[..1], &keys[6..7]);
        let mut guess = blocks.clone();
        pool.hits(&keys, &mut guess);
        assert_eq!(guess, fresh(&pool, &keys));
        assert_eq!(guess[6], taken[0]);
    }
}
