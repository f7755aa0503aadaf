//! The emulator as a fleet: replicas with their own caches, the router's
//! conventions (what each keeps on one replica, what the replicas
//! received), and output caching (a next turn that re-sends the
//! generated text finds it cached).

use std::collections::{BTreeMap, BTreeSet};

use arbor_sim::emulator::{
    serve_fleet, serve_routed, EmulatorConfig, FleetHandle, RouteBy, DYNAMO_FINAL_HEADER,
    DYNAMO_PARENT_HEADER, DYNAMO_SESSION_HEADER, REPLICA_HEADER, SESSION_AFFINITY_HEADER,
    SESSION_ID_HEADER, SESSION_TOKEN_HEADER, SMG_ROUTING_KEY_HEADER,
};
use serde_json::{json, Value};

use crate::support::{client, post, start};

/// One non-streamed answer.
struct Answer {
    status: u16,
    replica: usize,
    token: Option<String>,
    json: Value,
}

impl Answer {
    fn cached(&self) -> u64 {
        let u = &self.json["usage"];
        u["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .or_else(|| u["cache_read_input_tokens"].as_u64())
            .expect("cached tokens")
    }
    fn text(&self) -> String {
        self.json["choices"][0]["message"]["content"]
            .as_str()
            .expect("content")
            .to_string()
    }
}

async fn send(
    c: &reqwest::Client,
    url: &str,
    path: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Answer {
    let mut req = c.post(format!("{url}{path}")).json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("an answer");
    let status = resp.status().as_u16();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let replica = header(REPLICA_HEADER)
        .expect("x-arbor-replica on every completion")
        .parse()
        .unwrap();
    let token = header(SESSION_TOKEN_HEADER);
    let json = resp.json().await.expect("a JSON answer");
    Answer {
        status,
        replica,
        token,
        json,
    }
}

fn chat(content: &str) -> Value {
    json!({"messages": [{"role": "user", "content": content}], "max_tokens": 3})
}

async fn routed(by: &str, replicas: usize) -> FleetHandle {
    let by: RouteBy = by.parse().unwrap();
    serve_routed(
        EmulatorConfig::default(),
        replicas,
        by,
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("a routed fleet starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_have_their_own_caches() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    let fleet = serve_fleet(EmulatorConfig::default(), 2, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let urls = fleet.replica_urls();
    assert_eq!(urls.len(), 2);
    assert_ne!(urls[0], urls[1]);
    let c = client();
    let body = chat(&"a".repeat(2000));
    let path = "/v1/chat/completions";
    let first = send(&c, &urls[0], path, &body, &[]).await;
    assert_eq!((first.status, first.replica, first.cached()), (200, 0, 0));
    let other = send(&c, &urls[1], path, &body, &[]).await;
    assert_eq!((other.replica, other.cached()), (1, 0), "replica 1 missed");
    let again = send(&c, &urls[0], path, &body, &[]).await;
    assert_eq!(again.replica, 0);
    // "user\n" + 2000 bytes: 7 full blocks of 64 tokens.
    assert_eq!(again.cached(), 7 * 64);
    let stats = fleet.stats();
    assert_eq!((stats[0].requests, stats[1].requests), (2, 1));
    let received = fleet.received();
    assert_eq!(received.len(), 3);
    assert!(received
        .iter()
        .all(|r| r.status == 200 && r.endpoint == path));
    fleet.shutdown().await;
}

/// Sends `rounds` requests for each key (interleaved) and returns each
/// key's replicas.
async fn place(
    fleet: &FleetHandle,
    keys: &[&str],
    rounds: usize,
    request: impl Fn(&str) -> (Value, Vec<(&'static str, String)>, &'static str),
) -> BTreeMap<String, BTreeSet<usize>> {
    let c = client();
    let url = fleet.router_url().expect("a router");
    let mut placed: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for _ in 0..rounds {
        for key in keys {
            let (body, headers, path) = request(key);
            let headers: Vec<(&str, &str)> =
                headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let a = send(&c, &url, path, &body, &headers).await;
            assert_eq!(a.status, 200, "{}", a.json);
            placed.entry(key.to_string()).or_default().insert(a.replica);
        }
    }
    placed
}

/// Each key on one replica, and the distinct keys on every replica.
fn assert_sticky_and_spread(placed: &BTreeMap<String, BTreeSet<usize>>, replicas: usize) {
    for (key, on) in placed {
        assert_eq!(on.len(), 1, "key {key} moved: {on:?}");
    }
    let used: BTreeSet<usize> = placed.values().flatten().copied().collect();
    assert_eq!(used.len(), replicas, "{placed:?}");
}

const KEYS: [&str; 6] = ["k0", "k1", "k2", "k3", "k4", "k5"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_keyed_convention_keeps_a_key_on_one_replica_and_spreads_keys() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    // X-Session-Affinity.
    let fleet = routed("affinity", 3).await;
    let placed = place(&fleet, &KEYS, 3, |k| {
        (
            chat("x"),
            vec![(SESSION_AFFINITY_HEADER, k.to_string())],
            "/v1/chat/completions",
        )
    })
    .await;
    assert_sticky_and_spread(&placed, 3);
    // Each replica received the keys it was given, in the header.
    for r in fleet.received() {
        let key = r.session_affinity.as_deref().expect("the header arrived");
        assert!(placed[key].contains(&r.replica), "{r:?}");
    }
    fleet.shutdown().await;

    // Any header (here SGLang's gateway's routing key).
    let fleet = routed("header:X-SMG-Routing-Key", 3).await;
    let placed = place(&fleet, &KEYS, 3, |k| {
        (
            chat("x"),
            vec![(SMG_ROUTING_KEY_HEADER, k.to_string())],
            "/v1/chat/completions",
        )
    })
    .await;
    assert_sticky_and_spread(&placed, 3);
    for r in fleet.received() {
        let key = r.smg_routing_key.as_deref().expect("the header arrived");
        assert!(placed[key].contains(&r.replica), "{r:?}");
    }
    fleet.shutdown().await;

    // The body's user (chat) and metadata.user_id (Messages).
    let fleet = routed("user", 3).await;
    let placed = place(&fleet, &KEYS, 3, |k| {
        let mut body = chat("x");
        body["user"] = json!(k);
        (body, vec![], "/v1/chat/completions")
    })
    .await;
    assert_sticky_and_spread(&placed, 3);
    let by_messages = place(&fleet, &KEYS, 2, |k| {
        let body = json!({"max_tokens": 2, "metadata": {"user_id": k},
            "messages": [{"role": "user", "content": "x"}]});
        (body, vec![], "/v1/messages")
    })
    .await;
    // The same users, the same replicas, whichever API they spoke.
    assert_eq!(by_messages, placed);
    let received = fleet.received();
    assert_eq!(received.len(), 6 * 3 + 6 * 2);
    assert!(received.iter().all(|r| r
        .user
        .as_deref()
        .is_some_and(|u| placed[u].contains(&r.replica))));
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_spreads_even_one_key() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    let fleet = routed("round-robin", 3).await;
    let placed = place(&fleet, &["k0"], 6, |k| {
        (
            chat("x"),
            vec![(SESSION_ID_HEADER, k.to_string())],
            "/v1/chat/completions",
        )
    })
    .await;
    assert_eq!(placed["k0"].len(), 3);
    let received = fleet.received();
    assert_eq!(received.len(), 6);
    assert!(received
        .iter()
        .all(|r| r.session_id.as_deref() == Some("k0")));
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamo_subagents_follow_their_parent_and_final_forgets() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    let fleet = routed("dynamo", 2).await;
    let url = fleet.router_url().unwrap();
    let c = client();
    let path = "/v1/chat/completions";
    let go = |headers: Vec<(&'static str, &'static str)>| {
        let (c, url) = (c.clone(), url.clone());
        async move { send(&c, &url, path, &chat("x"), &headers).await.replica }
    };
    let parent = go(vec![(DYNAMO_SESSION_HEADER, "p")]).await;
    // A subagent's first request: its own session is unknown, its parent's
    // is known.
    let child = go(vec![
        (DYNAMO_SESSION_HEADER, "c"),
        (DYNAMO_PARENT_HEADER, "p"),
    ])
    .await;
    assert_eq!(child, parent);
    // The child is remembered on its own now.
    assert_eq!(go(vec![(DYNAMO_SESSION_HEADER, "c")]).await, parent);
    // Another session goes elsewhere; an unknown parent places anew.
    let other = go(vec![(DYNAMO_SESSION_HEADER, "q")]).await;
    assert_ne!(other, parent);
    let orphan = go(vec![
        (DYNAMO_SESSION_HEADER, "o"),
        (DYNAMO_PARENT_HEADER, "nobody"),
    ])
    .await;
    assert_ne!(orphan, other);
    // The parent's last turn still goes home, then it is forgotten: its
    // next request is placed anew (round-robin moved on).
    let last = go(vec![
        (DYNAMO_SESSION_HEADER, "p"),
        (DYNAMO_FINAL_HEADER, "true"),
    ])
    .await;
    assert_eq!(last, parent);
    let replaced = go(vec![(DYNAMO_SESSION_HEADER, "p")]).await;
    assert_ne!(replaced, parent);
    // The replicas saw the three headers as sent.
    let received = fleet.received();
    let child_first = received
        .iter()
        .find(|r| r.dynamo_parent_session_id.as_deref() == Some("p"))
        .expect("the subagent's request");
    assert_eq!(child_first.dynamo_session_id.as_deref(), Some("c"));
    assert_eq!(child_first.replica, parent);
    let finals: Vec<_> = received
        .iter()
        .filter(|r| r.dynamo_session_final.is_some())
        .collect();
    assert_eq!(finals.len(), 1);
    assert_eq!(finals[0].dynamo_session_final.as_deref(), Some("true"));
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_token_is_issued_and_honoured() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    let fleet = routed("token", 3).await;
    let url = fleet.router_url().unwrap();
    let c = client();
    let path = "/v1/chat/completions";
    let first = send(&c, &url, path, &chat("x"), &[]).await;
    let token = first.token.clone().expect("a token is issued");
    for _ in 0..4 {
        let again = send(
            &c,
            &url,
            path,
            &chat("x"),
            &[(SESSION_TOKEN_HEADER, &token)],
        )
        .await;
        assert_eq!(again.replica, first.replica);
        assert_eq!(again.token.as_deref(), Some(token.as_str()));
    }
    // Without a token, requests spread, each told where it went.
    let mut seen = BTreeSet::new();
    let mut issued = BTreeMap::from([(token.clone(), first.replica)]);
    for _ in 0..3 {
        let a = send(&c, &url, path, &chat("x"), &[]).await;
        seen.insert(a.replica);
        issued.insert(a.token.clone().unwrap(), a.replica);
        let back = send(
            &c,
            &url,
            path,
            &chat("x"),
            &[(SESSION_TOKEN_HEADER, a.token.as_deref().unwrap())],
        )
        .await;
        assert_eq!(back.replica, a.replica);
    }
    assert_eq!(seen.len(), 3);
    // A token that is not ours is placed like none, and replaced.
    let stranger = send(
        &c,
        &url,
        path,
        &chat("x"),
        &[(SESSION_TOKEN_HEADER, "nope")],
    )
    .await;
    assert_ne!(stranger.token.as_deref(), Some("nope"));
    // One token a replica; each request that carried one was received, with
    // it, by the replica it names.
    assert_eq!(issued.len(), 3);
    let received = fleet.received();
    let carried: Vec<_> = received
        .iter()
        .filter_map(|r| Some((r.session_token.as_deref()?, r.replica)))
        .collect();
    assert_eq!(carried.len(), 4 + 3 + 1);
    for (token, replica) in carried.into_iter().filter(|(t, _)| *t != "nope") {
        assert_eq!(issued[token], replica);
    }
    fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_sums_the_replicas_metrics() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    let fleet = routed("affinity", 2).await;
    let url = fleet.router_url().unwrap();
    let c = client();
    for key in ["a", "b", "c"] {
        let body = chat(&"z".repeat(600));
        send(
            &c,
            &url,
            "/v1/chat/completions",
            &body,
            &[(SESSION_AFFINITY_HEADER, key)],
        )
        .await;
    }
    let metric = |text: &str, name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name) && !l.starts_with('#'))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {text}"))
    };
    let get = |u: String| {
        let c = c.clone();
        async move { c.get(u).send().await.unwrap().text().await.unwrap() }
    };
    let front = get(format!("{url}/metrics")).await;
    let mut sum = 0;
    for u in fleet.replica_urls() {
        sum += metric(
            &get(format!("{u}/metrics")).await,
            "vllm:prefix_cache_queries_total",
        );
    }
    assert!(sum > 0);
    assert_eq!(metric(&front, "vllm:prefix_cache_queries_total"), sum);
    let stats: Value = serde_json::from_str(&get(format!("{url}/arbor/stats")).await).unwrap();
    assert_eq!(stats["requests"], 3);
    fleet.shutdown().await;
}

/// Output caching: 1000 bytes of prompt text and 102 generated tokens
/// (" tok0" ... " tok101": 604 bytes), all at four bytes a token, so a
/// hit of `b` blocks is exactly `64 b` tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_next_turn_that_resends_the_answer_finds_it_cached() {
    // Three or four emulators at once: not beside the pacing tests.
    let _heavy = crate::support::HEAVY.lock().await;
    let config = EmulatorConfig {
        keep_bodies: true,
        ..EmulatorConfig::default()
    };
    let emu = start(config).await;
    let c = client();
    let path = "/v1/chat/completions";
    let first_text = "a".repeat(1000);
    let more = "b".repeat(1000);
    let block = |bytes: usize| (bytes / 256) as u64 * 64;

    // A synthesized prompt (streamed): the next turn appends the
    // generated text and more words to the same user message.
    let mut body = crate::support::chat(&first_text, 102);
    let first = post(&c, &emu, path, &body, None).await;
    let generated: String = first.content().into_iter().map(|(_, t)| t).collect();
    assert_eq!(generated.len(), 604);
    assert_eq!(first.usage().unwrap()["prompt_tokens"], 250);
    body["messages"][0]["content"] = json!(format!("{first_text}{generated}{more}"));
    let next = post(&c, &emu, path, &body, None).await;
    let cached = next.usage().unwrap()["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert_eq!(cached, block(5 + 1000 + 604));
    assert!(cached > 250, "beyond the first prompt");
    // What the emulator received holds the generated text.
    let kept = emu.received();
    assert!(kept.last().unwrap().body_text().contains(&generated));

    // Without the generated text only the first prompt's blocks hit.
    let fresh = start(EmulatorConfig::default()).await;
    let once = send(&c, &fresh.base_url(), path, &chat_n(&first_text, 102), &[]).await;
    assert_eq!(once.text(), generated);
    let without = send(
        &c,
        &fresh.base_url(),
        path,
        &chat_n(&format!("{first_text}{more}"), 1),
        &[],
    )
    .await;
    assert_eq!(without.cached(), block(5 + 1000));

    // Recorded messages (not streamed): the answer comes back as an
    // assistant message.
    let recorded = json!({"max_tokens": 1, "messages": [
        {"role": "user", "content": first_text},
        {"role": "assistant", "content": generated},
        {"role": "user", "content": more}]});
    let back = send(&c, &fresh.base_url(), path, &recorded, &[]).await;
    assert_eq!(back.cached(), block(5 + 1000 + 1 + 10 + 604 + 1));
    // A different answer in its place: the first prompt's blocks only.
    let other = json!({"max_tokens": 1, "messages": [
        {"role": "user", "content": first_text},
        {"role": "assistant", "content": "c".repeat(604)},
        {"role": "user", "content": more}]});
    let other = send(&c, &fresh.base_url(), path, &other, &[]).await;
    assert_eq!(other.cached(), block(5 + 1000 + 1));
    fresh.shutdown().await;
    emu.shutdown().await;
}

fn chat_n(content: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens})
}
