//! The timer queue: a binary heap keyed by `(time, sequence)`.
//!
//! Equal times pop in insertion order (the sequence number breaks ties), so
//! the scheduler is deterministic whatever the heap's internal layout. Owns
//! ordering only; what a timer means is the scheduler's business.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::time::Nanos;

#[derive(Debug, Clone, Copy)]
struct Entry<T> {
    key: Nanos,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.seq == other.seq
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    /// Reversed, so `BinaryHeap` (a max-heap) pops the earliest first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.key, other.seq).cmp(&(self.key, self.seq))
    }
}

/// A min-queue of items by `(key, insertion order)`.
#[derive(Debug, Clone)]
pub struct EventQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
}

impl<T> Default for EventQueue<T> {
    fn default() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<T: Copy> EventQueue<T> {
    pub fn with_capacity(capacity: usize) -> Self {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            next_seq: 0,
        }
    }

    pub fn push(&mut self, key: Nanos, item: T) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { key, seq, item });
    }

    /// The earliest key, if any.
    pub fn peek_key(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.key)
    }

    /// Removes and returns the earliest item if its key is at most `limit`.
    pub fn pop_due(&mut self, limit: Nanos) -> Option<(Nanos, T)> {
        match self.heap.peek() {
            Some(e) if e.key <= limit => self.heap.pop().map(|e| (e.key, e.item)),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Removes everything, returning the items in no particular order.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.heap.drain().map(|e| e.item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_pop_in_insertion_order() {
        let mut q = EventQueue::default();
        q.push(5, 'a');
        q.push(3, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        q.push(4, 'e');
        let mut out = Vec::new();
        while let Some((_, item)) = q.pop_due(u64::MAX) {
            out.push(item);
        }
        assert_eq!(out, vec!['b', 'd', 'e', 'a', 'c']);
    }

    #[test]
    fn pop_due_respects_the_limit() {
        let mut q = EventQueue::default();
        q.push(10, 1u32);
        assert_eq!(q.pop_due(9), None);
        assert_eq!(q.peek_key(), Some(10));
        assert_eq!(q.pop_due(10), Some((10, 1)));
        assert!(q.is_empty());
    }
}
