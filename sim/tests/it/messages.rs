//! `/v1/messages`: Anthropic's event sequence with the chat endpoint's
//! timing, cache accounting and faults.

use arbor_sim::emulator::{EmulatorConfig, FailStatus};
use serde_json::{json, Value};

use crate::support::{client, post, start};

fn messages_body(system: &str, user: &str, max_tokens: u32, stream: bool) -> Value {
    json!({"model": "arbor-emulator", "max_tokens": max_tokens, "stream": stream,
           "system": system, "messages": [{"role": "user", "content": user}]})
}

/// The `type` of each event of a stream.
fn types(events: &[crate::support::Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.json().unwrap()["type"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_stream_follows_the_documented_sequence() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let r = post(
        &c,
        &emu,
        "/v1/messages",
        &messages_body("abcd", "efgh", 3, true),
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert!(!r.cut);
    assert_eq!(
        types(&r.events),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    // Every data line has its event line.
    for name in [
        "message_start",
        "ping",
        "content_block_delta",
        "message_stop",
    ] {
        assert!(r.body.contains(&format!("event: {name}\ndata: ")), "{name}");
    }
    let start_event = r.events[0].json().unwrap();
    assert_eq!(start_event["message"]["role"], "assistant");
    assert_eq!(start_event["message"]["model"], "arbor-emulator");
    assert_eq!(start_event["message"]["usage"]["input_tokens"], 2);
    assert_eq!(r.events[3].json().unwrap()["delta"]["text"], " tok0");
    let delta = r.events[7].json().unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
    assert_eq!(delta["usage"]["output_tokens"], 3);
    assert_eq!(emu.stats().completed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_prefix_is_read_from_the_cache() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let system = "s".repeat(2000);
    let first = post(
        &c,
        &emu,
        "/v1/messages",
        &messages_body(&system, "a", 2, true),
        None,
    )
    .await;
    let usage = &first.events[0].json().unwrap()["message"]["usage"];
    assert_eq!(usage["cache_read_input_tokens"], 0);
    let second = post(
        &c,
        &emu,
        "/v1/messages",
        &messages_body(&system, "b", 2, true),
        None,
    )
    .await;
    let usage = second.events[0].json().unwrap()["message"]["usage"].clone();
    let cached = usage["cache_read_input_tokens"].as_u64().unwrap();
    assert!(cached >= 448, "{usage}");
    // input + cache_read + cache_creation is the whole prompt.
    let input = usage["input_tokens"].as_u64().unwrap();
    assert_eq!(input + cached, 501, "{usage}");
    assert_eq!(usage["cache_creation_input_tokens"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unstreamed_messages_and_errors_take_anthropics_shapes() {
    let emu = start(EmulatorConfig {
        max_model_len: 100,
        ..Default::default()
    })
    .await;
    let c = client();
    let r = post(
        &c,
        &emu,
        "/v1/messages",
        &messages_body("", "abcd", 2, false),
        None,
    )
    .await;
    let answer: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(answer["type"], "message");
    assert_eq!(answer["content"][0]["text"], " tok0 tok1");
    assert_eq!(answer["usage"]["output_tokens"], 2);
    let r = post(
        &c,
        &emu,
        "/v1/messages",
        &messages_body("", "abcd", 200, true),
        None,
    )
    .await;
    assert_eq!(r.status, 400);
    let error: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length"));

    let mut config = EmulatorConfig::default();
    config.faults.fail_rate = 1.0;
    config.faults.fail_status = FailStatus::Overloaded;
    let emu = start(config).await;
    let r = post(
        &c,
        &emu,
        "/v1/messages",
        &messages_body("", "x", 2, true),
        None,
    )
    .await;
    assert_eq!(r.status, 529);
    let error: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(error["error"]["type"], "overloaded_error");
    assert_eq!(emu.stats().errors_529, 1);
}
