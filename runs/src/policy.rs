//! [`PolicySummary`]: the replay policy as the outputs record it
//! (`summary.json`'s and `run.json`'s `config.policy`, `plan --json`'s
//! `policy`): each setting in its textual form, durations in seconds.

use arbor_engine::policy::Policy;
use arbor_engine::time::{nanos_to_secs, Nanos};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PolicySummary {
    pub tool_time: String,
    pub think_time: String,
    /// Absent from summaries written before the flag existed: as recorded.
    #[serde(default = "recorded")]
    pub other_time: String,
    #[serde(default = "recorded")]
    pub spawn_time: String,
    #[serde(default = "recorded")]
    pub join_time: String,
    #[serde(default = "identity_scale")]
    pub gap_scale: f64,
    pub arrival: String,
    pub copies: u32,
    pub stagger: String,
    pub max_inflight: Option<u32>,
    pub sessions: Option<u32>,
    #[serde(rename = "loop")]
    pub loop_lanes: bool,
    pub idle_gap_cap_s: Option<f64>,
    pub duration_s: Option<f64>,
    pub grace_s: f64,
    pub overlap_tolerance_s: f64,
    /// `--warmup-requests-per-lane K` (the accelerated cache warmup by
    /// count); absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_requests_per_lane: u32,
    /// `--cache-warmup-duration` (the accelerated cache warmup by time);
    /// absent when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_warmup_duration_s: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PolicySummary {
    /// The policy as `plan --json` and `summary.json` show it.
    pub fn new(policy: &Policy, overlap_tolerance: Nanos) -> Self {
        PolicySummary {
            tool_time: policy.tool_time.to_string(),
            think_time: policy.think_time.to_string(),
            other_time: policy.other_time.to_string(),
            spawn_time: policy.spawn_time.to_string(),
            join_time: policy.join_time.to_string(),
            gap_scale: policy.gap_scale.ppm as f64 / 1e6,
            arrival: policy.arrival.to_string(),
            copies: policy.copies,
            stagger: policy.stagger.to_string(),
            max_inflight: policy.max_inflight,
            sessions: policy.sessions,
            loop_lanes: policy.loop_lanes,
            idle_gap_cap_s: policy.idle_gap_cap.map(nanos_to_secs),
            duration_s: policy.duration.map(nanos_to_secs),
            grace_s: nanos_to_secs(policy.grace),
            overlap_tolerance_s: nanos_to_secs(overlap_tolerance),
            warmup_requests_per_lane: policy.warmup_requests_per_lane,
            cache_warmup_duration_s: policy.cache_warmup_duration.map(nanos_to_secs),
        }
    }
}

fn recorded() -> String {
    "recorded".into()
}

fn identity_scale() -> f64 {
    1.0
}
