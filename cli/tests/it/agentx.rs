//! The AgentX recipe (`--scenario agentx-mvp`, docs/agentx.md): the dry
//! run, the locks, and short live runs against the built-in emulator.

use std::path::Path;

use serde_json::Value;

use crate::util::{arbor, jsonl, run_into, scratch, stderr, stdout, AGENTX_SHORT};

fn fixtures() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/weka-kv-cache-tester")
        .to_str()
        .unwrap()
        .to_string()
}

const PLAN: [&str; 9] = [
    "plan",
    "--scenario",
    "agentx-mvp",
    "--sessions",
    "8",
    "--duration",
    "900",
    "--seed",
    "42",
];

fn plan_json(extra: &[&str]) -> Value {
    let dir = fixtures();
    let mut args: Vec<&str> = PLAN.to_vec();
    args.extend_from_slice(extra);
    args.extend(["--json", dir.as_str()]);
    let out = arbor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("one JSON object")
}

#[test]
fn the_dry_run_shows_warmups_t_star_recycles_and_the_peak() {
    let v = plan_json(&[]);
    assert_eq!(v["scenario"], "agentx-mvp");
    assert_eq!(v["seed"], 42);
    assert_eq!(v["policy"]["loop"], true);
    assert_eq!(v["policy"]["idle_gap_cap_s"], 10.0);
    assert_eq!(v["policy"]["grace_s"], 30.0);
    assert_eq!(v["policy"]["duration_s"], 900.0);
    let lanes = v["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 8, "exactly N lanes");
    let mut warmups = 0;
    for lane in lanes {
        assert!(lane["t_star_s"].as_f64().unwrap() >= 0.0, "{lane}");
        let plays = lane["plays"].as_u64().unwrap();
        assert!(
            plays >= 1,
            "every lane plays (the corpus is dealt twice): {lane}"
        );
        assert_eq!(lane["recycles"].as_u64().unwrap(), plays - 1);
        assert_eq!(lane["stalled"], false);
        warmups += lane["warmups"].as_u64().unwrap();
    }
    assert!(warmups > 0);
    assert_eq!(v["warmups"].as_u64().unwrap(), warmups);
    assert!(v["history_turns"].as_u64().unwrap() > 0);
    let start = v["profiling_start_s"].as_f64().unwrap();
    assert!(
        start > 0.0 && start <= 10.0,
        "warmup spread capped at 10 s: {start}"
    );
    assert!(v["peak_inflight"].as_u64().unwrap() > 0);
    assert!(lanes.iter().any(|l| l["recycles"].as_u64().unwrap() > 0));

    let dir = fixtures();
    let mut args: Vec<&str> = PLAN.to_vec();
    args.push(dir.as_str());
    let out = arbor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "scenario agentx-mvp",
        "profiling start",
        "warmup requests",
        "history turns",
        "t* ",
        "recycles",
        "peak in flight",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

fn timeline(dir: &Path, name: &str, seed: &str) -> Vec<u8> {
    let path = dir.join(name);
    let fixtures = fixtures();
    let out = arbor(&[
        "plan",
        "--scenario",
        "agentx-mvp",
        "--sessions",
        "8",
        "--duration",
        "900",
        "--seed",
        seed,
        "--timeline",
        path.to_str().unwrap(),
        fixtures.as_str(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::read(&path).unwrap()
}

#[test]
fn the_same_seed_gives_the_same_plan_byte_for_byte() {
    let dir = scratch("agentx-timeline");
    let a = timeline(&dir, "a.jsonl", "42");
    let b = timeline(&dir, "b.jsonl", "42");
    let c = timeline(&dir, "c.jsonl", "43");
    assert!(!a.is_empty());
    assert_eq!(a, b, "same seed, same bytes");
    assert_ne!(a, c, "another seed, another plan");
    let lines = jsonl(&dir.join("a.jsonl"));
    let warm: Vec<&Value> = lines.iter().filter(|l| l["warmup"] == true).collect();
    assert!(!warm.is_empty());
    assert!(lines.iter().all(|l| l["warmup"].is_boolean()));
    assert!(lines.iter().any(|l| l["state"] == "history"));
    // Warmups go out before the profiling start; measured turns after it.
    let start = plan_json(&[])["profiling_start_s"].as_f64().unwrap();
    for l in &warm {
        assert!(l["start_s"].as_f64().unwrap() <= start + 1e-9, "{l}");
    }
    for l in lines.iter().filter(|l| l["warmup"] == false) {
        if let Some(s) = l["start_s"].as_f64() {
            assert!(s >= start - 1e-9, "{l}");
        }
    }
}

#[test]
fn a_missing_seed_is_generated_and_printed() {
    let fixtures = fixtures();
    let out = arbor(&[
        "plan",
        "--scenario",
        "agentx-mvp",
        "--sessions",
        "2",
        "--json",
        fixtures.as_str(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let seed = v["seed"].as_u64().unwrap();
    assert!(
        stderr(&out).contains(&format!("seed {seed} (generated")),
        "{}",
        stderr(&out)
    );
    assert_eq!(v["policy"]["duration_s"], 1800.0, "the recipe's default");
}

#[test]
fn conflicting_flags_are_all_named_in_one_error() {
    let fixtures = fixtures();
    let conflicting = [
        "--tool-time",
        "zero",
        "--think-time-pct",
        "10",
        "--idle-gap-cap",
        "1",
        "--duration",
        "60",
        "--grace",
        "5",
        "--copies",
        "2",
        "--max-inflight",
        "4",
    ];
    let mut args = vec!["plan", "--scenario", "agentx-mvp", "--sessions", "4"];
    args.extend(conflicting);
    args.push(fixtures.as_str());
    let out = arbor(&args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    for flag in [
        "--tool-time zero",
        "--think-time-pct 10",
        "--idle-gap-cap 1",
        "--duration 60",
        "--grace 5",
        "--copies 2",
        "--max-inflight 4",
    ] {
        assert!(err.contains(flag), "{flag}: {err}");
    }
    assert_eq!(err.matches("error:").count(), 1, "one error: {err}");
    assert!(err.contains("--unsafe-override"), "{err}");

    // With --unsafe-override the plan proceeds.
    args.insert(1, "--unsafe-override");
    args.push("--json");
    let out = arbor(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["scenario"], "agentx-mvp");
    assert_eq!(v["policy"]["tool_time"], "zero", "the user's value wins");
}

#[test]
fn the_scenario_needs_sessions_and_never_takes_a_synthetic_dataset() {
    let fixtures = fixtures();
    let out = arbor(&["plan", "--scenario", "agentx-mvp", fixtures.as_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--sessions"), "{}", stderr(&out));

    for unsafe_override in [false, true] {
        let mut args = vec![
            "plan",
            "--scenario",
            "agentx-mvp",
            "--sessions",
            "2",
            "--synthetic",
            "trees=2,turns=3",
        ];
        if unsafe_override {
            args.push("--unsafe-override");
        }
        let out = arbor(&args);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains("--synthetic"), "{}", stderr(&out));
    }

    let out = arbor(&["plan", "--unsafe-override", fixtures.as_str()]);
    assert_eq!(out.status.code(), Some(2), "--unsafe-override alone");
    let out = arbor(&["plan", "--scenario", "nope", "--sessions", "2"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_run_with_conflicts_does_not_start() {
    let dir = scratch("agentx-refused");
    let out_dir = dir.join("out");
    let fixtures = fixtures();
    let out = arbor(&[
        "run",
        "--scenario",
        "agentx-mvp",
        "--sessions",
        "2",
        "--duration",
        "2",
        "--arrival",
        "immediate",
        "--out",
        out_dir.to_str().unwrap(),
        "--no-progress",
        fixtures.as_str(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--duration 2") && err.contains("--arrival"),
        "{err}"
    );
    assert!(!out_dir.exists(), "nothing written");
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_short_run_is_stamped_invalid_and_leaves_warmups_out_of_the_metrics() {
    let dir = scratch("agentx-run");
    let out_dir = dir.join("out");
    let fixtures = fixtures();
    let mut args = AGENTX_SHORT.to_vec();
    args.push(fixtures.as_str());
    run_into(&out_dir, &args);
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(s["scenario"], "agentx-mvp");
    assert_eq!(s["submission_valid"], false);
    assert_eq!(
        s["submission_invalid_reasons"],
        serde_json::json!(["unsafe_override"])
    );
    assert_eq!(
        s["config"]["ignore_eos"], true,
        "the recipe sends ignore_eos"
    );
    assert_eq!(s["config"]["policy"]["loop"], true);
    assert_eq!(s["config"]["seed"], 7);

    // Exactly N lanes.
    let lanes = s["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 3);
    let records = jsonl(&out_dir.join("records.jsonl"));
    let mut seen: Vec<u64> = records
        .iter()
        .map(|r| r["lane"].as_u64().unwrap())
        .collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, vec![0, 1, 2]);

    // Warmups are recorded and measured nowhere.
    let c = &s["counts"];
    let warmups = c["warmups"].as_u64().unwrap();
    let planned: u64 = lanes.iter().map(|l| l["warmups"].as_u64().unwrap()).sum();
    assert!(warmups > 0);
    assert_eq!(warmups, planned, "every planned warmup was sent");
    let dispatched = c["dispatched"].as_u64().unwrap();
    assert_eq!(records.len() as u64, dispatched + warmups);
    let ok_records = records.iter().filter(|r| r["status"] == "ok").count() as u64;
    let ok = c["ok"].as_u64().unwrap();
    assert_eq!(ok_records, ok + warmups, "every request succeeded");
    assert_eq!(s["latency"]["ttft"]["count"].as_u64().unwrap(), ok);
    assert_eq!(s["throughput"]["requests"].as_u64().unwrap(), ok);
    if records.iter().any(|r| r.get("warmup").is_some()) {
        let marked = records.iter().filter(|r| r["warmup"] == true).count() as u64;
        assert_eq!(marked, warmups, "the records' own flag agrees");
    }
    // Warmups are the requests before the profiling start.
    let start = s["profiling_start_s"].as_f64().unwrap();
    assert!(start > 0.0 && start <= 0.5 + 1e-9, "{start}");
    let early = records
        .iter()
        .filter(|r| r["dispatched_s"].as_f64().unwrap() < start)
        .count() as u64;
    assert_eq!(early, warmups);
}

#[test]
fn context_overflows_above_one_percent_invalidate_the_run() {
    let dir = scratch("agentx-overflow");
    let out_dir = dir.join("out");
    let fixtures = fixtures();
    let out = arbor(&[
        "run",
        "--scenario",
        "agentx-mvp",
        "--sessions",
        "2",
        "--duration",
        "1",
        "--unsafe-override",
        // t* at each tree's start: no warmups (a failed root warmup
        // aborts a run).
        "--start-window",
        "0:0",
        "--seed",
        "3",
        "--ttft-ms",
        "1",
        "--itl-ms",
        "0.05",
        "--max-model-len",
        "100",
        // Past the pre-flight's context check: the overflow is the point.
        "--allow-overflow",
        "--out",
        out_dir.to_str().unwrap(),
        "--no-progress",
        fixtures.as_str(),
    ]);
    let s = read_json(&out_dir.join("summary.json"));
    // Every prompt overflows a 100-token context: nothing was measured
    // (exit 4), and the stamp says why.
    if s["counts"]["ok"] == 0 {
        assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    } else {
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(s["submission_valid"], false);
    assert_eq!(
        s["submission_invalid_reasons"],
        serde_json::json!(["unsafe_override", "context_overflow_rate_exceeded"])
    );
    assert!(s["errors"]["context_overflow"].as_u64().unwrap() > 0);
}

#[test]
fn the_accelerated_warmup_sends_k_one_token_warmups_per_lane_and_measures_none() {
    let dir = scratch("agentx-cache-warmup");
    let out_dir = dir.join("out");
    let fixtures = fixtures();
    let mut args = AGENTX_SHORT.to_vec();
    args.extend(["--warmup-requests-per-lane", "2", fixtures.as_str()]);
    run_into(&out_dir, &args);
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(s["config"]["policy"]["warmup_requests_per_lane"], 2);
    let run = read_json(&out_dir.join("run.json"));
    assert_eq!(run["config"]["policy"]["warmup_requests_per_lane"], 2);
    let records = jsonl(&out_dir.join("records.jsonl"));
    let lanes = s["lanes"].as_array().unwrap();
    let boundary: Vec<u64> = run["warmups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|lane| {
            lane["turns"]
                .as_object()
                .unwrap()
                .values()
                .map(|t| t.as_array().unwrap().len() as u64)
                .sum()
        })
        .collect();
    for (lane, planned) in lanes.iter().enumerate() {
        let warm: Vec<&Value> = records
            .iter()
            .filter(|r| r["lane"] == lane as u64 && r["warmup"] == true)
            .collect();
        // The boundary warmups, then K more (or as many live turns as
        // the lane's first tree has left after t*).
        assert_eq!(warm.len() as u64, planned["warmups"].as_u64().unwrap());
        let accelerated = warm.len() as u64 - boundary[lane];
        assert!((1..=2).contains(&accelerated), "lane {lane}: {accelerated}");
        // Asked for one token (max_tokens 1; the recipe's ignore_eos has
        // the emulator send exactly that).
        for r in &warm {
            assert_eq!(r["output_tokens"], 1, "{r}");
        }
    }
    assert!(
        lanes
            .iter()
            .zip(&boundary)
            .any(|(l, b)| l["warmups"].as_u64().unwrap() == b + 2),
        "some lane sent all K"
    );
    // Profiling starts once every warmup returned; nothing measured
    // before it, and no warmup in any metric.
    let start = s["profiling_start_s"].as_f64().unwrap();
    for r in &records {
        let done = r["done_s"].as_f64().unwrap_or(0.0);
        if r["warmup"] == true {
            assert!(done <= start + 1e-9, "{r}");
        } else {
            assert!(r["dispatched_s"].as_f64().unwrap() >= start - 1e-9, "{r}");
        }
    }
    let warmups = s["counts"]["warmups"].as_u64().unwrap();
    let marked = records.iter().filter(|r| r["warmup"] == true).count() as u64;
    assert_eq!(warmups, marked);
    let ok = s["counts"]["ok"].as_u64().unwrap();
    assert_eq!(s["latency"]["ttft"]["count"].as_u64().unwrap(), ok);
    assert_eq!(s["throughput"]["requests"].as_u64().unwrap(), ok);
    assert_eq!(
        records
            .iter()
            .filter(|r| r["warmup"] == false && r["status"] == "ok")
            .count() as u64,
        ok
    );
}

#[test]
fn the_accelerated_warmup_takes_a_count_or_a_duration_and_needs_a_start_window() {
    let fixtures = fixtures();
    let both = arbor(&[
        "plan",
        "--sessions",
        "2",
        "--start-window",
        "0.25:0.75",
        "--warmup-requests-per-lane",
        "3",
        "--agentic-cache-warmup-duration",
        "30",
        fixtures.as_str(),
    ]);
    assert_eq!(both.status.code(), Some(2));
    assert!(
        stderr(&both).contains("--warmup-requests-per-lane and --cache-warmup-duration"),
        "{}",
        stderr(&both)
    );
    let no_window = arbor(&[
        "plan",
        "--sessions",
        "2",
        "--cache-warmup-duration",
        "30",
        fixtures.as_str(),
    ]);
    assert_eq!(no_window.status.code(), Some(2));
    assert!(
        stderr(&no_window).contains("needs --start-window"),
        "{}",
        stderr(&no_window)
    );
    // The recipe keeps AIPerf 0.13's default (none) and takes either.
    let v = plan_json(&[]);
    assert!(v["policy"].get("warmup_requests_per_lane").is_none());
    let k = plan_json(&["--warmup-requests-per-lane", "10"]);
    assert_eq!(k["policy"]["warmup_requests_per_lane"], 10);
    let d = plan_json(&["--cache-warmup-duration", "60"]);
    assert_eq!(d["policy"]["cache_warmup_duration_s"], 60.0);
    assert!(k["warmups"].as_u64().unwrap() > v["warmups"].as_u64().unwrap());
}
