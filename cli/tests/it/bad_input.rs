//! Bad input: a clear message naming the file and the place, exit code 2,
//! never a panic.

use crate::util::*;

fn expect_input_error(args: &[&str], needles: &[&str]) {
    let out = arbor(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{err}");
    for needle in needles {
        assert!(
            err.contains(needle),
            "{args:?}: expected `{needle}` in:\n{err}"
        );
    }
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn missing_file() {
    expect_input_error(
        &["plan", "/nonexistent/trace.json"],
        &["/nonexistent/trace.json"],
    );
}

#[test]
fn invalid_json_and_wrong_types() {
    let dir = scratch("bad");
    let truncated = write(
        &dir,
        "truncated.json",
        r#"{"id": "x", "block_size": 64, "requests": [{"t": 0.0,"#,
    );
    expect_input_error(&["plan", &truncated], &["truncated.json", "line 1"]);
    let wrong = write(
        &dir,
        "wrong.json",
        r#"{"id": "x", "block_size": 64, "requests": [{"t": 0.0, "type": "n", "in": 5, "out": 1}, {"t": "soon", "type": "n", "in": 5, "out": 1}]}"#,
    );
    expect_input_error(&["plan", &wrong], &["wrong.json", "requests[1].t"]);
    let negative = write(
        &dir,
        "negative.json",
        r#"{"id": "x", "block_size": 64, "requests": [{"t": -3, "type": "n", "in": 5, "out": 1}]}"#,
    );
    expect_input_error(
        &["plan", &negative],
        &["negative.json", "requests[0]", "-3"],
    );
}

#[test]
fn bad_flags() {
    expect_input_error(
        &["plan", "--tool-time", "pct:abc"],
        &["--tool-time", "pct:abc"],
    );
    expect_input_error(&["plan", "--arrival", "poisson:-1"], &["--arrival"]);
    expect_input_error(&["plan", "--service", "fixed:1"], &["--service"]);
    expect_input_error(&["plan", "--loop"], &["--loop", "--sessions"]);
    expect_input_error(
        &["plan", "--synthetic", "trees=0"],
        &["--synthetic", "trees"],
    );
    expect_input_error(&["plan", "--idle-gap-cap=-4"], &["--idle-gap-cap"]);
}

const NATIVE: &str = r#"{"arbor":1,"id":"t","agents":[{"id":"root","kind":"root","turns":[{"start_ns":0,"duration_ns":5,"isl":1,"osl":1},{"start_ns":10,"isl":1,"osl":1}]}]"#;

#[test]
fn edges_to_missing_turns_and_cycles() {
    let dir = scratch("edges");
    let missing = write(
        &dir,
        "missing.jsonl",
        &format!("{NATIVE}}}\n{NATIVE},\"edges\":[{{\"from\":[0,0],\"to\":[0,9],\"anchor\":\"end\",\"gap_ns\":0}}]}}\n"),
    );
    expect_input_error(
        &["plan", &missing],
        &["missing.jsonl", "line 2", "$.edges[0].to", "no turn 9"],
    );
    let cycle = write(
        &dir,
        "cycle.jsonl",
        &format!(
            "{NATIVE},\"edges\":[{{\"from\":[0,0],\"to\":[0,1],\"anchor\":\"end\",\"gap_ns\":0}},{{\"from\":[0,1],\"to\":[0,0],\"anchor\":\"start\",\"gap_ns\":0}}]}}\n"
        ),
    );
    expect_input_error(
        &["plan", &cycle],
        &["cycle.jsonl:line 1", "tree `t`", "cycle"],
    );
}

#[test]
fn empty_and_garbage_files() {
    let dir = scratch("garbage");
    let empty = write(&dir, "empty.json", "");
    expect_input_error(&["plan", &empty], &["empty.json", "empty"]);
    let path = dir.join("garbage.bin");
    std::fs::write(&path, [0u8, 159, 146, 150, 255, 1, 2, 3]).unwrap();
    expect_input_error(&["plan", path.to_str().unwrap()], &["garbage.bin"]);
}
