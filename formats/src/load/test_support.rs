//! Helpers the loaders' unit tests share: where the test data is, unique
//! scratch paths, and checking an error message names what it should.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `testdata/<dir>` of the repository.
pub fn testdata(dir: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata")).join(dir)
}

/// A path under the system temp dir no other test uses:
/// `arbor-<tag>-<pid>-<n><suffix>`.
pub fn scratch_path(tag: &str, suffix: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    std::env::temp_dir().join(format!(
        "arbor-{tag}-{}-{}{suffix}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A fresh JSONL file holding `content`.
pub fn scratch_file(tag: &str, content: &[u8]) -> PathBuf {
    let path = scratch_path(tag, ".jsonl");
    std::fs::write(&path, content).expect("write temp file");
    path
}

/// Panics unless `text` contains every one of `parts`.
pub fn assert_contains(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{text:?} does not contain {part:?}");
    }
}
