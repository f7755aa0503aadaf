//! What `arbor run` claims before it sends: its output directory (a lock
//! held for the whole run, so two runs never write one `--out`; default
//! names that never collide) and file descriptors (the soft limit raised,
//! a plan whose peak cannot fit refused with the numbers).

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use crate::util::*;

/// 200 trees: 200 sessions all start at once.
const MANY: &str = "trees=200,turns=2,depth=0,isl=16,osl=4,think_ms=10,tool_ms=10,seed=1";
const SMALL: &str = "trees=2,turns=3,depth=0,isl=64,osl=8,think_ms=10,tool_ms=10,seed=1";

/// `arbor emulate` on a free port, and its base URL.
fn emulator() -> (Child, String) {
    emulator_with(&["--itl-ms", "2"])
}

fn spawn_run(args: &[&str], dir: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .arg("run")
        .args(args)
        .arg("--no-progress")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor run starts")
}

fn outputs(children: Vec<Child>) -> Vec<Output> {
    children
        .into_iter()
        .map(|c| c.wait_with_output().expect("arbor run ends"))
        .collect()
}

#[test]
fn four_runs_into_one_out_directory_one_writes_it_the_others_are_refused() {
    let (mut server, url) = emulator();
    let base = scratch("out-shared");
    let out = base.join("shared");
    let out_text = out.to_str().expect("UTF-8");
    let args = ["--synthetic", SMALL, "--endpoint", &url, "--out", out_text];
    let children = (0..4).map(|_| spawn_run(&args, &base)).collect();
    let results = outputs(children);
    let _ = server.kill();
    let _ = server.wait();
    let ok = results.iter().filter(|o| o.status.success()).count();
    assert_eq!(ok, 1, "exactly one run writes the directory");
    for refused in results.iter().filter(|o| !o.status.success()) {
        let err = stderr(refused);
        assert_eq!(refused.status.code(), Some(2), "{err}");
        assert!(err.contains(out_text), "{err}");
        // The holder writes its pid just after it takes the lock, so a run
        // refused in between names no pid.
        assert!(
            err.contains("another arbor run") || err.contains("not empty"),
            "{err}"
        );
    }
    let records = jsonl(&out.join("records.jsonl"));
    assert!(!records.is_empty());
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("summary.json")).expect("summary.json"),
    )
    .expect("JSON");
    assert_eq!(summary["counts"]["dispatched"], records.len() as u64);
}

#[test]
fn parallel_runs_with_default_names_never_collide() {
    let base = scratch("out-default");
    let args = ["--synthetic", SMALL, "--ttft-ms", "1", "--itl-ms", "0.1"];
    let children = (0..4).map(|_| spawn_run(&args, &base)).collect();
    for result in outputs(children) {
        assert!(result.status.success(), "{}", stderr(&result));
    }
    let mut names: Vec<String> = std::fs::read_dir(base.join("arbor-results"))
        .expect("arbor-results")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 4, "{names:?}");
    for name in &names {
        // YYYYmmdd-HHMMSS.mmm-synthetic-PID
        assert!(name.contains("-synthetic-"), "{name}");
        assert_eq!(name.as_bytes()[15], b'.', "{name}");
    }
}

#[test]
fn a_peak_that_cannot_fit_the_descriptor_limit_is_refused_before_any_request() {
    let base = scratch("out-fds");
    let out = base.join("run");
    let command = format!(
        "ulimit -n 256 && exec {} run --synthetic {MANY} --sessions 200 --ttft-ms 1 --out {} \
         --no-progress",
        env!("CARGO_BIN_EXE_arbor"),
        out.display()
    );
    let result = Command::new("sh")
        .args(["-c", &command])
        .output()
        .expect("sh runs");
    let err = stderr(&result);
    assert_eq!(result.status.code(), Some(2), "{err}");
    for words in [
        "the plan's peak of 200 requests in flight",
        "464 file descriptors",
        "may open 256",
        "--max-inflight 96",
        "ulimit -n",
        "--max-inflight",
    ] {
        assert!(err.contains(words), "`{words}` in: {err}");
    }
    assert!(!out.exists(), "nothing written, nothing sent");
}
