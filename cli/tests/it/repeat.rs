//! `arbor run --repeat N` against the built-in emulator: N run
//! directories with derived seeds and an aggregate; a signal during a run
//! ends the sequence with an invalid aggregate (`run_cancelled`); `arbor
//! aggregate` rebuilds it, fail-closed when a run is missing.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::Value;

use crate::util::*;

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn reasons(aggregate: &Value) -> Vec<String> {
    aggregate["submission_invalid_reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .map(|r| r.as_str().expect("a string").to_string())
        .collect()
}

/// The short recipe run, `--repeat N`, into `out`.
fn repeat_args(out: &Path, runs: &str) -> Vec<String> {
    let mut args: Vec<String> = vec!["run".into()];
    args.extend(AGENTX_SHORT.iter().map(|s| s.to_string()));
    args.push(fixture("").to_str().expect("UTF-8").to_string());
    args.extend(["--repeat".into(), runs.into(), "--no-progress".into()]);
    args.extend(["--out".into(), out.to_str().expect("UTF-8").to_string()]);
    args
}

#[test]
fn repeat_3_writes_three_runs_with_derived_seeds_and_an_aggregate() {
    let out = scratch("repeat-3").join("out");
    let args = repeat_args(&out, "3");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = arbor(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    for k in 1..=3u64 {
        let summary = read(&out.join(format!("run-{k}/summary.json")));
        assert_eq!(summary["config"]["seed"], 7 + k - 1, "run {k}");
        assert_eq!(
            summary["config"]["repeat"],
            serde_json::json!({"run": k, "runs": 3, "seed": 7})
        );
        let start = read(&out.join(format!("run-{k}/run.json")));
        assert_eq!(start["config"]["seed"], 7 + k - 1);
    }
    assert!(!out.join("run-4").exists());
    assert!(out.join("report.html").is_file(), "the runs overlaid");
    let aggregate = read(&out.join("aggregate.json"));
    assert_eq!(aggregate["schema_version"], "arbor.aggregate/1");
    assert_eq!(aggregate["runs_planned"], 3);
    assert_eq!(aggregate["runs_complete"], 3);
    assert_eq!(aggregate["scenario"], "agentx-mvp");
    // --unsafe-override stamps every run invalid, so the aggregate is.
    assert_eq!(aggregate["submission_valid"], false);
    assert_eq!(
        reasons(&aggregate),
        [
            "run_invalid:1:unsafe_override",
            "run_invalid:2:unsafe_override",
            "run_invalid:3:unsafe_override"
        ]
    );
    let ttft = &aggregate["metrics"]["ttft_p50"];
    assert_eq!(ttft["n"], 3, "{aggregate:#}");
    assert_eq!(ttft["unit"], "s");
    let (low, mean, high) = (
        ttft["ci95_low"].as_f64().expect("low"),
        ttft["mean"].as_f64().expect("mean"),
        ttft["ci95_high"].as_f64().expect("high"),
    );
    assert!(low <= mean && mean <= high, "{ttft}");
    assert_eq!(ttft["t_critical"], 4.3027);
    for name in ["e2e_p99", "output_token_throughput", "request_throughput"] {
        assert_eq!(aggregate["metrics"][name]["n"], 3, "{name}");
    }
    assert!(stdout(&result).contains("aggregate: 3 of 3 runs complete; submission_valid: false"));

    // `arbor aggregate` rebuilds the same file; with run 3 gone it fails
    // closed, and its interval is over two runs.
    let before = std::fs::read(out.join("aggregate.json")).expect("aggregate");
    let again = arbor(&["aggregate", out.to_str().expect("UTF-8")]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(
        std::fs::read(out.join("aggregate.json")).expect("aggregate"),
        before
    );
    std::fs::remove_dir_all(out.join("run-3")).expect("remove run-3");
    let again = arbor(&["aggregate", out.to_str().expect("UTF-8")]);
    assert!(again.status.success(), "{}", stderr(&again));
    let two = read(&out.join("aggregate.json"));
    assert_eq!(two["runs_complete"], 2);
    assert!(
        reasons(&two).contains(&"run_missing:3".to_string()),
        "{two:#}"
    );
    assert_eq!(two["metrics"]["ttft_p50"]["n"], 2);
    assert_eq!(two["metrics"]["ttft_p50"]["t_critical"], 12.7062);
}

#[test]
fn a_signal_during_the_second_run_ends_the_sequence_with_an_invalid_aggregate() {
    let out = scratch("repeat-cancel").join("out");
    let args = repeat_args(&out, "3");
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(&args[..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts");
    // Run 2's clock has started: its run.json is there.
    let deadline = Instant::now() + Duration::from_secs(90);
    while !out.join("run-2/run.json").is_file() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("arbor run ended early: {status}");
        }
        assert!(Instant::now() < deadline, "run 2 never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("kill");
    let result = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(130), "{err}");
    assert!(err.contains("runs 3 to 3 are not made"), "{err}");
    assert!(!out.join("run-3").exists());
    let aggregate = read(&out.join("aggregate.json"));
    assert_eq!(aggregate["submission_valid"], false);
    let reasons = reasons(&aggregate);
    for reason in ["run_cancelled", "run_missing:3"] {
        assert!(reasons.contains(&reason.to_string()), "{reasons:?}");
    }
    assert_eq!(aggregate["runs_complete"], 1);
    assert_eq!(aggregate["runs"][1]["state"], "cancelled");
    assert_eq!(aggregate["runs"][2]["state"], "missing");
}

#[test]
fn a_non_empty_repeat_directory_is_refused() {
    let out = scratch("repeat-non-empty");
    std::fs::write(out.join("keep.txt"), "x").expect("write");
    expect_exit_2(
        &[
            "run",
            "--repeat",
            "2",
            "--out",
            out.to_str().expect("UTF-8"),
        ],
        &["not empty"],
    );
    expect_exit_2(&["run", "--repeat", "0"], &["--repeat"]);
    // AIPerf's spelling is an alias.
    expect_exit_2(&["run", "--num-profile-runs", "0"], &["--repeat"]);
}

#[test]
fn export_aiperf_of_a_repeat_2_writes_the_aggregate_and_each_run() {
    let root = scratch("repeat-export");
    let out = root.join("out");
    let args = repeat_args(&out, "2");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = arbor(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    let before = std::fs::read(out.join("aggregate.json")).expect("aggregate.json");
    let dir = root.join("aiperf");
    let export = arbor(&[
        "export",
        out.to_str().expect("UTF-8"),
        "--aiperf",
        dir.to_str().expect("UTF-8"),
    ]);
    assert!(export.status.success(), "{}", stderr(&export));
    let ours = read(&out.join("aggregate.json"));
    let theirs = read(&dir.join("profile_export_aiperf_aggregate.json"));
    assert_eq!(theirs["schema_version"], "1.0");
    let md = &theirs["metadata"];
    assert_eq!(md["aggregation_type"], "confidence");
    assert_eq!(md["num_profile_runs"], 2);
    assert_eq!(md["num_successful_runs"], 2);
    assert_eq!(md["failed_runs"], serde_json::json!([]));
    assert_eq!(md["scenario"], "inferencex-agentx-mvp");
    // --unsafe-override: both runs invalid, so the aggregate is.
    assert_eq!(md["submission_valid"], false);
    assert_eq!(md["submission_valid"], ours["submission_valid"]);
    assert_eq!(
        md["submission_invalid_reasons"],
        ours["submission_invalid_reasons"]
    );
    assert!(!reasons(&ours).is_empty());
    let ttft = &theirs["metrics"]["time_to_first_token_p50"];
    for key in [
        "mean",
        "std",
        "min",
        "max",
        "cv",
        "se",
        "ci_low",
        "ci_high",
        "t_critical",
        "unit",
    ] {
        assert!(
            ttft.get(key).is_some(),
            "time_to_first_token_p50 lacks {key}"
        );
    }
    assert_eq!(ttft["unit"], "ms");
    let mean_s = ours["metrics"]["ttft_p50"]["mean"].as_f64().expect("mean");
    let mean_ms = ttft["mean"].as_f64().expect("mean");
    assert!(
        (mean_ms - mean_s * 1000.0).abs() < 1e-9,
        "{mean_ms} vs {mean_s} s"
    );
    assert!(theirs["metrics"]["request_throughput_avg"]["mean"].is_f64());
    let tpot = ours["metrics"]["tpot_p99"]["mean"].as_f64().expect("tpot");
    let itl = &theirs["metrics"]["inter_token_latency_p99"]["mean"];
    assert!(
        (itl.as_f64().expect("itl") - tpot * 1000.0).abs() < 1e-9,
        "ITL is TPOT"
    );
    assert!(theirs["metrics"].get("job_time_p50").is_none());
    assert_eq!(theirs["arbor"]["schema_version"], "arbor.aggregate/1");
    for k in 1..=2 {
        let run = dir.join(format!("run-{k}"));
        assert!(run.join("profile_export_aiperf.json").is_file(), "run {k}");
        assert!(run.join("profile_export.jsonl").is_file(), "run {k}");
    }
    let after = std::fs::read(out.join("aggregate.json")).expect("aggregate.json");
    assert_eq!(
        before, after,
        "the export writes nothing into the run directory"
    );

    // Fail-closed: with run 2 gone, the aggregate is re-resolved over one run.
    std::fs::remove_dir_all(out.join("run-2")).expect("remove run-2");
    let again = root.join("aiperf-1");
    let export = arbor(&[
        "export",
        out.to_str().expect("UTF-8"),
        "--aiperf",
        again.to_str().expect("UTF-8"),
    ]);
    assert!(export.status.success(), "{}", stderr(&export));
    let theirs = read(&again.join("profile_export_aiperf_aggregate.json"));
    let md = &theirs["metadata"];
    assert_eq!(md["num_successful_runs"], 1);
    assert_eq!(
        md["failed_runs"],
        serde_json::json!([{"label": "run-2", "error": "missing"}])
    );
    let reasons = md["submission_invalid_reasons"]
        .as_array()
        .expect("reasons");
    assert!(
        reasons.contains(&serde_json::json!("run_missing:2")),
        "{reasons:?}"
    );
    let ttft = &theirs["metrics"]["time_to_first_token_p50"];
    assert_eq!(ttft["t_critical"], Value::Null);
    assert_eq!(ttft["ci_low"], ttft["mean"]);
    assert!(!again.join("run-2").exists());
}

/// The JSON blob a page draws from.
fn page_data(page: &Path) -> Value {
    let html = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let open = "<script id=\"arbor-data\" type=\"application/json\">";
    let start = html.find(open).expect("a data blob") + open.len();
    let end = start + html[start..].find("</script>").expect("the blob ends");
    serde_json::from_str(&html[start..end]).expect("the blob is JSON")
}

#[test]
fn repeat_page_draws_the_spread_and_report_redraws_it_fail_closed() {
    let out = scratch("repeat-page").join("out");
    let args = repeat_args(&out, "2");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = arbor(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(stdout(&result).contains("runs and their spread in"));
    let aggregate = read(&out.join("aggregate.json"));
    let data = page_data(&out.join("report.html"));
    let spread = &data["spread"];
    assert_eq!(spread["submission_valid"], false);
    assert_eq!(
        spread["submission_invalid_reasons"],
        aggregate["submission_invalid_reasons"]
    );
    assert_eq!(data["runs"].as_array().unwrap().len(), 2);
    let runs: Vec<(&str, u64)> = spread["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["state"].as_str().unwrap(),
                r["page_run"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(runs, [("complete", 0), ("complete", 1)]);
    // A row per metric of aggregate.json, latencies first; its numbers, and
    // each run's value placed on the page's run.
    let metrics = spread["metrics"].as_array().unwrap();
    assert_eq!(
        metrics.len(),
        aggregate["metrics"].as_object().unwrap().len()
    );
    assert_eq!(metrics[0]["name"], "ttft_mean");
    assert_eq!(metrics[metrics.len() - 1]["name"], "cache_hit_ratio");
    for m in metrics {
        let name = m["name"].as_str().unwrap();
        let a = &aggregate["metrics"][name];
        for field in ["n", "mean", "ci95_low", "ci95_high", "std", "min", "max"] {
            assert_eq!(m[field], a[field], "{name} {field}");
        }
        let values: Vec<&Value> = m["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p[1])
            .collect();
        let expected: Vec<&Value> = a["values"].as_array().unwrap().iter().collect();
        assert_eq!(values, expected, "{name}");
        let placed: Vec<u64> = m["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[0].as_u64().unwrap())
            .collect();
        assert_eq!(placed, [0, 1], "{name}");
    }

    // Run 2 loses its summary: `arbor report OUT` redraws the page from
    // the aggregate re-resolved fail-closed, one run drawn, no interval,
    // and aggregate.json is left as it was.
    let before = std::fs::read(out.join("aggregate.json")).unwrap();
    std::fs::remove_file(out.join("run-2/summary.json")).unwrap();
    let result = arbor(&["report", out.to_str().unwrap()]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert!(
        stdout(&result).contains("1 run drawn"),
        "{}",
        stdout(&result)
    );
    assert_eq!(std::fs::read(out.join("aggregate.json")).unwrap(), before);
    let data = page_data(&out.join("report.html"));
    let spread = &data["spread"];
    assert_eq!(data["runs"].as_array().unwrap().len(), 1);
    let reasons: Vec<&str> = spread["submission_invalid_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(reasons.contains(&"run_failed:2"), "{reasons:?}");
    assert_eq!(spread["runs"][1]["state"], "failed");
    assert!(spread["runs"][1]["page_run"].is_null());
    let ttft = &spread["metrics"][0];
    assert_eq!(ttft["n"], 1);
    assert!(ttft["ci95_low"].is_null());
    assert_eq!(ttft["points"].as_array().unwrap().len(), 1);
}
