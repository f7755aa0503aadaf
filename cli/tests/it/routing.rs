//! `--session-routing`, repeated `--endpoint`, `--placement` at the
//! process: bad values exit 2 naming them, a replica that fails the
//! pre-flight is named, and two emulators as replicas give records that
//! name their replica and a config that lists both endpoints. What each
//! convention sends and how each placement places is in-process
//! (`backends/tests/it/routing.rs`).

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::*;

#[test]
fn an_unknown_mode_or_placement_exits_2_naming_it() {
    expect_exit_2(
        &["run", "--session-routing", "sticky"],
        &["--session-routing", "sticky", "affinity, dynamo"],
    );
    expect_exit_2(
        &["run", "--session-routing", "header:bad name"],
        &["--session-routing", "not an HTTP header name"],
    );
    expect_exit_2(&["run", "--placement", "hash"], &["--placement", "hash"]);
    expect_exit_2(
        &["run", "--replica-header", "a:b"],
        &["--replica-header", "a:b"],
    );
}

#[test]
fn a_bad_endpoint_among_several_exits_2_naming_it() {
    expect_exit_2(
        &[
            "run",
            "--endpoint",
            "http://127.0.0.1:9",
            "--endpoint",
            "ftp://replica-two",
        ],
        &["--endpoint", "ftp://replica-two"],
    );
}

#[test]
fn a_replica_that_fails_the_pre_flight_is_named() {
    let (mut emulator, url) = emulator_with(&[]);
    let dead = dead_port();
    let dir = scratch("routing-dead-replica");
    let out = arbor(&[
        "run",
        fixture("trace_0187.json").to_str().unwrap(),
        "--endpoint",
        &url,
        "--endpoint",
        &dead,
        "--ready-timeout",
        "0",
        "--no-progress",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    let _ = emulator.kill();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("pre-flight of {dead}")), "{err}");
    assert!(
        !dir.join("out").exists(),
        "refused before the output directory"
    );
}

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("the run wrote it")).expect("JSON")
}

#[test]
fn two_emulators_as_replicas_are_named_in_every_record() {
    let (mut one, url_one) = emulator_with(&["--ttft-ms", "2", "--itl-ms", "0.2"]);
    let (mut two, url_two) = emulator_with(&["--ttft-ms", "2", "--itl-ms", "0.2"]);
    let dir = scratch("routing-two-replicas");
    let out_dir = dir.join("out");
    let out = arbor(&[
        "run",
        fixture("trace_0187.json").to_str().unwrap(),
        "--endpoint",
        &url_one,
        "--endpoint",
        &url_two,
        "--placement",
        "round-robin",
        "--session-routing",
        "dynamo",
        "--threads",
        "2",
        "--copies",
        "2",
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--no-progress",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let _ = one.kill();
    let _ = two.kill();
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = json(&out_dir.join("summary.json"));
    let config = &summary["config"];
    assert_eq!(config["endpoints"].as_array().map(Vec::len), Some(2));
    assert_eq!(config["endpoint"], config["endpoints"][0]);
    assert_eq!(config["placement"], "round-robin");
    assert_eq!(config["session_routing"], "dynamo");
    let records: Vec<Value> = fs::read_to_string(out_dir.join("records.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect();
    assert!(!records.is_empty());
    let mut per = [0usize; 2];
    for r in &records {
        let replica = r["replica"]
            .as_u64()
            .expect("every record names its replica");
        per[replica as usize] += 1;
        assert!(r["session_key"]
            .as_str()
            .is_some_and(|k| k.starts_with("arbor-")));
    }
    // Two threads share the round-robin turn: an equal share, give or
    // take one.
    assert!(per[0].abs_diff(per[1]) <= 1, "{per:?}");
    // Each emulator's /metrics scraped, its lines naming their replica;
    // the summary keeps both replicas' sections beside the totals.
    let lines = fs::read_to_string(out_dir.join("metrics.jsonl")).expect("metrics");
    for replica in [0, 1] {
        let tag = format!("\"replica\":{replica}");
        assert!(lines.lines().any(|l| l.contains(&tag)), "{tag}");
    }
    let server = &summary["server_metrics"];
    assert_eq!(config["metrics"]["urls"].as_array().map(Vec::len), Some(2));
    let ok = |m: &Value| m["scrapes"]["ok"].as_u64().unwrap_or(0);
    let (zero, one) = (&server["replicas"]["0"], &server["replicas"]["1"]);
    assert!(ok(zero) > 0 && ok(one) > 0, "{server}");
    assert_eq!(ok(zero) + ok(one), ok(server));
}
