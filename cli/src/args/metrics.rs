//! `arbor run`'s server-metrics flags.

use arbor::engine::time::Nanos;
use clap::Args;

use super::heading::SERVER;
use super::values;

/// Scraping the server's Prometheus `/metrics` during a run.
#[derive(Debug, Args, Clone)]
pub struct MetricsArgs {
    /// Scrape Prometheus text from URL during the run into metrics.jsonl
    /// (a URL that fails is still scraped; its failures are counted).
    /// Default: the endpoint's /metrics, when it answers at the start.
    #[arg(long, value_name = "URL", conflicts_with = "no_metrics", value_parser = values::http_url, help_heading = SERVER)]
    pub metrics_url: Option<String>,

    /// Scrape no server metrics.
    #[arg(long, help_heading = SERVER)]
    pub no_metrics: bool,

    /// Time between scrapes (e.g. 1, 500ms, 5s).
    #[arg(long, value_name = "DURATION", default_value = "1", value_parser = values::positive_duration, help_heading = SERVER)]
    pub metrics_interval: Nanos,

    /// Write every sample of each scrape to metrics.jsonl, not only the
    /// metrics arbor recognises (vLLM, SGLang, llama.cpp).
    #[arg(long, help_heading = SERVER)]
    pub metrics_all: bool,
}
