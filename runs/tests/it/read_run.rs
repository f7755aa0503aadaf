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
