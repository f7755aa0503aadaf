//! The prefix cache's lookup table: block key to the block holding it.
//!
//! Open addressing with linear probing. A key and its block sit side by
//! side in one 16-byte entry, four to a cache line, so a probe usually
//! reads one line (a general-purpose map reads a control line and a
//! bucket line). The table has a power-of-two size at least twice the
//! keys it may hold, so it is at most half full and probes stay short.
//! A removal shifts the entries after it back (no tombstones), and says
//! which blocks moved so their owner can follow them.
//!
//! The table is bigger than a core's cache, so a lookup, a naming or a
//! removal may wait on memory. Callers that know a run of keys ahead
//! read their entries first ([`KeyTable::warm_key`]): independent reads
//! the core sends out together, instead of one after another as each
//! probe waits on the last. (Measured: 8-byte entries, a 32-bit tag with the full keys kept per
//! block, were slower on the capacity bench than these 16-byte ones.)
//!
//! Must not: know what a block holds, or iterate its entries for anything
//! but the shift of a removal.

/// An empty entry's block.
const EMPTY: u32 = u32::MAX;

/// The multiplier of the key hash (2^64 over the golden ratio, odd).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u64,
    block: u32,
    /// The entry the key's probe starts at (in what would otherwise be
    /// padding), so a removal's shift need not hash the keys it passes.
    home: u32,
}

/// Where a key is, or where it would go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// The key is held, by `block`, in entry `at`.
    Found { at: u32, block: u32 },
    /// The key is absent; entry `at` is where it goes.
    Vacant { at: u32 },
}

/// Keys to blocks, for at most `capacity` keys (see the module doc).
#[derive(Debug, Clone)]
pub struct KeyTable {
    entries: Vec<Entry>,
    mask: usize,
}

impl KeyTable {
    /// A table that holds up to `capacity` keys.
    pub fn new(capacity: u32) -> KeyTable {
        let size = (capacity as usize)
            .saturating_mul(2)
            .max(2)
            .next_power_of_two()
            // Homes fit the entry's 32 bits (a pool of 2^31 blocks or
            // more gets a table fuller than half).
            .min(1 << 32);
        KeyTable {
            entries: vec![
                Entry {
                    key: 0,
                    block: EMPTY,
                    home: 0,
                };
                size
            ],
            mask: size - 1,
        }
    }

    /// The entry a key's probe starts at: the key folded with one 128-bit
    /// multiply (its halves xored), so every bit of the key moves it.
    fn home(&self, key: u64) -> usize {
        let product = u128::from(key) * u128::from(MIX);
        ((product as u64) ^ ((product >> 64) as u64)) as usize & self.mask
    }

    /// Reads the entry a probe of `key` starts at, so the probe that
    /// follows finds it cached. The value means nothing; fold it into
    /// [`std::hint::black_box`] so the read is kept.
    pub fn warm_key(&self, key: u64) -> u32 {
        self.entries[self.home(key)].block
    }

    /// Looks `key` up.
    pub fn probe(&self, key: u64) -> Probe {
        let mut at = self.home(key);
        loop {
            let entry = self.entries[at];
            if entry.block == EMPTY {
                return Probe::Vacant { at: at as u32 };
            }
            if entry.key == key {
                return Probe::Found {
                    at: at as u32,
                    block: entry.block,
                };
            }
            at = (at + 1) & self.mask;
        }
    }

    /// The block holding `key`, if any.
    pub fn get(&self, key: u64) -> Option<u32> {
        match self.probe(key) {
            Probe::Found { block, .. } => Some(block),
            Probe::Vacant { .. } => None,
        }
    }

    /// Fills the vacant entry `at` (from [`KeyTable::probe`] of `key`,
    /// with no change since) with `key` held by `block`.
    pub fn fill(&mut self, at: u32, key: u64, block: u32) {
        self.entries[at as usize] = Entry {
            key,
            block,
            home: self.home(key) as u32,
        };
    }

    /// Empties entry `at`. Entries after it that would no longer be found
    /// shift back into the gap; `moved(block, at)` is told each one's new
    /// place.
    #[inline]
    pub fn remove(&mut self, at: u32, mut moved: impl FnMut(u32, u32)) {
        let mut hole = at as usize & self.mask;
        let mut next = hole;
        loop {
            next = (next + 1) & self.mask;
            let entry = self.entries[next];
            if entry.block == EMPTY {
                break;
            }
            // The entry may fill the hole if the hole lies between its
            // home and where it sits (cyclically): its probe passes the
            // hole on the way.
            let from_home = next.wrapping_sub(entry.home as usize) & self.mask;
            let from_hole = next.wrapping_sub(hole) & self.mask;
            if from_home >= from_hole {
                self.entries[hole] = entry;
                moved(entry.block, hole as u32);
                hole = next;
            }
        }
        self.entries[hole].block = EMPTY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_it_holds_after_removals() {
        // Keys that collide on purpose: a table of 8 entries, and keys
        // whose home is found by trial, so runs wrap around the end.
        let mut table = KeyTable::new(4);
        assert_eq!(table.entries.len(), 8);
        let keys: Vec<u64> = (0..4).map(|i| i * 1_000_003 + 7).collect();
        let mut place = vec![0u32; keys.len()];
        for (block, &key) in keys.iter().enumerate() {
            let Probe::Vacant { at } = table.probe(key) else {
                panic!("absent key found");
            };
            table.fill(at, key, block as u32);
            place[block] = at;
        }
        for (block, &key) in keys.iter().enumerate() {
            assert_eq!(table.get(key), Some(block as u32));
        }
        // Remove every other key; the rest stay findable where the table
        // says they moved.
        for block in [0usize, 2] {
            let at = place[block];
            table.remove(at, |b, to| place[b as usize] = to);
        }
        assert_eq!(table.get(keys[0]), None);
        assert_eq!(table.get(keys[2]), None);
        for block in [1usize, 3] {
            assert_eq!(
                table.probe(keys[block]),
                Probe::Found {
                    at: place[block],
                    block: block as u32
                }
            );
        }
    }

    #[test]
    fn agrees_with_a_map_under_churn() {
        use std::collections::BTreeMap;
        // A small table kept full to its limit: every removal shifts.
        let mut table = KeyTable::new(16);
        let mut model: BTreeMap<u64, u32> = BTreeMap::new();
        let mut place: Vec<Option<u32>> = vec![None; 16];
        let mut x: u64 = 1;
        for step in 0..20_000u32 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let key = (x >> 33) % 64;
            let block = step % 16;
            if let Some(at) = place[block as usize].take() {
                let old = model.iter().find(|(_, &b)| b == block).map(|(&k, _)| k);
                if let Some(old) = old {
                    model.remove(&old);
                }
                table.remove(at, |b, to| place[b as usize] = Some(to));
            }
            match table.probe(key) {
                Probe::Found { block: b, .. } => assert_eq!(model.get(&key), Some(&b)),
                Probe::Vacant { at } => {
                    assert_eq!(model.get(&key), None);
                    table.fill(at, key, block);
                    model.insert(key, block);
                    place[block as usize] = Some(at);
                }
            }
            for k in 0..64 {
                assert_eq!(table.get(k), model.get(&k).copied(), "key {k}");
            }
        }
    }
}
