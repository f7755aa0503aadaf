//! Server metrics, in-process: a run scrapes the built-in emulator's
//! `/metrics` (vLLM's names) into `metrics.jsonl`, sums it up in
//! `summary.json`, and `summarize` rebuilds the same summary; a dead
//! metrics URL is counted as failed scrapes and the run completes. (The
//! console's line and the flags' checks stay in `cli/tests/it/metrics.rs`.)

use arbor::options::{MetricsOptions, RunOptions};
use arbor::runs::summarize::{rebuild, write_keeping_old, Kept};
use serde_json::Value;

use crate::util::*;

const MS: u64 = 1_000_000;

/// A run of the fixture whose requests each stay in flight for about
/// 300 ms, scraped every 50 ms, with `metrics` changed by `set`.
fn scraped_run(name: &str, set: impl FnOnce(&mut MetricsOptions)) -> std::path::PathBuf {
    let dir = scratch(name);
    let out = dir.join("out");
    let mut metrics = MetricsOptions {
        metrics_interval: 50 * MS,
        ..MetricsOptions::default()
    };
    set(&mut metrics);
    let options = RunOptions {
        input: inputs(&[fixture("trace_0187.json")]),
        policy: fast(),
        emulator: crate::util::emulator(300 * MS, MS),
        metrics,
        out: Some(out.clone()),
        ..RunOptions::default()
    };
    arbor::run::run(&options, &arbor::Quiet).unwrap_or_else(|e| panic!("{e:?}"));
    out
}

fn summary(dir: &std::path::Path) -> Value {
    read(&dir.join("summary.json"))
}

#[test]
fn a_run_against_the_emulator_scrapes_running_and_waiting_gauges_that_rise_in_flight() {
    let out = scraped_run("metrics-emulator", |_| {});
    let records = jsonl(&out.join("records.jsonl"));
    let first_dispatch = records
        .iter()
        .map(|r| secs_to_ns(&r["dispatched_s"]))
        .min()
        .expect("records");
    let lines = jsonl(&out.join("metrics.jsonl"));
    let values = |metric: &str| -> Vec<(u64, f64)> {
        lines
            .iter()
            .filter(|l| l["metric"] == metric)
            .map(|l| (l["time_ns"].as_u64().unwrap(), l["value"].as_f64().unwrap()))
            .collect()
    };
    let running = values("running");
    let waiting = values("waiting");
    assert!(running.len() >= 3, "{running:?}");
    assert_eq!(running.len(), waiting.len());
    // Before the first request went out, the server ran nothing: the
    // first scrape is taken before the clock starts, stamped 0.
    assert_eq!(running[0].0, 0, "{running:?}");
    for &(t, v) in running.iter().filter(|&&(t, _)| t < first_dispatch) {
        assert_eq!(v, 0.0, "running {v} at {t} ns, before the first dispatch");
    }
    // The last scrape comes after the last request ended: nothing runs.
    let last_done = records
        .iter()
        .map(|r| secs_to_ns(&r["done_s"]))
        .max()
        .unwrap();
    let &(t, v) = running.last().unwrap();
    assert!(t > last_done && v == 0.0, "last scrape {v} at {t} ns");
    let max_running = running.iter().map(|&(_, v)| v).fold(0.0, f64::max);
    assert!(max_running > 0.0, "{running:?}");
    // Lines carry the server's name and labels beside the common name.
    let line = lines.iter().find(|l| l["metric"] == "running").unwrap();
    assert_eq!(line["name"], "vllm:num_requests_running");
    assert!(line["labels"]["model_name"].is_string(), "{line}");
    // Only recognised metrics without --metrics-all; one outcome a scrape.
    assert!(lines
        .iter()
        .all(|l| l["metric"].is_string() || (l["name"] == "arbor:scrape" && l["value"] == 1.0)));

    let s = summary(&out);
    let m = &s["server_metrics"];
    let ok = m["scrapes"]["ok"].as_u64().unwrap();
    assert_eq!(ok as usize, running.len());
    assert_eq!(m["scrapes"]["failed"], 0);
    assert_eq!(m["gauges"]["running"]["max"].as_f64(), Some(max_running));
    assert_eq!(m["gauges"]["waiting"]["max"].as_f64(), Some(0.0));
    assert!(
        m["counters"]["prefix_queries"].as_f64().unwrap() > 0.0,
        "{m}"
    );
    assert!(m["prefix_hit_ratio"].is_number(), "{m}");
    assert!(s["config"]["metrics"]["url"]
        .as_str()
        .unwrap()
        .ends_with("/metrics"));

    // `arbor summarize` rebuilds the same summary from the files.
    let rebuilt = rebuild(&out).unwrap();
    let kept = write_keeping_old(&out, &rebuilt.summary.to_bytes().unwrap()).unwrap();
    assert!(
        matches!(kept, Kept::Unchanged),
        "the rebuilt summary differs"
    );
}

#[test]
fn a_dead_metrics_url_is_counted_as_failed_and_the_run_completes() {
    // Port 9 (discard) on loopback: nothing listens.
    let out = scraped_run("metrics-dead", |m| {
        m.metrics_url = Some("http://127.0.0.1:9/metrics".into())
    });
    let s = summary(&out);
    assert_eq!(s["counts"]["ok"], 3, "{s}");
    let m = &s["server_metrics"];
    assert_eq!(m["scrapes"]["ok"], 0, "{m}");
    assert!(m["scrapes"]["failed"].as_u64().unwrap() >= 1, "{m}");
    assert_eq!(m["gauges"], serde_json::json!({}));
    let lines = jsonl(&out.join("metrics.jsonl"));
    assert!(lines.iter().all(|l| l["name"] == "arbor:scrape"
        && l["value"] == 0.0
        && l["labels"]["error"].is_string()));
    // The error names no URL (a URL can carry credentials).
    let error = lines[0]["labels"]["error"].as_str().unwrap();
    assert!(!error.contains("127.0.0.1:9"), "{error}");
}

#[test]
fn no_metrics_scrapes_nothing_and_metrics_all_keeps_every_sample() {
    let out = scraped_run("metrics-off", |m| m.no_metrics = true);
    assert!(!out.join("metrics.jsonl").exists());
    let s = summary(&out);
    assert!(s.get("server_metrics").is_none(), "{s}");
    assert!(s["config"].get("metrics").is_none());

    // The emulator's output-token counter is no metric arbor recognises:
    // only --metrics-all keeps it (without a common name).
    let generation = |l: &&Value| l["name"] == "vllm:generation_tokens_total";
    let out = scraped_run("metrics-recognised", |_| {});
    assert!(!jsonl(&out.join("metrics.jsonl"))
        .iter()
        .any(|l| generation(&l)));
    let out = scraped_run("metrics-all", |m| m.metrics_all = true);
    let lines = jsonl(&out.join("metrics.jsonl"));
    let kept: Vec<&Value> = lines.iter().filter(generation).collect();
    assert!(!kept.is_empty());
    assert!(kept.iter().all(|l| l.get("metric").is_none()), "{kept:?}");
    assert_eq!(summary(&out)["config"]["metrics"]["all"], true);
}
