//! One line of `profile_export.jsonl` in AIPerf 0.13's per-request shape
//! (`MetricRecordInfo`: `metadata`, `metrics`, `error`), made from one
//! arbor record, with the record's own fields under `arbor`.
//!
//! Owns the per-request mapping (docs/agentx.md, "AIPerf export"): which
//! arbor stamp is which AIPerf timestamp, and each per-request metric in
//! AIPerf's name and unit. [`Request::metrics`] is also what the run's
//! metric blocks add up, so a line and the blocks never disagree.

use arbor_engine::time::{secs_to_nanos, Nanos};
use serde::Serialize;
use serde_json::{Map, Value};

use super::metric::{MS, TOKENS, TOKENS_PER_SEC_PER_USER};
use crate::export::records::Record;

/// AIPerf's names of the per-request metrics arbor has.
pub const TIME_TO_FIRST_TOKEN: &str = "time_to_first_token";
pub const TIME_TO_SECOND_TOKEN: &str = "time_to_second_token";
pub const REQUEST_LATENCY: &str = "request_latency";
pub const INTER_TOKEN_LATENCY: &str = "inter_token_latency";
pub const OUTPUT_TOKEN_THROUGHPUT_PER_USER: &str = "output_token_throughput_per_user";
pub const OUTPUT_SEQUENCE_LENGTH: &str = "output_sequence_length";
pub const INPUT_SEQUENCE_LENGTH: &str = "input_sequence_length";

/// One per-request metric: AIPerf's tag, unit and the value in that unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    pub tag: &'static str,
    pub unit: &'static str,
    pub value: f64,
}

/// A line of `profile_export.jsonl`.
#[derive(Debug, Clone, Serialize)]
pub struct Request {
    pub metadata: Metadata,
    pub metrics: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorDetails>,
    /// Every field of the arbor record (flat, as in the CSV).
    pub arbor: Map<String, Value>,
}

/// `MetricRecordMetadata`.
#[derive(Debug, Clone, Serialize)]
pub struct Metadata {
    pub session_num: u32,
    pub x_request_id: String,
    pub x_correlation_id: String,
    pub conversation_id: String,
    pub turn_index: u32,
    pub request_start_ns: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_ack_ns: Option<u64>,
    pub request_end_ns: u64,
    pub worker_id: String,
    pub record_processor_id: &'static str,
    pub benchmark_phase: &'static str,
    pub was_cancelled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancellation_time_ns: Option<u64>,
    pub root_correlation_id: String,
}

/// `ErrorDetails`.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}

impl Request {
    /// The line of `record`; `epoch_ns` is the run epoch in Unix
    /// nanoseconds (AIPerf's timestamps are wall-clock).
    pub fn of(record: &Record, epoch_ns: u64) -> Request {
        let at = |secs: Option<f64>| Record::ns(secs).map(|ns| epoch_ns.saturating_add(ns));
        let start = at(record.sent_s)
            .or(at(Some(record.dispatched_s)))
            .unwrap_or(epoch_ns);
        let end = at(record.done_s).unwrap_or(start);
        let cancelled = record.status == "cancelled";
        let metrics = Request::metrics(record)
            .into_iter()
            .map(|m| {
                let value = serde_json::json!({"value": m.value, "unit": m.unit});
                (m.tag.to_string(), value)
            })
            .collect();
        Request {
            metadata: Metadata {
                session_num: record.play,
                x_request_id: record.request.to_string(),
                x_correlation_id: format!("play-{}/{}", record.play, record.agent),
                conversation_id: record.tree.clone(),
                turn_index: record.turn,
                request_start_ns: start,
                request_ack_ns: at(record.headers_s),
                request_end_ns: end,
                worker_id: record
                    .lane
                    .map_or_else(|| "arbor".to_string(), |l| format!("lane-{l}")),
                record_processor_id: "arbor",
                benchmark_phase: if record.warmup { "warmup" } else { "profiling" },
                was_cancelled: cancelled,
                cancellation_time_ns: cancelled.then_some(end),
                root_correlation_id: format!("play-{}", record.play),
            },
            metrics,
            error: error_of(record),
            arbor: record
                .fields()
                .into_iter()
                .map(|(name, value)| (name.to_string(), value))
                .collect(),
        }
    }

    /// The per-request metrics of a successful request (a failed or
    /// cancelled one has none, as arbor keeps them out of its latencies):
    /// TTFT, the first inter-token gap (time to second token), E2E and
    /// TPOT in ms, the user's output rate (1 / TPOT), and the token counts.
    pub fn metrics(record: &Record) -> Vec<Metric> {
        if record.status != "ok" {
            return Vec::new();
        }
        let ms = |tag, ns: Option<Nanos>| {
            ns.map(|ns| Metric {
                tag,
                unit: MS,
                value: ns as f64 / 1e6,
            })
        };
        let tpot = tpot_ns(record);
        let per_user = tpot.filter(|&ns| ns > 0).map(|ns| Metric {
            tag: OUTPUT_TOKEN_THROUGHPUT_PER_USER,
            unit: TOKENS_PER_SEC_PER_USER,
            value: 1e9 / ns as f64,
        });
        let tokens = |tag, count: u64| {
            Some(Metric {
                tag,
                unit: TOKENS,
                value: count as f64,
            })
        };
        [
            ms(TIME_TO_FIRST_TOKEN, Record::ns(record.ttft_s)),
            ms(TIME_TO_SECOND_TOKEN, Record::ns(record.itl.first_s)),
            ms(REQUEST_LATENCY, Record::ns(record.e2e_s)),
            ms(INTER_TOKEN_LATENCY, tpot),
            per_user,
            tokens(OUTPUT_SEQUENCE_LENGTH, record.output_tokens),
            tokens(INPUT_SEQUENCE_LENGTH, record.input_tokens),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// TPOT in whole nanoseconds, `(done - first_content) / (output_tokens -
/// 1)` from the stamps, taken as `summary.json` takes it (docs/run.md), so
/// the blocks are its figures; `None` with fewer than 2 output tokens.
fn tpot_ns(record: &Record) -> Option<Nanos> {
    let first = Record::ns(record.first_content_s)?;
    let done = Record::ns(record.done_s)?;
    if record.output_tokens < 2 || done < first {
        return None;
    }
    secs_to_nanos((done - first) as f64 / 1e9 / (record.output_tokens - 1) as f64)
}

/// A failed request's error (its category as AIPerf's `type`); a
/// cancelled one without an error says `cancelled`.
fn error_of(record: &Record) -> Option<ErrorDetails> {
    if record.status == "ok" {
        return None;
    }
    Some(match &record.error {
        Some(e) => ErrorDetails {
            code: e.http_status.or(record.http_status),
            kind: e.category.clone(),
            message: e.message.clone(),
        },
        None => ErrorDetails {
            code: record.http_status,
            kind: record.status.clone(),
            message: record.status.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::records::ItlSummary;

    fn ok_record() -> Record {
        Record {
            request: 7,
            tree: "t".into(),
            agent: "a".into(),
            play: 2,
            lane: Some(1),
            status: "ok".into(),
            dispatched_s: 1.0,
            sent_s: Some(1.5),
            headers_s: Some(1.6),
            done_s: Some(3.0),
            first_content_s: Some(1.75),
            ttft_s: Some(0.25),
            e2e_s: Some(1.5),
            tpot_s: Some(0.125),
            output_tokens: 11,
            input_tokens: 100,
            itl: ItlSummary::of(&[0.5, 0.25]),
            ..Record::default()
        }
    }

    #[test]
    fn stamps_are_wall_clock_and_metrics_in_aiperf_units() {
        let line = Request::of(&ok_record(), 1_000_000_000_000);
        let json = serde_json::to_value(&line).unwrap();
        let md = &json["metadata"];
        assert_eq!(md["request_start_ns"], 1_001_500_000_000u64);
        assert_eq!(md["request_end_ns"], 1_003_000_000_000u64);
        assert_eq!(md["benchmark_phase"], "profiling");
        assert_eq!(md["worker_id"], "lane-1");
        let m = &json["metrics"];
        assert_eq!(m["time_to_first_token"]["value"], 250.0);
        assert_eq!(m["time_to_first_token"]["unit"], "ms");
        assert_eq!(m["output_token_throughput_per_user"]["value"], 8.0);
        assert_eq!(m["time_to_second_token"]["value"], 500.0);
        assert_eq!(m["output_sequence_length"]["unit"], "tokens");
        assert!(json.get("error").is_none());
        assert_eq!(json["arbor"]["request"], 7);
    }

    #[test]
    fn a_failed_request_has_an_error_and_no_metrics() {
        let mut r = ok_record();
        r.status = "cancelled".into();
        let json = serde_json::to_value(Request::of(&r, 0)).unwrap();
        assert_eq!(json["metadata"]["was_cancelled"], true);
        assert_eq!(json["error"]["type"], "cancelled");
        assert_eq!(json["metrics"], serde_json::json!({}));
    }
}
