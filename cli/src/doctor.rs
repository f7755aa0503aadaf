//! `arbor doctor`: probe a server before benchmarking it.
//!
//! Owns a short sequence of probes against an OpenAI-compatible endpoint:
//! `/health` and `/v1/models`, a tiny streaming chat request (SSE, `[DONE]`,
//! usage in the stream, cached tokens, TTFT), whether `max_completion_tokens`,
//! `max_tokens` and `ignore_eos` are honoured, whether `/v1/completions`
//! and Anthropic's `/v1/messages` stream, and so which `--api` to use. Each
//! probe becomes a [`Finding`] (ok / warn / fail, what was seen, what to
//! do); the report ends with the `arbor run` flags to use.
//! When the server reports its context length, the finding suggests
//! `--max-context` (and, given a workload as INPUT whose largest prompt
//! exceeds it, `--isl-scale`; see `fit_advice`).
//!
//! Over `https://` a `tls` probe comes first: the handshake the run's own
//! client makes, reporting the TLS version, cipher and ALPN protocol, or
//! the certificate problem in plain words (expired, unknown issuer, name
//! mismatch) and what to pass.
//!
//! Requests go through the live client of `arbor run` (the same body
//! builder, exchange, stamps and SSE classification), so what the doctor
//! sees is what a run would see. See `docs/doctor.md`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arbor_backends::live::exchange::{execute, Target};
use arbor_backends::live::request::{build_body, Api, BodyConfig, MaxTokensField};
use arbor_backends::live::stream::ConnectError;
use arbor_backends::live::tls::ClientConfig;
use arbor_engine::prompt::Prompt;
use arbor_engine::Workload;
use arbor_formats::load;
use arbor_runs::record::{ErrorCategory, RequestError, Response};
use reqwest::header::HeaderMap;
use serde::Serialize;
use serde_json::Value;

use crate::args::DoctorArgs;
use crate::fit_advice::{self, WorkloadSize};
use crate::stdout;
use arbor::runtime;
use arbor_backends::endpoint::{self, Auth};
use arbor_error::Error;

/// Output length asked of the streaming probe.
pub const STREAM_PROBE_TOKENS: u32 = 8;
/// Output length asked of the `max_completion_tokens` / `max_tokens` probes.
pub const LIMIT_PROBE_TOKENS: u32 = 5;
/// Output length asked of the `ignore_eos` probe.
pub const EOS_PROBE_TOKENS: u32 = 48;

const STREAM_PROMPT: &str = "Say hello.";
/// Invites a long answer, so that a limit that is not honoured shows.
const LONG_PROMPT: &str = "Count from 1 to 200, separated by spaces.";
/// Invites a one-word answer, so that an `ignore_eos` that is not
/// honoured shows.
const SHORT_PROMPT: &str = "Reply with the single word: yes";
const COMPLETION_PROMPT: &str = "Once upon a time";

/// The `--extra-body` suggested when `ignore_eos` is not honoured
/// (llama.cpp, EOS id 2 of SmolLM2 / Llama-2 style vocabularies).
pub const LOGIT_BIAS_EXAMPLE: &str = r#"{"logit_bias": {"2": -100}}"#;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Warn,
    Fail,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }
}

/// One probe's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// A stable name: `tls`, `health`, `models`, `context_length`, `streaming`,
    /// `usage`, `cached_tokens`, `latency`, `max_completion_tokens`,
    /// `max_tokens`, `ignore_eos`, `completions`, `messages`, `api`.
    pub probe: &'static str,
    pub status: Status,
    /// What was seen.
    pub seen: String,
    /// What to do, when anything.
    pub action: Option<String>,
}

/// Everything the doctor found, as printed with `--json`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub arbor_version: &'static str,
    /// The base URL (user info redacted).
    pub endpoint: String,
    pub model: Option<String>,
    /// `flag` or `server`.
    pub model_from: Option<&'static str>,
    pub models: Vec<String>,
    /// Over https: the negotiated TLS version (`TLSv1.3`).
    pub tls_version: Option<String>,
    /// Over https: the negotiated cipher suite.
    pub tls_cipher: Option<String>,
    pub health_status: Option<u16>,
    pub context_length: Option<u64>,
    /// The `/v1/models` key the context length came from.
    pub context_length_key: Option<String>,
    /// With a workload (INPUT): its largest prompt, in tokens.
    pub workload_largest_prompt: Option<u32>,
    /// With a context length: the `--max-context` to fit prompts to it.
    pub suggested_max_context: Option<u64>,
    /// With a workload whose largest prompt exceeds that: the
    /// `--isl-scale` that shrinks it to fit.
    pub suggested_isl_scale: Option<f64>,
    pub streaming: Option<bool>,
    pub usage_in_stream: Option<bool>,
    pub cached_tokens_reported: Option<bool>,
    /// Of the streaming probe: first content chunk - sent.
    pub ttft_s: Option<f64>,
    /// Of the streaming probe: done - sent.
    pub total_s: Option<f64>,
    pub max_completion_tokens_honoured: Option<bool>,
    pub max_tokens_honoured: Option<bool>,
    /// `null` when not probed, or when the model did not stop early even
    /// without `ignore_eos` (nothing to tell it by).
    pub ignore_eos_honoured: Option<bool>,
    pub completions_api: Option<bool>,
    /// Anthropic's `/v1/messages` streams.
    pub messages_api: Option<bool>,
    /// The `--api` to run with: `chat` when chat streams, else `messages`
    /// when it streams.
    pub api: Option<&'static str>,
    pub findings: Vec<Finding>,
    /// No finding failed: `arbor run` can benchmark this server.
    pub usable: bool,
    /// The recommended `arbor run` flags, one argument per item.
    pub flags: Vec<String>,
    /// The recommended command line.
    pub command: String,
}

impl Report {
    fn push(
        &mut self,
        probe: &'static str,
        status: Status,
        seen: impl Into<String>,
        action: Option<String>,
    ) {
        self.findings.push(Finding {
            probe,
            status,
            seen: seen.into(),
            action,
        });
    }

    fn failed(&self) -> Option<&Finding> {
        self.findings.iter().find(|f| f.status == Status::Fail)
    }
}

/// Checked flags.
struct Options {
    endpoint: String,
    model: Option<String>,
    /// Headers of the OpenAI APIs' probes (and the `GET`s).
    headers: HeaderMap,
    /// Headers of the Messages probe: its key and `anthropic-version`.
    messages_headers: HeaderMap,
    /// Where the Messages probe's key came from (`env NAME`, `file PATH`),
    /// or the variable it was looked for in: safe to show.
    messages_key_from: String,
    timeout: Duration,
    /// Strings never to print: the API key and secret header values.
    secrets: Vec<String>,
    /// For `https://`.
    tls: Option<Arc<ClientConfig>>,
    /// The TLS and key flags given, passed on in the recommended command.
    access_flags: Vec<String>,
    /// The sizes of the workload given (INPUT), if any.
    workload: Option<WorkloadSize>,
}

/// `arbor doctor`.
pub fn run(args: &DoctorArgs) -> Result<(), Error> {
    let options = options(args)?;
    let runtime = runtime::two_workers()?;
    let mut report = runtime.block_on(diagnose(&options));
    runtime.shutdown_timeout(Duration::from_millis(200));
    scrub(&mut report, &options.secrets);

    let text = if args.json {
        serde_json::to_string_pretty(&report)
            .map_err(|e| Error::other(format!("cannot write the report: {e}")))?
    } else {
        human(&report)
    };
    stdout::print(|out| writeln!(out, "{text}"))?;
    match report.failed() {
        None => Ok(()),
        Some(f) => Err(Error::other(format!(
            "{} cannot be benchmarked: {}",
            report.endpoint, f.seen
        ))),
    }
}

fn options(args: &DoctorArgs) -> Result<Options, Error> {
    // The chat and completions probes send the OpenAI-style APIs' key, the
    // messages probe the Messages API's (each API's default variable unless
    // --api-key-env or --api-key-file names one key for both).
    let access = &args.access;
    let auth_for = |api| {
        Auth::from_flags(
            &args.headers,
            access.api_key_env.as_deref(),
            access.api_key_file.as_deref(),
            api,
        )
    };
    let auth = auth_for(Api::Chat)?;
    let messages_auth = auth_for(Api::Messages)?;
    let mut secrets: Vec<String> = auth
        .headers
        .iter()
        .filter(|(_, v)| v.is_sensitive())
        .filter_map(|(_, v)| v.to_str().ok().map(str::to_string))
        .collect();
    secrets.extend(auth.api_key.clone());
    secrets.extend(messages_auth.api_key.clone());
    secrets.retain(|s| s.len() >= 4);
    let tls = endpoint::tls_config(&args.endpoint, &access.tls())?;
    let mut access_flags = Vec::new();
    if let Some(path) = &access.cacert {
        access_flags.extend(["--cacert".to_string(), path.display().to_string()]);
    }
    if access.insecure {
        access_flags.push("--insecure".into());
    }
    if let Some(name) = &access.api_key_env {
        access_flags.extend(["--api-key-env".to_string(), name.clone()]);
    }
    if let Some(path) = &access.api_key_file {
        access_flags.extend(["--api-key-file".to_string(), path.display().to_string()]);
    }
    let workload = if args.inputs.is_empty() {
        None
    } else {
        let mut w = Workload::default();
        for loaded in load::load_all(&args.inputs, args.format).map_err(Error::input)? {
            w.trees.extend(loaded.trees);
        }
        Some(WorkloadSize::of(&w))
    };
    Ok(Options {
        endpoint: args.endpoint.clone(),
        model: args.model.clone().filter(|m| !m.is_empty()),
        headers: auth.header_map(),
        messages_headers: messages_auth.header_map(),
        messages_key_from: messages_auth.api_key_from.clone().unwrap_or_else(|| {
            format!(
                "env {} (unset)",
                endpoint::default_api_key_env(Api::Messages)
            )
        }),
        timeout: Duration::from_nanos(args.timeout),
        secrets,
        tls,
        access_flags,
        workload,
    })
}

/// Replaces every secret in the report's text by `<redacted>`.
fn scrub(report: &mut Report, secrets: &[String]) {
    if secrets.is_empty() {
        return;
    }
    let clean = |text: &mut String| {
        for s in secrets {
            if text.contains(s.as_str()) {
                *text = text.replace(s.as_str(), "<redacted>");
            }
        }
    };
    clean(&mut report.endpoint);
    clean(&mut report.command);
    for f in &mut report.findings {
        clean(&mut f.seen);
        if let Some(a) = &mut f.action {
            clean(a);
        }
    }
    for m in &mut report.models {
        clean(m);
    }
}

/// An error without the URL reqwest puts in it, one line, short.
fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 200 {
        let cut: String = one_line.chars().take(200).collect();
        format!("{cut}...")
    } else {
        one_line
    }
}

/// The innermost cause of an error (e.g. `Connection refused (os error
/// 111)`), without the URL reqwest puts in its outer message.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(next) = last.source() {
        last = next;
    }
    last.to_string()
}

enum GetError {
    Connect(String),
    Timeout,
    Other(String),
}

/// `GET url`: status and body, bounded by the timeout.
async fn get(
    client: &reqwest::Client,
    url: &str,
    headers: &HeaderMap,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), GetError> {
    let exchange = async {
        let response = client
            .get(url)
            .headers(headers.clone())
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    GetError::Connect(root_cause(&e))
                } else if e.is_timeout() {
                    GetError::Timeout
                } else {
                    GetError::Other(endpoint::without_url(&e))
                }
            })?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| GetError::Other(endpoint::without_url(&e)))?;
        Ok((status, body.to_vec()))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(result) => result,
        Err(_) => Err(GetError::Timeout),
    }
}

/// Runs every probe; stops early when one makes a run impossible.
async fn diagnose(options: &Options) -> Report {
    let mut report = Report {
        arbor_version: env!("CARGO_PKG_VERSION"),
        endpoint: endpoint::redact_url(&options.endpoint),
        ..Report::default()
    };
    if !probe_tls(options, &mut report).await {
        return finish(report, options);
    }
    let client = match endpoint::reqwest_builder(options.tls.as_ref())
        .connect_timeout(options.timeout)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            report.push(
                "health",
                Status::Fail,
                format!("cannot build the HTTP client: {e}"),
                None,
            );
            return finish(report, options);
        }
    };
    if !probe_health(&client, options, &mut report).await {
        return finish(report, options);
    }
    let Some(model) = probe_models(&client, options, &mut report).await else {
        return finish(report, options);
    };
    let mut prober = Prober {
        options,
        model,
        next_id: 1,
    };
    if !prober.streaming(&mut report).await {
        // A server of the Messages API only can still be benchmarked.
        if prober.messages(&mut report).await {
            report.streaming_via_messages();
            report.choose_api();
        }
        return finish(report, options);
    }
    let field = prober.limits(&mut report).await;
    prober.ignore_eos(field, &mut report).await;
    prober.completions(field, &mut report).await;
    prober.messages(&mut report).await;
    report.choose_api();
    finish(report, options)
}

/// Over `https://`: the TLS handshake of the run's own client. False when
/// it failed (nothing else can be probed). Nothing to do for `http://`.
async fn probe_tls(options: &Options, report: &mut Report) -> bool {
    let Some(tls) = &options.tls else {
        return true;
    };
    let url = endpoint::at(&options.endpoint, "/v1/models");
    let target = match Target::new(
        &url,
        &options.headers,
        options.timeout,
        0,
        Some(tls.clone()),
    ) {
        Ok(target) => target,
        Err(message) => {
            report.push("tls", Status::Fail, message, None);
            return false;
        }
    };
    match target.handshake().await {
        Ok(negotiated) => {
            let Some(n) = negotiated else { return true };
            let mut seen = format!("{}, cipher {}", n.version, n.cipher);
            match &n.alpn {
                Some(alpn) => seen.push_str(&format!(", ALPN {alpn}")),
                None => seen.push_str(", no ALPN (the server did not choose a protocol)"),
            }
            report.tls_version = Some(n.version);
            report.tls_cipher = Some(n.cipher);
            if options.access_flags.iter().any(|f| f == "--insecure") {
                seen.push_str("; the certificate was not verified (--insecure)");
                report.push(
                    "tls",
                    Status::Warn,
                    seen,
                    Some("trust the server's CA with --cacert FILE instead of --insecure".into()),
                );
            } else {
                report.push("tls", Status::Ok, seen, None);
            }
            true
        }
        Err(ConnectError::Tls {
            words, certificate, ..
        }) => {
            let action = if certificate {
                endpoint::CERTIFICATE_HINT
            } else {
                "check that the server speaks TLS (https) on this port"
            };
            report.push("tls", Status::Fail, words, Some(action.into()));
            false
        }
        Err(e @ ConnectError::Tcp { .. }) => {
            report.push(
                "tls",
                Status::Fail,
                short(&e.to_string()),
                Some("check the URL and that the server is running and listening there".into()),
            );
            false
        }
    }
}

impl Report {
    /// The chat stream failed but the Messages stream works: the failure
    /// becomes a warning pointing at `--api messages`.
    fn streaming_via_messages(&mut self) {
        if let Some(f) = self.findings.iter_mut().find(|f| f.probe == "streaming") {
            f.status = Status::Warn;
            f.action =
                Some("the server streams Anthropic's Messages API: run with --api messages".into());
        }
    }

    /// The `api` finding: which APIs stream, and the `--api` to use.
    fn choose_api(&mut self) {
        let served: Vec<&str> = [
            ("chat", self.streaming),
            ("completions", self.completions_api),
            ("messages", self.messages_api),
        ]
        .into_iter()
        .filter(|(_, streams)| *streams == Some(true))
        .map(|(name, _)| name)
        .collect();
        let api = if self.streaming == Some(true) {
            "chat"
        } else {
            "messages"
        };
        self.api = Some(api);
        self.push(
            "api",
            Status::Ok,
            format!("streams {}; --api {api}", served.join(", ")),
            None,
        );
    }
}

/// `GET /health`. False when the server cannot be reached at all.
async fn probe_health(client: &reqwest::Client, options: &Options, report: &mut Report) -> bool {
    let url = endpoint::at(&options.endpoint, "/health");
    match get(client, &url, &options.headers, options.timeout).await {
        Ok((status, _)) => {
            report.health_status = Some(status);
            match status {
                200..=299 => report.push("health", Status::Ok, format!("GET /health: HTTP {status}"), None),
                404 => report.push(
                    "health",
                    Status::Warn,
                    "GET /health: HTTP 404 (no health endpoint)",
                    Some("nothing to do: many servers (llama.cpp's Python server among them) have no /health, and arbor run does not need it".into()),
                ),
                _ => report.push(
                    "health",
                    Status::Warn,
                    format!("GET /health: HTTP {status}"),
                    Some("the server may still be loading or be unhealthy: check its log".into()),
                ),
            }
            true
        }
        Err(GetError::Connect(message)) => {
            report.push(
                "health",
                Status::Fail,
                format!("cannot connect to {}: {}", report.endpoint, short(&message)),
                Some("check the URL and that the server is running and listening there".into()),
            );
            false
        }
        Err(GetError::Timeout) => {
            report.push(
                "health",
                Status::Warn,
                format!(
                    "GET /health: no answer within {} s",
                    options.timeout.as_secs_f64()
                ),
                Some("the server accepts connections but is slow to answer: check its load".into()),
            );
            true
        }
        Err(GetError::Other(message)) => {
            report.push(
                "health",
                Status::Warn,
                format!("GET /health failed: {}", short(&message)),
                None,
            );
            true
        }
    }
}

/// The context-length keys servers put in `/v1/models` entries.
const CONTEXT_KEYS: [&str; 3] = ["max_model_len", "context_length", "max_context_length"];

/// `GET /v1/models`: the models, the one to use and its context length.
/// `None` when there is no model to probe with.
async fn probe_models(
    client: &reqwest::Client,
    options: &Options,
    report: &mut Report,
) -> Option<String> {
    let url = endpoint::at(&options.endpoint, "/v1/models");
    let answer = get(client, &url, &options.headers, options.timeout).await;
    let listed: Result<Vec<Value>, String> = match answer {
        Ok((status, body)) if (200..300).contains(&status) => {
            match serde_json::from_slice::<Value>(&body) {
                Ok(v) => match v.get("data").and_then(Value::as_array) {
                    Some(data) => Ok(data.clone()),
                    None => Err("GET /v1/models: no `data` list in the answer".into()),
                },
                Err(_) => Err("GET /v1/models: the answer is not JSON".into()),
            }
        }
        Ok((status, _)) => Err(format!("GET /v1/models: HTTP {status}")),
        Err(GetError::Connect(m)) => Err(format!("GET /v1/models: cannot connect: {}", short(&m))),
        Err(GetError::Timeout) => Err(format!(
            "GET /v1/models: no answer within {} s",
            options.timeout.as_secs_f64()
        )),
        Err(GetError::Other(m)) => Err(format!("GET /v1/models failed: {}", short(&m))),
    };
    let entries = match listed {
        Ok(entries) => entries,
        Err(seen) => {
            return match &options.model {
                Some(m) => {
                    report.push(
                        "models",
                        Status::Warn,
                        format!("{seen}; probing with --model {m}"),
                        None,
                    );
                    report.model = Some(m.clone());
                    report.model_from = Some("flag");
                    Some(m.clone())
                }
                None => {
                    report.push(
                        "models",
                        Status::Fail,
                        seen,
                        Some("pass --model M (to arbor doctor and arbor run)".into()),
                    );
                    None
                }
            };
        }
    };
    report.models = entries
        .iter()
        .filter_map(|m| m.get("id")?.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
        .collect();
    let listing = if report.models.is_empty() {
        "no models listed".to_string()
    } else {
        format!(
            "{} listed ({})",
            report.models.len(),
            report.models.join(", ")
        )
    };
    let model = match &options.model {
        Some(m) if report.models.contains(m) => {
            report.push(
                "models",
                Status::Ok,
                format!("{listing}; using {m} (--model)"),
                None,
            );
            m.clone()
        }
        Some(m) => {
            report.push(
                "models",
                Status::Warn,
                format!("{listing}; --model {m} is not among them"),
                Some("check the spelling of --model; the probes go on with it".into()),
            );
            m.clone()
        }
        None => match report.models.first().cloned() {
            Some(first) => {
                let action = (report.models.len() > 1).then(|| {
                    "arbor run also takes the first listed model; pass --model to choose another"
                        .to_string()
                });
                report.push(
                    "models",
                    Status::Ok,
                    format!("{listing}; using {first}"),
                    action,
                );
                first
            }
            None => {
                report.push(
                    "models",
                    Status::Fail,
                    "GET /v1/models lists no models".to_string(),
                    Some("pass --model M (to arbor doctor and arbor run)".into()),
                );
                return None;
            }
        },
    };
    report.model_from = Some(if options.model.is_some() {
        "flag"
    } else {
        "server"
    });
    report.model = Some(model.clone());

    let entry = entries
        .iter()
        .find(|e| e.get("id").and_then(Value::as_str) == Some(model.as_str()));
    let context = entry.and_then(|e| {
        CONTEXT_KEYS
            .iter()
            .find_map(|k| e.get(*k).and_then(Value::as_u64).map(|n| (*k, n)))
    });
    match context {
        Some((key, n)) => {
            report.context_length = Some(n);
            report.context_length_key = Some(key.to_string());
            let advice = fit_advice::advise(n, options.workload);
            report.workload_largest_prompt = options.workload.map(|w| w.largest_prompt);
            report.suggested_max_context = Some(advice.max_context);
            report.suggested_isl_scale = advice.isl_scale;
            report.push(
                "context_length",
                Status::Ok,
                format!("{n} tokens ({key} of {model})"),
                Some(advice.text),
            );
        }
        None => report.push(
            "context_length",
            Status::Warn,
            format!("/v1/models reports no context length for {model} (none of max_model_len, context_length, max_context_length)"),
            Some("know the server's own setting (llama.cpp: --n_ctx): turns whose prompt and output exceed it fail as context_overflow in a run".into()),
        ),
    }
    Some(model)
}

/// What one probe request produced.
struct Outcome {
    response: Response,
    /// Output tokens: from usage, else content chunks counted.
    tokens: u64,
    from_usage: bool,
}

impl Outcome {
    fn source(&self) -> &'static str {
        if self.from_usage {
            "usage"
        } else {
            "counted chunks"
        }
    }

    /// Why the request failed, if it did, in one short line.
    fn failure(&self) -> Option<String> {
        let error = self.response.error.as_ref()?;
        let mut text = match error.http_status {
            Some(status) => format!("HTTP {status}: {}", short(&error.message)),
            None => format!("{}: {}", error.category.as_str(), short(&error.message)),
        };
        if error.category == ErrorCategory::Timeout {
            text = "no complete answer before the timeout".into();
        }
        Some(text)
    }
}

struct Prober<'a> {
    options: &'a Options,
    model: String,
    next_id: u64,
}

impl Prober<'_> {
    async fn send(
        &mut self,
        api: Api,
        field: MaxTokensField,
        ignore_eos: bool,
        greedy: bool,
        prompt: &str,
        max_tokens: u32,
    ) -> Outcome {
        let url = endpoint::at(&self.options.endpoint, api.path());
        let headers = match api {
            Api::Messages => &self.options.messages_headers,
            Api::Chat | Api::Completions => &self.options.headers,
        };
        let tls = self.options.tls.clone();
        let target = match Target::new(&url, headers, self.options.timeout, 0, tls) {
            Ok(mut target) => {
                target.api = api;
                target
            }
            Err(message) => {
                return Outcome {
                    response: Response {
                        error: Some(RequestError {
                            category: ErrorCategory::Connect,
                            message,
                            http_status: None,
                            retry_after_s: None,
                        }),
                        ..Response::default()
                    },
                    tokens: 0,
                    from_usage: false,
                }
            }
        };
        let config = BodyConfig {
            model: self.model.clone(),
            api,
            max_tokens_field: field,
            ignore_eos,
            // Greedy decoding: the same prompt gets the same answer, so the
            // length probes do not depend on sampling luck.
            extra_body: greedy.then(|| {
                let mut extra = serde_json::Map::new();
                extra.insert("temperature".into(), Value::from(0));
                extra
            }),
        };
        let body = build_body(
            &config,
            &Prompt::Synthesized(prompt.to_string()),
            max_tokens,
            None,
        );
        let id = self.next_id;
        self.next_id += 1;
        let epoch = Instant::now();
        let response = execute(
            &target,
            &body,
            id,
            epoch,
            max_tokens as usize,
            None,
            |_| {},
            || {},
        )
        .await;
        let (tokens, from_usage) = match response.completion_tokens {
            Some(n) => (n, true),
            None => (response.stamps.content.len() as u64, false),
        };
        Outcome {
            response,
            tokens,
            from_usage,
        }
    }

    /// The streaming probe. False when the server does not stream usably.
    async fn streaming(&mut self, report: &mut Report) -> bool {
        let out = self
            .send(
                Api::Chat,
                MaxTokensField::MaxTokens,
                false,
                false,
                STREAM_PROMPT,
                STREAM_PROBE_TOKENS,
            )
            .await;
        let r = &out.response;
        let chunks = r.stamps.content.len();
        if let Some(why) = out.failure() {
            let category = r.error.as_ref().map(|e| e.category);
            let (seen, action) = match category {
                Some(ErrorCategory::Connect) => (
                    format!("POST /v1/chat/completions: cannot connect: {why}"),
                    "check the URL and that the server is running".to_string(),
                ),
                // A head and then nothing: the server took the request
                // and dropped the connection, which is not a question of
                // API compatibility.
                Some(ErrorCategory::StreamCut) if r.stamps.first_byte.is_none() => (
                    format!(
                        "POST /v1/chat/completions answered HTTP {} and the connection closed after the headers, before any data",
                        r.http_status.unwrap_or(200)
                    ),
                    "the server dropped the stream before its first byte: check the server's log (a crash, a proxy's timeout or a limit)".to_string(),
                ),
                Some(ErrorCategory::StreamCut) if chunks == 0 => (
                    "POST /v1/chat/completions with stream: true sent no SSE `data:` chunks and no [DONE]".to_string(),
                    "arbor run needs a streaming (SSE) chat endpoint: check that this is an OpenAI-compatible server".to_string(),
                ),
                Some(ErrorCategory::StreamCut) => (
                    format!("the stream sent {chunks} content chunks but never `data: [DONE]` ({why})"),
                    "every request of a run would be recorded as stream_cut: the server's SSE is not OpenAI-compatible".to_string(),
                ),
                Some(ErrorCategory::HttpStatus | ErrorCategory::ContextOverflow) => (
                    format!("POST /v1/chat/completions: {why}"),
                    "check --model, --header and OPENAI_API_KEY; the server rejected a minimal streaming request".to_string(),
                ),
                _ => (
                    format!("the streaming probe failed: {why}"),
                    "arbor run would record every request as an error: check the server's log".to_string(),
                ),
            };
            report.streaming = Some(false);
            report.push("streaming", Status::Fail, seen, Some(action));
            return false;
        }
        if chunks == 0 {
            report.streaming = Some(false);
            report.push(
                "streaming",
                Status::Fail,
                "the stream ended with [DONE] but carried no content chunk",
                Some("arbor run measures TTFT from the first content chunk: check the server's streaming output".into()),
            );
            return false;
        }
        report.streaming = Some(true);
        report.push(
            "streaming",
            Status::Ok,
            format!(
                "SSE stream: {chunks} content chunks and [DONE] for max_tokens {STREAM_PROBE_TOKENS}"
            ),
            None,
        );

        let usage = r.completion_tokens.is_some();
        report.usage_in_stream = Some(usage);
        if usage {
            let prompt = r.prompt_tokens.map_or("?".to_string(), |n| n.to_string());
            report.push(
                "usage",
                Status::Ok,
                format!(
                    "usage arrives in the stream ({prompt} prompt, {} completion tokens)",
                    out.tokens
                ),
                None,
            );
        } else {
            report.push(
                "usage",
                Status::Warn,
                "no usage in the stream despite stream_options.include_usage",
                Some("arbor run counts content chunks as output tokens (records say `counted`) and uses the planned prompt sizes; the server's own token counts are unknown".into()),
            );
        }
        report.cached_tokens_reported = Some(r.cached_tokens.is_some());
        match r.cached_tokens {
            Some(n) => report.push(
                "cached_tokens",
                Status::Ok,
                format!("usage carries prompt_tokens_details.cached_tokens ({n} on this request)"),
                None,
            ),
            None => report.push(
                "cached_tokens",
                Status::Warn,
                if usage {
                    "usage carries no prompt_tokens_details.cached_tokens"
                } else {
                    "no cached-token count (no usage at all)"
                },
                Some("summary.json's cache hit ratio will be null; enable the server's prompt-token details if it has them (vLLM: --enable-prompt-tokens-details)".into()),
            ),
        }
        let ttft = match (r.stamps.sent, r.stamps.first_content) {
            (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e9),
            _ => None,
        };
        let total = match (r.stamps.sent, r.stamps.done) {
            (Some(a), Some(b)) if b >= a => Some((b - a) as f64 / 1e9),
            _ => None,
        };
        report.ttft_s = ttft;
        report.total_s = total;
        let ms = |s: Option<f64>| s.map_or("?".to_string(), |s| format!("{:.1} ms", s * 1e3));
        report.push(
            "latency",
            Status::Ok,
            format!(
                "TTFT {}, total {} for {} output tokens (one tiny request; not a benchmark)",
                ms(ttft),
                ms(total),
                out.tokens
            ),
            None,
        );
        true
    }

    /// One limit probe: is `field` honoured? `Some(true)` honoured,
    /// `Some(false)` ignored, `None` rejected or failed.
    async fn limit(&mut self, field: MaxTokensField, report: &mut Report) -> Option<bool> {
        let name = field.name();
        let out = self
            .send(
                Api::Chat,
                field,
                false,
                true,
                LONG_PROMPT,
                LIMIT_PROBE_TOKENS,
            )
            .await;
        if let Some(why) = out.failure() {
            report.push(
                probe_name(field),
                Status::Warn,
                format!("a request with only {name}: {LIMIT_PROBE_TOKENS} failed: {why}"),
                Some(format!("do not use --max-tokens-field {name}")),
            );
            return None;
        }
        let honoured = out.tokens <= u64::from(LIMIT_PROBE_TOKENS);
        if honoured {
            report.push(
                probe_name(field),
                Status::Ok,
                format!(
                    "honoured: asked {LIMIT_PROBE_TOKENS} tokens with {name}, got {} ({})",
                    out.tokens,
                    out.source()
                ),
                None,
            );
        } else {
            report.push(
                probe_name(field),
                Status::Warn,
                format!(
                    "ignored: asked {LIMIT_PROBE_TOKENS} tokens with only {name}, got {} ({})",
                    out.tokens,
                    out.source()
                ),
                Some(format!(
                    "do not use --max-tokens-field {name}: outputs would not have the recorded lengths"
                )),
            );
        }
        Some(honoured)
    }

    /// Both limit probes; returns the field to use.
    async fn limits(&mut self, report: &mut Report) -> MaxTokensField {
        let mct = self
            .limit(MaxTokensField::MaxCompletionTokens, report)
            .await;
        let mt = self.limit(MaxTokensField::MaxTokens, report).await;
        report.max_completion_tokens_honoured = Some(mct == Some(true));
        report.max_tokens_honoured = Some(mt == Some(true));
        if mt == Some(true) {
            MaxTokensField::MaxTokens
        } else if mct == Some(true) {
            MaxTokensField::MaxCompletionTokens
        } else {
            report.push(
                "output_length",
                Status::Warn,
                "neither max_tokens nor max_completion_tokens limits the output",
                Some("output lengths will differ from the trace; a run still measures, but compare with care (or add a limit the server knows with --extra-body)".into()),
            );
            MaxTokensField::MaxTokens
        }
    }

    /// Asks a one-word answer for [`EOS_PROBE_TOKENS`] tokens with
    /// `ignore_eos`. Fewer tokens: ignored. All of them: the same request
    /// without `ignore_eos` tells whether the model would have stopped
    /// early (then it is honoured) or not (then it cannot be told).
    async fn ignore_eos(&mut self, field: MaxTokensField, report: &mut Report) {
        let out = self
            .send(Api::Chat, field, true, true, SHORT_PROMPT, EOS_PROBE_TOKENS)
            .await;
        let alternatives = format!(
            "output lengths will differ from the trace where the model stops early; force them with --extra-body instead, e.g. for llama.cpp --extra-body '{LOGIT_BIAS_EXAMPLE}' (2 is the EOS token id of SmolLM2 and Llama-2 style vocabularies: use your model's EOS id); vLLM and SGLang honour --ignore-eos"
        );
        if let Some(why) = out.failure() {
            report.ignore_eos_honoured = Some(false);
            report.push(
                "ignore_eos",
                Status::Warn,
                format!("a request with ignore_eos: true failed: {why}"),
                Some(format!("do not pass --ignore-eos; {alternatives}")),
            );
            return;
        }
        let asked = u64::from(EOS_PROBE_TOKENS);
        if out.tokens < asked {
            report.ignore_eos_honoured = Some(false);
            report.push(
                "ignore_eos",
                Status::Warn,
                format!(
                    "ignored: asked {asked} tokens for a one-word answer with ignore_eos, got {} ({})",
                    out.tokens,
                    out.source()
                ),
                Some(alternatives),
            );
            return;
        }
        let control = self
            .send(
                Api::Chat,
                field,
                false,
                true,
                SHORT_PROMPT,
                EOS_PROBE_TOKENS,
            )
            .await;
        if control.failure().is_none() && control.tokens < asked {
            report.ignore_eos_honoured = Some(true);
            report.push(
                "ignore_eos",
                Status::Ok,
                format!(
                    "honoured: a one-word answer got {} of {asked} tokens with ignore_eos, {} without ({})",
                    out.tokens,
                    control.tokens,
                    out.source()
                ),
                None,
            );
        } else {
            report.push(
                "ignore_eos",
                Status::Ok,
                format!(
                    "accepted, no early stop seen: {} of {asked} tokens with ignore_eos, and the model did not stop early without it either (so whether it is honoured cannot be told; outputs reach the asked length)",
                    out.tokens
                ),
                None,
            );
        }
    }

    async fn completions(&mut self, field: MaxTokensField, report: &mut Report) {
        let out = self
            .send(
                Api::Completions,
                field,
                false,
                false,
                COMPLETION_PROMPT,
                LIMIT_PROBE_TOKENS,
            )
            .await;
        let chunks = out.response.stamps.content.len();
        match out.failure() {
            None if chunks > 0 => {
                report.completions_api = Some(true);
                report.push(
                    "completions",
                    Status::Ok,
                    format!("POST /v1/completions streams ({chunks} content chunks); --api completions is available"),
                    None,
                );
            }
            failure => {
                report.completions_api = Some(false);
                let why = failure.unwrap_or_else(|| "no content chunk".into());
                report.push(
                    "completions",
                    Status::Warn,
                    format!("POST /v1/completions: {why}"),
                    Some("use the default --api chat".into()),
                );
            }
        }
    }
}

impl Prober<'_> {
    /// Does `/v1/messages` stream Anthropic's events? True when it does.
    async fn messages(&mut self, report: &mut Report) -> bool {
        let out = self
            .send(
                Api::Messages,
                MaxTokensField::MaxTokens,
                false,
                false,
                STREAM_PROMPT,
                LIMIT_PROBE_TOKENS,
            )
            .await;
        let r = &out.response;
        let chunks = r.stamps.content.len();
        let works = out.failure().is_none() && chunks > 0;
        report.messages_api = Some(works);
        if works {
            let count = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
            report.push(
                "messages",
                Status::Ok,
                format!(
                    "POST /v1/messages streams Anthropic events ({chunks} text deltas and message_stop; usage: {} input tokens, {} of them cached, {} output); --api messages is available",
                    count(r.prompt_tokens),
                    count(r.cached_tokens),
                    count(r.completion_tokens)
                ),
                None,
            );
        } else {
            let why = out.failure().unwrap_or_else(|| "no text delta".into());
            report.push(
                "messages",
                Status::Warn,
                format!("POST /v1/messages: {why}"),
                Some(format!(
                    "--api messages is not available here (its key: {}; --api-key-env or --api-key-file names another)",
                    self.options.messages_key_from
                )),
            );
        }
        works
    }
}

fn probe_name(field: MaxTokensField) -> &'static str {
    match field {
        MaxTokensField::MaxTokens => "max_tokens",
        MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
    }
}

/// Fills in the verdict and the recommended flags.
fn finish(mut report: Report, options: &Options) -> Report {
    report.usable = report.failed().is_none();
    let mut flags = vec!["--endpoint".to_string(), report.endpoint.clone()];
    flags.extend(options.access_flags.iter().cloned());
    if let Some(m) = &report.model {
        flags.push("--model".into());
        flags.push(m.clone());
    }
    if report.usable && report.api == Some("messages") {
        flags.push("--api".into());
        flags.push("messages".into());
    }
    if report.usable && report.api != Some("messages") {
        let field = if report.max_tokens_honoured == Some(false)
            && report.max_completion_tokens_honoured == Some(true)
        {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        flags.push("--max-tokens-field".into());
        flags.push(field.into());
        let eos_accepted = report
            .findings
            .iter()
            .any(|f| f.probe == "ignore_eos" && f.status == Status::Ok);
        if eos_accepted {
            flags.push("--ignore-eos".into());
        }
        let too_long = report
            .workload_largest_prompt
            .zip(report.suggested_max_context)
            .is_some_and(|(prompt, cap)| u64::from(prompt) > cap);
        if let (true, Some(cap)) = (too_long, report.suggested_max_context) {
            flags.push("--max-context".into());
            flags.push(cap.to_string());
        }
    }
    let mut command = String::from("arbor run [INPUT...]");
    for f in &flags {
        command.push(' ');
        command.push_str(&shell_word(f));
    }
    report.flags = flags;
    report.command = command;
    report
}

/// A word as a POSIX shell reads it: quoted when it needs to be.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The human report: one line per finding, then the command to use.
fn human(report: &Report) -> String {
    let mut out = format!("arbor doctor: {}", report.endpoint);
    if let Some(m) = &report.model {
        out.push_str(&format!(" (model {m})"));
    }
    out.push('\n');
    let width = report
        .findings
        .iter()
        .map(|f| f.probe.len())
        .max()
        .unwrap_or(0);
    for f in &report.findings {
        out.push_str(&format!(
            "  {:<4}  {:<width$}  {}",
            f.status.as_str(),
            f.probe,
            f.seen
        ));
        if let Some(a) = &f.action {
            out.push_str(" -> ");
            out.push_str(a);
        }
        out.push('\n');
    }
    let warnings = report
        .findings
        .iter()
        .filter(|f| f.status == Status::Warn)
        .count();
    if report.usable {
        out.push_str(&format!(
            "verdict: can be benchmarked ({warnings} warning{})\n",
            if warnings == 1 { "" } else { "s" }
        ));
        out.push_str(&format!("Use: {}", report.command));
    } else {
        out.push_str("verdict: cannot be benchmarked (see the fail line above)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("--ignore-eos"), "--ignore-eos");
        assert_eq!(shell_word("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
        assert_eq!(shell_word("my model"), "'my model'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_server_of_the_messages_api_only_is_run_with_api_messages() {
        let mut report = Report {
            endpoint: "http://h:1".into(),
            model: Some("m".into()),
            streaming: Some(false),
            messages_api: Some(true),
            ..Report::default()
        };
        report.push("streaming", Status::Fail, "no chat", None);
        report.streaming_via_messages();
        report.choose_api();
        let options = Options {
            endpoint: "http://h:1".into(),
            model: None,
            headers: HeaderMap::new(),
            messages_headers: HeaderMap::new(),
            messages_key_from: "env ANTHROPIC_API_KEY (unset)".into(),
            timeout: Duration::from_secs(1),
            secrets: vec![],
            tls: None,
            access_flags: vec!["--api-key-env".into(), "MY_KEY".into()],
            workload: None,
        };
        let report = finish(report, &options);
        assert!(report.usable);
        assert_eq!(report.api, Some("messages"));
        assert_eq!(
            report.flags,
            [
                "--endpoint",
                "http://h:1",
                "--api-key-env",
                "MY_KEY",
                "--model",
                "m",
                "--api",
                "messages"
            ]
        );
        assert_eq!(report.findings[0].status, Status::Warn);
        assert_eq!(report.findings[1].seen, "streams messages; --api messages");
    }

    #[test]
    fn secrets_are_scrubbed_from_every_text() {
        let mut report = Report::default();
        report.push(
            "health",
            Status::Fail,
            "saw sk-secret",
            Some("not sk-secret".into()),
        );
        report.command = "x sk-secret".into();
        scrub(&mut report, &["sk-secret".to_string()]);
        let text = serde_json::to_string(&report).unwrap();
        assert!(!text.contains("sk-secret"), "{text}");
    }
}
