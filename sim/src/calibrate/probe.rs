//! The designed calibration's experiment (`arbor calibrate --probe`,
//! docs/capacity.md, "The probe"): which requests to send, in which
//! phases, so that every step coefficient and the overhead is identified
//! by stage A's rows.
//!
//! Owns the design only, as data: each [`Phase`] is a list of
//! conversations ([`Conversation`]: turns whose prompts extend each
//! other, so a later turn finds the earlier prompt in the server's prefix
//! cache) and how they are sent (one at a time, or `k` lanes started
//! together, or at stated instants). Sending them and fitting is the
//! caller's (`arbor`'s `calibrate_probe`). Reads no clock and no file.
//!
//! - `lone`: one conversation at a time, nothing else in flight. Prompts
//!   log-spaced from 16 tokens, one in every sixteenth of the token
//!   budget (so each knee candidate, an eighth, has prompts on both
//!   sides) and in every eighth of the later chunks, up to a few chunks,
//!   bounded by the context a request may hold; two output tokens. Their TTFTs are the overhead plus their prefill steps:
//!   the per-token cost, the knee and the slope above it, and (prompts of
//!   many lengths, so `tokens²` is not `tokens`) the attention cost.
//!   Some continue with a second turn whose prompt extends the first at a
//!   cached fraction of 1/4, 1/2, 3/4 and 9/10: the attention cost of a
//!   chunk after cached context.
//! - `decode-K-short`, `decode-K-long`: `K` requests (1, 2, 4, ... up to
//!   `max_num_seqs`) with a fixed long output, started together, at a
//!   short and a long context: decode steps of `K` sequences, so the
//!   constant, the per-sequence-and-token cost of a decode and the
//!   decode-context cost. The long ones share all but their last block
//!   of 16 tokens, sent alone first so the server caches it: their
//!   prefill is one short step, and the batch decodes from its start
//!   (`K` long prefills would mix chunks into the first decode steps,
//!   which the timeline reads less exactly).
//! - `mixed`: one long decode, and prompts of several lengths arriving
//!   one after another while it runs ([`mixed`], timed from a pilot fit
//!   of the phases before): steps whose sequences and tokens differ, so
//!   the per-sequence cost apart from the per-token cost.

use crate::server::{Profile, StepFeatures};

use super::timeline::attention;

/// What the design needs to know of the server.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeLimits {
    pub max_num_seqs: u32,
    /// The token budget of a step (`max_num_batched_tokens`).
    pub budget: u32,
    /// Tokens the KV pool holds (`num_gpu_blocks · block_size`), when
    /// known.
    pub pool_tokens: Option<u64>,
    /// The most tokens (prompt and output) one request may hold; `None`:
    /// the KV pool's share of one sequence (`pool / max_num_seqs`), at
    /// most three token budgets (two without a pool).
    pub max_context: Option<u32>,
    /// Output tokens of a decode phase's requests.
    pub decode_tokens: u32,
    /// Each lone prompt is sent this many times (more rows, more time).
    pub repeat: u32,
}

/// Output tokens of a decode phase's requests by default.
pub const DECODE_TOKENS: u32 = 32;

/// The cached fractions the second turns of `lone` conversations have.
pub const CACHED_FRACTIONS: [f64; 4] = [0.25, 0.5, 0.75, 0.9];

/// One request of a conversation: its prompt and output tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    pub isl: u32,
    pub osl: u32,
}

/// Turns sent one after another, each prompt extending the one before
/// (the previous prompt and its answer come first).
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// When it is sent, from the phase's start (only with
    /// [`Sending::At`]).
    pub at_ns: u64,
    pub turns: Vec<Turn>,
}

/// How a phase's conversations are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sending {
    /// `n` lanes started together, each sending its share of the
    /// conversations one after another.
    Lanes(u32),
    /// Each conversation at its own `at_ns`.
    At,
    /// A request of the first `prefix` tokens the conversations share,
    /// alone (so the server caches it), then every conversation at once:
    /// a long context with a short prefill, so the batch decodes from
    /// its first step.
    AfterPrefix { prefix: u32 },
}

/// One phase of the experiment: one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Its run directory's name.
    pub name: String,
    /// What it identifies, in words.
    pub identifies: &'static str,
    pub sending: Sending,
    pub conversations: Vec<Conversation>,
}

impl ProbeLimits {
    /// The most tokens one request may hold.
    pub fn context(&self) -> u32 {
        let budget = u64::from(self.budget);
        let default = match self.pool_tokens {
            Some(pool) => (pool / u64::from(self.max_num_seqs.max(1))).min(3 * budget),
            None => 2 * budget,
        };
        self.max_context
            .unwrap_or(default.min(u64::from(u32::MAX)) as u32)
            .max(64)
    }

    /// The longest prompt sent: 7/8 of the context (room for a chat
    /// template's tokens) less the decode output.
    pub fn max_prompt(&self) -> u32 {
        (self.context() / 8 * 7)
            .saturating_sub(self.decode_tokens)
            .max(16)
    }

    /// Tokens the KV pool holds (unknown: each sequence its context).
    fn pool(&self) -> u64 {
        self.pool_tokens
            .unwrap_or(u64::from(self.context()) * u64::from(self.max_num_seqs))
    }
}

/// The phases sent before the pilot fit: `lone`, then the decode batches.
pub fn design(limits: &ProbeLimits) -> Vec<Phase> {
    let mut phases = vec![lone(limits)];
    for k in batch_sizes(limits.max_num_seqs) {
        let long = long_context(limits, k);
        let sendings = [
            ("short", 32, Sending::Lanes(k)),
            (
                "long",
                long,
                Sending::AfterPrefix {
                    prefix: long - PREFIX_BLOCK,
                },
            ),
        ];
        for (name, isl, sending) in sendings {
            phases.push(Phase {
                name: format!("decode-{k}-{name}"),
                identifies: "constant, per_seq + per_token, per_decode_context",
                sending,
                conversations: (0..k)
                    .map(|_| Conversation {
                        at_ns: 0,
                        turns: vec![Turn {
                            isl,
                            osl: limits.decode_tokens,
                        }],
                    })
                    .collect(),
            });
        }
    }
    phases
}

/// 1, 2, 4, ... below `max_num_seqs`, then `max_num_seqs`.
pub fn batch_sizes(max_num_seqs: u32) -> Vec<u32> {
    let mut sizes: Vec<u32> = std::iter::successors(Some(1u32), |k| k.checked_mul(2))
        .take_while(|&k| k < max_num_seqs)
        .collect();
    sizes.push(max_num_seqs.max(1));
    sizes
}

/// The tokens of a long-context conversation after the prefix it shares:
/// one KV block of 16.
pub const PREFIX_BLOCK: u32 = 16;

/// The long context of a decode batch of `k`: half the context, within
/// the pool's room for `k` sequences, in whole blocks of 16.
fn long_context(limits: &ProbeLimits, k: u32) -> u32 {
    let room = (limits.pool() * 3 / 4 / u64::from(k.max(1))) as u32;
    let long = (limits.context() / 2)
        .min(room.saturating_sub(limits.decode_tokens))
        .max(64);
    long / PREFIX_BLOCK * PREFIX_BLOCK
}

/// The lone prompts: log-spaced from 16, the middle of every sixteenth of
/// the first chunk (two or more between any two knee candidates, so a
/// few late stamps left out still leave each slope seen) and of every
/// eighth of the later chunks, up to the longest prompt.
pub fn lone_prompts(limits: &ProbeLimits) -> Vec<u32> {
    let budget = limits.budget.max(16);
    let top = limits.max_prompt();
    let sixteenth = budget / 16;
    let mut prompts: Vec<u32> = std::iter::successors(Some(16u32), |p| p.checked_mul(2))
        .take_while(|&p| p < sixteenth / 2)
        .collect();
    prompts.extend((0..16).map(|k| sixteenth * k + sixteenth / 2));
    let eighth = budget / 8;
    prompts.extend((8..8 * 3).map(|k| eighth * k + eighth / 2));
    prompts.retain(|&p| p >= 1 && p <= top);
    if prompts.last().is_none_or(|&p| p < top - top / 16) {
        prompts.push(top);
    }
    prompts.sort_unstable();
    prompts.dedup();
    prompts
}

/// The `lone` phase: one lane; each prompt of [`lone_prompts`] sent
/// `repeat` times; four of the conversations go on with a second turn at a
/// cached fraction of [`CACHED_FRACTIONS`].
fn lone(limits: &ProbeLimits) -> Phase {
    let prompts = lone_prompts(limits);
    let top = limits.max_prompt();
    let mut conversations: Vec<Conversation> = Vec::new();
    for _ in 0..limits.repeat.max(1) {
        for &isl in &prompts {
            conversations.push(Conversation {
                at_ns: 0,
                turns: vec![Turn { isl, osl: 2 }],
            });
        }
    }
    // A second turn: the first prompt and its two tokens are cached (as
    // far as the server keeps them), the rest is new.
    for fraction in CACHED_FRACTIONS {
        let first = ((f64::from(top) * fraction) as u32).max(16);
        let second = ((f64::from(first + 2) / fraction) as u32).min(top);
        if second <= first + 2 {
            continue;
        }
        conversations.push(Conversation {
            at_ns: 0,
            turns: vec![
                Turn { isl: first, osl: 2 },
                Turn {
                    isl: second,
                    osl: 2,
                },
            ],
        });
    }
    Phase {
        name: "lone".into(),
        identifies: "overhead, per_token, knee, above-knee slope, prefill attention",
        sending: Sending::Lanes(1),
        conversations,
    }
}

/// The `mixed` phase, timed by `pilot` (a fit of the phases before): a
/// decode of a short prompt long enough to outlast the prompts, and
/// prompts of a quarter, half and the whole token budget (within the
/// longest prompt) sent one after another while it runs, each after the
/// one before should have had its first token.
pub fn mixed(limits: &ProbeLimits, pilot: &Profile) -> Phase {
    let budget = limits.budget.max(8);
    let top = limits.max_prompt();
    // Within the budget less the decode's token: one chunk each.
    let prompts: Vec<u32> = [budget / 8, budget / 4, budget / 2, budget / 8 * 7]
        .into_iter()
        .map(|p| p.clamp(8, top))
        .collect();
    let step = |f: StepFeatures| pilot.step.step_ns(&f) as f64;
    let decode = |context: u64| {
        step(StepFeatures {
            seqs: 1,
            tokens: 1,
            decode_context_tokens: context,
            prefill_attention: 0.0,
        })
    };
    let overhead = (pilot.overhead.arrival_ns + pilot.overhead.departure_ns) as f64;
    // The decode's first token, then a few decode steps.
    let start = overhead + step(prefill(32, budget)) + 4.0 * decode(64);
    let mut at = start;
    let mut conversations = vec![Conversation {
        at_ns: 0,
        turns: vec![Turn { isl: 32, osl: 0 }],
    }];
    for &isl in &prompts {
        conversations.push(Conversation {
            at_ns: at as u64,
            turns: vec![Turn { isl, osl: 2 }],
        });
        // Its prefill beside the decode, its overhead, and slack: twice
        // that, and three decode steps.
        let beside = step(StepFeatures {
            seqs: 2,
            tokens: isl.min(budget) + 1,
            decode_context_tokens: 64,
            prefill_attention: attention(isl.min(budget), 0),
        });
        let chunks = f64::from(isl.div_ceil(budget));
        at += 2.0 * (overhead + beside * chunks) + 3.0 * decode(64);
    }
    // The decode outlasts the last prompt by half the span.
    let span = (at - start) * 1.5 + start;
    let osl = (span / decode(64).max(1.0)).ceil() as u32 + 8;
    let limit = limits.context().saturating_sub(64).max(16);
    conversations[0].turns[0].osl = osl.clamp(16, limit);
    Phase {
        name: "mixed".into(),
        identifies: "per_seq apart from per_token (steps that decode and prefill)",
        sending: Sending::At,
        conversations,
    }
}

/// The one step a short prompt of `isl` tokens prefills in alone.
fn prefill(isl: u32, budget: u32) -> StepFeatures {
    let chunk = isl.min(budget);
    StepFeatures {
        seqs: 1,
        tokens: chunk,
        decode_context_tokens: 0,
        prefill_attention: attention(chunk, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(budget: u32, seqs: u32, blocks: u32) -> ProbeLimits {
        ProbeLimits {
            max_num_seqs: seqs,
            budget,
            pool_tokens: Some(u64::from(blocks) * 16),
            max_context: None,
            decode_tokens: DECODE_TOKENS,
            repeat: 1,
        }
    }

    #[test]
    fn batch_sizes_double_up_to_the_most_sequences() {
        assert_eq!(batch_sizes(4), [1, 2, 4]);
        assert_eq!(batch_sizes(6), [1, 2, 4, 6]);
        assert_eq!(batch_sizes(1), [1]);
    }

    #[test]
    fn lone_prompts_fall_in_every_eighth_and_stay_within_the_context() {
        // llama-server's shape: 4 slots of 2048 tokens, a 2048 budget.
        let l = limits(2048, 4, 512);
        assert_eq!(l.context(), 2048);
        let prompts = lone_prompts(&l);
        assert!(prompts.iter().all(|&p| p <= l.max_prompt()), "{prompts:?}");
        for k in 0..6u32 {
            let (lo, hi) = (k * 256, (k + 1) * 256);
            let between = prompts.iter().filter(|&&p| p > lo && p < hi).count();
            assert!(between >= 2, "{between} in ({lo}, {hi}): {prompts:?}");
        }
        assert!(prompts[0] == 16, "{prompts:?}");
        // A pool of many sequences: more than one chunk.
        let big = limits(1024, 8, 1024);
        assert!(lone_prompts(&big).iter().any(|&p| p > 1024));
    }

    #[test]
    fn every_phase_fits_the_pool_and_the_cached_turns_extend_the_first() {
        let l = limits(2048, 4, 512);
        let phases = design(&l);
        let names: Vec<&str> = phases.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lone",
                "decode-1-short",
                "decode-1-long",
                "decode-2-short",
                "decode-2-long",
                "decode-4-short",
                "decode-4-long"
            ]
        );
        for phase in &phases {
            let lanes = match phase.sending {
                Sending::Lanes(n) => n,
                Sending::AfterPrefix { prefix } => {
                    let isl = phase.conversations[0].turns[0].isl;
                    assert_eq!(prefix + PREFIX_BLOCK, isl, "{}", phase.name);
                    phase.conversations.len() as u32
                }
                Sending::At => panic!("lanes"),
            };
            let most = phase
                .conversations
                .iter()
                .flat_map(|c| &c.turns)
                .map(|t| u64::from(t.isl + t.osl))
                .max()
                .unwrap();
            assert!(most * u64::from(lanes) <= l.pool(), "{}", phase.name);
            assert!(most <= u64::from(l.context()), "{}", phase.name);
        }
        let chains: Vec<&Conversation> = phases[0]
            .conversations
            .iter()
            .filter(|c| c.turns.len() == 2)
            .collect();
        assert_eq!(chains.len(), 4);
        for c in chains {
            assert!(c.turns[1].isl > c.turns[0].isl + c.turns[0].osl);
        }
    }

    #[test]
    fn the_mixed_decode_outlasts_its_prompts() {
        let l = limits(1024, 8, 1024);
        let pilot = Profile::from_toml_str(
            include_str!("../../../profiles/example.toml"),
            std::path::Path::new("example.toml"),
        )
        .unwrap();
        let phase = mixed(&l, &pilot);
        let decode = &phase.conversations[0];
        let last = phase.conversations.last().unwrap();
        let step = 2_000_000.0 + 70_000.0 + 100.0 * 64.0;
        let decode_ends = f64::from(decode.turns[0].osl) * step;
        assert!(decode_ends > last.at_ns as f64 * 1.2, "{phase:?}");
        assert!(phase
            .conversations
            .windows(2)
            .all(|w| w[0].at_ns < w[1].at_ns));
    }
}
