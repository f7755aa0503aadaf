//! Running the binary and reading what it wrote.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn arbor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .output()
        .expect("the arbor binary runs")
}

/// `command`'s output (stdin closed), failing the test, the process
/// killed, when it runs longer than `bound`: for what hung before a fix.
pub fn output_within(command: &mut Command, bound: Duration) -> Output {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the arbor binary runs");
    let started = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("its output")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs arbor, expects exit code 2 (bad input or flags), no panic, and
/// every needle in stderr; returns stderr.
pub fn expect_exit_2(args: &[&str], needles: &[&str]) -> String {
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
    err
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/weka-kv-cache-tester")
        .join(name)
}

/// A fresh scratch directory for one test, under cargo's target tmp dir
/// (`target/tmp/arbor-it/NAME`): emptied when the test starts, so reruns
/// replace what the last run left and nothing piles up in `/tmp`. Names
/// are unique within the suite.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("arbor-it")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Lines of a JSONL file as JSON values.
pub fn jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .expect("file written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

/// The nearest-rank quantile `q` (a fraction) of sorted values: the
/// ⌈q·n⌉-th, as the summary takes its percentiles.
pub fn nearest_rank<T: Copy>(sorted: &[T], q: f64) -> T {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn secs_to_ns(v: &serde_json::Value) -> u64 {
    (v.as_f64().expect("a number") * 1e9).round() as u64
}

/// Flags that make a replay quick: no tool or think time, idle gaps capped
/// at 0.1 s.
pub const FAST: [&str; 6] = [
    "--tool-time",
    "zero",
    "--think-time-pct",
    "0",
    "--idle-gap-cap",
    "0.1",
];

/// A short AgentX recipe run (closed loop of 3 lanes with a warm-up
/// window, 2 s, a fast emulator, seed 7) on the Weka fixtures; the recipe's
/// own locks are overridden, so the run is stamped invalid.
pub const AGENTX_SHORT: [&str; 17] = [
    "--scenario",
    "agentx-mvp",
    "--sessions",
    "3",
    "--duration",
    "2",
    "--unsafe-override",
    "--idle-gap-cap",
    "0.5",
    "--warmup-spread",
    "0.5",
    "--seed",
    "7",
    "--ttft-ms",
    "2",
    "--itl-ms",
    "0.05",
];

/// `arbor run ARGS --out OUT --no-progress` against the built-in emulator
/// (no `--endpoint`); it must succeed.
pub fn run_into(out: &Path, args: &[&str]) -> Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend([
        "--out",
        out.to_str().expect("a UTF-8 path"),
        "--no-progress",
    ]);
    let result = arbor(&all);
    assert!(result.status.success(), "{args:?}: {}", stderr(&result));
    result
}

/// The finding of `probe` in an `arbor doctor --json` report.
pub fn finding<'a>(report: &'a serde_json::Value, probe: &str) -> &'a serde_json::Value {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["probe"] == probe)
        .unwrap_or_else(|| panic!("no `{probe}` finding in {report:#}"))
}

/// `arbor emulate` with `flags` on a free port, and its base URL (from
/// the line it prints when it listens).
pub fn emulator_with(flags: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["emulate", "--port", "0"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("arbor emulate starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the emulator says where it listens");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in `{line}`"))
        .to_string();
    (child, url)
}

/// The URL of a free port nothing listens on (bound, then dropped).
pub fn dead_port() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    format!("http://127.0.0.1:{port}")
}
