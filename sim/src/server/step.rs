//! Step time: the features of one batch and the linear formula over them.
//!
//! Owns the arithmetic of a step's duration, exactly once: coefficients
//! (f64 nanoseconds in the profile) are quantized to femtoseconds, the sum
//! is taken in integers and rounded once to the nearest nanosecond. So a
//! run of consecutive decode-only steps, whose decode context grows by the
//! number of sequences each step, has a duration that [`DecodeRun`] sums
//! in closed form (a floor sum) and that equals, to the nanosecond, the
//! sum of the steps taken one by one. Must not: compose batches.

use super::profile::StepCoefficients;
pub use super::profile::StepFeatures;

/// Femtoseconds per nanosecond: the fixed point of the step arithmetic.
const FS_PER_NS: u128 = 1_000_000;

/// A coefficient in femtoseconds.
fn fs(ns: f64) -> u128 {
    if ns.is_finite() && ns > 0.0 {
        (ns * FS_PER_NS as f64).round() as u128
    } else {
        0
    }
}

impl StepCoefficients {
    /// The step's duration in femtoseconds, before the decode-context term.
    fn fs_without_decode_context(&self, f: &StepFeatures) -> u128 {
        let above = f.tokens.saturating_sub(self.knee_tokens) as u128;
        let prefill = if f.prefill_attention > 0.0 {
            (self.per_prefill_attention_ns * FS_PER_NS as f64 * f.prefill_attention).round() as u128
        } else {
            0
        };
        fs(self.constant_ns)
            + fs(self.per_seq_ns) * f.seqs as u128
            + fs(self.per_token_ns) * f.tokens as u128
            + fs(self.per_token_above_knee_ns) * above
            + prefill
    }

    /// The duration of a step with features `f`, rounded to the nanosecond.
    pub fn step_ns(&self, f: &StepFeatures) -> u64 {
        let total = self.fs_without_decode_context(f)
            + fs(self.per_decode_context_token_ns) * f.decode_context_tokens as u128;
        to_ns(total)
    }

    /// The feature row in coefficient order [constant, per_seq, per_token,
    /// above_knee, per_decode_context, per_prefill_attention] for a knee.
    pub fn feature_row(f: &StepFeatures, knee_tokens: u32) -> [f64; 6] {
        [
            1.0,
            f.seqs as f64,
            f.tokens as f64,
            f.tokens.saturating_sub(knee_tokens) as f64,
            f.decode_context_tokens as f64,
            f.prefill_attention,
        ]
    }
}

/// Femtoseconds to the nearest nanosecond (halves up), saturating.
fn to_ns(fs: u128) -> u64 {
    div(fs + FS_PER_NS / 2, FS_PER_NS).min(u64::MAX as u128) as u64
}

/// `x / y` (y > 0) and `x % y`: in 64 bits when both fit (nearly
/// always: a step is far below 2^64 fs), as the 128-bit division is a
/// library call many times slower.
fn div_rem(x: u128, y: u128) -> (u128, u128) {
    match (u64::try_from(x), u64::try_from(y)) {
        (Ok(x), Ok(y)) => (u128::from(x / y), u128::from(x % y)),
        _ => (x / y, x % y),
    }
}

fn div(x: u128, y: u128) -> u128 {
    div_rem(x, y).0
}

/// A run of decode-only steps of `seqs` sequences: step `j` (from 0) has
/// the features of the first step with the decode context grown by
/// `seqs · j`. Sums their durations without looping.
#[derive(Debug, Clone, Copy)]
pub struct DecodeRun {
    /// Femtoseconds of step 0, plus half a nanosecond (the rounding).
    base: u128,
    /// Femtoseconds added per step.
    slope: u128,
}

impl DecodeRun {
    /// The run whose first step has features `first` (decode only).
    pub fn new(coefficients: &StepCoefficients, first: &StepFeatures) -> DecodeRun {
        let per_context = fs(coefficients.per_decode_context_token_ns);
        DecodeRun {
            base: coefficients.fs_without_decode_context(first)
                + per_context * first.decode_context_tokens as u128
                + FS_PER_NS / 2,
            slope: per_context * first.seqs as u128,
        }
    }

    /// Duration of step `j`.
    pub fn step(&self, j: u64) -> u64 {
        div(self.base + self.slope * j as u128, FS_PER_NS).min(u64::MAX as u128) as u64
    }

    /// Total duration of the first `k` steps: Σ_{j<k} ⌊(base + slope·j) / S⌋.
    pub fn total(&self, k: u64) -> u64 {
        floor_sum(k as u128, FS_PER_NS, self.slope, self.base).min(u64::MAX as u128) as u64
    }

    /// The most steps, at most `limit`, whose total is at most `budget`.
    pub fn steps_within(&self, budget: u64, limit: u64) -> u64 {
        let (mut lo, mut hi) = (0u64, limit);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.total(mid) <= budget {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }
}

/// Σ_{i=0}^{n-1} ⌊(a·i + b) / m⌋ for m > 0, in O(log) steps (the
/// Euclid-like reduction: take out the whole parts of a and b, then swap
/// the roles of a and m).
fn floor_sum(mut n: u128, mut m: u128, mut a: u128, mut b: u128) -> u128 {
    let mut sum: u128 = 0;
    loop {
        if n == 0 || m == 0 {
            return sum;
        }
        if a >= m {
            let (whole, rest) = div_rem(a, m);
            sum = sum
                .saturating_add((n.saturating_mul(n.saturating_sub(1)) / 2).saturating_mul(whole));
            a = rest;
        }
        if b >= m {
            let (whole, rest) = div_rem(b, m);
            sum = sum.saturating_add(n.saturating_mul(whole));
            b = rest;
        }
        let y_max = a.saturating_mul(n).saturating_add(b);
        if y_max < m {
            return sum;
        }
        (n, b) = div_rem(y_max, m);
        std::mem::swap(&mut m, &mut a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coefficients() -> StepCoefficients {
        StepCoefficients {
            constant_ns: 5_000_000.3,
            per_seq_ns: 1_000.25,
            per_token_ns: 300.1,
            knee_tokens: 512,
            per_token_above_knee_ns: 50.0,
            per_decode_context_token_ns: 3.3333,
            per_prefill_attention_ns: 0.0125,
        }
    }

    #[test]
    fn floor_sum_matches_the_loop() {
        for (n, m, a, b) in [
            (0, 7, 3, 1),
            (10, 7, 3, 1),
            (100, 1000, 333, 999),
            (57, 13, 1000, 5),
        ] {
            let looped: u128 = (0..n).map(|i| (a * i + b) / m).sum();
            assert_eq!(floor_sum(n, m, a, b), looped, "{n} {m} {a} {b}");
        }
    }

    #[test]
    fn a_decode_run_sums_the_steps() {
        let c = coefficients();
        let first = StepFeatures {
            seqs: 7,
            tokens: 7,
            decode_context_tokens: 12_345,
            prefill_attention: 0.0,
        };
        let run = DecodeRun::new(&c, &first);
        let mut total = 0u64;
        for j in 0..500u64 {
            let f = StepFeatures {
                decode_context_tokens: first.decode_context_tokens + 7 * j,
                ..first
            };
            assert_eq!(run.step(j), c.step_ns(&f));
            assert_eq!(run.total(j), total);
            total += c.step_ns(&f);
        }
        assert_eq!(run.steps_within(run.total(77), 500), 77);
        assert_eq!(run.steps_within(run.total(77) - 1, 500), 76);
    }

    #[test]
    fn the_knee_counts_tokens_above_it() {
        let c = coefficients();
        let row = StepCoefficients::feature_row(
            &StepFeatures {
                seqs: 2,
                tokens: 600,
                decode_context_tokens: 10,
                prefill_attention: 4.5,
            },
            c.knee_tokens,
        );
        assert_eq!(row, [1.0, 2.0, 600.0, 88.0, 10.0, 4.5]);
    }
}
