//! The KV block pool: reference-counted blocks, a hash-chained prefix
//! cache of full blocks, and a least-recently-freed queue to evict from.
//!
//! A block with no reference sits in the free queue; if it holds a cached
//! prefix block it stays findable until it is handed out again (evicted
//! from the head of the queue). Freed blocks go to the tail, a request's
//! blocks last-first, so a prefix's tail is evicted before its head. Only
//! full prompt blocks get a key. Must not: decide who gets blocks (the
//! batch does), iterate the key table (`key_table.rs`).

use super::key_table::{KeyTable, Probe};

const NONE: u32 = u32::MAX;

/// A block's bookkeeping, 16 bytes (its key lives in the table).
#[derive(Debug, Clone)]
struct Block {
    refs: u32,
    /// Free-queue links (NONE at the ends, or when not queued).
    prev: u32,
    next: u32,
    /// Its entry in `KvPool::cached` while it is named there (NONE: not
    /// named).
    entry: u32,
}

/// A pool of `total` KV blocks.
///
/// The invariant the updates rely on: a block's `entry` is the place in
/// `cached` that maps its key to it, exactly while it is named.
#[derive(Debug, Clone)]
pub struct KvPool {
    blocks: Vec<Block>,
    /// Key to the block holding it (never more keys than blocks).
    cached: KeyTable,
    head: u32,
    tail: u32,
    free: u32,
}

impl KvPool {
    pub fn new(total: u32) -> KvPool {
        let blocks = (0..total)
            .map(|i| Block {
                refs: 0,
                prev: if i == 0 { NONE } else { i - 1 },
                next: if i + 1 == total { NONE } else { i + 1 },
                entry: NONE,
            })
            .collect();
        KvPool {
            blocks,
            cached: KeyTable::new(total),
            head: if total == 0 { NONE } else { 0 },
            tail: if total == 0 { NONE } else { total - 1 },
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

    /// Takes a reference to a block found by [`KvPool::hits`].
    pub fn touch(&mut self, block: u32) {
        if self.blocks[block as usize].refs == 0 {
            self.unlink(block);
        }
        self.blocks[block as usize].refs += 1;
    }

    /// Hands out the least recently freed block, evicting its key; `None`
    /// when every block is referenced.
    pub fn allocate(&mut self) -> Option<u32> {
        let block = self.head;
        if block == NONE {
            return None;
        }
        self.unlink(block);
        let b = &mut self.blocks[block as usize];
        b.refs = 1;
        let entry = std::mem::replace(&mut b.entry, NONE);
        if entry != NONE {
            let blocks = &mut self.blocks;
            self.cached
                .remove(entry, |moved, to| blocks[moved as usize].entry = to);
        }
        Some(block)
    }

    /// Drops one reference to each of `blocks`, last first.
    pub fn release(&mut self, blocks: &[u32]) {
        for &block in blocks.iter().rev() {
            let b = &mut self.blocks[block as usize];
            b.refs = b.refs.saturating_sub(1);
            if b.refs == 0 {
                self.push_tail(block);
            }
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

    fn unlink(&mut self, block: u32) {
        let (prev, next) = {
            let b = &self.blocks[block as usize];
            (b.prev, b.next)
        };
        if prev == NONE {
            self.head = next;
        } else {
            self.blocks[prev as usize].next = next;
        }
        if next == NONE {
            self.tail = prev;
        } else {
            self.blocks[next as usize].prev = prev;
        }
        let b = &mut self.blocks[block as usize];
        b.prev = NONE;
        b.next = NONE;
        self.free -= 1;
    }

    fn push_tail(&mut self, block: u32) {
        let tail = self.tail;
        {
            let b = &mut self.blocks[block as usize];
            b.prev = tail;
            b.next = NONE;
        }
        if tail == NONE {
            self.head = block;
        } else {
            self.blocks[tail as usize].next = block;
        }
        self.tail = block;
        self.free += 1;
    }
}
