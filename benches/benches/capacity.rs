//! A virtual capacity search's cost: 20 load points (closed loop, 50 to
//! 1,000 sessions) of a 1,000-tree workload, each planned on the virtual
//! clock with the batching server model and its TTFTs sorted for a
//! percentile, as `arbor capacity --service server:PROFILE.toml --sweep`
//! does per load: the library's own virtual point
//! (`arbor_capacity::predict::Bench::point`: the policy with the knob set,
//! the scheduler, the model, the served requests and their observations),
//! every turn's prompt block keys computed once for the sweep
//! (`Bench::new`'s `WorkloadKeys`, timed) and shared by the points. Two
//! ways: side by side on the machine's cores (`backends::side_by_side`,
//! what `--sweep` does), and one after another on one core (the cost of
//! the model itself). Not timed: judging each point and writing its
//! directory, which the command also does. Target (issue 15): under 10 s
//! for the 20 points.
//! `cargo bench -p arbor-benches --bench capacity`

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arbor_backends::side_by_side;
use arbor_capacity::predict::Bench;
use arbor_capacity::Knob;
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::Policy;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::{Profile, ServerService, Service};
use criterion::{criterion_group, criterion_main, Criterion};

const SPEC: &str = "trees=1000,turns=10,depth=1,spawn=0.1,hash_ids=true,seed=5";

/// The bundled roofline profile (H100 SXM, Llama-3.1-8B bf16): an engine
/// that holds hundreds of sequences, so the points span light load to
/// saturation.
const PROFILE: &str = include_str!("../../profiles/roofline-h100-sxm-llama-3.1-8b-bf16.toml");

fn bench_capacity(c: &mut Criterion) {
    let spec: SyntheticSpec = SPEC.parse().expect("bench spec parses");
    let workload = spec.generate();
    let compiled = compile(&workload, &Policy::default(), &DeriveOptions::default())
        .expect("synthetic workloads compile");
    let profile =
        Profile::from_toml_str(PROFILE, Path::new("roofline.toml")).expect("bench profile parses");
    let service = Service::Server(ServerService {
        path: PathBuf::from("roofline.toml"),
        profile: Arc::new(profile),
    });
    let points: Vec<u64> = (1..=20).map(|k| 50 * k).collect();
    // One point: its TTFT p99.
    let point = |bench: &Bench, sessions: u64| -> u64 {
        let prediction = bench
            .point(Knob::Sessions, sessions)
            .expect("bench policy is valid");
        let mut ttft: Vec<u64> = prediction
            .served
            .iter()
            .map(|s| s.first.expect("the model's first token") - s.sent)
            .collect();
        ttft.sort_unstable();
        ttft.get(ttft.len() * 99 / 100).copied().unwrap_or(0)
    };
    let sweep = |workers: usize| -> Vec<u64> {
        let bench = Bench::new(
            compiled.clone(),
            workload.clone(),
            None,
            Policy::default(),
            service.clone(),
        );
        side_by_side::plan_each(points.len(), workers, |i| point(&bench, points[i]))
    };
    assert_eq!(
        sweep(side_by_side::cores()),
        sweep(1),
        "same points on any cores"
    );
    let mut group = c.benchmark_group("capacity");
    group.sample_size(10);
    group.bench_function("server_20_points_1000_sessions", |b| {
        b.iter(|| sweep(side_by_side::cores()))
    });
    group.bench_function("server_20_points_1000_sessions_one_core", |b| {
        b.iter(|| sweep(1))
    });
    group.finish();
}

criterion_group!(benches, bench_capacity);
criterion_main!(benches);
