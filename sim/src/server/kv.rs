//! The KV block pool: reference-counted blocks, a hash-chained prefix
//! cache of full blocks, and a least-recently-freed queue to evict from.
//!
//! A block with no reference sits in the free queue; if it holds a cached
//! prefix block it stays findable until it is handed out again (evicted
//! from the head of the queue). Freed blocks go to the tail, a request's
//! blocks last-first, so a prefix's tail is evicted before its head. Only
//! full prompt blocks get a key. Must not: decide who gets blocks (the
//! batch does), iterate the key map.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const NONE: u32 = u32::MAX;

/// The multiplier of the key hash (2^64 over the golden ratio, odd).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// Block keys are hashes already, or close to it: the map mixes them with
/// one folded multiply (the 128-bit product's halves xored), not SipHash.
/// The fold matters: the map picks a bucket from the low bits, and a
/// plain multiply leaves those depending on the key's low bits only, so
/// keys that differ in their high bits alone (a request number shifted
/// up, say) would all probe one chain. Deterministic, and never iterated.
#[derive(Debug, Default, Clone, Copy)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(MIX);
        }
    }

    fn write_u64(&mut self, key: u64) {
        let product = u128::from(key) * u128::from(MIX);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

type KeyMap = HashMap<u64, u32, BuildHasherDefault<KeyHasher>>;

/// A block's bookkeeping, 16 bytes (its key, read only when it is named
/// or evicted, lives apart in `KvPool::keys`).
#[derive(Debug, Clone)]
struct Block {
    refs: u32,
    /// Free-queue links (NONE at the ends, or when not queued).
    prev: u32,
    next: u32,
    /// It is named in the cache by `KvPool::keys[block]`.
    keyed: bool,
}

/// A pool of `total` KV blocks.
///
/// The invariant the one-probe updates rely on: a block is `keyed` with
/// key `k` exactly when `cached` maps `k` to it.
#[derive(Debug, Clone)]
pub struct KvPool {
    blocks: Vec<Block>,
    /// Each block's key while it is `keyed`.
    keys: Vec<u64>,
    /// Key to the block holding it (lookups only).
    cached: KeyMap,
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
                keyed: false,
            })
            .collect();
        KvPool {
            blocks,
            keys: vec![0; total as usize],
            // Never more keys than blocks: the map never grows.
            cached: KeyMap::with_capacity_and_hasher(total as usize, Default::default()),
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
            match self.cached.get(key) {
                Some(&block) => out.push(block),
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
        if b.keyed {
            b.keyed = false;
            self.cached.remove(&self.keys[block as usize]);
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
        if b.keyed {
            return;
        }
        if let Entry::Vacant(slot) = self.cached.entry(key) {
            slot.insert(block);
            b.keyed = true;
            self.keys[block as usize] = key;
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
