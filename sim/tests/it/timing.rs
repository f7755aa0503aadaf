use arbor_sim::emulator::EmulatorConfig;

use crate::support::{chat, client, ms, post, start, HEAVY};

const MS: u64 = 1_000_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttft_and_itl_follow_the_model_and_stamps_agree_with_the_client() {
    let mut config = EmulatorConfig::default();
    config.timing.ttft = 200 * MS;
    config.timing.itl = 20 * MS;
    let emu = start(config).await;
    let c = client();
    // Warm the connection so the measured request does not pay for connect.
    post(&c, &emu, "/v1/chat/completions", &chat("warm", 1), None).await;

    let r = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat("hello", 20),
        Some("t-1"),
    )
    .await;
    assert!(r.done);
    let content = r.content();
    assert_eq!(content.len(), 20);
    // Wall time on a shared machine: load only delays, so the model's
    // values are exact lower bounds (here and on the server's stamps
    // below); the upper bounds are generous multiples (5x the model), not
    // millisecond windows, which a missing model (no wait at all, or a
    // default's) still fails.
    let ttft = ms(content[0].0);
    assert!((200.0..=1000.0).contains(&ttft), "client TTFT {ttft} ms");
    let mean_gap = ms(content[19].0 - content[0].0) / 19.0;
    assert!(
        (5.0..=100.0).contains(&mean_gap),
        "client mean ITL {mean_gap} ms"
    );

    let stamps = emu.stamps();
    let s = stamps.iter().find(|s| s.request_id == "t-1").unwrap();
    let server_ttft = (s.first_chunk_ns.unwrap() - s.received_ns) as f64 / 1e6;
    assert!(server_ttft >= 200.0, "server TTFT {server_ttft} ms");
    // The client sends before the server receives and reads after it
    // writes: its times are never less than the server's (1 ms for the
    // two clocks' readings); how much more is the machine's load, up to
    // half a second here.
    assert!(
        ttft + 1.0 >= server_ttft && ttft - server_ttft <= 500.0,
        "client {ttft} vs server {server_ttft}"
    );
    // A mean over 19 gaps: a client late by up to 475 ms on either end
    // moves it by 25 ms at most.
    let server_gap = (s.chunk_ns[19] - s.chunk_ns[0]) as f64 / 1e6 / 19.0;
    assert!(
        (mean_gap - server_gap).abs() <= 25.0,
        "{mean_gap} vs {server_gap}"
    );
    // Absolute deadlines: chunk k is never written before receipt + ttft + k * itl.
    for (k, &t) in s.chunk_ns.iter().enumerate() {
        assert!(
            t - s.received_ns >= 200 * MS + k as u64 * 20 * MS,
            "chunk {k} early"
        );
    }
    // The stream ends one ITL after the last token: ttft + n * itl.
    let done = (s.done_ns.unwrap() - s.received_ns) as f64 / 1e6;
    assert!(done >= 200.0 + 20.0 * 20.0, "done at {done} ms");
    for (k, (at, _)) in content.iter().enumerate() {
        let server = (s.chunk_ns[k] - s.received_ns) as f64 / 1e6;
        assert!(
            ms(*at) + 1.0 >= server && ms(*at) - server <= 500.0,
            "chunk {k}: {at:?} vs {server}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_answers_when_the_stream_would_end() {
    let mut config = EmulatorConfig::default();
    config.timing.ttft = 100 * MS;
    config.timing.itl = 10 * MS;
    let emu = start(config).await;
    let c = client();
    let mut body = chat("hi", 10);
    body["stream"] = serde_json::json!(false);
    let started = std::time::Instant::now();
    let r = post(&c, &emu, "/v1/chat/completions", &body, None).await;
    let took = ms(started.elapsed());
    assert_eq!(r.status, 200);
    // 100 ms + 10 x 10 ms: never sooner; later by what the machine's
    // load adds, bounded at 5x (a stream's end, not a window).
    assert!(
        (200.0..=1000.0).contains(&took),
        "non-streaming took {took} ms"
    );
}

/// Gaps of a stamp's content chunks, in nanoseconds.
fn chunk_gaps(chunk_ns: &[u64]) -> Vec<u64> {
    chunk_ns.windows(2).map(|w| w[1] - w[0]).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_millisecond_itl_is_paced_chunk_by_chunk() {
    // 0.2 ms, the demo's ITL: five chunks per tick of tokio's timer. Each
    // chunk must go out on its own deadline, not with its tick's others.
    const ITL: u64 = 200_000;
    let _heavy = HEAVY.lock().await;
    let mut config = EmulatorConfig::default();
    config.timing.ttft = 5 * MS;
    config.timing.itl = ITL;
    let emu = start(config).await;
    let c = client();
    let body = chat("pace", 500);
    let stream = |id: &'static str| post(&c, &emu, "/v1/chat/completions", &body, Some(id));
    let (a, b, d, e) = tokio::join!(stream("p-0"), stream("p-1"), stream("p-2"), stream("p-3"));
    assert!(a.done && b.done && d.done && e.done);
    let mut gaps: Vec<u64> = emu
        .stamps()
        .iter()
        .flat_map(|s| chunk_gaps(&s.chunk_ns))
        .collect();
    assert_eq!(gaps.len(), 4 * 499);
    gaps.sort_unstable();
    let median = gaps[gaps.len() / 2];
    eprintln!(
        "chunk gaps (ns): p10 {} p50 {} p90 {} p99 {}",
        gaps[gaps.len() / 10],
        gaps[gaps.len() / 2],
        gaps[gaps.len() * 9 / 10],
        gaps[gaps.len() * 99 / 100]
    );
    // Absolute deadlines: no chunk early; a stream that fell behind (its
    // thread descheduled on a busy machine) catches up, so the last chunk
    // is close to its deadline.
    for s in emu.stamps() {
        for (k, &t) in s.chunk_ns.iter().enumerate() {
            assert!(
                t - s.received_ns >= 5 * MS + k as u64 * ITL,
                "chunk {k} early"
            );
        }
        // Chunks paced per timer tick (1 ms) instead would end 400 ms
        // late; a descheduled thread on a loaded machine, a few tens of
        // ms: the bound between them is 200 ms.
        let last = s.chunk_ns[499] - s.received_ns;
        assert!(
            last < 5 * MS + 499 * ITL + 200 * MS,
            "last chunk at {last} ns"
        );
    }
    // The gaps' statistics tell pacing from a tick's batch only when the
    // emulator's thread gets the CPU at its deadlines: under a load above
    // the cores (a parallel build), a stream that fell behind catches up
    // with back-to-back chunks and the median gap goes to zero whatever
    // the pacing. The deadline checks above hold under any load; these
    // only when the machine is not oversubscribed.
    if let Some((load, cores)) = oversubscribed() {
        eprintln!("pacing statistics not judged: load {load:.1} on {cores} cores");
        return;
    }
    let zeros = gaps.iter().filter(|&&g| g < ITL / 10).count();
    assert!(
        (ITL / 2..=ITL * 3 / 2).contains(&median),
        "median chunk gap {median} ns against an ITL of {ITL} ns"
    );
    // Chunks sent per timer tick would make 4 of 5 gaps zero (80 %).
    // Paced chunks give few: a stream that fell behind catches up with
    // back-to-back chunks (15 % seen under a load of 6 on 2 cores), and
    // the client's stamps are taken per read, so two chunks that arrive
    // in one read have a zero gap (28-46 % seen on an idle 2-core VM, its
    // timer jittering). The bound sits between those and the tick's 80 %:
    // fewer than 3 in 5.
    assert!(
        zeros * 5 < gaps.len() * 3,
        "{zeros} of {} gaps are (near) zero",
        gaps.len()
    );
}

/// The 1-minute load average and the cores, when the load is above the
/// cores (`/proc/loadavg`; `None` where it cannot be read).
fn oversubscribed() -> Option<(f64, usize)> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (load > cores as f64).then_some((load, cores))
}
