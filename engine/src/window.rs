//! A vector indexed by dense `u32` ids whose finished prefix can be dropped.
//!
//! Owns [`IdWindow`]: the items of ids `base..end` in one `Vec`, the id of
//! the first one (`base`), and how far the caller declared the prefix
//! finished (`forget_below`). The finished prefix is drained only when it
//! is at least [`IdWindow::min_drop`] items and at least half of what is
//! stored, so every item is moved at most once per time its prefix is
//! dropped: amortized O(1), and a short run (or a plan) never moves
//! anything. Ids never change; an id below `base` is simply not there.
//! The scheduler's slots and plays, and the live driver's per-request and
//! per-play tables, are such windows.

use std::ops::{Index, IndexMut, Range};

/// Items of ids `base..end`; see the module documentation.
#[derive(Debug, Clone)]
pub struct IdWindow<T> {
    items: Vec<T>,
    /// Id of `items[0]`.
    base: u32,
    /// Ids below it are finished and may be dropped (`base <= forgotten`).
    forgotten: u32,
    /// Drain only a finished prefix of at least this many items; `u32::MAX`:
    /// never drain (the default: everything is kept).
    min_drop: u32,
}

impl<T> Default for IdWindow<T> {
    fn default() -> Self {
        IdWindow::from(Vec::new())
    }
}

impl<T> From<Vec<T>> for IdWindow<T> {
    /// A window of `items` from id 0 that keeps everything.
    fn from(items: Vec<T>) -> Self {
        IdWindow {
            items,
            base: 0,
            forgotten: 0,
            min_drop: u32::MAX,
        }
    }
}

impl<T> IdWindow<T> {
    /// From now on, a finished prefix of at least `min_drop` items (and at
    /// least half of what is stored) is dropped.
    pub fn drop_finished(&mut self, min_drop: u32) {
        self.min_drop = min_drop;
    }

    /// The id of the first item stored.
    pub fn base(&self) -> u32 {
        self.base
    }

    /// One past the id of the last item stored (the next id pushed).
    pub fn end(&self) -> u32 {
        self.base + self.items.len() as u32
    }

    /// The ids stored.
    pub fn ids(&self) -> Range<u32> {
        self.base..self.end()
    }

    /// Ids below it were declared finished (some may still be stored).
    pub fn forgotten(&self) -> u32 {
        self.forgotten
    }

    pub fn reserve(&mut self, additional: usize) {
        self.items.reserve(additional);
    }

    /// Appends `item`; returns its id.
    pub fn push(&mut self, item: T) -> u32 {
        self.items.push(item);
        self.end() - 1
    }

    pub fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        self.items.extend(items);
    }

    /// The items stored, from id [`IdWindow::base`].
    pub fn as_slice(&self) -> &[T] {
        &self.items
    }

    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.items
    }

    /// The items of ids `from..to`, all stored.
    #[inline]
    pub fn range_mut(&mut self, from: u32, to: u32) -> &mut [T] {
        &mut self.items[(from - self.base) as usize..(to - self.base) as usize]
    }

    #[inline]
    pub fn get(&self, id: u32) -> Option<&T> {
        self.items.get(id.checked_sub(self.base)? as usize)
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> Option<&mut T> {
        self.items.get_mut(id.checked_sub(self.base)? as usize)
    }

    /// Every id below `id` (at most [`IdWindow::end`]) is finished; drops
    /// the finished prefix when it is large enough (see the module
    /// documentation).
    pub fn forget_below(&mut self, id: u32) {
        self.forgotten = self.forgotten.max(id.min(self.end()));
        let finished = self.forgotten - self.base;
        if finished >= self.min_drop && finished as usize * 2 >= self.items.len() {
            self.items.drain(..finished as usize);
            self.base = self.forgotten;
        }
    }
}

impl<T: Default> IdWindow<T> {
    /// The item of `id`, stored first (with defaults up to it) when `id` is
    /// at or past the end; `None` below the base.
    pub fn entry(&mut self, id: u32) -> Option<&mut T> {
        let index = id.checked_sub(self.base)? as usize;
        if self.items.len() <= index {
            self.items.resize_with(index + 1, T::default);
        }
        Some(&mut self.items[index])
    }
}

impl<T> Index<u32> for IdWindow<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: u32) -> &T {
        &self.items[(id - self.base) as usize]
    }
}

impl<T> IndexMut<u32> for IdWindow<T> {
    #[inline]
    fn index_mut(&mut self, id: u32) -> &mut T {
        &mut self.items[(id - self.base) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_by_default() {
        let mut w: IdWindow<u32> = (0..10).collect::<Vec<_>>().into();
        w.forget_below(10);
        assert_eq!((w.base(), w.end(), w.forgotten()), (0, 10, 10));
        assert_eq!(w.get(0), Some(&0));
    }

    #[test]
    fn drops_a_finished_prefix_once_it_is_half_and_large_enough() {
        let mut w = IdWindow::default();
        w.drop_finished(3);
        for id in 0..8u32 {
            assert_eq!(w.push(id * 10), id);
        }
        // 2 finished: under the minimum.
        w.forget_below(2);
        assert_eq!(w.base(), 0);
        // 3 finished of 8 stored: under half.
        w.forget_below(3);
        assert_eq!((w.base(), w.get(0)), (0, Some(&0)));
        // 4 of 8: dropped; ids stay.
        w.forget_below(4);
        assert_eq!((w.base(), w.end(), w.as_slice().len()), (4, 8, 4));
        assert_eq!((w.get(3), w.get(4), w[7]), (None, Some(&40), 70));
        assert_eq!(w.push(80), 8);
        // Never past the end; never backwards.
        w.forget_below(100);
        w.forget_below(1);
        assert_eq!((w.forgotten(), w.base()), (9, 9));
        assert_eq!(w.entry(3), None);
    }

    #[test]
    fn an_entry_past_the_end_is_made_with_defaults() {
        let mut w: IdWindow<Option<u8>> = IdWindow::default();
        *w.entry(3).unwrap() = Some(7);
        assert_eq!(w.as_slice(), &[None, None, None, Some(7)]);
    }
}
