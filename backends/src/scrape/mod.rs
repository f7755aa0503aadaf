//! Server metrics: the server's own view of a live run (requests running
//! and waiting, KV-cache use, prefix-cache hits, preemptions), scraped
//! from its Prometheus `/metrics` beside the client's measurements.
//!
//! Modules: [`exposition`] (Prometheus text to samples, with the
//! `prometheus-parse` crate) and [`scraper`] (the scraping thread, which
//! writes the file). The file's side (the one table of recognised names,
//! `metrics.jsonl`'s lines and what they add up to) is
//! `arbor_runs::server_metrics`'. This module decides what to scrape
//! ([`choose`]) and prints nothing: the notice of a default URL that did
//! not answer is returned.

pub mod exposition;
pub mod scraper;

use std::time::Duration;

use arbor_engine::time::Nanos;
use arbor_runs::server_metrics::MetricsConfig;
use reqwest::header::HeaderMap;
use reqwest::Url;

use crate::endpoint::redact_url;

pub use scraper::{Scraper, Settings};

/// How long the default URL has to answer before the run starts.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

impl Settings {
    pub fn config(&self) -> MetricsConfig {
        MetricsConfig {
            url: redact_url(&self.url),
            interval_s: self.interval.as_secs_f64(),
            all: self.all,
            urls: Vec::new(),
        }
    }
}

/// What `config.metrics` says of scraping `all`: the first's settings,
/// and with several replicas every URL, by replica.
pub fn config_of(all: &[Settings]) -> Option<MetricsConfig> {
    let mut config = all.first()?.config();
    if all.iter().any(|s| s.replica.is_some()) {
        config.urls = all.iter().map(|s| redact_url(&s.url)).collect();
    }
    Some(config)
}

/// What to scrape during a run against several `endpoints` (replicas):
/// `--metrics-url` alone when given (a router's, say: no replica);
/// otherwise each endpoint's `/metrics` that answers now, its lines
/// naming its replica. With one endpoint, [`choose`]'s.
pub async fn choose_replicas(
    wanted: &Wanted,
    endpoints: &[&str],
    headers: &HeaderMap,
    client: &reqwest::Client,
) -> (Vec<Settings>, Vec<String>) {
    let mut settings = Vec::new();
    let mut notices = Vec::new();
    let several = endpoints.len() > 1 && wanted.url.is_none();
    for (i, endpoint) in endpoints.iter().enumerate() {
        if i > 0 && !several {
            break;
        }
        let chosen = choose(wanted, endpoint, headers, client).await;
        notices.extend(chosen.notice);
        if let Some(mut s) = chosen.settings {
            s.replica = several.then_some(i as u32);
            settings.push(s);
        }
    }
    (settings, notices)
}

/// What to scrape during a run against `endpoint`, if anything: nothing
/// with `--no-metrics`; `--metrics-url` whatever it answers (a failing URL
/// is scraped and its failures counted); otherwise the endpoint's
/// `/metrics` when it answers now with Prometheus text (a notice on
/// stderr says when it does not). `headers` (the endpoint's, the API key
/// among them) go only to a URL of the endpoint's own origin.
pub async fn choose(
    wanted: &Wanted,
    endpoint: &str,
    headers: &HeaderMap,
    client: &reqwest::Client,
) -> Chosen {
    let chosen = |settings, notice| Chosen { settings, notice };
    if wanted.none {
        return chosen(None, None);
    }
    let url = wanted
        .url
        .clone()
        .unwrap_or_else(|| crate::endpoint::at(endpoint, "/metrics"));
    let settings = Settings {
        headers: if same_origin(&url, endpoint) {
            headers.clone()
        } else {
            HeaderMap::new()
        },
        url,
        interval: Duration::from_nanos(wanted.interval),
        all: wanted.all,
        replica: None,
    };
    if wanted.url.is_some() {
        return chosen(Some(settings), None);
    }
    match probe(client, &settings).await {
        Ok(()) => chosen(Some(settings), None),
        Err(why) => {
            let notice = format!(
                "arbor run: server metrics not scraped: GET {}: {why} (--metrics-url URL names \
                 another; --no-metrics silences this)",
                redact_url(&settings.url)
            );
            chosen(None, Some(notice))
        }
    }
}

/// What the user asked to scrape (`--no-metrics`, `--metrics-url`,
/// `--metrics-interval`, `--metrics-all`).
#[derive(Debug, Clone)]
pub struct Wanted {
    /// Scrape nothing.
    pub none: bool,
    /// The URL to scrape whatever it answers; `None`: the endpoint's
    /// `/metrics` when it answers at the start.
    pub url: Option<String>,
    /// Nanoseconds between scrapes.
    pub interval: Nanos,
    /// Every sample, not only the recognised ones.
    pub all: bool,
}

/// What [`choose`] decided: the scraping, if any, and the notice to show
/// when the default URL did not answer.
#[derive(Debug)]
pub struct Chosen {
    pub settings: Option<Settings>,
    pub notice: Option<String>,
}

/// Whether `url` answers with Prometheus text now.
async fn probe(client: &reqwest::Client, settings: &Settings) -> Result<(), String> {
    let text = scraper::fetch(client, settings, PROBE_TIMEOUT).await?;
    if exposition::parse(&text).is_empty() {
        return Err("no Prometheus sample in the answer".to_string());
    }
    Ok(())
}

fn same_origin(a: &str, b: &str) -> bool {
    match (Url::parse(a), Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_runs::server_metrics::names::{recognise, Metric};
    use arbor_runs::server_metrics::tally::Tally;
    use arbor_runs::server_metrics::ServerMetrics;

    fn sample(name: &str) -> String {
        let path = format!("{}/../testdata/metrics/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    /// The recognised samples of one server's exposition: (server name,
    /// common name, value), in the parser's order.
    fn recognised(file: &str) -> Vec<(String, Metric, f64)> {
        exposition::parse(&sample(file))
            .into_iter()
            .filter_map(|s| recognise(&s.name).map(|m| (s.name, m, s.value)))
            .collect()
    }

    fn owned(expected: &[(&str, Metric, f64)]) -> Vec<(String, Metric, f64)> {
        expected
            .iter()
            .map(|&(n, m, v)| (n.to_string(), m, v))
            .collect()
    }

    #[test]
    fn vllm_sglang_and_llama_cpp_expositions_map_to_common_names() {
        assert_eq!(
            recognised("vllm.prom"),
            owned(&[
                ("vllm:kv_cache_usage_perc", Metric::KvUsage, 0.25),
                ("vllm:num_preemptions_total", Metric::Preemptions, 0.0),
                ("vllm:num_requests_running", Metric::Running, 3.0),
                ("vllm:num_requests_waiting", Metric::Waiting, 2.0),
                ("vllm:prefix_cache_hits_total", Metric::PrefixHits, 600.0),
                (
                    "vllm:prefix_cache_queries_total",
                    Metric::PrefixQueries,
                    1000.0
                ),
            ])
        );
        assert_eq!(
            recognised("sglang.prom"),
            owned(&[
                ("sglang:cache_hit_rate", Metric::PrefixHitRate, 0.43),
                ("sglang:num_queue_reqs", Metric::Waiting, 1.0),
                ("sglang:num_running_reqs", Metric::Running, 4.0),
                ("sglang:token_usage", Metric::KvUsage, 0.12),
            ])
        );
        // The real exposition of llama.cpp's C++ llama-server (no KV gauge
        // in this build; its prefix-cache figures are counters).
        assert_eq!(
            recognised("llamacpp.prom"),
            owned(&[
                (
                    "llamacpp:prompt_tokens_cached_total",
                    Metric::PrefixHits,
                    24.0
                ),
                ("llamacpp:prompt_tokens_total", Metric::PrefixMisses, 26.0),
                ("llamacpp:requests_deferred", Metric::Waiting, 0.0),
                ("llamacpp:requests_processing", Metric::Running, 0.0),
            ])
        );
        // An older build's KV gauge is recognised too.
        assert_eq!(
            recognise("llamacpp:kv_cache_usage_ratio"),
            Some(Metric::KvUsage)
        );
    }

    /// Two scrapes of a server's text, tallied as `metrics.jsonl` would
    /// hold them.
    fn tally(scrapes: &[(u64, Result<String, String>)]) -> ServerMetrics {
        let mut t = Tally::default();
        for (time, answer) in scrapes {
            for line in scraper::lines(*time, answer.clone(), false) {
                t.add(line);
            }
        }
        t.finish()
    }

    #[test]
    fn gauges_counters_and_the_prefix_ratio_add_up() {
        let first = sample("vllm.prom");
        let later = first
            .replace(
                "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0",
                "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1.0",
            )
            .replace(
                "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1000.0",
                "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"m\"} 1400.0",
            )
            .replace(
                "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 600.0",
                "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\"} 900.0",
            );
        assert_ne!(first, later);
        let m = tally(&[
            (1, Ok(first)),
            (2, Err("connect: refused".into())),
            (3, Ok(later)),
        ]);
        assert_eq!(m.scrapes.ok, 2);
        assert_eq!(m.scrapes.failed, 1);
        let running = m.gauges["running"];
        assert_eq!((running.mean, running.max, running.scrapes), (2.0, 3.0, 2));
        assert_eq!(m.counters["prefix_queries"], 400.0);
        assert_eq!(m.counters["prefix_hits"], 300.0);
        assert_eq!(m.prefix_hit_ratio, Some(0.75));

        // llama.cpp: queries are cached plus processed tokens.
        let first = sample("llamacpp.prom");
        let later = first
            .replace(
                "llamacpp:prompt_tokens_total 26",
                "llamacpp:prompt_tokens_total 36",
            )
            .replace(
                "llamacpp:prompt_tokens_cached_total 24",
                "llamacpp:prompt_tokens_cached_total 54",
            );
        let m = tally(&[(1, Ok(first)), (2, Ok(later))]);
        assert_eq!(m.prefix_hit_ratio, Some(0.75));
        assert_eq!(m.gauges["running"].max, 0.0);
        assert!(!m.gauges.contains_key("kv_usage"));

        // A counter that goes down is a restart: its new value is increase.
        let m = tally(&[
            (1, Ok("vllm:num_preemptions_total 5\n".into())),
            (2, Ok("vllm:num_preemptions_total 7\n".into())),
            (3, Ok("vllm:num_preemptions_total 1\n".into())),
        ]);
        assert_eq!(m.counters["preemptions"], 3.0);
        assert_eq!(m.prefix_hit_ratio, None);
        // An answer that is not Prometheus text is a failed scrape.
        let m = tally(&[(1, Ok("<html>no</html>".into()))]);
        assert_eq!((m.scrapes.ok, m.scrapes.failed), (0, 1));
    }

    #[test]
    fn several_replicas_keep_their_own_counters_and_sections() {
        let scrape = |replica: u32, time: u64, hits: u32, queries: u32, running: u32| {
            let text = format!(
                "vllm:prefix_cache_hits_total {hits}\nvllm:prefix_cache_queries_total \
                 {queries}\nvllm:num_requests_running {running}\n"
            );
            scraper::lines(time, Ok(text), false)
                .into_iter()
                .map(move |mut l| {
                    l.replica = Some(replica);
                    l
                })
        };
        let mut t = Tally::default();
        // Interleaved as the scraper writes them: replica 0, then 1.
        for line in scrape(0, 0, 100, 200, 1)
            .chain(scrape(1, 0, 0, 0, 3))
            .chain(scrape(0, 5, 190, 300, 1))
            .chain(scrape(1, 5, 10, 100, 5))
        {
            t.add(line);
        }
        let m = t.finish();
        // Each replica's counter series on its own: 90 + 10 hits of 200.
        assert_eq!(m.counters["prefix_hits"], 100.0);
        assert_eq!(m.prefix_hit_ratio, Some(0.5));
        assert_eq!(m.scrapes.ok, 4);
        let zero = &m.replicas["0"];
        let one = &m.replicas["1"];
        assert_eq!(zero.prefix_hit_ratio, Some(0.9));
        assert_eq!(one.prefix_hit_ratio, Some(0.1));
        assert_eq!(one.gauges["running"].max, 5.0);
        assert_eq!(zero.scrapes.ok + one.scrapes.ok, m.scrapes.ok);
        assert!(zero.replicas.is_empty());
        // One endpoint: today's shape, no `replicas`.
        let one_server = tally(&[(1, Ok(sample("vllm.prom")))]);
        assert!(one_server.replicas.is_empty());
        let json = serde_json::to_value(&one_server).unwrap();
        assert!(json.get("replicas").is_none(), "{json}");
    }

    #[test]
    fn headers_go_only_to_the_endpoints_origin() {
        assert!(same_origin("http://h:8000/metrics", "http://h:8000"));
        assert!(!same_origin("http://h:9000/metrics", "http://h:8000"));
        assert!(!same_origin("https://h:8000/metrics", "http://h:8000"));
        assert!(!same_origin("not a url", "http://h:8000"));
    }
}
