//! `profile_export_aiperf.json` in AIPerf 0.13's shape (`JsonExportData`,
//! schema 1.4): the `metadata` block with the validity stamp, one metric
//! block per AIPerf metric arbor has, the run's end, the errors by
//! category, and `arbor`, the extension AIPerf ignores, holding the
//! run's whole `summary.json`.
//!
//! Owns the run-level mapping (docs/agentx.md, "AIPerf export"): the
//! per-request blocks are the distributions of [`Request::metrics`] over
//! the measured requests (warmups left out); the rates, the window and the
//! counts are `summary.json`'s, copied.
//!
//! [`Request::metrics`]: super::request::Request::metrics

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::metric::{MetricBlock, REQUESTS, REQUESTS_PER_SEC, SEC, TOKENS, TOKENS_PER_SEC};
use super::request::Metric;
use super::run_summary;
use arbor_error::Error;
use arbor_runs::output::Summary;

/// The `JsonExportData` schema version written.
pub const SCHEMA_VERSION: &str = "1.4";
/// The AIPerf release whose schema this is.
pub const AIPERF_VERSION: &str = "0.13.0";
/// AIPerf's name of the recipe arbor calls `agentx-mvp`.
pub const AIPERF_AGENTX: &str = "inferencex-agentx-mvp";

/// The distributions of the measured requests' metrics, by AIPerf tag.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    values: BTreeMap<&'static str, (&'static str, Vec<f64>)>,
}

impl Measured {
    pub fn add(&mut self, metrics: &[Metric]) {
        for m in metrics {
            let entry = self.values.entry(m.tag).or_insert((m.unit, Vec::new()));
            entry.1.push(m.value);
        }
    }
}

/// The document.
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    pub schema_version: &'static str,
    pub aiperf_version: &'static str,
    pub benchmark_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub blocks: BTreeMap<&'static str, MetricBlock>,
    pub was_cancelled: bool,
    pub is_complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    pub error_summary: Vec<ErrorCount>,
    pub arbor: Extension,
}

/// The `metadata` block: present with a scenario, as AIPerf writes it.
#[derive(Debug, Clone, Serialize)]
pub struct Metadata {
    pub scenario: String,
    pub submission_valid: bool,
    /// Left out when empty, as AIPerf does.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub submission_invalid_reasons: Vec<String>,
}

/// `ErrorDetailsCount`: one error category and its count.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorCount {
    pub error_details: ErrorKind,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ErrorKind {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}

/// `arbor`: what arbor has and AIPerf does not.
#[derive(Debug, Clone, Serialize)]
pub struct Extension {
    /// arbor's own name of the scenario (`agentx-mvp`), if any.
    pub scenario: Option<String>,
    /// How the percentiles were taken.
    pub percentiles: &'static str,
    /// The run epoch in Unix nanoseconds (to the second), the zero of the
    /// records' times.
    pub epoch_unix_ns: Option<u64>,
    /// The run's `summary.json`, its keys sorted.
    pub summary: Value,
}

impl Profile {
    /// The document of a run: its summary and its measured requests.
    pub fn of(
        benchmark_id: String,
        summary: &Summary,
        measured: Measured,
    ) -> Result<Profile, Error> {
        let mut blocks = BTreeMap::new();
        for (tag, (unit, mut values)) in measured.values {
            if let Some(block) = MetricBlock::of(unit, &mut values) {
                blocks.insert(tag, block);
            }
        }
        let t = &summary.throughput.work;
        let singles = [
            ("request_throughput", REQUESTS_PER_SEC, t.requests_per_s),
            (
                "output_token_throughput",
                TOKENS_PER_SEC,
                t.output_tokens_per_s,
            ),
            ("benchmark_duration", SEC, summary.throughput.window_s),
            ("request_count", REQUESTS, summary.counts.ok as f64),
            (
                "error_request_count",
                REQUESTS,
                summary.counts.failed as f64,
            ),
            ("total_osl", TOKENS, t.output_tokens as f64),
            ("total_isl", TOKENS, t.input_tokens as f64),
        ];
        for (tag, unit, value) in singles {
            blocks.insert(tag, MetricBlock::single(unit, value));
        }
        let metadata = summary.scenario.as_ref().map(|name| Metadata {
            scenario: aiperf_scenario(name),
            submission_valid: summary.submission_valid.unwrap_or(false),
            submission_invalid_reasons: summary
                .submission_invalid_reasons
                .clone()
                .unwrap_or_default(),
        });
        let error_summary = summary
            .errors
            .iter()
            .map(|(category, &count)| ErrorCount {
                error_details: ErrorKind {
                    kind: category.clone(),
                    message: category.clone(),
                },
                count,
            })
            .collect();
        Ok(Profile {
            schema_version: SCHEMA_VERSION,
            aiperf_version: AIPERF_VERSION,
            benchmark_id,
            metadata,
            blocks,
            was_cancelled: summary.cancelled,
            is_complete: summary.complete,
            incomplete_reason: (!summary.complete).then(|| summary.notes.join("; ")),
            error_summary,
            arbor: Extension {
                scenario: summary.scenario.clone(),
                percentiles: "nearest-rank",
                epoch_unix_ns: run_summary::epoch_unix_ns(summary),
                // As a JSON value, so its keys keep the order the export
                // has always written (sorted).
                summary: serde_json::to_value(summary).map_err(|e| {
                    Error::other(format!("cannot encode the summary for AIPerf: {e}"))
                })?,
            },
        })
    }
}

/// AIPerf's name of an arbor scenario: `agentx-mvp` is AIPerf's
/// `inferencex-agentx-mvp`; another name passes as it is.
pub(super) fn aiperf_scenario(name: &str) -> String {
    if name == arbor_runs::recipe::AGENTX_MVP {
        AIPERF_AGENTX.to_string()
    } else {
        name.to_string()
    }
}
