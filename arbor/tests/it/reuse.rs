//! Prefix reuse, planned against achieved (issue 30's must-show), in
//! process: a Weka fixture through the built-in emulator under a server
//! profile, the run planned under the same profile. Every measured record
//! carries the three figures (best possible, predicted, achieved), best
//! is never below what the server achieved nor below the prediction, and
//! the summary's `reuse` totals are the sums over the records.

use arbor::engine::policy::{GapTransform, Policy};
use arbor::options::{EmulatorOptions, PolicyOptions, RunOptions};

use crate::util::*;

/// A fast engine whose pool holds the whole workload (no eviction):
/// 262,144 blocks of 16 tokens.
const PROFILE: &str = r#"
label = "reuse test: a fast engine with no eviction"
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
per_token_ns = 1000.0
knee_tokens = 256
per_token_above_knee_ns = 0.0
per_decode_context_token_ns = 0.01
per_prefill_attention_ns = 0.0001

[overhead]
arrival_ns = 500000
departure_ns = 200000
"#;

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("expected a count, got {v}"))
}

/// trace_0291 (a session of 20 requests and two subagents spawned
/// together) played twice, one play after the other (one lane), no
/// cache-bust markers: the second play could reuse every token of the
/// first's. One request at a time with no tool or think time keeps the
/// live order the plan's (see `server_cache`).
#[test]
fn every_record_has_best_predicted_and_achieved_reuse_and_best_bounds_both() {
    let dir = scratch("reuse");
    let profile = dir.join("profile.toml");
    std::fs::write(&profile, PROFILE).unwrap();
    let out = dir.join("out");
    arbor::run::run(
        &RunOptions {
            input: inputs(&[fixture("trace_0291.json")]),
            policy: PolicyOptions {
                tool_time: Some(GapTransform::Zero),
                think_time_pct: Some(Policy::think_pct("0").unwrap()),
                max_inflight: Some(1),
                sessions: Some(1),
                copies: Some(2),
                ..PolicyOptions::default()
            },
            service: Some(format!("server:{}", profile.display()).parse().unwrap()),
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
    assert_eq!(records.len(), 64, "32 requests, twice");
    let (mut prompt, mut best, mut predicted, mut achieved) = (0, 0, 0, 0);
    let mut gaps = 0;
    let mut above_achieved = 0;
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["warmup"], false);
        let at = format!(
            "request {} ({} turn {} copy {})",
            r["request"], r["agent"], r["turn"], r["copy"]
        );
        let (b, p, a) = (
            u(&r["reuse_best_tokens"]),
            u(&r["reuse_predicted_tokens"]),
            u(&r["cached_tokens"]),
        );
        let input = u(&r["input_tokens"]);
        assert!(b <= input, "{at}: best {b} of {input} prompt tokens");
        assert!(b >= a, "{at}: best {b} below achieved {a}");
        assert!(b >= p, "{at}: best {b} below predicted {p}");
        // The pool holds everything, the order is the plan's: the model's
        // prediction is what the emulator (the same model) reported.
        assert_eq!(p, a, "{at}");
        if r["play"] == 1 {
            // The same prompts again, no markers: all of it, at best.
            assert_eq!(b, input, "{at}: a second play reuses its whole prompt");
        }
        above_achieved += u64::from(b > a);
        gaps += u64::from(r.get("reuse_gap_s").is_some());
        prompt += input;
        best += b;
        predicted += p;
        achieved += a;
    }
    // Not vacuous: reuse everywhere, and the infinite cache is ahead of a
    // block-granular one on most requests (a partial block, the answer).
    assert!(achieved > prompt / 2, "{achieved} of {prompt}");
    assert!(above_achieved > 40, "{above_achieved}");
    // Every turn after an agent's first has its gap: 32 requests, 3
    // agents, twice.
    assert_eq!(gaps, 2 * (32 - 3));

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let reuse = &summary["reuse"];
    assert_eq!(u(&reuse["requests"]), 64);
    assert_eq!(u(&reuse["prompt_tokens"]), prompt);
    assert_eq!(u(&reuse["best_tokens"]), best);
    assert_eq!(u(&reuse["predicted_tokens"]), predicted);
    assert_eq!(u(&reuse["achieved_tokens"]), achieved);
    let ratio = reuse["achieved_of_best"].as_f64().unwrap();
    assert!((ratio - achieved as f64 / best as f64).abs() < 1e-12);
    // The bins add up to the totals.
    let bins = reuse["by_gap"].as_array().unwrap();
    assert_eq!(bins.len(), 5);
    for field in [
        "requests",
        "prompt_tokens",
        "best_tokens",
        "achieved_tokens",
    ] {
        let sum: u64 = bins.iter().map(|b| u(&b[field])).sum();
        assert_eq!(sum, u(&reuse[field]), "{field}");
    }
    assert_eq!(bins[0]["gap"], "first turn");
    assert_eq!(u(&bins[0]["requests"]), 6);

    // `arbor summarize` rebuilds the same section from the records.
    let rebuilt = arbor::runs::summarize::rebuild(&out).unwrap().summary;
    assert_eq!(serde_json::to_value(&rebuilt.reuse).unwrap(), *reuse);
}
