//! Issue 30, items 1-3, in process: the live driver against small servers
//! that record every request head and body they receive. Each
//! session-routing convention carries its headers (or body field) with
//! the right keys: a subagent's key and its parent's, Dynamo's
//! Session-Final on an agent's last turn only, the server's token echoed
//! from the agent's latest response. Over three servers, `sticky` keeps
//! each agent on one replica, `round-robin` cycles, `least-loaded` and
//! `random` spread; every record names its replica, its session key and
//! the replica the server said served it (`--replica-header`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_backends::live::exchange::Target;
use arbor_backends::live::placement::{Load, Placement};
use arbor_backends::live::request::{Api, BodyConfig};
use arbor_backends::live::routing::SessionRouting;
use arbor_backends::live::{run, warm_pool, LiveConfig, Progress, Replicas};
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::policy::{Arrival, GapTransform, Policy};
use arbor_engine::scheduler::Scheduler;
use arbor_engine::{AgentKind, Workload};
use arbor_runs::record::{RecordSink, RequestRecord};
use arbor_sim::emulator::REQUEST_ID_HEADER;
use serde_json::Value;

use crate::build::*;

/// One request a server read: its head (lower-cased) and body.
#[derive(Debug, Clone)]
struct Seen {
    head: String,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.head
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    }

    fn id(&self) -> u64 {
        self.header(REQUEST_ID_HEADER)
            .and_then(|v| v.parse().ok())
            .expect("a request id")
    }

    fn body(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// A server on `std::net` recording every POST, answering each with a
/// two-token stream whose head says `x-arbor-replica: INDEX` and issues
/// `x-session-token: tok-ID` (ID: the request's id).
struct Recorder {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    fn start(index: usize) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let addr = listener.local_addr().expect("an address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let seen = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, index, &seen));
            }
        });
        Recorder { addr, seen }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }
}

const GET_ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"data\":[]}";

fn serve(mut stream: TcpStream, index: usize, seen: &Mutex<Vec<Seen>>) {
    let _ = stream.set_nodelay(true);
    let mut pending = Vec::new();
    while let Some(request) = read_request(&mut stream, &mut pending) {
        if !request.head.starts_with("post ") {
            if stream.write_all(GET_ANSWER).is_err() {
                return;
            }
            continue;
        }
        let id = request.id();
        seen.lock().expect("seen").push(request);
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n\
                    data: [DONE]\n\n";
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nx-arbor-replica: {index}\r\n\
             X-Session-Token: tok-{id}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Reads one request (head and `Content-Length` body).
fn read_request(stream: &mut TcpStream, pending: &mut Vec<u8>) -> Option<Seen> {
    let mut buf = [0u8; 16 * 1024];
    loop {
        if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap_or(0));
            if pending.len() >= end + 4 + length {
                let body = pending[end + 4..end + 4 + length].to_vec();
                pending.drain(..end + 4 + length);
                return Some(Seen { head, body });
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => pending.extend_from_slice(&buf[..n]),
        }
    }
}

struct VecSink(Vec<RequestRecord>);

impl RecordSink for VecSink {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()> {
        self.0.push(record.clone());
        Ok(())
    }
}

/// How a test run is set up.
struct Setup {
    routing: SessionRouting,
    placement: Placement,
    replica_header: Option<&'static str>,
}

impl Setup {
    fn routing(mode: &str) -> Setup {
        Setup {
            routing: mode.parse().expect("a mode"),
            placement: Placement::Sticky,
            replica_header: None,
        }
    }

    fn placement(placement: Placement) -> Setup {
        Setup {
            routing: SessionRouting::Affinity,
            placement,
            replica_header: Some("x-arbor-replica"),
        }
    }
}

/// Every gap zero, every tree at once.
fn quick() -> Policy {
    Policy {
        arrival: Arrival::Immediate,
        tool_time: GapTransform::Zero,
        think_time: GapTransform::Zero,
        other_time: GapTransform::Zero,
        spawn_time: GapTransform::Zero,
        join_time: GapTransform::Zero,
        seed: 5,
        ..Policy::default()
    }
}

fn target(base: &str, setup: &Setup) -> Target {
    let mut target = Target::new(
        &format!("{base}/v1/chat/completions"),
        &Default::default(),
        Duration::from_secs(10),
        0,
        None,
    )
    .expect("a loopback URL");
    target.routing = setup.routing.clone();
    target.replica_header = setup.replica_header.map(Arc::from);
    target
}

/// Runs `workload` against `servers` (several: placed by `setup`).
fn drive(servers: &[Recorder], workload: Workload, setup: &Setup) -> Vec<RequestRecord> {
    let policy = quick();
    let compiled = compile(
        &workload,
        &policy,
        &DeriveOptions {
            overlap_tolerance: 0,
        },
    )
    .expect("compiles");
    let mut scheduler = Scheduler::new(compiled, policy.clone()).expect("valid policy");
    let urls: Vec<String> = servers.iter().map(Recorder::base_url).collect();
    let replicas = (urls.len() > 1).then(|| Replicas {
        more: urls[1..].iter().map(|u| target(u, setup)).collect(),
        more_base_urls: urls[1..].to_vec(),
        placement: setup.placement,
        load: Load::new(urls.len()),
        seed: policy.seed,
        stream: 0,
    });
    let live = LiveConfig {
        target: target(&urls[0], setup),
        body: BodyConfig {
            model: "m".into(),
            api: Api::Chat,
            ..BodyConfig::default()
        },
        warm_connections: 2,
        base_url: urls[0].clone(),
        cache_bust: None,
        replicas,
        history: Default::default(),
        reuse: None,
    };
    let mut sink = VecSink(Vec::new());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async {
            warm_pool(&live).await;
            run(
                &mut scheduler,
                Arc::new(workload),
                &live,
                &mut sink,
                &Progress::default(),
                std::future::pending(),
            )
            .await
            .expect("the run completes")
        });
    assert!(sink.0.iter().all(|r| r.status == "ok"), "{:?}", sink.0);
    sink.0
}

/// Two trees, each a root agent of three turns and a blocking subagent
/// of two, one after the other.
fn agents() -> Workload {
    let trees = (0..2)
        .map(|i| {
            let root_turns = vec![user(0, 1), tool(2, 1), tool(8, 1)];
            let sub = agent(
                "sub",
                Some(0),
                AgentKind::Blocking,
                vec![user(3, 1), tool(5, 1)],
            );
            tree(&format!("t{i}"), 0, vec![root(root_turns), sub])
        })
        .collect();
    Workload { trees }
}

/// The records and what the server read, joined by request id.
fn joined(records: &[RequestRecord], server: &Recorder) -> Vec<(RequestRecord, Seen)> {
    let by_id: BTreeMap<u64, Seen> = server.seen().into_iter().map(|s| (s.id(), s)).collect();
    assert_eq!(by_id.len(), records.len());
    records
        .iter()
        .map(|r| (r.clone(), by_id[&r.request].clone()))
        .collect()
}

/// `arbor-{play}-{agent index}` of a record (root 0, sub 1).
fn key_of(r: &RequestRecord) -> String {
    let agent = if r.agent == "sub" { 1 } else { 0 };
    format!("arbor-{}-{agent}", r.play)
}

fn last_turn(r: &RequestRecord) -> bool {
    r.turn + 1 == if r.agent == "sub" { 2 } else { 3 }
}

#[test]
fn affinity_sglang_and_a_header_of_ones_own_carry_the_agents_key() {
    for (mode, header) in [
        ("affinity", "x-session-affinity"),
        ("sglang", "x-smg-routing-key"),
        ("header:x-conversation", "x-conversation"),
    ] {
        let server = Recorder::start(0);
        let records = drive(
            std::slice::from_ref(&server),
            agents(),
            &Setup::routing(mode),
        );
        assert_eq!(records.len(), 10);
        for (r, seen) in joined(&records, &server) {
            let key = key_of(&r);
            assert_eq!(r.session_key.as_deref(), Some(key.as_str()), "{mode}");
            assert_eq!(
                seen.header(header),
                Some(key.as_str()),
                "{mode}: {}",
                seen.head
            );
            assert_eq!(r.replica, None, "one endpoint names no replica");
        }
        let keys: BTreeSet<_> = records
            .iter()
            .filter_map(|r| r.session_key.clone())
            .collect();
        assert_eq!(keys.len(), 4, "one key per agent of each play: {keys:?}");
    }
}

#[test]
fn dynamo_sends_the_parent_session_and_final_on_the_last_turn_only() {
    let server = Recorder::start(0);
    let records = drive(
        std::slice::from_ref(&server),
        agents(),
        &Setup::routing("dynamo"),
    );
    for (r, seen) in joined(&records, &server) {
        let key = key_of(&r);
        assert_eq!(seen.header("x-dynamo-session-id"), Some(key.as_str()));
        let parent = seen.header("x-dynamo-parent-session-id");
        if r.agent == "sub" {
            let root_key = format!("arbor-{}-0", r.play);
            assert_eq!(parent, Some(root_key.as_str()), "{}", seen.head);
        } else {
            assert_eq!(parent, None, "a root has no parent: {}", seen.head);
        }
        let final_ = seen.header("x-dynamo-session-final");
        if last_turn(&r) {
            assert_eq!(final_, Some("true"), "{}", seen.head);
        } else {
            assert_eq!(
                final_, None,
                "turn {} of {}: {}",
                r.turn, r.agent, seen.head
            );
        }
    }
}

#[test]
fn token_echoes_the_agents_latest_token_and_a_subagent_starts_its_own() {
    let server = Recorder::start(0);
    let records = drive(
        std::slice::from_ref(&server),
        agents(),
        &Setup::routing("token"),
    );
    let joined = joined(&records, &server);
    // The request id of each (play, agent, turn).
    let ids: BTreeMap<(u32, String, u32), u64> = joined
        .iter()
        .map(|(r, _)| ((r.play, r.agent.clone(), r.turn), r.request))
        .collect();
    for (r, seen) in &joined {
        let token = seen.header("x-session-token");
        if r.turn == 0 {
            assert_eq!(
                token, None,
                "nothing on an agent's first request: {}",
                seen.head
            );
        } else {
            let previous = ids[&(r.play, r.agent.clone(), r.turn - 1)];
            let expected = format!("tok-{previous}");
            assert_eq!(token, Some(expected.as_str()), "{}", seen.head);
        }
        assert_eq!(r.session_key.as_deref(), Some(key_of(r).as_str()));
    }
}

#[test]
fn user_puts_the_key_in_the_body_and_none_sends_nothing() {
    let server = Recorder::start(0);
    let records = drive(
        std::slice::from_ref(&server),
        agents(),
        &Setup::routing("user"),
    );
    for (r, seen) in joined(&records, &server) {
        let body = seen.body();
        assert_eq!(body["user"], key_of(&r), "{body}");
        assert_eq!(body["model"], "m");
        assert_eq!(seen.header("x-session-affinity"), None);
    }

    let server = Recorder::start(0);
    let records = drive(
        std::slice::from_ref(&server),
        agents(),
        &Setup::routing("none"),
    );
    for (r, seen) in joined(&records, &server) {
        assert_eq!(r.session_key, None);
        assert!(seen.body().get("user").is_none());
        for h in [
            "x-session-affinity",
            "x-dynamo-session-id",
            "x-smg-routing-key",
        ] {
            assert_eq!(seen.header(h), None, "{}", seen.head);
        }
    }
}

/// Twelve trees of one agent of three turns.
fn conversations() -> Workload {
    let trees = (0..12)
        .map(|i| {
            tree(
                &format!("c{i}"),
                0,
                vec![root(vec![user(0, 1), tool(2, 1), tool(4, 1)])],
            )
        })
        .collect();
    Workload { trees }
}

/// Runs the conversations over three servers: the records, and the
/// requests each server read.
fn over_three(placement: Placement) -> (Vec<RequestRecord>, [usize; 3]) {
    let servers = [Recorder::start(0), Recorder::start(1), Recorder::start(2)];
    let records = drive(&servers, conversations(), &Setup::placement(placement));
    assert_eq!(records.len(), 36);
    let mut read = [0; 3];
    for (i, s) in servers.iter().enumerate() {
        read[i] = s.seen().len();
        for seen in s.seen() {
            let r = records
                .iter()
                .find(|r| r.request == seen.id())
                .expect("a record");
            assert_eq!(
                r.replica,
                Some(i as u32),
                "the record names the server it went to"
            );
        }
    }
    for r in &records {
        let replica = r.replica.expect("every record names its replica");
        assert_eq!(
            r.served_by,
            Some(replica.to_string()),
            "the server's own header"
        );
        assert_eq!(r.session_key.as_deref(), Some(key_of(r).as_str()));
    }
    (records, read)
}

/// The replicas each agent's requests went to.
fn replicas_by_agent(records: &[RequestRecord]) -> BTreeMap<String, BTreeSet<u32>> {
    let mut by: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for r in records {
        by.entry(key_of(r)).or_default().insert(r.replica.unwrap());
    }
    by
}

#[test]
fn sticky_keeps_each_agent_on_one_replica() {
    let (records, read) = over_three(Placement::Sticky);
    let by = replicas_by_agent(&records);
    assert_eq!(by.len(), 12);
    assert!(by.values().all(|r| r.len() == 1), "{by:?}");
    assert!(read.iter().filter(|&&n| n > 0).count() >= 2, "{read:?}");
}

#[test]
fn round_robin_cycles_over_the_replicas_request_by_request() {
    let (records, read) = over_three(Placement::RoundRobin);
    // Each request takes the next replica in turn: an equal share each.
    assert_eq!(read, [12, 12, 12]);
    let by = replicas_by_agent(&records);
    assert!(
        by.values().any(|r| r.len() > 1),
        "conversations are scattered"
    );
}

#[test]
fn least_loaded_and_random_spread_requests() {
    for placement in [Placement::LeastLoaded, Placement::Random] {
        let (records, read) = over_three(placement);
        assert!(read.iter().all(|&n| n >= 4), "{placement}: {read:?}");
        // Random draws per request: conversations scatter. (Least-loaded
        // may keep one where it is: the replica its previous turn just
        // left is the least loaded when its next turn goes.)
        if placement == Placement::Random {
            let by = replicas_by_agent(&records);
            assert!(by.values().any(|r| r.len() > 1), "random: per request");
        }
    }
}
