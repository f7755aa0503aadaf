//! The earliest items of a stream by a time key, in memory bounded by a
//! cap: what a reader of a run directory keeps when it needs whole records
//! but not all of them (the Perfetto trace, a calibration's requests).
//!
//! A stream of at most `cap` items is kept whole (no cut). A longer one
//! keeps the `cap` items of the earliest keys as they stream by (a heap
//! that gives up its latest key when full) and then only the items keyed
//! before the earliest key it gave up: the result is every item before a
//! cut, a whole first stretch of time, never a sample. Ties at the cut are
//! all left out, so the result never splits an instant.
//!
//! Owns the rule and its count; knows nothing of records.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The items of the earliest keys, as they stream by.
#[derive(Debug)]
pub struct Earliest<T> {
    cap: usize,
    held: BinaryHeap<Keyed<T>>,
    /// Items added.
    seen: u64,
    /// The earliest key given up so far.
    cut: Option<u64>,
}

/// What [`Earliest`] kept.
#[derive(Debug)]
pub struct Kept<T> {
    /// The items, in the order they were added.
    pub items: Vec<T>,
    /// `Some` when items were left out: `items` are exactly those keyed
    /// before it.
    pub cut: Option<u64>,
    /// Items left out (keyed at or after the cut).
    pub left_out: u64,
}

#[derive(Debug)]
struct Keyed<T> {
    key: u64,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Keyed<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.key, self.seq) == (other.key, other.seq)
    }
}
impl<T> Eq for Keyed<T> {}
impl<T> PartialOrd for Keyed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Keyed<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.key, self.seq).cmp(&(other.key, other.seq))
    }
}

impl<T> Earliest<T> {
    /// At most `cap` items (at least one).
    pub fn new(cap: usize) -> Earliest<T> {
        Earliest {
            cap: cap.max(1),
            held: BinaryHeap::new(),
            seen: 0,
            cut: None,
        }
    }

    /// Takes `item` keyed `key` (a time), if it is early enough.
    pub fn add(&mut self, key: u64, item: T) {
        self.seen += 1;
        if self.cut.is_some_and(|cut| key >= cut) {
            return;
        }
        self.held.push(Keyed {
            key,
            seq: self.seen,
            item,
        });
        if self.held.len() > self.cap {
            if let Some(latest) = self.held.pop() {
                self.cut = Some(self.cut.map_or(latest.key, |c| c.min(latest.key)));
            }
        }
    }

    /// The items kept, in the order they were added.
    pub fn finish(self) -> Kept<T> {
        let cut = self.cut;
        let mut held: Vec<Keyed<T>> = self
            .held
            .into_vec()
            .into_iter()
            // An item held before the cut came down to its key.
            .filter(|h| cut.is_none_or(|c| h.key < c))
            .collect();
        held.sort_unstable_by_key(|h| h.seq);
        let items: Vec<T> = held.into_iter().map(|h| h.item).collect();
        Kept {
            left_out: self.seen - items.len() as u64,
            items,
            cut,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_stream_is_kept_whole_in_its_order() {
        let mut e = Earliest::new(10);
        for i in 0..10u64 {
            e.add(10 - i, i);
        }
        let kept = e.finish();
        assert_eq!(kept.cut, None);
        assert_eq!(kept.left_out, 0);
        assert_eq!(kept.items, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_long_stream_keeps_exactly_the_items_before_the_cut() {
        // 1,000 keys 0..1000 in a fixed shuffled order (as records come,
        // in order of their end), then ten more tied at 95.
        let mut e = Earliest::new(100);
        let n = 1_000u64;
        let mut keys = Vec::new();
        for k in 0..n {
            let key = (k * 389) % n;
            keys.push(key);
            e.add(key, key);
        }
        keys.extend(std::iter::repeat_n(95, 10));
        for _ in 0..10 {
            e.add(95, 95);
        }
        let kept = e.finish();
        let cut = kept.cut.expect("items were left out");
        assert!(kept.items.len() <= 100, "{}", kept.items.len());
        assert_eq!(
            kept.items.len(),
            keys.iter().filter(|&&k| k < cut).count(),
            "every item before the cut"
        );
        assert!(kept.items.iter().all(|&k| k < cut));
        assert_eq!(kept.left_out + kept.items.len() as u64, n + 10);
        let ties = kept.items.iter().filter(|&&k| k == 95).count();
        assert!(ties == 0 || ties == 11, "an instant is never split: {ties}");
        assert_eq!(cut, 95, "the eleven at 95 do not fit beside 0..=94");
    }
}
