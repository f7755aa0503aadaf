//! Progress when stderr is not a terminal (here: piped): one status line
//! per interval, shortened by the test hook `ARBOR_STATUS_INTERVAL_MS`,
//! and none under `--no-progress`. Each runs a one-second looped replay
//! against the built-in emulator.

use std::process::Command;

use crate::util::*;

/// Runs a one-second `--loop` replay with a 100 ms status interval, plus
/// `extra`; returns stderr after checking the run finished.
fn looped_stderr(name: &str, extra: &[&str]) -> String {
    let out_dir = scratch(name).join("out");
    let trace = fixture("trace_0187.json");
    let mut args = vec![
        "run",
        trace.to_str().unwrap(),
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--sessions",
        "1",
        "--loop",
        "--cache-bust",
        "--duration",
        "1s",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(&args)
        .env("ARBOR_STATUS_INTERVAL_MS", "100")
        .output()
        .expect("arbor runs");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    err
}

fn status_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("arbor run: ") && l.contains(" elapsed of "))
        .collect()
}

#[test]
fn a_piped_run_prints_status_lines_with_every_field() {
    let err = looped_stderr("status", &[]);
    let lines = status_lines(&err);
    assert!(lines.len() >= 2, "want two status lines or more in:\n{err}");
    for line in &lines {
        // Within the duration an ETA; past it (the grace period, while the
        // last requests finish) what the run waits for.
        assert!(
            line.contains(" planned, ETA ")
                || line.contains(" planned, duration reached, waiting for "),
            "{line:?}"
        );
        for field in [
            " elapsed of ",
            " sent, ",
            " done, ",
            " in flight, ",
            " errors",
        ] {
            assert!(line.contains(field), "no {field:?} in {line:?}");
        }
        assert!(!line.contains('\r') && !line.contains('\u{1b}'), "{line:?}");
    }
}

#[test]
fn no_progress_prints_no_status_line() {
    let err = looped_stderr("status-none", &["--no-progress"]);
    assert!(status_lines(&err).is_empty(), "{err}");
}
