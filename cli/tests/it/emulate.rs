//! `arbor emulate` as its own process: serves `arbor run` until Ctrl+C,
//! sleeping or polling (`--busy-poll`); and the emulator's prompt counts
//! with `--tokenizer` (standalone and built in), equal to the plan's.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::*;

/// A port free a moment ago on 127.0.0.1.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

/// True once `GET /health` answers 200.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

pub fn start(extra: &[&str]) -> (Child, u16) {
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["emulate", "--port", &port.to_string(), "--itl-ms", "1"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("arbor emulate starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !healthy(port) {
        assert!(Instant::now() < deadline, "the emulator never answered");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, port)
}

/// Ctrl+C, as a user would stop it: it must exit cleanly and soon.
pub fn interrupt(mut child: Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "exit status {status}");
            return;
        }
        assert!(Instant::now() < deadline, "Ctrl+C did not stop it");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_standalone_emulator_serves_a_run_sleeping_or_polling() {
    for extra in [&[][..], &["--busy-poll"][..]] {
        let (child, port) = start(extra);
        let out_dir = scratch(&format!("emulate-{}", extra.len()));
        let out = arbor(&[
            "run",
            "--synthetic",
            "trees=2,turns=3,depth=0,isl=64,osl=8,think_ms=10,tool_ms=10,seed=1",
            "--endpoint",
            &format!("http://127.0.0.1:{port}"),
            "--no-progress",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        interrupt(child);
        assert!(out.status.success(), "{}", stderr(&out));
        let records = std::fs::read_to_string(out_dir.join("records.jsonl")).unwrap();
        // `arbor plan` of the same spec dispatches 3 turns.
        assert_eq!(records.lines().count(), 3, "{extra:?}");
        assert!(records.lines().all(|l| l.contains("\"status\":\"ok\"")));
    }
}

fn abench_sample() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/abench/sample.jsonl"
    )
    .to_string()
}

pub fn smollm() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../testdata/tokenizers/smollm2-135m/tokenizer.json"
    )
    .to_string()
}

/// (planned, usage-reported) prompt tokens of every record of a run.
fn prompt_tokens(out_dir: &std::path::Path) -> Vec<(u64, u64)> {
    jsonl(&out_dir.join("records.jsonl"))
        .iter()
        .map(|r| {
            assert_eq!(r["input_tokens_source"], "usage", "{r}");
            let n = |k: &str| r[k].as_u64().expect("a count");
            (n("planned_input_tokens"), n("input_tokens"))
        })
        .collect()
}

/// Recorded text (the abench sample) planned with `--tokenizer`: the
/// built-in emulator counts its usage with the same tokenizer, so every
/// record's reported prompt tokens equal the plan's.
#[test]
fn the_built_in_emulator_counts_prompts_with_runs_tokenizer() {
    let out_dir = scratch("tokenizer-built-in");
    let (sample, tokenizer) = (abench_sample(), smollm());
    let mut args = vec![sample.as_str(), "--tokenizer", tokenizer.as_str()];
    args.extend(FAST);
    let out = run_into(&out_dir, &args);
    let counts = prompt_tokens(&out_dir);
    assert_eq!(counts.len(), 12);
    for (planned, reported) in counts {
        assert_eq!(planned, reported);
    }
    // The console and summary.json name the emulator's tokenizer.
    assert!(stdout(&out).contains("prompt tokens counted with --tokenizer"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let emulator = summary["config"]["emulator"].as_str().expect("settings");
    assert!(
        emulator.ends_with(&format!("--tokenizer {tokenizer}")),
        "{emulator}"
    );
}

/// `arbor emulate --tokenizer` counts as the plan does; without it, the
/// emulator's estimate of the same recorded text differs from the plan's
/// tokenizer count (what the flag is for).
#[test]
fn a_standalone_emulator_counts_prompts_with_its_tokenizer() {
    let (sample, tokenizer) = (abench_sample(), smollm());
    for with in [true, false] {
        let extra: &[&str] = if with {
            &["--tokenizer", tokenizer.as_str()]
        } else {
            &[]
        };
        let (child, port) = start(extra);
        let out_dir = scratch(&format!("tokenizer-standalone-{with}"));
        let endpoint = format!("http://127.0.0.1:{port}");
        let mut args = vec![
            "run",
            sample.as_str(),
            "--tokenizer",
            tokenizer.as_str(),
            "--endpoint",
            endpoint.as_str(),
            "--no-progress",
            "--out",
            out_dir.to_str().unwrap(),
        ];
        args.extend(FAST);
        let out = arbor(&args);
        interrupt(child);
        assert!(out.status.success(), "{}", stderr(&out));
        let counts = prompt_tokens(&out_dir);
        assert_eq!(counts.len(), 12);
        let equal = counts.iter().filter(|(p, r)| p == r).count();
        if with {
            assert_eq!(equal, counts.len(), "{counts:?}");
        } else {
            assert!(equal < counts.len(), "{counts:?}");
        }
    }
}

#[test]
fn emulate_refuses_a_file_that_is_not_a_tokenizer() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    expect_exit_2(
        &["emulate", "--port", "0", "--tokenizer", manifest],
        &["Cargo.toml", "tokenizer.json"],
    );
}

/// `arbor emulate --replicas 3 --router affinity`: prints each replica's
/// address and the router's, and the router answers a completion with
/// the replica that served it. Port 0, so every listener takes a free
/// port of its own: consecutive ports from a free one need not be free
/// on a busy CI machine.
#[test]
fn a_fleet_behind_a_router_prints_its_addresses_and_serves() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["emulate", "--port", "0"])
        .args(["--replicas", "3", "--router", "affinity"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor emulate starts");
    let stdout = child.stdout.take().expect("stdout");
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .take(4)
        .map(|l| l.expect("a line"))
        .collect();
    if lines.len() < 4 {
        let _ = child.kill();
        let mut err = String::new();
        let _ = child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err);
        panic!("the fleet printed {lines:?}; stderr: {err}");
    }
    let port_in = |line: &str, prefix: &str, suffix: &str| -> u16 {
        let rest = line
            .strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(suffix))
            .unwrap_or_else(|| panic!("{line:?} is not {prefix}PORT{suffix}"));
        rest.parse()
            .unwrap_or_else(|_| panic!("{line:?}: {rest:?} is not a port"))
    };
    let mut ports: Vec<u16> = (0..3)
        .map(|i| {
            port_in(
                &lines[i],
                &format!("arbor emulate: replica {i} listening on http://127.0.0.1:"),
                "",
            )
        })
        .collect();
    let port = port_in(
        &lines[3],
        "arbor emulate: router (affinity) listening on http://127.0.0.1:",
        " (Ctrl+C stops)",
    );
    ports.push(port);
    ports.sort_unstable();
    ports.dedup();
    assert_eq!(ports.len(), 4, "four distinct listeners: {lines:?}");
    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}"#;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("the router listens");
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Session-Affinity: s1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("x-arbor-replica: 0"), "{answer}");
    interrupt(child);
}

#[test]
fn emulate_refuses_a_bad_router_or_replica_count() {
    for (args, expected) in [
        (&["--router", "sticky"][..], "expected affinity, dynamo"),
        (&["--replicas", "0"][..], "expected 1 to"),
        (
            &["--replicas", "2", "--tls-self-signed"][..],
            "cannot be used with",
        ),
    ] {
        let out = arbor(&[&["emulate"][..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&out).contains(expected),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
