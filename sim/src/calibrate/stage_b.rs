//! Stage B: bounded correction factors on stage A's profile, fitted by
//! replaying the calibration runs through the model and comparing the
//! p50 and p90 of TTFT, ITL and E2E with what was measured.
//!
//! Owns the groups, the bounds and the search. One factor per group of
//! coefficients, each within [`LOW`]..=[`HIGH`]; a coordinate search in
//! log space with shrinking steps, keeping a move only when it lowers the
//! objective: the loss (the mean over runs and compared quantiles of
//! ln(predicted / measured)²) plus a pull towards 1 ([`PULL`]·Σ ln²
//! factor), so a factor moves for a real gain, not to trade one group
//! against another over noise in the quantiles. Deterministic: the same
//! runs give the same factors.

use super::fit_error::{self, Samples};
use super::replay;
use super::runs::Run;
use crate::server::Profile;

pub const LOW: f64 = 0.5;
pub const HIGH: f64 = 2.0;
/// The weight of the pull towards 1: a factor of 1.5 costs as much as a
/// loss of 0.0003 (quantiles 1.8 % off on the log scale).
pub const PULL: f64 = 0.002;

/// The coefficient groups a factor scales, in order.
pub const GROUPS: [&str; 6] = [
    "constant",
    "per_seq",
    "per_token",
    "decode_context",
    "prefill_attention",
    "overhead",
];

/// Steps in ln(factor), largest first.
const STEPS: [f64; 4] = [0.3, 0.12, 0.05, 0.02];
/// Passes over the groups at one step size, at most.
const PASSES: usize = 3;

/// A factor per group.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factors(pub [f64; 6]);

impl Default for Factors {
    fn default() -> Self {
        Factors([1.0; 6])
    }
}

/// `base` with every group scaled by its factor.
pub fn apply(base: &Profile, f: &Factors) -> Profile {
    let mut p = base.clone();
    let [constant, per_seq, per_token, context, attention, overhead] = f.0;
    p.step.constant_ns *= constant;
    p.step.per_seq_ns *= per_seq;
    p.step.per_token_ns *= per_token;
    p.step.per_token_above_knee_ns *= per_token;
    p.step.per_decode_context_token_ns *= context;
    p.step.per_prefill_attention_ns *= attention;
    p.overhead.arrival_ns = (p.overhead.arrival_ns as f64 * overhead).round() as u64;
    p.overhead.departure_ns = (p.overhead.departure_ns as f64 * overhead).round() as u64;
    p
}

/// The loss of `profile` on `runs`: each run weighs the same.
pub fn loss(profile: &Profile, runs: &[Run]) -> f64 {
    let losses: Vec<f64> = runs
        .iter()
        .filter(|r| !r.requests.is_empty())
        .map(|run| {
            let served = replay::replay(profile, &run.requests);
            fit_error::loss(&Samples::of(&run.requests, &served).compare())
        })
        .collect();
    if losses.is_empty() {
        return 0.0;
    }
    losses.iter().sum::<f64>() / losses.len() as f64
}

impl Factors {
    /// Each group's name ([`GROUPS`]) and its factor, in order.
    pub fn by_group(&self) -> impl Iterator<Item = (&'static str, f64)> + '_ {
        GROUPS.iter().copied().zip(self.0)
    }

    /// The pull towards 1.
    fn pull(&self) -> f64 {
        PULL * self.0.iter().map(|f| f.ln().powi(2)).sum::<f64>()
    }
}

/// The factors that fit `runs` best from `base`, and their loss.
pub fn correct(base: &Profile, runs: &[Run]) -> (Factors, f64) {
    let mut factors = Factors::default();
    let mut loss_now = loss(base, runs);
    let mut best = loss_now;
    for step in STEPS {
        for _ in 0..PASSES {
            let mut moved = false;
            for g in 0..GROUPS.len() {
                for direction in [1.0, -1.0] {
                    let mut trial = factors;
                    trial.0[g] = (trial.0[g] * (direction * step).exp()).clamp(LOW, HIGH);
                    if trial.0[g] == factors.0[g] {
                        continue;
                    }
                    let l = loss(&apply(base, &trial), runs);
                    if l + trial.pull() < best {
                        best = l + trial.pull();
                        loss_now = l;
                        factors = trial;
                        moved = true;
                        break;
                    }
                }
            }
            if !moved {
                break;
            }
        }
    }
    (factors, loss_now)
}
