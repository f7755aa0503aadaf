//! Scratch directories and hand-written run directories.

use std::path::{Path, PathBuf};

/// A fresh scratch directory for one test, under cargo's target tmp dir
/// (`target/tmp/arbor-report-it/NAME`): emptied when the test starts.
/// Names are unique within the suite.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("arbor-report-it")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// `dir/name` written with `text` (`dir` created if missing).
pub fn write(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(dir).expect("dir");
    std::fs::write(dir.join(name), text).expect("file written");
}

/// The figures of `summary.json` that compare reads (no complete play, no
/// cache report).
pub const SUMMARY: &str = r#"{
  "latency": {"job_time": {"count": 0, "mean_s": 0.0, "p50_s": 0.0, "p90_s": 0.0, "p99_s": 0.0}},
  "throughput": {"requests_per_s": 10.0, "input_tokens_per_s": 1000.0, "output_tokens_per_s": 100.0},
  "cache": {"hit_ratio": null},
  "counts": {"skipped": 0}
}"#;

/// A run directory of `records` (one `records.jsonl` line each) and
/// [`SUMMARY`].
pub fn run_dir(dir: &Path, records: &[String]) -> PathBuf {
    let mut text = records.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    write(dir, "records.jsonl", &text);
    write(dir, "summary.json", SUMMARY);
    dir.to_path_buf()
}

/// A successful record as compare reads it, with TTFT `ttft_s`.
pub fn ok_record(ttft_s: f64) -> String {
    format!(
        "{{\"status\":\"ok\",\"warmup\":false,\"ttft_s\":{ttft_s},\"e2e_s\":{},\"tpot_s\":0.0002,\
         \"itl_s\":[0.0002,0.0003],\"lateness_s\":0.0001,\"queue_wait_s\":0.0}}",
        ttft_s * 3.0
    )
}
