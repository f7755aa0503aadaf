//! OpenAI Responses streams through the live client (`--api responses`):
//! the documented event sequence (reasoning, a function call's argument
//! deltas and text deltas; usage and cached tokens in
//! `response.completed`), a stream cut before its terminal event, an
//! `error` event and a failed response; then a live run against the
//! in-process emulator's `/v1/responses`, its records agreeing with the
//! emulator's own count. Streams are served by the scripted servers of
//! `http.rs`.

use std::time::Duration;

use arbor_backends::live::exchange::Target;
use arbor_backends::live::request::Api;
use arbor_runs::record::{ErrorCategory, Response, TokenSource};
use arbor_sim::emulator::{serve, EmulatorConfig};

use crate::http::{runtime, scripted, send, Step, WIRES};
use crate::live::{drive_api, immediate, one_turn_trees, server_runtime};

/// A Responses stream as OpenAI documents it: a reasoning item, a message
/// of two text deltas, a function call whose arguments come in two
/// deltas, and `response.completed` with the usage.
const DOCUMENTED: &str = concat!(
    "event: response.created\n",
    r#"data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","error":null,"output":[],"usage":null}}"#,
    "\n\nevent: response.in_progress\n",
    r#"data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","error":null,"output":[],"usage":null}}"#,
    "\n\nevent: response.output_item.added\n",
    r#"data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
    "\n\nevent: response.reasoning_summary_text.delta\n",
    r#"data: {"type":"response.reasoning_summary_text.delta","sequence_number":3,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Thinking."}"#,
    "\n\nevent: response.output_item.added\n",
    r#"data: {"type":"response.output_item.added","sequence_number":4,"output_index":1,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}"#,
    "\n\nevent: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":1,"content_index":0,"delta":"Reading"}"#,
    "\n\nevent: response.output_text.delta\n",
    r#"data: {"type":"response.output_text.delta","sequence_number":6,"item_id":"msg_1","output_index":1,"content_index":0,"delta":" the file."}"#,
    "\n\nevent: response.output_item.added\n",
    r#"data: {"type":"response.output_item.added","sequence_number":7,"output_index":2,"item":{"id":"fc_1","type":"function_call","name":"shell","call_id":"call_1","arguments":""}}"#,
    "\n\nevent: response.function_call_arguments.delta\n",
    r#"data: {"type":"response.function_call_arguments.delta","sequence_number":8,"item_id":"fc_1","output_index":2,"delta":"{\"cmd\":"}"#,
    "\n\nevent: response.function_call_arguments.delta\n",
    r#"data: {"type":"response.function_call_arguments.delta","sequence_number":9,"item_id":"fc_1","output_index":2,"delta":"\"cat a.rs\"}"}"#,
    "\n\nevent: response.completed\n",
    r#"data: {"type":"response.completed","sequence_number":10,"response":{"id":"resp_1","object":"response","status":"completed","error":null,"usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":32},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":4},"total_tokens":52}}}"#,
    "\n\n",
);

/// `body` as a sized `text/event-stream` answer, alive for the test run.
fn sse_answer(body: &str) -> &'static [u8] {
    let answer = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    Box::leak(answer.into_bytes().into_boxed_slice())
}

/// The response to one request answered with `answer`, read as a
/// Responses stream, over plain HTTP and over TLS (which must agree).
fn exchange(answer: &'static [u8]) -> Response {
    let [plain, tls] = WIRES.map(|wire| {
        runtime().block_on(async {
            let (server, _) = scripted(wire, vec![vec![Step::Answer(answer)]]).await;
            let mut target: Target = server.target();
            target.api = Api::Responses;
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
    assert_eq!(read(&plain), read(&tls), "TLS reads as plain HTTP does");
    plain
}

#[test]
fn the_documented_event_sequence_is_read_whole() {
    let r = exchange(sse_answer(DOCUMENTED));
    assert_eq!(r.error, None);
    // The two text deltas; reasoning and argument deltas are not text.
    assert_eq!(r.stamps.content.len(), 2);
    assert_eq!(r.stamps.first_content, r.stamps.content.first().copied());
    assert_eq!(r.prompt_tokens, Some(40));
    assert_eq!(r.cached_tokens, Some(32));
    assert_eq!(r.completion_tokens, Some(12));
}

#[test]
fn a_stream_without_its_terminal_event_is_cut() {
    let cut = &DOCUMENTED[..DOCUMENTED.find("event: response.completed").unwrap_or(0)];
    let e = exchange(sse_answer(cut)).error.expect("cut");
    assert_eq!(e.category, ErrorCategory::StreamCut);
    assert!(e.message.contains("response.completed"), "{}", e.message);
}

#[test]
fn an_error_event_or_a_failed_response_is_the_request_s_error() {
    let cut = &DOCUMENTED[..DOCUMENTED.find("event: response.completed").unwrap_or(0)];
    let error = format!(
        "{cut}event: error\ndata: {}\n\n",
        r#"{"type":"error","code":"server_error","message":"The server had an error.","param":null}"#
    );
    let e = exchange(sse_answer(&error)).error.expect("the error event");
    assert_eq!(e.category, ErrorCategory::ServerError);
    assert_eq!(e.message, "server_error: The server had an error.");
    let failed = format!(
        "{cut}event: response.failed\ndata: {}\n\n",
        r#"{"type":"response.failed","response":{"id":"resp_1","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."},"usage":null}}"#
    );
    let r = exchange(sse_answer(&failed));
    let e = r.error.expect("the failure");
    assert_eq!(e.category, ErrorCategory::ContextOverflow, "{}", e.message);
    assert_eq!(r.stamps.content.len(), 2, "the deltas before it");
}

/// `--api responses` against the emulator: every request is a Responses
/// stream read to its end, and the usage each record took from
/// `response.completed` is the emulator's own count.
#[test]
fn a_live_run_against_the_emulator_speaks_responses() {
    let server = server_runtime();
    let emulator = server
        .block_on(serve(
            EmulatorConfig::default(),
            "127.0.0.1:0".parse().expect("addr"),
        ))
        .expect("the emulator starts");
    let (_, records, _) = drive_api(
        &emulator.base_url(),
        Api::Responses,
        one_turn_trees(4, 5),
        immediate(),
        Duration::from_secs(30),
        2,
        true,
        std::future::pending(),
    );
    let stamps = emulator.stamps();
    server.block_on(emulator.shutdown());
    assert_eq!(records.len(), 4);
    assert_eq!(stamps.len(), 4);
    for r in &records {
        assert!(r.error.is_none(), "{r:?}");
        let stamp = stamps
            .iter()
            .find(|s| s.request_id == r.request.to_string())
            .expect("the emulator's stamp of this request");
        assert_eq!(stamp.endpoint, "/v1/responses");
        assert!(stamp.stream);
        assert_eq!(stamp.max_tokens, 5);
        assert_eq!(
            (r.input_tokens, r.input_tokens_source),
            (u64::from(stamp.prompt_tokens), TokenSource::Usage)
        );
        assert_eq!(
            (r.output_tokens, r.output_tokens_source),
            (5, TokenSource::Usage)
        );
        assert_eq!(r.cached_tokens, Some(u64::from(stamp.cached_tokens)));
        assert!(r.ttft_s.is_some() && r.itl_s.len() == 4, "{r:?}");
    }
}
