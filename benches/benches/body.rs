//! Building one request: prompt text from block ids plus the JSON body.
//! This sits between a turn becoming eligible and its bytes leaving, so it
//! counts toward lateness. `cargo bench -p arbor-benches --bench body`

use arbor_backends::live::request::{build_body, BodyConfig};
use arbor_engine::load::synthetic::SyntheticSpec;
use arbor_engine::prompt;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench_body(c: &mut Criterion) {
    let mut group = c.benchmark_group("request_body");
    for isl in [2_000u32, 100_000] {
        let spec: SyntheticSpec =
            format!("trees=1,turns=2,depth=0,isl={isl},isl_growth=1,hash_ids=true,seed=1")
                .parse()
                .expect("spec");
        let workload = spec.generate();
        let tree = &workload.trees[0];
        let config = BodyConfig {
            model: "m".into(),
            ..BodyConfig::default()
        };
        group.throughput(Throughput::Elements(u64::from(isl)));
        group.bench_function(format!("{isl}_tokens"), |b| {
            b.iter(|| build_body(&config, &prompt::build(tree, 0, 0), 16, None))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_body
}
criterion_main!(benches);
