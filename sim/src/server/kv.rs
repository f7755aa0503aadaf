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

use std::collections::VecDeque;

use super::key_table::{KeyTable, Probe};

const NONE: u32 = u32::MAX;

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

    /// The blocks holding the leading `keys` that are cached, in order.
    pub fn hits(&self, keys: &[u64], out: &mut Vec<u32>) {
        out.clear();
        for key in keys {
            match self.cached.get(*key) {
                Some(block) => out.push(block),
                None => break,
            }
        }
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

    /// Hands out the least recently freed block, evicting its key; `None`
    /// when every block is referenced.
    pub fn allocate(&mut self) -> Option<u32> {
        while let Some((block, freed)) = self.queue.pop_front() {
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
            return Some(block);
        }
        None
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

    /// Names `block` (full, computed) by `key`, unless the key is cached
    /// already (a twin computed at the same time stays anonymous).
    pub fn cache(&mut self, block: u32, key: u64) {
        let b = &mut self.blocks[block as usize];
        if b.entry != NONE {
            return;
        }
        if let Probe::Vacant { at } = self.cached.probe(key) {
            self.cached.fill(at, key, block);
            b.entry = at;
        }
    }
}
