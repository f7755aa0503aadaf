//! The doctor's probes in-process against the emulator: every finding of
//! a server that does everything, the fit of a workload to the context
//! length, no secret in the report. What the binary prints and its exit
//! codes are `cli/tests/it/doctor.rs`'s.

use std::path::Path;
use std::time::Duration;

use arbor_backends::doctor::{diagnose, Finding, Options, Report, Status};
use arbor_backends::endpoint::normalize_endpoint;
use arbor_sim::emulator::{serve, EmulatorConfig, EmulatorHandle};
use serde_json::Value;

const HEADER_SECRET: &str = "hdr-doctor-secret-5d1f";

/// The emulator on its own runtime, served until dropped.
struct Emulator {
    handle: EmulatorHandle,
    _runtime: tokio::runtime::Runtime,
}

impl Emulator {
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

fn options(endpoint: &str) -> Options {
    Options {
        timeout: Duration::from_secs(10),
        ..Options::new(endpoint)
    }
}

fn finding<'a>(report: &'a Report, probe: &str) -> &'a Finding {
    report
        .findings
        .iter()
        .find(|f| f.probe == probe)
        .unwrap_or_else(|| panic!("no `{probe}` finding in {report:#?}"))
}

#[test]
fn the_emulator_passes_every_probe_and_gets_the_chat_flags() {
    let emulator = Emulator::start_with(EmulatorConfig::default());
    let url = emulator.url();
    let endpoint = normalize_endpoint(&format!("{url}/v1/")).expect("a URL");
    let report = diagnose(&Options {
        headers: vec![format!("X-Api-Key={HEADER_SECRET}")],
        ..options(&endpoint)
    })
    .expect("the probes run");
    assert_eq!(report.endpoint, url, "/v1/ is normalized away");
    assert!(report.usable && report.verdict().is_ok(), "{report:#?}");
    assert_eq!(report.model.as_deref(), Some("arbor-emulator"));
    assert_eq!(report.model_from, Some("server"));
    assert_eq!(report.health_status, Some(200));
    assert_eq!(report.context_length, Some(131072));
    assert_eq!(report.context_length_key.as_deref(), Some("max_model_len"));
    for (key, value) in [
        ("streaming", report.streaming),
        ("usage_in_stream", report.usage_in_stream),
        ("cached_tokens_reported", report.cached_tokens_reported),
        (
            "max_completion_tokens_honoured",
            report.max_completion_tokens_honoured,
        ),
        ("max_tokens_honoured", report.max_tokens_honoured),
        ("completions_api", report.completions_api),
        ("messages_api", report.messages_api),
    ] {
        assert_eq!(value, Some(true), "{key}: {report:#?}");
    }
    assert_eq!(report.api, Some("chat"));
    assert_eq!(
        finding(&report, "api").seen,
        "streams chat, completions, messages; --api chat"
    );
    // The emulator always generates the asked length: no early stop to
    // tell an honoured ignore_eos by.
    assert_eq!(report.ignore_eos_honoured, None);
    assert!(finding(&report, "ignore_eos")
        .seen
        .contains("no early stop"));
    let ttft = report.ttft_s.expect("a TTFT");
    let total = report.total_s.expect("a total time");
    assert!(ttft > 0.0 && ttft <= total && total < 10.0, "{report:#?}");
    assert_eq!(report.findings.len(), 13, "{report:#?}");
    for f in &report.findings {
        assert_eq!(f.status, Status::Ok, "{f:?}");
        assert!(!f.seen.is_empty(), "{f:?}");
    }
    assert!(finding(&report, "cached_tokens")
        .seen
        .contains("cached_tokens"));
    assert!(finding(&report, "latency").seen.contains("TTFT"));
    assert_eq!(
        report.flags,
        [
            "--endpoint",
            url.as_str(),
            "--model",
            "arbor-emulator",
            "--max-tokens-field",
            "max_tokens",
            "--ignore-eos"
        ]
    );
    assert!(report
        .command
        .starts_with("arbor run [INPUT...] --endpoint"));
    // The JSON holds the same, and no secret.
    let json = report.to_json().expect("JSON");
    assert!(!json.contains(HEADER_SECRET), "{json}");
    let value: Value = serde_json::from_str(&json).expect("one JSON object");
    assert_eq!(value["usable"], true);
    assert_eq!(value["ignore_eos_honoured"], Value::Null);
    assert_eq!(value["findings"][0]["status"], "ok");
}

#[test]
fn a_workload_is_fitted_to_the_context_length() {
    let emulator = Emulator::start_with(EmulatorConfig {
        max_model_len: 16384,
        ..EmulatorConfig::default()
    });
    let url = emulator.url();
    let bare = diagnose(&options(&url)).expect("the probes run");
    let action = finding(&bare, "context_length").action.clone();
    assert!(
        action
            .as_deref()
            .unwrap_or("")
            .contains("--max-context 16384"),
        "{bare:#?}"
    );
    assert!(
        !bare.command.contains("--max-context"),
        "no workload, no flag: {}",
        bare.command
    );
    let weka = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/weka-kv-cache-tester/trace_0187.json");
    let report = diagnose(&Options {
        inputs: vec![weka.parent().unwrap().to_path_buf()],
        ..options(&url)
    })
    .expect("the probes run");
    assert!(report.usable, "{report:#?}");
    let largest = u64::from(report.workload_largest_prompt.expect("the largest prompt"));
    assert!(largest > 16384, "{report:#?}");
    let cap = report.suggested_max_context.unwrap();
    assert!((8192..16384).contains(&cap), "{report:#?}");
    let scale = report.suggested_isl_scale.unwrap();
    assert!(
        scale > 0.0 && scale * largest as f64 <= cap as f64,
        "{report:#?}"
    );
    let action = finding(&report, "context_length").action.clone().unwrap();
    assert!(
        action.contains("--max-context") && action.contains("--isl-scale"),
        "{action}"
    );
    let cap = cap.to_string();
    assert!(
        report
            .flags
            .windows(2)
            .any(|w| w[0] == "--max-context" && w[1] == cap),
        "{:?}",
        report.flags
    );
}

#[test]
fn bad_options_are_input_errors() {
    let bad_header = Options {
        headers: vec!["no-equals-sign".into()],
        ..options("http://127.0.0.1:9")
    };
    let e = diagnose(&bad_header).expect_err("a bad header");
    assert_eq!(e.kind, arbor_error::Kind::Input, "{e:?}");
    let missing = Options {
        inputs: vec!["/nonexistent/trace.json".into()],
        ..options("http://127.0.0.1:9")
    };
    let e = diagnose(&missing).expect_err("no such input");
    assert_eq!(e.kind, arbor_error::Kind::Input, "{e:?}");
}
