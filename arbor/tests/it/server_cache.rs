//! Prefix cache, issue 15's must-show, in-process: against the built-in
//! emulator under a profile, the plan's predicted cache-hit tokens of
//! every turn equal the `cached_tokens` the emulator reported for it,
//! exactly.

use std::collections::BTreeMap;

use arbor::engine::policy::{GapTransform, Policy};
use arbor::options::{EmulatorOptions, PlanOptions, PolicyOptions, RunOptions};

use crate::util::*;

/// A fast engine with a pool far larger than the workload: 262,144
/// blocks of 16 tokens (4.2M tokens) against 2.6M prompt tokens sent in
/// all, so no block is ever handed out twice and nothing is evicted.
const PROFILE: &str = r#"
label = "server_cache test: a fast engine with no eviction"
origin = "example"

[engine]
max_num_batched_tokens = 8192
max_num_seqs = 16
block_size = 16
num_gpu_blocks = 262144
policy = "vllm"

[step]
constant_ns = 100000.0
per_seq_ns = 5000.0
per_token_ns = 2000.0
knee_tokens = 256
per_token_above_knee_ns = 0.0
per_decode_context_token_ns = 0.01
per_prefill_attention_ns = 0.0001

[overhead]
arrival_ns = 1000000
departure_ns = 500000
"#;

/// trace_0277: a session of 9 requests and 4 subagents (3 spawned
/// together, one later), 53 requests sharing prefixes within and across
/// agents.
///
/// Why equality is exact by construction, not by luck:
/// - the keys: the emulator keys the chat body it receives and the plan
///   keys the text the client builds for the turn with the same function
///   (`arbor_sim::server::keys`; the `prefix_keys` property checks the two
///   agree on every turn, marker or not);
/// - the order: at most one request in flight with no tool or think time
///   makes every request wait for the previous one's end, and every turn
///   becomes eligible at a completion, never at a timer, so the live run
///   sends the requests in the plan's order whatever the real durations
///   are; each request's prompt blocks are in the cache before the next
///   one arrives;
/// - the pool: no eviction (see [`PROFILE`]), so what is cached when a
///   request arrives is every full prompt block sent before it.
#[test]
fn predicted_cache_hits_equal_the_emulators_cached_tokens_per_turn() {
    let dir = scratch("server-cache");
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    let trace = fixture("trace_0277.json");
    let shape = PolicyOptions {
        tool_time: Some(GapTransform::Zero),
        think_time_pct: Some(Policy::think_pct("0").unwrap()),
        max_inflight: Some(1),
        ..PolicyOptions::default()
    };
    let plan = plan_json(&PlanOptions {
        input: inputs(std::slice::from_ref(&trace)),
        policy: shape.clone(),
        service: Some(format!("server:{}", profile.display()).parse().unwrap()),
        ..PlanOptions::default()
    });
    assert_eq!(plan["server"]["preemptions"], 0);
    let predicted: BTreeMap<u64, (u64, u64, u64)> = plan["server"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let field = |k: &str| t[k].as_u64().unwrap();
            (
                field("request"),
                (field("tree"), field("turn"), field("cached_tokens")),
            )
        })
        .collect();
    assert_eq!(predicted.len(), 53);

    let out = dir.join("out");
    arbor::run::run(
        &RunOptions {
            input: inputs(&[trace]),
            policy: shape,
            emulator: EmulatorOptions {
                profile: Some(profile),
                ..EmulatorOptions::default()
            },
            out: Some(out.clone()),
            ..RunOptions::default()
        },
        &arbor::Quiet,
    )
    .unwrap();
    let records = jsonl(&out.join("records.jsonl"));
    assert_eq!(records.len(), predicted.len());
    let root = records
        .iter()
        .find(|r| r["request"] == 0)
        .map(|r| r["agent"].clone())
        .unwrap();
    let mut hits = 0;
    let mut subagent_hits = 0;
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        let request = r["request"].as_u64().unwrap();
        let (tree, _, cached) = predicted[&request];
        assert_eq!(r["tree_index"].as_u64(), Some(tree), "{r}");
        assert_eq!(
            r["cached_tokens"].as_u64(),
            Some(cached),
            "request {request} ({} turn {}): predicted {cached} cached tokens",
            r["agent"],
            r["turn"]
        );
        hits += cached;
        if r["agent"] != root {
            subagent_hits += cached;
        }
    }
    // Not a vacuous equality: most of the prompts hit, subagents too.
    assert_eq!(plan["server"]["prefix_hit_tokens"].as_u64(), Some(hits));
    assert!(hits > 2_000_000, "{hits}");
    assert!(subagent_hits > 100_000, "{subagent_hits}");
}
