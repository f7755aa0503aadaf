//! `arbor emulate` as its own process: serves `arbor run` until Ctrl+C,
//! sleeping or polling (`--busy-poll`).

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

fn start(extra: &[&str]) -> (Child, u16) {
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
fn interrupt(mut child: Child) {
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
