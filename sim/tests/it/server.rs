//! The batching server model (`arbor_sim::server`): step times by hand,
//! batching, the prefix cache, LRU eviction, preemption, and the
//! closed-form jump against stepping one step at a time.

use std::path::Path;

use arbor_sim::server::{Gauges, ModelEvent, ModelRequest, Profile, ServerModel};
use proptest::prelude::*;

fn example() -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/example.toml");
    Profile::from_toml_path(&path).expect("the example profile parses")
}

/// A request to submit at a time.
#[derive(Debug, Clone)]
struct Submit {
    at: u64,
    id: u64,
    prompt: u32,
    output: u32,
    keys: Vec<u64>,
}

fn submit(at: u64, id: u64, prompt: u32, output: u32, keys: Vec<u64>) -> Submit {
    Submit {
        at,
        id,
        prompt,
        output,
        keys,
    }
}

/// Drives the model like the virtual clock does: submissions at their
/// times, the model advanced to its next event in between.
fn drive(model: &mut ServerModel, mut submits: Vec<Submit>) -> (Vec<ModelEvent>, Gauges) {
    submits.sort_by_key(|s| (s.at, s.id));
    let mut events = Vec::new();
    let mut next = 0;
    loop {
        let model_at = model.next_event_at();
        let submit_at = submits.get(next).map(|s| s.at);
        match (model_at, submit_at) {
            (None, None) => break,
            (Some(m), None) => model.advance(m, &mut events),
            (Some(m), Some(s)) if m <= s => model.advance(m, &mut events),
            (_, Some(s)) => {
                model.advance(s, &mut events);
                while let Some(r) = submits.get(next).filter(|r| r.at == s) {
                    model.submit(
                        s,
                        &ModelRequest {
                            id: r.id,
                            prompt_tokens: r.prompt,
                            output_tokens: r.output,
                            blocks: &r.keys,
                        },
                    );
                    next += 1;
                }
            }
        }
    }
    (events, model.gauges())
}

/// Drives the model as the emulator's thread may when it wakes late:
/// advanced only to each submission's time, then to the end, so decode-only
/// runs are jumped whole or in part.
fn drive_coarsely(model: &mut ServerModel, mut submits: Vec<Submit>) -> Vec<ModelEvent> {
    submits.sort_by_key(|s| (s.at, s.id));
    let mut events = Vec::new();
    for r in &submits {
        model.advance(r.at, &mut events);
        model.submit(
            r.at,
            &ModelRequest {
                id: r.id,
                prompt_tokens: r.prompt,
                output_tokens: r.output,
                blocks: &r.keys,
            },
        );
    }
    model.advance(u64::MAX, &mut events);
    events
}

fn first_token(events: &[ModelEvent], id: u64) -> (u64, u32) {
    events
        .iter()
        .find_map(|e| match *e {
            ModelEvent::FirstToken {
                id: i,
                at,
                cached_tokens,
            } if i == id => Some((at, cached_tokens)),
            _ => None,
        })
        .expect("a first token")
}

fn done(events: &[ModelEvent], id: u64) -> u64 {
    events
        .iter()
        .find_map(|e| match *e {
            ModelEvent::Done { id: i, at } if i == id => Some(at),
            _ => None,
        })
        .expect("done")
}

/// Distinct keys for a prompt of `blocks` full blocks, from `base`.
fn keys(base: u64, blocks: u64) -> Vec<u64> {
    (0..blocks).map(|i| base * 1000 + i).collect()
}

#[test]
fn a_single_request_takes_the_formula_by_hand() {
    let mut model = ServerModel::new(&example());
    let (events, gauges) = drive(&mut model, vec![submit(0, 1, 100, 5, vec![])]);
    // Visible at 1 ms (arrival). Prefill of 100 tokens: 2 ms + 50 us +
    // 100 * 20 us + 100 * (0 + 50) * 1 ns = 4.055 ms, ending at 5.055 ms;
    // the first token leaves 0.5 ms later.
    let (ttft, cached) = first_token(&events, 1);
    assert_eq!(ttft, 5_555_000);
    assert_eq!(cached, 0);
    // Four decode steps with context 101..104: 2 ms + 50 us + 20 us +
    // ctx * 100 ns each = 2_080_100 + 2_080_200 + 2_080_300 + 2_080_400.
    assert_eq!(done(&events, 1), 5_055_000 + 8_321_000 + 500_000);
    assert_eq!(gauges.steps, 5);
    assert_eq!(
        (gauges.running, gauges.waiting, gauges.kv_blocks_used),
        (0, 0, 0)
    );
}

#[test]
fn two_requests_batch_and_each_decode_step_costs_more() {
    let alone = {
        let mut model = ServerModel::new(&example());
        let (events, _) = drive(&mut model, vec![submit(0, 1, 100, 20, vec![])]);
        done(&events, 1) - first_token(&events, 1).0
    };
    let mut model = ServerModel::new(&example());
    let (events, gauges) = drive(
        &mut model,
        vec![submit(0, 1, 100, 20, vec![]), submit(0, 2, 100, 20, vec![])],
    );
    // One prefill step for both: the same first token.
    assert_eq!(first_token(&events, 1).0, first_token(&events, 2).0);
    let together = done(&events, 1) - first_token(&events, 1).0;
    // 19 decode steps of two sequences: + (50 us + 20 us + ctx * 100 ns)
    // a step over one sequence.
    assert!(together > alone, "{together} <= {alone}");
    assert_eq!(gauges.steps, 1 + 19);
}

#[test]
fn a_shared_prefix_hits_the_cache_in_whole_blocks() {
    let mut model = ServerModel::new(&example());
    let mut b = keys(1, 3);
    b.push(77);
    let (events, gauges) = drive(
        &mut model,
        vec![
            // 70 tokens: 4 full blocks, 6 tokens in a fifth (never cached).
            submit(0, 1, 70, 2, keys(1, 4)),
            // Shares the first 3 blocks, then differs.
            submit(1_000_000_000, 2, 80, 2, b),
            // The same prompt as 1: 4 blocks hit (64 of 70 tokens).
            submit(2_000_000_000, 3, 70, 2, keys(1, 4)),
        ],
    );
    assert_eq!(first_token(&events, 1).1, 0);
    assert_eq!(first_token(&events, 2).1, 48);
    assert_eq!(first_token(&events, 3).1, 64);
    assert_eq!(gauges.prefix_hit_tokens, 112);
    assert_eq!(gauges.prompt_tokens, 220);
}

#[test]
fn only_full_blocks_are_cached_and_one_token_is_always_computed() {
    let mut model = ServerModel::new(&example());
    let (events, _) = drive(
        &mut model,
        vec![
            // 40 tokens: 2 full blocks; the third is partial.
            submit(0, 1, 40, 1, keys(2, 2)),
            submit(1_000_000_000, 2, 40, 1, keys(2, 2)),
            // Exactly 2 blocks: the last token is computed, so 1 block hits.
            submit(2_000_000_000, 3, 32, 1, keys(3, 2)),
            submit(3_000_000_000, 4, 32, 1, keys(3, 2)),
        ],
    );
    assert_eq!(first_token(&events, 2).1, 32);
    assert_eq!(first_token(&events, 4).1, 16);
}

fn small_pool(blocks: u32) -> Profile {
    let mut profile = example();
    profile.engine.num_gpu_blocks = blocks;
    profile
}

#[test]
fn the_least_recently_used_prefix_is_evicted_first() {
    let mut model = ServerModel::new(&small_pool(12));
    let s = 1_000_000_000;
    let (events, _) = drive(
        &mut model,
        vec![
            submit(0, 1, 64, 1, keys(1, 4)),      // P
            submit(s, 2, 64, 1, keys(2, 4)),      // Q
            submit(2 * s, 3, 64, 1, keys(1, 4)),  // P again: Q is now older
            submit(3 * s, 4, 128, 1, keys(3, 8)), // R needs 8 blocks
            submit(4 * s, 5, 64, 1, keys(1, 4)),  // P: kept
            submit(5 * s, 6, 64, 1, keys(2, 4)),  // Q: evicted
        ],
    );
    assert_eq!(first_token(&events, 3).1, 48);
    assert_eq!(first_token(&events, 5).1, 48);
    assert_eq!(first_token(&events, 6).1, 0);
}

#[test]
fn the_newest_request_is_preempted_and_still_completes() {
    // 8 blocks of 16 tokens; each request grows to 32 + 60 = 92 tokens
    // (6 blocks): both cannot run to the end together.
    let mut model = ServerModel::new(&small_pool(8));
    let (events, gauges) = drive(
        &mut model,
        vec![submit(0, 1, 32, 60, vec![]), submit(0, 2, 32, 60, vec![])],
    );
    assert!(gauges.preemptions >= 1, "{gauges:?}");
    assert!(done(&events, 1) < done(&events, 2));
    assert_eq!(
        (gauges.running, gauges.waiting, gauges.kv_blocks_used),
        (0, 0, 0)
    );
    // Request 2's ITL includes its recompute after the preemption.
    let itl = |id| (done(&events, id) - first_token(&events, id).0) / 59;
    assert!(itl(2) > itl(1));
}

#[test]
fn a_request_that_never_fits_is_refused_at_once() {
    let mut model = ServerModel::new(&small_pool(2));
    let (events, gauges) = drive(&mut model, vec![submit(0, 1, 40, 1, vec![])]);
    assert_eq!(gauges.rejected, 1);
    assert_eq!(done(&events, 1), 1_500_000);
}

/// Workloads of shared-prefix requests, some arriving mid-decode, under a
/// small pool (eviction, preemption) or a large one.
fn workload() -> impl Strategy<Value = (u32, u32, Vec<Submit>)> {
    let request = (0u64..400, 0u64..3, 1u32..6, 0u32..40, 1u32..120);
    (
        prop_oneof![Just(12u32), Just(24), Just(400)],
        1u32..6,
        prop::collection::vec(request, 1..24),
    )
        .prop_map(|(blocks, seqs, rs)| {
            let submits = rs
                .into_iter()
                .enumerate()
                .map(|(i, (at_ms, prefix, shared, extra, output))| {
                    let mut k = keys(prefix + 1, u64::from(shared));
                    k.extend(keys(100 + i as u64, u64::from(extra / 16)));
                    Submit {
                        at: at_ms * 1_000_000,
                        id: i as u64,
                        prompt: shared * 16 + extra,
                        output,
                        keys: k,
                    }
                })
                .collect();
            (blocks, seqs, submits)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_jump_gives_the_same_events_as_stepping((blocks, seqs, submits) in workload()) {
        let mut profile = small_pool(blocks);
        profile.engine.max_num_seqs = seqs;
        let mut jumping = ServerModel::new(&profile);
        let mut stepping = ServerModel::new(&profile).without_jumps();
        let (a, ga) = drive(&mut jumping, submits.clone());
        let (b, gb) = drive(&mut stepping, submits.clone());
        prop_assert_eq!(&a, &b);
        prop_assert_eq!(ga.prefix_hit_tokens, gb.prefix_hit_tokens);
        prop_assert_eq!(ga.preemptions, gb.preemptions);
        prop_assert_eq!(ga.kv_blocks_used, 0);
        // Every request completes.
        let completed = a.iter().filter(|e| matches!(e, ModelEvent::Done { .. })).count();
        prop_assert_eq!(completed, submits.len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn token_events_come_at_the_steps_ends_jumped_or_not((blocks, seqs, submits) in workload()) {
        let mut profile = small_pool(blocks);
        profile.engine.max_num_seqs = seqs;
        let mut jumping = ServerModel::new(&profile).with_token_events();
        let mut stepping = ServerModel::new(&profile).with_token_events().without_jumps();
        let a = drive_coarsely(&mut jumping, submits.clone());
        let (b, _) = drive(&mut stepping, submits.clone());
        prop_assert_eq!(&a, &b);
        // The model's results are those of the model without token events.
        let (plain, _) = drive(&mut ServerModel::new(&profile), submits.clone());
        let without: Vec<ModelEvent> = a
            .iter()
            .filter(|e| !matches!(e, ModelEvent::Token { .. }))
            .copied()
            .collect();
        prop_assert_eq!(&without, &plain);
        // Every output token after the first, once, in time order, the
        // last at the request's end.
        for r in &submits {
            let times: Vec<u64> = a
                .iter()
                .filter_map(|e| match *e {
                    ModelEvent::Token { id, at } if id == r.id => Some(at),
                    _ => None,
                })
                .collect();
            if u64::from(r.prompt + r.output) > u64::from(blocks) * 16 {
                // Refused at once: no step, no token between.
                prop_assert!(times.is_empty());
                continue;
            }
            prop_assert_eq!(times.len() as u32, r.output - 1);
            prop_assert!(times.windows(2).all(|w| w[0] < w[1]));
            if let Some(&last) = times.last() {
                prop_assert_eq!(last, done(&a, r.id));
                prop_assert!(times[0] > first_token(&a, r.id).0);
            }
        }
    }
}

#[test]
fn a_lone_requests_tokens_come_at_each_decode_steps_end() {
    // The steps of `a_single_request_takes_the_formula_by_hand`, one token
    // each, 0.5 ms after the step: jumped in one advance.
    let mut model = ServerModel::new(&example()).with_token_events();
    let events = drive_coarsely(&mut model, vec![submit(0, 1, 100, 5, vec![])]);
    let tokens: Vec<u64> = events
        .iter()
        .filter_map(|e| match *e {
            ModelEvent::Token { at, .. } => Some(at),
            _ => None,
        })
        .collect();
    let mut end = 5_055_000;
    let mut expected = Vec::new();
    for step in [2_080_100, 2_080_200, 2_080_300, 2_080_400] {
        end += step;
        expected.push(end + 500_000);
    }
    assert_eq!(tokens, expected);
    assert_eq!(model.gauges().steps, 5);
}

#[test]
fn the_jump_skips_steps() {
    let mut model = ServerModel::new(&example());
    model.submit(
        0,
        &ModelRequest {
            id: 1,
            prompt_tokens: 100,
            output_tokens: 500,
            blocks: &[],
        },
    );
    let mut events = Vec::new();
    let mut calls = 0;
    while let Some(at) = model.next_event_at() {
        model.advance(at, &mut events);
        calls += 1;
    }
    // 500 steps, asked for a handful of times.
    assert_eq!(model.gauges().steps, 500);
    assert!(calls < 10, "{calls} calls");
    assert_eq!(events.len(), 2);
}

#[test]
fn every_bundled_profile_parses_and_says_what_it_is() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 2);
    for path in paths {
        let profile = Profile::from_toml_path(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            profile.label.starts_with(&profile.origin.to_string()),
            "{name}: the label starts with the origin"
        );
        // What calibrate writes reads back the same.
        let again = Profile::from_toml_str(&profile.to_toml(), &path).unwrap();
        assert_eq!(again, profile, "{name}");
    }
}

#[test]
fn a_bad_profile_names_the_file_and_the_key() {
    let path = Path::new("bad.toml");
    let text = example()
        .to_toml()
        .replace("block_size = 16", "block_size = 0");
    let e = Profile::from_toml_str(&text, path).unwrap_err().to_string();
    assert_eq!(
        e,
        "bad.toml: `engine.block_size`: expected a whole number above 0"
    );
    let text = example()
        .to_toml()
        .replace("per_seq_ns = 50000.0", "per_seq_ns = -1.0");
    let e = Profile::from_toml_str(&text, path).unwrap_err().to_string();
    assert!(e.contains("`step.per_seq_ns`"), "{e}");
    let e = Profile::from_toml_str("label = 1", path)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("bad.toml: "), "{e}");
    let e = Profile::from_toml_path(Path::new("/no/such/profile.toml")).unwrap_err();
    assert!(
        e.to_string().contains("/no/such/profile.toml: cannot read"),
        "{e}"
    );
}
