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

/// A real `summary.json` (testdata/runs/small) with the figures compare
/// takes from it set: 10 requests/s, 1000 input and 100 output tokens/s,
/// no complete play, no cache report, nothing skipped.
pub fn summary() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/runs/small/summary.json");
    let text = std::fs::read_to_string(&path).expect("the fixture summary");
    let mut s: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    s["latency"]["job_time"]["count"] = 0.into();
    s["throughput"]["requests_per_s"] = 10.0.into();
    s["throughput"]["input_tokens_per_s"] = 1000.0.into();
    s["throughput"]["output_tokens_per_s"] = 100.0.into();
    s["cache"]["hit_ratio"] = serde_json::Value::Null;
    s["counts"]["skipped"] = 0.into();
    s.to_string()
}

/// A run directory of `records` (one `records.jsonl` line each) and
/// [`summary`].
pub fn run_dir(dir: &Path, records: &[String]) -> PathBuf {
    let mut text = records.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    write(dir, "records.jsonl", &text);
    write(dir, "summary.json", &summary());
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
