//! `compare` on hand-written run directories: the faults of a bad one
//! (input errors naming the file and line), a comparison with no records,
//! a crossed threshold and its fault, the same bytes for the same seed,
//! and 100k records.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_error::Kind;
use arbor_report::compare::metric::fail_on;
use arbor_report::compare::{compare, CompareOptions};
use serde_json::Value;

use crate::util::{ok_record, run_dir, scratch, write};

fn options(base: &Path, new: &Path, fail: &str) -> CompareOptions {
    CompareOptions {
        base: base.to_path_buf(),
        new: vec![new.to_path_buf()],
        fail_on: if fail.is_empty() {
            Vec::new()
        } else {
            fail_on(fail).expect("thresholds").0
        },
        seed: 0,
        resamples: 100,
        allow_different: false,
    }
}

/// The input error comparing `base` with `new`; each needle is in it.
fn expect_input_error(base: &Path, new: &Path, needles: &[&str]) {
    let Err(e) = compare(&options(base, new, "")) else {
        panic!("{} vs {}: compared", base.display(), new.display());
    };
    assert_eq!(e.kind, Kind::Input, "{}", e.message);
    for needle in needles {
        assert!(
            e.message.contains(needle),
            "expected `{needle}` in: {}",
            e.message
        );
    }
}

fn fast(dir: &Path) -> PathBuf {
    let records: Vec<String> = (0..20)
        .map(|i| ok_record(0.010 + i as f64 * 1e-4))
        .collect();
    run_dir(&dir.join("fast"), &records)
}

fn human(options: &CompareOptions) -> String {
    let mut out = Vec::new();
    compare(options)
        .expect("compared")
        .write_human(&mut out)
        .unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn bad_run_directories_are_input_errors_naming_the_file_and_line() {
    let dir = scratch("compare-bad");
    let fast = fast(&dir);
    expect_input_error(
        &fast,
        &dir.join("nope"),
        &[
            "nope: not a run directory",
            "records.jsonl and summary.json",
        ],
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect_input_error(
        &empty,
        &fast,
        &["records.jsonl: missing", "`arbor run` writes"],
    );
    let mut broken: Vec<String> = (0..4).map(|_| ok_record(0.01)).collect();
    broken[2] = "{\"status\": \"ok\", \"ttft_s\": \"fast\"}".into();
    let bad = run_dir(&dir.join("bad-line"), &broken);
    expect_input_error(
        &fast,
        &bad,
        &["records.jsonl line 3: expected a record of `arbor run`"],
    );
    let bad = run_dir(
        &dir.join("not-json"),
        &["{\"status\":\"ok\"}".into(), "not json".into()],
    );
    expect_input_error(&bad, &fast, &["records.jsonl line 2"]);
    let bad = run_dir(&dir.join("bad-status"), &["{\"status\":\"maybe\"}".into()]);
    expect_input_error(
        &bad,
        &fast,
        &["line 1: expected status ok, error or cancelled, got `maybe`"],
    );
    let no_summary = dir.join("no-summary");
    write(&no_summary, "records.jsonl", &ok_record(0.01));
    expect_input_error(&fast, &no_summary, &["summary.json: cannot read"]);
    write(&no_summary, "summary.json", "{\"counts\": {}}");
    expect_input_error(
        &fast,
        &no_summary,
        &["summary.json: schema version missing, this arbor reads arbor.summary/1"],
    );
    let mut damaged: serde_json::Value = serde_json::from_str(&crate::util::summary()).unwrap();
    damaged.as_object_mut().unwrap().remove("latency");
    write(&no_summary, "summary.json", &damaged.to_string());
    expect_input_error(
        &fast,
        &no_summary,
        &["summary.json: missing field `latency`"],
    );
}

#[test]
fn no_records_at_all_is_a_comparison_with_nothing_judged() {
    let dir = scratch("compare-no-records");
    let fast = fast(&dir);
    let none = run_dir(&dir.join("none"), &[]);
    let options = options(&fast, &none, "ttft_p50=+0");
    let comparison = compare(&options).expect("not a fault");
    assert!(comparison.crossed().is_empty());
    assert!(comparison.gate().is_ok());
    assert!(
        human(&options).contains("not judged"),
        "{}",
        human(&options)
    );
}

#[test]
fn a_crossed_threshold_is_described_and_fails_the_gate() {
    let dir = scratch("compare-crossed");
    let fast = fast(&dir);
    let records: Vec<String> = (0..20)
        .map(|i| ok_record(0.040 + i as f64 * 1e-4))
        .collect();
    let slow = run_dir(&dir.join("slow"), &records);
    let comparison = compare(&options(&fast, &slow, "ttft_p50=+10%,errors=+0")).unwrap();
    let crossed = comparison.crossed();
    assert_eq!(crossed.len(), 1, "{crossed:?}");
    assert!(
        crossed[0].starts_with(&format!("ttft_p50=+10% {}: ", slow.display())),
        "{}",
        crossed[0]
    );
    let e = comparison.gate().expect_err("crossed");
    assert_eq!(e.kind, Kind::Other);
    assert_eq!(
        e.message,
        format!("1 threshold crossed: ttft_p50=+10% ({})", slow.display())
    );
    // The other way round is an improvement: nothing crossed.
    let back = compare(&options(&slow, &fast, "ttft_p50=+10%")).unwrap();
    assert!(back.gate().is_ok());
}

#[test]
fn the_same_inputs_and_seed_give_the_same_bytes() {
    let dir = scratch("compare-same-bytes");
    let fast = fast(&dir);
    let records: Vec<String> = (0..30)
        .map(|i| ok_record(0.020 + i as f64 * 3e-4))
        .collect();
    let other = run_dir(&dir.join("other"), &records);
    let json = |seed| {
        let mut o = options(&fast, &other, "");
        o.seed = seed;
        let mut out = Vec::new();
        compare(&o).unwrap().write_json(&mut out).unwrap();
        out
    };
    assert_eq!(json(7), json(7));
    let parsed: Value = serde_json::from_slice(&json(7)).unwrap();
    assert_eq!(parsed["seed"], 7);
    assert_eq!(parsed["crossed"], 0);
    let o = options(&fast, &other, "");
    assert_eq!(human(&o), human(&o));
}

/// 100k records (ten ITL gaps each) compare in a few seconds.
#[test]
fn a_hundred_thousand_records_compare_quickly() {
    let mut records = String::new();
    for i in 0..100_000u64 {
        let t = 0.01 + (i % 997) as f64 * 1e-5;
        records.push_str(&format!(
            "{{\"status\":\"ok\",\"warmup\":false,\"ttft_s\":{t},\"e2e_s\":{},\"tpot_s\":0.0002,\
             \"itl_s\":[0.0002,0.0002,0.0001,0.0003,0.0002,0.0002,0.0002,0.0001,0.0003,{}],\
             \"lateness_s\":0.0001,\"queue_wait_s\":0.0}}\n",
            t * 3.0,
            t / 10.0
        ));
    }
    let big = scratch("compare-big");
    write(&big, "records.jsonl", &records);
    write(&big, "summary.json", &crate::util::summary());
    let mut o = options(&big, &big, "");
    o.resamples = 1000;
    let start = Instant::now();
    let comparison = compare(&o).expect("compared");
    let mut out = Vec::new();
    comparison.write_json(&mut out).unwrap();
    let took = start.elapsed();
    // Generous, for a loaded 2-core machine: the bound catches a quadratic
    // read or resampling, not a slow machine.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let json: Value = serde_json::from_slice(&out).unwrap();
    let dispatched = json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "dispatched")
        .expect("a dispatched row");
    assert_eq!(dispatched["base"], 100_000.0);
}
