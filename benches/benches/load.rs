//! Loading at scale: an agentic Mooncake file of one tree with 32k and
//! 200k subagent sessions (issue 13, item 10: loading was quadratic in
//! sessions per tree). The file is generated and written once, outside
//! the timed loop; each iteration reads and builds the tree.
//! `cargo bench -p arbor-benches --bench load`

use std::path::PathBuf;

use arbor_formats::load::{agentic_mooncake, load_path, Format};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn bench_agentic_mooncake(c: &mut Criterion) {
    let mut group = c.benchmark_group("load_agentic_mooncake");
    group.sample_size(10);
    for sessions in [32_000usize, 200_000] {
        let path: PathBuf = std::env::temp_dir().join(format!(
            "arbor-bench-agentic-{sessions}-{}.jsonl",
            std::process::id()
        ));
        std::fs::write(&path, agentic_mooncake::generated_tree(sessions))
            .expect("write the generated file");
        group.throughput(Throughput::Elements(sessions as u64));
        group.bench_function(format!("sessions_{sessions}"), |b| {
            b.iter(|| {
                let loaded =
                    load_path(&path, Some(Format::AgenticMooncake)).expect("the file loads");
                assert_eq!(loaded.trees.len(), 1);
                loaded
            })
        });
        std::fs::remove_file(&path).ok();
    }
    group.finish();
}

criterion_group!(benches, bench_agentic_mooncake);
criterion_main!(benches);
