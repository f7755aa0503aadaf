//! The batching server model: 100k requests through it, alone and as a
//! virtual replay (scheduler, prompt block keys, model).
//! `cargo bench -p arbor-benches --bench server` (target: under 1 s each).
//!
//! Each iteration is exactly that: the requests are drawn, and the
//! workload generated and compiled, outside the timed part; the replay
//! starts from a fresh scheduler and model and runs to the end, and it
//! checks every turn completed. The replay's workload has 100,233 turns
//! (5,000 conversations of 10 to 30 turns), the throughput it reports is
//! per request.

use std::path::Path;

use arbor_backends::virtual_clock;
use arbor_engine::dag::{compile, CompiledWorkload};
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::Workload;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::server::{ModelEvent, ModelRequest, Profile, ServerModel};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const REQUESTS: u64 = 100_000;
/// 5,000 conversations of about 20 turns: about 100k requests.
const SPEC: &str =
    "trees=5000,turns=20,depth=0,hash_ids=true,arrival_s=3,isl=1000,isl_growth=100,osl=150,seed=7";

fn roofline() -> Profile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../profiles/roofline-h100-sxm-llama-3.1-8b-bf16.toml");
    Profile::from_toml_path(&path).expect("bundled profile parses")
}

/// One request every 10 ms: a 1,024-token system prompt shared by all,
/// a 1,000-token question of its own, 100 output tokens.
fn requests() -> Vec<(u64, u32, u32, Vec<u64>)> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..REQUESTS)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let prompt = 2024 + (state % 512) as u32;
            let output = 50 + (state >> 32) as u32 % 100;
            let mut keys: Vec<u64> = (0..64).collect();
            keys.extend((64..u64::from(prompt) / 16).map(|b| (i << 20) | b));
            (i * 10_000_000, prompt, output, keys)
        })
        .collect()
}

fn model_alone(profile: &Profile, requests: &[(u64, u32, u32, Vec<u64>)]) -> u64 {
    let mut model = ServerModel::new(profile);
    let mut events: Vec<ModelEvent> = Vec::new();
    for (id, (at, prompt, output, keys)) in requests.iter().enumerate() {
        while let Some(next) = model.next_event_at().filter(|&t| t <= *at) {
            model.advance(next, &mut events);
        }
        model.advance(*at, &mut events);
        model.submit(
            *at,
            &ModelRequest {
                id: id as u64,
                prompt_tokens: *prompt,
                output_tokens: *output,
                blocks: keys,
            },
        );
    }
    while let Some(next) = model.next_event_at() {
        model.advance(next, &mut events);
    }
    events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Done { .. }))
        .count() as u64
}

fn replay(workload: &Workload, compiled: CompiledWorkload, profile: &Profile) -> usize {
    let mut scheduler = Scheduler::new(compiled, Policy::default()).expect("valid policy");
    let mut model = ServerModel::new(profile);
    let mut out = Vec::new();
    virtual_clock::run_server(&mut scheduler, workload, &mut model, &mut out).expect("engine run");
    out.len()
}

fn bench_server(c: &mut Criterion) {
    let profile = roofline();
    let mut group = c.benchmark_group("server_model");
    group.throughput(Throughput::Elements(REQUESTS));
    let requests = requests();
    assert_eq!(model_alone(&profile, &requests), REQUESTS);
    group.bench_function("model_100k_requests", |b| {
        b.iter(|| model_alone(&profile, &requests))
    });
    let spec: SyntheticSpec = SPEC.parse().expect("bench spec parses");
    let workload = spec.generate();
    let turns = workload.turn_count();
    let compiled = compile(&workload, &Policy::default(), &DeriveOptions::default())
        .expect("synthetic workloads compile");
    assert_eq!(replay(&workload, compiled.clone(), &profile), turns);
    group.throughput(Throughput::Elements(turns as u64));
    group.bench_function("virtual_replay_100k_requests", |b| {
        b.iter_batched(
            || compiled.clone(),
            |compiled| replay(&workload, compiled, &profile),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench_server
}
criterion_main!(benches);
