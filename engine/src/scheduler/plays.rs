//! Plays: the scheduled instances of trees.
//!
//! Owns the plays (planned, started, done) by play id (with forgetting on,
//! finished plays are dropped from the front, ids unchanged: an
//! [`IdWindow`]), how many are live, and the open-loop plan
//! ([`open_loop`]: each play's planned arrival, a pure function of the
//! trees and the policy). A play's turns are a contiguous block of slots
//! from `slot_base`; the slots themselves are [`super::slots`]'s.

use std::ops::{Index, IndexMut, Range};

use crate::dag::CompiledTree;
use crate::policy::Policy;
use crate::time::Nanos;
use crate::window::IdWindow;

use super::types::{Play, Stats};

/// The open-loop plan: every tree times `copies`, copy-major, each planned
/// at its arrival (the policy's arrival process, or the tree's recorded
/// arrival) plus its copy's stagger. With `--shard I/N` only the plays at
/// indices `k ≡ I (mod N)` of that plan are kept: offsets and staggers are
/// the unsharded plan's.
pub(super) fn open_loop(trees: &[CompiledTree], policy: &Policy) -> Vec<Play> {
    let count = trees.len() * policy.copies as usize;
    let offsets = policy.arrival.offsets(count, policy.seed);
    let mut plays = Vec::with_capacity(count);
    for copy in 0..policy.copies {
        for (tree, compiled) in (0u32..).zip(trees) {
            let base = match &offsets {
                Some(o) => o[plays.len()],
                None => compiled.arrival,
            };
            let stagger = policy
                .stagger
                .offset(tree, copy, policy.copies, policy.seed);
            plays.push(Play::planned(
                tree,
                copy,
                None,
                base.saturating_add(stagger),
            ));
        }
    }
    if let Some(shard) = policy.shard {
        let mut k = 0u64;
        plays.retain(|_| {
            k += 1;
            shard.keeps(k - 1)
        });
    }
    plays
}

#[derive(Debug, Default)]
pub(super) struct Plays {
    list: IdWindow<Play>,
    /// Plays started and not done.
    live: u32,
}

impl Plays {
    pub(super) fn planned(list: Vec<Play>) -> Self {
        Plays {
            list: list.into(),
            live: 0,
        }
    }

    /// See [`IdWindow::drop_finished`].
    pub(super) fn drop_finished(&mut self, min_drop: u32) {
        self.list.drop_finished(min_drop);
    }

    /// The plays stored, from play id [`Plays::base`].
    pub(super) fn all(&self) -> &[Play] {
        self.list.as_slice()
    }

    /// The id of the first play stored.
    pub(super) fn base(&self) -> u32 {
        self.list.base()
    }

    /// The ids of the plays stored.
    pub(super) fn ids(&self) -> Range<u32> {
        self.list.ids()
    }

    pub(super) fn get(&self, play: u32) -> Option<&Play> {
        self.list.get(play)
    }

    /// Play ids below it are finished (see [`IdWindow::forgotten`]).
    pub(super) fn forgotten(&self) -> u32 {
        self.list.forgotten()
    }

    /// Every play below `play` is finished.
    pub(super) fn forget_below(&mut self, play: u32) {
        self.list.forget_below(play);
    }

    /// Adds a play; returns its index.
    pub(super) fn push(&mut self, play: Play) -> u32 {
        self.list.push(play)
    }

    /// Some play is started and not done.
    #[inline]
    pub(super) fn has_live(&self) -> bool {
        self.live > 0
    }

    /// `play` starts at `at` with `turns` turns from request id `base`.
    pub(super) fn open(&mut self, play: u32, at: Nanos, base: u32, turns: u32, stats: &mut Stats) {
        let p = &mut self.list[play];
        p.started = Some(at);
        p.slot_base = base;
        p.remaining = turns;
        stats.plays_started += 1;
        self.live += 1;
        if self.live > stats.peak_live_trees {
            stats.peak_live_trees = self.live;
            stats.peak_live_trees_at = at;
        }
    }

    /// A request of `play` was dispatched.
    #[inline]
    pub(super) fn request_dispatched(&mut self, play: u32) {
        self.list[play].inflight += 1;
    }

    /// A request of `play` ended.
    #[inline]
    pub(super) fn request_ended(&mut self, play: u32) {
        self.list[play].inflight -= 1;
    }

    /// `count` turns of `play` are history: finished before it started.
    pub(super) fn skip_history(&mut self, play: u32, count: u32) {
        self.list[play].remaining -= count;
    }

    /// One turn of `play` finished at `now`. When it was the play's last,
    /// the play is done; returns its lane, which is free again.
    #[inline]
    pub(super) fn turn_finished(
        &mut self,
        play: u32,
        now: Nanos,
        stats: &mut Stats,
    ) -> Option<u32> {
        let p = &mut self.list[play];
        p.remaining -= 1;
        if p.remaining > 0 {
            return None;
        }
        p.done = Some(now);
        self.live -= 1;
        stats.plays_done += 1;
        p.lane
    }
}

impl Index<u32> for Plays {
    type Output = Play;
    #[inline]
    fn index(&self, play: u32) -> &Play {
        &self.list[play]
    }
}

impl IndexMut<u32> for Plays {
    #[inline]
    fn index_mut(&mut self, play: u32) -> &mut Play {
        &mut self.list[play]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Arrival, Stagger};
    use crate::time::NANOS_PER_SEC;

    fn trees(arrivals: &[Nanos]) -> Vec<CompiledTree> {
        arrivals
            .iter()
            .map(|&arrival| CompiledTree {
                arrival,
                ..CompiledTree::default()
            })
            .collect()
    }

    #[test]
    fn the_open_loop_plan_is_copy_major_with_arrival_and_stagger() {
        let s = NANOS_PER_SEC;
        let policy = Policy {
            copies: 2,
            stagger: Stagger::Even { span: 10 * s },
            ..Policy::default()
        };
        let planned: Vec<(u32, u32, Nanos)> = open_loop(&trees(&[0, 3 * s]), &policy)
            .iter()
            .map(|p| (p.tree, p.copy, p.planned))
            .collect();
        assert_eq!(
            planned,
            vec![(0, 0, 0), (1, 0, 3 * s), (0, 1, 5 * s), (1, 1, 8 * s)]
        );

        let rate = Policy {
            arrival: Arrival::Rate(4.0),
            ..Policy::default()
        };
        let planned: Vec<Nanos> = open_loop(&trees(&[9, 9, 9]), &rate)
            .iter()
            .map(|p| p.planned)
            .collect();
        assert_eq!(planned, vec![0, s / 4, s / 2]);
    }

    #[test]
    fn a_shard_keeps_its_stripe_of_the_unsharded_plan() {
        let s = NANOS_PER_SEC;
        let whole = Policy {
            copies: 2,
            arrival: Arrival::Rate(4.0),
            ..Policy::default()
        };
        let all: Vec<(u32, u32, Nanos)> = open_loop(&trees(&[0, 0, 0]), &whole)
            .iter()
            .map(|p| (p.tree, p.copy, p.planned))
            .collect();
        let shard = Policy {
            shard: Some(crate::policy::Shard { index: 1, count: 4 }),
            ..whole
        };
        let kept: Vec<(u32, u32, Nanos)> = open_loop(&trees(&[0, 0, 0]), &shard)
            .iter()
            .map(|p| (p.tree, p.copy, p.planned))
            .collect();
        assert_eq!(kept, vec![all[1], all[5]]);
        assert_eq!(kept[1], (2, 1, 5 * s / 4));
    }

    #[test]
    fn a_play_is_done_with_its_last_turn_and_frees_its_lane() {
        let mut plays = Plays::default();
        let mut stats = Stats::default();
        let play = plays.push(Play::planned(0, 0, Some(3), 0));
        plays.open(play, 7, 0, 2, &mut stats);
        assert!(plays.has_live());
        assert_eq!(plays.turn_finished(play, 8, &mut stats), None);
        assert_eq!(plays.turn_finished(play, 9, &mut stats), Some(3));
        assert_eq!(plays[play].done, Some(9));
        assert!(!plays.has_live());
        assert_eq!((stats.plays_started, stats.plays_done), (1, 1));
        assert_eq!((stats.peak_live_trees, stats.peak_live_trees_at), (1, 7));
    }
}
