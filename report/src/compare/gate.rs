//! `--fail-on`: judging each threshold against each NEW run. A threshold
//! is crossed when the point delta makes NEW worse than BASE by more than
//! the allowance (strictly more); the bootstrap interval is reported
//! beside it for a reader to judge noise, and does not decide. A metric
//! missing from either run (no successful request, no cache report) is
//! not judged and says so.

use serde::Serialize;

use super::metric::{Allowance, Metric, Threshold};
use super::rows::{worsening, Cell, Row};

/// One threshold judged against one NEW run.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub threshold: String,
    pub run: String,
    /// `None`: the metric is missing from a run, so it was not judged.
    pub crossed: Option<bool>,
    pub base: Option<f64>,
    #[serde(flatten)]
    pub cell: Cell,
    #[serde(skip)]
    pub metric: Metric,
}

/// Every threshold against every NEW run, in the order given.
pub fn judge(thresholds: &[Threshold], rows: &[Row], runs: &[String]) -> Vec<Verdict> {
    let mut out = Vec::new();
    for t in thresholds {
        let Some(row) = rows.iter().find(|r| r.metric == t.metric) else {
            continue;
        };
        for (cell, run) in row.new.iter().zip(runs) {
            let crossed = worsening(t.metric, cell)
                .zip(row.base)
                .map(|(worse, base)| worse > limit(t.allowance, base));
            out.push(Verdict {
                threshold: t.to_string(),
                run: run.clone(),
                crossed,
                base: row.base,
                cell: *cell,
                metric: t.metric,
            });
        }
    }
    out
}

/// How much worse NEW may be, in the metric's unit.
fn limit(allowance: Allowance, base: f64) -> f64 {
    match allowance {
        Allowance::Relative(pct) => pct / 100.0 * base.abs(),
        Allowance::Absolute(a) => a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::metric::{fail_on, Latency, Stat};

    fn row(metric: Metric, base: f64, new: f64) -> Row {
        Row {
            metric,
            base: Some(base),
            new: vec![Cell {
                value: Some(new),
                delta: Some(new - base),
                relative_pct: None,
                ci: None,
            }],
        }
    }

    fn crossed(spec: &str, rows: &[Row]) -> Option<bool> {
        let t = fail_on(spec).unwrap().0;
        judge(&t, rows, &["new".into()])[0].crossed
    }

    #[test]
    fn relative_and_absolute_allowances_in_both_directions() {
        let ttft = |n| [row(Metric::Latency(Latency::Ttft, Stat::P99), 100.0, n)];
        assert_eq!(crossed("ttft_p99=+10%", &ttft(110.0)), Some(false));
        assert_eq!(crossed("ttft_p99=+10%", &ttft(110.5)), Some(true));
        assert_eq!(crossed("ttft_p99=+10", &ttft(110.5)), Some(true));
        assert_eq!(crossed("ttft_p99=+0", &ttft(50.0)), Some(false));
        // Throughput is worse when it drops.
        let rps = |n| [row(Metric::RequestsPerS, 10.0, n)];
        assert_eq!(crossed("requests_per_s=+5%", &rps(9.6)), Some(false));
        assert_eq!(crossed("requests_per_s=+5%", &rps(9.4)), Some(true));
        assert_eq!(crossed("requests_per_s=+5%", &rps(20.0)), Some(false));
        // From zero errors, any error crosses +0 and +0%.
        let errors = |n| [row(Metric::Errors, 0.0, n)];
        assert_eq!(crossed("errors=+0", &errors(0.0)), Some(false));
        assert_eq!(crossed("errors=+0", &errors(1.0)), Some(true));
        assert_eq!(crossed("errors=+0%", &errors(1.0)), Some(true));
    }

    #[test]
    fn a_missing_value_is_not_judged() {
        let mut r = row(Metric::CacheHitRatio, 50.0, 0.0);
        r.new[0].value = None;
        r.new[0].delta = None;
        assert_eq!(crossed("cache_hit_ratio=+1", &[r]), None);
    }
}
