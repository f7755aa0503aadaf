//! `arbor run --threads N` at the process: SIGINT stops every thread
//! (exit 130) and keeps their records. Threads sending the same requests
//! as one, their counts and summaries, and the policies refused are
//! in-process (`arbor/tests/it/threads.rs`).

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::*;

fn json(path: &Path) -> Value {
    serde_json::from_slice(&fs::read(path).expect("the run wrote it")).expect("JSON")
}

fn ids(records: &[Value]) -> BTreeSet<u64> {
    let ids: Vec<u64> = records
        .iter()
        .map(|r| r["request"].as_u64().unwrap())
        .collect();
    let set: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(set.len(), ids.len(), "a request id recorded twice");
    set
}

/// SIGINT stops every thread: the grace, then the summary of what every
/// thread recorded, exit 130.
#[test]
fn a_signal_stops_every_thread_and_keeps_their_records() {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    let dir = scratch("threads-sigint");
    let out = dir.join("run");
    let fixture = fixture("trace_0277.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["run", fixture.to_str().unwrap(), "--threads", "2"])
        .args(["--tool-time", "zero", "--think-time-pct", "0"])
        .args(["--ttft-ms", "5", "--itl-ms", "20", "--copies", "4"])
        .args(["--grace", "0.5", "--no-progress", "--force", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !fs::read(out.join("records.jsonl")).is_ok_and(|b| b.contains(&b'\n')) {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before a signal"
        );
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let done = child.wait_with_output().expect("the run ends");
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["cancelled"], true);
    assert_eq!(summary["stopped_by"], "SIGINT");
    let records = jsonl(&out.join("records.jsonl"));
    ids(&records);
    let counted = ["ok", "failed", "cancelled"]
        .iter()
        .map(|k| summary["counts"][*k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(counted, records.len() as u64);
    // Turns of the plan were left unsent: the run really stopped early.
    assert!(summary["counts"]["skipped"].as_u64().unwrap() > 0);
}
