//! The accelerated cache warmup at run time: `--warmup-requests-per-lane
//! K` and `--cache-warmup-duration DUR` (docs/agentx.md, "The accelerated
//! cache warmup").
//!
//! Owns, with a start window, which requests of each lane's first play are
//! accelerated warmups (planned by [`crate::start::accelerated`]), the
//! turns that wait for the profiling start (the hand-off gate), how many
//! warmups (boundary and accelerated) have not returned, the lanes whose
//! next play waits for the profiling start, and the duration form's hand-
//! back of the accelerated turns not yet released. It marks slots and
//! answers the core's questions; when a turn is scheduled, and the
//! profiling start itself, are the core's (and `warmup`'s) business.
//! Inert (`Default`) without the accelerated warmup: nothing is marked,
//! gated or deferred.

use crate::dag::CompiledTree;
use crate::policy::Policy;
use crate::start::{accelerated, mid_start};
use crate::time::Nanos;

use super::types::{Lane, Slot, TurnState};

#[derive(Debug, Default)]
pub(super) struct CacheWarmup {
    /// The accelerated warmup is on and profiling has not started.
    holds: bool,
    /// Per lane: the accelerated turns of its first play, until it enters.
    plans: Vec<Option<Vec<bool>>>,
    /// The boundary instant (every lane at its `t*`): no accelerated turn
    /// goes before it. A heap key: the idle cap is off during the warmup,
    /// so keys are times.
    from: Nanos,
    /// The boundary instant has come.
    reached: bool,
    /// Warmups planned (boundary and accelerated) less those that
    /// returned, were skipped, or were handed back to profiling.
    outstanding: u64,
    /// Every accelerated request id so far, in order.
    requests: Vec<u32>,
    /// Live turns of first plays that wait for the profiling start.
    gated: Vec<u32>,
    /// Lanes whose first play ended during the warmup.
    deferred: Vec<u32>,
}

/// What the profiling start releases.
#[derive(Debug, Default)]
pub(super) struct HandOff {
    /// Turns waiting for the profiling start: their constraint becomes the
    /// later of it and their recorded one (`residual = max(0, delay −
    /// drain wait)`).
    pub(super) gated: Vec<u32>,
    /// Lanes that start their next play then.
    pub(super) lanes: Vec<u32>,
}

impl CacheWarmup {
    /// Plans the accelerated turns of every lane's first play (lanes with
    /// a `t*`): the first `warmup_requests_per_lane` live turns, or every
    /// live turn for the duration form, whose count is not known
    /// beforehand). The count form adds its requests to each lane's
    /// planned `warmups`. `from` is the boundary instant.
    pub(super) fn plan(
        policy: &Policy,
        lanes: &mut [Lane],
        trees: &[CompiledTree],
        from: Nanos,
    ) -> Self {
        let count = match policy.warmup_requests_per_lane {
            0 => u32::MAX,
            k => k,
        };
        let mut outstanding = 0u64;
        let plans = lanes
            .iter_mut()
            .map(|lane| {
                let t_star = lane.t_star?;
                let &(tree, _) = lane.share.first()?;
                let tree = &trees[tree as usize];
                let mid = mid_start(tree, t_star);
                let set = accelerated(tree, &mid, count);
                let chosen = set.iter().filter(|&&a| a).count();
                outstanding += (mid.warm.len() + chosen) as u64;
                if policy.warmup_requests_per_lane > 0 {
                    lane.warmups += chosen as u32;
                }
                Some(set)
            })
            .collect();
        CacheWarmup {
            holds: true,
            plans,
            from,
            reached: false,
            outstanding,
            requests: Vec::new(),
            gated: Vec::new(),
            deferred: Vec::new(),
        }
    }

    /// The warmup is under way: the global idle cap is off and a lane
    /// whose first play ended waits for the profiling start.
    #[inline]
    pub(super) fn holds(&self) -> bool {
        self.holds
    }

    /// Marks the accelerated turns of `lane`'s first play (`slots`, from
    /// request id `base`, just entered at `t*`) as warmups, and gates every
    /// other live turn on the profiling start (one more pending edge).
    pub(super) fn enter(&mut self, lane: u32, base: u32, slots: &mut [Slot]) {
        if !self.holds {
            return;
        }
        let Some(plan) = self.plans.get_mut(lane as usize).and_then(Option::take) else {
            return;
        };
        for ((id, slot), accelerated) in (base..).zip(slots.iter_mut()).zip(plan) {
            if accelerated {
                slot.warmup = true;
                slot.accelerated = true;
                self.requests.push(id);
            } else if slot.state == TurnState::Blocked && !slot.warmup {
                slot.pending_in += 1;
                self.gated.push(id);
            }
        }
    }

    /// The heap key `slot` is due at once its edges resolved at `now_key`:
    /// an accelerated turn at once (no gaps), not before the boundary
    /// instant; any other turn at its own.
    #[inline]
    pub(super) fn due_key(&self, slot: &Slot, now_key: Nanos) -> Nanos {
        if slot.accelerated {
            self.from.max(now_key)
        } else {
            slot.due_key
        }
    }

    /// `count` warmups returned or were skipped.
    pub(super) fn returned(&mut self, count: u64) {
        self.outstanding = self.outstanding.saturating_sub(count);
    }

    /// The boundary instant came.
    pub(super) fn reach(&mut self) {
        self.reached = true;
    }

    /// `lane`'s first play ended during the warmup: its next play waits.
    pub(super) fn defer(&mut self, lane: u32) {
        self.deferred.push(lane);
    }

    /// The duration is up: accelerated turns not yet released become
    /// measured turns waiting for the profiling start, with their recorded
    /// constraints. Those already released (on a timer, queued or in
    /// flight) stay warmups. `slots` are the slots from request id `base`
    /// (those below are of finished plays: nothing to release).
    pub(super) fn close(&mut self, base: u32, slots: &mut [Slot]) {
        if !self.holds {
            return;
        }
        for &id in &self.requests {
            let Some(slot) = id.checked_sub(base).and_then(|i| slots.get_mut(i as usize)) else {
                continue;
            };
            if slot.accelerated && slot.state == TurnState::Blocked {
                slot.accelerated = false;
                slot.warmup = false;
                slot.pending_in += 1;
                self.gated.push(id);
                self.outstanding = self.outstanding.saturating_sub(1);
            }
        }
    }

    /// Whether profiling starts now: the boundary instant came and every
    /// warmup returned.
    pub(super) fn ready(&self) -> bool {
        self.holds && self.reached && self.outstanding == 0
    }

    /// Profiling starts: the warmup is over; what waited for it.
    pub(super) fn hand_off(&mut self) -> HandOff {
        self.holds = false;
        HandOff {
            gated: std::mem::take(&mut self.gated),
            lanes: std::mem::take(&mut self.deferred),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_by_default() {
        let mut c = CacheWarmup::default();
        assert!(!c.holds());
        assert!(!c.ready());
        let mut slots = [Slot::blocked(0, 0, 1)];
        c.enter(0, 0, &mut slots);
        assert_eq!(slots[0].pending_in, 1);
        assert!(!slots[0].warmup);
    }

    #[test]
    fn entering_marks_the_plan_and_gates_the_rest() {
        let mut c = CacheWarmup {
            holds: true,
            plans: vec![Some(vec![false, true, false])],
            from: 50,
            outstanding: 1,
            ..CacheWarmup::default()
        };
        let mut slots = [
            Slot::blocked(0, 0, 0),
            Slot::blocked(0, 1, 0),
            Slot::blocked(0, 2, 1),
        ];
        slots[0].state = TurnState::History;
        c.enter(0, 10, &mut slots);
        assert!(slots[1].warmup && slots[1].accelerated);
        assert_eq!(c.due_key(&slots[1], 20), 50);
        assert_eq!(c.due_key(&slots[1], 60), 60);
        assert_eq!(c.due_key(&slots[2], 60), slots[2].due_key);
        assert_eq!(slots[2].pending_in, 2);
        assert_eq!(slots[0].pending_in, 0, "history is not gated");
        assert!(!c.ready(), "the boundary has not come");
        c.reach();
        assert!(!c.ready(), "one warmup out");
        c.returned(1);
        assert!(c.ready());
        let hand = c.hand_off();
        assert_eq!(hand.gated, vec![12]);
        assert!(!c.holds());
    }
}
