//! The live client's guarantees (docs/reliability.md) against scripted
//! `std::net` servers on 127.0.0.1: no request is sent twice unasked, a
//! cancelled record keeps what was measured, every cap on what is read is
//! a classified error, invalid UTF-8 is malformed, and a key echoed by the
//! server is not recorded.

use std::time::Duration;

use arbor_backends::live::exchange::{Target, ERROR_BODY_BYTES};
use arbor_backends::live::redact::REDACTED;
use arbor_engine::policy::Policy;
use arbor_runs::record::{ErrorCategory, RequestRecord, Response};

use crate::http::{runtime, send};
use crate::live::{drive, immediate, one_turn_trees};
use crate::std_server::{Reply, StdServer};

fn policy(max_inflight: u32) -> Policy {
    Policy {
        max_inflight: Some(max_inflight),
        ..immediate()
    }
}

/// Runs `n` one-turn trees, `max_inflight` at a time, against `server`.
fn run_trees(server: &StdServer, n: usize, max_inflight: u32) -> Vec<RequestRecord> {
    let (_, records, _) = drive(
        &server.base_url(),
        one_turn_trees(n, 4),
        policy(max_inflight),
        Duration::from_secs(5),
        2,
        false,
        std::future::pending(),
    );
    assert_eq!(records.len(), n, "one record per dispatched request");
    records
}

/// The server side of "never sent twice unasked": each request reached
/// the server at most once (a resend happens only when nothing of the
/// first try was written, so it never adds a receipt), and each that
/// succeeded exactly once; the server's total is the sum.
fn assert_received_at_most_once(server: &StdServer, records: &[RequestRecord]) {
    let mut total = 0;
    for r in records {
        let received = server.posts_of(r.request);
        total += received;
        let expected = if r.error.is_none() { 1..=1 } else { 0..=1 };
        assert!(
            expected.contains(&received),
            "request {} received {received} times ({} attempts, {} resends, {:?})",
            r.request,
            r.attempts,
            r.resends,
            r.error
        );
    }
    assert_eq!(
        server.posts(),
        total,
        "no POST the records do not account for"
    );
}

/// Every record's attempts are its first try plus its resend (no connect
/// retries here), and a resend happens at most once.
fn assert_attempts_add_up(records: &[RequestRecord]) {
    for r in records {
        assert!(
            r.resends <= 1,
            "request {} resent {} times",
            r.request,
            r.resends
        );
        assert_eq!(r.attempts, 1 + r.resends, "request {}", r.request);
    }
}

#[test]
fn a_server_closing_every_connection_after_one_response_gets_each_request_once() {
    let server = StdServer::start(|_| Reply::StreamThenClose);
    let records = run_trees(&server, 40, 2);
    assert_attempts_add_up(&records);
    assert_received_at_most_once(&server, &records);
    assert!(server.posts() <= records.len());
    for r in &records {
        if let Some(e) = &r.error {
            // A close racing the next request: it may have arrived, so it
            // is an error, not a resend.
            assert_eq!(e.category, ErrorCategory::Connect, "{}", e.message);
        }
    }
    let ok = records.iter().filter(|r| r.error.is_none()).count();
    assert!(
        ok >= 20,
        "closed pooled connections are noticed: {ok} of 40 ok"
    );
}

#[test]
fn a_request_the_server_drops_is_received_once() {
    const DROPPED: u64 = 3;
    let server = StdServer::start(|id| {
        if id == DROPPED {
            Reply::Drop
        } else {
            Reply::Stream
        }
    });
    let records = run_trees(&server, 10, 1);
    assert_attempts_add_up(&records);
    let dropped = records
        .iter()
        .find(|r| r.request == DROPPED)
        .expect("its record");
    assert_eq!(
        server.posts_of(DROPPED),
        1,
        "received once (a resend only when the first try provably never left)"
    );
    let e = dropped.error.as_ref().expect("an error");
    assert_eq!(e.category, ErrorCategory::Connect);
    assert!(
        e.message
            .contains("closed after the request was sent, before any response"),
        "{}",
        e.message
    );
    assert_received_at_most_once(&server, &records);
    assert_eq!(server.posts(), records.len());
    let others = records.iter().filter(|r| r.request != DROPPED);
    assert!(others.clone().all(|r| r.error.is_none()));
}

#[test]
fn a_cancelled_record_keeps_what_was_measured() {
    let server = StdServer::start(|_| Reply::Slow(Duration::from_millis(10)));
    let policy = Policy {
        grace: 300_000_000,
        ..immediate()
    };
    let (_, records, outcome) = drive(
        &server.base_url(),
        one_turn_trees(1, 1000),
        policy,
        Duration::from_secs(10),
        0,
        false,
        async { tokio::time::sleep(Duration::from_millis(200)).await },
    );
    assert!(outcome.cancelled);
    let [r] = records.as_slice() else {
        panic!("one record, got {}", records.len())
    };
    assert_eq!(r.status, "cancelled");
    assert_eq!(
        r.error.as_ref().map(|e| e.category),
        Some(ErrorCategory::Cancelled)
    );
    assert!(r.sent_s.is_some() && r.headers_s.is_some());
    assert!(r.first_byte_s.is_some() && r.first_content_s.is_some());
    assert_eq!(r.http_status, Some(200));
    assert!(r.output_tokens > 10, "{} tokens", r.output_tokens);
    assert_eq!(r.itl_s.len() as u64, r.output_tokens - 1);
    assert_eq!(r.attempts, 1);
    let done = r.done_s.expect("the cancel's time");
    assert!(
        (0.45..3.0).contains(&done),
        "cancelled when the grace ran out: {done}"
    );
}

/// One request against a server answering `reply`.
fn answer(reply: Reply) -> Response {
    answer_with(reply, &Default::default())
}

fn answer_with(reply: Reply, headers: &http::HeaderMap) -> Response {
    let server = StdServer::start(move |_| reply.clone());
    let target = Target::new(
        &format!("{}/v1/chat/completions", server.base_url()),
        headers,
        Duration::from_secs(10),
        0,
        None,
    )
    .expect("a loopback URL");
    runtime().block_on(send(&target, 1))
}

/// An answer with status `code` and `body`, then a close.
fn status(code: u16, body: &str) -> Reply {
    let head = format!(
        "HTTP/1.1 {code} Error\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    Reply::Raw([head.as_bytes(), body.as_bytes()].concat())
}

fn failure(r: &Response) -> (ErrorCategory, &str) {
    let e = r.error.as_ref().expect("an error");
    (e.category, &e.message)
}

#[test]
fn a_response_head_past_its_caps_is_oversized() {
    let mut long = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
    long.extend(std::iter::repeat_n(b'x', 70 * 1024));
    long.extend_from_slice(b"\r\n\r\n");
    let r = answer(Reply::Raw(long));
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::Oversized);
    assert!(message.contains("64 KiB (the cap on a head)"), "{message}");

    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for i in 0..100 {
        many.extend_from_slice(format!("X-N{i}: 1\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let r = answer(Reply::Raw(many));
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::Oversized);
    assert!(message.contains("more than 64 header lines"), "{message}");

    let endless: Vec<u8> = b"HTTP/1.1 100 Continue\r\n\r\n".repeat(4000);
    let r = answer(Reply::Raw(endless));
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::Oversized);
    assert!(
        message.contains("informational (1xx) heads passed 64 KiB"),
        "{message}"
    );
}

#[test]
fn an_sse_line_past_its_cap_is_oversized() {
    let mut line = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: {".to_vec();
    line.extend(std::iter::repeat_n(b'x', 3 * 1024 * 1024));
    let r = answer(Reply::Raw(line));
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::Oversized);
    assert!(
        message.starts_with("an SSE line passed 1 MiB (the cap on one line) after "),
        "{message}"
    );
    assert_eq!(r.http_status, Some(200));
}

#[test]
fn a_chunk_size_line_past_its_cap_is_oversized() {
    let mut body = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;".to_vec();
    body.extend(std::iter::repeat_n(b'x', 10_000));
    let r = answer(Reply::Raw(body));
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::Oversized);
    assert!(message.contains("chunk-size line"), "{message}");
}

#[test]
fn a_100_mb_stream_is_read_whole_without_buffering_it() {
    // 1600 lines of 64 KiB of text: about 105 MB.
    let r = answer(Reply::Many {
        lines: 1600,
        bytes: 64 * 1024,
    });
    assert_eq!(r.error, None);
    assert_eq!(r.stamps.content.len(), 1600);
}

#[test]
fn invalid_utf8_in_a_stream_is_malformed_not_a_token() {
    let stream = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"\xff\xfe\"}}]}\n\ndata: [DONE]\n\n"
        .to_vec();
    let r = answer(Reply::Raw(stream));
    let (category, _) = failure(&r);
    assert_eq!(category, ErrorCategory::MalformedSse);
    assert!(r.stamps.content.is_empty(), "not a token");
}

#[test]
fn a_key_echoed_in_an_error_body_is_redacted() {
    const KEY: &str = "sk-arbor-test-0123456789abcdef";
    const OTHER: &str = "ak-other-secret-value";
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "authorization",
        format!("Bearer {KEY}").parse().expect("a header value"),
    );
    headers.insert("x-api-key", OTHER.parse().expect("a header value"));
    let body = format!("{{\"error\":\"invalid key {KEY} (and {OTHER})\"}}");
    let r = answer_with(status(401, &body), &headers);
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::HttpStatus);
    assert!(
        !message.contains(KEY) && !message.contains(OTHER),
        "{message}"
    );
    assert!(message.contains(REDACTED), "{message}");

    // The key cut by the cap on a kept error body: its start is redacted.
    let body = format!("{}{KEY}", "x".repeat(ERROR_BODY_BYTES - 12));
    let r = answer_with(status(401, &body), &headers);
    let (_, message) = failure(&r);
    assert!(!message.contains(&KEY[..8]), "{message}");
    assert!(message.ends_with(REDACTED), "{message}");
}

#[test]
fn an_error_body_is_kept_to_its_cap() {
    let r = answer(status(500, &"e".repeat(3 * 1024 * 1024)));
    let (category, message) = failure(&r);
    assert_eq!(category, ErrorCategory::HttpStatus);
    assert_eq!(message.len(), ERROR_BODY_BYTES);
}
