//! Slots: the per-request state of every turn of every started play.
//!
//! Owns the [`Slot`]s, by request id (a play's turns are one contiguous
//! block of ids, allocated when it starts; with forgetting on, the blocks
//! of finished plays are dropped from the front, ids unchanged: an
//! [`IdWindow`]), and a request's legal moves once dispatched: which
//! reports a driver may make (misuse is an [`EngineError`] and changes
//! nothing) and what sending and ending record. When a turn becomes
//! eligible, what its end releases, and which blocks are finished, is the
//! core's business.

use std::ops::{Index, IndexMut};

use crate::dag::CompiledTree;
use crate::error::EngineError;
use crate::time::Nanos;
use crate::window::IdWindow;

use super::types::{Outcome, RequestId, Slot, TurnState};

#[derive(Debug, Default)]
pub(super) struct Slots {
    slots: IdWindow<Slot>,
}

impl Slots {
    pub(super) fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }

    /// See [`IdWindow::drop_finished`].
    pub(super) fn drop_finished(&mut self, min_drop: u32) {
        self.slots.drop_finished(min_drop);
    }

    /// The slots stored, from request id [`Slots::base`].
    pub(super) fn all(&self) -> &[Slot] {
        self.slots.as_slice()
    }

    /// The request id of the first slot stored.
    pub(super) fn base(&self) -> u32 {
        self.slots.base()
    }

    /// Request ids below it are finished (see [`IdWindow::forgotten`]).
    pub(super) fn forgotten(&self) -> u32 {
        self.slots.forgotten()
    }

    /// Every request below `id` is of a finished play.
    pub(super) fn forget_below(&mut self, id: u32) {
        self.slots.forget_below(id);
    }

    pub(super) fn get(&self, id: RequestId) -> Option<&Slot> {
        u32::try_from(id).ok().and_then(|i| self.slots.get(i))
    }

    #[inline]
    pub(super) fn get_mut(&mut self, index: u32) -> Option<&mut Slot> {
        self.slots.get_mut(index)
    }

    /// Allocates the turns of `play`, a play of `tree`, all blocked on
    /// their incoming edges; returns the request id of its turn 0.
    pub(super) fn open(&mut self, play: u32, tree: &CompiledTree) -> u32 {
        let base = self.slots.end();
        self.slots.extend(
            (0..tree.turn_count())
                .map(|turn| Slot::blocked(play, turn, tree.in_degree[turn as usize])),
        );
        base
    }

    /// The `turns` slots of a play from request id `base`.
    #[inline]
    pub(super) fn block_mut(&mut self, base: u32, turns: u32) -> &mut [Slot] {
        self.slots.range_mut(base, base + turns)
    }

    /// The slots stored, mutable, from request id [`Slots::base`].
    pub(super) fn all_mut(&mut self) -> &mut [Slot] {
        self.slots.as_mut_slice()
    }
    /// Skips the turns not yet sent of the play whose `turns` turns start
    /// at request id `base`, those `skip(turn)` selects; returns their
    /// request ids.
    pub(super) fn skip_pending(
        &mut self,
        base: u32,
        turns: u32,
        skip: impl Fn(u32) -> bool,
    ) -> Vec<u32> {
        let mut skipped = Vec::new();
        for (index, slot) in (base..).zip(self.block_mut(base, turns)) {
            if slot.state.is_pending() && skip(slot.turn) {
                slot.state = TurnState::Skipped;
                skipped.push(index);
            }
        }
        skipped
    }

    /// The slot of `id` if the request is in flight, and whether it was
    /// reported sent; otherwise what the driver got wrong.
    pub(super) fn in_flight(&self, id: RequestId) -> Result<(u32, bool), EngineError> {
        let slot = self.get(id).ok_or(EngineError::UnknownRequest(id))?;
        match slot.state {
            TurnState::Dispatched => Ok((id as u32, false)),
            TurnState::Sent => Ok((id as u32, true)),
            TurnState::Done | TurnState::Failed | TurnState::Cancelled => {
                Err(EngineError::AlreadyCompleted(id))
            }
            _ => Err(EngineError::NotDispatched(id)),
        }
    }

    /// The request went on the wire at `at` (idle shift `shift` by then).
    #[inline]
    pub(super) fn mark_sent(&mut self, index: u32, at: Nanos, shift: Nanos) {
        let slot = &mut self.slots[index];
        slot.state = TurnState::Sent;
        slot.sent = at;
        slot.shift_at_sent = shift;
    }

    /// The request ended at `at` with `outcome`; returns its play.
    #[inline]
    pub(super) fn mark_end(
        &mut self,
        index: u32,
        at: Nanos,
        shift: Nanos,
        outcome: Outcome,
    ) -> u32 {
        let slot = &mut self.slots[index];
        slot.end = at;
        slot.shift_at_end = shift;
        slot.state = TurnState::ended(outcome);
        slot.play
    }
}

impl Index<u32> for Slots {
    type Output = Slot;
    #[inline]
    fn index(&self, index: u32) -> &Slot {
        &self.slots[index]
    }
}

impl IndexMut<u32> for Slots {
    #[inline]
    fn index_mut(&mut self, index: u32) -> &mut Slot {
        &mut self.slots[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three_turns() -> Slots {
        let tree = CompiledTree {
            agent_of: vec![0, 0, 1],
            in_degree: vec![0, 1, 1],
            ..CompiledTree::default()
        };
        let mut slots = Slots::default();
        assert_eq!(slots.open(0, &tree), 0);
        slots
    }

    #[test]
    fn only_requests_in_flight_may_be_reported() {
        let mut slots = three_turns();
        assert_eq!(slots.in_flight(9), Err(EngineError::UnknownRequest(9)));
        assert_eq!(slots.in_flight(0), Err(EngineError::NotDispatched(0)));
        slots[0].state = TurnState::Dispatched;
        assert_eq!(slots.in_flight(0), Ok((0, false)));
        slots.mark_sent(0, 5, 1);
        assert_eq!(slots.in_flight(0), Ok((0, true)));
        assert_eq!(slots.mark_end(0, 9, 2, Outcome::EndTrajectory), 0);
        assert_eq!(slots.in_flight(0), Err(EngineError::AlreadyCompleted(0)));
        let s = slots[0];
        assert_eq!((s.state, s.sent, s.end), (TurnState::Failed, 5, 9));
        assert_eq!((s.shift_at_sent, s.shift_at_end), (1, 2));
    }

    #[test]
    fn skipping_touches_only_selected_pending_turns() {
        let mut slots = three_turns();
        slots[1].state = TurnState::Sent;
        assert_eq!(slots.skip_pending(0, 3, |turn| turn != 2), vec![0]);
        let states: Vec<TurnState> = slots.all().iter().map(|s| s.state).collect();
        assert_eq!(
            states,
            vec![TurnState::Skipped, TurnState::Sent, TurnState::Blocked]
        );
    }
}
