//! `arbor plan` on the real fixtures and on synthetic workloads.

use std::collections::BTreeMap;

use arbor_formats::synthetic::SyntheticSpec;
use serde_json::Value;

use crate::util::*;

const FIXTURES: [&str; 4] = [
    "trace_0187.json",
    "trace_0277.json",
    "trace_0291.json",
    "trace_0504.json",
];

/// Recorded start of every turn of a Weka file, in ns, keyed by
/// (agent id, index in agent), computed independently of arbor's loader:
/// a subagent marker's `t` is its completion, so its spawn is
/// `t - duration_ms/1000` and inner times are relative to the spawn.
fn recorded_starts(path: &std::path::Path) -> BTreeMap<(String, u64), u64> {
    let trace: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let ns = |v: &Value| (v.as_f64().unwrap() * 1e9).round() as u64;
    let mut out = BTreeMap::new();
    let root = trace["id"].as_str().unwrap().to_string();
    let mut root_index = 0;
    for entry in trace["requests"].as_array().unwrap() {
        if entry["type"] == "subagent" {
            let spawn = ns(&entry["t"]) - entry["duration_ms"].as_u64().unwrap() * 1_000_000;
            let id = entry["agent_id"].as_str().unwrap().to_string();
            for (i, inner) in entry["requests"].as_array().unwrap().iter().enumerate() {
                out.insert((id.clone(), i as u64), spawn + ns(&inner["t"]));
            }
        } else {
            out.insert((root.clone(), root_index), ns(&entry["t"]));
            root_index += 1;
        }
    }
    out
}

#[test]
fn identity_property_holds_on_every_fixture() {
    let dir = scratch("identity");
    for name in FIXTURES {
        let timeline = dir.join(format!("{name}.jsonl"));
        let out = arbor(&[
            "plan",
            "--service",
            "recorded",
            "--arrival",
            "recorded",
            "--overlap-tolerance",
            "0",
            "--timeline",
            timeline.to_str().unwrap(),
            fixture(name).to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        let expected = recorded_starts(&fixture(name));
        let lines = jsonl(&timeline);
        assert_eq!(lines.len(), expected.len(), "{name}: one line per turn");
        for line in lines {
            let key = (
                line["agent"].as_str().unwrap().to_string(),
                line["turn"].as_u64().unwrap(),
            );
            let want = expected[&key];
            assert_eq!(secs_to_ns(&line["start_s"]), want, "{name} {key:?}");
            assert_eq!(
                line["start_s"], line["eligible_s"],
                "{name} {key:?}: no lateness"
            );
        }
    }
}

#[test]
fn identity_property_holds_on_generated_workloads() {
    let dir = scratch("identity-synth");
    for spec in [
        "trees=5,turns=12,depth=2,spawn=0.4,fanout=4,background=0.3,seed=11",
        "trees=4,turns=10,depth=1,spawn=0.5,overlap=0.3,unknown=0.2,zero_gap=0.3,seed=12",
    ] {
        let timeline = dir.join("t.jsonl");
        let out = arbor(&[
            "plan",
            "--synthetic",
            spec,
            "--overlap-tolerance",
            "0",
            "--timeline",
            timeline.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{spec}: {}", stderr(&out));
        let workload = spec.parse::<SyntheticSpec>().unwrap().generate();
        let mut expected = BTreeMap::new();
        for tree in &workload.trees {
            for agent in &tree.agents {
                for (i, turn) in agent.turns.iter().enumerate() {
                    expected.insert(
                        (tree.id.clone(), agent.id.clone(), i as u64),
                        tree.arrival + turn.start,
                    );
                }
            }
        }
        let lines = jsonl(&timeline);
        assert_eq!(lines.len(), expected.len());
        for line in lines {
            let key = (
                line["tree"].as_str().unwrap().to_string(),
                line["agent"].as_str().unwrap().to_string(),
                line["turn"].as_u64().unwrap(),
            );
            assert_eq!(
                secs_to_ns(&line["start_s"]),
                expected[&key],
                "{spec} {key:?}"
            );
        }
    }
}

#[test]
fn same_seed_gives_byte_identical_timelines() {
    let dir = scratch("determinism");
    let run = |seed: &str, file: &str| {
        let path = dir.join(file);
        let out = arbor(&[
            "plan",
            "--synthetic",
            "trees=20,turns=15,depth=2,spawn=0.3,seed=4",
            "--arrival",
            "poisson:0.5",
            "--copies",
            "2",
            "--stagger",
            "random:30",
            "--max-inflight",
            "8",
            "--idle-gap-cap",
            "5",
            "--service",
            "throughput:5000:60",
            "--seed",
            seed,
            "--timeline",
            path.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        (std::fs::read(path).unwrap(), stdout(&out))
    };
    let (a, summary_a) = run("7", "a.jsonl");
    let (b, summary_b) = run("7", "b.jsonl");
    let (c, _) = run("8", "c.jsonl");
    assert!(!a.is_empty());
    assert_eq!(a, b, "same seed, same bytes");
    assert_eq!(summary_a, summary_b);
    assert_ne!(a, c, "the seed drives arrivals and stagger");
}

#[test]
fn json_summary_of_the_bundled_sample() {
    let out = arbor(&["plan", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["trees"], 4);
    assert_eq!(v["agents"], 10);
    assert_eq!(v["turns"], 91);
    assert_eq!(v["seed"], 0);
    for key in [
        "makespan_s",
        "peak_inflight",
        "peak_inflight_at_s",
        "peak_live_trees",
        "idle_shifts",
        "idle_skipped_s",
    ] {
        assert!(v[key].is_number(), "{key} missing: {v}");
    }
    // All four traces arrive at 0 and the longest (0504) ends after
    // 3075 s + 3.38 s.
    assert_eq!(v["peak_live_trees"], 4);
    assert!(
        (v["makespan_s"].as_f64().unwrap() - 3078.38).abs() < 1e-6,
        "{v}"
    );
    // trace_0277 runs three Explore subagents at once.
    assert!(v["peak_inflight"].as_u64().unwrap() >= 3);
}

#[test]
fn human_summary_names_the_key_figures() {
    let out = arbor(&["plan", "--idle-gap-cap", "10", "--max-inflight", "2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "makespan",
        "peak in flight",
        "peak live trees",
        "idle-gap shifts",
        "adjustments",
        "queue wait",
    ] {
        assert!(text.contains(needle), "missing {needle}:\n{text}");
    }
    // The 3058 s think gap of trace_0504 is cut to 10 s.
    assert!(!text.contains("idle-gap shifts 0 "), "{text}");
}

#[test]
fn closed_loop_reports_lanes() {
    let out = arbor(&["plan", "--sessions", "3", "--json", "--seed", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lanes = v["lanes"].as_array().unwrap();
    assert_eq!(lanes.len(), 3);
    let shares: u64 = lanes.iter().map(|l| l["share"].as_u64().unwrap()).sum();
    assert_eq!(shares, 4);
    assert!(lanes.iter().all(|l| l["dry_at_s"].is_number()));
    assert!(v["peak_live_trees"].as_u64().unwrap() <= 3);
}

#[test]
fn native_format_with_explicit_edges_plans_as_stated() {
    // Turn 1 may start 3 ns after turn 0 is *sent* (a Start edge), though
    // it was recorded at 10 ns: explicit edges are taken as stated.
    let dir = scratch("native");
    let path = dir.join("edges.jsonl");
    std::fs::write(
        &path,
        r#"{"arbor":1,"id":"t","agents":[{"id":"root","kind":"root","turns":[{"start_ns":0,"duration_ns":5,"isl":1,"osl":1},{"start_ns":10,"isl":1,"osl":1}]}],"edges":[{"from":[0,0],"to":[0,1],"anchor":"start","gap_ns":3}]}"#,
    )
    .unwrap();
    let timeline = dir.join("t.jsonl");
    let out = arbor(&[
        "plan",
        path.to_str().unwrap(),
        "--timeline",
        timeline.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = jsonl(&timeline);
    assert_eq!(secs_to_ns(&lines[1]["start_s"]), 3);
}

/// Recorded start (arrival + start, ns) of every turn of a native file,
/// keyed by (tree, agent, turn).
fn native_starts(path: &std::path::Path) -> BTreeMap<(String, String, u64), u64> {
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let tree: Value = serde_json::from_str(line).unwrap();
        let arrival = tree["arrival_ns"].as_u64().unwrap();
        for agent in tree["agents"].as_array().unwrap() {
            for (i, turn) in agent["turns"].as_array().unwrap().iter().enumerate() {
                let key = (
                    tree["id"].as_str().unwrap().to_string(),
                    agent["id"].as_str().unwrap().to_string(),
                    i as u64,
                );
                out.insert(key, arrival + turn["start_ns"].as_u64().unwrap());
            }
        }
    }
    out
}

#[test]
fn identity_property_holds_on_every_format() {
    // Each input is converted to the native form (whose recorded times are
    // plain integers) and planned with the identity settings: every turn
    // must be sent at its recorded start, to the nanosecond.
    let dir = scratch("identity-formats");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    let inputs = [
        "mooncake-fast25/conversation_trace.head400.jsonl",
        "mooncake-fast25/synthetic_trace.head300.jsonl",
        "lmcache-agent-trace/miniswe",
        "lmcache-agent-trace/magagent",
        "lmcache-agent-trace/taubench",
        "abench/sample.jsonl.zst",
        "openai-log/sample.jsonl",
        "weka-kv-cache-tester",
        "tracelab/round_trace.jsonl",
        "tracelab/subagents.jsonl",
        "otel-genai/sample.json",
        "otel-genai/sample.jsonl",
    ];
    for (i, input) in inputs.iter().enumerate() {
        let input = root.join(input);
        let native = dir.join(format!("{i}.native.jsonl"));
        let out = arbor(&[
            "convert",
            input.to_str().unwrap(),
            "--to",
            "arbor",
            "-o",
            native.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}: {}",
            input.display(),
            stderr(&out)
        );
        let timeline = dir.join(format!("{i}.timeline.jsonl"));
        let out = arbor(&[
            "plan",
            input.to_str().unwrap(),
            "--service",
            "recorded",
            "--arrival",
            "recorded",
            "--overlap-tolerance",
            "0",
            "--timeline",
            timeline.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}: {}",
            input.display(),
            stderr(&out)
        );
        let expected = native_starts(&native);
        let lines = jsonl(&timeline);
        assert_eq!(lines.len(), expected.len(), "{}", input.display());
        for line in lines {
            let key = (
                line["tree"].as_str().unwrap().to_string(),
                line["agent"].as_str().unwrap().to_string(),
                line["turn"].as_u64().unwrap(),
            );
            assert_eq!(
                secs_to_ns(&line["start_s"]),
                expected[&key],
                "{} {key:?}",
                input.display()
            );
        }
    }
}
