//! `profile_export_aiperf_aggregate.json` in AIPerf 0.13's shape (the
//! confidence aggregate of `--num-profile-runs`, its schema 1.0): a
//! `metadata` block (`aggregation_type`, the run counts, the failed runs,
//! and the validity stamp), `metrics` keyed `<tag>_<stat>` with `mean`,
//! `std`, `min`, `max`, `cv`, `se`, `ci_low`, `ci_high`, `t_critical` and
//! `unit`, and `arbor`, the extension AIPerf ignores, holding the whole
//! [`Aggregate`].
//!
//! Owns the mapping of an arbor aggregate's rows to AIPerf's keys
//! (docs/agentx.md, "AIPerf export"): latencies converted from seconds to
//! ms as the single-run export does (its `inter_token_latency` is arbor's
//! TPOT); rows AIPerf has no tag for (arbor's ITL gaps, job time, the
//! cache-hit ratio) only in the extension. Computes no
//! statistic of its own beyond `se` and `cv` (`arbor_runs::aggregate::stats`
//! made the rest). Reads and writes no file.

use std::collections::BTreeMap;

use serde::Serialize;

use super::metric::{MS, REQUESTS_PER_SEC, TOKENS_PER_SEC};
use super::profile::{aiperf_scenario, AIPERF_VERSION};
use arbor_runs::aggregate::runs::RunState;
use arbor_runs::aggregate::{Aggregate, MetricSpread};

/// The file name AIPerf writes for `--num-profile-runs`.
pub const AGGREGATE_FILE: &str = "profile_export_aiperf_aggregate.json";
/// The aggregate file's own `schema_version` in AIPerf 0.13.
pub const AGGREGATE_SCHEMA_VERSION: &str = "1.0";

/// An arbor metric AIPerf has: its AIPerf tag, unit and the factor from
/// arbor's unit to AIPerf's.
struct Tag {
    arbor: &'static str,
    aiperf: &'static str,
    unit: &'static str,
    scale: f64,
}

/// arbor's metric names (before `_<stat>`) and AIPerf's.
const TAGS: [Tag; 6] = [
    Tag {
        arbor: "ttft",
        aiperf: "time_to_first_token",
        unit: MS,
        scale: 1000.0,
    },
    // AIPerf's ITL is arbor's TPOT, as in the single-run export.
    Tag {
        arbor: "tpot",
        aiperf: "inter_token_latency",
        unit: MS,
        scale: 1000.0,
    },
    Tag {
        arbor: "e2e",
        aiperf: "request_latency",
        unit: MS,
        scale: 1000.0,
    },
    Tag {
        arbor: "request_throughput",
        aiperf: "request_throughput",
        unit: REQUESTS_PER_SEC,
        scale: 1.0,
    },
    Tag {
        arbor: "input_token_throughput",
        aiperf: "input_token_throughput",
        unit: TOKENS_PER_SEC,
        scale: 1.0,
    },
    Tag {
        arbor: "output_token_throughput",
        aiperf: "output_token_throughput",
        unit: TOKENS_PER_SEC,
        scale: 1.0,
    },
];

/// arbor's statistic suffixes and AIPerf's; a rate has no suffix in arbor
/// and is AIPerf's `avg`.
const STATS: [(&str, &str); 4] = [
    ("mean", "avg"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
];

/// The document.
#[derive(Debug, Clone, Serialize)]
pub struct AggregateProfile<'a> {
    pub schema_version: &'static str,
    pub aiperf_version: &'static str,
    pub metadata: AggregateMetadata,
    pub metrics: BTreeMap<String, Confidence>,
    pub arbor: &'a Aggregate,
}

/// `metadata` as AIPerf's confidence exporter writes it.
#[derive(Debug, Clone, Serialize)]
pub struct AggregateMetadata {
    pub aggregation_type: &'static str,
    pub num_profile_runs: u32,
    pub num_successful_runs: u32,
    pub failed_runs: Vec<FailedRun>,
    pub confidence_level: f64,
    pub run_labels: Vec<String>,
    /// The stamp: present with a scenario, as AIPerf writes it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_valid: Option<bool>,
    /// Left out when empty, as AIPerf does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub submission_invalid_reasons: Vec<String>,
}

/// A run that did not complete: its label and why.
#[derive(Debug, Clone, Serialize)]
pub struct FailedRun {
    pub label: String,
    pub error: String,
}

/// One `<tag>_<stat>` across runs (AIPerf's `ConfidenceMetric`). With one
/// run, `std`, `se` are 0, the interval is the mean and `t_critical` is
/// `null`, as AIPerf writes it; `cv` is `null` when the mean is 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confidence {
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
    pub cv: Option<f64>,
    pub se: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub t_critical: Option<f64>,
    pub unit: &'static str,
}

impl<'a> AggregateProfile<'a> {
    /// The document of an aggregate.
    pub fn of(aggregate: &'a Aggregate) -> AggregateProfile<'a> {
        let metrics = aggregate
            .metrics
            .iter()
            .filter_map(|(name, row)| {
                let (key, tag) = aiperf_key(name)?;
                Some((key, Confidence::of(row, tag)))
            })
            .collect();
        let failed_runs = aggregate
            .runs
            .iter()
            .filter(|r| r.state != RunState::Complete)
            .map(|r| FailedRun {
                label: r.dir.clone(),
                error: state_name(r.state).to_string(),
            })
            .collect();
        let run_labels = aggregate
            .runs
            .iter()
            .filter(|r| r.state == RunState::Complete)
            .map(|r| r.dir.clone())
            .collect();
        let stamped = aggregate.scenario.is_some();
        AggregateProfile {
            schema_version: AGGREGATE_SCHEMA_VERSION,
            aiperf_version: AIPERF_VERSION,
            metadata: AggregateMetadata {
                aggregation_type: "confidence",
                num_profile_runs: aggregate
                    .runs_planned
                    .unwrap_or(aggregate.runs.len() as u32),
                num_successful_runs: aggregate.runs_complete,
                failed_runs,
                confidence_level: aggregate.confidence,
                run_labels,
                scenario: aggregate.scenario.as_deref().map(aiperf_scenario),
                submission_valid: stamped.then_some(aggregate.submission_valid),
                submission_invalid_reasons: if stamped {
                    aggregate.submission_invalid_reasons.clone()
                } else {
                    Vec::new()
                },
            },
            metrics,
            arbor: aggregate,
        }
    }
}

impl Confidence {
    fn of(row: &MetricSpread, tag: &Tag) -> Confidence {
        let s = &row.spread;
        let k = tag.scale;
        let mean = s.mean * k;
        let std = s.std.unwrap_or(0.0) * k;
        let se = std / (s.n.max(1) as f64).sqrt();
        Confidence {
            mean,
            std,
            min: s.min * k,
            max: s.max * k,
            cv: (mean != 0.0).then(|| std / mean),
            se,
            ci_low: s.ci95_low.map_or(mean, |v| v * k),
            ci_high: s.ci95_high.map_or(mean, |v| v * k),
            t_critical: s.t_critical,
            unit: tag.unit,
        }
    }
}

/// AIPerf's key of an arbor aggregate row (`ttft_p50` is
/// `time_to_first_token_p50`, `request_throughput` is
/// `request_throughput_avg`) and its tag; `None` for a row AIPerf has no
/// tag for.
fn aiperf_key(name: &str) -> Option<(String, &'static Tag)> {
    TAGS.iter().find_map(|tag| {
        if name == tag.arbor {
            return Some((format!("{}_avg", tag.aiperf), tag));
        }
        let stat = name.strip_prefix(tag.arbor)?.strip_prefix('_')?;
        let (_, aiperf_stat) = STATS.iter().find(|(arbor, _)| *arbor == stat)?;
        Some((format!("{}_{aiperf_stat}", tag.aiperf), tag))
    })
}

/// A run's state as `aggregate.json` names it.
fn state_name(state: RunState) -> &'static str {
    match state {
        RunState::Complete => "complete",
        RunState::Cancelled => "cancelled",
        RunState::Incomplete => "incomplete",
        RunState::Failed => "failed",
        RunState::Missing => "missing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_runs::aggregate::stats::Spread;

    #[test]
    fn keys_are_aiperfs_tag_and_stat() {
        let key = |n: &str| aiperf_key(n).map(|(k, _)| k);
        assert_eq!(key("ttft_p50").as_deref(), Some("time_to_first_token_p50"));
        assert_eq!(key("e2e_mean").as_deref(), Some("request_latency_avg"));
        assert_eq!(key("tpot_p99").as_deref(), Some("inter_token_latency_p99"));
        assert_eq!(
            key("request_throughput").as_deref(),
            Some("request_throughput_avg")
        );
        assert_eq!(key("itl_p50"), None);
        assert_eq!(key("job_time_mean"), None);
        assert_eq!(key("cache_hit_ratio"), None);
    }

    #[test]
    fn latencies_become_ms_and_one_run_collapses_the_interval() {
        let tag = &TAGS[0];
        let two = MetricSpread {
            unit: "s",
            spread: Spread::of(&[0.010, 0.012]).expect("two"),
        };
        let c = Confidence::of(&two, tag);
        assert!((c.mean - 11.0).abs() < 1e-9);
        assert_eq!(c.unit, "ms");
        assert_eq!(c.t_critical, Some(12.7062));
        assert!((c.se - c.std / 2f64.sqrt()).abs() < 1e-12);
        let one = MetricSpread {
            unit: "s",
            spread: Spread::of(&[0.010]).expect("one"),
        };
        let c = Confidence::of(&one, tag);
        assert_eq!((c.std, c.se, c.t_critical), (0.0, 0.0, None));
        assert_eq!((c.ci_low, c.ci_high), (c.mean, c.mean));
    }
}
