//! `arbor compare`: two real runs against the built-in emulator (10 ms
//! and 40 ms TTFT, one Weka trace, a few seconds each), made once and
//! shared by the tests, through the process (its table, its exit codes).
//! Faults on hand-made run directories and speed are tested in-process in
//! `report/tests/it/compare.rs`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::{arbor, expect_exit_2, fixture, scratch, stderr, stdout};

/// Runs `arbor run` on trace_0291 (32 requests) with the given TTFT.
fn emulated_run(dir: &Path, ttft_ms: &str) -> PathBuf {
    let out = dir.join(format!("ttft{ttft_ms}"));
    let run = arbor(&[
        "run",
        fixture("trace_0291.json").to_str().unwrap(),
        "--tool-time=zero",
        "--think-time-pct=0",
        "--idle-gap-cap=0.1",
        "--itl-ms=0.2",
        "--ttft-ms",
        ttft_ms,
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    out
}

/// The fast run (TTFT 10 ms) and the slow one (40 ms).
fn runs() -> &'static (PathBuf, PathBuf) {
    static RUNS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = scratch("compare-runs");
        (emulated_run(&dir, "10"), emulated_run(&dir, "40"))
    })
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn compare_json(args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["compare", "--json"];
    all.extend_from_slice(args);
    let out = arbor(&all);
    let json = serde_json::from_str(&stdout(&out)).expect("--json prints one object");
    (out.status.code(), json, stderr(&out))
}

fn metric<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == name)
        .unwrap_or_else(|| panic!("no metric {name}"))
}

#[test]
fn a_run_compared_with_itself_has_zero_deltas_and_passes_every_gate() {
    let (fast, _) = runs();
    let gates = "ttft_p99=+0%,itl_p50=+0,tpot_p90=+0%,e2e_mean=+0,errors=+0,error_rate=+0,\
                 requests_per_s=+0%,output_tokens_per_s=+0,cache_hit_ratio=+0,job_time_p50=+0";
    let (code, json, err) = compare_json(&[s(fast), s(fast), "--fail-on", gates]);
    assert_eq!(code, Some(0), "{err}");
    let metrics = json["metrics"].as_array().unwrap();
    assert_eq!(metrics.len(), 38);
    for m in metrics {
        let cell = &m["new"][0];
        assert_eq!(cell["value"], m["base"], "{m}");
        if !m["base"].is_null() {
            assert_eq!(cell["delta"], 0.0, "{m}");
            assert_eq!(cell["relative_pct"], 0.0, "{m}");
        }
        // Resampling the same values twice: the interval holds 0.
        if let Some(ci) = cell["ci"].as_array() {
            let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            assert!(lo <= 0.0 && 0.0 <= hi, "{m}");
        }
    }
    assert_eq!(
        metric(&json, "ttft_p50")["new"][0]["ci"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    assert_eq!(json["crossed"], 0);
    assert_eq!(json["thresholds"].as_array().unwrap().len(), 10);
    assert!(json["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["crossed"] == false));

    // The table says the same for people.
    let out = arbor(&["compare", s(fast), s(fast), "--fail-on", "ttft_p99=+0%"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("| ttft_p50"), "{text}");
    assert!(text.contains("ok       ttft_p99=+0%"), "{text}");
    assert!(!text.contains("CROSSED"), "{text}");
}

#[test]
fn a_slower_server_is_a_ttft_regression_that_fails_the_gate() {
    let (fast, slow) = runs();
    let (code, json, err) =
        compare_json(&[s(fast), s(slow), "--fail-on", "ttft_p50=+10%,errors=+0"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("threshold crossed: ttft_p50=+10%")
            && err.contains("1 threshold crossed: ttft_p50=+10%"),
        "{err}"
    );
    assert!(!err.contains("errors=+0"), "errors did not change: {err}");
    let ttft = &metric(&json, "ttft_p50")["new"][0];
    let delta = ttft["delta"].as_f64().unwrap();
    // +30 ms by the emulators' models; each run's p50 moves with what a
    // loaded machine adds to it, so the window is wide (a sign and a
    // size, not milliseconds).
    assert!(
        (10.0..150.0).contains(&delta),
        "TTFT +30 ms expected: {ttft}"
    );
    let ci = ttft["ci"].as_array().unwrap();
    assert!(
        ci[0].as_f64().unwrap() > 0.0,
        "the interval excludes 0: {ttft}"
    );
    assert!(ttft["relative_pct"].as_f64().unwrap() > 100.0, "{ttft}");
    assert_eq!(json["crossed"], 1);

    // The human form marks it too; the other direction passes.
    let out = arbor(&["compare", s(fast), s(slow), "--fail-on", "ttft_p50=+10%"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("CROSSED  ttft_p50=+10%"),
        "{}",
        stdout(&out)
    );
    let out = arbor(&["compare", s(slow), s(fast), "--fail-on", "ttft_p50=+10%"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn the_same_inputs_and_seed_print_the_same_bytes() {
    let (fast, slow) = runs();
    let args = ["compare", s(fast), s(slow), s(fast), "--seed", "7"];
    let first = arbor(&args);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert_eq!(first.stdout, arbor(&args).stdout);
    assert!(stdout(&first).contains("NEW 2"), "{}", stdout(&first));
    let json_args = ["compare", s(fast), s(slow), "--seed", "7", "--json"];
    let a = arbor(&json_args);
    assert_eq!(a.stdout, arbor(&json_args).stdout);
    // Another seed resamples differently (same point deltas).
    let b = arbor(&["compare", s(fast), s(slow), "--seed", "8", "--json"]);
    assert_ne!(a.stdout, b.stdout);
}

/// The process's side of a bad run directory (the faults' words are
/// `report/tests/it/compare.rs`'): exit 2, the fault on stderr.
#[test]
fn a_bad_run_directory_exits_2_naming_it() {
    let (fast, _) = runs();
    let missing = scratch("compare-missing").join("nope");
    expect_exit_2(
        &["compare", s(fast), s(&missing)],
        &[
            "nope: not a run directory",
            "records.jsonl and summary.json",
        ],
    );
}

#[test]
fn a_bad_fail_on_exits_2_saying_what_was_expected() {
    let (fast, _) = runs();
    expect_exit_2(
        &["compare", s(fast), s(fast), "--fail-on", "ttft_p98=+10%"],
        &[
            "--fail-on",
            "unknown metric `ttft_p98`; expected one of ttft_mean, ttft_p50",
        ],
    );
    expect_exit_2(
        &["compare", s(fast), s(fast), "--fail-on", "ttft_p99=+ten%"],
        &["expected +N% (relative) or +N (absolute, at least 0) after `ttft_p99=`"],
    );
    expect_exit_2(
        &["compare", s(fast), s(fast), "--fail-on", "errors"],
        &["expected METRIC=+N% or METRIC=+N"],
    );
    expect_exit_2(&["compare", s(fast)], &["<NEW>"]);
}

/// A synthetic run under the same policy flags as [`runs`]: another
/// workload.
fn synthetic_run() -> &'static PathBuf {
    static RUN: OnceLock<PathBuf> = OnceLock::new();
    RUN.get_or_init(|| {
        let out = scratch("compare-synthetic").join("synthetic");
        let run = arbor(&[
            "run",
            "--synthetic",
            "trees=2,turns=2,isl=100,osl=5,arrival_s=0.1",
            "--tool-time=zero",
            "--think-time-pct=0",
            "--idle-gap-cap=0.1",
            "--itl-ms=0.2",
            "--ttft-ms",
            "10",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(run.status.success(), "{}", stderr(&run));
        out
    })
}

/// Runs of different workloads are refused (exit 2, both named, what
/// differs, the flag that allows it); with `--allow-different` they are
/// compared, the difference first (on stdout, in the JSON and on
/// stderr); runs of one workload list the settings that differ before
/// the table.
#[test]
fn runs_of_different_workloads_are_refused_unless_allow_different_says_so() {
    let (fast, slow) = runs();
    let synthetic = synthetic_run();
    let err = expect_exit_2(
        &["compare", s(fast), s(synthetic)],
        &[
            &format!(
                "not comparable: BASE {} and NEW {} differ: the workloads differ (workload hash ",
                s(fast),
                s(synthetic)
            ),
            "inputs `",
            "pass --allow-different to compare them anyway",
        ],
    );
    assert!(!err.contains("the policies differ"), "{err}");

    let out = arbor(&["compare", s(fast), s(synthetic), "--allow-different"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("NOT COMPARABLE (compared anyway: --allow-different)"),
        "{text}"
    );
    let first_metric = text.find("| ttft_mean").expect("the table");
    let inputs = text.find("\n  inputs ").expect("the inputs differ");
    assert!(inputs < first_metric, "{text}");
    assert!(
        stderr(&out).contains("warning: not comparable (--allow-different): BASE "),
        "{}",
        stderr(&out)
    );
    let (code, json, _) = compare_json(&[s(fast), s(synthetic), "--allow-different"]);
    assert_eq!(code, Some(0));
    assert_eq!(json["comparable"], false);
    assert_eq!(json["mismatches"][0]["part"], "workload");
    assert_eq!(json["mismatches"][0]["run"], s(synthetic));
    assert!(json["mismatches"][0]["base_hash"].is_string(), "{json}");
    assert!(json["differences"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["setting"] == "inputs"));

    // One workload, another emulator: comparable, the setting listed first.
    let out = arbor(&["compare", s(fast), s(slow)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(!text.contains("NOT COMPARABLE"), "{text}");
    let emulator = text.find("\n  emulator ").expect("the emulators differ");
    assert!(emulator < text.find("| ttft_mean").unwrap(), "{text}");
    assert!(!text.contains("\n  endpoint "), "{text}");
    let (_, json, _) = compare_json(&[s(fast), s(slow)]);
    assert_eq!(json["comparable"], true);
    assert_eq!(json["mismatches"], serde_json::json!([]));
}
