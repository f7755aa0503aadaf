//! Bad input: a clear message naming the file and the place, exit code 2,
//! never a panic.

use crate::util::*;

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn missing_file() {
    expect_exit_2(
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
    expect_exit_2(&["plan", &truncated], &["truncated.json", "line 1"]);
    let wrong = write(
        &dir,
        "wrong.json",
        r#"{"id": "x", "block_size": 64, "requests": [{"t": 0.0, "type": "n", "in": 5, "out": 1}, {"t": "soon", "type": "n", "in": 5, "out": 1}]}"#,
    );
    expect_exit_2(&["plan", &wrong], &["wrong.json", "requests[1].t"]);
    let negative = write(
        &dir,
        "negative.json",
        r#"{"id": "x", "block_size": 64, "requests": [{"t": -3, "type": "n", "in": 5, "out": 1}]}"#,
    );
    expect_exit_2(
        &["plan", &negative],
        &["negative.json", "requests[0]", "-3"],
    );
}

#[test]
fn bad_flags() {
    expect_exit_2(
        &["plan", "--tool-time", "pct:abc"],
        &["--tool-time", "pct:abc"],
    );
    expect_exit_2(&["plan", "--arrival", "poisson:-1"], &["--arrival"]);
    expect_exit_2(&["plan", "--service", "fixed:1"], &["--service"]);
    expect_exit_2(&["plan", "--loop"], &["--loop", "--sessions"]);
    expect_exit_2(
        &["plan", "--synthetic", "trees=0"],
        &["--synthetic", "trees"],
    );
    expect_exit_2(&["plan", "--idle-gap-cap=-4"], &["--idle-gap-cap"]);
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
    expect_exit_2(
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
    expect_exit_2(
        &["plan", &cycle],
        &["cycle.jsonl:line 1", "tree `t`", "cycle"],
    );
}

#[test]
fn empty_and_garbage_files() {
    let dir = scratch("garbage");
    let empty = write(&dir, "empty.json", "");
    expect_exit_2(&["plan", &empty], &["empty.json", "empty"]);
    // Nothing to detect a format from: every format is named, none guessed.
    let blank = write(&dir, "blank.jsonl", "\n  \n");
    expect_exit_2(
        &["plan", &blank],
        &["blank.jsonl: empty file: expected a trace in one of the formats arbor reads (weka, mooncake, agentic-mooncake, abench, dynamo, lmcache, openai-log, arbor"],
    );
    // With --format the format's own words say what was expected.
    expect_exit_2(
        &["plan", "--format", "mooncake", &blank],
        &["blank.jsonl: empty file: expected Mooncake rows"],
    );
    let path = dir.join("garbage.bin");
    std::fs::write(&path, [0u8, 159, 146, 150, 255, 1, 2, 3]).unwrap();
    expect_exit_2(&["plan", path.to_str().unwrap()], &["garbage.bin"]);
}

/// `text` matches `pattern`, where `*` stands for any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// The same kind of fault reads the same in every format: after the file
/// name, the place and the message have one shape per kind (only the
/// place's path, the field's name and what the field holds differ).
#[test]
fn the_same_fault_has_the_same_words_in_every_format() {
    // (format, truncated JSON, a wrong type (a string "x"), a missing field)
    let cases = [
        (
            "weka",
            r#"{"requests": [{"t": 0, "in": 5"#,
            r#"{"requests": [{"t": "x", "in": 5, "out": 1}]}"#,
            r#"{"id": "w"}"#,
        ),
        (
            "mooncake",
            r#"{"timestamp": 0, "input_length": 5"#,
            r#"{"timestamp": 0, "input_length": "x", "output_length": 1}"#,
            r#"{"timestamp": 0, "input_length": 5}"#,
        ),
        (
            "agentic-mooncake",
            r#"{"request_id": "r1", "session_id": "s""#,
            r#"{"request_id": "r1", "session_id": "s", "timestamp": 0, "input_length": 5, "output_length": "x"}"#,
            r#"{"request_id": "r1", "timestamp": 0, "input_length": 5, "output_length": 1}"#,
        ),
        (
            "abench",
            r#"{"session_id": "s", "turns": ["#,
            r#"{"session_id": "s", "turns": [{"input_tokens": "x"}]}"#,
            r#"{"session_id": "s"}"#,
        ),
        (
            "dynamo",
            r#"{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "agent_context": {"#,
            r#"{"schema": "dynamo.request.trace.v1", "event_type": "request_end", "agent_context": {"session_id": "s"}, "request": {"request_id": "r", "output_tokens": "x"}}"#,
            r#"{"schema": "dynamo.request.trace.v1", "agent_context": {"session_id": "s"}}"#,
        ),
        (
            "lmcache",
            r#"{"timestamp": 1, "input": "abc"#,
            r#"{"timestamp": "x", "input": "a", "output": "b", "session_id": "s"}"#,
            r#"{"timestamp": 1, "input": "a", "output": "b"}"#,
        ),
        (
            "openai-log",
            r#"{"start": 1, "request": {"messages": ["#,
            r#"{"start": "x", "request": {"messages": []}}"#,
            r#"{"start": 1}"#,
        ),
        (
            "tracelab",
            r#"{"session_id": "s", "round_index": 0, "timing_events": ["#,
            r#"{"session_id": "s", "round_index": 0, "input_tokens_total": "x", "output_tokens": 1, "timing_events": []}"#,
            r#"{"session_id": "s", "round_index": 0, "output_tokens": 1, "timing_events": []}"#,
        ),
        (
            "otel-genai",
            r#"{"resourceSpans": [{"scopeSpans": [{"spans": ["#,
            r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "startTimeUnixNano": "1", "endTimeUnixNano": "2", "attributes": "x"}]}]}]}"#,
            r#"{"resource": {"attributes": []}}"#,
        ),
        (
            "arbor",
            r#"{"arbor": 1, "id": "t", "agents": ["#,
            r#"{"arbor": 1, "id": "t", "agents": [{"id": "r", "kind": "root", "turns": [{"start_ns": "x", "isl": 1, "osl": 1}]}]}"#,
            r#"{"arbor": 1, "id": "t"}"#,
        ),
        (
            "aiperf-graph",
            r#"{"session_id": "s", "turns": [{"messages": ["#,
            r#"{"session_id": "s", "turns": [{"messages": [{"role": "user"}], "max_tokens": "x"}]}"#,
            r#"{"turns": [{"messages": [{"role": "user"}]}]}"#,
        ),
    ];
    // (kind, shape of the place, shape of the message)
    let shapes = [
        (
            "truncated",
            "line 1, column *",
            "invalid JSON: the text ends early (truncated?): EOF while parsing *",
        ),
        (
            "wrong-type",
            "line 1, $.*",
            "invalid type: string \"x\": expected *",
        ),
        ("missing", "line 1", "missing field `*`: expected it in *"),
    ];
    let dir = scratch("same-fault");
    assert_eq!(cases.len(), 11, "every format has its faults");
    for (format, truncated, wrong, missing) in cases {
        for ((kind, place, message), text) in shapes.iter().zip([truncated, wrong, missing]) {
            let path = write(
                &dir,
                &format!("{format}-{kind}.jsonl"),
                &format!("{text}\n"),
            );
            let out = arbor(&["plan", "--format", format, &path]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{format} {kind}: {err}");
            let line = err.lines().next().unwrap_or("");
            let rest = line
                .strip_prefix(&format!("error: {path}: "))
                .unwrap_or_else(|| panic!("{format} {kind}: no file name in {line:?}"));
            let (got_place, got_message) = rest
                .split_once(": ")
                .unwrap_or_else(|| panic!("{format} {kind}: no place in {line:?}"));
            assert!(
                glob(place, got_place),
                "{format} {kind}: place {got_place:?} is not {place:?}"
            );
            assert!(
                glob(message, got_message),
                "{format} {kind}: message {got_message:?} is not {message:?}"
            );
        }
    }
}
