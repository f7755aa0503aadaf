//! Stopping `arbor run` with a signal, as `timeout`, `docker stop`,
//! Kubernetes, Slurm, a closed terminal or a user at Ctrl+C would: SIGINT,
//! SIGTERM and SIGHUP each stop sending, give the requests in flight the
//! grace, write `summary.json` (`"cancelled": true`, `stopped_by`) and exit
//! 128 + the signal's number; a second signal during the grace writes the
//! summary from what was recorded (`"complete": false`) and quits; after
//! `kill -9`, `records.jsonl` is a valid prefix and `arbor summarize`
//! rebuilds the summary. All against the built-in emulator, streaming
//! slowly so that requests are in flight.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::util::*;

/// `arbor run` of the bundled sample on the built-in emulator, a token
/// every `itl_ms`, started in the background.
fn start(out: &Path, itl_ms: &str, grace: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args([
            "run",
            "--ttft-ms",
            "5",
            "--itl-ms",
            itl_ms,
            "--grace",
            grace,
        ])
        .args(["--no-progress", "--out", out.to_str().expect("UTF-8")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts")
}

/// Waits until `ready` holds of the run directory (at most 60 s).
fn wait_until(out: &Path, child: &mut Child, ready: impl Fn(&Path) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(out) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("arbor run ended early: {status}");
        }
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The clock started: requests are being sent.
fn clock_started(out: &Path) -> bool {
    out.join("run.json").is_file()
}

fn has_records(out: &Path) -> bool {
    std::fs::read(out.join("records.jsonl")).is_ok_and(|b| b.contains(&b'\n'))
}

fn send(child: &Child, signal: Signal) {
    kill(Pid::from_raw(child.id() as i32), signal).expect("kill");
}

/// The exit code, stdout and stderr, within 60 s.
fn finish(mut child: Child) -> (Option<i32>, String, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("output");
            return (
                status.code(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("arbor run did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every complete line of `records.jsonl` is a JSON record; returns how
/// many there are. Only a last line without its newline may be torn.
fn valid_prefix(out: &Path) -> usize {
    let bytes = std::fs::read(out.join("records.jsonl")).expect("records.jsonl");
    let text = String::from_utf8(bytes).expect("UTF-8");
    let complete = match text.rfind('\n') {
        Some(at) => &text[..=at],
        None => "",
    };
    for (i, line) in complete.lines().enumerate() {
        let record: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("records.jsonl line {}: {e}: {line}", i + 1));
        assert!(record["request"].is_u64(), "line {}: {line}", i + 1);
    }
    complete.lines().count()
}

fn summary(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary.json written");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

/// One signal: the grace, then the summary and 128 + the signal.
fn one_signal(signal: Signal, name: &str, code: i32) {
    let out = scratch(&format!("interrupt-{name}")).join("run");
    let mut child = start(&out, "20", "0.5");
    wait_until(&out, &mut child, clock_started);
    std::thread::sleep(Duration::from_millis(500));
    send(&child, signal);
    let (exit, console, err) = finish(child);
    assert_eq!(exit, Some(code), "{name}: {err}");
    assert!(
        console.contains(&format!("(cancelled by {name})")),
        "{console}"
    );
    assert!(err.contains("stopping: no new requests"), "{name}: {err}");
    assert!(
        err.contains("error: stopped by") && err.contains(name),
        "{name}: {err}"
    );
    let records = valid_prefix(&out);
    let summary = summary(&out);
    assert_eq!(summary["cancelled"], true, "{name}");
    assert_eq!(summary["complete"], true, "{name}");
    assert_eq!(summary["stopped_by"], name, "{name}");
    assert_eq!(summary["counts"]["dispatched"], records as u64, "{name}");
    assert!(
        summary["counts"]["cancelled"].as_u64() > Some(0),
        "{name}: {summary:#}"
    );
    assert!(out.join("end.json").is_file());
}

#[test]
fn sigint_stops_a_run_with_a_summary_and_130() {
    one_signal(Signal::SIGINT, "SIGINT", 130);
}

#[test]
fn sigterm_stops_a_run_with_a_summary_and_143() {
    one_signal(Signal::SIGTERM, "SIGTERM", 143);
}

#[test]
fn sighup_stops_a_run_with_a_summary_and_129() {
    one_signal(Signal::SIGHUP, "SIGHUP", 129);
}

#[test]
fn a_second_signal_during_the_grace_still_writes_the_summary() {
    let out = scratch("interrupt-double").join("run");
    // Requests of seconds and a grace of a minute: the second signal
    // comes while they are still in flight.
    let mut child = start(&out, "20", "60");
    wait_until(&out, &mut child, clock_started);
    std::thread::sleep(Duration::from_millis(500));
    send(&child, Signal::SIGTERM);
    std::thread::sleep(Duration::from_millis(500));
    send(&child, Signal::SIGINT);
    let (exit, _, err) = finish(child);
    assert_eq!(exit, Some(143), "{err}");
    assert!(err.contains("quit by a second SIGINT"), "{err}");
    let records = valid_prefix(&out);
    let summary = summary(&out);
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["cancelled"], true);
    assert_eq!(summary["stopped_by"], "SIGTERM");
    assert_eq!(summary["counts"]["dispatched"], records as u64);
    assert!(!out.join("end.json").exists());
    let notes = summary["notes"].to_string();
    assert!(notes.contains("abandoned"), "{notes}");
}

#[test]
fn after_kill_9_the_records_are_a_valid_prefix_and_summarize_rebuilds_the_summary() {
    let out = scratch("interrupt-kill9").join("run");
    let mut child = start(&out, "1", "1");
    wait_until(&out, &mut child, has_records);
    std::thread::sleep(Duration::from_millis(200));
    send(&child, Signal::SIGKILL);
    let (exit, _, _) = finish(child);
    assert_eq!(exit, None, "killed by the signal");
    let records = valid_prefix(&out);
    assert!(records > 0);
    assert!(!out.join("summary.json").exists());
    let rebuilt = arbor(&["summarize", out.to_str().expect("UTF-8")]);
    assert!(rebuilt.status.success(), "{}", stderr(&rebuilt));
    let summary = summary(&out);
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["counts"]["dispatched"], records as u64);
}
