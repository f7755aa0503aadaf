//! `arbor run`: replay a workload against a live OpenAI-compatible server.
//!
//! Owns the wiring of a live run: the demo defaults, the recipe, options to a
//! [`Prepared`] run ([`prepare`]), the in-process emulator when there is no
//! `--endpoint`, then [`run_against`] an endpoint: the pre-flight
//! (`arbor_backends::preflight`: ready, scheme, base path, key, model,
//! context length; refused before any measured request; asked once for a
//! workload run again, as a capacity search's probes: [`run_compiled`]), the
//! HTTP client and its warmed pool, the live driver with `records.jsonl`
//! written as requests finish (after `trees.jsonl`, the trees' shape, and
//! `planned.json`, the plan's requests in flight over time), the output
//! directory claimed for the whole run ([`output::OutputDir::create`]),
//! the stop signals ([`signals`]: SIGINT, SIGTERM, SIGHUP), the
//! file-descriptor check ([`limits`]), the progress ticker, the server-metrics scraper
//! (`arbor_backends::scrape`, `metrics.jsonl`, on a thread of its own),
//! the start agreed with the other shards ([`barrier`]: `--start-at` or
//! the start barrier, met before the pool is warmed, waited for where the
//! clock starts), `run.json` when the clock starts,
//! `end.json` and `summary.json` at the end ([`journal`],
//! [`output::Summary::build`]: what `arbor summarize` rebuilds from), the
//! observer's `run_finished` (the CLI's table), then the page; and the
//! error kind of the end: `Stopped` by a signal, `ClientFailed` when the
//! client itself failed requests (error class `client`).
//!
//! With `--threads N` above 1 the driver's loop runs on N threads of
//! their own ([`threads`]: each its stripe of the plan, its scheduler and
//! its pool, one epoch, one `records.jsonl`); everything else here is the
//! same for one thread or many.
//!
//! `--repeat N` runs the whole of it N times ([`repeat`]), each run in
//! its own directory, then writes the aggregate (`arbor_runs::aggregate`).
//!
//! The endpoint is a parameter of [`run_against`] so that the built-in
//! emulator can be started in-process and passed in (see [`run`]).

pub mod barrier;
pub mod config;
mod limits;
mod notices;
mod prepare;
mod repeat;
mod signals;
mod threads;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use arbor_backends::live::exchange::Target;
use arbor_backends::live::request::BodyConfig;
use arbor_backends::live::tls::ClientConfig;
use arbor_backends::live::{self, LiveConfig, Progress, RunOutcome};
use arbor_backends::preflight;
use arbor_engine::policy::GapTransform;
use arbor_engine::time::{nanos_to_secs, NANOS_PER_MS};
use arbor_sim::emulator::EmulatorConfig;

use crate::observer::{Clock, Finished};
use crate::options::{FailureLimits, RunOptions};
use crate::{emulate, inputs, runtime, scenario, Observer};
use arbor_backends::endpoint::{at, redact_url};
use arbor_backends::scrape::{self, Scraper};
use arbor_error::{Error, Kind};
use arbor_runs::server_metrics::{ServerMetrics, METRICS_FILE};

use arbor_runs::breaker::{Breaker, Trip};
use arbor_runs::collector::Collector;
use arbor_runs::journal::{self, RunEnd, RunStart};
use arbor_runs::output::{self, ClientFailures, Completeness, RecordsFile, Written};
use arbor_runs::recipe::Applied;
use limits::FdNeed;
pub use prepare::{compile, default_out, prepare, prepare_compiled, Prepared};
use signals::Signals;
pub use signals::StopSignal;

/// `stopped_by` of a run the circuit breaker stopped (`--abort-after`).
pub const ABORT_AFTER: &str = "abort_after";

/// Most connections opened before the clock starts.
pub const MAX_WARM_CONNECTIONS: usize = 512;

/// What a finished run wrote.
pub struct RunReport {
    pub summary: output::Summary,
    pub out: PathBuf,
    /// The signal that stopped the run, if one did.
    pub stopped_by: Option<StopSignal>,
    /// Requests the client itself failed (error class `client`).
    pub client_failures: ClientFailures,
    /// The circuit breaker's trip (`--abort-after`), when it stopped the
    /// run.
    pub trip: Option<Trip>,
    /// The pre-flight the run passed (asked, or [`Prepared::checked`]).
    pub ready: preflight::Ready,
    /// The output directory's lock, held until the report is written.
    _claim: output::Claimed,
}

/// Emulator timing of the default run (no `--endpoint`) when no emulator
/// option says otherwise: a fast server, so the demo takes seconds.
pub const DEMO_TTFT: u64 = 10 * NANOS_PER_MS;
pub const DEMO_ITL: u64 = NANOS_PER_MS / 5;

/// True when `arbor run` was given nothing to point at: no input, no
/// synthetic workload, no endpoint.
fn is_demo(args: &RunOptions) -> bool {
    args.request.endpoint.is_none()
        && args.input.inputs.is_empty()
        && args.input.synthetic.is_none()
        && args.scenario.scenario.is_none()
}

/// The bundled sample's recorded gaps add up to almost an hour; the demo
/// replays them at 1 % with a 0.25 s idle-gap cap, unless any of those
/// policy options was given.
fn demo_args(args: &RunOptions, observer: &dyn Observer) -> RunOptions {
    let mut args = args.clone();
    let p = &mut args.policy;
    if p.tool_time() == GapTransform::Recorded
        && p.think_time_pct.is_none()
        && p.idle_gap_cap.is_none()
    {
        p.tool_time = Some(GapTransform::Scale { ppm: 10_000 });
        p.think_time_pct = Some(GapTransform::Scale { ppm: 10_000 });
        p.idle_gap_cap = Some(250 * NANOS_PER_MS);
        observer.notice(
            "arbor run: the bundled sample against the built-in emulator; tool and think gaps at 1 %, \
             idle-gap cap 0.25 s (give --endpoint, inputs or policy flags to change)",
        );
    }
    let e = &mut args.emulator.flags;
    if e.ttft_ms.is_none() && e.prefill_tok_s.is_none() {
        e.ttft_ms = Some(DEMO_TTFT);
    }
    if e.itl_ms.is_none() && e.decode_tok_s.is_none() {
        e.itl_ms = Some(DEMO_ITL);
    }
    args
}

/// `arbor run`: one run, or with `repeat` a sequence ([`repeat`]). The
/// error's kind says how it ended: `Stopped` by a signal, `ClientFailed`
/// when the client itself failed requests, `FailedTooOften` when the server
/// failed the run ([`failed_too_often`]).
pub fn run(args: &RunOptions, observer: &dyn Observer) -> Result<(), Error> {
    if let Some(runs) = args.repeat {
        return repeat::run(args, runs, observer);
    }
    let ran = run_once(args, observer)?;
    ran.exit(observer)
}

/// What one run left, for its exit.
struct Ran {
    out: PathBuf,
    stopped_by: Option<StopSignal>,
    client_failures: ClientFailures,
    /// Why the server failed the run ([`failed_too_often`]).
    failed: Option<String>,
    /// The pre-flight the run passed.
    ready: preflight::Ready,
    /// How the run missed its `--slo` (or was too small to judge).
    slo_missed: Option<Error>,
}

impl Ran {
    /// How the run ends ([`exit_of`] its parts).
    /// How the run ends ([`exit_of`] its parts); a run that ended well
    /// but missed its `--slo` ends with the miss.
    fn exit(&self, observer: &dyn Observer) -> Result<(), Error> {
        exit_of(
            self.stopped_by,
            &self.client_failures,
            self.failed.as_deref(),
            &self.out,
            observer,
        )?;
        match &self.slo_missed {
            Some(miss) => Err(miss.clone()),
            None => Ok(()),
        }
    }
}

/// A run's options with the demo's defaults and the recipe applied, and
/// the built-in emulator's configuration when there is no endpoint:
/// everything decided before the workload is loaded.
pub struct Settled {
    pub args: RunOptions,
    /// `--slo` parsed.
    pub slo: Option<arbor_capacity::slo::Slo>,
    pub applied: Option<Applied>,
    pub emulator: Option<EmulatorConfig>,
    demo: bool,
}

/// Applies the demo's defaults and the recipe, refuses emulator options
/// with an endpoint, and configures the in-process emulator.
pub fn settle(args: &RunOptions, observer: &dyn Observer) -> Result<Settled, Error> {
    let slo = args.slo.as_deref().map(crate::slo::parse).transpose()?;
    let demo = is_demo(args);
    let mut args = if demo {
        demo_args(args, observer)
    } else {
        args.clone()
    };
    let applied = scenario::apply(
        &mut args.scenario,
        &args.input,
        &mut args.policy,
        args.request.extra_body.as_ref(),
        observer,
    )?;
    if applied.is_some() {
        args.request.ignore_eos = true;
    }
    if args.request.endpoint.is_some() {
        refuse_emulator_options(&args)?;
    }
    // The built-in emulator's settings, when there is no endpoint.
    let emulator = match args.request.endpoint {
        Some(_) => None,
        None => Some(emulate::config(
            &args.emulator,
            args.policy.seed(),
            args.input.tokenizer.as_deref(),
        )?),
    };
    if let Some(config) = &emulator {
        plan_with_the_emulators_timing(&mut args, config);
    }
    Ok(Settled {
        args,
        slo,
        applied,
        emulator,
        demo,
    })
}

/// One run, from options to its summary and page.
fn run_once(args: &RunOptions, observer: &dyn Observer) -> Result<Ran, Error> {
    let settled = settle(args, observer)?;
    let prepared = prepare(
        &settled.args,
        settled.applied.clone(),
        settled.emulator.is_some(),
        observer,
    )?;
    run_prepared(&settled, prepared, observer)
}

/// Runs a prepared run: against the endpoint, or the in-process emulator
/// started for it; then the observer's `run_finished` and the page.
fn run_prepared(
    settled: &Settled,
    mut prepared: Prepared,
    observer: &dyn Observer,
) -> Result<Ran, Error> {
    let failures = prepared.failures;
    let fd_limit = runtime::raise_fd_limit();
    let need = FdNeed {
        peak_inflight: u64::from(prepared.planned.peak_inflight),
        emulator: settled.emulator.is_some(),
    };
    if let Some(warning) = limits::check(need, fd_limit)? {
        observer.notice(&warning);
    }
    let shape = notices::RunShape {
        policy: prepared.scheduler.policy(),
        trees: prepared.workload.trees.len() as u64,
        planned: prepared.planned_duration,
        service: &prepared.planned.service,
        cache_bust: prepared.requests.cache_bust,
        gaps: prepared
            .planned
            .time_breakdown
            .as_ref()
            .map_or(0, |b| b.replayed_gaps()),
    };
    for line in notices::before_run(&shape) {
        observer.notice(&line);
    }
    let client = runtime::client()?;
    let mut emulator_settings = None;
    let report = match (&settled.args.request.endpoint, settled.emulator.clone()) {
        (Some(endpoint), _) => {
            observer.notice(&format!(
                "arbor run: requests go to {}",
                redact_url(&at(endpoint, prepared.requests.api.path()))
            ));
            let report = client.block_on(run_against(endpoint, prepared, observer));
            client.shutdown_timeout(Duration::from_millis(200));
            report?
        }
        (None, None) => return Err(Error::other("no endpoint and no emulator")),
        (None, Some(config)) => {
            let mut settings = config.describe();
            if settled.demo {
                settings.push_str(" (the demo's; emulator flags change them)");
            }
            prepared.config.emulator = Some(settings.clone());
            emulator_settings = Some(settings);
            // The emulator gets a runtime (and a thread) of its own: the
            // client's thread measures, the server's serves.
            let server = runtime::with_workers(1)?;
            let loopback = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, 0));
            let emulator = server
                .block_on(arbor_sim::emulator::serve(config, loopback))
                .map_err(|e| Error::other(format!("cannot start the built-in emulator: {e}")))?;
            let report = client.block_on(run_against(&emulator.base_url(), prepared, observer));
            // The client's tasks (and connections) go first: the emulator
            // waits for its connections to close.
            client.shutdown_timeout(Duration::from_millis(200));
            server.block_on(emulator.shutdown());
            server.shutdown_timeout(Duration::from_millis(200));
            report?
        }
    };

    let judged = match (&settled.args.slo, &settled.slo) {
        (Some(spec), Some(targets)) => Some(crate::slo::judge(&report.out, spec, targets)?),
        _ => None,
    };
    observer.run_finished(&Finished {
        summary: &report.summary,
        out: &report.out,
        emulator: emulator_settings.as_deref(),
        slo: judged.as_ref(),
    })?;
    let line = arbor_report::page::write_for_run(&report.out)?;
    observer.output(&line)?;
    let failed = failed_too_often(&report.summary, &report.out, failures, report.trip.as_ref());
    let slo_missed = judged
        .as_ref()
        .and_then(|j| crate::slo::miss(j, &report.out));
    Ok(Ran {
        out: report.out,
        stopped_by: report.stopped_by,
        client_failures: report.client_failures,
        failed,
        ready: report.ready,
        slo_missed,
    })
}

/// When the server failed the run: the circuit breaker stopped it
/// (`--abort-after`), none of its measured requests succeeded, or more
/// failed than `--max-error-rate` allows. Says what failed (the error
/// classes and counts, a failure's own words from the summary).
/// The run's files are written; its figures are no measurement.
fn failed_too_often(
    summary: &output::Summary,
    out: &Path,
    limits: FailureLimits,
    trip: Option<&Trip>,
) -> Option<String> {
    let counts = &summary.counts;
    let classes = || -> String {
        let classes: Vec<String> = summary
            .errors
            .iter()
            .map(|(class, n)| format!("{class} {n}"))
            .collect();
        if classes.is_empty() {
            format!("{} cancelled", counts.cancelled)
        } else {
            classes.join(", ")
        }
    };
    if let Some(trip) = trip {
        return Some(format!(
            "the run was {} ({} of {} measured requests failed: {}); the records are in {}",
            trip.words(),
            counts.failed,
            counts.dispatched,
            classes(),
            out.display()
        ));
    }
    let settled = counts.ok + counts.failed;
    if counts.dispatched == 0 {
        return None;
    }
    let share = if settled == 0 {
        0.0
    } else {
        counts.failed as f64 / settled as f64
    };
    let over = counts.ok == 0 || share > limits.max_error_rate;
    if !over {
        return None;
    }
    let first = first_failure(summary);
    if counts.ok == 0 {
        return Some(format!(
            "none of the {} measured requests succeeded ({}; the first: {first}): there is \
             nothing to report; the records are in {}",
            counts.dispatched,
            classes(),
            out.display()
        ));
    }
    Some(format!(
        "{} of {} measured requests failed ({:.1} %, over --max-error-rate {}; {}; the first: \
         {first}): the latencies describe only the {} that succeeded; the records are in {}",
        counts.failed,
        settled,
        share * 100.0,
        limits.max_error_rate,
        classes(),
        counts.ok,
        out.display()
    ))
}

/// A failure's own words, from the summary: the first failure of the
/// most frequent error class (`error_samples`), or the cancel's when only
/// cancelled requests failed.
fn first_failure(summary: &output::Summary) -> String {
    let most = summary.errors.iter().max_by_key(|(_, n)| **n);
    match most.and_then(|(class, _)| summary.error_samples.get(class)) {
        Some(sample) => arbor_runs::record::in_words(sample.http_status, &sample.message),
        None if summary.counts.cancelled > 0 => arbor_runs::record::CANCELLED_MESSAGE.to_string(),
        None => "no error recorded".to_string(),
    }
}

/// The run's end: `Stopped` (128 + the signal that stopped it);
/// `ClientFailed` when the client itself failed requests (the results
/// measure no server); else done.
fn exit_of(
    stopped_by: Option<StopSignal>,
    client: &ClientFailures,
    failed: Option<&str>,
    out: &Path,
    observer: &dyn Observer,
) -> Result<(), Error> {
    let client_words = (client.count > 0).then(|| {
        format!(
            "{} request{} failed in arbor itself, not at the server (error class `client`; the \
             first: {}): these results are not a measurement of the server. Raise the \
             file-descriptor limit (`ulimit -n`), or lower --sessions or --max-inflight",
            client.count,
            if client.count == 1 { "" } else { "s" },
            client.first.as_deref().unwrap_or("no message"),
        )
    });
    if let Some(signal) = stopped_by {
        if let Some(words) = &client_words {
            observer.notice(&format!("error: {words}"));
        }
        return Err(Error {
            kind: Kind::Stopped {
                signal: signal.number(),
            },
            message: format!(
                "stopped by {}; what ran is in {}",
                signal.spoken(),
                out.display()
            ),
        });
    }
    match (client_words, failed) {
        (Some(message), _) => Err(Error {
            kind: Kind::ClientFailed,
            message,
        }),
        (None, Some(why)) => Err(Error {
            kind: Kind::FailedTooOften,
            message: why.to_string(),
        }),
        (None, None) => Ok(()),
    }
}

/// Without a service, a run against the built-in emulator is planned
/// with the emulator's own timing (`fixed:TTFT:ITL`, the same formula),
/// so the planned duration and peak are what the run will do. Not when
/// the emulator has a prefill term: its TTFT then depends on cache hits,
/// which no service model knows.
fn plan_with_the_emulators_timing(args: &mut RunOptions, emulator: &EmulatorConfig) {
    let timing = &emulator.timing;
    if args.service.is_none() && timing.prefill_mtok_s.is_none() {
        args.service = Some(arbor_sim::service::Service::Model(
            arbor_sim::service::ServiceModel::Fixed {
                ttft: timing.ttft,
                itl: timing.itl,
            },
        ));
    }
}

/// The in-process emulator's options do nothing against a server of one's
/// own: refused (bad input), naming the ones given, so that a benchmark
/// never runs believing it injects faults or latency it does not.
fn refuse_emulator_options(args: &RunOptions) -> Result<(), Error> {
    let given = args.emulator.given();
    if given.is_empty() {
        return Ok(());
    }
    Err(Error::input(format!(
        "{} {} the built-in emulator's and {} no effect with --endpoint: drop {}, or drop \
         --endpoint to run against the built-in emulator",
        given.join(", "),
        if given.len() == 1 { "is" } else { "are" },
        if given.len() == 1 { "has" } else { "have" },
        if given.len() == 1 { "it" } else { "them" },
    )))
}

/// A prepared run of the compiled workload `compiled` again, under
/// `args` (a knob changed): what the live capacity probe runs, without
/// loading and compiling the workload again. With `checked` (the
/// pre-flight an earlier run of this workload passed) the pre-flight is
/// not asked again; the one the run passed is handed back, for the next.
pub fn run_compiled(
    settled: &Settled,
    args: &RunOptions,
    compiled: inputs::Compiled,
    checked: Option<preflight::Ready>,
    observer: &dyn Observer,
) -> Result<preflight::Ready, Error> {
    let mut prepared = prepare_compiled(
        args,
        compiled,
        settled.applied.clone(),
        settled.emulator.is_some(),
        observer,
    )?;
    let settled = Settled {
        args: args.clone(),
        slo: settled.slo.clone(),
        applied: settled.applied.clone(),
        emulator: settled.emulator.clone(),
        demo: settled.demo,
    };
    prepared.checked = checked;
    let ran = run_prepared(&settled, prepared, observer)?;
    ran.exit(observer)?;
    Ok(ran.ready)
}

/// Runs a prepared workload against `endpoint` (a base URL such as
/// `http://127.0.0.1:8000`, already normalized by
/// [`arbor_backends::endpoint::normalize_endpoint`]), writes `records.jsonl` and
/// `summary.json`, and returns the summary. Runs on the client's runtime
/// ([`runtime::client`]). A second stop signal during the grace ends it
/// early: the summary is then rebuilt from what was recorded (as `arbor
/// summarize` does).
pub async fn run_against(
    endpoint: &str,
    prepared: Prepared,
    observer: &dyn Observer,
) -> Result<RunReport, Error> {
    let Prepared {
        workload,
        mut scheduler,
        threads: thread_schedulers,
        planned,
        planned_load,
        planned_duration,
        requests,
        out,
        progress: show_progress,
        mut config,
        scenario,
        metrics,
        together,
        failures,
        checked,
        history,
        reuse,
    } = prepared;

    let tls = arbor_backends::endpoint::tls_config(endpoint, &requests.tls)?;
    // The replicas after the first (`--endpoint` repeated), each with its
    // TLS configuration (the first's when it has one).
    let mut more = Vec::with_capacity(requests.more_endpoints.len());
    for other in &requests.more_endpoints {
        let other_tls = match (&tls, other.starts_with("https://")) {
            (_, false) => None,
            (Some(t), true) => Some(Arc::clone(t)),
            (None, true) => arbor_backends::endpoint::tls_config(other, &requests.tls)?,
        };
        more.push((other.as_str(), other_tls));
    }
    let any_tls = tls
        .clone()
        .or_else(|| more.iter().find_map(|(_, t)| t.clone()));
    let client = http_client(any_tls.as_ref())?;
    let headers = requests.auth.header_map();
    let url = at(endpoint, requests.api.path());
    let target_at =
        |base: &str, tls: Option<Arc<ClientConfig>>, model: &str| -> Result<Target, Error> {
            let url = at(base, requests.api.path());
            let mut target = Target::new(&url, &headers, requests.timeout, requests.retries, tls)
                .map_err(|e| Error::other(e.replace(&url, &redact_url(&url))))?;
            target.api = requests.api;
            target.model = Some(Arc::from(model));
            target.retry_on = Arc::from(requests.retry_on.as_slice());
            target.routing = requests.routing.clone();
            target.replica_header = requests.replica_header.as_deref().map(Arc::from);
            Ok(target)
        };
    let new_target = |model: &str| target_at(endpoint, tls.clone(), model);
    // One target a further replica, each with its own pool.
    let more_targets = |model: &str| -> Result<Vec<Target>, Error> {
        more.iter()
            .map(|(base, tls)| target_at(base, tls.clone(), model))
            .collect()
    };
    // The pre-flight: a run that cannot measure what was asked is refused
    // here, in one message, before any measured request (once for a
    // workload run again against the same endpoint: `checked`).
    let ready = match checked {
        Some(ready) => ready,
        None => {
            let key_from = requests.auth.key_source();
            let ready = preflight::check(
                &client,
                &preflight::Ask {
                    endpoint,
                    api_path: requests.api.path(),
                    headers: &headers,
                    key_from: key_from.as_deref(),
                    key_env: arbor_backends::endpoint::default_api_key_env(requests.api),
                    model: requests.model.as_deref(),
                    workload: &workload,
                    cacert: requests.tls.cacert.as_deref(),
                    options: requests.preflight,
                },
            )
            .await
            .map_err(|why| {
                let of = if more.is_empty() {
                    String::new()
                } else {
                    format!(" of {}", redact_url(endpoint))
                };
                Error::other(format!("arbor run: pre-flight{of}: {why}"))
            })?;
            for notice in &ready.notices {
                observer.notice(notice);
            }
            // Every further replica is asked too, for the model the first
            // settled on; a failure names the replica.
            for (other, _) in &more {
                let key_from = requests.auth.key_source();
                let also = preflight::check(
                    &client,
                    &preflight::Ask {
                        endpoint: other,
                        api_path: requests.api.path(),
                        headers: &headers,
                        key_from: key_from.as_deref(),
                        key_env: arbor_backends::endpoint::default_api_key_env(requests.api),
                        model: Some(&ready.model),
                        workload: &workload,
                        cacert: requests.tls.cacert.as_deref(),
                        options: requests.preflight,
                    },
                )
                .await
                .map_err(|why| {
                    Error::other(format!(
                        "arbor run: pre-flight of {}: {why}",
                        redact_url(other)
                    ))
                })?;
                for notice in &also.notices {
                    observer.notice(&format!("{} ({})", notice, redact_url(other)));
                }
            }
            ready
        }
    };
    let target = new_target(&ready.model)?;
    let replicas = more_targets(&ready.model)?;
    if tls.is_some() {
        // A certificate the client refuses stops the run here, in plain
        // words, before any request (the connection stays pooled).
        target.handshake().await.map_err(|e| {
            arbor_backends::endpoint::connect_failure(endpoint, &e, requests.tls.cacert.as_deref())
        })?;
    }
    for ((other, other_tls), replica) in more.iter().zip(&replicas) {
        if other_tls.is_some() {
            replica.handshake().await.map_err(|e| {
                arbor_backends::endpoint::connect_failure(other, &e, requests.tls.cacert.as_deref())
            })?;
        }
    }
    let (model, model_from) = (ready.model.clone(), ready.model_from);
    let warm = (planned.peak_inflight as usize).clamp(1, MAX_WARM_CONNECTIONS);
    // With threads, each warms its share of the connections in its pool.
    let thread_count = thread_schedulers.len().max(1);
    let warm = warm.div_ceil(thread_count);
    config::set_endpoint(
        &mut config,
        endpoint,
        &url,
        &model,
        model_from,
        warm * thread_count,
    );
    config::set_routing(&mut config, endpoint, &requests);
    // Several endpoints: the placement's shared load, and each loop's
    // targets (`stream`: its random stream).
    let load = arbor_backends::live::placement::Load::new(replicas.len() + 1);
    let seed = scheduler.policy().seed;
    let replicas_of = |more: Vec<Target>, stream: u64| {
        (!requests.more_endpoints.is_empty()).then(|| live::Replicas {
            more,
            more_base_urls: requests.more_endpoints.clone(),
            placement: requests.placement,
            load: Arc::clone(&load),
            seed,
            stream,
        })
    };
    let wanted = scrape::Wanted {
        none: metrics.no_metrics,
        url: metrics.metrics_url.clone(),
        interval: metrics.metrics_interval,
        all: metrics.metrics_all,
    };
    let endpoints: Vec<&str> = std::iter::once(endpoint)
        .chain(requests.more_endpoints.iter().map(String::as_str))
        .collect();
    let (metrics, notices) = scrape::choose_replicas(&wanted, &endpoints, &headers, &client).await;
    for notice in &notices {
        observer.notice(notice);
    }
    config.metrics = scrape::config_of(&metrics);
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
        cache_bust: requests.markers(scheduler.policy().seed),
        history,
        reuse: reuse.clone(),
        replicas: replicas_of(replicas, 0),
    };

    // Meet the other shards (`--start-at`, the barrier) once everything
    // but the pool is ready; until the start a signal ends the process.
    let met = barrier::meet(&together, observer)?;
    // The threads (with `--threads` above 1): each its own target and pool.
    let mut crew = if thread_schedulers.is_empty() {
        None
    } else {
        let configs = thread_schedulers
            .iter()
            .enumerate()
            .map(|(j, _)| {
                let model = &live_config.body.model;
                Ok(LiveConfig {
                    target: new_target(model)?,
                    replicas: replicas_of(more_targets(model)?, j as u64),
                    ..live_config.clone()
                })
            })
            .collect::<Result<Vec<_>, Error>>()?;
        Some(threads::Crew::spawn(thread_schedulers, &workload, configs)?)
    };
    // From here on SIGINT, SIGTERM and SIGHUP stop the run instead of
    // ending the process (one heard before the clock starts stops the run
    // as soon as it starts).
    let mut signals = Signals::install()?;
    let claim = out.create()?;
    let out_dir = claim.path.clone();
    // A --force run leaves no end or summary of an earlier run behind: a
    // run killed now must not be read with another run's end.
    for stale in [journal::END_FILE, output::SUMMARY_FILE, METRICS_FILE] {
        remove_stale(&out_dir.join(stale))?;
    }
    // How the trees' agents relate, for whoever draws the run (before the
    // clock starts: nothing on the request path).
    arbor_runs::shape::write(&out_dir, scheduler.trees(), &workload.trees)?;
    // The plan's in-flight series, for the report to draw against.
    journal::write_json(
        &out_dir,
        arbor_report::page::planned::PLANNED_FILE,
        &planned_load,
    )?;
    let proven = match &mut crew {
        None => live::warm_pool(&live_config).await,
        Some(crew) => crew.ready().await?,
    };
    config.warm_connections_proven = proven;
    if proven < config.warm_connections {
        observer.notice(&format!(
            "arbor run: warmed {proven} of {} connections: the server refused, closed or did \
             not fully answer GET /v1/models on the rest; requests open what they need during \
             the run, inside their own time",
            config.warm_connections
        ));
    }
    if let Some(met) = met {
        config.barrier = Some(met.wait()?);
    }

    let grace = nanos_to_secs(scheduler.policy().grace);
    let started_at = output::utc_stamps(std::time::SystemTime::now()).1;
    let start = RunStart::new(
        &scheduler,
        scenario.as_ref(),
        started_at,
        workload.trees.len() as u64,
        planned,
        config,
    );
    let start = journal::write_json(&out_dir, journal::RUN_FILE, &start)?;
    // Warmups are recorded but measured nowhere; measurement starts at the
    // profiling start (0 without a start window).
    let collector = Collector::with_warmups(start.warmups.clone(), start.window_start_ns)
        .with_tree_turns(start.tree_turns.clone());
    // The circuit breaker stops the run as a signal does (the grace, then
    // the end), once.
    let stop = Arc::new(tokio::sync::Notify::new());
    let records = RecordsFile::create(&out_dir, collector)?.with_breaker(
        Breaker::new(failures.abort_after),
        {
            let stop = Arc::clone(&stop);
            move || stop.notify_one()
        },
    );
    // One thread writes to the file; several share it.
    let (mut sink, shared) = match crew {
        None => (Some(records), None),
        Some(_) => (None, Some(Arc::new(Mutex::new(records)))),
    };
    // The scraper takes its first scrape and starts its clock; the
    // driver's clock starts a few microseconds later, so a scrape is never
    // stamped earlier than it happened on the run's clock.
    let scraper = match metrics.is_empty() {
        false => Some(Scraper::start_all(
            metrics,
            http_client(any_tls.as_ref())?,
            &out_dir,
        )?),
        true => None,
    };
    let progress = Arc::new(Progress::default());
    if show_progress {
        observer.clock_started(&Clock {
            progress: Arc::clone(&progress),
            duration: scheduler.policy().duration,
            dispatched: start.planned.dispatched,
            planned: planned_duration,
            records: out_dir.join(output::RECORDS_FILE),
            run: start.clone(),
        });
    }
    let stopped_by: OnceLock<StopSignal> = OnceLock::new();
    let ended = {
        let driven = async {
            match (&mut crew, &mut sink, &shared) {
                (Some(crew), _, Some(records)) => {
                    let go = threads::Go {
                        epoch: Instant::now(),
                        records: Arc::clone(records),
                        progress: Arc::clone(&progress),
                        numbering: Arc::default(),
                    };
                    Driven::Threads(crew.run(go, stop.notified()).await)
                }
                (_, Some(sink), _) => Driven::One(
                    live::run(
                        &mut scheduler,
                        Arc::clone(&workload),
                        &live_config,
                        sink,
                        &progress,
                        stop.notified(),
                    )
                    .await,
                ),
                _ => Driven::Threads(Err(Error::other("no records file"))),
            }
        };
        let listen = async {
            let first = signals.next().await;
            let _ = stopped_by.set(first);
            observer.notice(&format!(
                "\narbor run: {}: stopping: no new requests; requests in flight get up to \
                 {grace} s (--grace); a second signal writes the summary from what was recorded \
                 and quits",
                first.spoken()
            ));
            stop.notify_one();
            signals.next().await
        };
        tokio::select! {
            biased;
            result = driven => Ended::Finished(result),
            second = listen => Ended::Abandoned(second),
        }
    };
    if show_progress {
        observer.clock_stopped();
    }
    if let Some(Err(e)) = scraper.map(Scraper::finish) {
        observer.notice(&format!(
            "warning: {}: {e} (server metrics stopped there; the run went on)",
            out_dir.join(METRICS_FILE).display()
        ));
    }
    if let Some(crew) = crew {
        crew.join();
    }
    let records = match (sink, shared) {
        (Some(records), _) => records,
        (None, Some(shared)) => threads::records_back(shared)?,
        (None, None) => return Err(Error::other("no records file")),
    };
    let written = records.finish().map_err(|e| {
        Error::other(format!(
            "{}: cannot write: {e}",
            out_dir.join(output::RECORDS_FILE).display()
        ))
    });
    let first = stopped_by.get().copied();
    let result = match ended {
        Ended::Finished(result) => result,
        Ended::Abandoned(second) => {
            written?;
            return abandoned(&out_dir, first.unwrap_or(second), second);
        }
    };
    let stopped = |e: live::LiveError| {
        Error::other(format!(
            "the run stopped: {e} (records so far are in {dir}; `arbor summarize {dir}` sums \
             them up)",
            dir = out_dir.display()
        ))
    };
    let Written {
        collector,
        client_failures,
        trip,
    } = written?;
    if let Some(trip) = &trip {
        observer.notice(&format!("\narbor run: {}", trip.words()));
    }
    let stopped_by = first
        .map(StopSignal::name)
        .or(trip.as_ref().map(|_| ABORT_AFTER));
    let run_end = match result {
        Driven::One(result) => {
            let outcome: RunOutcome = result.map_err(stopped)?;
            RunEnd::new(&outcome.driven(), &scheduler, stopped_by)
        }
        Driven::Threads(finished) => threads::end(finished?, stopped_by).map_err(stopped)?,
    };
    let end = journal::write_json(&out_dir, journal::END_FILE, &run_end)?;
    let summary = output::Summary::build(
        &start,
        &end,
        collector.finish(),
        ServerMetrics::of_run_dir(&out_dir)?,
        Completeness {
            complete: true,
            notes: trip.iter().map(Trip::words).collect(),
        },
    );
    journal::write_atomic(&out_dir, output::SUMMARY_FILE, &summary.to_bytes()?)?;
    Ok(RunReport {
        summary,
        out: out_dir,
        stopped_by: first,
        client_failures,
        trip,
        ready,
        _claim: claim,
    })
}

/// What drove the run: one loop on this thread, or the threads'.
enum Driven {
    One(Result<RunOutcome, live::LiveError>),
    Threads(Result<Vec<threads::Finished>, Error>),
}

/// How the driver's loop ended.
enum Ended<T> {
    /// It returned (at its end, or after a stop signal and the grace).
    Finished(T),
    /// A second signal came during the grace: the loop was dropped, with
    /// the requests still in flight.
    Abandoned(StopSignal),
}

/// A second signal during the grace: `summary.json` is rebuilt from what
/// was recorded (as `arbor summarize` does, `"complete": false`), and the
/// run exits with the first signal's code.
fn abandoned(out_dir: &Path, first: StopSignal, second: StopSignal) -> Result<RunReport, Error> {
    let quit = |how: String| Error {
        kind: Kind::Stopped {
            signal: first.number(),
        },
        message: format!(
            "stopped by {}, then quit by a second {} during the grace: {how}",
            first.spoken(),
            second.name()
        ),
    };
    let mut summary = match arbor_runs::summarize::rebuild(out_dir) {
        Ok(rebuilt) => rebuilt.summary,
        Err(e) => {
            return Err(quit(format!(
                "the summary could not be rebuilt ({}); records.jsonl holds every request that \
                 finished",
                e.message
            )))
        }
    };
    summary.cancelled = true;
    summary.stopped_by = Some(first.name().to_string());
    summary.notes.push(format!(
        "stopped by {}, then a second {} during the grace: requests still in flight were \
         abandoned and have no record",
        first.name(),
        second.name()
    ));
    let bytes = summary.to_bytes()?;
    journal::write_atomic(out_dir, output::SUMMARY_FILE, &bytes)?;
    Err(quit(format!(
        "requests in flight were abandoned; {} was written from the {} records in {} \
         (\"complete\": false)",
        output::SUMMARY_FILE,
        output::RECORDS_FILE,
        out_dir.display()
    )))
}

/// The client of everything but the requests: model discovery and the
/// server-metrics probe, and (one of its own) the scraper's thread.
fn http_client(tls: Option<&Arc<ClientConfig>>) -> Result<reqwest::Client, Error> {
    arbor_backends::endpoint::reqwest_builder(tls)
        .pool_max_idle_per_host(usize::MAX)
        .build()
        .map_err(|e| Error::other(format!("cannot build the HTTP client: {e}")))
}

/// Removes a file left by an earlier run, if there is one.
fn remove_stale(path: &std::path::Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::other(format!(
            "{}: cannot remove the earlier run's file: {e}",
            path.display()
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_exit_code_and_client_failures_exit_3() {
        let out = Path::new("arbor-results/x");
        let none = ClientFailures::default();
        assert!(exit_of(None, &none, None, out, &crate::Quiet).is_ok());
        let failed = ClientFailures {
            count: 7,
            first: Some("connect: Too many open files (os error 24)".into()),
        };
        let failure = exit_of(None, &failed, None, out, &crate::Quiet)
            .err()
            .unwrap();
        assert_eq!(failure.kind, Kind::ClientFailed);
        for words in [
            "7 requests failed in arbor itself",
            "Too many open files",
            "ulimit -n",
        ] {
            assert!(
                failure.message.contains(words),
                "{words}: {}",
                failure.message
            );
        }
        let failure = exit_of(Some(StopSignal::Term), &failed, None, out, &crate::Quiet)
            .err()
            .unwrap();
        assert_eq!(failure.kind, Kind::Stopped { signal: 15 });
        assert!(
            failure.message.contains("stopped by SIGTERM"),
            "{}",
            failure.message
        );
        let failure = exit_of(Some(StopSignal::Hup), &none, None, out, &crate::Quiet)
            .err()
            .unwrap();
        assert_eq!(failure.kind, Kind::Stopped { signal: 1 });
    }
}
