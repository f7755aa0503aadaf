//! `https://`: `arbor run` and `arbor doctor` against the emulator serving
//! TLS with a certificate made here (rcgen): trusted with `--cacert`,
//! refused without it in plain words, accepted with `--insecure` and a
//! warning; `arbor emulate --tls-self-signed`; and the API key (from
//! `--api-key-env` or `--api-key-file`) found in no output at all.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use arbor_sim::emulator::{serve_tls, EmulatorConfig, EmulatorHandle, EmulatorTls};
use serde_json::Value;

use crate::util::*;

/// Recognisable, so that a leak anywhere is found by a plain search.
const API_KEY: &str = "sk-tls-test-3f9a1c77-RECOGNISABLE-KEY";
const KEY_ENV: &str = "ARBOR_TLS_TEST_KEY";

/// A certificate for `names`, valid now (or expired), and its key, in PEM.
fn certificate(names: &[&str], expired: bool) -> (String, String) {
    let key = rcgen::KeyPair::generate().expect("a key");
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let mut params = rcgen::CertificateParams::new(names).expect("names");
    if expired {
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    }
    let cert = params.self_signed(&key).expect("a certificate");
    (cert.pem(), key.serialize_pem())
}

/// The emulator serving https on its own runtime, until dropped; the
/// certificate it serves is at `cert`.
struct TlsEmulator {
    handle: EmulatorHandle,
    cert: PathBuf,
    _runtime: tokio::runtime::Runtime,
}

impl TlsEmulator {
    fn start(dir: &Path, names: &[&str], expired: bool) -> TlsEmulator {
        let (cert_pem, key_pem) = certificate(names, expired);
        let cert = dir.join("cert.pem");
        std::fs::write(&cert, &cert_pem).expect("cert written");
        let tls = EmulatorTls::from_pem(&cert_pem, &key_pem).expect("a TLS configuration");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime for the emulator");
        let mut config = EmulatorConfig::default();
        config.timing.ttft = 2_000_000;
        config.timing.itl = 1_000_000;
        let handle = runtime
            .block_on(serve_tls(config, "127.0.0.1:0".parse().unwrap(), tls))
            .expect("the emulator starts");
        TlsEmulator {
            handle,
            cert,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        self.handle.base_url()
    }
}

fn arbor_with_key(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(args)
        .env(KEY_ENV, API_KEY)
        .env("OPENAI_API_KEY", API_KEY)
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env("HTTPS_PROXY", "http://127.0.0.1:9")
        .env("https_proxy", "http://127.0.0.1:9")
        .output()
        .expect("the arbor binary runs")
}

/// `arbor run` of the three-turn fixture against `url`, into `out`.
fn run(url: &str, out: &Path, extra: &[&str]) -> Output {
    let trace = fixture("trace_0187.json");
    let mut args = vec![
        "run",
        trace.to_str().unwrap(),
        "--endpoint",
        url,
        "--out",
        out.to_str().unwrap(),
        "--no-progress",
        "--timeout",
        "20",
    ];
    args.extend(FAST);
    args.extend(extra);
    arbor_with_key(&args)
}

/// No file under `dir`, nor stdout or stderr, holds the key.
fn assert_key_nowhere(dir: &Path, outputs: &[&Output]) {
    for out in outputs {
        for text in [stdout(out), stderr(out)] {
            assert!(!text.contains(API_KEY), "the key leaked: {text}");
        }
    }
    let mut pending = vec![dir.to_path_buf()];
    let mut files = 0;
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("a directory") {
                pending.push(entry.expect("an entry").path());
            }
        } else {
            files += 1;
            let bytes = std::fs::read(&path).expect("a file");
            assert!(
                !String::from_utf8_lossy(&bytes).contains(API_KEY),
                "the key leaked into {}",
                path.display()
            );
        }
    }
    assert!(files >= 4, "expected a run's files under {}", dir.display());
}

fn summary(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).expect("summary"))
        .expect("JSON")
}

#[test]
fn a_run_over_https_trusting_the_cacert_records_every_request_with_stamps() {
    let dir = scratch("tls-run");
    let emulator = TlsEmulator::start(&dir, &["127.0.0.1"], false);
    let out_dir = dir.join("out");
    let cert = emulator.cert.to_str().unwrap().to_string();
    let out = run(
        &emulator.url(),
        &out_dir,
        &["--cacert", &cert, "--api-key-env", KEY_ENV],
    );
    assert!(out.status.success(), "stderr:\n{}", stderr(&out));
    let records = jsonl(&out_dir.join("records.jsonl"));
    assert_eq!(records.len(), 3, "one line per turn");
    for r in &records {
        assert_eq!(r["status"], "ok", "{r}");
        for key in [
            "sent_s",
            "headers_s",
            "first_byte_s",
            "first_content_s",
            "done_s",
        ] {
            assert!(r[key].as_f64().is_some(), "{key} missing in {r}");
        }
        assert!(!r["itl_s"].as_array().expect("itl_s").is_empty(), "{r}");
    }
    assert_eq!(emulator.handle.stats().completed, 3);
    let config = &summary(&out_dir)["config"];
    assert_eq!(config["cacert"], cert.as_str());
    assert_eq!(config["insecure"], false);
    assert_eq!(config["api_key_set"], true);
    assert_eq!(config["api_key_from"], format!("env {KEY_ENV}"));
    assert!(config["url"].as_str().unwrap().starts_with("https://"));
    assert!(!stderr(&out).contains("--insecure"));
    assert_key_nowhere(&dir, &[&out]);
}

#[test]
fn without_the_cacert_a_run_is_refused_naming_the_certificate_problem() {
    let dir = scratch("tls-refused");
    let emulator = TlsEmulator::start(&dir, &["127.0.0.1"], false);
    for extra in [&[][..], &["--model", "m"][..]] {
        let out = run(&emulator.url(), &dir.join("out"), extra);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        for needle in ["TLS handshake", "unknown issuer", "--cacert", "--insecure"] {
            assert!(err.contains(needle), "{extra:?}: `{needle}` not in:\n{err}");
        }
        assert!(!err.contains(API_KEY));
    }
    assert_eq!(emulator.handle.stats().completed, 0, "no request was sent");

    // A certificate for another name, trusted: the name does not match.
    let other = scratch("tls-mismatch");
    let emulator = TlsEmulator::start(&other, &["example.test"], false);
    let cert = emulator.cert.to_str().unwrap().to_string();
    let out = run(&emulator.url(), &other.join("out"), &["--cacert", &cert]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("name mismatch"), "{}", stderr(&out));
}

#[test]
fn the_wrong_scheme_is_refused_naming_the_right_url() {
    // http:// at a port that speaks TLS.
    let dir = scratch("tls-scheme");
    let emulator = TlsEmulator::start(&dir, &["127.0.0.1"], false);
    let https = emulator.url();
    let http = https.replacen("https://", "http://", 1);
    let out = run(&http, &dir.join("out"), &["--model", "m"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("pre-flight"), "{err}");
    assert!(
        err.contains(&format!(
            "the server speaks TLS on this port: use --endpoint {https}"
        )),
        "{err}"
    );
    assert!(!err.contains("pass --model"), "{err}");
    assert!(!dir.join("out").exists());
    assert_eq!(emulator.handle.stats().completed, 0, "no request was sent");

    // https:// at a port that speaks plain HTTP (`arbor emulate`).
    let (mut plain, http) = emulator_with(&[]);
    let https = http.replacen("http://", "https://", 1);
    let out = run(&https, &dir.join("out"), &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the server speaks plain HTTP (no TLS) on this port: use --endpoint {http}"
        )),
        "{err}"
    );
    assert!(!dir.join("out").exists());
    let _ = plain.kill();
    let _ = plain.wait();
}

#[test]
fn insecure_runs_without_verification_warns_and_is_recorded() {
    let dir = scratch("tls-insecure");
    let emulator = TlsEmulator::start(&dir, &["127.0.0.1"], false);
    let key_file = dir.join("key.txt");
    std::fs::write(&key_file, format!("{API_KEY}\n")).unwrap();
    let out_dir = dir.join("out");
    let out = run(
        &emulator.url(),
        &out_dir,
        &["--insecure", "--api-key-file", key_file.to_str().unwrap()],
    );
    assert!(out.status.success(), "stderr:\n{}", stderr(&out));
    assert!(
        stderr(&out).contains("warning: --insecure"),
        "{}",
        stderr(&out)
    );
    let records = jsonl(&out_dir.join("records.jsonl"));
    assert!(records.iter().all(|r| r["status"] == "ok"));
    let config = &summary(&out_dir)["config"];
    assert_eq!(config["insecure"], true);
    assert_eq!(
        config["api_key_from"],
        format!("file {}", key_file.display())
    );
    std::fs::remove_file(&key_file).unwrap();
    assert_key_nowhere(&dir, &[&out]);
}

#[test]
fn doctor_reports_the_tls_version_and_cipher_or_the_certificate_problem() {
    let dir = scratch("tls-doctor");
    let emulator = TlsEmulator::start(&dir, &["127.0.0.1"], false);
    let url = emulator.url();
    let cert = emulator.cert.to_str().unwrap().to_string();
    let trusted = arbor_with_key(&["doctor", "--endpoint", &url, "--cacert", &cert, "--json"]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    let report: Value = serde_json::from_str(&stdout(&trusted)).expect("JSON");
    let tls = finding(&report, "tls");
    assert_eq!(tls["status"], "ok", "{tls}");
    assert_eq!(report["tls_version"], "TLSv1.3");
    assert!(report["tls_cipher"].as_str().unwrap().starts_with("TLS13_"));
    assert!(tls["seen"].as_str().unwrap().contains("ALPN http/1.1"));
    assert_eq!(report["usable"], true);
    assert!(report["command"].as_str().unwrap().contains("--cacert"));

    let refused = arbor_with_key(&["doctor", "--endpoint", &url]);
    assert_eq!(refused.status.code(), Some(1));
    let text = stdout(&refused);
    assert!(text.contains("unknown issuer"), "{text}");
    assert!(text.contains("--cacert"), "{text}");

    let expired_dir = scratch("tls-doctor-expired");
    let expired = TlsEmulator::start(&expired_dir, &["127.0.0.1"], true);
    let cert = expired.cert.to_str().unwrap().to_string();
    let out = arbor_with_key(&["doctor", "--endpoint", &expired.url(), "--cacert", &cert]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("expired"), "{}", stdout(&out));

    let insecure = arbor_with_key(&["doctor", "--endpoint", &url, "--insecure"]);
    assert!(insecure.status.success(), "{}", stderr(&insecure));
    assert!(stderr(&insecure).contains("warning: --insecure"));
    assert!(stdout(&insecure).contains("not verified"));
    for out in [&trusted, &refused, &out, &insecure] {
        for text in [stdout(out), stderr(out)] {
            assert!(!text.contains(API_KEY), "the key leaked: {text}");
        }
    }
}

#[test]
fn emulate_serves_https_with_a_self_signed_certificate_it_writes_out() {
    let dir = scratch("tls-emulate");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let cert = dir.join("emulator-cert.pem");
    let mut child = Command::new(env!("CARGO_BIN_EXE_arbor"))
        .args(["emulate", "--port", &port.to_string(), "--tls-self-signed"])
        .args(["--tls-cert-out", cert.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("arbor emulate starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !(cert.exists() && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()) {
        assert!(Instant::now() < deadline, "the emulator never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("https://127.0.0.1:{port}");
    let out = arbor_with_key(&[
        "doctor",
        "--endpoint",
        &url,
        "--cacert",
        cert.to_str().unwrap(),
        "--json",
    ]);
    let _ = child.kill();
    let emulate = child.wait_with_output().expect("the emulator's output");
    assert!(out.status.success(), "{}", stdout(&out));
    let err = String::from_utf8_lossy(&emulate.stderr);
    assert!(err.contains(cert.to_str().unwrap()), "{err}");
    assert!(String::from_utf8_lossy(&emulate.stdout).contains(&url));
}

#[test]
fn unusable_key_and_trust_flags_exit_2_naming_the_variable_or_file() {
    let dir = scratch("tls-flags");
    let out = dir.join("out");
    let trace = fixture("trace_0187.json");
    let base = [
        "run",
        trace.to_str().unwrap(),
        "--endpoint",
        "https://127.0.0.1:9",
        "--out",
        out.to_str().unwrap(),
    ];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    expect_exit_2(
        &with(&base, &["--api-key-env", "ARBOR_TLS_SURELY_UNSET"]),
        &["ARBOR_TLS_SURELY_UNSET", "not set"],
    );
    expect_exit_2(
        &with(&base, &["--api-key-file", "/nonexistent/arbor-key"]),
        &["/nonexistent/arbor-key"],
    );
    expect_exit_2(
        &with(&base, &["--cacert", "/nonexistent/ca.pem"]),
        &["/nonexistent/ca.pem"],
    );
    expect_exit_2(
        &with(&base, &["--cacert", "x.pem", "--insecure"]),
        &["--insecure"],
    );
    assert!(!out.exists(), "nothing written");
}
