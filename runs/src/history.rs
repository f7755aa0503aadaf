//! Live history's account (`--history live`, docs/run.md "Live
//! history"): how many turns were built from the text the server generated
//! in the run, and how many kept the recorded answer. Kept in `end.json`
//! (the driver's counts) and shown in `summary.json` as `history`; absent
//! under recorded history, so those files are unchanged.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The run config's `history` under recorded history (the default).
pub const RECORDED: &str = "recorded";
/// The run config's `history` under live history.
pub const LIVE: &str = "live";

/// A driver's counts of live-history turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
pub struct HistoryCounts {
    /// Turns whose previous answer was the text generated in this run.
    pub live_turns: u64,
    /// Later turns of an agent that kept the recorded answer: the previous
    /// turn failed, was cancelled, generated nothing or was not sent in
    /// this run, or the turn does not extend it.
    pub recorded_fallbacks: u64,
}

impl HistoryCounts {
    /// Two threads' (or shards') counts as one run's; `None` when
    /// neither has any (recorded history).
    pub fn joined(a: Option<HistoryCounts>, b: Option<HistoryCounts>) -> Option<HistoryCounts> {
        match (a, b) {
            (Some(a), Some(b)) => Some(HistoryCounts {
                live_turns: a.live_turns + b.live_turns,
                recorded_fallbacks: a.recorded_fallbacks + b.recorded_fallbacks,
            }),
            (a, b) => a.or(b),
        }
    }
}

/// `summary.json`'s `history`: the mode and its counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HistorySummary {
    /// `live`.
    pub mode: String,
    pub live_turns: u64,
    pub recorded_fallbacks: u64,
}

impl HistorySummary {
    /// The summary of a run under `mode` with `counts` (none: a run that
    /// ended without them, counted as zero); `None` under recorded history.
    pub fn of(mode: &str, counts: Option<HistoryCounts>) -> Option<HistorySummary> {
        if mode == RECORDED {
            return None;
        }
        let counts = counts.unwrap_or_default();
        Some(HistorySummary {
            mode: mode.to_string(),
            live_turns: counts.live_turns,
            recorded_fallbacks: counts.recorded_fallbacks,
        })
    }
}

/// `serde`'s `skip_serializing_if` for the config's `history`.
pub fn is_recorded(mode: &str) -> bool {
    mode == RECORDED
}

/// `serde`'s default for the config's `history`.
pub fn recorded() -> String {
    RECORDED.to_string()
}
