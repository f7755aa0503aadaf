//! The fault matrix (issue 13, docs/reliability.md "The fault matrix"):
//! `arbor run --endpoint` against a scripted server (`scripted.rs`) that
//! fails one way per row, on a small synthetic workload, bounded in time.
//!
//! Every row asserts the same five things: one record per dispatched
//! request (`records.jsonl` against `summary.json`'s `counts`), each
//! record's error class (and status), what reached the server (no request
//! arrives more often than its record's `attempts` say; in rows where the
//! server takes every request, each arrives exactly once), a valid
//! `summary.json` whose `errors` agree with the records, and the API key in
//! no file of `--out` and not in stdout or stderr.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::scripted::{Models, Script, Scripted};
use crate::util::*;

/// The API key every row runs with (through `--api-key-env`).
const SECRET: &str = "sk-test-SECRET123";
const KEY_ENV: &str = "ARBOR_FAULTS_KEY";

/// Two trees of a couple of turns each, the roots at once.
const WORKLOAD: &str = "trees=2,turns=2,spawn=0,isl=64,max_isl=256,osl=4,arrival_s=0,think=0";

/// The longest any row may take before the test kills arbor and fails.
const BOUND: Duration = Duration::from_secs(60);

/// What a row expects.
struct Expect {
    /// Each record's class (`ok` when it succeeded) is one of these.
    classes: &'static [&'static str],
    /// Each record's `http_status`.
    status: Option<u16>,
    /// The server reads every request it is sent: each record's request
    /// must arrive exactly once. Otherwise at most its `attempts` times.
    each_arrives_once: bool,
}

/// Rows where the server drops some requests: each may succeed or be
/// cut, and each arrives exactly once.
const CUT_ONCE: Expect = Expect {
    classes: &["ok", "connect", "stream_cut"],
    status: None,
    each_arrives_once: true,
};

const fn expect(class: &'static [&'static str], status: Option<u16>) -> Expect {
    Expect {
        classes: class,
        status,
        each_arrives_once: true,
    }
}

/// What one row's run left.
struct Ran {
    records: Vec<Value>,
    summary: Value,
    /// POSTs the server received, by `x-arbor-request-id`.
    posts: BTreeMap<Option<String>, u32>,
}

/// Runs the workload against `url` with `extra` flags, bounded by
/// [`BOUND`], and checks what every row checks; returns what ran for the
/// row's own checks.
fn run_row(
    name: &str,
    url: &str,
    server: Option<&Scripted>,
    expect: &Expect,
    extra: &[&str],
) -> Ran {
    let dir = scratch(&format!("faults-{name}"));
    let out_dir = dir.join("out");
    let mut args = vec![
        "run",
        "--synthetic",
        WORKLOAD,
        "--endpoint",
        url,
        "--model",
        "m",
        "--api-key-env",
        KEY_ENV,
        "--retries",
        "0",
        "--no-metrics",
        "--no-progress",
        "--out",
        out_dir.to_str().expect("a UTF-8 path"),
    ];
    args.extend(FAST);
    args.extend_from_slice(extra);
    let (code, out, err) = run_bounded(&dir, &args);
    let context = format!("{name}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}");
    // 4: the run finished but none of its requests succeeded (nothing was
    // measured); checked against the summary below.
    assert!(matches!(code, Some(0 | 1 | 4)), "{context}");
    assert!(!err.contains("panicked"), "{context}");

    let records = jsonl(&out_dir.join("records.jsonl"));
    assert!(!records.is_empty(), "{context}");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("summary.json")).expect("summary.json written"),
    )
    .unwrap_or_else(|e| panic!("{name}: summary.json is not JSON: {e}"));
    // 4 also when more than half failed (the default --max-error-rate).
    let count = |k: &str| summary["counts"][k].as_u64().expect("a count");
    let (ok, failed) = (count("ok"), count("failed"));
    if ok == 0 && count("dispatched") > 0 {
        assert_eq!(code, Some(4), "{context}");
        assert!(err.contains("measured requests succeeded"), "{context}");
    } else if failed > ok {
        assert_eq!(code, Some(4), "{context}");
        assert!(err.contains("over --max-error-rate 0.5"), "{context}");
    } else {
        assert_ne!(code, Some(4), "{context}");
    }
    let posts = server.map(Scripted::posts_by_id).unwrap_or_default();
    check_counts(name, &records, &summary);
    check_classes(name, expect, &records, &summary);
    check_arrivals(name, expect, &records, &posts);
    assert_no_secret_in(&out_dir, name);
    for text in [&out, &err] {
        assert!(
            !text.contains(SECRET),
            "{name}: the key in the console: {text}"
        );
    }
    Ran {
        records,
        summary,
        posts,
    }
}

/// One record per dispatched request, each settled once.
fn check_counts(name: &str, records: &[Value], summary: &Value) {
    let counts = &summary["counts"];
    assert_eq!(
        counts["dispatched"].as_u64(),
        Some(records.len() as u64),
        "{name}: one record per dispatched request: {counts}"
    );
    let settled = ["ok", "failed", "cancelled"]
        .iter()
        .map(|k| counts[k].as_u64().expect("a count"))
        .sum::<u64>();
    assert_eq!(settled, records.len() as u64, "{name}: {counts}");
}

/// Each record's class and status as expected; the summary's `errors`
/// count each class as the records do.
fn check_classes(name: &str, expect: &Expect, records: &[Value], summary: &Value) {
    let mut by_class: BTreeMap<String, u64> = BTreeMap::new();
    for record in records {
        let class = record["error"]["category"].as_str().unwrap_or("ok");
        assert!(
            expect.classes.contains(&class),
            "{name}: class `{class}`, expected one of {:?}: {record}",
            expect.classes
        );
        if let Some(status) = expect.status {
            assert_eq!(record["http_status"], status, "{name}: {record}");
        }
        *by_class.entry(class.to_string()).or_default() += 1;
    }
    for (class, n) in by_class.iter().filter(|(class, _)| *class != "ok") {
        assert_eq!(
            summary["errors"][class].as_u64(),
            Some(*n),
            "{name}: summary errors {} against the records",
            summary["errors"]
        );
    }
}

/// No request reached the server more often than its record's
/// `attempts`; with `each_arrives_once`, each reached it exactly once.
fn check_arrivals(
    name: &str,
    expect: &Expect,
    records: &[Value],
    posts: &BTreeMap<Option<String>, u32>,
) {
    let attempts = |r: &Value| r["attempts"].as_u64().expect("attempts");
    let total: u64 = records.iter().map(attempts).sum();
    let received: u64 = posts.values().map(|&n| u64::from(n)).sum();
    assert!(
        received <= total,
        "{name}: the server received {received} POSTs for {total} attempts: {posts:?}"
    );
    assert!(
        !posts.contains_key(&None),
        "{name}: a POST without a request id"
    );
    for record in records {
        let id = record["request"].to_string();
        let arrived = posts.get(&Some(id.clone())).copied().unwrap_or(0);
        assert!(
            u64::from(arrived) <= attempts(record),
            "{name}: request {id} arrived {arrived} times: {record}"
        );
        if expect.each_arrives_once {
            assert_eq!(arrived, 1, "{name}: request {id} arrived {arrived} times");
        }
    }
}

/// Runs arbor with `args` (stdout and stderr into files in `dir`); kills
/// it and fails after [`BOUND`]. The exit code, stdout and stderr.
fn run_bounded(dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let stdout_path = dir.join("stdout.txt");
    let stderr_path = dir.join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env(KEY_ENV, SECRET)
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("http_proxy", "http://127.0.0.1:9")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("the arbor binary runs");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if started.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still running after {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    (status.code(), read(&stdout_path), read(&stderr_path))
}

/// No file under `dir` holds [`SECRET`].
fn assert_no_secret_in(dir: &Path, name: &str) {
    for entry in std::fs::read_dir(dir).expect("the output directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            assert_no_secret_in(&path, name);
            continue;
        }
        let bytes = std::fs::read(&path).expect("a readable file");
        let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!found, "{name}: the key is in {}", path.display());
    }
}

/// One row: `script` behind the endpoint, a 5 s `--timeout`, the run
/// checked against `expect`.
fn row(name: &str, script: Script, expect: Expect) -> Ran {
    row_with_timeout(name, script, expect, "5")
}

fn row_with_timeout(name: &str, script: Script, expect: Expect, timeout_s: &str) -> Ran {
    let server = Scripted::start(script);
    run_row(
        name,
        &server.url(),
        Some(&server),
        &expect,
        &["--timeout", timeout_s],
    )
}

/// Every record carries an error message holding `needle`.
fn messages_hold(ran: &Ran, needle: &str) {
    for record in &ran.records {
        let message = record["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(needle), "`{needle}` not in {record}");
    }
}

#[test]
fn a_healthy_server_is_the_control_row() {
    let ran = row("healthy", Script::Healthy, expect(&["ok"], Some(200)));
    assert_eq!(ran.summary["counts"]["failed"], 0);
}

// The pre-flight (docs/reliability.md "Pre-flight"): a run that cannot
// measure what was asked is refused before its clock starts, exit 1, in
// one message, with no measured request sent and no output directory.

/// Runs the workload against `url` with `extra` flags (`--model` among
/// them when wanted) and checks what a pre-flight refusal leaves: exit 1,
/// each of `words` in stderr, no POST at the server, no `--out`. Returns
/// stderr.
fn refused_row(
    name: &str,
    url: &str,
    server: Option<&Scripted>,
    extra: &[&str],
    words: &[&str],
) -> String {
    let dir = scratch(&format!("faults-{name}"));
    let out_dir = dir.join("out");
    let mut args = vec![
        "run",
        "--synthetic",
        WORKLOAD,
        "--endpoint",
        url,
        "--api-key-env",
        KEY_ENV,
        "--no-metrics",
        "--no-progress",
        "--out",
        out_dir.to_str().expect("a UTF-8 path"),
    ];
    args.extend(FAST);
    args.extend_from_slice(extra);
    let (code, out, err) = run_bounded(&dir, &args);
    let context = format!("{name}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}");
    assert_eq!(code, Some(1), "{context}");
    assert!(err.contains("pre-flight"), "{context}");
    for words in words {
        assert!(err.contains(words), "`{words}` not said: {context}");
    }
    assert!(
        !err.contains("pass --model") || words.contains(&"pass --model"),
        "{context}"
    );
    assert!(!out_dir.exists(), "{name}: {} was made", out_dir.display());
    if let Some(server) = server {
        assert!(
            server.posts_by_id().is_empty(),
            "{name}: a POST reached the server"
        );
    }
    assert!(!err.contains(SECRET), "{name}: the key in stderr");
    err
}

#[test]
fn refused() {
    let url = dead_port();
    let started = Instant::now();
    refused_row(
        "refused",
        &url,
        None,
        &["--model", "m", "--ready-timeout", "1"],
        &[
            "nothing listens at",
            "Connection refused",
            "--ready-timeout 1 s",
            "start the server",
        ],
    );
    // Asked for about a second, then refused: not the run's length.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_model_the_server_does_not_serve_is_refused_listing_what_it_serves() {
    let server = Scripted::start(Script::Healthy);
    refused_row(
        "wrong-model",
        &server.url(),
        Some(&server),
        &["--model", "llama-3-8b"],
        &[
            "does not serve --model llama-3-8b",
            "it lists m",
            "--allow-unlisted-model",
        ],
    );
}

#[test]
fn several_models_and_no_model_flag_are_refused_listing_them() {
    let server = Scripted::serving(Script::Healthy, Models::Several);
    refused_row(
        "several-models",
        &server.url(),
        Some(&server),
        &[],
        &["lists 3 models (m, m-large, other): choose one with --model"],
    );
}

/// Runs the workload against `url` with `extra` flags (no `--model`
/// unless among them), bounded: the exit code, stderr and the summary
/// (`Null` when none was written), and `--out`.
fn run_plain(name: &str, url: &str, extra: &[&str]) -> (Option<i32>, String, Value, PathBuf) {
    let mut flags = vec!["--endpoint", url, "--no-metrics"];
    flags.extend(FAST);
    flags.extend_from_slice(extra);
    let (code, _, err, summary, out_dir) = run_workload(name, &flags);
    (code, err, summary, out_dir)
}

/// `arbor run` of the workload with `flags` (the built-in emulator
/// without `--endpoint`), bounded: the exit code, stdout, stderr, the
/// summary (`Null` when none was written) and `--out`.
fn run_workload(name: &str, flags: &[&str]) -> (Option<i32>, String, String, Value, PathBuf) {
    let dir = scratch(&format!("faults-{name}"));
    let out_dir = dir.join("out");
    let mut args = vec!["run", "--synthetic", WORKLOAD, "--no-progress", "--out"];
    args.push(out_dir.to_str().expect("a UTF-8 path"));
    args.extend_from_slice(flags);
    let (code, out, err) = run_bounded(&dir, &args);
    let summary = std::fs::read_to_string(out_dir.join("summary.json"))
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    (code, out, err, summary, out_dir)
}

#[test]
fn a_unique_part_of_a_listed_id_is_completed_and_an_unlisted_model_can_be_allowed() {
    let server = Scripted::serving(Script::Healthy, Models::Several);
    let (code, err, summary, _) = run_plain("model-part", &server.url(), &["--model", "large"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("asking for m-large"), "{err}");
    assert_eq!(summary["config"]["model"], "m-large");
    assert_eq!(summary["config"]["model_from"], "flag-substring");

    let (code, err, summary, _) = run_plain(
        "model-unlisted-allowed",
        &server.url(),
        &["--model", "x", "--allow-unlisted-model"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("sent as given (--allow-unlisted-model)"),
        "{err}"
    );
    assert_eq!(summary["config"]["model_from"], "flag-unlisted");
    assert_eq!(summary["counts"]["failed"], 0);
}

#[test]
fn a_refused_key_names_where_it_came_from() {
    let server = Scripted::serving(Script::Healthy, Models::NeedsKey("the-right-key"));
    refused_row(
        "401-preflight",
        &server.url(),
        Some(&server),
        &["--model", "m"],
        &[
            "HTTP 401",
            "Invalid API Key",
            "check the key: it came from env ARBOR_FAULTS_KEY",
        ],
    );
}

#[test]
fn a_wrong_base_path_names_the_one_that_answers() {
    let server = Scripted::start(Script::Healthy);
    let url = format!("{}/api/v1", server.url());
    refused_row(
        "base-path",
        &url,
        Some(&server),
        &["--model", "m"],
        &[
            "/api/v1/models answered HTTP 404",
            "the base path looks wrong",
            &format!("use --endpoint {}", server.url()),
        ],
    );
}

#[test]
fn a_loading_server_is_waited_for() {
    // 503 `Loading model` for 3 s, within the default 10 s --ready-timeout.
    let server = Scripted::serving(Script::Healthy, Models::LoadingFor(Duration::from_secs(3)));
    let (code, err, summary, out_dir) = run_plain("loading", &server.url(), &["--model", "m"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("the server was ready after"), "{err}");
    let records = jsonl(&out_dir.join("records.jsonl"));
    assert!(!records.is_empty());
    assert!(records.iter().all(|r| r["error"].is_null()), "{records:?}");
    assert_eq!(summary["counts"]["failed"], 0);
    let posts: u32 = server.posts_by_id().values().sum();
    assert_eq!(posts as usize, records.len(), "records equal requests sent");
}

#[test]
fn a_server_still_loading_at_the_ready_timeout_is_refused() {
    let server = Scripted::serving(
        Script::Healthy,
        Models::LoadingFor(Duration::from_secs(600)),
    );
    refused_row(
        "still-loading",
        &server.url(),
        Some(&server),
        &["--model", "m", "--ready-timeout", "1"],
        &[
            "the server is not ready after",
            "HTTP 503: Loading model",
            "a longer --ready-timeout",
        ],
    );
}

#[test]
fn prompts_longer_than_the_context_are_refused_with_the_flags_that_fit() {
    // Prompts of 64-256 tokens and outputs of 4 against a 50-token context.
    let server = Scripted::serving(Script::Healthy, Models::Context(50));
    refused_row(
        "overflow",
        &server.url(),
        Some(&server),
        &["--model", "m"],
        &[
            "need more than the 50 tokens the server reports for m",
            "--max-context",
            "--allow-overflow",
        ],
    );
    let ran = run_row(
        "overflow-allowed",
        &server.url(),
        Some(&server),
        &expect(&["ok"], Some(200)),
        &["--allow-overflow"],
    );
    assert!(ran.summary["counts"]["dispatched"].as_u64() > Some(0));
}

#[test]
fn outputs_shorter_than_planned_and_another_models_answers_lead_the_console() {
    // The built-in emulator stops every stream after 1 of the 4 planned
    // tokens and answers under another name: a measurement (exit 0) whose
    // console says so before its figures.
    let flags = ["--eos-after", "1", "--answer-as", "elsewhere"];
    let (code, out, err, _, _) = run_workload("short-outputs", &flags);
    assert_eq!(code, Some(0), "{err}");
    let warnings: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("  warning "))
        .collect();
    assert_eq!(warnings.len(), 2, "{out}");
    assert!(
        warnings[0].contains("measured outputs were shorter than planned"),
        "{out}"
    );
    assert!(warnings[1].contains("`elsewhere`"), "{out}");
    let first_figure = out.find("  requests ").expect("the counts line");
    assert!(out.find(warnings[0]).unwrap() < first_figure, "{out}");
}

#[test]
fn refusals_listed_in_retry_on_are_tried_again_and_counted() {
    // The built-in emulator refuses half its requests with a 429
    // (Retry-After: 0), picked by a seeded hash of the request's number at
    // the server (the same every run); ten retries leave no request
    // refused every time, so the run measures no failure.
    let flags = [
        "--fail-rate",
        "0.5",
        "--fail-status",
        "429",
        "--retry-after-s",
        "0",
        "--retry-on",
        "429",
        "--retries",
        "10",
    ];
    let (code, out, err, summary, _) = run_workload("retry-on", &flags);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(summary["counts"]["failed"], 0, "{summary:#}");
    assert!(
        summary["counts"]["retries"].as_u64().unwrap() > 0,
        "{summary:#}"
    );
    assert_eq!(summary["config"]["retry_on"], serde_json::json!([429]));
}

#[test]
fn reset_before_headers() {
    row(
        "reset-before-head",
        Script::ResetBeforeHead,
        expect(&["connect", "stream_cut"], None),
    );
}

#[test]
fn reset_after_headers() {
    row(
        "reset-after-head",
        Script::ResetAfterHead,
        expect(&["stream_cut"], Some(200)),
    );
}

#[test]
fn reset_mid_chunk() {
    let ran = row(
        "reset-mid-chunk",
        Script::ResetMidChunk,
        expect(&["stream_cut"], Some(200)),
    );
    for record in &ran.records {
        assert!(record["first_content_s"].is_number(), "{record}");
    }
}

#[test]
fn too_many_requests_with_retry_after() {
    let ran = row(
        "429",
        Script::Status {
            code: 429,
            extra: "Retry-After: 7\r\n",
            body: r#"{"error":{"message":"slow down"}}"#,
        },
        expect(&["http_status"], Some(429)),
    );
    for record in &ran.records {
        assert_eq!(record["error"]["retry_after_s"], 7.0, "{record}");
    }
}

#[test]
fn internal_server_error() {
    row(
        "500",
        Script::Status {
            code: 500,
            extra: "",
            body: "",
        },
        expect(&["http_status"], Some(500)),
    );
}

#[test]
fn unavailable_with_a_body() {
    let ran = row(
        "503",
        Script::Status {
            code: 503,
            extra: "",
            body: r#"{"error":{"message":"upstream busy, try later"}}"#,
        },
        expect(&["http_status"], Some(503)),
    );
    messages_hold(&ran, "upstream busy, try later");
}

#[test]
fn unauthorized_echoing_the_key() {
    let ran = row(
        "401-echo",
        Script::EchoKey,
        expect(&["http_status"], Some(401)),
    );
    messages_hold(&ran, "Incorrect API key provided");
}

#[test]
fn invalid_utf8_in_a_data_line() {
    row(
        "invalid-utf8",
        Script::InvalidUtf8,
        expect(&["malformed_sse"], Some(200)),
    );
}

#[test]
fn an_endless_stream_times_out() {
    let started = Instant::now();
    let ran = row_with_timeout(
        "endless",
        Script::Endless,
        expect(&["timeout"], Some(200)),
        "1",
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    for record in &ran.records {
        assert!(record["output_tokens"].as_u64() > Some(0), "{record}");
    }
}

#[test]
fn a_100_mb_response_streams_through() {
    let ran = row(
        "huge",
        Script::Huge { bytes: 100 << 20 },
        expect(&["ok"], Some(200)),
    );
    for record in &ran.records {
        assert_eq!(
            record["output_tokens"],
            (100 << 20) / (16 * 1024),
            "{record}"
        );
    }
}

#[test]
fn close_delimited_http_1_0() {
    row("http10", Script::Http10, expect(&["ok"], Some(200)));
}

#[test]
fn redirects_are_not_followed() {
    for code in [301, 307] {
        let name = format!("redirect-{code}");
        let server = Scripted::start(Script::Redirect { code });
        let expect = expect(&["http_status"], Some(code));
        run_row(
            &name,
            &server.url(),
            Some(&server),
            &expect,
            &["--timeout", "5"],
        );
        let elsewhere: Vec<_> = server
            .seen()
            .into_iter()
            .filter(|s| s.path.starts_with("/elsewhere"))
            .collect();
        assert!(elsewhere.is_empty(), "{name}: followed: {elsewhere:?}");
    }
}

#[test]
fn a_stale_keep_alive_close() {
    // The pool's peek drops a connection whose close has arrived; one
    // taken in the instant before the server's FIN lands carries its
    // request into the close: the server, already closing, never reads
    // it, but the client cannot know that, so it is `connect` and not
    // resent. So no request arrives twice, and every `ok` one arrived
    // exactly once (a `connect` one arrived at most once).
    let ran = row(
        "stale-keep-alive",
        Script::CloseAfterEachResponse,
        Expect {
            classes: &["ok", "connect"],
            status: None,
            each_arrives_once: false,
        },
    );
    for record in ran.records.iter().filter(|r| r["status"] == "ok") {
        let id = record["request"].to_string();
        let arrived = ran.posts.get(&Some(id.clone())).copied().unwrap_or(0);
        assert_eq!(
            arrived, 1,
            "stale-keep-alive: ok request {id} arrived {arrived} times"
        );
    }
    assert!(
        ran.posts.values().all(|&n| n == 1),
        "stale-keep-alive: a request arrived twice: {:?}",
        ran.posts
    );
}

/// The issue's "80 POSTs for 40 records": each request that arrives on a
/// reused connection is read and dropped unanswered; it may fail, but
/// must not be sent again.
#[test]
fn a_reused_connection_closed_after_reading_the_request() {
    row(
        "stale-read-then-close",
        Script::OneAnswerPerConnection,
        CUT_ONCE,
    );
}

#[test]
fn the_server_killed_mid_run() {
    let script = Script::KilledAt { nth: 2, back: true };
    let ran = row("killed", script, CUT_ONCE);
    assert!(
        ran.records.iter().any(|r| r["status"] != "ok"),
        "the kill cut no request: {:?}",
        ran.posts
    );
}

#[test]
fn the_server_killed_for_good_mid_run() {
    let expect = Expect {
        each_arrives_once: false,
        ..CUT_ONCE
    };
    let script = Script::KilledAt {
        nth: 2,
        back: false,
    };
    let ran = row("killed-for-good", script, expect);
    let cut = ran.records.iter().filter(|r| r["status"] != "ok").count();
    assert!(
        cut >= 2,
        "the requests after the kill failed: {:?}",
        ran.posts
    );
}
