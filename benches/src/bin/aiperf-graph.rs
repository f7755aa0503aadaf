//! Writes a generated AIPerf agentic graph (`dag_jsonl`) of TREES trees,
//! for the loading benchmark: each tree a root conversation of four turns
//! whose second spawns two subagent conversations of three turns, joined
//! at its third (`arbor_formats::load::aiperf_graph::generated`).
//!
//! `cargo run --release -p arbor-benches --bin aiperf-graph -- OUT.jsonl 8000`

use arbor_formats::load::aiperf_graph::generated;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), Some(trees)) = (
        args.get(1),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: aiperf-graph OUT.jsonl TREES");
        std::process::exit(2);
    };
    let text = generated(trees);
    std::fs::write(out, &text).expect("write the graph");
    println!(
        "{out}: {trees} trees, {} conversations, {:.1} MB",
        text.lines().count(),
        text.len() as f64 / 1e6
    );
}
