//! The one table of server metrics arbor recognises: each server's
//! Prometheus name mapped to a common name ([`Metric`]), with what kind of
//! value it is and how the series of one scrape add up.
//!
//! Owns the names only; reads no text and no file. A counter is listed
//! without the `_total` suffix Prometheus clients append, and is found
//! with or without it.

/// A recognised metric, by its common name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// Requests the server is running now (in its batch).
    Running,
    /// Requests queued by the server, not yet running.
    Waiting,
    /// KV-cache use, a fraction (0 to 1).
    KvUsage,
    /// Prefix-cache hit rate as the server computes it, a fraction
    /// (SGLang: a gauge, not counters).
    PrefixHitRate,
    /// Prompt tokens found in the prefix cache (a counter).
    PrefixHits,
    /// Prompt tokens looked up in the prefix cache (a counter).
    PrefixQueries,
    /// Prompt tokens processed without a cache hit (a counter; llama.cpp:
    /// queries are hits plus these).
    PrefixMisses,
    /// Requests preempted (a counter).
    Preemptions,
}

/// What kind of value a metric is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A level: summarized by mean and max over the scrapes.
    Gauge,
    /// A running total: summarized by its increase over the run.
    Counter,
}

/// How the series of one metric in one scrape (several engines, several
/// label sets) make one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// Counts of requests add up.
    Sum,
    /// Fractions are averaged.
    Mean,
}

impl Metric {
    /// Every metric, in the order reports show them.
    pub const ALL: [Metric; 8] = [
        Metric::Running,
        Metric::Waiting,
        Metric::KvUsage,
        Metric::PrefixHitRate,
        Metric::PrefixHits,
        Metric::PrefixQueries,
        Metric::PrefixMisses,
        Metric::Preemptions,
    ];

    /// The common name, as `metrics.jsonl` and `summary.json` write it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Running => "running",
            Metric::Waiting => "waiting",
            Metric::KvUsage => "kv_usage",
            Metric::PrefixHitRate => "prefix_hit_rate",
            Metric::PrefixHits => "prefix_hits",
            Metric::PrefixQueries => "prefix_queries",
            Metric::PrefixMisses => "prefix_misses",
            Metric::Preemptions => "preemptions",
        }
    }

    /// The metric of a common name.
    pub fn named(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    pub fn kind(self) -> Kind {
        match self {
            Metric::Running | Metric::Waiting | Metric::KvUsage | Metric::PrefixHitRate => {
                Kind::Gauge
            }
            Metric::PrefixHits
            | Metric::PrefixQueries
            | Metric::PrefixMisses
            | Metric::Preemptions => Kind::Counter,
        }
    }

    pub fn combine(self) -> Combine {
        match self {
            Metric::KvUsage | Metric::PrefixHitRate => Combine::Mean,
            _ => Combine::Sum,
        }
    }
}

/// Server names (counters without `_total`) and their common names.
pub const KNOWN: &[(&str, Metric)] = &[
    // vLLM (V1 names, and the V0 names still served by older releases).
    ("vllm:num_requests_running", Metric::Running),
    ("vllm:num_requests_waiting", Metric::Waiting),
    ("vllm:kv_cache_usage_perc", Metric::KvUsage),
    ("vllm:gpu_cache_usage_perc", Metric::KvUsage),
    ("vllm:prefix_cache_hits", Metric::PrefixHits),
    ("vllm:prefix_cache_queries", Metric::PrefixQueries),
    ("vllm:gpu_prefix_cache_hits", Metric::PrefixHits),
    ("vllm:gpu_prefix_cache_queries", Metric::PrefixQueries),
    ("vllm:num_preemptions", Metric::Preemptions),
    // SGLang.
    ("sglang:num_running_reqs", Metric::Running),
    ("sglang:num_queue_reqs", Metric::Waiting),
    ("sglang:token_usage", Metric::KvUsage),
    ("sglang:cache_hit_rate", Metric::PrefixHitRate),
    // llama.cpp's llama-server (`--metrics`); older builds had the KV gauge.
    ("llamacpp:requests_processing", Metric::Running),
    ("llamacpp:requests_deferred", Metric::Waiting),
    ("llamacpp:kv_cache_usage_ratio", Metric::KvUsage),
    ("llamacpp:prompt_tokens_cached", Metric::PrefixHits),
    ("llamacpp:prompt_tokens", Metric::PrefixMisses),
];

/// The common name of a server's metric, if arbor recognises it. A
/// counter is found with or without its `_total` suffix; a gauge only by
/// its own name.
pub fn recognise(server_name: &str) -> Option<Metric> {
    let find = |name: &str| {
        KNOWN
            .iter()
            .find(|(known, _)| *known == name)
            .map(|&(_, metric)| metric)
    };
    match find(server_name) {
        Some(m) => Some(m),
        None => server_name
            .strip_suffix("_total")
            .and_then(find)
            .filter(|m| m.kind() == Kind::Counter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_found_with_their_total_suffix_and_gauges_are_not() {
        assert_eq!(
            recognise("vllm:num_preemptions_total"),
            Some(Metric::Preemptions)
        );
        assert_eq!(recognise("vllm:num_preemptions"), Some(Metric::Preemptions));
        assert_eq!(
            recognise("llamacpp:prompt_tokens_total"),
            Some(Metric::PrefixMisses)
        );
        assert_eq!(
            recognise("llamacpp:prompt_tokens_cached_total"),
            Some(Metric::PrefixHits)
        );
        assert_eq!(recognise("vllm:num_requests_running_total"), None);
        assert_eq!(recognise("llamacpp:prompt_tokens_seconds"), None);
        assert_eq!(recognise("vllm:num_preemptions_created"), None);
    }

    #[test]
    fn common_names_read_back() {
        for m in Metric::ALL {
            assert_eq!(Metric::named(m.name()), Some(m));
        }
        assert_eq!(Metric::named("nope"), None);
    }
}
