//! Runs on several threads, in-process, against the built-in emulator:
//! two threads send the same requests as one (every request id once, the
//! same turns), the counts agree, and the summary is what its own records
//! add up to; a policy no thread can keep alone is refused. (A signal
//! stopping every thread stays in `cli/tests/it/threads.rs`.)

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use arbor::engine::policy::{GapTransform, Policy};
use arbor::options::{PolicyOptions, RunOptions, ScenarioOptions};
use arbor::runs::summarize::{rebuild, write_keeping_old};
use arbor::Kind;
use serde_json::Value;

use crate::util::*;

/// The nearest-rank quantile `q` (a fraction) of sorted values: the
/// ⌈q·n⌉-th, as the summary takes its percentiles.
fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> T {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn json(path: &Path) -> Value {
    read(path)
}

/// A fast emulator (1 ms TTFT, 0.05 ms ITL), no gaps: a few hundred
/// requests in about a second, with `extra`'s policy on top.
fn quick(threads: u32, extra: PolicyOptions, out: &Path) -> RunOptions {
    RunOptions {
        input: inputs(&[fixture("trace_0277.json")]),
        policy: PolicyOptions {
            tool_time: Some(GapTransform::Zero),
            think_time_pct: Some(Policy::think_pct("0").unwrap()),
            ..extra
        },
        threads: Some(threads),
        force: true,
        emulator: crate::util::emulator(1_000_000, 50_000),
        out: Some(out.to_path_buf()),
        ..RunOptions::default()
    }
}

fn run_with(out: &Path, threads: u32, extra: PolicyOptions) -> (Value, Vec<Value>) {
    arbor::run::run(&quick(threads, extra, out), &arbor::Quiet).unwrap_or_else(|e| panic!("{e:?}"));
    (
        json(&out.join("summary.json")),
        jsonl(&out.join("records.jsonl")),
    )
}

/// Who each request is in the workload, and its status.
fn turns(records: &[Value]) -> Vec<String> {
    let mut all: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} {} {}",
                r["tree_index"], r["copy"], r["lane"], r["agent"], r["turn"], r["status"]
            )
        })
        .collect();
    all.sort();
    all
}

fn ids(records: &[Value]) -> BTreeSet<u64> {
    let ids: Vec<u64> = records
        .iter()
        .map(|r| r["request"].as_u64().unwrap())
        .collect();
    let set: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(set.len(), ids.len(), "a request id recorded twice");
    set
}

/// The summary's TTFT and E2E are those of its own ok records.
fn summary_is_its_records(summary: &Value, records: &[Value]) {
    let ok: Vec<&Value> = records.iter().filter(|r| r["status"] == "ok").collect();
    assert_eq!(summary["counts"]["ok"].as_u64().unwrap(), ok.len() as u64);
    assert_eq!(
        summary["counts"]["dispatched"].as_u64().unwrap(),
        records.len() as u64
    );
    for metric in ["ttft", "e2e"] {
        let mut values: Vec<u64> = ok
            .iter()
            .map(|r| secs_to_ns(&r[format!("{metric}_s")]))
            .collect();
        values.sort_unstable();
        let latency = &summary["latency"][metric];
        assert_eq!(latency["count"].as_u64().unwrap(), values.len() as u64);
        for (p, key) in [(0.50, "p50_s"), (0.90, "p90_s"), (0.99, "p99_s")] {
            assert_eq!(
                secs_to_ns(&latency[key]),
                nearest_rank(&values, p),
                "{metric} {key}"
            );
        }
    }
}

fn same_requests(extra: PolicyOptions, name: &str) {
    let dir = scratch(name);
    let (one, one_records) = run_with(&dir.join("one"), 1, extra.clone());
    let (two, two_records) = run_with(&dir.join("two"), 2, extra);
    assert_eq!(one["config"]["threads"], 1);
    assert_eq!(two["config"]["threads"], 2);
    assert_eq!(json(&dir.join("two/run.json"))["config"]["threads"], 2);
    assert!(!one_records.is_empty());
    assert_eq!(ids(&one_records), ids(&two_records));
    assert_eq!(turns(&one_records), turns(&two_records));
    for key in [
        "dispatched",
        "ok",
        "failed",
        "cancelled",
        "skipped",
        "warmups",
    ] {
        assert_eq!(one["counts"][key], two["counts"][key], "counts.{key}");
    }
    assert_eq!(two["counts"]["failed"], 0);
    summary_is_its_records(&one, &one_records);
    summary_is_its_records(&two, &two_records);
    // Both threads wrote: the records' ids interleave.
    let plays: BTreeSet<u64> = two_records
        .iter()
        .map(|r| r["play"].as_u64().unwrap())
        .collect();
    assert_eq!(
        plays,
        one_records
            .iter()
            .map(|r| r["play"].as_u64().unwrap())
            .collect()
    );
    // `arbor summarize` rebuilds the two threads' summary byte for byte.
    let own = fs::read(dir.join("two/summary.json")).unwrap();
    fs::remove_file(dir.join("two/summary.json")).unwrap();
    let rebuilt = rebuild(&dir.join("two")).unwrap();
    write_keeping_old(&dir.join("two"), &rebuilt.summary.to_bytes().unwrap()).unwrap();
    assert!(
        fs::read(dir.join("two/summary.json")).unwrap() == own,
        "the rebuilt summary differs"
    );
}

#[test]
fn two_threads_send_the_requests_of_one_open_loop() {
    let extra = PolicyOptions {
        copies: Some(4),
        arrival: Some("rate:40".parse().unwrap()),
        ..PolicyOptions::default()
    };
    same_requests(extra, "threads-open");
}

#[test]
fn two_threads_send_the_requests_of_one_closed_loop() {
    let extra = PolicyOptions {
        copies: Some(3),
        sessions: Some(3),
        ..PolicyOptions::default()
    };
    same_requests(extra, "threads-lanes");
}

#[test]
fn policies_no_thread_keeps_alone_are_refused() {
    let out = scratch("threads-refused").join("out");
    let mut capped = quick(2, PolicyOptions::default(), &out);
    capped.policy = PolicyOptions {
        idle_gap_cap: Some(100_000_000),
        ..PolicyOptions::default()
    };
    let e = arbor::run::run(&capped, &arbor::Quiet).unwrap_err();
    assert_eq!(e.kind, Kind::Input, "{e:?}");
    for needle in ["--idle-gap-cap with --threads 2", "--threads 1"] {
        assert!(e.message.contains(needle), "`{needle}` in {}", e.message);
    }
    let mut windowed = quick(3, PolicyOptions::default(), &out);
    windowed.policy = PolicyOptions {
        sessions: Some(2),
        ..PolicyOptions::default()
    };
    windowed.scenario = ScenarioOptions {
        start_window: Some("0:0.5".parse().unwrap()),
        ..ScenarioOptions::default()
    };
    let e = arbor::run::run(&windowed, &arbor::Quiet).unwrap_err();
    assert_eq!(e.kind, Kind::Input, "{e:?}");
    assert!(
        e.message.contains("--start-window with --threads 3"),
        "{}",
        e.message
    );
}

#[test]
fn threads_compose_with_a_shard_and_split_max_inflight() {
    let dir = scratch("threads-shard");
    let extra = PolicyOptions {
        copies: Some(4),
        shard: Some("1/2".parse().unwrap()),
        max_inflight: Some(3),
        ..PolicyOptions::default()
    };
    let (one, one_records) = run_with(&dir.join("one"), 1, extra.clone());
    let (two, two_records) = run_with(&dir.join("two"), 2, extra);
    assert_eq!(turns(&one_records), turns(&two_records));
    assert_eq!(ids(&one_records), ids(&two_records));
    assert_eq!(one["counts"]["ok"], two["counts"]["ok"]);
    // Only shard 1's copies (plays 1 and 3 of each tree: copies 0..4).
    let copies: BTreeSet<u64> = two_records
        .iter()
        .map(|r| r["copy"].as_u64().unwrap())
        .collect();
    assert_eq!(
        copies,
        one_records
            .iter()
            .map(|r| r["copy"].as_u64().unwrap())
            .collect()
    );
    assert!(two["concurrency"]["observed_peak"].as_u64().unwrap() <= 3);
}
