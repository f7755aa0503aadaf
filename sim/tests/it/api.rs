use arbor_sim::emulator::{serve, EmulatorConfig};
use serde_json::{json, Value};

use crate::support::{chat, client, post, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_models_and_unknown_routes() {
    let config = EmulatorConfig {
        max_model_len: 4096,
        ..Default::default()
    };
    let emu = start(config).await;
    let c = client();
    let health = c
        .get(format!("{}/health", emu.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        health.json::<Value>().await.unwrap(),
        json!({"status": "ok"})
    );

    let models: Value = c
        .get(format!("{}/v1/models", emu.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "arbor-emulator");
    assert_eq!(models["data"][0]["object"], "model");
    assert_eq!(models["data"][0]["owned_by"], "arbor");
    assert_eq!(models["data"][0]["max_model_len"], 4096);

    let missing = c
        .get(format!("{}/v2/nothing", emu.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let wrong_method = c
        .get(format!("{}/v1/completions", emu.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_method.status(), 405);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_model_is_404_and_named_or_absent_model_is_served() {
    let config = EmulatorConfig {
        model_name: "m1".into(),
        ..Default::default()
    };
    let emu = start(config).await;
    let c = client();
    let mut body = chat("hello", 2);
    body["model"] = json!("other");
    let r = post(&c, &emu, "/v1/chat/completions", &body, None).await;
    assert_eq!(r.status, 404);
    let err: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(err["error"]["code"], 404);
    assert_eq!(err["error"]["type"], "NotFoundError");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .contains("`other`"));

    body["model"] = json!("m1");
    let r = post(&c, &emu, "/v1/chat/completions", &body, None).await;
    assert_eq!(r.status, 200);
    assert!(r.done);
    assert_eq!(emu.stats().model_not_found, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_chat_sends_exactly_max_tokens_then_usage_then_done() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let r = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat("abcdefghi", 5),
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert!(r.done && !r.cut);
    let content: Vec<String> = r.content().into_iter().map(|(_, c)| c).collect();
    assert_eq!(content, vec![" tok0", " tok1", " tok2", " tok3", " tok4"]);
    // 5 content chunks, finish, usage, [DONE].
    assert_eq!(r.events.len(), 8);
    let first = r.events[0].json().unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["model"], "arbor-emulator");
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert!(first["id"].as_str().unwrap().starts_with("chatcmpl-"));
    let finish = r.events[5].json().unwrap();
    assert_eq!(finish["choices"][0]["finish_reason"], "length");
    assert!(finish["choices"][0]["delta"]["content"].is_null());
    let usage_chunk = r.events[6].json().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8,
               "prompt_tokens_details": {"cached_tokens": 0}})
    );
    assert_eq!(r.events[7].data, "[DONE]");
    let stats = emu.stats();
    assert_eq!((stats.requests, stats.completed, stats.tokens), (1, 1, 5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_include_usage_there_is_no_usage_chunk_and_default_is_16_tokens() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "stream": true, "ignore_eos": true});
    let r = post(&c, &emu, "/v1/chat/completions", &body, None).await;
    assert_eq!(r.content().len(), 16);
    assert!(r.usage().is_none());
    assert!(r.done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_endpoint_streams_text() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let body = json!({"prompt": "abcdefgh", "max_tokens": 3, "stream": true,
                      "stream_options": {"include_usage": true}});
    let r = post(&c, &emu, "/v1/completions", &body, None).await;
    assert_eq!(r.status, 200);
    let first = r.events[0].json().unwrap();
    assert_eq!(first["object"], "text_completion");
    assert_eq!(first["choices"][0]["text"], " tok0");
    assert_eq!(r.content().len(), 3);
    assert_eq!(
        r.events[3].json().unwrap()["choices"][0]["finish_reason"],
        "length"
    );
    assert_eq!(r.usage().unwrap()["prompt_tokens"], 2);
    assert!(r.done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_returns_one_json_with_usage() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let body = json!({"messages": [{"role": "user", "content": "abcd"}], "max_tokens": 3});
    let r = post(&c, &emu, "/v1/chat/completions", &body, Some("ns-1")).await;
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["choices"][0]["message"]["content"], " tok0 tok1 tok2");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["completion_tokens"], 3);
    assert_eq!(v["usage"]["prompt_tokens"], 1);
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    let body = json!({"prompt": "abcd", "max_tokens": 2});
    let r = post(&c, &emu, "/v1/completions", &body, None).await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["choices"][0]["text"], " tok0 tok1");
    assert_eq!(v["usage"]["total_tokens"], 3);

    let stamps = emu.stamps();
    assert_eq!(stamps.len(), 1);
    assert_eq!(stamps[0].request_id, "ns-1");
    assert!(!stamps[0].stream);
    assert!(stamps[0].done_ns.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_completion_tokens_wins_over_max_tokens() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    let mut body = chat("hi", 9);
    body["max_completion_tokens"] = json!(4);
    let r = post(&c, &emu, "/v1/chat/completions", &body, None).await;
    assert_eq!(r.content().len(), 4);
    assert_eq!(r.usage().unwrap()["completion_tokens"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overflow_is_a_vllm_style_400() {
    let config = EmulatorConfig {
        max_model_len: 100,
        ..Default::default()
    };
    let emu = start(config).await;
    let c = client();
    // 500 bytes: 125 prompt tokens.
    let r = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat(&"x".repeat(500), 16),
        None,
    )
    .await;
    assert_eq!(r.status, 400);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["type"], "BadRequestError");
    assert_eq!(v["error"]["code"], 400);
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "This model's maximum context length is 100 tokens. However, you requested 141 tokens"
        ),
        "{msg}"
    );
    // Prompt fits but prompt + completion does not.
    let r = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat(&"x".repeat(200), 60),
        None,
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r
        .body
        .contains("However, you requested 110 tokens (50 in the messages, 60 in the completion)"));
    let r = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat(&"x".repeat(200), 50),
        None,
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(emu.stats().context_overflows, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_400() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    for body in [
        json!({"max_tokens": 3}),
        json!({"messages": [], "max_tokens": 0}),
        json!([1]),
    ] {
        let r = post(&c, &emu, "/v1/chat/completions", &body, None).await;
        assert_eq!(r.status, 400, "{body}");
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["error"]["code"], 400);
    }
    assert_eq!(emu.stats().bad_requests, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_loopback_is_bound() {
    let err = serve(EmulatorConfig::default(), "0.0.0.0:0".parse().unwrap())
        .await
        .err()
        .expect("0.0.0.0 is refused");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(serve(EmulatorConfig::default(), "[::1]:0".parse().unwrap())
        .await
        .is_err());
    let mut bad = EmulatorConfig::default();
    bad.faults.fail_rate = 2.0;
    assert!(serve(bad, "127.0.0.1:0".parse().unwrap()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stamps_only_for_requests_with_the_header_and_served_over_http() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    post(&c, &emu, "/v1/chat/completions", &chat("a", 3), None).await;
    post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat("b", 3),
        Some("req-7"),
    )
    .await;
    let stamps = emu.stamps();
    assert_eq!(stamps.len(), 1);
    let s = &stamps[0];
    assert_eq!(s.request_id, "req-7");
    assert_eq!(s.seq, 1);
    assert_eq!(s.status, 200);
    assert!(s.stream);
    assert_eq!(s.chunk_ns.len(), 3);
    assert_eq!(s.first_chunk_ns, Some(s.chunk_ns[0]));
    assert!(s.received_ns <= s.chunk_ns[0]);
    assert!(s.chunk_ns.windows(2).all(|w| w[0] <= w[1]));
    assert!(s.done_ns.unwrap() >= s.chunk_ns[2]);

    let over_http: Vec<arbor_sim::emulator::ServerStamp> = c
        .get(format!("{}/arbor/stamps", emu.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(over_http, stamps);
    let clock: Value = c
        .get(format!("{}/arbor/clock", emu.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(clock["now_ns"].as_u64().unwrap() >= s.done_ns.unwrap());
    let stats: Value = c
        .get(format!("{}/arbor/stats", emu.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["completed"], 2);
    let drained: Vec<Value> = c
        .get(format!("{}/arbor/stamps?drain=1", emu.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(drained.len(), 1);
    assert!(emu.stamps().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_lets_a_stream_finish_and_refuses_new_connections() {
    let mut config = EmulatorConfig::default();
    config.timing.itl = 20_000_000;
    let emu = start(config).await;
    let base = emu.base_url();
    let c = client();
    let mut resp = c
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat("x", 20))
        .send()
        .await
        .unwrap();
    let first = resp.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"data: "));
    let shutdown = tokio::spawn(emu.shutdown());
    let mut rest = Vec::new();
    while let Some(b) = resp.chunk().await.expect("stream completes") {
        rest.extend_from_slice(&b);
    }
    assert!(String::from_utf8(rest)
        .unwrap()
        .ends_with("data: [DONE]\n\n"));
    tokio::time::timeout(std::time::Duration::from_secs(5), shutdown)
        .await
        .expect("shutdown finishes")
        .unwrap();
    assert!(client().get(format!("{base}/health")).send().await.is_err());
}
