//! The batching server model in-process (`--service server:PROFILE.toml`
//! as [`arbor::PlanOptions::service`]): its predictions in the plan's
//! report and the timeline, a bad profile, and a run planned and served
//! under a profile. (The console's lines stay in
//! `cli/tests/it/server_plan.rs`.)

use std::path::{Path, PathBuf};

use arbor::engine::policy::{GapTransform, Policy};
use arbor::options::{EmulatorOptions, PlanOptions, PolicyOptions, RunOptions};
use arbor::Kind;

use crate::util::*;

fn profile(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../profiles")
        .join(name)
}

fn service(name: &str) -> String {
    format!("server:{}", profile(name).display())
}

/// No tool or think time.
fn no_gaps() -> PolicyOptions {
    PolicyOptions {
        tool_time: Some(GapTransform::Zero),
        think_time_pct: Some(Policy::think_pct("0").unwrap()),
        ..PolicyOptions::default()
    }
}

#[test]
fn plan_predicts_latencies_cache_hits_and_series_under_the_server_model() {
    let dir = scratch("server-plan");
    let timeline = dir.join("timeline.jsonl");
    let service = service("roofline-h100-sxm-llama-3.1-8b-bf16.toml");
    let trace = fixture("trace_0277.json");
    let plan = plan_json(&PlanOptions {
        input: inputs(&[trace]),
        service: Some(service.parse().unwrap()),
        timeline: Some(timeline.clone()),
        ..PlanOptions::default()
    });
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
}

#[test]
fn other_service_models_have_no_server_object() {
    let plan = plan_json(&PlanOptions {
        input: inputs(&[fixture("trace_0187.json")]),
        ..PlanOptions::default()
    });
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
    let refused = |service: String, needles: &[&str]| {
        // A bad profile is refused where the service is parsed (the
        // CLI's flag) or where it is read (the plan).
        let message = match service.parse::<arbor::sim::Service>() {
            Err(e) => e.to_string(),
            Ok(service) => {
                let e = arbor::plan::plan(
                    &PlanOptions {
                        input: inputs(&[fixture("trace_0187.json")]),
                        service: Some(service),
                        ..PlanOptions::default()
                    },
                    &arbor::Quiet,
                )
                .unwrap_err();
                assert_eq!(e.kind, Kind::Input, "{e:?}");
                e.message
            }
        };
        for needle in needles {
            assert!(message.contains(needle), "`{needle}` in {message}");
        }
    };
    refused(
        format!("server:{}", bad.display()),
        &[
            "bad.toml",
            "`engine.max_num_seqs`",
            "expected a whole number above 0",
        ],
    );
    refused(
        "server:/no/such.toml".into(),
        &["/no/such.toml: cannot read"],
    );
}

#[test]
fn run_plans_its_planned_side_with_the_server_model() {
    let out = scratch("server-plan-run").join("out");
    let service = service("example.toml");
    arbor::run::run(
        &RunOptions {
            input: inputs(&[fixture("trace_0187.json")]),
            policy: no_gaps(),
            service: Some(service.parse().unwrap()),
            emulator: crate::util::emulator(5_000_000, 1_000_000),
            out: Some(out.clone()),
            ..RunOptions::default()
        },
        &arbor::Quiet,
    )
    .unwrap_or_else(|e| panic!("{e:?}"));
    let planned = read(&out.join("planned.json"));
    assert_eq!(planned["service"], service.as_str());
    assert_eq!(planned["peak_inflight"], 1);
}

#[test]
fn run_without_an_endpoint_serves_under_the_profile() {
    let out = scratch("server-run-profile").join("out");
    let options = RunOptions {
        input: inputs(&[fixture("trace_0187.json")]),
        policy: no_gaps(),
        emulator: EmulatorOptions {
            profile: Some(profile("example.toml")),
            ..EmulatorOptions::default()
        },
        out: Some(out.clone()),
        ..RunOptions::default()
    };
    arbor::run::run(&options, &arbor::Quiet).unwrap_or_else(|e| panic!("{e:?}"));
    let records = jsonl(&out.join("records.jsonl"));
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert!(r["ttft_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    let summary = read(&out.join("summary.json"));
    let settings = summary["config"]["emulator"].as_str().unwrap_or_default();
    assert!(settings.starts_with("--profile ("), "{settings}");
}
