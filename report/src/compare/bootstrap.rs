//! The seeded bootstrap: a 95 % confidence interval of the difference of
//! one percentile between two runs. Owns the resampling only.
//!
//! Each resample draws every run's values again with replacement (as many
//! as it has) and takes the nearest-rank percentile of the draw. Drawing
//! `n` indices uniformly and keeping the `k`-th smallest is the same, in
//! distribution, as `floor(n * U)` for `U` the `k`-th smallest of `n`
//! uniforms, which is `Beta(k, n + 1 - k)`: so a resample costs one Beta
//! draw per run instead of `n` draws and a selection, and 100k records
//! compare in milliseconds. The interval is the 2.5 % and 97.5 %
//! nearest-rank percentiles of the resampled differences (NEW - BASE).

use arbor_engine::rng::{self, Purpose};
use rand::Rng;
use rand_distr::{Beta, Distribution};
use rand_pcg::Pcg64;

/// Draws the nearest-rank `q`-quantile of a resample of `sorted` (with
/// replacement, same size).
struct Resampler<'a> {
    sorted: &'a [u64],
    beta: Option<Beta<f64>>,
    rng: Pcg64,
}

impl<'a> Resampler<'a> {
    fn new(sorted: &'a [u64], q: f64, rng: Pcg64) -> Resampler<'a> {
        let n = sorted.len();
        let k = ((q * n as f64).ceil() as usize).clamp(1, n.max(1));
        // n = 1 (k = 1): Beta(1, 1); any n >= 1 gives valid parameters.
        let beta = Beta::new(k as f64, (n + 1 - k) as f64).ok();
        Resampler { sorted, beta, rng }
    }

    fn draw(&mut self) -> u64 {
        let n = self.sorted.len();
        let u = match &self.beta {
            Some(beta) => beta.sample(&mut self.rng),
            None => self.rng.random::<f64>(),
        };
        let index = ((u * n as f64) as usize).min(n - 1);
        self.sorted[index]
    }
}

/// The 95 % interval of `q(new) - q(base)` in nanoseconds, from
/// `resamples` resamples of each; `None` when either run has no values.
/// `stream` tells comparisons and metrics apart: the same seed, stream
/// and values always give the same interval.
pub fn interval(
    base: &[u64],
    new: &[u64],
    q: f64,
    resamples: u32,
    seed: u64,
    stream: (u64, u64),
) -> Option<(i128, i128)> {
    if base.is_empty() || new.is_empty() || resamples == 0 {
        return None;
    }
    let (metric, comparison) = stream;
    let base_rng = rng::stream(seed, Purpose::Bootstrap, metric, 0, comparison);
    let new_rng = rng::stream(seed, Purpose::Bootstrap, metric, 1, comparison);
    let mut b = Resampler::new(base, q, base_rng);
    let mut n = Resampler::new(new, q, new_rng);
    let mut diffs: Vec<i128> = (0..resamples)
        .map(|_| i128::from(n.draw()) - i128::from(b.draw()))
        .collect();
    diffs.sort_unstable();
    let rank = |p: f64| {
        let r = diffs.len();
        diffs[((p * r as f64).ceil() as usize).clamp(1, r) - 1]
    };
    Some((rank(0.025), rank(0.975)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_reproducible_and_covers_the_true_shift() {
        let base: Vec<u64> = (1..=1000).map(|v| v * 1000).collect();
        let new: Vec<u64> = base.iter().map(|v| v + 50_000).collect();
        let a = interval(&base, &new, 0.5, 1000, 7, (3, 1)).unwrap();
        assert_eq!(a, interval(&base, &new, 0.5, 1000, 7, (3, 1)).unwrap());
        assert_ne!(a, interval(&base, &new, 0.5, 1000, 8, (3, 1)).unwrap());
        assert!(a.0 < 50_000 && 50_000 < a.1, "{a:?}");
        // p50 of 1000 values spaced 1000 apart: a resample's p50 moves by
        // about sqrt(1000)/2 ranks; the interval is tens of ranks wide.
        assert!(a.1 - a.0 < 100_000, "{a:?}");
    }

    #[test]
    fn a_single_value_has_a_point_interval() {
        assert_eq!(interval(&[5], &[9], 0.99, 100, 0, (0, 1)), Some((4, 4)));
        assert_eq!(interval(&[], &[9], 0.5, 100, 0, (0, 1)), None);
    }

    #[test]
    fn matches_resampling_indices_in_distribution() {
        // The p90 of 10 values, resampled: its mean by brute force and by
        // the Beta shortcut agree closely.
        let sorted: Vec<u64> = (0..10).map(|v| v * 10).collect();
        let mut rng = rng::stream(1, Purpose::Bootstrap, 0, 0, 0);
        let trials = 20_000;
        let mut brute = 0u64;
        for _ in 0..trials {
            let mut draw: Vec<u64> = (0..10).map(|_| sorted[rng.random_range(0..10)]).collect();
            draw.sort_unstable();
            brute += draw[8];
        }
        let mut r = Resampler::new(&sorted, 0.9, rng::stream(2, Purpose::Bootstrap, 0, 0, 0));
        let fast: u64 = (0..trials).map(|_| r.draw()).sum();
        let (brute, fast) = (brute as f64 / trials as f64, fast as f64 / trials as f64);
        assert!((brute - fast).abs() < 1.0, "{brute} vs {fast}");
    }
}
