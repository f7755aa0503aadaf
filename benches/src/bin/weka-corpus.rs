//! Writes a synthetic Weka corpus (JSONL, one trace per line) of at least
//! SIZE_MB megabytes, for the loading benchmark.
//!
//! `cargo run --release -p arbor-benches --bin weka-corpus -- OUT.jsonl 500`

use std::fs::File;
use std::io::{BufWriter, Write};

use arbor_formats::synthetic::SyntheticSpec;
use arbor_formats::write::weka::write_trace;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), Some(size)) = (args.get(1), args.get(2).and_then(|s| s.parse::<u64>().ok()))
    else {
        eprintln!("usage: weka-corpus OUT.jsonl SIZE_MB");
        std::process::exit(2);
    };
    let target = size * 1_000_000;
    let mut file = BufWriter::with_capacity(1 << 20, File::create(out).expect("create output"));
    let (mut written, mut trees, mut batch) = (0u64, 0u64, 0u64);
    while written < target {
        // Batches of trees with Weka-like shapes: long root sessions, a few
        // Explore-style subagents, prompts growing to ~100k tokens.
        let spec: SyntheticSpec = format!(
            "trees=50,turns=60,child_turns=10,depth=1,spawn=0.08,fanout=3,isl=12000,isl_growth=1500,max_isl=150000,hash_ids=true,seed={}",
            batch + 1
        )
        .parse()
        .expect("corpus spec");
        for tree in spec.generate().trees {
            let mut line = Vec::with_capacity(1 << 20);
            write_trace(&tree, &mut line).expect("serialize");
            written += line.len() as u64;
            file.write_all(&line).expect("write");
            trees += 1;
        }
        batch += 1;
    }
    file.flush().expect("flush");
    println!("{out}: {trees} traces, {:.1} MB", written as f64 / 1e6);
}
