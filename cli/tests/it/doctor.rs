//! `arbor doctor` as a process against the in-process emulator, a
//! handwritten mock that behaves like llama.cpp's OpenAI server, a mock
//! that does not stream, and nothing at all: the human report, `--json`,
//! exit codes, no secret on stdout or stderr. The probes' findings in
//! detail (every finding of the emulator, the workload fitted to the
//! context length) are tested in-process in `backends/tests/it/doctor.rs`.
//!
//! The mock is plain `std::net` HTTP/1.1: one thread per connection, one
//! request per connection (`Connection: close`, close-delimited bodies).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arbor_sim::emulator::{serve, EmulatorConfig, EmulatorHandle};
use serde_json::Value;

use crate::util::*;

const API_KEY: &str = "sk-doctor-test-91c2e7aa-not-a-real-key";
const ANTHROPIC_KEY: &str = "sk-ant-doctor-test-3f0b-not-a-real-key";
const HEADER_SECRET: &str = "hdr-doctor-secret-5d1f";

/// Runs `arbor doctor` with the test API key in the environment.
fn doctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .arg("doctor")
        .args(args)
        .env("OPENAI_API_KEY", API_KEY)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        // A proxy that answers nothing: arbor talks to the endpoint
        // directly, so every request must still reach the server.
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .output()
        .expect("the arbor binary runs")
}

fn assert_no_secret(out: &Output) {
    for text in [stdout(out), stderr(out)] {
        assert!(!text.contains(API_KEY), "the API key leaked: {text}");
        assert!(!text.contains(ANTHROPIC_KEY), "the API key leaked: {text}");
        assert!(
            !text.contains(HEADER_SECRET),
            "a secret header leaked: {text}"
        );
    }
}

/// The line of the human report for `probe`.
fn line<'a>(text: &'a str, probe: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().nth(1) == Some(probe))
        .unwrap_or_else(|| panic!("no `{probe}` line in:\n{text}"))
}

/// The emulator on its own runtime, served until dropped.
struct Emulator {
    handle: EmulatorHandle,
    _runtime: tokio::runtime::Runtime,
}

impl Emulator {
    fn start() -> Emulator {
        Emulator::start_with(EmulatorConfig::default())
    }

    fn start_with(config: EmulatorConfig) -> Emulator {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the emulator");
        let handle = runtime
            .block_on(serve(config, "127.0.0.1:0".parse().unwrap()))
            .expect("the emulator starts");
        Emulator {
            handle,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        self.handle.base_url()
    }
}

#[test]
fn doctor_finds_the_emulator_ready_and_recommends_flags() {
    let emulator = Emulator::start();
    let url = emulator.url();
    let out = doctor(&[
        "--endpoint",
        &url,
        "--timeout",
        "10",
        "--header",
        &format!("X-Api-Key={HEADER_SECRET}"),
    ]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    for probe in [
        "health",
        "models",
        "context_length",
        "streaming",
        "usage",
        "cached_tokens",
        "latency",
        "max_completion_tokens",
        "max_tokens",
        "ignore_eos",
        "completions",
        "messages",
        "api",
    ] {
        assert!(
            line(&text, probe).trim_start().starts_with("ok "),
            "{probe}: {text}"
        );
    }
    assert!(!text.contains("warn "), "{text}");
    assert!(line(&text, "context_length").contains("131072"), "{text}");
    assert!(line(&text, "latency").contains("TTFT"), "{text}");
    let use_line = text
        .lines()
        .find(|l| l.starts_with("Use: arbor run"))
        .expect("a Use line");
    assert!(
        use_line.contains(&format!("--endpoint {url}")),
        "{use_line}"
    );
    assert!(use_line.contains("--model arbor-emulator"), "{use_line}");
    assert!(
        use_line.contains("--max-tokens-field max_tokens --ignore-eos"),
        "{use_line}"
    );
    assert_no_secret(&out);
}

/// How the mock behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Like llama.cpp's Python server: `/health` 404, models without a
    /// context length, streams without usage, `max_completion_tokens`
    /// and `ignore_eos` ignored (8 tokens by default, 3 for a one-word
    /// answer).
    Llama,
    /// Answers chat requests with one plain JSON object, never a stream.
    NoStream,
    /// Answers chat requests with a 200 head and then closes the
    /// connection, before any body byte.
    HeadThenClose,
}

#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
    x_api_key: Option<String>,
    anthropic_version: Option<String>,
    body: Value,
}

struct Mock {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Mock {
    fn start(mode: Mode) -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        // The thread ends with the test process.
        std::thread::spawn(move || {
            for socket in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || answer(socket, mode, &log));
            }
        });
        Mock { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn answer(socket: TcpStream, mode: Mode, log: &Mutex<Vec<Seen>>) {
    let _ = socket.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = socket.set_nodelay(true);
    let mut reader = BufReader::new(match socket.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut first = String::new();
    if reader.read_line(&mut first).is_err() {
        return;
    }
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut length = 0usize;
    let mut authorization = None;
    let mut x_api_key = None;
    let mut anthropic_version = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            }
            if name.eq_ignore_ascii_case("x-api-key") {
                x_api_key = Some(value.trim().to_string());
            }
            if name.eq_ignore_ascii_case("anthropic-version") {
                anthropic_version = Some(value.trim().to_string());
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    log.lock().unwrap().push(Seen {
        path: path.clone(),
        authorization,
        x_api_key,
        anthropic_version,
        body: body.clone(),
    });
    let mut socket = socket;
    let _ = match (method.as_str(), path.as_str()) {
        ("GET", "/v1/models") => json(
            &mut socket,
            r#"{"object":"list","data":[{"id":"smollm2-135m","object":"model","owned_by":"me","permissions":[]}]}"#,
        ),
        ("POST", "/v1/chat/completions") if mode == Mode::NoStream => json(
            &mut socket,
            r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#,
        ),
        ("POST", "/v1/chat/completions") if mode == Mode::HeadThenClose => socket.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
        ),
        ("POST", "/v1/chat/completions") => stream(&mut socket, &body, "chat"),
        ("POST", "/v1/completions") => stream(&mut socket, &body, "text"),
        _ => {
            let body = r#"{"detail":"Not Found"}"#;
            write!(
                socket,
                "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
        }
    };
}

fn json(socket: &mut TcpStream, body: &str) -> std::io::Result<()> {
    write!(
        socket,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// A llama.cpp-like stream: `max_tokens` is honoured, nothing else is;
/// 8 tokens by default, 3 when asked for a single word; no usage.
fn stream(socket: &mut TcpStream, body: &Value, kind: &str) -> std::io::Result<()> {
    let mut n = body["max_tokens"].as_u64().unwrap_or(8);
    if body.to_string().contains("single word") {
        n = n.min(3);
    }
    socket.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n",
    )?;
    let chunk = |text: &str| -> String {
        if kind == "chat" {
            format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}},\"finish_reason\":null}}]}}\r\n\r\n"
            )
        } else {
            format!(
                "data: {{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"finish_reason\":null}}]}}\r\n\r\n"
            )
        }
    };
    if kind == "chat" {
        socket.write_all(
            b"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"finish_reason\":null}]}\r\n\r\n",
        )?;
    }
    for i in 0..n {
        socket.write_all(chunk(&format!(" t{i}")).as_bytes())?;
        socket.flush()?;
        std::thread::sleep(Duration::from_millis(1));
    }
    socket.write_all(
        b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\r\n\r\ndata: [DONE]\r\n\r\n",
    )?;
    socket.flush()
}

#[test]
fn doctor_reports_each_llama_cpp_quirk_and_recommends_max_tokens() {
    let mock = Mock::start(Mode::Llama);
    let out = doctor(&["--endpoint", &mock.url(), "--timeout", "10"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));

    let health = line(&text, "health");
    assert!(
        health.trim_start().starts_with("warn") && health.contains("404"),
        "{text}"
    );
    assert!(line(&text, "models").contains("smollm2-135m"), "{text}");
    assert!(
        line(&text, "context_length")
            .trim_start()
            .starts_with("warn"),
        "{text}"
    );
    assert!(
        line(&text, "streaming").trim_start().starts_with("ok"),
        "{text}"
    );
    let usage = line(&text, "usage");
    assert!(
        usage.trim_start().starts_with("warn") && usage.contains("no usage"),
        "{text}"
    );
    assert!(
        line(&text, "cached_tokens")
            .trim_start()
            .starts_with("warn"),
        "{text}"
    );
    let mct = line(&text, "max_completion_tokens");
    assert!(
        mct.trim_start().starts_with("warn") && mct.contains("ignored") && mct.contains("got 8"),
        "{text}"
    );
    let mt = line(&text, "max_tokens");
    assert!(
        mt.trim_start().starts_with("ok") && mt.contains("got 5"),
        "{text}"
    );
    let eos = line(&text, "ignore_eos");
    assert!(
        eos.trim_start().starts_with("warn") && eos.contains("ignored") && eos.contains("got 3"),
        "{text}"
    );
    assert!(
        eos.contains("--extra-body") && eos.contains("logit_bias"),
        "{text}"
    );
    assert!(
        line(&text, "completions").trim_start().starts_with("ok"),
        "{text}"
    );
    let use_line = text
        .lines()
        .find(|l| l.starts_with("Use: arbor run"))
        .expect("a Use line");
    assert!(
        use_line.contains("--model smollm2-135m --max-tokens-field max_tokens"),
        "{use_line}"
    );
    assert!(!use_line.contains("--ignore-eos"), "{use_line}");

    // What was sent: the API key as a bearer token; the probes' bodies.
    let seen = mock.seen();
    let posts: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.path == "/v1/chat/completions")
        .collect();
    assert_eq!(posts.len(), 4, "{seen:?}");
    // The Messages probe carries its own key and version, no bearer token.
    let (messages, others): (Vec<&Seen>, Vec<&Seen>) =
        seen.iter().partition(|s| s.path == "/v1/messages");
    assert_eq!(messages.len(), 1, "{seen:?}");
    assert_eq!(messages[0].x_api_key.as_deref(), Some(ANTHROPIC_KEY));
    assert_eq!(messages[0].anthropic_version.as_deref(), Some("2023-06-01"));
    assert_eq!(messages[0].authorization, None);
    assert_eq!(messages[0].body["max_tokens"], 5);
    for s in others {
        assert_eq!(
            s.authorization.as_deref(),
            Some(format!("Bearer {API_KEY}").as_str()),
            "{s:?}"
        );
        assert_eq!(s.x_api_key, None);
    }
    let messages_line = line(&text, "messages");
    assert!(
        messages_line.trim_start().starts_with("warn") && messages_line.contains("404"),
        "{text}"
    );
    assert!(
        line(&text, "api").contains("streams chat, completions; --api chat"),
        "{text}"
    );
    let mct_body = &posts[1].body;
    assert_eq!(mct_body["max_completion_tokens"], 5);
    assert!(mct_body.get("max_tokens").is_none(), "{mct_body}");
    let eos_body = &posts[3].body;
    assert_eq!(eos_body["ignore_eos"], true);
    assert_eq!(eos_body["temperature"], 0, "length probes decode greedily");
    assert_eq!(eos_body["max_tokens"], 48);
    assert_eq!(eos_body["stream_options"]["include_usage"], true);
    assert_no_secret(&out);
}

#[test]
fn doctor_json_against_the_llama_like_mock_says_what_is_missing() {
    let mock = Mock::start(Mode::Llama);
    let out = doctor(&["--endpoint", &mock.url(), "--json", "--timeout", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(report["usable"], true);
    assert_eq!(report["health_status"], 404);
    assert_eq!(report["context_length"], Value::Null);
    assert_eq!(report["usage_in_stream"], false);
    assert_eq!(report["cached_tokens_reported"], false);
    assert_eq!(report["max_completion_tokens_honoured"], false);
    assert_eq!(report["max_tokens_honoured"], true);
    assert_eq!(report["ignore_eos_honoured"], false);
    assert_eq!(finding(&report, "health")["status"], "warn");
    assert_eq!(finding(&report, "ignore_eos")["status"], "warn");
    assert!(finding(&report, "ignore_eos")["action"]
        .as_str()
        .unwrap()
        .contains("logit_bias"));
    assert!(finding(&report, "max_completion_tokens")["seen"]
        .as_str()
        .unwrap()
        .contains("counted"));
    let flags = report["flags"].to_string();
    assert!(
        flags.contains(r#""--max-tokens-field","max_tokens""#),
        "{flags}"
    );
    assert!(!flags.contains("--ignore-eos"), "{flags}");
}

/// `doctor` against a mock in `mode` whose streaming probe fails: exit 1,
/// no `Use:` line, no probe after it; the report and its `streaming` line.
fn streaming_fails(mode: Mode) -> (String, String) {
    let mock = Mock::start(mode);
    let out = doctor(&["--endpoint", &mock.url(), "--timeout", "10"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    let streaming = line(&text, "streaming").to_string();
    assert!(streaming.trim_start().starts_with("fail"), "{text}");
    assert!(!text.contains("Use:"), "{text}");
    assert!(
        stderr(&out).contains("cannot be benchmarked"),
        "{}",
        stderr(&out)
    );
    assert!(!text.contains("max_completion_tokens"), "{text}");
    (text, streaming)
}

#[test]
fn doctor_fails_a_server_that_does_not_stream() {
    let (text, streaming) = streaming_fails(Mode::NoStream);
    assert!(streaming.contains("no SSE"), "{text}");
}

#[test]
fn doctor_says_the_connection_closed_after_the_headers() {
    let (text, streaming) = streaming_fails(Mode::HeadThenClose);
    assert!(
        streaming.contains("HTTP 200")
            && streaming.contains("connection closed after the headers, before any data"),
        "{text}"
    );
    assert!(
        !text.contains("OpenAI-compatible") && !text.contains("no SSE"),
        "not a question of compatibility: {text}"
    );
    assert!(text.contains("server's log"), "{text}");
}

#[test]
fn doctor_against_nothing_exits_1_with_a_clear_message() {
    // Bind then drop: the port is (almost surely) closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = doctor(&["--endpoint", &endpoint, "--timeout", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(line(&text, "health").contains("cannot connect"), "{text}");
    assert!(stderr(&out).contains("cannot connect"), "{}", stderr(&out));
    assert_no_secret(&out);

    let out = doctor(&["--endpoint", &endpoint, "--json", "--timeout", "5"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("one JSON object");
    assert_eq!(report["usable"], false);
    assert_eq!(finding(&report, "health")["status"], "fail");
}

#[test]
fn doctor_bad_flags_exit_2() {
    for args in [
        &[
            "--endpoint",
            "http://127.0.0.1:9",
            "--header",
            "no-equals-sign",
        ][..],
        &["--endpoint", "http://127.0.0.1:9", "--header", "bad name=1"],
        &["--endpoint", "http://127.0.0.1:9", "--timeout", "0"],
        &["--endpoint", "http://127.0.0.1:9", "--timeout", "soon"],
        &["--endpoint", "ftp://127.0.0.1:9"],
        &[],
    ] {
        let out = doctor(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
    }
    let out = doctor(&[
        "--endpoint",
        "http://127.0.0.1:9",
        "--header",
        &format!("Authorization: Bearer {HEADER_SECRET}"),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--header"), "{}", stderr(&out));
    assert_no_secret(&out);
}

#[test]
fn doctor_gives_up_on_a_silent_server_within_the_timeout() {
    // Accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for socket in listener.incoming().flatten() {
            held.push(socket);
        }
    });
    let started = std::time::Instant::now();
    let out = doctor(&[
        "--endpoint",
        &format!("http://127.0.0.1:{port}"),
        "--timeout",
        "1",
    ]);
    let elapsed = started.elapsed();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}\n{}", stderr(&out));
    assert!(
        line(&text, "health").contains("no answer within 1 s"),
        "{text}"
    );
    let models = line(&text, "models");
    assert!(models.trim_start().starts_with("fail"), "{text}");
    assert!(models.contains("--model"), "{text}");
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
}
