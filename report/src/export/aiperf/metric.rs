//! One AIPerf metric block (`JsonMetricResult` of AIPerf 0.13): a unit and
//! the statistics of a distribution (`avg`, `min`, `max`, `p1` … `p99`,
//! `std`, `count`, `sum`), or a single value (`avg` only).
//!
//! Owns how arbor fills a block: percentiles are nearest-rank, as every
//! percentile arbor prints (`arbor_engine::stats::nearest_rank`; AIPerf
//! interpolates), so a block's `p50` is the `summary.json` figure in the
//! block's unit; `std` is the population standard deviation. Knows nothing
//! of records or files.

use arbor_engine::stats::nearest_rank_index;
use serde::Serialize;

/// AIPerf's unit strings.
pub const MS: &str = "ms";
pub const SEC: &str = "sec";
pub const TOKENS: &str = "tokens";
pub const REQUESTS: &str = "requests";
pub const TOKENS_PER_SEC: &str = "tokens/sec";
pub const TOKENS_PER_SEC_PER_USER: &str = "tokens/sec/user";
pub const REQUESTS_PER_SEC: &str = "requests/sec";

/// A metric block as AIPerf writes it; absent statistics are left out.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MetricBlock {
    pub unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg: Option<f64>,
    #[serde(flatten)]
    pub spread: Option<Spread>,
}

/// The statistics of a distribution of at least one value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub p1: f64,
    pub p5: f64,
    pub p10: f64,
    pub p25: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub std: f64,
    pub count: u64,
    pub sum: f64,
}

impl MetricBlock {
    /// A single value (a rate, a duration, a count): `avg` only, as AIPerf
    /// writes its derived metrics.
    pub fn single(unit: &'static str, value: f64) -> MetricBlock {
        MetricBlock {
            unit,
            avg: Some(value),
            spread: None,
        }
    }

    /// The distribution of `values` (in the block's unit; sorted in
    /// place). `None` without values: AIPerf leaves such a metric out.
    pub fn of(unit: &'static str, values: &mut [f64]) -> Option<MetricBlock> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len() as f64;
        let sum: f64 = values.iter().sum();
        let avg = sum / n;
        let variance = values.iter().map(|v| (v - avg) * (v - avg)).sum::<f64>() / n;
        let rank = |p: f64| values[nearest_rank_index(values.len(), p)];
        Some(MetricBlock {
            unit,
            avg: Some(avg),
            spread: Some(Spread {
                p1: rank(0.01),
                p5: rank(0.05),
                p10: rank(0.10),
                p25: rank(0.25),
                p50: rank(0.50),
                p75: rank(0.75),
                p90: rank(0.90),
                p95: rank(0.95),
                p99: rank(0.99),
                min: values[0],
                max: values[values.len() - 1],
                std: variance.sqrt(),
                count: values.len() as u64,
                sum,
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_engine::stats::nearest_rank;

    #[test]
    fn percentiles_are_the_engines_nearest_rank() {
        let raw: Vec<u64> = (1..=200).rev().map(|i| i * 7).collect();
        let mut sorted = raw.clone();
        sorted.sort_unstable();
        let mut values: Vec<f64> = raw.iter().map(|&v| v as f64).collect();
        let block = MetricBlock::of(MS, &mut values).unwrap();
        let spread = block.spread.unwrap();
        for (p, got) in [(0.01, spread.p1), (0.5, spread.p50), (0.99, spread.p99)] {
            assert_eq!(got, nearest_rank(&sorted, p) as f64, "p{p}");
        }
        assert_eq!((spread.min, spread.max, spread.count), (7.0, 1400.0, 200));
        assert_eq!(block.avg, Some(703.5));
    }

    #[test]
    fn std_is_the_population_deviation_and_empty_is_absent() {
        let block = MetricBlock::of(TOKENS, &mut [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(block.spread.unwrap().std, 2.0);
        assert_eq!(MetricBlock::of(TOKENS, &mut []), None);
        let json = serde_json::to_value(MetricBlock::single(SEC, 1.5)).unwrap();
        assert_eq!(json, serde_json::json!({"unit": "sec", "avg": 1.5}));
    }
}
