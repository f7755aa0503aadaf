//! Anthropic Messages streams through the client: the documented event
//! sequence (ping, a tool_use block, usage split across `message_start`
//! and `message_delta`), an `error` event mid-stream, a real llama.cpp
//! stream, and HTTP 529. Streams are served by the scripted servers of
//! `http.rs` from `testdata/messages/`.

use arbor_backends::live::exchange::Target;
use arbor_backends::live::request::Api;
use arbor_runs::record::{ErrorCategory, Response};

use crate::http::{runtime, scripted, send, Step, WIRES};

/// `body` as a sized `text/event-stream` answer, alive for the test run.
fn sse_answer(body: &str) -> &'static [u8] {
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    Box::leak(answer.into_bytes().into_boxed_slice())
}

fn testdata(name: &str) -> String {
    let path = format!("{}/../testdata/messages/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The response to one request answered with `answer`, read as a Messages
/// stream, over plain HTTP and over TLS (which must read the same: the
/// plain one is returned).
fn exchange(answer: &'static [u8]) -> Response {
    let [plain, tls] = WIRES.map(|wire| {
        runtime().block_on(async {
            let (server, _) = scripted(wire, vec![vec![Step::Answer(answer)]]).await;
            let mut target: Target = server.target();
            target.api = Api::Messages;
            send(&target, 1).await
        })
    });
    let read = |r: &Response| {
        (
            r.error.clone(),
            r.stamps.content.len(),
            r.prompt_tokens,
            r.cached_tokens,
            r.completion_tokens,
        )
    };
    assert_eq!(
        read(&plain),
        read(&tls),
        "TLS reads the stream as plain HTTP does"
    );
    plain
}

#[test]
fn the_documented_event_sequence_is_read_whole() {
    let r = exchange(sse_answer(&testdata("documented.sse")));
    assert_eq!(r.error, None);
    // Two text deltas; the tool_use block's JSON deltas are not text.
    assert_eq!(r.stamps.content.len(), 2);
    assert_eq!(r.stamps.first_content, r.stamps.content.first().copied());
    // input 3 + cache_read 20 + cache_creation 5; output from message_delta.
    assert_eq!(r.prompt_tokens, Some(28));
    assert_eq!(r.cached_tokens, Some(20));
    assert_eq!(r.completion_tokens, Some(15));
}

#[test]
fn an_error_event_mid_stream_is_the_requests_error() {
    let r = exchange(sse_answer(&testdata("error-midstream.sse")));
    let e = r.error.expect("the error event");
    assert_eq!(e.category, ErrorCategory::Overloaded);
    assert_eq!(e.message, "overloaded_error: Overloaded");
    assert_eq!(r.stamps.content.len(), 1, "the delta before the error");
    assert_eq!((r.prompt_tokens, r.cached_tokens), (Some(12), Some(0)));
    // Any other error type is a server error.
    let other = testdata("error-midstream.sse").replace("overloaded_error", "api_error");
    let e = exchange(sse_answer(&other)).error.unwrap();
    assert_eq!(e.category, ErrorCategory::ServerError);
}

#[test]
fn a_stream_without_message_stop_is_cut() {
    let full = testdata("documented.sse");
    let cut = &full[..full.find("event: message_delta").unwrap()];
    let e = exchange(sse_answer(cut)).error.unwrap();
    assert_eq!(e.category, ErrorCategory::StreamCut);
    assert!(e.message.contains("message_stop"), "{}", e.message);
}

#[test]
fn a_llama_cpp_stream_counts_its_cached_prompt() {
    let r = exchange(sse_answer(&testdata("llamacpp-stream.sse")));
    assert_eq!(r.error, None);
    assert_eq!(r.stamps.content.len(), 6);
    assert_eq!(r.prompt_tokens, Some(25), "input 1 + cache_read 24");
    assert_eq!(r.cached_tokens, Some(24));
    assert_eq!(r.completion_tokens, Some(6));
}

#[test]
fn http_529_is_overloaded() {
    const OVERLOADED: &[u8] = b"HTTP/1.1 529 Site Overloaded\r\nContent-Type: application/json\r\nContent-Length: 79\r\n\r\n{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}    ";
    let r = exchange(OVERLOADED);
    let e = r.error.unwrap();
    assert_eq!(
        (e.category, e.http_status),
        (ErrorCategory::Overloaded, Some(529))
    );
    // A 529 whose body says nothing is overloaded too.
    const BARE: &[u8] = b"HTTP/1.1 529 Overloaded\r\nContent-Length: 0\r\n\r\n";
    let e = exchange(BARE).error.unwrap();
    assert_eq!(e.category, ErrorCategory::Overloaded);
}
