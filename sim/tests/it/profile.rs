//! The emulator under a profile (`--profile`): the batching server model
//! in real time decides each request's first token, each token's step
//! and queueing.

use std::path::Path;

use arbor_sim::emulator::EmulatorConfig;
use arbor_sim::server::{ModelEvent, ModelRequest, Profile, ServerModel};

use crate::support::{chat, client, post, start, HEAVY};

const MS: u64 = 1_000_000;

/// 20 ms a step plus 0.1 ms a token; `seqs` requests run at once.
fn profile(seqs: u32) -> Profile {
    let text = format!(
        r#"
label = "example: a test engine"
origin = "example"
[engine]
max_num_batched_tokens = 512
max_num_seqs = {seqs}
block_size = 16
num_gpu_blocks = 256
[step]
constant_ns = 20000000
per_token_ns = 100000
"#
    );
    Profile::from_toml_str(&text, Path::new("test.toml")).expect("a valid profile")
}

fn config(seqs: u32) -> EmulatorConfig {
    EmulatorConfig {
        profile: Some(profile(seqs)),
        ..EmulatorConfig::default()
    }
}

/// The model's TTFT of one request alone on an idle engine.
fn model_ttft(profile: &Profile, prompt_tokens: u32, output_tokens: u32) -> u64 {
    let mut model = ServerModel::new(profile);
    model.submit(
        0,
        &ModelRequest {
            id: 7,
            prompt_tokens,
            output_tokens,
            blocks: &[],
        },
    );
    let mut events = Vec::new();
    while let Some(at) = model.next_event_at() {
        model.advance(at, &mut events);
        if let Some(ModelEvent::FirstToken { at, .. }) = events.first() {
            return *at;
        }
    }
    panic!("no first token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_ttft_is_the_models() {
    // Timed to a few ms: not beside the tests that load the machine.
    let _heavy = HEAVY.lock().await;
    let emu = start(config(4)).await;
    let c = client();
    post(&c, &emu, "/v1/chat/completions", &chat("warm", 1), None).await;
    let r = post(
        &c,
        &emu,
        "/v1/chat/completions",
        &chat("hello there", 10),
        Some("p-1"),
    )
    .await;
    assert!(r.done);
    assert_eq!(r.content().len(), 10);
    let usage = r.usage().expect("usage");
    let prompt = usage["prompt_tokens"].as_u64().unwrap() as u32;
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    let expected = model_ttft(&profile(4), prompt, 10);
    assert!(expected >= 20 * MS);
    let stamps = emu.stamps();
    let s = stamps.iter().find(|s| s.request_id == "p-1").unwrap();
    let ttft = s.first_chunk_ns.unwrap() - s.received_ns;
    // Never (more than a clock reading) sooner than the model; later by
    // what a loaded machine adds, up to 5x the model (not a window of
    // milliseconds).
    assert!(
        ttft + 5 * MS >= expected && ttft <= 5 * expected,
        "emulator TTFT {ttft} ns, model {expected} ns"
    );
    // The tokens follow the model's decode steps (20 ms a step): the
    // stream ends about 9 steps after its first token; a step delayed by
    // load lengthens the span, bounded at 5x the model's.
    let span = s.done_ns.unwrap() - s.first_chunk_ns.unwrap();
    assert!(
        (170 * MS..=5 * 180 * MS).contains(&span),
        "first token to end {span} ns"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_token_is_stamped_at_the_end_of_its_step() {
    let _heavy = HEAVY.lock().await;
    let emu = start(config(4)).await;
    let c = client();
    post(&c, &emu, "/v1/chat/completions", &chat("warm", 1), None).await;
    // A decodes alone (20.1 ms a step); B's 400-token prompt arrives
    // mid-stream and is prefilled in one of A's steps (about 60 ms).
    let (body_a, body_b) = (chat("hello there", 12), chat(&" the".repeat(400), 2));
    let (a, b) = tokio::join!(
        post(&c, &emu, "/v1/chat/completions", &body_a, Some("s-a")),
        async {
            tokio::time::sleep(std::time::Duration::from_millis(80)).await;
            post(&c, &emu, "/v1/chat/completions", &body_b, Some("s-b")).await
        }
    );
    assert!(a.done && b.done);
    let stamps = emu.stamps();
    let stamp = |id: &str| stamps.iter().find(|s| s.request_id == id).unwrap();
    let (a, b) = (stamp("s-a"), stamp("s-b"));
    assert_eq!(a.chunk_ns.len(), 12);
    let gaps: Vec<u64> = a.chunk_ns.windows(2).map(|w| w[1] - w[0]).collect();
    // One long gap, the step of B's prefill: it ends with B's first token
    // (the same step's output), not at A's last token. The others are
    // decode steps.
    // The longest gap is that step (a count of gaps over 40 ms would be
    // a window a loaded machine breaks by delaying a decode step).
    let longest = (0..gaps.len()).max_by_key(|&i| gaps[i]).unwrap();
    assert!(gaps[longest] > 40 * MS, "gaps {gaps:?}");
    let long = [longest];
    // Told by order, not by a window of wall time: B's first token is
    // written after A's token before the long step and before A's next
    // step's token (which a loaded machine cannot reorder; it can delay
    // the writes of one step by some milliseconds).
    let end = a.chunk_ns[long[0] + 1];
    let b_first = b.first_chunk_ns.unwrap();
    assert!(
        a.chunk_ns[long[0]] < b_first
            && a.chunk_ns
                .get(long[0] + 2)
                .is_none_or(|&next| b_first < next),
        "A's long gap ends at {end}, B's first token at {b_first}; gaps {gaps:?}"
    );
    // Decode steps of 20 ms: never (more than a clock reading) shorter
    // in sum, each at most 5x longer under load.
    for (i, gap) in gaps.iter().enumerate() {
        if i != long[0] {
            assert!(
                (5 * MS..=100 * MS).contains(gap),
                "gap {i} of {gaps:?} is not a 20 ms step"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_requests_queue_when_one_sequence_runs_at_a_time() {
    let _heavy = HEAVY.lock().await;
    let emu = start(config(1)).await;
    let c = client();
    let base = emu.base_url();
    let (body_a, body_b) = (chat("first", 10), chat("second", 10));
    let (a, b, metrics) = tokio::join!(
        post(&c, &emu, "/v1/chat/completions", &body_a, Some("q-a")),
        post(&c, &emu, "/v1/chat/completions", &body_b, Some("q-b")),
        async {
            tokio::time::sleep(std::time::Duration::from_millis(60)).await;
            c.get(format!("{base}/metrics"))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        }
    );
    assert!(a.done && b.done);
    let stamps = emu.stamps();
    let mut spans: Vec<(u64, u64)> = ["q-a", "q-b"]
        .iter()
        .map(|id| {
            let s = stamps.iter().find(|s| s.request_id == *id).unwrap();
            (s.first_chunk_ns.unwrap(), s.done_ns.unwrap())
        })
        .collect();
    spans.sort();
    let (first, second) = (spans[0], spans[1]);
    // The second starts only when the first is done: ten steps later.
    assert!(
        second.0 >= first.1,
        "second's first token {} before first's end {}",
        second.0,
        first.1
    );
    assert!(second.0 - first.0 >= 9 * 20 * MS);
    let running = metrics
        .lines()
        .find(|l| l.starts_with("vllm:num_requests_running"))
        .unwrap();
    assert!(running.ends_with(" 1"), "{running}");
    let waiting = metrics
        .lines()
        .find(|l| l.starts_with("vllm:num_requests_waiting"))
        .unwrap();
    assert!(waiting.ends_with(" 1"), "{waiting}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversations_prefix_hits_the_models_cache() {
    let emu = start(config(4)).await;
    let c = client();
    // 40 vocabulary words: 40 tokens, two full blocks of 16.
    let words = " the of and to in is that for".repeat(5);
    let first = post(&c, &emu, "/v1/chat/completions", &chat(&words, 2), None).await;
    let usage = first.usage().expect("usage");
    assert_eq!(usage["prompt_tokens"], 40);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 0);
    // The same message and more: its two full blocks are hits, and they
    // are the keys of `server::keys` for that text.
    let longer = format!("{words} it was");
    let second = post(&c, &emu, "/v1/chat/completions", &chat(&longer, 2), None).await;
    let usage = second.usage().expect("usage");
    assert_eq!(usage["prompt_tokens"], 42);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 32);
    let body = serde_json::to_vec(&chat(&longer, 2)).unwrap();
    let (tokens, keys) =
        arbor_sim::emulator::model_request_of("/v1/chat/completions", &body, 16).unwrap();
    let mut expected = arbor_sim::server::keys::TextKeys::new(16);
    expected.frame(b"user\n");
    expected.text(&longer);
    assert_eq!((tokens, keys), (42, expected.finish()));
}
