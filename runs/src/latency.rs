//! A latency as `summary.json` reports it ([`Latency`]: count, mean,
//! percentiles, max), and its values as a run collects them in bounded
//! memory ([`Values`]).
//!
//! Owns the precision rule, the same for `arbor run` and `arbor
//! summarize` (both collect through [`crate::collector::Collector`]): a
//! latency's percentiles are exact (nearest rank over every value) up to
//! [`EXACT_VALUES`] values; past that the values are folded into an HDR
//! histogram of 3 significant digits (a percentile within 0.1 % of the
//! exact one), so a run of any length holds a few hundred kilobytes per
//! latency instead of 8 bytes per request. Count, mean and max stay exact.

use arbor_engine::stats::{Distribution, Seconds};
use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Values kept one by one before a latency is folded into a histogram.
pub const EXACT_VALUES: usize = 100_000;

/// Count, mean and percentiles of a latency, in seconds: exact
/// (nearest-rank) up to 100,000 values, else (and for ITL always) from an
/// HDR histogram with 3 significant digits (count, mean and max stay
/// exact).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Latency {
    pub count: u64,
    pub mean_s: f64,
    pub p50_s: f64,
    pub p90_s: f64,
    pub p95_s: f64,
    pub p99_s: f64,
    pub max_s: f64,
}

impl Latency {
    /// Exact, over every value (nanoseconds).
    pub fn of(values: &mut [u64]) -> Latency {
        let d = Distribution::<Seconds>::of(values);
        Latency {
            count: d.count,
            mean_s: d.mean_shown(),
            p50_s: d.shown(d.p50),
            p90_s: d.shown(d.p90),
            p95_s: d.shown(d.p95),
            p99_s: d.shown(d.p99),
            max_s: d.shown(d.max),
        }
    }

    /// From a histogram of the values (nanoseconds), their exact sum and
    /// maximum.
    fn of_histogram(h: &Histogram<u64>, sum: u128, max: u64) -> Latency {
        let n = h.len();
        if n == 0 {
            return Latency::of(&mut []);
        }
        // A bucket's highest equivalent value can exceed the true maximum.
        let q = |p: f64| h.value_at_quantile(p).min(max) as f64 / 1e9;
        Latency {
            count: n,
            mean_s: sum as f64 / n as f64 / 1e9,
            p50_s: q(0.50),
            p90_s: q(0.90),
            p95_s: q(0.95),
            p99_s: q(0.99),
            max_s: max as f64 / 1e9,
        }
    }
}

/// A latency's values (nanoseconds): one by one up to [`EXACT_VALUES`],
/// then a histogram.
#[derive(Debug, Clone, Default)]
pub struct Values {
    exact: Vec<u64>,
    folded: Option<Folded>,
}

#[derive(Debug, Clone)]
struct Folded {
    histogram: Histogram<u64>,
    sum: u128,
    max: u64,
}

impl Folded {
    fn new() -> Folded {
        Folded {
            // Auto-resizing from 1 ns, 3 significant digits.
            histogram: Histogram::new(3).expect("3 significant digits are valid"),
            sum: 0,
            max: 0,
        }
    }

    fn add(&mut self, v: u64) {
        // Auto-resizing: `record` grows the range; saturating would clamp.
        if self.histogram.record(v).is_err() {
            self.histogram.saturating_record(v);
        }
        self.sum += u128::from(v);
        self.max = self.max.max(v);
    }
}

impl Values {
    /// Values that are folded from the first (inter-token latencies,
    /// millions of them).
    pub fn folded() -> Values {
        Values {
            exact: Vec::new(),
            folded: Some(Folded::new()),
        }
    }

    pub fn push(&mut self, v: u64) {
        if let Some(folded) = self.folded.as_mut() {
            folded.add(v);
            return;
        }
        self.exact.push(v);
        if self.exact.len() >= EXACT_VALUES {
            let mut folded = Folded::new();
            for v in std::mem::take(&mut self.exact) {
                folded.add(v);
            }
            self.folded = Some(folded);
        }
    }

    /// How many values were pushed.
    pub fn len(&self) -> u64 {
        match &self.folded {
            Some(f) => f.histogram.len(),
            None => self.exact.len() as u64,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values' cumulative distribution, ascending: `(value, how many
    /// values are at most it)`, a step per distinct value (once folded,
    /// per bucket: its highest equivalent value, cut to the maximum), so
    /// the report's CDFs follow the summary's precision rule.
    pub fn steps(&mut self) -> Vec<(u64, u64)> {
        match &self.folded {
            Some(f) => {
                let mut cumulative = 0;
                f.histogram
                    .iter_recorded()
                    .map(|v| {
                        cumulative += v.count_since_last_iteration();
                        let top = f.histogram.highest_equivalent(v.value_iterated_to());
                        (top.min(f.max), cumulative)
                    })
                    .collect()
            }
            None => {
                self.exact.sort_unstable();
                let mut steps: Vec<(u64, u64)> = Vec::new();
                for (i, &v) in self.exact.iter().enumerate() {
                    match steps.last_mut() {
                        Some(last) if last.0 == v => last.1 = i as u64 + 1,
                        _ => steps.push((v, i as u64 + 1)),
                    }
                }
                steps
            }
        }
    }

    /// The latency of the values pushed.
    pub fn latency(&mut self) -> Latency {
        match &self.folded {
            Some(f) => Latency::of_histogram(&f.histogram, f.sum, f.max),
            None => Latency::of(&mut self.exact),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_the_limit_within_a_thousandth_beyond_and_bounded() {
        // A deterministic spread of values from 1 ms to about 2 s.
        let value = |i: u64| 1_000_000 + (i * 7_919 % 2_000) * 1_000_000 + i % 997;
        let mut few = Values::default();
        let mut all: Vec<u64> = (0..1_000).map(value).collect();
        for &v in &all {
            few.push(v);
        }
        assert_eq!(
            few.latency(),
            Latency::of(&mut all),
            "exact below the limit"
        );
        let steps = few.steps();
        assert_eq!(steps.last(), Some(&(*all.iter().max().unwrap(), 1_000)));
        assert!(steps.windows(2).all(|w| w[0].0 < w[1].0));

        let n = 3 * EXACT_VALUES as u64;
        let mut many = Values::default();
        let mut all: Vec<u64> = (0..n).map(value).collect();
        for &v in &all {
            many.push(v);
        }
        assert!(
            many.exact.capacity() == 0,
            "the values are not kept one by one"
        );
        let steps = many.steps();
        assert_eq!(
            steps.last().map(|s| s.1),
            Some(n),
            "every value in the steps"
        );
        assert!(steps
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        let (got, exact) = (many.latency(), Latency::of(&mut all));
        assert_eq!((got.count, got.max_s), (exact.count, exact.max_s));
        assert!((got.mean_s - exact.mean_s).abs() <= exact.mean_s * 1e-12);
        for (g, e) in [
            (got.p50_s, exact.p50_s),
            (got.p90_s, exact.p90_s),
            (got.p99_s, exact.p99_s),
        ] {
            assert!((g - e).abs() <= e * 1e-3, "{g} against {e}");
        }
    }
}
