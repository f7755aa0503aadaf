//! Building one request: prompt text from block ids plus the JSON body.
//! This sits between a turn becoming eligible and its bytes leaving, so it
//! counts toward lateness. `cargo bench -p arbor-benches --bench body`
//!
//! `build_body` is the old path (a prompt `String`, then the body; a marked
//! copy with a cache-bust marker); `build_turn_body` writes the words
//! straight into the body. Both give the same bytes. Throughput is body
//! bytes per second.

use arbor_backends::live::request::{build_body, build_turn_body, BodyConfig};
use arbor_engine::prompt;
use arbor_formats::synthetic::SyntheticSpec;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

const MARKER: &str = "[rid:0123456789ab]\n\n";

fn bench_body(c: &mut Criterion) {
    let mut group = c.benchmark_group("request_body");
    let config = BodyConfig {
        model: "m".into(),
        ..BodyConfig::default()
    };
    for isl in [2_000u32, 20_000, 100_000] {
        let spec: SyntheticSpec =
            format!("trees=1,turns=2,depth=0,isl={isl},isl_growth=1,hash_ids=true,seed=1")
                .parse()
                .expect("spec");
        let workload = spec.generate();
        let tree = &workload.trees[0];
        for marker in [None, Some(MARKER)] {
            let body = build_turn_body(&config, tree, 0, 0, 16, marker);
            assert_eq!(
                body,
                build_body(&config, &prompt::build(tree, 0, 0), 16, marker)
            );
            group.throughput(Throughput::BytesDecimal(body.len() as u64));
            let case = match marker {
                None => format!("{isl}_tokens"),
                Some(_) => format!("{isl}_tokens_marked"),
            };
            group.bench_function(BenchmarkId::new("build_body", &case), |b| {
                b.iter(|| build_body(&config, &prompt::build(tree, 0, 0), 16, marker))
            });
            group.bench_function(BenchmarkId::new("build_turn_body", &case), |b| {
                b.iter(|| build_turn_body(&config, tree, 0, 0, 16, marker))
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_body
}
criterion_main!(benches);
