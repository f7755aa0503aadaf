//! Idle shifts: the global idle-gap cap and the per-tree watchdog.
//!
//! Owns the shifted time base (`key = due + shift`, see the scheduler's
//! "Idle-gap cap" section), when the system last became idle, and the two
//! caps. The global cap raises `shift` once, moving every pending timer;
//! the per-tree watchdog moves one play's own pending constraints earlier
//! and re-queues its timers (the old heap entries become tombstones the
//! core skips). Whether the system is busy is the core's call.

use crate::queue::EventQueue;
use crate::time::Nanos;

use super::types::{Slot, Stats, Timer, TurnState};

#[derive(Debug, Default)]
pub(super) struct IdleShift {
    /// Global idle-gap cap.
    cap: Option<Nanos>,
    /// Per-tree idle cap (the watchdog).
    tree_cap: Option<Nanos>,
    /// Total idle time skipped so far.
    shift: Nanos,
    /// When the system last became idle (nothing in flight or waiting).
    since: Option<Nanos>,
}

impl IdleShift {
    pub(super) fn new(cap: Option<Nanos>, tree_cap: Option<Nanos>) -> Self {
        IdleShift {
            cap,
            tree_cap,
            ..IdleShift::default()
        }
    }

    #[inline]
    pub(super) fn shift(&self) -> Nanos {
        self.shift
    }

    /// The heap key of a timer due at `due`.
    #[inline]
    pub(super) fn key(&self, due: Nanos) -> Nanos {
        due.saturating_add(self.shift)
    }

    /// The due time of a heap key.
    #[inline]
    pub(super) fn due(&self, key: Nanos) -> Nanos {
        key.saturating_sub(self.shift)
    }

    /// Something is in flight or waits for the cap.
    #[inline]
    pub(super) fn busy(&mut self) {
        self.since = None;
    }

    /// The system is idle at `now`: if the next timer (`next_key`) is due
    /// later than the cap allows from when idleness began, skip the excess.
    pub(super) fn idle(&mut self, now: Nanos, next_key: Option<Nanos>, stats: &mut Stats) {
        let since = *self.since.get_or_insert(now);
        let (Some(cap), Some(key)) = (self.cap, next_key) else {
            return;
        };
        let due = self.due(key);
        let target = since.saturating_add(cap).max(now);
        if due > target {
            let delta = due - target;
            self.shift += delta;
            stats.idle_shifts += 1;
            stats.idle_skipped += delta;
        }
    }

    /// The per-tree watchdog, for a play with nothing in flight whose
    /// turns are `slots` (request ids from `base`): when none is queued and
    /// its next timer is more than the tree cap away, every pending
    /// constraint of the play moves earlier by the same amount and its
    /// timers are re-queued.
    pub(super) fn watch_tree(
        &self,
        now: Nanos,
        base: u32,
        slots: &mut [Slot],
        timers: &mut EventQueue<Timer>,
        stats: &mut Stats,
    ) {
        let Some(cap) = self.tree_cap else {
            return;
        };
        if slots.iter().any(|s| s.state == TurnState::Queued) {
            return;
        }
        let Some(earliest) = slots
            .iter()
            .filter(|s| s.state == TurnState::Timer)
            .map(|s| self.due(s.due_key))
            .min()
        else {
            return;
        };
        let target = now.saturating_add(cap);
        if earliest <= target {
            return;
        }
        let delta = earliest - target;
        stats.tree_idle_shifts += 1;
        stats.tree_idle_skipped += delta;
        for (index, slot) in (base..).zip(slots.iter_mut()) {
            if slot.state.is_pending() && slot.state != TurnState::Queued {
                slot.due_key = slot.due_key.saturating_sub(delta);
                if slot.state == TurnState::Timer {
                    timers.push(slot.due_key, Timer::Turn(index));
                }
            }
        }
    }

    /// Whether the per-tree watchdog is on.
    #[inline]
    pub(super) fn watches_trees(&self) -> bool {
        self.tree_cap.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_gap_longer_than_the_cap_is_skipped_once() {
        let mut idle = IdleShift::new(Some(10), None);
        let mut stats = Stats::default();
        // Idle since 5; the next timer is due at 100: skip to 15.
        idle.idle(5, Some(100), &mut stats);
        assert_eq!(idle.shift(), 85);
        assert_eq!(idle.due(100), 15);
        assert_eq!(idle.key(15), 100);
        // Still idle at 15 since 5: nothing more to skip.
        idle.idle(15, Some(100), &mut stats);
        assert_eq!((stats.idle_shifts, stats.idle_skipped), (1, 85));
        idle.busy();
        idle.idle(20, Some(100), &mut stats);
        assert_eq!(idle.shift(), 85);
    }

    #[test]
    fn the_watchdog_moves_one_plays_timers() {
        let idle = IdleShift::new(None, Some(10));
        let mut slots = [Slot::blocked(0, 0, 0), Slot::blocked(0, 1, 1)];
        slots[0].state = TurnState::Timer;
        slots[0].due_key = 50;
        slots[1].due_key = 40;
        let mut timers = EventQueue::default();
        let mut stats = Stats::default();
        idle.watch_tree(0, 4, &mut slots, &mut timers, &mut stats);
        // Due at 50, allowed at 10: both constraints move 40 earlier.
        assert_eq!((slots[0].due_key, slots[1].due_key), (10, 0));
        assert_eq!(timers.peek_key(), Some(10));
        assert!(matches!(timers.pop_due(10), Some((10, Timer::Turn(4)))));
        assert_eq!((stats.tree_idle_shifts, stats.tree_idle_skipped), (1, 40));
    }
}
