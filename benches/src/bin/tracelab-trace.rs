//! Writes a generated TraceLab round trace (JSONL, one round a line) of
//! SESSIONS parent sessions, for the loading benchmark: each a Claude Code
//! session of 8 rounds and a subagent session of 4 inside its Task call
//! (`arbor_formats::load::tracelab::generated`).
//!
//! `cargo run --release -p arbor-benches --bin tracelab-trace -- OUT.jsonl 10000`

use arbor_formats::load::tracelab::generated;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), Some(sessions)) = (
        args.get(1),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: tracelab-trace OUT.jsonl SESSIONS");
        std::process::exit(2);
    };
    let text = generated(sessions);
    std::fs::write(out, &text).expect("write the trace");
    println!(
        "{out}: {sessions} sessions with a subagent each, {} rounds, {:.1} MB",
        text.lines().count(),
        text.len() as f64 / 1e6
    );
}
