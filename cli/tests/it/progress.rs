//! Progress when stderr is not a terminal (here: piped): one status line
//! per interval, shortened by the test hook `ARBOR_STATUS_INTERVAL_MS`,
//! and none under `--no-progress` or `--ui none` (no escape code either);
//! `--ui simple` within `COLUMNS`; `--ui dashboard` forced onto a pipe
//! draws within `COLUMNS` x `LINES` and shows the cursor again when it
//! stops, after a SIGINT too; the final table within `COLUMNS`. Each runs
//! a one-second looped replay against the built-in emulator (the SIGINT
//! one, the demo). What a dashboard frame says is tested in-process
//! (`cli/src/dashboard/view.rs`).

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::util::*;

/// Runs a one-second `--loop` replay with a 100 ms status interval, plus
/// `extra`; returns stderr after checking the run finished.
fn looped_stderr(name: &str, extra: &[&str]) -> String {
    stderr(&looped(name, extra, &[]))
}

/// The same run with `env` set (and `COLUMNS` and `LINES` only as `env`
/// says); returns its output after checking it finished.
fn looped(name: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
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
        .env_remove("COLUMNS")
        .env_remove("LINES")
        .envs(env.iter().copied())
        .output()
        .expect("arbor runs");
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    out
}

/// `text` without its escape sequences (`ESC [ ... letter`), split into
/// the lines a terminal would show.
fn shown_lines(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: parameters up to a final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain.lines().map(str::to_string).collect()
}

fn columns(line: &str) -> usize {
    line.chars().count()
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

#[test]
fn ui_none_prints_no_status_line_and_no_escape_code() {
    let err = looped_stderr("ui-none", &["--ui", "none"]);
    assert!(status_lines(&err).is_empty(), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn no_progress_and_a_ui_are_refused_together() {
    let out = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["run", "--no-progress", "--ui", "dashboard"])
        .output()
        .expect("arbor runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--ui"), "{}", stderr(&out));
}

#[test]
fn simple_status_lines_and_the_final_table_fit_80_columns() {
    let out = looped("ui-simple-80", &["--ui", "simple"], &[("COLUMNS", "80")]);
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("arbor run: ") && l.contains(" sent, "))
        .collect();
    assert!(!lines.is_empty(), "{err}");
    for line in &lines {
        assert!(columns(line) <= 80, "{} columns: {line}", columns(line));
        // Shortened, the line still says where the run stands.
        assert!(
            line.contains(" done, ") && line.contains(" in flight"),
            "{line}"
        );
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| TTFT"), "{table}");
    for line in table.lines() {
        assert!(columns(line) <= 80, "{} columns: {line}", columns(line));
    }
    // Split to fit, the table keeps every column.
    for column in ["count", "mean", "p50", "p90", "p95", "p99", "max"] {
        assert!(
            table.contains(&format!(" {column} |")),
            "no {column} in\n{table}"
        );
    }
}

#[test]
fn a_forced_dashboard_fits_its_size_and_shows_the_cursor_again() {
    let out = looped(
        "ui-dashboard-80",
        &["--ui", "dashboard"],
        &[("COLUMNS", "80"), ("LINES", "24")],
    );
    let err = stderr(&out);
    let (hide, show) = ("\u{1b}[?25l", "\u{1b}[?25h");
    assert!(err.contains(hide), "{err:?}");
    assert!(
        err.rfind(show) > err.rfind(hide),
        "the cursor stays hidden: {err:?}"
    );
    // From the first frame on (the notices before it are lines of a log:
    // stderr is no terminal).
    let drawn = err.find('\u{1b}').map_or("", |i| &err[i..]);
    for line in shown_lines(drawn) {
        assert!(columns(&line) <= 80, "{} columns: {line}", columns(&line));
    }
    // The final frame, whole: the figures' sections and `finished`.
    let last = err.rfind("arbor run · ").map(|i| &err[i..]).unwrap_or("");
    for part in [
        "finished",
        "in flight",
        "rate",
        "latency ms",
        "TTFT",
        "errors",
        "trees",
    ] {
        assert!(
            last.contains(part),
            "no {part:?} in the final frame: {last:?}"
        );
    }
}

#[test]
fn ctrl_c_under_the_dashboard_stops_the_run_and_shows_the_cursor_again() {
    let out_dir = scratch("ui-dashboard-sigint").join("out");
    let child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args([
            "run",
            "--ui",
            "dashboard",
            "--itl-ms",
            "2",
            "--grace",
            "1",
            "--out",
        ])
        .arg(&out_dir)
        .env("COLUMNS", "100")
        .env("LINES", "30")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read(out_dir.join("records.jsonl")).is_ok_and(|b| b.contains(&b'\n')) {
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("kill");
    let out = child.wait_with_output().expect("output");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(130), "{err}");
    let (hide, show) = ("\u{1b}[?25l", "\u{1b}[?25h");
    assert!(
        err.rfind(show) > err.rfind(hide),
        "the cursor stays hidden: {err:?}"
    );
    // The stop's notice went above the block, which was drawn again.
    let notice = err
        .find("Ctrl+C (SIGINT): stopping")
        .expect("the stop is said");
    assert!(err[notice..].contains("arbor run · "), "{err:?}");
}
