//! `arbor run`: replay a workload against a live OpenAI-compatible server.
//!
//! Owns the wiring of a live run: flags to a [`Prepared`] run (workload,
//! policy, the planned side on the virtual clock, request options, output
//! directory), a tokio runtime with two workers, then [`run_against`] an
//! endpoint: model discovery, the HTTP client and its warmed pool, the live
//! driver with `records.jsonl` written as requests finish, Ctrl+C, the
//! progress ticker, `summary.json`, and the console table.
//!
//! The endpoint is a parameter of [`run_against`] so that the built-in
//! emulator can be started in-process and passed in (see [`run`]).

mod config;
mod output;
pub mod summary;
mod table;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arbor_backends::live::exchange::Target;
use arbor_backends::live::request::{Api, BodyConfig, MaxTokensField};
use arbor_backends::live::{self, LiveConfig, Progress, RunOutcome};
use arbor_backends::virtual_clock;
use arbor_engine::dag::compile;
use arbor_engine::policy::parse_seconds;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::time::nanos_to_secs;
use arbor_engine::Workload;
use arbor_sim::ServiceModel;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION};
use serde_json::{Map, Value};

use crate::args::RunArgs;
use crate::progress::{self, Ticker};
use crate::scenario::{self, Applied, Explicit};
use crate::{inputs, Failure};

use config::RunConfig;
use output::{OutputDir, RecordsFile};
use summary::Collector;

/// Most connections opened before the clock starts.
pub const MAX_WARM_CONNECTIONS: usize = 512;

/// Environment variable holding the API key (sent as `Authorization:
/// Bearer ...`, never written anywhere).
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";

/// What the planned side (the same workload on the virtual clock) says.
#[derive(Debug, Clone)]
pub struct Planned {
    pub service: String,
    pub peak_inflight: u32,
    pub peak_inflight_at_s: f64,
    /// Requests the plan dispatches (the progress bar's length).
    pub dispatched: u64,
}

/// Request options from the flags, checked.
#[derive(Debug, Clone)]
pub struct RequestOptions {
    /// `None`: ask the server (`GET /v1/models`).
    pub model: Option<String>,
    pub api: Api,
    pub max_tokens_field: MaxTokensField,
    pub ignore_eos: bool,
    pub extra_body: Option<Map<String, Value>>,
    /// `--header` values, in order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// From `OPENAI_API_KEY`; never serialized.
    pub api_key: Option<String>,
    pub timeout: Duration,
    pub retries: u32,
    /// Prepend each play's cache-bust marker to its prompts.
    pub cache_bust: bool,
}

/// A run ready to go, whatever the endpoint.
pub struct Prepared {
    pub workload: Arc<Workload>,
    pub scheduler: Scheduler,
    pub planned: Planned,
    pub requests: RequestOptions,
    pub out: OutputDir,
    pub progress: bool,
    /// What produced the run, for `summary.json` (endpoint and model are
    /// filled in by [`run_against`]).
    pub config: RunConfig,
    /// The recipe (`--scenario`), if any.
    pub scenario: Option<Applied>,
}

/// What a finished run wrote.
pub struct RunReport {
    pub summary: output::Summary,
    pub out: PathBuf,
}

/// Emulator timing of the default run (no `--endpoint`) when no emulator
/// flag says otherwise: a fast server, so the demo takes seconds.
pub const DEMO_TTFT_MS: &str = "10";
pub const DEMO_ITL_MS: &str = "0.2";

/// True when `arbor run` was given nothing to point at: no input, no
/// synthetic workload, no endpoint.
fn is_demo(args: &RunArgs) -> bool {
    args.endpoint.is_none()
        && args.input.inputs.is_empty()
        && args.input.synthetic.is_none()
        && args.scenario.scenario.is_none()
}

/// The bundled sample's recorded gaps add up to almost an hour; the demo
/// replays them at 1 % with a 0.25 s idle-gap cap, unless any of those
/// policy flags was given.
fn demo_args(args: &RunArgs) -> RunArgs {
    let mut args = args.clone();
    let p = &mut args.policy;
    if p.tool_time == "recorded" && p.think_time_pct.is_none() && p.idle_gap_cap.is_none() {
        p.tool_time = "pct:1".into();
        p.think_time_pct = Some("1".into());
        p.idle_gap_cap = Some("0.25".into());
        eprintln!(
            "arbor run: the bundled sample against the built-in emulator; tool and think gaps at 1 %, \
             idle-gap cap 0.25 s (give --endpoint, inputs or policy flags to change)"
        );
    }
    let e = &mut args.emulator;
    if e.ttft_ms.is_none() && e.prefill_tok_s.is_none() {
        e.ttft_ms = Some(DEMO_TTFT_MS.into());
    }
    if e.itl_ms.is_none() && e.decode_tok_s.is_none() {
        e.itl_ms = Some(DEMO_ITL_MS.into());
    }
    args
}

/// `arbor run`.
pub fn run(args: &RunArgs, explicit: &Explicit) -> Result<(), Failure> {
    let mut args = if is_demo(args) {
        demo_args(args)
    } else {
        args.clone()
    };
    let applied = scenario::apply(&args.scenario, &args.input, &mut args.policy, explicit)?;
    if applied.is_some() {
        args.ignore_eos = true;
    }
    let args = &args;
    let prepared = prepare(args, applied)?;
    let client = client_runtime()?;
    let report = match &args.endpoint {
        Some(endpoint) => {
            let endpoint = normalize_endpoint(endpoint)?;
            client.block_on(run_against(&endpoint, prepared))?
        }
        None => {
            let config = args
                .emulator
                .flags(Some(args.policy.seed))?
                .into_config()
                .map_err(Failure::input)?;
            // The emulator gets a runtime (and a thread) of its own: the
            // client's thread measures, the server's serves.
            let server = runtime_with_workers(1)?;
            let loopback = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0));
            let emulator = server
                .block_on(arbor_sim::emulator::serve(config, loopback))
                .map_err(|e| Failure::other(format!("cannot start the built-in emulator: {e}")))?;
            let report = client.block_on(run_against(&emulator.base_url(), prepared));
            server.block_on(emulator.shutdown());
            server.shutdown_timeout(Duration::from_millis(200));
            report?
        }
    };
    client.shutdown_timeout(Duration::from_millis(200));

    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    table::print(&mut out, &report.summary, &report.out)
        .map_err(|e| Failure::other(format!("stdout: {e}")))?;
    if report.summary.cancelled {
        return Err(Failure {
            code: 130,
            message: format!(
                "cancelled by Ctrl+C; what ran is in {}",
                report.out.display()
            ),
        });
    }
    Ok(())
}

/// A runtime with `workers` threads (the emulator, `arbor doctor`).
pub fn runtime_with_workers(workers: usize) -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("arbor")
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the async runtime: {e}")))
}

/// A two-worker runtime (`arbor emulate`, `arbor doctor`).
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    runtime_with_workers(2)
}

/// The runtime of a live run's client: one thread runs the driver's loop,
/// every request's task and the I/O driver. No request ever waits for
/// another thread to wake: cross-thread wake-ups (futex calls, a spawn
/// unparking a worker, a completion unparking the loop) were half the CPU
/// of a short request. One core carries 2 M streamed tokens per second.
pub fn client_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the async runtime: {e}")))
}

/// Checks every flag, loads and compiles the workload, plans it on the
/// virtual clock and checks the output directory. Touches no network.
pub fn prepare(args: &RunArgs, scenario: Option<Applied>) -> Result<Prepared, Failure> {
    let requests = request_options(args)?;
    let service: ServiceModel = args.service.parse().map_err(Failure::input)?;
    let mut policy = inputs::policy(&args.policy)?;
    let options = inputs::derive_options(&args.input)?;
    let out = OutputDir::check(
        args.out.clone().unwrap_or_else(|| default_out(args)),
        args.force,
    )?;
    let loaded = inputs::load(&args.input)?;
    if loaded.workload.trees.is_empty() {
        return Err(Failure::input(
            "the inputs hold no trees: expected at least one trace",
        ));
    }
    if scenario.is_some() {
        scenario::fit_lanes(&mut policy, loaded.workload.trees.len());
    }
    let compiled = compile(&loaded.workload, &policy, &options).map_err(Failure::input)?;

    let mut plan = Scheduler::new(compiled.clone(), policy.clone()).map_err(Failure::input)?;
    virtual_clock::run(&mut plan, &service)
        .map_err(|e| Failure::other(format!("engine (planning): {e}")))?;
    let stats = plan.stats();
    let planned = Planned {
        service: service.to_string(),
        peak_inflight: stats.peak_inflight,
        peak_inflight_at_s: nanos_to_secs(stats.peak_inflight_at),
        dispatched: stats.dispatched,
    };
    drop(plan);

    let config = RunConfig::new(
        args,
        &loaded.description,
        &policy,
        options.overlap_tolerance,
        &planned.service,
        &requests,
        out.path(),
    );
    let scheduler = Scheduler::new(compiled, policy).map_err(Failure::input)?;
    Ok(Prepared {
        workload: Arc::new(loaded.workload),
        scheduler,
        planned,
        requests,
        out,
        progress: progress::wanted(args.no_progress),
        config,
        scenario,
    })
}

/// Runs a prepared workload against `endpoint` (a base URL such as
/// `http://127.0.0.1:8000`, already normalized by [`normalize_endpoint`]),
/// writes `records.jsonl` and `summary.json`, and returns the summary.
/// Runs on the client's runtime ([`client_runtime`]).
pub async fn run_against(endpoint: &str, prepared: Prepared) -> Result<RunReport, Failure> {
    let Prepared {
        workload,
        mut scheduler,
        planned,
        requests,
        out,
        progress: show_progress,
        mut config,
        scenario,
    } = prepared;

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| Failure::other(format!("cannot build the HTTP client: {e}")))?;
    let headers = header_map(&requests);
    let (model, model_from) = match &requests.model {
        Some(m) => (m.clone(), "flag"),
        None => (discover_model(&client, endpoint, &headers).await?, "server"),
    };
    let path = match requests.api {
        Api::Chat => "/v1/chat/completions",
        Api::Completions => "/v1/completions",
    };
    let url = format!("{endpoint}{path}");
    let warm = (planned.peak_inflight as usize).clamp(1, MAX_WARM_CONNECTIONS);
    config.set_endpoint(endpoint, &url, &model, model_from, warm);

    let target =
        Target::new(&url, &headers, requests.timeout, requests.retries).map_err(Failure::other)?;
    let live_config = LiveConfig {
        target,
        body: BodyConfig {
            model,
            api: requests.api,
            max_tokens_field: requests.max_tokens_field,
            ignore_eos: requests.ignore_eos,
            extra_body: requests.extra_body.clone(),
        },
        warm_connections: warm,
        base_url: endpoint.to_string(),
        // The recipe always busts the cache; otherwise --cache-bust.
        cache_bust: requests.cache_bust || scenario.is_some(),
        seed: scheduler.policy().seed,
    };

    let out_dir = out.create()?;
    // Warmups are recorded but measured nowhere; measurement starts at the
    // profiling start (0 without a start window).
    let window_start = scheduler
        .policy()
        .start_window
        .map(|_| scheduler.profiling_start());
    let collector = Collector::with_warmups(summary::Warmups::of(&scheduler), window_start);
    let mut sink = RecordsFile::create(&out_dir, collector)?;
    live::warm_pool(&live_config).await;

    let progress = Arc::new(Progress::default());
    let ticker = show_progress.then(|| Ticker::start(Arc::clone(&progress), planned.dispatched));
    let grace = nanos_to_secs(scheduler.policy().grace);
    let started_at = std::time::SystemTime::now();
    let result = live::run(
        &mut scheduler,
        Arc::clone(&workload),
        &live_config,
        &mut sink,
        &progress,
        stop_on_ctrl_c(grace),
    )
    .await;
    if let Some(t) = ticker {
        t.finish();
    }
    let outcome: RunOutcome = result.map_err(|e| {
        Failure::other(format!(
            "the run stopped: {e} (records so far are in {})",
            out_dir.display()
        ))
    })?;

    let play_turns: Vec<u32> = scheduler
        .plays()
        .iter()
        .map(|p| {
            scheduler
                .trees()
                .get(p.tree as usize)
                .map_or(0, |t| t.turn_count())
        })
        .collect();
    let measured = sink
        .into_collector()
        .map_err(|e| {
            Failure::other(format!(
                "{}: cannot write: {e}",
                out_dir.join(output::RECORDS_FILE).display()
            ))
        })?
        .finish(&play_turns);
    let summary = output::Summary::new(
        scenario.as_ref(),
        config,
        started_at,
        &outcome,
        &scheduler,
        workload.trees.len() as u64,
        &planned,
        measured,
    );
    output::write_summary(&out_dir, &summary)?;
    Ok(RunReport {
        summary,
        out: out_dir,
    })
}

/// Resolves on the first Ctrl+C; a second one quits at once (the records
/// written so far stay). Never resolves if the handler cannot be installed.
async fn stop_on_ctrl_c(grace_s: f64) {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
    eprintln!(
        "\narbor run: stopping: no new requests; requests in flight get up to {grace_s} s \
         (--grace); Ctrl+C again quits at once"
    );
    tokio::spawn(async {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!("arbor run: quit; records.jsonl holds every request that finished");
            std::process::exit(130);
        }
    });
}

/// `http://host:port`, `http://host:port/` and `http://host:port/v1` all
/// name the same server: the base URL without a trailing `/` or `/v1`.
pub fn normalize_endpoint(text: &str) -> Result<String, Failure> {
    let url = reqwest::Url::parse(text.trim()).map_err(|e| {
        Failure::input(format!(
            "--endpoint: expected a URL such as http://127.0.0.1:8000, got `{text}` ({e})"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(Failure::input(format!(
            "--endpoint: expected an http:// or https:// URL, got `{text}`"
        )));
    }
    let mut base = url.as_str().trim_end_matches('/').to_string();
    if let Some(stripped) = base.strip_suffix("/v1") {
        base = stripped.to_string();
    }
    Ok(base)
}

fn request_options(args: &RunArgs) -> Result<RequestOptions, Failure> {
    let api = match args.api.as_str() {
        "chat" => Api::Chat,
        "completions" => Api::Completions,
        other => {
            return Err(Failure::input(format!(
                "--api: expected chat or completions, got `{other}`"
            )))
        }
    };
    let max_tokens_field = match args.max_tokens_field.as_str() {
        "max_tokens" => MaxTokensField::MaxTokens,
        "max_completion_tokens" => MaxTokensField::MaxCompletionTokens,
        other => {
            return Err(Failure::input(format!(
                "--max-tokens-field: expected max_tokens or max_completion_tokens, got `{other}`"
            )))
        }
    };
    let extra_body = args
        .extra_body
        .as_deref()
        .map(parse_extra_body)
        .transpose()?;
    let headers = args
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let timeout = parse_seconds("--timeout", &args.timeout).map_err(Failure::input)?;
    if timeout == 0 {
        return Err(Failure::input("--timeout: expected more than 0 seconds"));
    }
    let api_key = std::env::var(API_KEY_ENV)
        .ok()
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty());
    Ok(RequestOptions {
        model: args.model.clone().filter(|m| !m.is_empty()),
        api,
        max_tokens_field,
        ignore_eos: args.ignore_eos,
        extra_body,
        headers,
        api_key,
        timeout: Duration::from_nanos(timeout),
        retries: args.retries,
        cache_bust: args.cache_bust,
    })
}

/// `--extra-body`: a JSON object.
pub fn parse_extra_body(text: &str) -> Result<Map<String, Value>, Failure> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(Failure::input(format!(
            "--extra-body: expected a JSON object ({{...}}), got {}",
            kind_of(&other)
        ))),
        Err(e) => Err(Failure::input(format!(
            "--extra-body: expected a JSON object, got invalid JSON: {e}"
        ))),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `--header K=V`.
pub fn parse_header(text: &str) -> Result<(HeaderName, HeaderValue), Failure> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(Failure::input(format!(
            "--header: expected NAME=VALUE, got `{}`",
            config::redact_header_text(text)
        )));
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
        Failure::input(format!(
            "--header: `{}` is not a valid header name",
            name.trim()
        ))
    })?;
    let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
        Failure::input(format!(
            "--header {name}: the value is not a valid header value"
        ))
    })?;
    if config::is_secret_header(name.as_str()) {
        value.set_sensitive(true);
    }
    Ok((name, value))
}

/// Every request's extra headers: `--header` values, and the API key as
/// `Authorization: Bearer ...` unless a `--header` set `Authorization`.
pub(crate) fn header_map(requests: &RequestOptions) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in &requests.headers {
        map.append(name.clone(), value.clone());
    }
    if let Some(key) = &requests.api_key {
        if !map.contains_key(AUTHORIZATION) {
            if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {key}")) {
                value.set_sensitive(true);
                map.insert(AUTHORIZATION, value);
            }
        }
    }
    map
}

/// The first model id the server lists at `/v1/models`.
async fn discover_model(
    client: &reqwest::Client,
    endpoint: &str,
    headers: &HeaderMap,
) -> Result<String, Failure> {
    let url = format!("{endpoint}/v1/models");
    let response = client
        .get(&url)
        .headers(headers.clone())
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|e| {
            Failure::other(format!(
                "cannot ask {url} for the model (pass --model to skip): {}",
                without_url(&e)
            ))
        })?;
    let status = response.status();
    if !status.is_success() {
        return Err(Failure::other(format!(
            "{url} answered HTTP {}: pass --model M",
            status.as_u16()
        )));
    }
    let body: Value = response.json().await.map_err(|e| {
        Failure::other(format!(
            "{url} did not answer with JSON ({}): pass --model M",
            without_url(&e)
        ))
    })?;
    first_model_id(&body).ok_or_else(|| {
        Failure::other(format!(
            "{url} lists no models (expected {{\"data\":[{{\"id\":...}}]}}): pass --model M"
        ))
    })
}

pub(crate) fn without_url(e: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(e);
    while let Some(s) = source {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `data[0].id` of a `/v1/models` answer.
pub fn first_model_id(body: &Value) -> Option<String> {
    body.get("data")?
        .as_array()?
        .iter()
        .find_map(|m| m.get("id")?.as_str())
        .filter(|id| !id.is_empty())
        .map(str::to_string)
}

/// `arbor-results/<UTC YYYYmmdd-HHMMSS>-<name>`: the first input's file
/// stem, `synthetic`, or `sample`.
fn default_out(args: &RunArgs) -> PathBuf {
    let name = match args.input.inputs.first() {
        Some(path) => stem(path),
        None if args.input.synthetic.is_some() => "synthetic".to_string(),
        None => "sample".to_string(),
    };
    let (compact, _) = output::utc_stamps(std::time::SystemTime::now());
    PathBuf::from("arbor-results").join(format!("{compact}-{name}"))
}

fn stem(path: &Path) -> String {
    let raw = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "run".to_string()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_normalized() {
        for text in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/",
        ] {
            assert_eq!(
                normalize_endpoint(text).ok().as_deref(),
                Some("http://127.0.0.1:8000"),
                "{text}"
            );
        }
        assert_eq!(
            normalize_endpoint("https://h/api").ok().as_deref(),
            Some("https://h/api")
        );
        assert_eq!(normalize_endpoint("ftp://h").err().map(|f| f.code), Some(2));
        assert_eq!(
            normalize_endpoint("nonsense").err().map(|f| f.code),
            Some(2)
        );
    }

    #[test]
    fn extra_body_must_be_an_object() {
        assert!(parse_extra_body(r#"{"temperature":0}"#).is_ok());
        for bad in ["[1]", "3", "{oops", ""] {
            let failure = parse_extra_body(bad).expect_err(bad);
            assert_eq!(failure.code, 2);
            assert!(failure.message.contains("--extra-body"));
        }
    }

    #[test]
    fn headers_parse_and_secrets_are_marked_sensitive() {
        let (name, value) = parse_header("X-Api-Key=abc=def").ok().unwrap();
        assert_eq!(name.as_str(), "x-api-key");
        assert_eq!(value.to_str().unwrap(), "abc=def");
        assert!(value.is_sensitive());
        let (_, value) = parse_header("X-Trace=1").ok().unwrap();
        assert!(!value.is_sensitive());
        let failure = parse_header("Authorization: Bearer sk-123").err().unwrap();
        assert_eq!(failure.code, 2);
        assert!(!failure.message.contains("sk-123"), "{}", failure.message);
        assert!(parse_header("bad name=1").is_err());
    }

    #[test]
    fn the_api_key_becomes_a_bearer_header_unless_one_is_given() {
        let mut requests = RequestOptions {
            model: None,
            api: Api::Chat,
            max_tokens_field: MaxTokensField::MaxTokens,
            ignore_eos: false,
            extra_body: None,
            headers: vec![],
            api_key: Some("sk-test".into()),
            timeout: Duration::from_secs(1),
            retries: 0,
            cache_bust: false,
        };
        assert_eq!(header_map(&requests)[AUTHORIZATION], "Bearer sk-test");
        requests.headers = vec![parse_header("Authorization=Bearer other").ok().unwrap()];
        assert_eq!(header_map(&requests)[AUTHORIZATION], "Bearer other");
    }

    #[test]
    fn the_first_listed_model_is_used() {
        let body = serde_json::json!({"object":"list","data":[{"id":"m1"},{"id":"m2"}]});
        assert_eq!(first_model_id(&body).as_deref(), Some("m1"));
        assert_eq!(first_model_id(&serde_json::json!({"data":[]})), None);
        assert_eq!(first_model_id(&serde_json::json!({})), None);
    }

    #[test]
    fn default_names_come_from_the_first_input() {
        assert_eq!(stem(Path::new("a/trace_0187.json")), "trace_0187");
        assert_eq!(
            stem(Path::new("testdata/weka-kv-cache-tester")),
            "weka-kv-cache-tester"
        );
        assert_eq!(stem(Path::new("a b.json")), "a_b");
    }
}
