//! `arbor run --threads N` against the built-in emulator: two threads
//! send the same requests as one (every request id once, the same turns),
//! the counts agree, and the summary is what its own records add up to;
//! a policy no thread can keep alone is refused.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// A fast emulator, no gaps: a few hundred requests in about a second.
const QUICK: [&str; 8] = [
    "--tool-time",
    "zero",
    "--think-time-pct",
    "0",
    "--ttft-ms",
    "1",
    "--itl-ms",
    "0.05",
];

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("the run wrote it")).expect("JSON")
}

fn run_with(out: &Path, threads: &str, extra: &[&str]) -> (Value, Vec<Value>) {
    let fixture = fixture("trace_0277.json");
    let mut args = vec![fixture.to_str().unwrap(), "--threads", threads, "--force"];
    args.extend_from_slice(&QUICK);
    args.extend_from_slice(extra);
    run_into(out, &args);
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

fn same_requests(extra: &[&str], name: &str) {
    let dir = scratch(name);
    let (one, one_records) = run_with(&dir.join("one"), "1", extra);
    let (two, two_records) = run_with(&dir.join("two"), "2", extra);
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
    let out = arbor(&["summarize", dir.join("two").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        fs::read(dir.join("two/summary.json")).unwrap() == own,
        "the rebuilt summary differs"
    );
}

#[test]
fn two_threads_send_the_requests_of_one_open_loop() {
    same_requests(&["--copies", "4", "--arrival", "rate:40"], "threads-open");
}

#[test]
fn two_threads_send_the_requests_of_one_closed_loop() {
    same_requests(&["--copies", "3", "--sessions", "3"], "threads-lanes");
}

#[test]
fn policies_no_thread_keeps_alone_are_refused() {
    let fixture = fixture("trace_0277.json");
    let f = fixture.to_str().unwrap();
    expect_exit_2(
        &["run", f, "--threads", "2", "--idle-gap-cap", "0.1"],
        &["--idle-gap-cap with --threads 2", "--threads 1"],
    );
    expect_exit_2(
        &[
            "run",
            f,
            "--threads",
            "3",
            "--sessions",
            "2",
            "--start-window",
            "0:0.5",
        ],
        &["--start-window with --threads 3"],
    );
}

#[test]
fn threads_compose_with_a_shard_and_split_max_inflight() {
    let dir = scratch("threads-shard");
    let extra = ["--copies", "4", "--shard", "1/2", "--max-inflight", "3"];
    let (one, one_records) = run_with(&dir.join("one"), "1", &extra);
    let (two, two_records) = run_with(&dir.join("two"), "2", &extra);
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

/// SIGINT stops every thread: the grace, then the summary of what every
/// thread recorded, exit 130.
#[test]
fn a_signal_stops_every_thread_and_keeps_their_records() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = scratch("threads-sigint");
    let out = dir.join("run");
    let fixture = fixture("trace_0277.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["run", fixture.to_str().unwrap(), "--threads", "2"])
        .args(["--tool-time", "zero", "--think-time-pct", "0"])
        .args(["--ttft-ms", "5", "--itl-ms", "20", "--copies", "4"])
        .args(["--grace", "0.5", "--no-progress", "--force", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !fs::read(out.join("records.jsonl")).is_ok_and(|b| b.contains(&b'\n')) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before a signal"
        );
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let done = child.wait_with_output().expect("the run ends");
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["cancelled"], true);
    assert_eq!(summary["stopped_by"], "SIGINT");
    let records = jsonl(&out.join("records.jsonl"));
    ids(&records);
    let counted = ["ok", "failed", "cancelled"]
        .iter()
        .map(|k| summary["counts"][*k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(counted, records.len() as u64);
    // Turns of the plan were left unsent: the run really stopped early.
    assert!(summary["counts"]["skipped"].as_u64().unwrap() > 0);
}
