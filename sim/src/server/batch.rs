//! One step's composition and its effect.
//!
//! vLLM V1's rules: running requests first, in admission order, each with
//! its next tokens (one to decode, or the rest of its prefill) within the
//! token budget `max_num_batched_tokens`; when blocks run out the newest
//! running request is preempted (its blocks freed, its KV recomputed on
//! resume) until the request fits or is itself the one preempted. Then,
//! unless a request was preempted, waiting requests first come first
//! served, while `max_num_seqs` and the budget allow: each starts from its
//! prefix-cache hit (whole blocks, at least one token left to compute) and
//! takes a prefill chunk. The SGLang-style policy schedules prefills
//! (chunks of running requests, then waiting ones) first and decodes only
//! in a step with no prefill.
//!
//! Must not: keep time, emit anything but the events of a finished step.

use arbor_engine::time::Nanos;

use super::profile::{EngineLimits, SchedulingPolicy};
use super::state::State;
use super::step::StepFeatures;
use super::ModelEvent;

/// A composed step: who computes how many tokens, and its features.
#[derive(Debug, Clone)]
pub(super) struct Batch {
    pub start: Nanos,
    pub end: Nanos,
    /// (slot, new tokens), in schedule order.
    pub entries: Vec<(usize, u32)>,
    pub features: StepFeatures,
    /// Every entry decodes one token.
    pub decode_only: bool,
}

/// Which running requests a pass over them schedules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    All,
    PrefillOnly,
    DecodeOnly,
}

impl State {
    /// Composes the next step into `entries` (empty on entry): its
    /// features and whether every entry decodes one token; `None` when
    /// there is nothing to compute.
    pub fn compose(
        &mut self,
        limits: &EngineLimits,
        entries: &mut Vec<(usize, u32)>,
    ) -> Option<(StepFeatures, bool)> {
        let mut budget = limits.max_num_batched_tokens;
        match limits.policy {
            SchedulingPolicy::Vllm => {
                let preempted = self.schedule_running(Pass::All, &mut budget, entries);
                if !preempted {
                    self.admit_waiting(limits, &mut budget, entries);
                }
            }
            SchedulingPolicy::Sglang => {
                let preempted = self.schedule_running(Pass::PrefillOnly, &mut budget, entries);
                if !preempted {
                    self.admit_waiting(limits, &mut budget, entries);
                }
                if entries.is_empty() {
                    self.schedule_running(Pass::DecodeOnly, &mut budget, entries);
                }
            }
        }
        if entries.is_empty() {
            return None;
        }
        Some(self.features(entries))
    }

    /// The step's features, and whether it is decode only.
    fn features(&self, entries: &[(usize, u32)]) -> (StepFeatures, bool) {
        let mut f = StepFeatures::default();
        let mut decode_only = true;
        for &(slot, new) in entries {
            let r = self.req(slot);
            f.seqs += 1;
            f.tokens += new;
            if new == 1 && r.is_decoding() {
                f.decode_context_tokens += u64::from(r.computed) + 1;
            } else {
                decode_only = false;
                f.prefill_attention +=
                    f64::from(new) * (f64::from(r.computed) + f64::from(new) / 2.0);
            }
        }
        (f, decode_only)
    }

    /// Schedules running requests of `pass`; true if one was preempted.
    fn schedule_running(
        &mut self,
        pass: Pass,
        budget: &mut u32,
        entries: &mut Vec<(usize, u32)>,
    ) -> bool {
        let mut preempted = false;
        let mut i = 0;
        while i < self.running.len() && *budget > 0 {
            let slot = self.running[i];
            let r = self.req(slot);
            let wanted = match pass {
                Pass::All => true,
                Pass::PrefillOnly => !r.is_decoding(),
                Pass::DecodeOnly => r.is_decoding(),
            };
            if !wanted {
                i += 1;
                continue;
            }
            let new = (r.known() - r.computed).min(*budget);
            // Most entries (a decode token) fit the blocks they hold: no
            // division to count blocks.
            if u64::from(r.computed + new) <= r.blocks.len() as u64 * u64::from(self.block_size) {
                entries.push((slot, new));
                *budget -= new;
                i += 1;
                continue;
            }
            let target = self.blocks_for(r.computed + new);
            let mut scheduled = true;
            loop {
                let have = self.req(slot).blocks.len() as u32;
                if target.saturating_sub(have) <= self.pool.free() {
                    self.grow_blocks(slot, target);
                    break;
                }
                let Some(victim) = self.running.pop() else {
                    scheduled = false;
                    break;
                };
                self.preempt(victim);
                preempted = true;
                if victim == slot {
                    scheduled = false;
                    break;
                }
            }
            if !scheduled {
                break;
            }
            entries.push((slot, new));
            *budget -= new;
            i += 1;
        }
        preempted
    }

    /// Frees a running request's blocks and puts it first in line.
    fn preempt(&mut self, slot: usize) {
        self.release_blocks(slot);
        self.waiting.push_front(slot);
        self.preemptions += 1;
    }

    /// Admits waiting requests first come first served.
    fn admit_waiting(
        &mut self,
        limits: &EngineLimits,
        budget: &mut u32,
        entries: &mut Vec<(usize, u32)>,
    ) {
        let mut hits = std::mem::take(&mut self.hits);
        while let Some(&slot) = self.waiting.front() {
            if self.running.len() as u32 >= limits.max_num_seqs || *budget == 0 {
                break;
            }
            // Even a whole hit leaves one token to compute in a new block.
            if self.pool.free() == 0 {
                break;
            }
            let r = self.req(slot);
            let known = r.known();
            let most = ((known - 1) / self.block_size) as usize;
            self.pool.hits(&r.keys[..r.keys.len().min(most)], &mut hits);
            let cached = hits.len() as u32 * self.block_size;
            let new = (known - cached).min(*budget);
            let target = self.blocks_for(cached + new);
            let fresh = target.saturating_sub(hits.len() as u32);
            if fresh + self.pool.unreferenced(&hits) > self.pool.free() {
                break;
            }
            for &block in &hits {
                self.pool.touch(block);
            }
            let r = self.req_mut(slot);
            r.blocks.clone_from(&hits);
            r.keyed = hits.len() as u32;
            r.computed = cached;
            if r.cached_tokens.is_none() {
                r.cached_tokens = Some(cached);
                let prompt = u64::from(r.prompt);
                self.prefix_hit_tokens += u64::from(cached);
                self.prompt_tokens += prompt;
            }
            self.grow_blocks(slot, target);
            self.waiting.pop_front();
            self.running.push(slot);
            entries.push((slot, new));
            *budget -= new;
        }
        self.hits = hits;
    }

    /// Applies a finished step at `end`: tokens computed, full prompt
    /// blocks named in the cache, tokens sampled; events (at `out_at`) for
    /// first tokens, the tokens after them (with `tokens`) and
    /// completions; finished and cancelled requests leave.
    pub fn finish(
        &mut self,
        entries: &[(usize, u32)],
        out_at: Nanos,
        tokens: bool,
        events: &mut Vec<ModelEvent>,
    ) {
        let mut gone = std::mem::take(&mut self.gone);
        gone.clear();
        for &(slot, new) in entries {
            let bs = self.block_size;
            let r = self.req_mut(slot);
            r.computed += new;
            if r.cancelled {
                gone.push(slot);
                continue;
            }
            let from = r.keyed as usize;
            let full = if from < r.keys.len() {
                ((r.computed / bs) as usize).min(r.keys.len())
            } else {
                from
            };
            if full > from {
                r.keyed = full as u32;
                self.name_blocks(slot, from..full);
            }
            let r = self.req_mut(slot);
            if r.computed < r.known() {
                continue;
            }
            r.generated += 1;
            if !r.first_token_sent {
                r.first_token_sent = true;
                events.push(ModelEvent::FirstToken {
                    id: r.id,
                    at: out_at,
                    cached_tokens: r.cached_tokens.unwrap_or(0),
                });
            } else if tokens {
                events.push(ModelEvent::Token {
                    id: r.id,
                    at: out_at,
                });
            }
            if r.generated >= r.output {
                events.push(ModelEvent::Done {
                    id: r.id,
                    at: out_at,
                });
                gone.push(slot);
            }
        }
        if !gone.is_empty() {
            for &slot in &gone {
                self.release_blocks(slot);
            }
            self.running.retain(|s| !gone.contains(s));
            for &slot in &gone {
                self.remove(slot);
            }
        }
        self.gone = gone;
    }
}
