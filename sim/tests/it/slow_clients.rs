//! Slow clients (slowloris): a request head or body that never finishes
//! does not hold a connection past the emulator's read timeouts
//! (`EmulatorConfig::read_timeouts`, docs/emulator.md "Read timeouts").
//! The timeouts are set short here so each test takes well under 2 s.

use std::time::Duration;

use arbor_sim::emulator::{EmulatorConfig, ReadTimeouts};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::support::start;

/// The timeouts are exact lower bounds on when a connection closes; the
/// upper bounds below are 4x (900 ms over, what a loaded 2-core machine
/// may add to a timer and a close), not windows of milliseconds.
const HEADER: Duration = Duration::from_millis(300);
const BODY: Duration = Duration::from_millis(300);

fn short_timeouts() -> EmulatorConfig {
    EmulatorConfig {
        read_timeouts: ReadTimeouts {
            header: HEADER.as_nanos() as u64,
            body: BODY.as_nanos() as u64,
        },
        ..EmulatorConfig::default()
    }
}

/// Writes `bytes` and reads until the server closes the connection (or
/// 5 s pass): what it answered, and when the connection closed.
async fn send_and_wait_for_close(addr: std::net::SocketAddr, bytes: &[u8]) -> (String, Duration) {
    // Stamped before the connect: the server's header timer starts when it
    // accepts, which can be after `connect` returns on a loaded machine
    // (the kernel completes the handshake first), never before it began.
    let started = Instant::now();
    let mut socket = TcpStream::connect(addr).await.expect("connect");
    socket.write_all(bytes).await.expect("write");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the connection was still open after 5 s");
    (
        String::from_utf8_lossy(&answer).into_owned(),
        started.elapsed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_a_request_head_is_disconnected_after_the_header_timeout() {
    let emu = start(short_timeouts()).await;
    let (_, took) = send_and_wait_for_close(
        emu.addr(),
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty",
    )
    .await;
    assert!(took >= HEADER, "closed before the timeout: {took:?}");
    assert!(took < HEADER * 4, "closed late: {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_after_the_header_timeout() {
    let emu = start(short_timeouts()).await;
    let (answer, took) = send_and_wait_for_close(emu.addr(), b"").await;
    assert!(answer.is_empty(), "{answer}");
    assert!((HEADER..HEADER * 4).contains(&took), "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_length_gets_408_after_the_body_timeout() {
    let emu = start(short_timeouts()).await;
    let head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                Content-Type: application/json\r\nContent-Length: 200\r\n\r\n";
    let partial = format!("{head}{{\"messages\":[{{\"role\":\"user\",");
    let (answer, took) = send_and_wait_for_close(emu.addr(), partial.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.to_ascii_lowercase().contains("connection: close"),
        "{answer}"
    );
    assert!(took >= BODY, "answered before the timeout: {took:?}");
    assert!(took < BODY * 4, "answered late: {took:?}");
    assert_eq!(emu.stats().bad_requests, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_client_is_not_cut_by_the_timeouts() {
    let emu = start(short_timeouts()).await;
    let body = r#"{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (answer, took) = send_and_wait_for_close(emu.addr(), request.as_bytes()).await;
    // Answered, not cut: the 200 says so; the time bound is only that it
    // did not wait for a timeout and a retry (4x, for a loaded machine).
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(took < HEADER * 4, "{took:?}");
}
