use arbor_sim::emulator::EmulatorConfig;

use crate::support::{chat, client, post, start, HEAVY};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_zero_latency_streams_complete() {
    let _heavy = HEAVY.lock().await;
    let emu = std::sync::Arc::new(start(EmulatorConfig::default()).await);
    let c = client();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (c, emu) = (c.clone(), emu.clone());
        tasks.push(tokio::spawn(async move {
            let id = format!("load-{i}");
            let r = post(
                &c,
                &emu,
                "/v1/chat/completions",
                &chat(&format!("p{i}"), 64),
                Some(&id),
            )
            .await;
            assert_eq!(r.status, 200);
            assert!(r.done, "stream {i} did not finish");
            assert_eq!(r.content().len(), 64);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let stats = emu.stats();
    assert_eq!(stats.completed, 200);
    assert_eq!(stats.tokens, 200 * 64);
    assert_eq!(stats.active, 0);
    let stamps = emu.stamps();
    assert_eq!(stamps.len(), 200);
    assert!(stamps
        .iter()
        .all(|s| s.chunk_ns.len() == 64 && s.done_ns.is_some()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_timed_streams_hold_their_itl() {
    let _heavy = HEAVY.lock().await;
    let mut config = EmulatorConfig::default();
    config.timing.ttft = 50_000_000;
    config.timing.itl = 20_000_000;
    let emu = std::sync::Arc::new(start(config).await);
    let c = client();
    let mut tasks = Vec::new();
    for i in 0..200 {
        let (c, emu) = (c.clone(), emu.clone());
        tasks.push(tokio::spawn(async move {
            let r = post(
                &c,
                &emu,
                "/v1/chat/completions",
                &chat("x", 25),
                Some(&i.to_string()),
            )
            .await;
            assert!(r.done);
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(emu.stats().peak_active >= 100, "{:?}", emu.stats());
    for s in emu.stamps() {
        // Absolute deadlines: the last chunk is never early and, on a
        // loaded machine, not far late: within 4x the deadline (a loaded
        // 2-core machine serving 200 streams), not a window of milliseconds.
        let span = (s.chunk_ns[24] - s.received_ns) as f64 / 1e6;
        assert!(
            (530.0..=2000.0).contains(&span),
            "{}: last chunk at {span} ms",
            s.request_id
        );
    }
}
