//! The bundled sample: the texts of the four real Weka traces in
//! `testdata/weka-kv-cache-tester/` (Apache-2.0, see the README there),
//! compiled in so `arbor plan` works with no input at all. Owns the texts
//! and their corpus identity ([`file_hashes`]); the workload they read as
//! is `load::sample::workload` (reading is the loader's).

use sha2::{Digest, Sha256};

use crate::manifest::{self, FileHash};

/// `(sample:NAME, text)` of each bundled trace.
pub const TRACES: [(&str, &str); 4] = [
    (
        "sample:trace_0187.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0187.json"),
    ),
    (
        "sample:trace_0277.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0277.json"),
    ),
    (
        "sample:trace_0291.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0291.json"),
    ),
    (
        "sample:trace_0504.json",
        include_str!("../../testdata/weka-kv-cache-tester/trace_0504.json"),
    ),
];

/// Each bundled trace's name (without `sample:`) and SHA-256: the
/// corpus of a run on the sample.
pub fn file_hashes() -> Vec<FileHash> {
    TRACES
        .iter()
        .map(|(source, text)| FileHash {
            name: source.trim_start_matches("sample:").to_string(),
            sha256: manifest::hex(&Sha256::digest(text.as_bytes())),
        })
        .collect()
}
