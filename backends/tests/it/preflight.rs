//! The pre-flight against real listeners on 127.0.0.1: the built-in
//! emulator (plain and TLS, with the fixture's self-signed certificate)
//! and a port nothing listens on. Each refusal is checked for the words a
//! user needs (the URL to use, the flag that fits); the domain's pure
//! parts (choosing the model, the fit) are unit-tested beside their code.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arbor_backends::endpoint::reqwest_builder;
use arbor_backends::preflight::{self, Ask, Options};
use arbor_engine::Workload;
use arbor_formats::synthetic::SyntheticSpec;
use arbor_sim::emulator::{serve, serve_tls, EmulatorConfig, EmulatorTls};
use reqwest::header::HeaderMap;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/tls")
        .join(name)
}

fn workload() -> Workload {
    let spec: SyntheticSpec = "trees=2,turns=2,spawn=0,isl=64,max_isl=256,osl=4"
        .parse()
        .unwrap();
    spec.generate()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The pre-flight of `endpoint` with `model` and `options`.
async fn check(
    endpoint: &str,
    model: Option<&str>,
    options: Options,
) -> Result<preflight::Ready, String> {
    let headers = HeaderMap::new();
    let workload = workload();
    let client = reqwest_builder(None).build().unwrap();
    preflight::check(
        &client,
        &Ask {
            endpoint,
            api_path: "/v1/chat/completions",
            headers: &headers,
            key_from: None,
            key_env: "OPENAI_API_KEY",
            model,
            workload: &workload,
            cacert: None,
            options,
        },
    )
    .await
}

fn quick() -> Options {
    Options {
        ready_timeout: Duration::ZERO,
        ..Options::default()
    }
}

#[test]
fn a_served_model_and_a_workload_that_fits_pass_with_the_context_length() {
    runtime().block_on(async {
        let config = EmulatorConfig {
            max_model_len: 4096,
            ..EmulatorConfig::default()
        };
        let emulator = serve(config, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let ready = check(&emulator.base_url(), None, quick()).await.unwrap();
        assert_eq!(ready.model, "arbor-emulator");
        assert_eq!(ready.model_from, "server");
        assert_eq!(ready.context_length, Some(4096));
        assert!(ready.notices.is_empty(), "{:?}", ready.notices);
        emulator.shutdown().await;
    });
}

#[test]
fn a_context_too_small_is_refused_unless_overflow_is_allowed() {
    runtime().block_on(async {
        let config = EmulatorConfig {
            max_model_len: 100,
            ..EmulatorConfig::default()
        };
        let emulator = serve(config, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        let refused = check(&emulator.base_url(), None, quick())
            .await
            .unwrap_err();
        assert!(
            refused.contains("need more than the 100 tokens"),
            "{refused}"
        );
        assert!(refused.contains("--max-context"), "{refused}");
        let allowed = Options {
            allow_overflow: true,
            ..quick()
        };
        let ready = check(&emulator.base_url(), None, allowed).await.unwrap();
        assert!(
            ready.notices[0].contains("will fail as context_overflow"),
            "{:?}",
            ready.notices
        );
        emulator.shutdown().await;
    });
}

#[test]
fn nothing_listening_is_asked_until_the_ready_timeout_then_refused() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    runtime().block_on(async {
        let started = Instant::now();
        let options = Options {
            ready_timeout: Duration::from_millis(600),
            ..Options::default()
        };
        let refused = check(&endpoint, Some("m"), options).await.unwrap_err();
        // At least the timeout; the upper bound is the suite's own.
        assert!(
            started.elapsed() >= Duration::from_millis(500),
            "{:?}",
            started.elapsed()
        );
        assert!(refused.contains("nothing listens at"), "{refused}");
        assert!(!refused.contains("pass --model"), "{refused}");
    });
}

#[test]
fn https_at_a_plain_port_names_the_http_url() {
    runtime().block_on(async {
        let emulator = serve(EmulatorConfig::default(), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let http = emulator.base_url();
        let https = http.replacen("http://", "https://", 1);
        let tls = arbor_backends::live::tls::client_config(&Default::default()).unwrap();
        let client = reqwest_builder(Some(&tls)).build().unwrap();
        let headers = HeaderMap::new();
        let workload = workload();
        let refused = preflight::check(
            &client,
            &Ask {
                endpoint: &https,
                api_path: "/v1/chat/completions",
                headers: &headers,
                key_from: None,
                key_env: "OPENAI_API_KEY",
                model: None,
                workload: &workload,
                cacert: None,
                options: quick(),
            },
        )
        .await
        .unwrap_err();
        assert!(
            refused.contains(&format!(
                "speaks plain HTTP (no TLS) on this port: use --endpoint {http}"
            )),
            "{refused}"
        );
        emulator.shutdown().await;
    });
}

#[test]
fn an_untrusted_certificate_is_refused_with_the_cacert_advice_and_http_at_tls_names_https() {
    runtime().block_on(async {
        let tls = EmulatorTls::from_pem_files(
            &fixture("ca-true-self-signed.pem"),
            &fixture("ca-true-self-signed.key"),
        )
        .unwrap();
        let emulator = serve_tls(
            EmulatorConfig::default(),
            "127.0.0.1:0".parse().unwrap(),
            tls,
        )
        .await
        .unwrap();
        let https = emulator.base_url();
        let trust = arbor_backends::live::tls::client_config(&Default::default()).unwrap();
        let client = reqwest_builder(Some(&trust)).build().unwrap();
        let headers = HeaderMap::new();
        let workload = workload();
        let ask = |endpoint| Ask {
            endpoint,
            api_path: "/v1/chat/completions",
            headers: &headers,
            key_from: None,
            key_env: "OPENAI_API_KEY",
            model: None,
            workload: &workload,
            cacert: None,
            options: quick(),
        };
        let refused = preflight::check(&client, &ask(&https)).await.unwrap_err();
        for words in [
            "TLS handshake with",
            "(CA:TRUE)",
            "--cacert FILE",
            "--insecure",
        ] {
            assert!(refused.contains(words), "{words}: {refused}");
        }
        let http = https.replacen("https://", "http://", 1);
        let plain = reqwest_builder(None).build().unwrap();
        let refused = preflight::check(&plain, &ask(&http)).await.unwrap_err();
        assert!(
            refused.contains(&format!("speaks TLS on this port: use --endpoint {https}")),
            "{refused}"
        );
        emulator.shutdown().await;
    });
}
