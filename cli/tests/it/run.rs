//! `arbor run` against a tiny mock OpenAI streaming server on loopback.
//!
//! The mock is handwritten HTTP/1.1 on a `tokio::net::TcpListener`: it
//! reads each request's head and its body by Content-Length, answers
//! `GET /v1/models` with one model, and `POST /v1/chat/completions` with a
//! chunked SSE stream (a role chunk, three content chunks 5 ms apart, a
//! finish chunk, a usage chunk with cached tokens, `[DONE]`), keeping the
//! connection alive. It remembers what it was sent.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::util::*;

const API_KEY: &str = "sk-arbor-test-7f3c9e1d-not-a-real-key";
const HEADER_SECRET: &str = "hdr-secret-4b2a";

#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

struct Mock {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Serves until the mock is dropped.
    _runtime: tokio::runtime::Runtime,
}

impl Mock {
    fn start() -> Mock {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the mock");
        let listener = runtime
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        runtime.spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let _ = socket.set_nodelay(true);
                tokio::spawn(serve(socket, Arc::clone(&log)));
            }
        });
        Mock {
            port,
            seen,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

async fn serve(mut socket: TcpStream, log: Arc<Mutex<Vec<Seen>>>) {
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let head_end = loop {
            if let Some(p) = find(&buf, b"\r\n\r\n") {
                break p + 4;
            }
            let mut chunk = [0u8; 8192];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next().unwrap_or("").split(' ');
        let method = first.next().unwrap_or("").to_string();
        let path = first.next().unwrap_or("").to_string();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
            .collect();
        let length: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let mut chunk = [0u8; 65536];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let body = buf[head_end..head_end + length].to_vec();
        buf.drain(..head_end + length);
        log.lock().unwrap().push(Seen {
            method: method.clone(),
            path: path.clone(),
            headers,
            body: body.clone(),
        });
        let ok = match (method.as_str(), path.as_str()) {
            ("GET", "/v1/models") => models(&mut socket).await,
            ("POST", "/v1/chat/completions") => stream(&mut socket, body.len()).await,
            _ => socket
                .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .await
                .is_ok(),
        };
        if !ok {
            return;
        }
    }
}

async fn models(socket: &mut TcpStream) -> bool {
    let body =
        r#"{"object":"list","data":[{"id":"mock-model","object":"model","max_model_len":32768}]}"#;
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(response.as_bytes()).await.is_ok()
}

fn chunk(data: &str) -> String {
    let event = format!("data: {data}\n\n");
    format!("{:x}\r\n{event}\r\n", event.len())
}

async fn stream(socket: &mut TcpStream, body_len: usize) -> bool {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
    let role = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
    if socket
        .write_all(format!("{head}{}", chunk(role)).as_bytes())
        .await
        .is_err()
    {
        return false;
    }
    for word in ["Hello", " mock", " world"] {
        tokio::time::sleep(Duration::from_millis(5)).await;
        let data = format!(
            r#"{{"id":"c","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":"{word}"}}}}]}}"#
        );
        if socket.write_all(chunk(&data).as_bytes()).await.is_err() {
            return false;
        }
    }
    let prompt = (body_len / 4).max(1);
    let finish = r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;
    let usage = format!(
        r#"{{"id":"c","object":"chat.completion.chunk","choices":[],"usage":{{"prompt_tokens":{prompt},"completion_tokens":3,"total_tokens":{},"prompt_tokens_details":{{"cached_tokens":{}}}}}}}"#,
        prompt + 3,
        prompt / 2
    );
    let tail = format!(
        "{}{}{}0\r\n\r\n",
        chunk(finish),
        chunk(&usage),
        chunk("[DONE]")
    );
    socket.write_all(tail.as_bytes()).await.is_ok()
}

fn arbor_run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .arg("run")
        .args(args)
        .env("OPENAI_API_KEY", API_KEY)
        // A proxy that answers nothing: arbor talks to the endpoint
        // directly, so every request must still reach the server.
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .output()
        .expect("the arbor binary runs")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_run_against_a_mock_server_writes_records_and_a_summary() {
    let mock = Mock::start();
    let dir = scratch("run-mock");
    let out_dir = dir.join("out");
    let trace = fixture("trace_0187.json");
    let endpoint = mock.url();
    let header = format!("X-Api-Key={HEADER_SECRET}");
    let mut args = vec![
        trace.to_str().unwrap(),
        "--endpoint",
        &endpoint,
        "--out",
        out_dir.to_str().unwrap(),
        "--header",
        "X-Custom=yes",
        "--header",
        &header,
        "--extra-body",
        r#"{"temperature":0}"#,
        "--no-progress",
        "--timeout",
        "20",
    ];
    args.extend(FAST);
    let started = std::time::Instant::now();
    let out = arbor_run(&args);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        stdout(&out),
        stderr(&out)
    );
    assert!(started.elapsed() < Duration::from_secs(30));

    // One record per turn, each complete.
    let records = jsonl(&out_dir.join("records.jsonl"));
    assert_eq!(records.len(), 3, "one line per turn");
    let mut turns: Vec<u64> = records
        .iter()
        .map(|r| r["turn"].as_u64().unwrap())
        .collect();
    turns.sort_unstable();
    assert_eq!(turns, [0, 1, 2]);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["tree"], "trace_0187");
        for key in [
            "request",
            "agent",
            "copy",
            "play",
            "eligible_s",
            "dispatched_s",
            "queue_wait_s",
            "planned_input_tokens",
            "planned_output_tokens",
            "http_status",
            "attempts",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
        for key in [
            "sent_s",
            "headers_s",
            "first_byte_s",
            "first_content_s",
            "done_s",
            "lateness_s",
            "ttft_s",
            "e2e_s",
            "tpot_s",
        ] {
            assert!(r[key].as_f64().is_some(), "{key} not a number in {r}");
        }
        assert_eq!(r["itl_s"].as_array().map(Vec::len), Some(2), "{r}");
        assert_eq!(r["output_tokens"], 3);
        assert_eq!(r["output_tokens_source"], "usage");
        assert_eq!(r["input_tokens_source"], "usage");
        assert!(r["cached_tokens"].as_u64().is_some());
        assert_eq!(r["http_status"], 200);
        assert!(r["error"].is_null());
        let ttft = r["ttft_s"].as_f64().unwrap();
        let e2e = r["e2e_s"].as_f64().unwrap();
        assert!(ttft > 0.0 && ttft <= e2e, "{r}");
    }

    // The summary has every section.
    let summary: Value = serde_json::from_str(&read(&out_dir.join("summary.json"))).unwrap();
    let counts = &summary["counts"];
    assert_eq!(counts["dispatched"], 3);
    assert_eq!(counts["ok"], 3);
    assert_eq!(counts["failed"], 0);
    assert_eq!(counts["cancelled"], 0);
    assert_eq!(counts["trees"], 1);
    assert_eq!(counts["plays"], 1);
    assert_eq!(summary["cancelled"], false);
    for metric in [
        "ttft",
        "itl",
        "tpot",
        "e2e",
        "lateness",
        "queue_wait",
        "job_time",
    ] {
        let d = &summary["latency"][metric];
        for key in [
            "count", "mean_s", "p50_s", "p90_s", "p95_s", "p99_s", "max_s",
        ] {
            assert!(d.get(key).is_some(), "latency.{metric}.{key} missing");
        }
    }
    assert_eq!(summary["latency"]["ttft"]["count"], 3);
    assert_eq!(summary["latency"]["itl"]["count"], 6);
    assert_eq!(summary["latency"]["job_time"]["count"], 1);
    let t = &summary["throughput"];
    assert!(t["window_s"].as_f64().unwrap() > 0.0);
    assert!(t["requests_per_s"].as_f64().unwrap() > 0.0);
    assert!(t["input_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert_eq!(t["output_tokens"], 9);
    let ratio = summary["cache"]["hit_ratio"].as_f64().unwrap();
    assert!(ratio > 0.4 && ratio <= 0.5, "{ratio}");
    assert_eq!(summary["errors"], serde_json::json!({}));
    assert_eq!(summary["concurrency"]["planned_peak"], 1);
    assert!(summary["concurrency"]["observed_peak"].as_u64().unwrap() >= 1);
    assert!(summary["idle"]["shifts"].as_u64().is_some());
    assert!(summary["idle"]["skipped_s"].as_f64().is_some());
    assert_eq!(summary["tokens"]["output_source"]["usage"], 3);
    let config = &summary["config"];
    assert_eq!(config["model"], "mock-model");
    assert_eq!(config["model_from"], "server");
    assert_eq!(config["seed"], 0);
    assert_eq!(config["api_key_set"], true);
    assert_eq!(config["headers"]["x-custom"], "yes");
    assert_eq!(config["headers"]["x-api-key"], "<redacted>");
    assert_eq!(config["extra_body"]["temperature"], 0);
    assert_eq!(config["arbor_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(config["endpoint"], endpoint.as_str());
    assert!(config["emulator"].is_null(), "no emulator served this run");

    // No secret anywhere arbor wrote.
    for (what, text) in [
        ("records.jsonl", read(&out_dir.join("records.jsonl"))),
        ("summary.json", read(&out_dir.join("summary.json"))),
        ("stdout", stdout(&out)),
        ("stderr", stderr(&out)),
    ] {
        assert!(!text.contains(API_KEY), "the API key is in {what}");
        assert!(
            !text.contains(HEADER_SECRET),
            "a secret header value is in {what}"
        );
    }

    // The console table.
    let console = stdout(&out);
    for word in ["TTFT", "ITL", "TPOT", "E2E", "job time", "records.jsonl"] {
        assert!(console.contains(word), "{word} not in:\n{console}");
    }

    // What the server saw: the key as a bearer token, the headers, the body.
    let seen = mock.seen();
    let posts: Vec<&Seen> = seen.iter().filter(|s| s.method == "POST").collect();
    assert_eq!(posts.len(), 3);
    for post in posts {
        assert_eq!(post.path, "/v1/chat/completions");
        assert_eq!(
            post.header("authorization"),
            Some(format!("Bearer {API_KEY}").as_str())
        );
        assert_eq!(post.header("x-custom"), Some("yes"));
        assert_eq!(post.header("x-api-key"), Some(HEADER_SECRET));
        assert!(post.header("x-arbor-request-id").is_some());
        let body: Value = serde_json::from_slice(&post.body).unwrap();
        assert_eq!(body["model"], "mock-model");
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["temperature"], 0);
        assert!(body["max_tokens"].as_u64().unwrap() > 0);
    }
    assert!(seen.iter().any(|s| s.path == "/v1/models"));
}

#[test]
fn bad_extra_body_exits_2() {
    // Flags are checked before any connection: the port need not listen.
    for bad in ["{not json", "[1, 2]", "\"text\""] {
        let out = arbor_run(&[
            fixture("trace_0187.json").to_str().unwrap(),
            "--endpoint",
            "http://127.0.0.1:9",
            "--extra-body",
            bad,
        ]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", stderr(&out));
        assert!(stderr(&out).contains("--extra-body"), "{}", stderr(&out));
    }
}

#[test]
fn a_non_empty_output_directory_exits_2() {
    let dir = scratch("run-nonempty");
    std::fs::write(dir.join("keep.txt"), "mine").unwrap();
    let out = arbor_run(&[
        fixture("trace_0187.json").to_str().unwrap(),
        "--endpoint",
        "http://127.0.0.1:9",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("not empty"), "{}", stderr(&out));
    assert_eq!(read(&dir.join("keep.txt")), "mine", "nothing was touched");
}

/// `arbor run` of trace_0187 (three turns) against the built-in emulator
/// (TTFT 20 ms, ITL 1 ms) with `extra` flags: the output directory and the
/// records, every one `ok` with a TTFT near 20 ms and usage counts.
fn run_on_the_emulator(name: &str, extra: &[&str]) -> (PathBuf, Vec<serde_json::Value>) {
    let out_dir = scratch(name).join("out");
    let fixture = fixture("trace_0187.json");
    let mut args = vec![
        fixture.to_str().unwrap(),
        "--tool-time",
        "zero",
        "--think-time-pct",
        "0",
        "--ttft-ms",
        "20",
        "--itl-ms",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    let out = arbor_run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let records: Vec<serde_json::Value> = read(&out_dir.join("records.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        let ttft = r["ttft_s"].as_f64().unwrap();
        // Never under the model's 20 ms; up to 5x over on a loaded machine.
        assert!((0.020..0.100).contains(&ttft), "ttft {ttft}");
        assert_eq!(r["output_tokens_source"], "usage");
    }
    (out_dir, records)
}

#[test]
fn without_an_endpoint_the_built_in_emulator_serves_the_run() {
    let (out_dir, _) = run_on_the_emulator("run-emulator", &[]);
    // The summary names the emulator's settings the run was measured on.
    let summary: serde_json::Value =
        serde_json::from_str(&read(&out_dir.join("summary.json"))).unwrap();
    let settings = summary["config"]["emulator"].as_str().unwrap_or_default();
    assert!(
        settings.starts_with("--ttft-ms 20 --itl-ms 1"),
        "{settings}"
    );
}

#[test]
fn api_messages_runs_against_the_built_in_emulators_messages_stream() {
    let (out_dir, records) = run_on_the_emulator("run-messages", &["--api", "messages"]);
    for r in &records {
        let output = r["output_tokens"].as_u64().unwrap();
        assert_eq!(r["input_tokens_source"], "usage");
        assert_eq!(
            r["itl_s"].as_array().unwrap().len() as u64,
            output - 1,
            "one gap between each two text deltas: {r}"
        );
    }
    // The later turns of the conversation extend the first: the emulator's
    // cache serves their shared prefix, reported as cache_read_input_tokens.
    let cached: Vec<u64> = records
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(cached[0], 0, "{cached:?}");
    assert!(cached[1..].iter().all(|&c| c > 0), "{cached:?}");
    for r in &records {
        assert!(
            r["cached_tokens"].as_u64() <= r["input_tokens"].as_u64(),
            "{r}"
        );
    }
    let run: serde_json::Value = serde_json::from_str(&read(&out_dir.join("run.json"))).unwrap();
    assert!(
        run.to_string().contains("/v1/messages"),
        "the run names its URL: {run}"
    );
}

/// The README's main command: `arbor run` with nothing else replays the
/// bundled sample against the built-in emulator.
#[test]
fn the_readme_main_command_runs_the_bundled_sample() {
    let dir = scratch("run-demo");
    let out_dir = dir.join("out");
    let out = arbor_run(&["--out", out_dir.to_str().unwrap(), "--no-progress"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("TTFT"), "{}", stdout(&out));
    let lines = read(&out_dir.join("records.jsonl")).lines().count();
    assert_eq!(lines, 91, "one record per turn of the four sample traces");
    let summary: serde_json::Value =
        serde_json::from_str(&read(&out_dir.join("summary.json"))).unwrap();
    assert_eq!(summary["cancelled"], false);
}

#[test]
fn an_unreachable_server_fails_cleanly_with_exit_1() {
    let dir = scratch("run-unreachable");
    // Bind then drop: the port is (almost surely) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = arbor_run(&[
        fixture("trace_0187.json").to_str().unwrap(),
        "--endpoint",
        &endpoint,
        "--ready-timeout",
        "0",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing listens at"),
        "{}",
        stderr(&out)
    );
    assert!(
        !dir.join("out").exists(),
        "refused before the output directory"
    );
    assert!(!stderr(&out).contains(API_KEY));
}
