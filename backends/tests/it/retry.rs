//! `--retry-on`: a request refused with a listed status is tried again,
//! and only then, against a scripted server on 127.0.0.1 that counts what
//! it receives. Waits are `Retry-After: 0` (no sleep to bound).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arbor_backends::live::exchange::Target;
use arbor_runs::record::{ErrorCategory, Response};

use crate::http::{runtime, send};
use crate::std_server::{Reply, StdServer};

/// A refusal with `code` and `Retry-After: 0`, then a close.
fn refusal(code: u16) -> Reply {
    let body = r#"{"error":{"message":"slow down"}}"#;
    let head = format!(
        "HTTP/1.1 {code} Refused\r\nRetry-After: 0\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    Reply::Raw([head.as_bytes(), body.as_bytes()].concat())
}

/// A server refusing the first `refusals` POSTs with `code`, then
/// streaming; one request sent to it with `retry_on` and `retries`.
fn against(code: u16, refusals: usize, retry_on: &[u16], retries: u32) -> (Response, usize) {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    let server = StdServer::start(move |_| {
        if counter.fetch_add(1, Ordering::SeqCst) < refusals {
            refusal(code)
        } else {
            Reply::Stream
        }
    });
    let mut target = Target::new(
        &format!("{}/v1/chat/completions", server.base_url()),
        &Default::default(),
        Duration::from_secs(10),
        retries,
        None,
    )
    .expect("a loopback URL");
    target.retry_on = Arc::from(retry_on);
    let response = runtime().block_on(send(&target, 1));
    (response, server.posts_of(1))
}

#[test]
fn a_listed_refusal_is_tried_again_and_every_attempt_counted() {
    let (r, received) = against(429, 2, &[429, 503], 3);
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(r.http_status, Some(200));
    assert_eq!((r.attempts, r.retries), (3, 2));
    assert_eq!(received, 3, "the server saw each try");
    assert!(r.stamps.first_content.is_some());
}

#[test]
fn nothing_is_retried_by_default_nor_a_status_not_listed() {
    let (r, received) = against(429, 1, &[], 3);
    assert_eq!(
        r.error.as_ref().map(|e| e.category),
        Some(ErrorCategory::HttpStatus)
    );
    assert_eq!((r.attempts, r.retries, received), (1, 0, 1));
    let (r, received) = against(500, 1, &[429], 3);
    assert_eq!(r.http_status, Some(500));
    assert_eq!((r.attempts, r.retries, received), (1, 0, 1));
}

#[test]
fn retries_stop_at_their_count_with_the_last_refusal() {
    let (r, received) = against(503, 10, &[503], 2);
    let e = r.error.as_ref().expect("still refused");
    assert_eq!(e.http_status, Some(503));
    assert!(e.message.contains("slow down"), "{}", e.message);
    assert_eq!((r.attempts, r.retries, received), (3, 2, 3));
}
