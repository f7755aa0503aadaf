//! The `read_run` example (docs/library.md) on a fixture run directory.

#[path = "../../examples/read_run.rs"]
mod example;

use std::path::Path;

#[test]
fn the_example_reads_a_real_runs_records() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/calibrate/two-sessions");
    let seen = example::first_tokens(&dir).expect("the fixture's records read");
    assert!(seen.records > 0);
    assert!(seen.ok > 0 && seen.ok <= seen.records);
    let ttft = seen.median_ttft_s.expect("successful requests have a TTFT");
    assert!(ttft > 0.0 && ttft < 60.0, "{ttft}");
}

#[test]
fn a_missing_directory_is_the_callers_fault() {
    let e = example::first_tokens(Path::new("/nonexistent/arbor-run")).unwrap_err();
    assert!(e.is_input(), "{e}");
    assert!(e.message.contains("records.jsonl"), "{e}");
}

/// A whole run directory `arbor run` wrote (testdata/README.md says how).
fn small_run() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/runs/small")
}

#[test]
fn the_example_reads_a_runs_summary_through_the_vocabulary() {
    let seen = example::first_tokens(&small_run()).expect("the records read");
    let summary = example::headline(&small_run()).expect("the summary reads");
    assert!(summary.complete);
    // The summary's p50 is the nearest-rank median of the same records.
    let p50 = summary.ttft_p50_s.expect("ok requests");
    let median = seen.median_ttft_s.expect("ok requests");
    assert!((p50 - median).abs() < 1e-6, "{p50} against {median}");
    assert_eq!(seen.ok, 15);
    let rate = summary.output_tokens_per_s.expect("a rate");
    assert!(rate > 0.0, "{rate}");
}

#[test]
fn the_fixtures_summary_reads_typed_and_writes_back_its_own_bytes() {
    let written = std::fs::read(small_run().join("summary.json")).unwrap();
    let summary = arbor_runs::output::Summary::read(&small_run()).expect("reads");
    assert_eq!(summary.to_bytes().unwrap(), written);
}
