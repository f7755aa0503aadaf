//! `arbor inspect` and `arbor convert` on the real fixtures. Expected
//! figures are computed here from the raw files (`serde_json::Value`), not
//! with arbor's loaders.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use arbor_formats::load::arbor::write_tree;
use arbor_formats::synthetic::SyntheticSpec;
use serde_json::Value;

use crate::util::*;

const WEKA: [&str; 4] = [
    "trace_0187.json",
    "trace_0277.json",
    "trace_0291.json",
    "trace_0504.json",
];

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata")
        .join(rel)
}

fn inspect_json(args: &[&str]) -> Value {
    let mut all = vec!["inspect", "--json"];
    all.extend_from_slice(args);
    let out = arbor(&all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn counts(v: &Value) -> (u64, u64, u64) {
    (
        v["trees"].as_u64().unwrap(),
        v["agents"].as_u64().unwrap(),
        v["turns"].as_u64().unwrap(),
    )
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A Weka request list: (subagent entries, request objects), nested
/// subagents included.
fn weka_walk(requests: &Value) -> (u64, u64) {
    let (mut agents, mut turns) = (0, 0);
    for entry in requests.as_array().unwrap() {
        if entry["type"] == "subagent" {
            let (a, t) = weka_walk(&entry["requests"]);
            agents += 1 + a;
            turns += t;
        } else {
            turns += 1;
        }
    }
    (agents, turns)
}

/// Every request object's (in, out), nested subagents included.
fn weka_tokens(requests: &Value, out: &mut Vec<(u64, u64)>) {
    for entry in requests.as_array().unwrap() {
        if entry["type"] == "subagent" {
            weka_tokens(&entry["requests"], out);
        } else {
            out.push((
                entry["in"].as_u64().unwrap(),
                entry["out"].as_u64().unwrap(),
            ));
        }
    }
}

#[test]
fn inspect_counts_match_the_weka_files() {
    let expected = [
        ("trace_0187.json", (1, 1, 3)),
        ("trace_0277.json", (1, 5, 53)),
        ("trace_0291.json", (1, 3, 32)),
        ("trace_0504.json", (1, 1, 3)),
    ];
    let (mut all_agents, mut all_turns) = (0, 0);
    for (name, want) in expected {
        let path = fixture(name);
        let raw = read_json(&path);
        let (subagents, turns) = weka_walk(&raw["requests"]);
        let from_file = (1, 1 + subagents, turns);
        assert_eq!(from_file, want, "{name}: the file itself");
        all_agents += 1 + subagents;
        all_turns += turns;

        let v = inspect_json(&[path.to_str().unwrap()]);
        assert_eq!(counts(&v), from_file, "{name}");
        assert_eq!(v["inputs"][0]["format"], "weka", "{name}");
        assert_eq!(
            (
                v["inputs"][0]["trees"].as_u64(),
                v["inputs"][0]["turns"].as_u64()
            ),
            (Some(1), Some(turns)),
            "{name}"
        );
        assert_eq!(v["agent_kinds"]["root"], 1, "{name}");
        assert_eq!(v["max_depth"], if subagents > 0 { 1 } else { 0 }, "{name}");

        let mut tokens = Vec::new();
        weka_tokens(&raw["requests"], &mut tokens);
        let max_in = tokens.iter().map(|t| t.0).max().unwrap();
        let max_out = tokens.iter().map(|t| t.1).max().unwrap();
        let sum_in: u64 = tokens.iter().map(|t| t.0).sum();
        assert_eq!(v["isl"]["count"], turns, "{name}");
        assert_eq!(v["isl"]["max"], max_in, "{name}");
        assert_eq!(v["osl"]["max"], max_out, "{name}");
        let mean = v["isl"]["mean"].as_f64().unwrap();
        assert!(
            (mean - sum_in as f64 / turns as f64).abs() < 1e-6,
            "{name}: {mean}"
        );
        assert_eq!(v["recorded_duration"]["count"], turns, "{name}");
        assert_eq!(v["unknown_durations"], 0, "{name}");
        assert_eq!(v["prefix_cache"]["basis"], "hash ids", "{name}");
        assert_eq!(v["problems"], Value::Array(vec![]), "{name}");
    }
    // The whole directory: the sums.
    let dir = testdata("weka-kv-cache-tester");
    let v = inspect_json(&[dir.to_str().unwrap()]);
    assert_eq!(counts(&v), (4, all_agents, all_turns));
}

/// Trees and turns of a JSONL file with one request per line: lines with
/// the same `session_id` are one tree, lines without one are a tree each.
fn sessions_and_lines(path: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut sessions = BTreeSet::new();
    let (mut lone, mut lines) = (0, 0);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        lines += 1;
        match v.get("session_id").and_then(Value::as_str) {
            Some(id) => {
                sessions.insert(id.to_string());
            }
            None => lone += 1,
        }
    }
    (sessions.len() as u64 + lone, lines)
}

#[test]
fn inspect_counts_match_the_mooncake_files() {
    for (name, want) in [
        ("conversation_trace.head400.jsonl", (400, 400)),
        ("synthetic_trace.head300.jsonl", (300, 300)),
    ] {
        let path = testdata("mooncake-fast25").join(name);
        let (trees, turns) = sessions_and_lines(&path);
        assert_eq!((trees, turns), want, "{name}: the file itself");
        let v = inspect_json(&[path.to_str().unwrap()]);
        // No subagents in the format: one agent per tree.
        assert_eq!(counts(&v), (trees, trees, turns), "{name}");
        assert_eq!(v["inputs"][0]["format"], "mooncake", "{name}");
        assert_eq!(v["prefix_cache"]["basis"], "hash ids", "{name}");
    }
}

#[test]
fn inspect_reads_the_dynamo_fixture_with_its_subagents() {
    let path = testdata("dynamo/sample.jsonl");
    let path = path.to_str().unwrap();
    // Counted from the file itself: sessions, parents, request_end lines.
    let text = std::fs::read_to_string(path).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let requests: Vec<&Value> = records
        .iter()
        .filter(|r| r["event_type"] == "request_end")
        .collect();
    let sessions: BTreeSet<&str> = requests
        .iter()
        .filter_map(|r| r["agent_context"]["session_id"].as_str())
        .collect();
    let roots: BTreeSet<&str> = requests
        .iter()
        .filter(|r| r["agent_context"]["parent_session_id"].is_null())
        .filter_map(|r| r["agent_context"]["session_id"].as_str())
        .collect();
    let v = inspect_json(&[path]);
    assert_eq!(
        counts(&v),
        (
            roots.len() as u64,
            sessions.len() as u64,
            requests.len() as u64
        )
    );
    assert_eq!(counts(&v), (2, 4, 9));
    assert_eq!(v["inputs"][0]["format"], "dynamo");
    assert_eq!(v["prefix_cache"]["basis"], "hash ids");
    // The human summary draws the inferred spawns and joins.
    let out = arbor(&["inspect", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let human = String::from_utf8_lossy(&out.stdout);
    for line in [
        "thread-1-explore (blocking, 2 turns), spawned by turn 1, turn 1 joins turn 2",
        "thread-1-test (blocking, 1 turn), spawned by turn 1, turn 0 joins turn 2",
    ] {
        assert!(human.contains(line), "{line:?} missing from:\n{human}");
    }
}

/// `arbor inspect --json` and its human summary of `path`.
fn inspect_both(path: &str) -> (Value, String) {
    let v = inspect_json(&[path]);
    let out = arbor(&["inspect", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    (v, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn assert_lines(human: &str, lines: &[&str]) {
    for line in lines {
        assert!(human.contains(line), "{line:?} missing from:\n{human}");
    }
}

#[test]
fn inspect_reads_the_tracelab_sample_with_its_timing_reconstructed() {
    let path = testdata("tracelab/round_trace.jsonl");
    let path = path.to_str().unwrap();
    // Counted from the file itself: sessions, rounds, tokens.
    let text = std::fs::read_to_string(path).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sessions: BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| r["session_id"].as_str())
        .collect();
    let (v, human) = inspect_both(path);
    let n = rows.len() as u64;
    assert_eq!(
        counts(&v),
        (sessions.len() as u64, sessions.len() as u64, n)
    );
    assert_eq!(counts(&v), (2, 2, 19));
    assert_eq!(v["inputs"][0]["format"], "tracelab");
    assert_eq!(v["prefix_cache"]["basis"], "hash ids");
    // Every round's timing is reconstructed; no parent is inferred (the
    // sanitized sample has no subagent marker, and no Task call).
    let links = &v["links"];
    assert_eq!(links["parents_inferred"], serde_json::json!([]));
    assert_eq!(
        links["timing_reconstructed"],
        serde_json::json!([{"rule": "start at the last input event, end at the last output event", "count": n}])
    );
    assert_lines(
        &human,
        &[
            "parents: 0 from the file, none inferred",
            "timing reconstructed: 19 turns (start at the last input event, end at the last output event)",
        ],
    );
}

#[test]
fn inspect_reads_the_tracelab_subagent_fixture_with_the_parent_inferred() {
    let path = testdata("tracelab/subagents.jsonl");
    let path = path.to_str().unwrap();
    let (v, human) = inspect_both(path);
    // 4 sessions, one of them inside the other's Task call: 3 trees.
    assert_eq!(counts(&v), (3, 4, 10));
    let links = &v["links"];
    assert_eq!(links["parents_from_file"], 0);
    assert_eq!(
        links["parents_inferred"],
        serde_json::json!([{"rule": "timing containment", "count": 1}])
    );
    assert_eq!(
        links["trees"][0]["parents"],
        serde_json::json!([{
            "agent": 1,
            "agent_id": "claude:1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809",
            "source": "inferred",
            "rule": "timing containment"
        }])
    );
    assert_lines(
        &human,
        &[
            "parents: 0 from the file, 1 inferred (timing containment)",
            "claude:1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809 (blocking, 3 turns), spawned by turn 0, turn 2 joins turn 1 [parent inferred: timing containment]",
        ],
    );
}

#[test]
fn inspect_reads_the_otel_genai_fixture_with_its_parents_from_the_file() {
    for name in ["otel-genai/sample.json", "otel-genai/sample.jsonl"] {
        let path = testdata(name);
        let path = path.to_str().unwrap();
        // Counted from the file itself: traces, agent spans (and an agent
        // for a trace without any), chat spans.
        let text = std::fs::read_to_string(path).unwrap();
        let mut spans = Vec::new();
        for doc in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
            for r in doc.unwrap()["resourceSpans"].as_array().unwrap() {
                for s in r["scopeSpans"].as_array().unwrap() {
                    spans.extend(s["spans"].as_array().unwrap().iter().cloned());
                }
            }
        }
        let op = |s: &Value| -> String {
            s["attributes"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == "gen_ai.operation.name")
                .map(|a| a["value"]["stringValue"].as_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let traces: BTreeSet<&str> = spans
            .iter()
            .map(|s| s["traceId"].as_str().unwrap())
            .collect();
        let with_agents: BTreeSet<&str> = spans
            .iter()
            .filter(|s| op(s) == "invoke_agent")
            .map(|s| s["traceId"].as_str().unwrap())
            .collect();
        let agents = spans.iter().filter(|s| op(s) == "invoke_agent").count()
            + (traces.len() - with_agents.len());
        let turns = spans.iter().filter(|s| op(s) == "chat").count();
        let (v, human) = inspect_both(path);
        assert_eq!(
            counts(&v),
            (traces.len() as u64, agents as u64, turns as u64),
            "{name}"
        );
        assert_eq!(counts(&v), (2, 3, 9), "{name}");
        assert_eq!(v["inputs"][0]["format"], "otel-genai", "{name}");
        // The subagent's parent is stated by the parent spans; nothing is
        // reconstructed.
        let links = &v["links"];
        assert_eq!(links["parents_from_file"], 1, "{name}");
        assert_eq!(links["parents_inferred"], serde_json::json!([]), "{name}");
        assert_eq!(
            links["timing_reconstructed"],
            serde_json::json!([]),
            "{name}"
        );
        assert_lines(
            &human,
            &[
                "parents: 1 from the file, none inferred",
                "timing: as recorded, none reconstructed",
                "researcher (blocking, 3 turns), spawned by turn 1, turn 2 joins turn 2",
            ],
        );
        assert!(!human.contains("[parent inferred"), "{human}");
    }
}

#[test]
fn inspect_reads_the_aiperf_graph_fixture_with_its_branches() {
    let path = testdata("aiperf-graph/sample.dag.jsonl");
    let path = path.to_str().unwrap();
    // Counted from the file itself: roots are the conversations no branch
    // names; every naming instantiates the named conversation (and what
    // it names) once more.
    let text = std::fs::read_to_string(path).unwrap();
    let rows: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let by_id: std::collections::BTreeMap<&str, &Value> = rows
        .iter()
        .map(|r| (r["session_id"].as_str().unwrap(), r))
        .collect();
    let named = |row: &Value| -> Vec<String> {
        let mut out: Vec<String> = row["pre_session_spawns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        for turn in row["turns"].as_array().unwrap() {
            for s in turn["spawns"].as_array().into_iter().flatten() {
                match s.as_str() {
                    Some(id) => out.push(id.to_string()),
                    None => out.extend(
                        s["children"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|c| c.as_str().unwrap().to_string()),
                    ),
                }
            }
            for f in turn["forks"].as_array().into_iter().flatten() {
                out.push(
                    f.as_str()
                        .unwrap_or_else(|| f["child"].as_str().unwrap())
                        .to_string(),
                );
            }
        }
        out
    };
    let referenced: BTreeSet<String> = rows.iter().flat_map(named).collect();
    let roots: Vec<&str> = by_id
        .keys()
        .copied()
        .filter(|id| !referenced.contains(*id))
        .collect();
    fn walk(
        id: &str,
        by_id: &std::collections::BTreeMap<&str, &Value>,
        named: &dyn Fn(&Value) -> Vec<String>,
    ) -> (u64, u64) {
        let row = by_id[id];
        let mut agents = 1;
        let mut turns = row["turns"].as_array().unwrap().len() as u64;
        for child in named(row) {
            let (a, t) = walk(&child, by_id, named);
            agents += a;
            turns += t;
        }
        (agents, turns)
    }
    let (agents, turns) = roots.iter().fold((0, 0), |(a, t), r| {
        let (ra, rt) = walk(r, &by_id, &named);
        (a + ra, t + rt)
    });
    let v = inspect_json(&[path]);
    assert_eq!(counts(&v), (roots.len() as u64, agents, turns));
    assert_eq!(counts(&v), (2, 7, 12));
    assert_eq!(v["inputs"][0]["format"], "aiperf-graph");
    assert_eq!(v["tokens_estimated"], 12);
    assert_eq!(v["prefix_cache"]["basis"], "text blocks");
    // The human summary draws the branches as the file states them.
    let out = arbor(&["inspect", path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let human = String::from_utf8_lossy(&out.stdout);
    for line in [
        "plan-1-explore (blocking, 2 turns), spawned by turn 1, turn 1 joins turn 2",
        "plan-1-test (blocking, 1 turn), spawned by turn 1, turn 0 joins turn 3",
        "plan-1-wrap (blocking, 1 turn), spawned by turn 3",
        "chat-2-title (background, 1 turn)",
        "edges: 11 from the file",
        "timing reconstructed: 12 turns",
    ] {
        assert!(human.contains(line), "{line:?} missing from:\n{human}");
    }
}

#[test]
fn inspect_counts_match_the_lmcache_files() {
    for (name, want) in [
        ("miniswe/189f0222310bd8eee310f204e91b9c84.jsonl", 6),
        ("miniswe/ae5bc34ffaf6e553cc320e6499db0d47.jsonl", 8),
        (
            "magagent/e58895aeb237c2865519206612cf0c6c.openai_chat.jsonl",
            11,
        ),
        ("taubench/22ffaaf33001ec7197ccd612e03d428e.jsonl", 6),
    ] {
        let path = testdata("lmcache-agent-trace").join(name);
        let (trees, turns) = sessions_and_lines(&path);
        assert_eq!((trees, turns), (1, want), "{name}: the file itself");
        let v = inspect_json(&[path.to_str().unwrap()]);
        assert_eq!(counts(&v), (1, 1, turns), "{name}");
        assert_eq!(v["inputs"][0]["format"], "lmcache", "{name}");
        // Text without token counts: every turn estimated, text blocks.
        assert_eq!(v["tokens_estimated"], turns, "{name}");
        assert_eq!(v["prefix_cache"]["basis"], "text blocks", "{name}");
    }
}

/// Recorded intervals `[start, end)` in ns of every request of a
/// kv-cache-tester Weka file: a subagent marker's `t` is its completion,
/// its spawn `t - duration_ms/1000`, inner times relative to the spawn;
/// a request's service time is `api_time`.
fn weka_intervals(requests: &Value, base: u64, out: &mut Vec<(u64, u64)>) {
    let ns = |v: &Value| (v.as_f64().unwrap() * 1e9).round() as u64;
    for entry in requests.as_array().unwrap() {
        if entry["type"] == "subagent" {
            let spawn = base + ns(&entry["t"]) - entry["duration_ms"].as_u64().unwrap() * 1_000_000;
            weka_intervals(&entry["requests"], spawn, out);
        } else {
            let start = base + ns(&entry["t"]);
            out.push((start, start + ns(&entry["api_time"])));
        }
    }
}

/// Most intervals overlapping at once, and the first instant of it.
fn peak(intervals: &[(u64, u64)]) -> (u64, u64) {
    let mut best = (0, 0);
    for &(at, _) in intervals {
        let n = intervals
            .iter()
            .filter(|&&(s, e)| s <= at && at < e)
            .count() as u64;
        if n > best.0 || (n == best.0 && at < best.1) {
            best = (n, at);
        }
    }
    best
}

#[test]
fn recorded_peak_concurrency_matches_the_files() {
    for name in WEKA {
        let raw = read_json(&fixture(name));
        let mut intervals = Vec::new();
        weka_intervals(&raw["requests"], 0, &mut intervals);
        let (want, at) = peak(&intervals);
        let v = inspect_json(&[fixture(name).to_str().unwrap()]);
        assert_eq!(v["peak_concurrency"], want, "{name}");
        assert_eq!(secs_to_ns(&v["peak_concurrency_at_s"]), at, "{name}: when");
        let end = intervals.iter().map(|i| i.1).max().unwrap();
        assert_eq!(secs_to_ns(&v["recorded_span_s"]), end, "{name}: span");
        if name == "trace_0277.json" {
            // The three Explore subagents, spawned together at 19.474 s.
            assert_eq!(want, 3);
            assert_eq!(at, 19_474_000_000);
        }
    }
}

#[test]
fn human_summary_names_every_figure() {
    let out = arbor(&["inspect", fixture("trace_0277.json").to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "arbor inspect: ",
        "(weka)",
        "subagent times relative",
        "1 trees, 5 agents (1 root, 4 blocking, 0 background), max depth 1, 53 turns",
        "ISL (tokens)",
        "OSL (tokens)",
        "gaps ",
        "durations       53 known, 0 unknown",
        "recorded span   828.160 s",
        "peak in flight  3 turns at 19.474 s",
        "adjustments",
        "prefix cache",
        "problems        none",
    ] {
        assert!(text.contains(needle), "missing `{needle}`:\n{text}");
    }
}

/// Writes native lines to a scratch file.
fn native(dir: &Path, name: &str, lines: &[String]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path.to_str().unwrap().to_string()
}

fn ids_tree(id: &str, arrival_ns: u64, scope: &str) -> String {
    format!(
        r#"{{"arbor":1,"id":"{id}","arrival_ns":{arrival_ns},"block_size":64,"hash_scope":"{scope}","agents":[{{"id":"root","kind":"root","turns":[{{"start_ns":0,"duration_ns":5,"isl":128,"osl":1,"hash_ids":[1,2]}},{{"start_ns":10,"duration_ns":5,"isl":192,"osl":1,"hash_ids":[1,2,3]}}]}}]}}"#
    )
}

#[test]
fn cache_hit_ratio_follows_the_hash_scope() {
    let dir = scratch("inspect-scope");
    // Per tree: 5 blocks, 2 hits. Local ids are never shared by trees;
    // global ones are: tree b hits all 5.
    let local = native(
        &dir,
        "local.jsonl",
        &[ids_tree("a", 0, "local"), ids_tree("b", 100, "local")],
    );
    let v = inspect_json(&[&local]);
    assert_eq!(v["prefix_cache"]["blocks"], 10);
    assert_eq!(v["prefix_cache"]["hits"], 4);
    assert_eq!(v["prefix_cache"]["hit_ratio"], 0.4);
    let global = native(
        &dir,
        "global.jsonl",
        &[ids_tree("a", 0, "global"), ids_tree("b", 100, "global")],
    );
    let v = inspect_json(&[&global]);
    assert_eq!(v["prefix_cache"]["hits"], 7);
    assert_eq!(v["prefix_cache"]["hit_ratio"], 0.7);
}

#[test]
fn unjoined_children_are_problems_with_their_place() {
    let dir = scratch("inspect-unjoined");
    // The blocking child ends at 100 ns, after the root's last turn starts.
    let path = native(
        &dir,
        "t.jsonl",
        &[r#"{"arbor":1,"id":"t","agents":[{"id":"root","kind":"root","turns":[{"start_ns":0,"duration_ns":5,"isl":1,"osl":1},{"start_ns":20,"duration_ns":5,"isl":1,"osl":1}]},{"id":"kid","parent":0,"kind":"blocking","turns":[{"start_ns":10,"duration_ns":90,"isl":1,"osl":1}]}]}"#.to_string()],
    );
    let v = inspect_json(&[&path]);
    assert_eq!(v["adjustments"]["unjoined_children"], 1);
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    let place = problems[0]["place"].as_str().unwrap();
    assert!(
        place.contains("t.jsonl") && place.contains("`t`") && place.contains("`kid`"),
        "{place}"
    );
    assert!(problems[0]["message"]
        .as_str()
        .unwrap()
        .contains("replayed as background"));
    assert_eq!(v["max_depth"], 1);
    assert_eq!(v["agent_kinds"]["blocking"], 1);
}

/// `arbor plan --timeline` of some inputs with some flags.
fn timeline(inputs: &[&str], flags: &[&str], out: &Path) -> Vec<u8> {
    let mut args = vec!["plan", "--timeline", out.to_str().unwrap()];
    args.extend_from_slice(flags);
    args.extend_from_slice(inputs);
    let run = arbor(&args);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
    std::fs::read(out).unwrap()
}

fn convert(inputs: &[&str], output: &Path) {
    let mut args = vec!["convert", "--to", "arbor", "-o", output.to_str().unwrap()];
    args.extend_from_slice(inputs);
    let run = arbor(&args);
    assert!(run.status.success(), "{args:?}: {}", stderr(&run));
}

/// An inspection without its `inputs` (paths and conventions differ).
fn figures(mut v: Value) -> Value {
    v.as_object_mut().unwrap().remove("inputs");
    v
}

const FLAG_SETS: [&[&str]; 3] = [
    &[],
    &["--service", "recorded", "--overlap-tolerance", "0"],
    &[
        "--tool-time",
        "pct:50",
        "--arrival",
        "poisson:0.2",
        "--copies",
        "2",
        "--stagger",
        "random:30",
        "--max-inflight",
        "3",
        "--idle-gap-cap",
        "20",
        "--service",
        "throughput:5000:60",
        "--seed",
        "5",
    ],
];

#[test]
fn convert_round_trip_gives_identical_timelines() {
    let dir = scratch("convert-weka");
    let mut cases: Vec<(String, String)> = WEKA
        .iter()
        .map(|n| (n.to_string(), fixture(n).to_str().unwrap().to_string()))
        .collect();
    let whole = testdata("weka-kv-cache-tester");
    cases.push(("directory".into(), whole.to_str().unwrap().to_string()));
    for (name, input) in &cases {
        let converted = dir.join(format!("{name}.arbor.jsonl"));
        convert(&[input], &converted);
        let lines = jsonl(&converted);
        assert!(lines.iter().all(|l| l["arbor"] == 1), "{name}");
        let converted = converted.to_str().unwrap();
        for (k, flags) in FLAG_SETS.iter().enumerate() {
            let a = timeline(&[input], flags, &dir.join(format!("{name}.{k}.a")));
            let b = timeline(&[converted], flags, &dir.join(format!("{name}.{k}.b")));
            assert!(!a.is_empty());
            assert_eq!(
                String::from_utf8(a).unwrap(),
                String::from_utf8(b).unwrap(),
                "{name} flags {flags:?}"
            );
        }
        assert_eq!(
            figures(inspect_json(&[input])),
            figures(inspect_json(&[converted])),
            "{name}: the same inspection"
        );
    }
}

#[test]
fn convert_round_trip_of_a_generated_workload() {
    let dir = scratch("convert-synth");
    let spec = "trees=6,turns=10,depth=2,spawn=0.4,fanout=3,background=0.3,overlap=0.2,unknown=0.1,zero_gap=0.2,hash_ids=true,seed=21";
    let workload = spec.parse::<SyntheticSpec>().unwrap().generate();
    let written = dir.join("generated.jsonl");
    let mut bytes = Vec::new();
    for tree in &workload.trees {
        write_tree(tree, &mut bytes).unwrap();
    }
    std::fs::write(&written, bytes).unwrap();
    let converted = dir.join("converted.jsonl");
    convert(&[written.to_str().unwrap()], &converted);
    assert_eq!(jsonl(&converted).len(), 6);
    for (k, flags) in FLAG_SETS.iter().enumerate() {
        let mut with_spec = vec!["--synthetic", spec];
        with_spec.extend_from_slice(flags);
        let a = timeline(&[], &with_spec, &dir.join(format!("{k}.a")));
        let b = timeline(
            &[written.to_str().unwrap()],
            flags,
            &dir.join(format!("{k}.b")),
        );
        let c = timeline(
            &[converted.to_str().unwrap()],
            flags,
            &dir.join(format!("{k}.c")),
        );
        assert!(!a.is_empty());
        assert!(a == b, "flags {flags:?}: the generator and its file differ");
        assert!(b == c, "flags {flags:?}: conversion changed the plan");
    }
}

#[test]
fn inspect_bad_input_exits_2_naming_the_file() {
    expect_exit_2(
        &["inspect", "/nonexistent/trace.json"],
        &["/nonexistent/trace.json"],
    );
    let truncated = testdata("bad/weka/truncated.json");
    expect_exit_2(
        &["inspect", truncated.to_str().unwrap()],
        &["truncated.json", "line 3"],
    );
    let negative = testdata("bad/weka/negative_t.json");
    expect_exit_2(
        &["inspect", "--json", negative.to_str().unwrap()],
        &["negative_t.json", "requests[1]"],
    );
    expect_exit_2(
        &[
            "inspect",
            "--format",
            "parquet",
            fixture("trace_0277.json").to_str().unwrap(),
        ],
        &["--format", "parquet", "weka"],
    );
    expect_exit_2(
        &[
            "inspect",
            "--overlap-tolerance=-1",
            fixture("trace_0277.json").to_str().unwrap(),
        ],
        &["--overlap-tolerance"],
    );
    // No input at all is a usage error.
    let out = arbor(&["inspect"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn convert_bad_input_exits_2_and_leaves_no_file() {
    let dir = scratch("convert-bad");
    let output = dir.join("out.jsonl");
    let good = fixture("trace_0277.json");
    let bad = testdata("bad/weka/string_in.json");
    expect_exit_2(
        &[
            "convert",
            "--to",
            "arbor",
            "-o",
            output.to_str().unwrap(),
            good.to_str().unwrap(),
            bad.to_str().unwrap(),
        ],
        &["string_in.json", "requests[0].in"],
    );
    assert!(!output.exists(), "a failed conversion leaves no output");
    // Overwriting an input is refused before anything is written.
    let copy = dir.join("copy.json");
    std::fs::copy(&good, &copy).unwrap();
    expect_exit_2(
        &[
            "convert",
            "--to",
            "arbor",
            "-o",
            copy.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
        &["copy.json", "overwrite"],
    );
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&good).unwrap());
}

#[test]
fn convert_refuses_a_format_it_does_not_write() {
    let dir = scratch("convert-to");
    let output = dir.join("out.parquet");
    expect_exit_2(
        &[
            "convert",
            "--to",
            "parquet",
            "-o",
            output.to_str().unwrap(),
            fixture("trace_0277.json").to_str().unwrap(),
        ],
        &["--to", "expected one of arbor, weka", "parquet"],
    );
    assert!(!output.exists());
}
