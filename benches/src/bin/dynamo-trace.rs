//! Writes a generated Dynamo request trace (`dynamo.request.trace.v1`
//! JSONL) of TREES trees, for the loading benchmark: each tree a root
//! session of four requests and two subagent sessions of three
//! (`arbor_formats::load::dynamo::generated`).
//!
//! `cargo run --release -p arbor-benches --bin dynamo-trace -- OUT.jsonl 20000`

use arbor_formats::load::dynamo::generated;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), Some(trees)) = (
        args.get(1),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: dynamo-trace OUT.jsonl TREES");
        std::process::exit(2);
    };
    let text = generated(trees);
    std::fs::write(out, &text).expect("write the trace");
    println!(
        "{out}: {trees} trees, {} requests, {:.1} MB",
        text.lines().count(),
        text.len() as f64 / 1e6
    );
}
