//! The closed-form jump over consecutive decode-only steps.
//!
//! While every running request decodes, nobody finishes, no arrival can
//! join and the pool has the blocks, each step is the previous one with
//! the decode context grown by the number of sequences. So `m` such steps
//! are applied at once: each request gains `m` tokens and the blocks they
//! need, and the clock moves by the closed-form sum of `DecodeRun`. The
//! blocks handed out during a jump hold no prompt block (they are never
//! named in the cache), and no block is released during it, so the pool
//! evicts the same cached blocks as step by step and what follows is the
//! same, to the nanosecond.
//!
//! Must not: compose a step that is not decode-only.

use arbor_engine::time::Nanos;

use super::batch::Batch;
use super::profile::EngineLimits;
use super::state::State;
use super::step::DecodeRun;

/// A jump that the in-flight batch allows: its run and how many steps at
/// most (before any horizon of the caller).
#[derive(Debug, Clone, Copy)]
pub(super) struct Jump {
    pub run: DecodeRun,
    pub steps: u64,
}

impl State {
    /// How far `batch` (in flight, step 0 of the run) may be continued as
    /// a decode-only run: `None` unless at least two steps can go at once.
    /// `next_arrival`: when the first request not yet in the queues is
    /// visible.
    pub fn jump(
        &self,
        batch: &Batch,
        limits: &EngineLimits,
        run: DecodeRun,
        next_arrival: Option<Nanos>,
    ) -> Option<Jump> {
        if !batch.decode_only || batch.entries.len() != self.running.len() {
            return None;
        }
        let full = self.running.len() as u32 >= limits.max_num_seqs;
        if !full && !self.waiting.is_empty() {
            return None;
        }
        // Steps before the first completion: a request with `left` tokens
        // to go finishes in step `left - 1`.
        let mut steps = u64::MAX;
        for &slot in &self.running {
            let r = self.req(slot);
            if r.cancelled {
                return None;
            }
            let left = u64::from(r.output.saturating_sub(r.generated));
            steps = steps.min(left.saturating_sub(1));
        }
        if !full {
            if let Some(at) = next_arrival {
                // Steps 1..m-1 are composed before `at`.
                let room = at.saturating_sub(batch.start);
                if room == 0 {
                    return None;
                }
                steps = steps.min(run.steps_within(room - 1, steps).saturating_add(1));
            }
        }
        steps = steps.min(self.steps_with_blocks(steps));
        (steps >= 2).then_some(Jump { run, steps })
    }

    /// The most steps, at most `limit`, whose blocks the pool has.
    fn steps_with_blocks(&self, limit: u64) -> u64 {
        let need = |m: u64| -> u64 {
            self.running
                .iter()
                .map(|&slot| {
                    let r = self.req(slot);
                    // `computed` is still before step 0.
                    let tokens = u64::from(r.computed) + m;
                    tokens
                        .div_ceil(u64::from(self.block_size))
                        .saturating_sub(r.blocks.len() as u64)
                })
                .sum()
        };
        let free = u64::from(self.pool.free());
        let (mut lo, mut hi) = (1u64.min(limit), limit);
        if need(hi) <= free {
            return hi;
        }
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if need(mid) <= free {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// Applies `steps` decode steps of every running request at once.
    pub fn apply_jump(&mut self, steps: u64) {
        let m = steps.min(u64::from(u32::MAX)) as u32;
        for i in 0..self.running.len() {
            let slot = self.running[i];
            let r = self.req_mut(slot);
            r.computed += m;
            r.generated += m;
            let target = self.blocks_for(self.req(slot).computed);
            self.grow_blocks(slot, target);
        }
    }
}
