//! Per-coefficient uncertainty by the bootstrap (docs/capacity.md,
//! "Uncertainty"): stage A refitted on resamples of the calibration's
//! requests, each a [`Draw`] of the profile's coefficients, and each
//! coefficient's 90 % interval over the draws ([`Spread`]).
//!
//! Owns the resampling (seeded `rand_pcg`, so the same runs give the same
//! draws), the interval and the rule that calls a coefficient not
//! identified. Refits through [`super::stage_a::Rows`] (the rows of the
//! point fit, built once: the timeline is not rebuilt per resample, and
//! the knee is searched again). Stage B's factors are not refitted per
//! draw (each would replay every run dozens of times): the point fit's
//! factors are applied to every draw.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::server::profile::{Draw, Uncertainty};
use crate::server::{Overheads, Profile};

use super::stage_a::{Fit, Rows};

/// Resamples a calibration draws by default.
pub const DEFAULT_RESAMPLES: u32 = 40;
/// The seed of the resampling (any fixed number: the draws repeat).
pub const SEED: u64 = 0x5eed_ca11_b2a7_e000;
/// The share of the draws outside the interval, half below, half above.
const OUTSIDE: f64 = 0.10;
/// A coefficient whose interval's half-width is above this share of its
/// value is not identified.
pub const WIDE: f64 = 0.5;

/// One coefficient: its value in the profile and its 90 % interval over
/// the draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Spread {
    /// Its name in the profile (`constant_ns`, ..., `overhead_ns` for
    /// arrival and departure together).
    pub name: &'static str,
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

impl Spread {
    /// The interval's half-width as a share of the value (`None`: the
    /// value is 0).
    pub fn relative_half_width(&self) -> Option<f64> {
        (self.value > 0.0).then(|| (self.high - self.low) / 2.0 / self.value)
    }

    /// Whether the runs identify it: its interval neither reaches 0 while
    /// the value is not 0, nor is wider than [`WIDE`] of it either side;
    /// a value of 0 is identified when every draw in the interval is 0.
    pub fn identified(&self) -> bool {
        match self.relative_half_width() {
            Some(relative) => self.low > 0.0 && relative <= WIDE,
            None => self.high <= 0.0,
        }
    }
}

/// Stage A refitted on `resamples` resamples of the requests (each
/// request drawn with replacement, as many as there are), in order; a
/// resample with no row to fit is left out.
pub fn refits(rows: &Rows, resamples: u32, seed: u64) -> Vec<Fit> {
    let n = rows.requests;
    if n == 0 {
        return Vec::new();
    }
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut counts = vec![0u32; n];
    let mut fits = Vec::with_capacity(resamples as usize);
    for _ in 0..resamples {
        counts.iter_mut().for_each(|c| *c = 0);
        for _ in 0..n {
            counts[rng.random_range(0..n)] += 1;
        }
        if let Ok(fit) = rows.refit(|i| counts[i]) {
            fits.push(fit);
        }
    }
    fits
}

/// A stage A fit as a draw of the profile's coefficients.
pub fn draw(fit: &Fit) -> Draw {
    Draw {
        step: fit.step.clone(),
        overhead: Overheads {
            arrival_ns: fit.overhead_ns.round() as u64,
            departure_ns: 0,
        },
    }
}

/// The profile's [`Uncertainty`] made of `draws` from `requests`.
pub fn uncertainty(draws: Vec<Draw>, requests: usize) -> Uncertainty {
    Uncertainty {
        method: format!(
            "bootstrap: {} resamples of {requests} requests, stage A refitted on each \
             (knee searched again), stage B's factors of the point fit applied",
            draws.len()
        ),
        draws,
    }
}

/// Each coefficient of `profile` with its interval over `draws`, in the
/// profile's order, the overhead last.
pub fn spreads(profile: &Profile, draws: &[Draw]) -> Vec<Spread> {
    type Get = fn(&Draw) -> f64;
    let columns: [(&'static str, Get); 8] = [
        ("constant_ns", |d| d.step.constant_ns),
        ("per_seq_ns", |d| d.step.per_seq_ns),
        ("per_token_ns", |d| d.step.per_token_ns),
        ("knee_tokens", |d| f64::from(d.step.knee_tokens)),
        ("per_token_above_knee_ns", |d| {
            d.step.per_token_above_knee_ns
        }),
        ("per_decode_context_token_ns", |d| {
            d.step.per_decode_context_token_ns
        }),
        ("per_prefill_attention_ns", |d| {
            d.step.per_prefill_attention_ns
        }),
        ("overhead_ns", |d| {
            (d.overhead.arrival_ns + d.overhead.departure_ns) as f64
        }),
    ];
    let point = Draw {
        step: profile.step.clone(),
        overhead: profile.overhead,
    };
    columns
        .into_iter()
        .map(|(name, get)| {
            let mut values: Vec<f64> = draws.iter().map(get).collect();
            values.sort_by(f64::total_cmp);
            let value = get(&point);
            let (low, high) = match values.len() {
                0 => (value, value),
                n => {
                    let at = |q: f64| values[((n - 1) as f64 * q).round() as usize];
                    (at(OUTSIDE / 2.0), at(1.0 - OUTSIDE / 2.0))
                }
            };
            Spread {
                name,
                value,
                low,
                high,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(value: f64, low: f64, high: f64) -> Spread {
        Spread {
            name: "x",
            value,
            low,
            high,
        }
    }

    #[test]
    fn a_wide_interval_or_one_reaching_zero_is_not_identified() {
        assert!(spread(100.0, 90.0, 110.0).identified());
        assert!(!spread(100.0, 0.0, 110.0).identified(), "reaches 0");
        assert!(!spread(100.0, 10.0, 130.0).identified(), "half-width 60 %");
        assert!(spread(0.0, 0.0, 0.0).identified(), "0, and every draw 0");
        assert!(!spread(0.0, 0.0, 5.0).identified(), "0, some draws not");
        assert_eq!(spread(100.0, 90.0, 110.0).relative_half_width(), Some(0.1));
    }
}
