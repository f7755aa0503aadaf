//! The start window at run time: each lane's entry point, warmups, the
//! profiling start, and the rule that a failed root warmup aborts the run.
//!
//! Owns everything the start window (the AgentX recipe, `docs/agentx.md`)
//! adds to a run: the planned [`MidStart`] of each lane's first play (from
//! [`crate::start`]'s pure planning) until that play starts, which warmup
//! releases which turn, where measurement starts (a timer, so idle shifts
//! move it), and the warmup whose failure aborted the run. Without a start
//! window it is inert: profiling starts at 0 and no request is a warmup.
//! The core calls it when it plans lanes, enters a lane's first play, fires
//! the profiling timer and ends a warmup.

use crate::dag::CompiledTree;
use crate::policy::StartWindow;
use crate::start::{mid_start, t_star, MidStart};
use crate::time::Nanos;

use super::types::{Lane, Outcome, RequestId, Slot, TurnState, NO_TURN};

/// A warmup request and the turn it releases.
#[derive(Debug, Clone, Copy)]
struct WarmLink {
    warm: u32,
    next: u32,
    /// The warmup is a turn of its tree's root agent.
    root: bool,
}

/// What entering a play at its `t*` left to the core.
#[derive(Debug)]
pub(super) struct Entered {
    /// Turns that are history (finished before the play started).
    pub(super) history: u32,
    /// Slots whose edges are all resolved, to schedule now.
    pub(super) due: Vec<u32>,
}

#[derive(Debug)]
pub(super) struct Warmup {
    /// Per lane: where its first play enters its tree, until it starts.
    entries: Vec<Option<MidStart>>,
    /// Warmups are sent at their recorded lead before `t*`, capped at this.
    spread: Nanos,
    /// Every warmup sent so far and the turn it releases, by request id.
    links: Vec<WarmLink>,
    /// Where measurement starts: 0, or with a start window the instant
    /// every lane reaches its `t*` (after the warmups). The duration counts
    /// from here.
    profiling_start: Nanos,
    /// False until the profiling timer fired (start window only).
    profiling_started: bool,
    /// The root warmup whose failure aborted the run, if one did.
    aborted: Option<RequestId>,
}

impl Default for Warmup {
    /// No start window: profiling starts at 0, nothing is warmed.
    fn default() -> Self {
        Warmup {
            entries: Vec::new(),
            spread: 0,
            links: Vec::new(),
            profiling_start: 0,
            profiling_started: true,
            aborted: None,
        }
    }
}

impl Warmup {
    /// Picks each lane's `t*` and warm turns (recorded on the lanes); the
    /// profiling start is the largest (capped) warmup lead, so every lane
    /// reaches `t*` together.
    pub(super) fn plan(
        window: StartWindow,
        lanes: &mut [Lane],
        trees: &[CompiledTree],
        seed: u64,
        spread: Nanos,
    ) -> Self {
        let mut entries = Vec::with_capacity(lanes.len());
        let mut profiling_start = 0;
        for (index, lane) in (0u32..).zip(lanes.iter_mut()) {
            let Some(&(tree, _)) = lane.share.first() else {
                entries.push(None);
                continue;
            };
            let compiled = &trees[tree as usize];
            let t_star = t_star(compiled, window, seed, tree, index);
            let mid = mid_start(compiled, t_star);
            profiling_start = profiling_start.max(mid.max_lead(compiled).min(spread));
            lane.t_star = Some(t_star);
            lane.warmups = mid.warm.len() as u32;
            entries.push(Some(mid));
        }
        Warmup {
            entries,
            spread,
            links: Vec::new(),
            profiling_start,
            profiling_started: false,
            aborted: None,
        }
    }

    /// Where measurement starts (the planned instant until the profiling
    /// timer fires).
    pub(super) fn profiling_start(&self) -> Nanos {
        self.profiling_start
    }

    /// Where the duration counts from, once profiling started.
    #[inline]
    pub(super) fn measuring_since(&self) -> Option<Nanos> {
        self.profiling_started.then_some(self.profiling_start)
    }

    /// The profiling timer fired at `at`.
    pub(super) fn profiling_fired(&mut self, at: Nanos) {
        self.profiling_start = at;
        self.profiling_started = true;
    }

    /// Where the lane's `lane_play`-th play enters its tree: its planned
    /// [`MidStart`] for the first play, at 0 (`None`) otherwise.
    pub(super) fn entry(&mut self, lane: u32, lane_play: u32) -> Option<MidStart> {
        if lane_play != 0 {
            return None;
        }
        self.entries.get_mut(lane as usize)?.take()
    }

    /// Turns a freshly opened play (its turns `slots`, request ids from
    /// `base`) into one entered at `mid.t_star`: history turns are done,
    /// each warm turn goes out at its (capped) lead before the profiling
    /// start, and every live turn is due at its recorded offset from `t*`,
    /// after its agent's warmup completes and after its live predecessors,
    /// as recorded. Keys are in the shifted time base (`shift`).
    pub(super) fn enter(
        &mut self,
        mid: &MidStart,
        tree: &CompiledTree,
        base: u32,
        slots: &mut [Slot],
        shift: Nanos,
    ) -> Entered {
        let n = slots.len();
        let mut live_in = vec![0u32; n];
        let mut history_in = vec![false; n];
        for t in 0..n {
            for e in tree.out(t as u32) {
                if mid.history[t] {
                    history_in[e.to as usize] = true;
                } else {
                    live_in[e.to as usize] += 1;
                }
            }
        }
        let mut warm_of = vec![NO_TURN; n];
        for &(warm, next) in &mid.warm {
            warm_of[warm as usize] = next;
            self.links.push(WarmLink {
                warm: base + warm,
                next: base + next,
                root: tree.agent_of[warm as usize] == 0,
            });
        }
        let t0 = self.profiling_start;
        let mut history = 0u32;
        let mut due = Vec::new();
        for (t, slot) in slots.iter_mut().enumerate() {
            if mid.history[t] {
                if warm_of[t] == NO_TURN {
                    slot.state = TurnState::History;
                    history += 1;
                } else {
                    slot.warmup = true;
                    slot.pending_in = 0;
                    let lead = mid.lead(tree, t as u32).min(self.spread);
                    slot.due_key = t0.saturating_sub(lead).saturating_add(shift);
                    due.push(base + t as u32);
                }
                continue;
            }
            slot.pending_in = live_in[t];
            if history_in[t] || tree.in_degree[t] == 0 {
                let offset = tree.start[t].saturating_sub(mid.t_star);
                slot.due_key = t0.saturating_add(offset).saturating_add(shift);
            } else {
                slot.due_key = 0;
            }
        }
        for &(_, next) in &mid.warm {
            slots[next as usize].pending_in += 1;
        }
        for (t, slot) in slots.iter().enumerate() {
            if !mid.history[t] && slot.pending_in == 0 && slot.state == TurnState::Blocked {
                due.push(base + t as u32);
            }
        }
        Entered { history, due }
    }

    /// The warmup `slot` ended with `outcome`: returns the turn it releases
    /// (its agent's next). A failed warmup of a root agent aborts the run.
    pub(super) fn ended(&mut self, slot: u32, outcome: Outcome) -> Option<u32> {
        let at = self.links.binary_search_by_key(&slot, |l| l.warm).ok()?;
        let link = self.links[at];
        if link.root && outcome.is_failure() && self.aborted.is_none() {
            self.aborted = Some(RequestId::from(slot));
        }
        Some(link.next)
    }

    /// The request whose failure aborted the run.
    pub(super) fn aborted(&self) -> Option<RequestId> {
        self.aborted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warmup_releases_its_next_turn_and_only_a_failed_root_one_aborts() {
        let mut warmup = Warmup {
            links: vec![
                WarmLink {
                    warm: 1,
                    next: 2,
                    root: true,
                },
                WarmLink {
                    warm: 4,
                    next: 5,
                    root: false,
                },
            ],
            ..Warmup::default()
        };
        assert_eq!(warmup.ended(4, Outcome::Failed), Some(5));
        assert_eq!(warmup.ended(1, Outcome::Cancelled), Some(2));
        assert_eq!(warmup.ended(3, Outcome::Failed), None, "not a warmup");
        assert_eq!(warmup.aborted(), None);
        assert_eq!(warmup.ended(1, Outcome::EndTrajectory), Some(2));
        assert_eq!(warmup.aborted(), Some(1));
    }

    #[test]
    fn without_a_window_measurement_starts_at_once() {
        let mut warmup = Warmup::default();
        assert_eq!(warmup.measuring_since(), Some(0));
        assert_eq!(warmup.entry(0, 0), None);
        warmup.profiling_started = false;
        assert_eq!(warmup.measuring_since(), None);
        warmup.profiling_fired(7);
        assert_eq!(warmup.measuring_since(), Some(7));
    }
}
