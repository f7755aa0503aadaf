//! The timeline rebuilt from a run's records: at each engine step, which
//! requests were decoding (and their context lengths) and which were
//! prefilling (and how many prompt tokens), as [`StepFeatures`], the
//! composition the step-time model is linear in.
//!
//! Owns the reconstruction, not the fit. A step is a gap between two
//! output tokens of a decoding request (`(t0, t1]`, integer ns); its
//! batch is read off every request in flight then, found by a sweep over
//! the gaps sorted by their end. Tokens one step produced for several
//! requests reach the client at nearly the same instant, in any order,
//! so the other requests' stamps are compared with the step's window
//! `(a0, a1]`: each of the gap's ends moved later by half the next gap,
//! at most [`STAMP_JITTER_NS`] (a first token stamped just after the
//! owner's belongs to the same step, not the next):
//!
//! - decoding: its first token came by `a0` and its last after `a0`;
//!   context = prompt + tokens received by `a0`;
//! - prefill, last chunk: its first token came in `(a0, a1]`; the chunk is
//!   what is left of its uncached prompt after full chunks of the step's
//!   token budget;
//! - prefill, a middle chunk: sent by `a0`, first token after `a1`, and
//!   too few steps left before its first token for the chunks it still
//!   needs (otherwise it is waiting, and adds nothing);
//!
//! prefill chunks are taken first come first served within
//! `max_num_batched_tokens` less the decode tokens (vLLM's order). The
//! uncached prompt is the prompt less the cached tokens the server
//! reported (none reported: none cached).

use crate::server::{StepCoefficients, StepFeatures};
use arbor_engine::time::Nanos;

use super::request::Observed;

/// How far apart the client may stamp the tokens of one step: a step's
/// window reaches this much past its owner's stamps (at most half the
/// next gap). Measured against the real-time emulator: within 1 ms, a
/// request's first token was stamped after the end of another's that
/// came from the same step ten times as often as before it.
pub const STAMP_JITTER_NS: Nanos = 1_000_000;

/// Prompt tokens a request prefills: its prompt less what the server
/// found cached, at least one (the last prompt token is always computed).
pub fn uncached(r: &Observed) -> u32 {
    r.isl.saturating_sub(r.cached.unwrap_or(0)).max(1)
}

/// The prefill work of a chunk of `chunk` tokens after `before` tokens of
/// context: `chunk · (before + chunk / 2)`.
pub fn attention(chunk: u32, before: u32) -> f64 {
    f64::from(chunk) * (f64::from(before) + f64::from(chunk) / 2.0)
}

/// The steps a request prefills in with nothing else in the batch: its
/// uncached prompt in chunks of `budget`.
pub fn lone_prefill(r: &Observed, budget: u32) -> Vec<StepFeatures> {
    let budget = budget.max(1);
    let total = uncached(r);
    let mut before = r.isl - total;
    let mut left = total;
    let mut steps = Vec::new();
    while left > 0 {
        let chunk = left.min(budget);
        steps.push(StepFeatures {
            seqs: 1,
            tokens: chunk,
            decode_context_tokens: 0,
            prefill_attention: attention(chunk, before),
        });
        before += chunk;
        left -= chunk;
    }
    steps
}

/// Which requests ran alone: nothing else was in flight (sent and not
/// done) at any time between their send and their first token.
pub fn alone(requests: &[Observed]) -> Vec<bool> {
    let mut order: Vec<usize> = (0..requests.len()).collect();
    order.sort_by_key(|&i| (requests[i].sent, i));
    let mut out = vec![false; requests.len()];
    let mut latest_done: Option<Nanos> = None;
    for (k, &i) in order.iter().enumerate() {
        let r = &requests[i];
        let before_clear = latest_done.is_none_or(|d| d <= r.sent);
        let after_clear = order
            .get(k + 1)
            .is_none_or(|&j| requests[j].sent >= r.first);
        out[i] = before_clear && after_clear;
        latest_done = Some(latest_done.map_or(r.done, |d| d.max(r.done)));
    }
    out
}

/// Each request's output-token instants: the recorded chunks where the
/// run stamped one per token; otherwise placed between its first token
/// and its last, evenly at first, then by [`Tokens::respace`].
#[derive(Debug, Clone)]
pub struct Tokens {
    times: Vec<Vec<Nanos>>,
    recorded: Vec<bool>,
}

impl Tokens {
    pub fn of(requests: &[Observed]) -> Tokens {
        let times = requests
            .iter()
            .map(|r| {
                if !r.content.is_empty() {
                    return r.content.clone();
                }
                let steps = u64::from(r.osl.saturating_sub(1));
                if steps == 0 {
                    return vec![r.first];
                }
                let span = r.done - r.first;
                (0..=steps).map(|k| r.first + span * k / steps).collect()
            })
            .collect();
        Tokens {
            times,
            recorded: requests.iter().map(|r| !r.content.is_empty()).collect(),
        }
    }

    /// Output tokens request `i` had by `t` (the first counts).
    fn produced_by(&self, i: usize, t: Nanos) -> u32 {
        self.times[i].partition_point(|&c| c <= t) as u32
    }

    /// Places again the tokens of the requests whose records did not
    /// stamp each one: from the first token to the last, each step takes
    /// the share of the span that `coefficients` predict for its batch
    /// (even spacing puts a step in a crowded batch, which is slow, at
    /// the same length as one alone).
    pub fn respace(&mut self, requests: &[Observed], budget: u32, coefficients: &StepCoefficients) {
        let mut predicted: Vec<Vec<u64>> = vec![Vec::new(); requests.len()];
        for_each_decode_step(requests, self, budget, |i, f| {
            predicted[i].push(coefficients.step_ns(f).max(1));
        });
        for (i, steps) in predicted.iter().enumerate() {
            if self.recorded[i] || steps.is_empty() {
                continue;
            }
            let r = &requests[i];
            let total: u128 = steps.iter().map(|&d| u128::from(d)).sum();
            let span = u128::from(r.done - r.first);
            let mut sum = 0u128;
            let times = &mut self.times[i];
            for (k, d) in steps.iter().enumerate() {
                sum += u128::from(*d);
                times[k + 1] = r.first + (span * sum / total) as Nanos;
            }
        }
    }
}

/// Calls `each(request, features)` for every decode step of every
/// request with more than one output token: the step that produced its
/// token k (k ≥ 1), with the batch it ran in; a request's steps come in
/// order. `budget` is the engine's `max_num_batched_tokens`.
pub fn for_each_decode_step(
    requests: &[Observed],
    tokens: &Tokens,
    budget: u32,
    mut each: impl FnMut(usize, &StepFeatures),
) {
    // Every gap, by its end, with its window.
    let mut gaps: Vec<Step> = Vec::new();
    for (owner, times) in tokens.times.iter().enumerate() {
        let shift = |k: usize| {
            let next = match (times.get(k), times.get(k + 1)) {
                (Some(&t), Some(&after)) => after - t,
                _ => k.checked_sub(1).map_or(0, |j| times[k] - times[j]),
            };
            times[k] + (next / 2).min(STAMP_JITTER_NS)
        };
        gaps.extend((1..times.len()).map(|k| Step {
            t0: times[k - 1],
            t1: times[k],
            a0: shift(k - 1),
            a1: shift(k),
            owner,
            budget,
        }));
    }
    gaps.sort_unstable_by_key(|g| (g.t1, g.t0, g.owner));
    let longest = gaps.iter().map(|g| g.t1 - g.t0).max().unwrap_or(0);
    let mut by_sent: Vec<usize> = (0..requests.len()).collect();
    by_sent.sort_by_key(|&i| (requests[i].sent, i));
    let mut next = 0;
    let mut active: Vec<usize> = Vec::new();
    let mut prefilling: Vec<usize> = Vec::new();
    for step in &gaps {
        while next < by_sent.len() && requests[by_sent[next]].sent < step.t1 {
            active.push(by_sent[next]);
            next += 1;
        }
        // Nothing done before the earliest start a later gap can have
        // matters again.
        let horizon = step.t1.saturating_sub(longest);
        active.retain(|&i| requests[i].done > horizon);
        each(
            step.owner,
            &step.batch(requests, tokens, &active, &mut prefilling),
        );
    }
}

/// One step: the gap `(t0, t1]` between two tokens of `owner`, the
/// window `(a0, a1]` other requests' stamps are read in, and the token
/// budget.
struct Step {
    t0: Nanos,
    t1: Nanos,
    a0: Nanos,
    a1: Nanos,
    owner: usize,
    budget: u32,
}

impl Step {
    /// The batch of the step among the `active` requests (sorted by send
    /// time).
    fn batch(
        &self,
        requests: &[Observed],
        tokens: &Tokens,
        active: &[usize],
        prefilling: &mut Vec<usize>,
    ) -> StepFeatures {
        let (a0, a1, budget) = (self.a0, self.a1, self.budget);
        let mut f = StepFeatures {
            seqs: 0,
            tokens: 0,
            decode_context_tokens: 0,
            prefill_attention: 0.0,
        };
        prefilling.clear();
        for &i in active {
            let r = &requests[i];
            // The owner decodes in its own gap, even one of zero length.
            if i == self.owner || (r.first <= a0 && r.done > a0 && r.osl > 1) {
                f.seqs += 1;
                f.tokens += 1;
                f.decode_context_tokens += u64::from(r.isl) + u64::from(tokens.produced_by(i, a0));
            } else if r.first > a0 && r.sent <= a1 {
                prefilling.push(i);
            }
        }
        let mut left = budget.saturating_sub(f.tokens);
        let step_len = (self.t1 - self.t0).max(1);
        for &i in prefilling.iter() {
            if left == 0 {
                break;
            }
            let r = &requests[i];
            let total = uncached(r);
            let cached = r.isl - total;
            let (chunk, before) = if r.first <= a1 {
                // The last chunk: what full chunks of `left` leave.
                let last = total - (total - 1) / left * left;
                (last.min(left), cached + total - last.min(left))
            } else {
                if r.sent > a0 {
                    continue;
                }
                let needed = u64::from(total.div_ceil(left));
                let steps_left = (r.first - a1).div_ceil(step_len);
                if steps_left >= needed {
                    continue; // waiting, not yet scheduled
                }
                // Chunks before the last are full: this is chunk number
                // `needed − 1 − steps_left` (from 0).
                let index = (needed - 1 - steps_left) as u32;
                let before = index.saturating_mul(left).min(total);
                (left.min(total - before), cached + before)
            };
            f.seqs += 1;
            f.tokens += chunk;
            f.prefill_attention += attention(chunk, before);
            left -= chunk;
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(sent: Nanos, first: Nanos, done: Nanos, isl: u32, osl: u32) -> Observed {
        Observed::stamped(sent, first, done, isl, osl)
    }

    /// The decode steps of `requests[owner]`, in order.
    fn steps_of(requests: &[Observed], budget: u32, owner: usize) -> Vec<StepFeatures> {
        let mut steps = Vec::new();
        for_each_decode_step(requests, &Tokens::of(requests), budget, |i, f| {
            if i == owner {
                steps.push(*f);
            }
        });
        steps
    }

    #[test]
    fn a_lone_request_prefills_in_budget_sized_chunks() {
        let mut r = request(0, 10, 20, 1000, 2);
        r.cached = Some(200);
        let steps = lone_prefill(&r, 512);
        let chunks: Vec<u32> = steps.iter().map(|s| s.tokens).collect();
        assert_eq!(chunks, [512, 288]);
        assert_eq!(steps[0].prefill_attention, 512.0 * (200.0 + 256.0));
        assert_eq!(steps[1].prefill_attention, 288.0 * (712.0 + 144.0));
        // A fully cached prompt still computes one token.
        r.cached = Some(1000);
        assert_eq!(lone_prefill(&r, 512).len(), 1);
    }

    #[test]
    fn requests_alone_are_those_nothing_overlapped() {
        let rs = [
            request(0, 10, 50, 10, 5),
            request(40, 60, 100, 10, 5), // sent while the first decoded
            request(200, 210, 300, 10, 5),
            request(205, 260, 270, 10, 1), // sent during the third's prefill
            request(400, 410, 420, 10, 2),
        ];
        // The first's prefill [0, 10] is clear (the second comes after its
        // first token); the second's is not (the first still decoding).
        assert_eq!(alone(&rs), [true, false, false, false, true]);
    }

    #[test]
    fn a_step_counts_decoders_and_the_prefill_that_ended_in_it() {
        // A decodes tokens at 100, 200, 300, 400 (osl 4, prompt 50).
        // B arrives at 150 and gets its first token at 300: its whole
        // 30-token prompt is prefilled in the step (200, 300].
        let rs = [request(0, 100, 400, 50, 4), request(150, 300, 500, 30, 3)];
        let a_steps = steps_of(&rs, 1000, 0);
        assert_eq!(a_steps.len(), 3);
        // (100, 200]: A alone, context 50 + 1.
        assert_eq!((a_steps[0].seqs, a_steps[0].tokens), (1, 1));
        assert_eq!(a_steps[0].decode_context_tokens, 51);
        // (200, 300]: A decodes (context 52), B prefills 30.
        assert_eq!((a_steps[1].seqs, a_steps[1].tokens), (2, 31));
        assert_eq!(a_steps[1].decode_context_tokens, 52);
        assert_eq!(a_steps[1].prefill_attention, 30.0 * 15.0);
        // (300, 400]: both decode.
        assert_eq!((a_steps[2].seqs, a_steps[2].tokens), (2, 2));
        assert_eq!(a_steps[2].decode_context_tokens, 53 + 31);
        // B's two decode steps follow.
        assert_eq!(steps_of(&rs, 1000, 1).len(), 2);
    }

    #[test]
    fn a_first_token_stamped_just_after_belongs_to_the_same_step() {
        // A's tokens at 1 ms steps from 10 ms; B's first token is stamped
        // 0.2 ms after A's last (the same step's output, read later): its
        // prefill is in A's last step. C's is stamped 0.2 ms after A's
        // first: its prefill ran in A's prefill step, not in A's row.
        let ms = 1_000_000;
        let rs = [
            request(0, 10 * ms, 13 * ms, 50, 4),
            request(ms, 13 * ms + ms / 5, 20 * ms, 30, 2),
            request(ms, 10 * ms + ms / 5, 20 * ms, 40, 2),
        ];
        let tokens: Vec<u32> = steps_of(&rs, 1000, 0).iter().map(|f| f.tokens).collect();
        // (10,11]: A, C decoding; (11,12]: A, C; (12,13]: A, C, B's 30.
        assert_eq!(tokens, [2, 2, 32]);
    }

    #[test]
    fn a_long_prompt_fills_the_budget_in_the_steps_before_its_first_token() {
        // A decodes every 100 ns from 100; B's 250-token prompt with a
        // budget of 101 (100 after A's decode token) needs three steps,
        // the last ending at its first token (400).
        let rs = [request(0, 100, 600, 10, 6), request(50, 400, 500, 250, 2)];
        let tokens: Vec<u32> = steps_of(&rs, 101, 0).iter().map(|f| f.tokens).collect();
        // (100,200] 1+100, (200,300] 1+100, (300,400] 1+50, then decodes.
        assert_eq!(tokens, [101, 101, 51, 2, 1]);
    }

    #[test]
    fn respacing_lengthens_the_steps_of_a_crowded_batch() {
        // A decodes 4 steps over (100, 500]; B prefills in the step that
        // ends at its first token (300) and decodes beside A after. A
        // step with two sequences takes twice one with one, so A's tokens
        // move: 1 + 2 + 2 + 2 = 7 shares of 400 ns.
        let rs = [request(0, 100, 500, 10, 5), request(0, 300, 900, 10, 4)];
        let coefficients = StepCoefficients {
            constant_ns: 0.0,
            per_seq_ns: 100.0,
            per_token_ns: 0.0,
            knee_tokens: 0,
            per_token_above_knee_ns: 0.0,
            per_decode_context_token_ns: 0.0,
            per_prefill_attention_ns: 0.0,
        };
        let mut tokens = Tokens::of(&rs);
        assert_eq!(tokens.times[0], [100, 200, 300, 400, 500]);
        tokens.respace(&rs, 1000, &coefficients);
        assert_eq!(tokens.times[0], [100, 157, 271, 385, 500]);
        // Stamped tokens stay where they were.
        let mut stamped = rs.clone();
        stamped[0].content = vec![100, 200, 300, 400, 500];
        let mut tokens = Tokens::of(&stamped);
        tokens.respace(&stamped, 1000, &coefficients);
        assert_eq!(tokens.times[0], [100, 200, 300, 400, 500]);
    }
}
