//! `--history live` through the live loop, against a small recording
//! server that streams ` tok0 tok1 ...` (as the emulator does): the next
//! turn's body carries the previous response's generated text where the
//! recorded answer was, for a synthesized (hash-id) tree and for a
//! recorded-text tree; recorded history sends unchanged bytes; a failed
//! previous turn keeps the recorded answer, and is counted.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_backends::live::exchange::Target;
use arbor_backends::live::history::History;
use arbor_backends::live::request::{build_turn_body, Api, BodyConfig};
use arbor_backends::live::{run, LiveConfig, Progress, RunOutcome};
use arbor_engine::dag::compile;
use arbor_engine::derive::DeriveOptions;
use arbor_engine::model::{Message, TurnText};
use arbor_engine::prompt::{self, Prompt};
use arbor_engine::scheduler::Scheduler;
use arbor_engine::{Role, Tree, Turn, Workload};
use arbor_runs::record::{RecordSink, RequestRecord};
use arbor_sim::emulator::EmulatorConfig;
use serde_json::Value;

use crate::build::{root, tree, user};
use crate::live::{immediate, server_runtime};

struct Sink(Vec<RequestRecord>);

impl RecordSink for Sink {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()> {
        self.0.push(record.clone());
        Ok(())
    }
}

/// A server on `std::net` that keeps every POST body in order and answers
/// each with ` tok0 tok1 ...` (as many as the body's `max_tokens`) and its
/// usage; the POSTs numbered in `fail` (0-based) get a 500 instead.
struct Recorder {
    base_url: String,
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Recorder {
    fn start(fail: &'static [usize]) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        let base_url = format!("http://{}", listener.local_addr().expect("an address"));
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let shared = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let bodies = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &bodies, fail));
            }
        });
        Recorder { base_url, bodies }
    }

    fn bodies(&self) -> Vec<Value> {
        let bodies = self.bodies.lock().expect("bodies");
        bodies
            .iter()
            .map(|b| serde_json::from_slice(b).expect("a JSON body"))
            .collect()
    }

    fn raw(&self) -> Vec<Vec<u8>> {
        self.bodies.lock().expect("bodies").clone()
    }
}

fn serve(mut stream: TcpStream, bodies: &Mutex<Vec<Vec<u8>>>, fail: &[usize]) {
    let mut buf = Vec::new();
    loop {
        let Some(end) = read_until_head(&mut stream, &mut buf) else {
            return;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + length {
            let mut more = [0u8; 65536];
            match stream.read(&mut more) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&more[..n]),
            }
        }
        let body = buf[end..end + length].to_vec();
        buf.drain(..end + length);
        if head.starts_with("get") {
            let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"data\":[]}";
            if stream.write_all(answer).is_err() {
                return;
            }
            continue;
        }
        let n = {
            let mut all = bodies.lock().expect("bodies");
            all.push(body.clone());
            all.len() - 1
        };
        let answer = if fail.contains(&n) {
            let text = "{\"error\":{\"message\":\"boom\"}}";
            format!(
                "HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\n\r\n{text}",
                text.len()
            )
        } else {
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            let tokens = request["max_tokens"].as_u64().unwrap_or(1);
            let mut sse = String::new();
            for i in 0..tokens {
                sse.push_str(&format!(
                    "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" tok{i}\"}}}}]}}\n\n"
                ));
            }
            sse.push_str(&format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":{tokens}}}}}\n\ndata: [DONE]\n\n"
            ));
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n{sse}",
                sse.len()
            )
        };
        if stream.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Reads until `buf` holds a whole head; the index past it.
fn read_until_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            return Some(i + 4);
        }
        let mut more = [0u8; 65536];
        match stream.read(&mut more) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&more[..n]),
        }
    }
}

/// Runs `workload` one turn after another against `server` under
/// `history`.
fn drive(
    server: &Recorder,
    workload: &Workload,
    history: History,
) -> (Vec<RequestRecord>, RunOutcome) {
    drive_at(&server.base_url, Api::Chat, workload, history)
}

/// [`drive`] against the server at `base_url`, speaking `api`.
fn drive_at(
    base_url: &str,
    api: Api,
    workload: &Workload,
    history: History,
) -> (Vec<RequestRecord>, RunOutcome) {
    let policy = immediate();
    let compiled = compile(
        workload,
        &policy,
        &DeriveOptions {
            overlap_tolerance: 0,
        },
    )
    .expect("compiles");
    let mut scheduler = Scheduler::new(compiled, policy).expect("valid policy");
    let mut target = Target::new(
        &format!("{base_url}{}", api.path()),
        &Default::default(),
        Duration::from_secs(10),
        0,
        None,
    )
    .expect("a loopback URL");
    target.api = api;
    let live = LiveConfig {
        target,
        body: BodyConfig {
            model: arbor_sim::emulator::DEFAULT_MODEL_NAME.into(),
            api,
            ..BodyConfig::default()
        },
        warm_connections: 0,
        base_url: base_url.to_string(),
        cache_bust: None,
        history,
        reuse: None,
        replicas: None,
    };
    let mut sink = Sink(Vec::new());
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run(
            &mut scheduler,
            Arc::new(workload.clone()),
            &live,
            &mut sink,
            &Progress::default(),
            std::future::pending(),
        ))
        .expect("the run completes");
    (sink.0, outcome)
}

/// Three turns of one agent, each extending the last by its answer (4
/// words) and new words, in hash-id blocks of 4: turn 0 is blocks 1-2 (8
/// words), turn 1 blocks 1-5 cut to 18 words, turn 2 blocks 1-6 (24).
fn hashed() -> Workload {
    let turn = |i: u64, isl: u32, ids: Vec<u32>| Turn {
        isl,
        osl: 4,
        hash_ids: ids.into(),
        ..user(i, 1)
    };
    let t = Tree {
        block_size: 4,
        ..tree(
            "h",
            0,
            vec![root(vec![
                turn(0, 8, vec![1, 2]),
                turn(1, 18, vec![1, 2, 3, 4, 5]),
                turn(2, 24, vec![1, 2, 3, 4, 5, 6]),
            ])],
        )
    };
    Workload { trees: vec![t] }
}

fn content(body: &Value) -> &str {
    body["messages"][0]["content"]
        .as_str()
        .expect("one user message")
}

/// The words of a synthesized prompt, each with its leading space.
fn words(text: &str) -> Vec<String> {
    text.split(' ').skip(1).map(|w| format!(" {w}")).collect()
}

fn synthesized(tree: &Tree, turn: usize) -> String {
    match prompt::build(tree, 0, turn) {
        Prompt::Synthesized(text) => text,
        Prompt::Recorded(_) => panic!("a synthesized turn"),
    }
}

const ANSWER: &str = " tok0 tok1 tok2 tok3";

#[test]
fn a_synthesized_turn_carries_the_previous_generated_text_where_the_answer_was() {
    let workload = hashed();
    let server = Recorder::start(&[]);
    let (records, outcome) = drive(&server, &workload, History::Live);
    assert_eq!(records.len(), 3);
    let bodies = server.bodies();
    let t = &workload.trees[0];
    let sent: Vec<&str> = bodies.iter().map(content).collect();
    assert_eq!(sent[0], synthesized(t, 0), "a first turn is as recorded");
    // Turn 1: turn 0's prompt, the generated text in place of words
    // [8, 12), then turn 1's own words from 12 on.
    let recorded1 = words(&synthesized(t, 1));
    let expected1 = format!("{}{ANSWER}{}", sent[0], recorded1[12..].concat());
    assert_eq!(sent[1], expected1);
    assert_eq!(words(sent[1]).len(), 18, "the recorded length");
    // Turn 2 builds on turn 1 as sent (its live answer stays).
    let recorded2 = words(&synthesized(t, 2));
    let expected2 = format!("{}{ANSWER}{}", sent[1], recorded2[22..].concat());
    assert_eq!(sent[2], expected2);
    let counts = outcome.history.expect("counts under live history");
    assert_eq!((counts.live_turns, counts.recorded_fallbacks), (2, 0));
}

#[test]
fn recorded_history_sends_the_recorded_bytes() {
    let workload = hashed();
    let server = Recorder::start(&[]);
    let (_, outcome) = drive(&server, &workload, History::Recorded);
    assert_eq!(outcome.history, None);
    let config = BodyConfig {
        model: arbor_sim::emulator::DEFAULT_MODEL_NAME.into(),
        ..BodyConfig::default()
    };
    let t = &workload.trees[0];
    let expected: Vec<Vec<u8>> = (0..3)
        .map(|turn| build_turn_body(&config, t, 0, turn, 4, None))
        .collect();
    assert_eq!(server.raw(), expected);
}

#[test]
fn a_failed_previous_turn_keeps_the_recorded_answer_and_is_counted() {
    let workload = hashed();
    // Turn 0 fails: turn 1 keeps its recorded answer; turn 2 gets turn
    // 1's generated text.
    let server = Recorder::start(&[0]);
    let (records, outcome) = drive(&server, &workload, History::Live);
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].status, "error");
    let bodies = server.bodies();
    let sent: Vec<&str> = bodies.iter().map(content).collect();
    let t = &workload.trees[0];
    assert_eq!(sent[1], synthesized(t, 1), "the recorded answer stays");
    assert!(!sent[1].contains("tok"));
    let recorded2 = words(&synthesized(t, 2));
    assert_eq!(
        sent[2],
        format!("{}{ANSWER}{}", sent[1], recorded2[22..].concat())
    );
    let counts = outcome.history.expect("counts");
    assert_eq!((counts.live_turns, counts.recorded_fallbacks), (1, 1));
}

/// Two turns of recorded text, the second extending the first by its
/// recorded answer (an assistant message) and a user message.
fn recorded_text() -> Workload {
    let text = |extends: bool, message: &str, answer: &str| {
        Some(Box::new(TurnText {
            extends_previous: extends,
            messages: vec![Message {
                role: Role::User,
                content: message.into(),
                tool: None,
            }],
            response: Some(answer.into()),
            ..TurnText::default()
        }))
    };
    let turns = vec![
        Turn {
            osl: 4,
            text: text(false, "first question", "the recorded answer"),
            ..user(0, 1)
        },
        Turn {
            osl: 4,
            text: text(true, "second question", "another answer"),
            ..user(1, 1)
        },
    ];
    Workload {
        trees: vec![tree("r", 0, vec![root(turns)])],
    }
}

#[test]
fn a_recorded_text_turn_answers_with_the_generated_text() {
    let workload = recorded_text();
    let server = Recorder::start(&[]);
    let (_, outcome) = drive(&server, &workload, History::Live);
    let bodies = server.bodies();
    assert_eq!(bodies.len(), 2);
    let messages = bodies[1]["messages"].as_array().expect("messages");
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        said,
        [
            ("user", "first question"),
            ("assistant", ANSWER),
            ("user", "second question")
        ]
    );
    assert_eq!(outcome.history.map(|c| c.live_turns), Some(1));

    // Recorded history: the recorded answer.
    let server = Recorder::start(&[]);
    drive(&server, &workload, History::Recorded);
    let bodies = server.bodies();
    assert_eq!(bodies[1]["messages"][1]["content"], "the recorded answer");
}

#[test]
fn the_emulators_answers_are_read_in_every_api() {
    // Every stream the emulator speaks gives its generated text: each
    // later turn is built from it.
    let server = server_runtime();
    let emulator = server
        .block_on(arbor_sim::emulator::serve(
            EmulatorConfig::default(),
            "127.0.0.1:0".parse().unwrap(),
        ))
        .expect("emulator starts");
    for api in [Api::Chat, Api::Completions, Api::Messages, Api::Responses] {
        for workload in [hashed(), recorded_text()] {
            let turns = workload.trees[0].agents[0].turns.len() as u64;
            let (records, outcome) = drive_at(&emulator.base_url(), api, &workload, History::Live);
            assert!(
                records.iter().all(|r| r.status == "ok"),
                "{api:?}: {records:?}"
            );
            let counts = outcome.history.expect("counts");
            assert_eq!(
                (counts.live_turns, counts.recorded_fallbacks),
                (turns - 1, 0),
                "{api:?}"
            );
        }
    }
    server.block_on(emulator.shutdown());
}
