//! Server metrics as a run directory keeps them: the server's own view of
//! a live run (requests running and waiting, KV-cache use, prefix-cache
//! hits, preemptions), scraped from its Prometheus `/metrics` into
//! `metrics.jsonl` beside the client's measurements.
//!
//! Modules: [`names`] (the one table of recognised names and their common
//! names), [`line`] (`metrics.jsonl`'s lines and their reader) and
//! [`tally`] (what the file adds up to: `summary.json`'s
//! `server_metrics`, and the per-scrape gauges a page draws). Scraping
//! itself (HTTP, the Prometheus text) is the live side's.

pub mod line;
pub mod names;
pub mod tally;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use line::METRICS_FILE;
pub use tally::ServerMetrics;

/// What `run.json` (and the summary's `config`) says of the scraping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsConfig {
    /// The URL scraped, redacted.
    pub url: String,
    pub interval_s: f64,
    /// Every sample written (`--metrics-all`), not only the recognised.
    pub all: bool,
    /// With several endpoints: every URL scraped, redacted, by replica
    /// (`url` is the first); absent with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
}
