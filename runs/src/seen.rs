//! What a reader of `records.jsonl` has seen, so that a file holding a
//! record twice is refused instead of counted twice (a `cat records.jsonl
//! records.jsonl` doubled every figure and read as complete).
//!
//! Owns two rules, each an error naming the line: a request id appears at
//! most once ([`RequestIds`], checked by [`crate::record_line::read`] for
//! every reader), and a play has at most as many measured records as its
//! tree has turns in `run.json` ([`PlayRecords`], checked by `summarize`
//! and `merge`, which have `run.json`). Both in bounded memory: ids are
//! dense (a run numbers its requests and plays 0, 1, 2, ...), so they are
//! kept as bits, and a play's count only while it is open.

use std::collections::{BTreeMap, BTreeSet};

/// Ids below this are kept as bits (8 MiB at most); the rare larger ones
/// (a merged run's stripes, a hand-made file) in a set.
const DENSE_IDS: u64 = 1 << 26;

/// A set of ids, mostly dense from 0.
#[derive(Debug, Default)]
pub struct IdSet {
    bits: Vec<u64>,
    sparse: BTreeSet<u64>,
}

impl IdSet {
    /// Adds `id`; false when it was there already.
    pub fn insert(&mut self, id: u64) -> bool {
        if id >= DENSE_IDS {
            return self.sparse.insert(id);
        }
        let (word, bit) = ((id / 64) as usize, 1u64 << (id % 64));
        if self.bits.len() <= word {
            self.bits.resize(word + 1, 0);
        }
        let fresh = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        fresh
    }

    pub fn contains(&self, id: u64) -> bool {
        if id >= DENSE_IDS {
            return self.sparse.contains(&id);
        }
        self.bits
            .get((id / 64) as usize)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }
}

/// The request ids of the lines read so far.
#[derive(Debug, Default)]
pub struct RequestIds(IdSet);

impl RequestIds {
    /// `request` (a line without one is not checked); a second line of
    /// one id is refused.
    pub fn add(&mut self, request: Option<u64>) -> Result<(), String> {
        match request {
            Some(id) if !self.0.insert(id) => Err(format!(
                "request {id} is recorded twice (a request has one record; was the file \
                 appended to itself, or two runs' records joined?)"
            )),
            _ => Ok(()),
        }
    }
}

/// Measured records per play against its tree's turns.
#[derive(Debug, Default)]
pub struct PlayRecords {
    tree_turns: Vec<u32>,
    /// Plays with some of their records: (records, turns).
    open: BTreeMap<u32, (u32, u32)>,
    /// Plays with all of them.
    full: IdSet,
}

impl PlayRecords {
    /// `tree_turns[t]`: the turns of tree `t` (`run.json`'s).
    pub fn new(tree_turns: &[u32]) -> PlayRecords {
        PlayRecords {
            tree_turns: tree_turns.to_vec(),
            ..PlayRecords::default()
        }
    }

    /// One measured (not warmup) record of `play`, a play of tree `tree`;
    /// a record beyond the tree's turns is refused. Trees `run.json` does
    /// not list are not checked.
    pub fn add(&mut self, play: u32, tree: u32) -> Result<(), String> {
        let Some(&turns) = self.tree_turns.get(tree as usize) else {
            return Ok(());
        };
        if self.full.contains(u64::from(play)) {
            return Err(format!(
                "play {play} has more records than the {turns} turns of its tree {tree} \
                 (run.json): a record is there twice"
            ));
        }
        let seen = self.open.entry(play).or_insert((0, turns));
        seen.0 += 1;
        if seen.0 >= seen.1 {
            self.open.remove(&play);
            self.full.insert(u64::from(play));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_id_twice_is_refused_dense_or_not() {
        let mut ids = RequestIds::default();
        for id in [0, 1, 63, 64, 5_000_000, u64::MAX, 7] {
            assert!(ids.add(Some(id)).is_ok(), "{id} is new");
        }
        assert!(ids.add(None).is_ok() && ids.add(None).is_ok());
        for id in [0, 64, 5_000_000, u64::MAX] {
            let e = ids.add(Some(id)).err().unwrap_or_default();
            assert!(
                e.contains(&format!("request {id} is recorded twice")),
                "{e}"
            );
        }
    }

    #[test]
    fn a_play_takes_as_many_records_as_its_tree_has_turns() {
        let mut plays = PlayRecords::new(&[2, 1]);
        assert!(plays.add(0, 0).is_ok() && plays.add(1, 1).is_ok());
        assert!(plays.add(0, 0).is_ok(), "play 0's second turn");
        let e = plays.add(0, 0).err().unwrap_or_default();
        assert!(
            e.contains("play 0 has more records than the 2 turns"),
            "{e}"
        );
        assert!(plays.add(1, 1).is_err(), "play 1 has its one record");
        assert!(plays.add(9, 7).is_ok(), "a tree run.json does not list");
        assert!(
            plays.add(u32::MAX, 0).is_ok(),
            "a large play id is no allocation"
        );
    }
}
