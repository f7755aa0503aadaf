//! Credentials in `--endpoint` never reach an output: user info and
//! secret-looking query values (`api_key`, `token`, ...) are redacted on
//! stderr, stdout and in every file of `--out`, while requests still carry
//! them where they belong (a query string after the request's path, never
//! before it), and an endpoint that already ends in an API path does not
//! get it twice.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::util::*;

const KEY: &str = "sk-arbor-secret-4242";
const PASSWORD: &str = "pw-arbor-secret-7";
const SMALL: &str = "trees=1,turns=2,depth=0,isl=16,osl=4,think_ms=1,tool_ms=1,seed=1";

/// Every byte of every file under `dir`.
fn files(dir: &Path, into: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("a directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, into);
        } else {
            into.push((
                path.display().to_string(),
                std::fs::read(&path).expect("readable"),
            ));
        }
    }
}

fn assert_no_secret(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for secret in [KEY, PASSWORD] {
        assert!(!text.contains(secret), "{what} shows `{secret}`:\n{text}");
    }
}

fn assert_clean(out: &std::process::Output, dir: &Path) {
    assert_no_secret("stdout", &out.stdout);
    assert_no_secret("stderr", &out.stderr);
    let mut all = Vec::new();
    if dir.exists() {
        files(dir, &mut all);
    }
    for (path, bytes) in &all {
        assert_no_secret(path, bytes);
    }
}

/// `arbor run` of a small synthetic workload against `endpoint`.
fn run_synthetic(endpoint: &str, out_dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--synthetic",
        SMALL,
        "--endpoint",
        endpoint,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    args.extend(["--out", out_dir.to_str().expect("UTF-8")]);
    arbor(&args)
}

/// A port with nothing listening on it.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    listener.local_addr().expect("an address").port()
}

#[test]
fn with_the_server_down_no_output_shows_the_endpoints_credentials() {
    let port = closed_port();
    let endpoint = format!("http://user:{PASSWORD}@127.0.0.1:{port}/v1?api_key={KEY}&x=1");
    let base = scratch("secrets-down");
    // With or without --model, the pre-flight refuses the run (exit 1),
    // naming the endpoint redacted.
    for (name, extra) in [("no-model", &[][..]), ("model", &["--model", "m"][..])] {
        let out_dir = base.join(name);
        let mut extra = extra.to_vec();
        extra.extend(["--ready-timeout", "0"]);
        let out = run_synthetic(&endpoint, &out_dir, &extra);
        assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "nothing listens at http://[redacted]@127.0.0.1:{port}?api_key=[redacted]&x=1"
            )),
            "{}",
            stderr(&out)
        );
        assert_clean(&out, &out_dir);
    }
}

/// A server that answers `/v1/models` and streams a two-token answer to
/// anything else, logging every request line.
fn mock() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let log = Arc::clone(&log);
            std::thread::spawn(move || answer(conn, &log));
        }
    });
    (url, seen)
}

fn answer(conn: TcpStream, log: &Mutex<Vec<String>>) {
    let mut reader = BufReader::new(conn);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() || line.is_empty() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
    log.lock().expect("log").push(target.clone());
    let mut conn = reader.into_inner();
    let reply = if target.starts_with("/v1/models") {
        let body = r#"{"data":[{"id":"mock"}]}"#;
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
    } else if target.starts_with("/v1/chat/completions") {
        let chunk = r#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#;
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
             data: {chunk}\n\ndata: {chunk}\n\ndata: [DONE]\n\n"
        )
    } else {
        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string()
    };
    let _ = conn.write_all(reply.as_bytes());
}

#[test]
fn a_query_string_goes_after_the_path_and_an_api_path_is_not_doubled() {
    let (url, seen) = mock();
    let endpoint = format!("{url}/v1/chat/completions?api_key={KEY}");
    let out_dir = scratch("secrets-query").join("run");
    let out = run_synthetic(&endpoint, &out_dir, &["--no-metrics"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "requests go to {url}/v1/chat/completions?api_key=[redacted]"
        )),
        "{}",
        stderr(&out)
    );
    assert_clean(&out, &out_dir);
    let seen = seen.lock().expect("log").clone();
    assert_eq!(seen[0], format!("/v1/models?api_key={KEY}"), "{seen:?}");
    let posts: Vec<&String> = seen.iter().filter(|t| t.contains("chat")).collect();
    assert_eq!(posts.len(), 2, "{seen:?}");
    for target in posts {
        assert_eq!(target, &format!("/v1/chat/completions?api_key={KEY}"));
    }
}

#[test]
fn doctor_keeps_the_query_after_the_path_and_shows_no_credential() {
    // Server down: every finding names the endpoint, redacted.
    let endpoint = format!(
        "http://user:{PASSWORD}@127.0.0.1:{}/v1?api_key={KEY}",
        closed_port()
    );
    let out = arbor(&["doctor", "--endpoint", &endpoint]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("[redacted]") || stdout(&out).contains("[redacted]"));
    assert_clean(&out, &scratch("secrets-doctor-down"));
    // Server up: the probes carry the query after their paths.
    let (url, seen) = mock();
    let out = arbor(&["doctor", "--endpoint", &format!("{url}/v1?api_key={KEY}")]);
    assert_clean(&out, &scratch("secrets-doctor-up"));
    let seen = seen.lock().expect("log").clone();
    assert!(!seen.is_empty(), "{}", stderr(&out));
    for target in &seen {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        assert_eq!(query, format!("api_key={KEY}"), "{seen:?}");
        assert!(!path.contains("api_key"), "{seen:?}");
    }
}
