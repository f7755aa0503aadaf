//! The bad-input sweep: every file under `testdata/bad/<format>/`, and a set
//! of generated nasties fed to every format, must end with exit code 2 and a
//! message naming the file and the place; never a panic, never success.

use std::path::{Path, PathBuf};

use crate::util::*;

const FORMATS: [&str; 11] = [
    "weka",
    "mooncake",
    "agentic-mooncake",
    "abench",
    "dynamo",
    "lmcache",
    "openai-log",
    "arbor",
    "tracelab",
    "otel-genai",
    "aiperf-graph",
];

fn assert_rejected(format: &str, path: &Path) {
    let out = arbor(&["plan", "--format", format, path.to_str().unwrap()]);
    let err = stderr(&out);
    let name = path.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{format} {}: {err}",
        path.display()
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains(name),
        "{format}: the message should name {name}:\n{err}"
    );
    // The place: a line (and JSON path) unless the file as a whole is at
    // fault (empty).
    assert!(
        err.contains(": line ") || err.contains(": empty file"),
        "{format}: the message should name the place in {name}:\n{err}"
    );
}

#[test]
fn every_committed_bad_file_is_rejected_with_its_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/bad");
    let mut checked = 0;
    for format in FORMATS {
        let dir = root.join(format);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().is_some_and(|n| n != "README.md"))
            .collect();
        files.sort();
        for file in files {
            assert_rejected(format, &file);
            checked += 1;
        }
    }
    assert!(
        checked >= 6,
        "the bad corpus went missing ({checked} files)"
    );
}

#[test]
fn generated_nasties_are_rejected_by_every_format() {
    let dir = scratch("nasties");
    let huge_string = format!("{{\"id\": \"{}\"}}\n", "x".repeat(10 * 1024 * 1024));
    let nasties: Vec<(&str, Vec<u8>)> = vec![
        ("empty.jsonl", Vec::new()),
        ("blank.jsonl", b"\n\n   \n".to_vec()),
        ("garbage.jsonl", (0u8..=255).cycle().take(4096).collect()),
        ("huge-string.jsonl", huge_string.into_bytes()),
        ("array.jsonl", b"[1, 2, 3]\n".to_vec()),
        ("number.jsonl", b"42\n".to_vec()),
        ("nan.jsonl", b"{\"t\": NaN, \"timestamp\": NaN}\n".to_vec()),
        (
            "huge-numbers.jsonl",
            b"{\"t\": 1e400, \"timestamp\": 1e300, \"start\": -1e300}\n".to_vec(),
        ),
        (
            "truncated.jsonl",
            b"{\"timestamp\": 0, \"input\": \"abc".to_vec(),
        ),
    ];
    for (name, bytes) in &nasties {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        for format in FORMATS {
            assert_rejected(format, &path);
        }
    }
}
