//! `arbor plan --service server:PROFILE.toml`: the batching server model's
//! predictions in the console, `--json` and the timeline; a bad profile.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::*;

fn profile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../profiles")
        .join(name)
}

fn service(name: &str) -> String {
    format!("server:{}", profile(name).display())
}

#[test]
fn plan_predicts_latencies_cache_hits_and_series_under_the_server_model() {
    let dir = scratch("server-plan");
    let timeline = dir.join("timeline.jsonl");
    let service = service("roofline-h100-sxm-llama-3.1-8b-bf16.toml");
    let trace = fixture("trace_0277.json");
    let out = arbor(&[
        "plan",
        trace.to_str().unwrap(),
        "--service",
        &service,
        "--json",
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let plan: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let server = &plan["server"];
    assert_eq!(server["origin"], "roofline");
    assert_eq!(server["ttft"]["count"], 53);
    let turns = server["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 53);
    // A conversation reuses its prefix: most prompt tokens hit.
    let hit = server["prefix_hit_tokens"].as_u64().unwrap();
    let prompt = server["prompt_tokens"].as_u64().unwrap();
    assert!(hit * 2 > prompt, "{hit} of {prompt}");
    let cached: u64 = turns
        .iter()
        .map(|t| t["cached_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(cached, hit);
    for t in turns {
        assert!(t["ttft_s"].as_f64().unwrap() > 0.0);
        assert!(t["e2e_s"].as_f64().unwrap() >= t["ttft_s"].as_f64().unwrap());
    }
    let series = &server["series"];
    let bins = series["t_s"].as_array().unwrap().len();
    assert!((100..=400).contains(&bins), "{bins} bins");
    assert_eq!(series["kv_blocks_used_max"].as_array().unwrap().len(), bins);
    let binned: u64 = series["prefix_hit_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(binned, hit);
    // The timeline carries the same per-turn predictions.
    let lines = jsonl(&timeline);
    assert_eq!(lines.len(), 53);
    let timeline_cached: u64 = lines
        .iter()
        .map(|l| l["cached_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(timeline_cached, hit);
    // The console shows the percentiles.
    let out = arbor(&["plan", trace.to_str().unwrap(), "--service", &service]);
    let text = stdout(&out);
    assert!(
        text.contains("server model    roofline: H100 SXM"),
        "{text}"
    );
    assert!(text.contains("    ttft          p50 "), "{text}");
}

#[test]
fn other_service_models_have_no_server_object() {
    let trace = fixture("trace_0187.json");
    let out = arbor(&["plan", trace.to_str().unwrap(), "--json"]);
    let plan: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(plan.get("server").is_none());
}

#[test]
fn a_bad_profile_is_refused_naming_the_file_and_key() {
    let dir = scratch("server-plan-bad");
    let bad = dir.join("bad.toml");
    let text = std::fs::read_to_string(profile("example.toml"))
        .unwrap()
        .replace("max_num_seqs = 16", "max_num_seqs = 0");
    std::fs::write(&bad, text).unwrap();
    let trace = fixture("trace_0187.json");
    let service = format!("server:{}", bad.display());
    expect_exit_2(
        &["plan", trace.to_str().unwrap(), "--service", &service],
        &[
            "bad.toml",
            "`engine.max_num_seqs`",
            "expected a whole number above 0",
        ],
    );
    expect_exit_2(
        &[
            "plan",
            trace.to_str().unwrap(),
            "--service",
            "server:/no/such.toml",
        ],
        &["/no/such.toml: cannot read"],
    );
}

#[test]
fn run_plans_its_planned_side_with_the_server_model() {
    let out_dir = scratch("server-plan-run").join("out");
    let trace = fixture("trace_0187.json");
    let service = service("example.toml");
    let out = arbor(&[
        "run",
        trace.to_str().unwrap(),
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--service",
        &service,
        "--out",
        out_dir.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let planned: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("planned.json")).unwrap())
            .unwrap();
    assert_eq!(planned["service"], service.as_str());
    assert_eq!(planned["peak_inflight"], 1);
}

#[test]
fn run_without_an_endpoint_serves_under_the_profile() {
    let out_dir = scratch("server-run-profile").join("out");
    let trace = fixture("trace_0187.json");
    let profile = profile("example.toml");
    let out = arbor(&[
        "run",
        trace.to_str().unwrap(),
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--profile",
        profile.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--no-progress",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let records: Vec<Value> = std::fs::read_to_string(out_dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["ttft_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let settings = summary["config"]["emulator"].as_str().unwrap_or_default();
    assert!(settings.starts_with("--profile ("), "{settings}");
    // The timing flags say something else: refused together.
    let out = arbor(&[
        "run",
        trace.to_str().unwrap(),
        "--profile",
        profile.to_str().unwrap(),
        "--ttft-ms",
        "20",
        "--out",
        scratch("server-run-profile-conflict")
            .join("out")
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
