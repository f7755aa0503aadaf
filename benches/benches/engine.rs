//! Scheduler throughput: events per second on synthetic workloads.
//! `cargo bench -p arbor-benches --bench engine`

use arbor_benches::{compiled, run_plan};
use arbor_engine::policy::{Arrival, Policy};
use arbor_sim::ServiceModel;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

const SPEC: &str = "trees=200,turns=100,depth=2,spawn=0.15,overlap=0.05,seed=3";

fn bench_engine(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduler");
    let cases = [
        ("open_recorded", Policy::default()),
        (
            "open_capped_idle",
            Policy {
                arrival: Arrival::Poisson(0.5),
                max_inflight: Some(64),
                idle_gap_cap: Some(10_000_000_000),
                ..Policy::default()
            },
        ),
        (
            "closed_loop_16",
            Policy {
                sessions: Some(16),
                ..Policy::default()
            },
        ),
    ];
    for (name, policy) in cases {
        let workload = compiled(SPEC, &policy);
        let events = run_plan(workload.clone(), policy.clone(), &ServiceModel::Recorded);
        group.throughput(Throughput::Elements(events));
        group.bench_function(name, |b| {
            b.iter_batched(
                || workload.clone(),
                |w| run_plan(w, policy.clone(), &ServiceModel::Recorded),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_engine
}
criterion_main!(benches);
