//! `arbor summarize RUN_DIR` at the process: a run killed with SIGKILL is
//! summed up from its records and marked incomplete, the console says
//! what was kept, and a bad directory exits 2. What the rebuilt summary
//! holds is in-process (`arbor/tests/it/summarize.rs`).

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{arbor, expect_exit_2, fixture, run_into, scratch, stderr, stdout, FAST};

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

fn summarize(dir: &Path) -> std::process::Output {
    arbor(&["summarize", dir.to_str().unwrap()])
}

#[test]
fn the_console_says_what_was_kept_and_a_bad_directory_exits_2() {
    let dir = scratch("summarize-console").join("out");
    let trace = fixture("trace_0187.json");
    let mut args = vec![trace.to_str().unwrap(), "--ttft-ms", "1", "--itl-ms", "0.1"];
    args.extend(FAST);
    run_into(&dir, &args);
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("unchanged"), "{}", stdout(&out));
    fs::write(dir.join("summary.json"), b"{\"edited\": true}\n").unwrap();
    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("summary.json.orig"),
        "{}",
        stdout(&out)
    );
    expect_exit_2(
        &["summarize", dir.join("nope").to_str().unwrap()],
        &["no such directory"],
    );
}

/// Complete lines of records.jsonl (a torn last line is not one).
fn complete_lines(path: &Path) -> u64 {
    let text = fs::read(path).unwrap();
    text.split_inclusive(|&b| b == b'\n')
        .filter(|l| l.ends_with(b"\n") && serde_json::from_slice::<Value>(l).is_ok())
        .count() as u64
}

#[test]
fn a_run_killed_with_sigkill_is_summed_up_from_its_records_and_marked_incomplete() {
    let dir = scratch("summarize-killed").join("out");
    // The demo with tool and think gaps at 5 % and no idle-gap cap: minutes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["run", "-o", dir.to_str().unwrap()])
        .args(["--tool-time", "pct:5", "--think-time-pct", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the arbor binary runs");
    // Kill it about 2 s after its first record (bounded).
    let records = dir.join("records.jsonl");
    let deadline = Instant::now() + Duration::from_secs(60);
    while complete_lines_or_zero(&records) == 0 {
        assert!(Instant::now() < deadline, "no record within 60 s");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(!dir.join("end.json").exists());
    assert!(!dir.join("summary.json").exists());

    let out = summarize(&dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = summary(&dir);
    assert_eq!(s["complete"], false);
    // A kill can also tear the last line, whose note then comes first.
    assert!(
        s["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("did not end cleanly")),
        "{}",
        s["notes"]
    );
    let counts = &s["counts"];
    let lines = complete_lines(&records);
    assert!(lines > 0);
    assert_eq!(
        counts["dispatched"].as_u64().unwrap() + counts["warmups"].as_u64().unwrap(),
        lines,
        "{counts}"
    );
    assert_eq!(
        counts["ok"].as_u64().unwrap()
            + counts["failed"].as_u64().unwrap()
            + counts["cancelled"].as_u64().unwrap(),
        counts["dispatched"].as_u64().unwrap()
    );
    assert!(s["elapsed_s"].as_f64().unwrap() > 0.0);
    assert!(s["concurrency"]["observed_peak"].as_u64().unwrap() >= 1);
}

fn complete_lines_or_zero(path: &Path) -> u64 {
    if path.is_file() {
        complete_lines(path)
    } else {
        0
    }
}
