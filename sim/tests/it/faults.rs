use arbor_sim::emulator::{EmulatorConfig, FailStatus, FaultKind, FaultPlan};
use serde_json::Value;

use crate::support::{chat, client, ms, post, start};

const PATH: &str = "/v1/chat/completions";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_rate_one_gives_500() {
    let mut config = EmulatorConfig::default();
    config.faults.fail_rate = 1.0;
    let emu = start(config).await;
    let c = client();
    let r = post(&c, &emu, PATH, &chat("x", 4), Some("f")).await;
    assert_eq!(r.status, 500);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["code"], 500);
    assert_eq!(emu.stats().errors_500, 1);
    assert_eq!(emu.stamps()[0].faults, vec![FaultKind::Error500]);
    assert_eq!(emu.stamps()[0].status, 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_status_429_carries_retry_after() {
    let mut config = EmulatorConfig::default();
    config.faults.fail_rate = 1.0;
    config.faults.fail_status = FailStatus::TooManyRequests;
    config.faults.retry_after_s = 7;
    let emu = start(config).await;
    let r = post(&client(), &emu, PATH, &chat("x", 4), None).await;
    assert_eq!(r.status, 429);
    assert_eq!(r.headers["retry-after"].to_str().unwrap(), "7");
    assert_eq!(emu.stats().errors_429, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_closes_after_n_chunks_without_done() {
    let mut config = EmulatorConfig::default();
    config.faults.disconnect_rate = 1.0;
    config.faults.disconnect_after = 3;
    config.timing.itl = 5_000_000;
    let emu = start(config).await;
    let c = client();
    let r = post(&c, &emu, PATH, &chat("x", 10), Some("d")).await;
    assert_eq!(r.status, 200);
    assert!(r.cut, "the body ends with an error");
    assert!(!r.done);
    assert_eq!(r.content().len(), 3);
    // Non-streaming: the body is cut too.
    let mut body = chat("x", 10);
    body["stream"] = serde_json::json!(false);
    let r = post(&c, &emu, PATH, &body, None).await;
    assert!(r.cut);
    let stats = emu.stats();
    assert_eq!(stats.disconnects, 2);
    assert_eq!(stats.client_aborts, 0);
    let s = &emu.stamps()[0];
    assert_eq!(s.faults, vec![FaultKind::Disconnect]);
    assert_eq!(s.chunk_ns.len(), 3);
    assert_eq!(s.done_ns, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stall_pauses_after_the_first_chunk() {
    let mut config = EmulatorConfig::default();
    config.faults.stall_rate = 1.0;
    config.faults.stall = 500_000_000;
    let emu = start(config).await;
    let r = post(&client(), &emu, PATH, &chat("x", 4), Some("s")).await;
    assert!(r.done);
    let content = r.content();
    assert_eq!(content.len(), 4);
    // The stall (500 ms) is after chunk 0: measured from the send it is
    // an exact lower bound; the gap between the two chunks is shortened by
    // how late chunk 0 went out (or was read), which a loaded machine
    // makes up to 100 ms: the bound on the gap is 400 ms.
    let gap = ms(content[1].0 - content[0].0);
    assert!(gap >= 400.0, "client gap {gap} ms");
    assert!(ms(content[1].0) >= 500.0);
    let s = &emu.stamps()[0];
    // Chunk 1 is due the stall after chunk 0's deadline; chunk 0 itself
    // went out after its own, by up to 100 ms under load.
    assert!(s.chunk_ns[1] - s.chunk_ns[0] >= 400_000_000);
    assert!(s.chunk_ns[1] - s.received_ns >= 500_000_000);
    assert_eq!(s.faults, vec![FaultKind::Stall]);
    assert_eq!(emu.stats().stalls, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_rate_one_injects_a_bad_line_mid_stream() {
    let mut config = EmulatorConfig::default();
    config.faults.malformed_rate = 1.0;
    let emu = start(config).await;
    let r = post(&client(), &emu, PATH, &chat("x", 6), None).await;
    assert!(r.done);
    let bad: Vec<usize> = r
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.data != "[DONE]" && e.json().is_none())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(bad, vec![3], "after 3 of 6 content chunks");
    assert_eq!(r.events[3].data, "{not json");
    assert_eq!(r.content().len(), 6);
    assert_eq!(emu.stats().malformed, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_zero_never_fires() {
    let emu = start(EmulatorConfig::default()).await;
    let c = client();
    for i in 0..40 {
        let r = post(&c, &emu, PATH, &chat(&format!("q{i}"), 4), None).await;
        assert_eq!(r.status, 200);
        assert!(r.done && !r.cut);
        assert!(r
            .events
            .iter()
            .all(|e| e.data == "[DONE]" || e.json().is_some()));
    }
    let s = emu.stats();
    assert_eq!(
        (
            s.errors_500,
            s.errors_429,
            s.disconnects,
            s.stalls,
            s.malformed
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(s.completed, 40);
}

async fn failing_requests(config: &EmulatorConfig, count: u64) -> Vec<u64> {
    let emu = start(config.clone()).await;
    let c = client();
    let mut failed = Vec::new();
    for i in 0..count {
        let r = post(&c, &emu, PATH, &chat("x", 1), None).await;
        if r.status == 500 {
            failed.push(i);
        } else {
            assert_eq!(r.status, 200);
        }
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_picks_the_same_requests() {
    let mut config = EmulatorConfig::default();
    config.faults.fail_rate = 0.5;
    config.seed = 9;
    let first = failing_requests(&config, 40).await;
    let second = failing_requests(&config, 40).await;
    assert_eq!(first, second);
    assert!((8..=32).contains(&first.len()), "{first:?}");
    let expected: Vec<u64> = (0..40)
        .filter(|&i| FaultPlan::decide(&config, i).fail.is_some())
        .collect();
    assert_eq!(first, expected);
    config.seed = 10;
    assert_ne!(failing_requests(&config, 40).await, first);
}
