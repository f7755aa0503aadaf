use arbor_sim::emulator::EmulatorConfig;
use serde_json::json;

use crate::support::{client, ms, post, start};

fn body(messages: serde_json::Value) -> serde_json::Value {
    json!({"messages": messages, "max_tokens": 2, "stream": true,
           "stream_options": {"include_usage": true}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extended_prompt_reports_its_shared_prefix_cached_and_prefills_faster() {
    let mut config = EmulatorConfig::default();
    config.timing.prefill_mtok_s = Some(4_000_000); // 4000 tok/s
    let emu = start(config).await;
    let c = client();
    post(
        &c,
        &emu,
        "/v1/chat/completions",
        &body(json!([{"role": "user", "content": "w"}])),
        None,
    )
    .await;

    let a = "a".repeat(2000);
    let b = "b".repeat(2000);
    let q = "c".repeat(2000);
    let first = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &body(json!([{"role": "user", "content": a}])),
        None,
    )
    .await;
    let u = first.usage().unwrap();
    assert_eq!(u["prompt_tokens"], 500);
    assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 0);

    let extended = json!([
        {"role": "user", "content": a},
        {"role": "assistant", "content": b},
        {"role": "user", "content": q},
    ]);
    let second = post(&c, &emu, "/v1/chat/completions", &body(extended), None).await;
    let u = second.usage().unwrap();
    assert_eq!(u["prompt_tokens"], 1500);
    // "user\n" + 2000 bytes + "\n" = 2006 shared bytes: 7 full 256-byte blocks.
    assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 7 * 64);

    // The same size, nothing shared: a cold prefill.
    let cold = json!([
        {"role": "user", "content": "d".repeat(2000)},
        {"role": "assistant", "content": b},
        {"role": "user", "content": q},
    ]);
    let third = post(&c, &emu, "/v1/chat/completions", &body(cold), None).await;
    assert_eq!(
        third.usage().unwrap()["prompt_tokens_details"]["cached_tokens"],
        0
    );

    let warm_ttft = ms(second.content()[0].0);
    let cold_ttft = ms(third.content()[0].0);
    // Model: (1500 - 448) / 4000 s = 263 ms warm, 1500 / 4000 s = 375 ms cold.
    // Load only delays: the model's values are exact lower bounds (a cold
    // prefill is never as fast as the model's warm one would allow it to be
    // if the cache hit); the upper bounds are 5x, not windows of
    // milliseconds a loaded machine breaks. The hit itself is told by
    // `cached_tokens` above.
    assert!(
        (263.0..=5.0 * 263.0).contains(&warm_ttft),
        "warm TTFT {warm_ttft} ms"
    );
    assert!(
        (375.0..=5.0 * 375.0).contains(&cold_ttft),
        "cold TTFT {cold_ttft} ms"
    );

    // Identical repeat: every full block hits.
    let again = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &body(json!([{"role": "user", "content": a}])),
        None,
    )
    .await;
    assert_eq!(
        again.usage().unwrap()["prompt_tokens_details"]["cached_tokens"],
        448
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_cache_never_hits_and_a_small_lru_forgets() {
    let c = client();
    let a = "a".repeat(1024); // "user\n" + 1024 + "\n": 4 full blocks
    let req = body(json!([{"role": "user", "content": a}]));

    let off = EmulatorConfig {
        cache_blocks: Some(0),
        ..Default::default()
    };
    let emu = start(off).await;
    post(&c, &emu, "/v1/chat/completions", &req, None).await;
    let r = post(&c, &emu, "/v1/chat/completions", &req, None).await;
    assert_eq!(
        r.usage().unwrap()["prompt_tokens_details"]["cached_tokens"],
        0
    );

    let lru = EmulatorConfig {
        cache_blocks: Some(4),
        ..Default::default()
    };
    let emu = start(lru).await;
    post(&c, &emu, "/v1/chat/completions", &req, None).await;
    let r = post(&c, &emu, "/v1/chat/completions", &req, None).await;
    assert_eq!(
        r.usage().unwrap()["prompt_tokens_details"]["cached_tokens"],
        256
    );
    let other = body(json!([{"role": "user", "content": "z".repeat(1024)}]));
    post(&c, &emu, "/v1/chat/completions", &other, None).await;
    let r = post(&c, &emu, "/v1/chat/completions", &req, None).await;
    assert_eq!(
        r.usage().unwrap()["prompt_tokens_details"]["cached_tokens"],
        0
    );
}

/// The value of `name` in the emulator's `/metrics` text.
fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name} not in:\n{text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_running_requests_and_prefix_lookups_under_vllms_names() {
    let mut config = EmulatorConfig::default();
    config.timing.ttft = 300_000_000; // 300 ms: a request stays in flight
    config.cache_blocks = Some(100);
    let emu = start(config).await;
    let c = client();
    let scrape = || async {
        let r = c
            .get(format!("{}/metrics", emu.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let kind = r.headers()["content-type"].to_str().unwrap().to_string();
        assert!(kind.starts_with("text/plain"), "{kind}");
        r.text().await.unwrap()
    };
    let idle = scrape().await;
    assert_eq!(metric(&idle, "vllm:num_requests_running"), 0.0);
    assert_eq!(metric(&idle, "vllm:num_requests_waiting"), 0.0);
    assert_eq!(metric(&idle, "vllm:prefix_cache_queries_total"), 0.0);
    assert!(idle.contains("# TYPE vllm:prefix_cache_hits_total counter"));

    let a = "a".repeat(2000);
    let request = body(json!([{"role": "user", "content": a}]));
    let in_flight = {
        let (c, emu) = (c.clone(), emu.base_url());
        let request = request.clone();
        tokio::spawn(async move {
            c.post(format!("{emu}/v1/chat/completions"))
                .json(&request)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    assert_eq!(metric(&scrape().await, "vllm:num_requests_running"), 1.0);
    in_flight.await.unwrap();
    post(&c, &emu, "/v1/chat/completions", &request, None).await;

    let after = scrape().await;
    assert_eq!(metric(&after, "vllm:num_requests_running"), 0.0);
    // Two prompts of 500 tokens; the second found its 7 full blocks.
    assert_eq!(metric(&after, "vllm:prefix_cache_queries_total"), 1000.0);
    assert_eq!(metric(&after, "vllm:prefix_cache_hits_total"), 448.0);
    assert_eq!(metric(&after, "vllm:kv_cache_usage_perc"), 0.07);
}
