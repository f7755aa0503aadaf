//! Empirical CDFs, decimated: a few hundred (value, fraction) points per
//! distribution whatever the number of values, so the page stays small.
//! Points are kept evenly in rank, and more densely in the top 1 % (where
//! the p99 lives).

use arbor_runs::latency::Values;
use serde::Serialize;

/// Points kept evenly over the ranks.
const EVEN_POINTS: u64 = 300;
/// Points kept over the top 1 % of ranks.
const TAIL_POINTS: u64 = 100;

/// A decimated CDF: `x` in seconds (ascending), `p` the fraction of values
/// at most `x`; `n` the number of values.
#[derive(Debug, Default, Serialize)]
pub struct Cdf {
    pub n: u64,
    pub x: Vec<f64>,
    pub p: Vec<f64>,
}

impl Cdf {
    /// From values in nanoseconds (sorted here).
    pub fn of_values(mut values: Vec<u64>) -> Cdf {
        values.sort_unstable();
        let n = values.len() as u64;
        Cdf::of_steps(
            values.iter().enumerate().map(|(i, &v)| (v, i as u64 + 1)),
            n,
        )
    }

    /// From a run's values of a latency (nanoseconds), at the summary's
    /// precision (`arbor_runs::latency`).
    pub fn of_latency(values: &mut Values) -> Cdf {
        let n = values.len();
        Cdf::of_steps(values.steps().into_iter(), n)
    }

    /// From (value, cumulative count) steps in ascending order, `n` in all.
    fn of_steps(steps: impl Iterator<Item = (u64, u64)>, n: u64) -> Cdf {
        let mut cdf = Cdf {
            n,
            ..Cdf::default()
        };
        if n == 0 {
            return cdf;
        }
        let even = n.div_ceil(EVEN_POINTS).max(1);
        let tail_from = n - n / 100;
        let tail = (n / 100).div_ceil(TAIL_POINTS).max(1);
        let mut last_kept = 0;
        let mut pending = None;
        for (value, cum) in steps {
            let step = if cum >= tail_from { tail } else { even };
            if cum == n || cum >= last_kept + step || last_kept == 0 {
                cdf.push(value, cum, n);
                last_kept = cum;
                pending = None;
            } else {
                pending = Some((value, cum));
            }
        }
        if let Some((value, cum)) = pending {
            cdf.push(value, cum, n);
        }
        cdf
    }

    /// Adds a point; a point at the same (rounded) value replaces the one
    /// before it, so `x` is strictly ascending.
    fn push(&mut self, value_ns: u64, cum: u64, n: u64) {
        let x = round_secs(value_ns);
        let p = (cum as f64 / n as f64 * 1e5).round() / 1e5;
        if self.x.last() == Some(&x) {
            self.p.pop();
            self.x.pop();
        }
        self.x.push(x);
        self.p.push(p);
    }
}

/// Nanoseconds to seconds, rounded to 0.1 µs (short in JSON).
pub fn round_secs(ns: u64) -> f64 {
    (ns as f64 / 100.0).round() / 1e7
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_distribution_keeps_a_few_hundred_points_and_its_ends() {
        let cdf = Cdf::of_values((1..=100_000u64).rev().collect());
        assert_eq!(cdf.n, 100_000);
        assert!(
            cdf.x.len() <= (EVEN_POINTS + TAIL_POINTS + 2) as usize,
            "{}",
            cdf.x.len()
        );
        assert_eq!(cdf.x.first(), Some(&round_secs(1)));
        assert_eq!(cdf.x.last(), Some(&round_secs(100_000)));
        assert_eq!(cdf.p.last(), Some(&1.0));
        assert!(cdf.x.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn equal_values_are_one_point() {
        let cdf = Cdf::of_values(vec![0, 0, 0, 5_000]);
        assert_eq!(cdf.x, vec![0.0, 5e-6]);
        assert_eq!(cdf.p, vec![0.75, 1.0]);
    }

    #[test]
    fn an_empty_distribution_has_no_points() {
        let cdf = Cdf::of_values(Vec::new());
        assert_eq!((cdf.n, cdf.x.len()), (0, 0));
    }

    #[test]
    fn a_small_distribution_keeps_every_value() {
        let cdf = Cdf::of_values(vec![3_000, 1_000, 2_000]);
        assert_eq!(cdf.x, vec![1e-6, 2e-6, 3e-6]);
        assert_eq!(cdf.p, vec![0.33333, 0.66667, 1.0]);
    }
}
