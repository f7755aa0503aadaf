//! What `arbor run` says before the clock starts: the planned duration,
//! and the warnings about lanes that stay empty and about `--loop`
//! without `--cache-bust`. Each runs a short replay against the built-in
//! emulator (zero latency).

use crate::util::*;

/// Runs `arbor run` on one trace with gaps removed, plus `extra`; returns
/// stderr after checking the run finished.
fn run_stderr(name: &str, extra: &[&str]) -> String {
    let out_dir = scratch(name).join("out");
    let trace = fixture("trace_0187.json");
    let mut args = vec![
        "run",
        trace.to_str().unwrap(),
        "--no-progress",
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = arbor(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
    err
}

#[test]
fn the_planned_duration_is_printed_before_the_run() {
    let err = run_stderr("planned", &[]);
    let line = err
        .lines()
        .find(|l| l.contains("planned (the plan's virtual clock"))
        .unwrap_or_else(|| panic!("no planned-duration line in:\n{err}"));
    assert!(line.starts_with("arbor run: about "), "{line}");
    assert!(line.contains("--idle-gap-cap shortens idle time"), "{line}");
    let capped = run_stderr("planned-capped", &["--idle-gap-cap", "0.1"]);
    assert!(
        capped.contains("planned (the plan's virtual clock"),
        "{capped}"
    );
    assert!(!capped.contains("--idle-gap-cap shortens"), "{capped}");
}

#[test]
fn more_sessions_than_trees_warns_that_lanes_stay_empty() {
    let err = run_stderr("sessions", &["--sessions", "3"]);
    assert!(
        err.contains("warning: --sessions 3 but the workload has 1 tree to deal"),
        "{err}"
    );
    assert!(err.contains("2 lanes get no tree and stay empty"), "{err}");
    let fine = run_stderr("sessions-fine", &["--sessions", "1"]);
    assert!(!fine.contains("stay empty"), "{fine}");
}

#[test]
fn loop_without_cache_bust_warns_of_cache_hits() {
    let looped = ["--sessions", "1", "--loop", "--duration", "1s"];
    let err = run_stderr("loop", &looped);
    assert!(
        err.contains("warning: --loop without --cache-bust"),
        "{err}"
    );
    assert!(err.contains("near-total cache hits"), "{err}");
    let mut busted = looped.to_vec();
    busted.push("--cache-bust");
    let fine = run_stderr("loop-busted", &busted);
    assert!(!fine.contains("--loop without --cache-bust"), "{fine}");
}
