//! Writes a generated OpenTelemetry GenAI export (OTLP/JSON, one export
//! request a line as the collector's file exporter writes) of TRACES
//! traces, for the loading benchmark: each an agent of four model calls
//! running two subagents of three (`arbor_formats::load::otel_genai::generated`).
//!
//! `cargo run --release -p arbor-benches --bin otel-genai-trace -- OUT.jsonl 10000`

use arbor_formats::load::otel_genai::generated;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(out), Some(traces)) = (
        args.get(1),
        args.get(2).and_then(|s| s.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: otel-genai-trace OUT.jsonl TRACES");
        std::process::exit(2);
    };
    let text = generated(traces);
    std::fs::write(out, &text).expect("write the trace");
    println!(
        "{out}: {traces} traces, {} spans, {:.1} MB",
        text.matches("\"spanId\"").count(),
        text.len() as f64 / 1e6
    );
}
