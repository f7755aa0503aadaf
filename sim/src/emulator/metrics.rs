//! The emulator's `GET /metrics`: Prometheus text under vLLM's names, so
//! a client's server-metrics path is tested end to end.
//!
//! Owns the exposition only; reads the shared counters and the cache,
//! changes nothing. What it says:
//!
//! - `vllm:num_requests_running`: completion requests in flight;
//! - `vllm:num_requests_waiting`: always 0 (the emulator queues nothing:
//!   every request is served as it arrives);
//! - `vllm:kv_cache_usage_perc`: the prefix cache's blocks over its
//!   capacity (`--cache-blocks N`); 0 when unbounded or off;
//! - `vllm:prefix_cache_queries_total`, `vllm:prefix_cache_hits_total`:
//!   prompt tokens looked up in the prefix cache, and those found;
//! - `vllm:num_preemptions_total`: always 0;
//! - `vllm:generation_tokens_total`: output tokens of completed requests
//!   (a name arbor does not summarize: what `--metrics-all` keeps).
//!
//! Under a profile (`--profile`) the batching model's gauges replace the
//! first three and the preemptions: requests waiting and running in the
//! model, its KV blocks in use over its pool, its preemptions so far.
//!
//! A fleet's router port ([`fleet_exposition`]) says the replicas'
//! figures summed, the cache usage averaged; each replica's own port
//! says its own.

use std::fmt::Write;

use super::shared::Shared;

/// The content type Prometheus text is served with.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The figures `/metrics` reports.
#[derive(Debug, Clone, Copy, Default)]
struct Figures {
    running: u64,
    waiting: u64,
    usage: f64,
    queries: u64,
    hits: u64,
    preemptions: u64,
    tokens: u64,
}

/// The exposition of `shared` now.
pub(crate) fn exposition(shared: &Shared) -> String {
    render(&shared.model_json, &figures(shared))
}

/// The exposition of a fleet's replicas now: summed (usage averaged).
pub(crate) fn fleet_exposition(replicas: &[std::sync::Arc<Shared>]) -> String {
    let mut sum = Figures::default();
    for shared in replicas {
        let f = figures(shared);
        sum.running += f.running;
        sum.waiting += f.waiting;
        sum.usage += f.usage / replicas.len() as f64;
        sum.queries += f.queries;
        sum.hits += f.hits;
        sum.preemptions += f.preemptions;
        sum.tokens += f.tokens;
    }
    let model = replicas.first().map_or("\"\"", |s| s.model_json.as_str());
    render(model, &sum)
}

fn figures(shared: &Shared) -> Figures {
    let snapshot = shared.stats.snapshot();
    let (queries, hits) = shared.prefix_counts();
    let gauges = shared.engine.as_ref().map(|e| e.gauges());
    let (running, waiting, usage, preemptions) = match gauges {
        Some(g) => (
            u64::from(g.running),
            u64::from(g.waiting),
            f64::from(g.kv_blocks_used) / f64::from(g.kv_blocks_total.max(1)),
            g.preemptions,
        ),
        None => (snapshot.active, 0, shared.cache_usage(), 0),
    };
    Figures {
        running,
        waiting,
        usage,
        queries,
        hits,
        preemptions,
        tokens: snapshot.tokens,
    }
}

fn render(model: &str, f: &Figures) -> String {
    let mut text = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: String| {
        // Writing to a String cannot fail.
        let _ = write!(
            text,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{model_name={model}}} {value}\n"
        );
    };
    metric(
        "vllm:num_requests_running",
        "gauge",
        "Number of requests in model execution batches.",
        f.running.to_string(),
    );
    metric(
        "vllm:num_requests_waiting",
        "gauge",
        "Number of requests waiting to be processed.",
        f.waiting.to_string(),
    );
    metric(
        "vllm:kv_cache_usage_perc",
        "gauge",
        "KV-cache usage. 1 means 100 percent usage.",
        f.usage.to_string(),
    );
    metric(
        "vllm:prefix_cache_queries_total",
        "counter",
        "Prefix cache queries, in terms of number of queried tokens.",
        f.queries.to_string(),
    );
    metric(
        "vllm:prefix_cache_hits_total",
        "counter",
        "Prefix cache hits, in terms of number of cached tokens.",
        f.hits.to_string(),
    );
    metric(
        "vllm:num_preemptions_total",
        "counter",
        "Cumulative number of preemption from the engine.",
        f.preemptions.to_string(),
    );
    metric(
        "vllm:generation_tokens_total",
        "counter",
        "Number of generation tokens processed.",
        f.tokens.to_string(),
    );
    text
}
