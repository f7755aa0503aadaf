//! A run ready to go, whatever the endpoint: the options checked, the
//! workload loaded and compiled, the planned side run on the virtual clock,
//! the request options built and the output directory checked. Touches no
//! network.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arbor_engine::scheduler::Scheduler;
use arbor_engine::time::Nanos;
use arbor_engine::Workload;

use crate::options::{FailureLimits, MetricsOptions, RunOptions};
use crate::{inputs, Observer};
use arbor_backends::endpoint::{Auth, RequestOptions};
use arbor_backends::reuse::ReusePlan;
use arbor_error::Error;
use arbor_report::page::planned::PlannedLoad;
use arbor_report::plan::describe_fit;
use arbor_runs::identity;
use arbor_runs::recipe::Applied;
use arbor_runs::sharding::ShardConfig;

use super::threads;
use arbor_runs::config::RunConfig;
use arbor_runs::journal::Planned;
use arbor_runs::output::{self, OutputDir};

/// A run ready to go, whatever the endpoint.
pub struct Prepared {
    pub workload: Arc<Workload>,
    pub scheduler: Scheduler,
    /// With `--threads N` above 1: one scheduler a thread, each over its
    /// stripe (`scheduler` then only describes the whole); empty
    /// otherwise.
    pub threads: Vec<Scheduler>,
    pub planned: Planned,
    /// The plan's requests in flight over time (`planned.json`).
    pub planned_load: PlannedLoad,
    /// The plan's makespan on the virtual clock (the planned duration).
    pub planned_duration: Nanos,
    pub requests: RequestOptions,
    pub out: OutputDir,
    pub progress: bool,
    /// What produced the run, for `summary.json` (endpoint and model are
    /// filled in once the endpoint is known).
    pub config: RunConfig,
    /// The recipe (`--scenario`), if any.
    pub scenario: Option<Applied>,
    /// What to scrape of the server's own metrics.
    pub metrics: MetricsOptions,
    /// When the clock starts: `--start-at`, the barrier, or when ready.
    pub together: super::barrier::Together,
    /// What failures stop the run or fail it.
    pub failures: FailureLimits,
    /// The pre-flight this workload already passed against this endpoint
    /// (a capacity search's later probes: [`super::run_compiled`]): not
    /// asked again. `None`: the run asks it.
    pub checked: Option<arbor_backends::preflight::Ready>,
    /// Where a next turn's history comes from (`--history`).
    pub history: crate::options::History,
    /// The plan's prefix reuse of every request (best possible, and the
    /// server model's prediction with `--service server:`), put into the
    /// records as they are written.
    pub reuse: Option<Arc<ReusePlan>>,
}

/// Checks every flag, loads and compiles the workload, plans it on the
/// virtual clock and checks the output directory. Touches no network.
pub fn prepare(
    args: &RunOptions,
    scenario: Option<Applied>,
    emulator_in_process: bool,
    observer: &dyn Observer,
) -> Result<Prepared, Error> {
    // The run directory named once (a default name holds the time).
    let mut args = args.clone();
    args.out = Some(args.out.clone().unwrap_or_else(|| default_out(&args)));
    let args = &args;
    // Refused before anything is loaded, in this order: the request
    // options, the policy, the start barrier's flags, the output directory.
    request_options(args)?;
    inputs::policy(&args.policy, &args.scenario)?;
    super::barrier::Together::of(&args.start, args.policy.shard)?;
    OutputDir::check(args.out.clone().unwrap_or_default(), args.force)?;
    let compiled = compile(args, scenario.is_some(), observer)?;
    prepare_compiled(args, compiled, scenario, emulator_in_process, observer)
}

/// The workload of `args` loaded and compiled under its policy (a
/// recipe's lanes given enough copies).
pub fn compile(
    args: &RunOptions,
    recipe: bool,
    observer: &dyn Observer,
) -> Result<inputs::Compiled, Error> {
    let policy = inputs::policy(&args.policy, &args.scenario)?;
    let options = inputs::derive_options(&args.input);
    inputs::compile(&args.input, policy, &options, recipe, observer)
}

/// [`prepare`] of a workload already compiled (under `args`' policy, or
/// one a caller changed, such as a capacity probe's load).
pub fn prepare_compiled(
    args: &RunOptions,
    compiled: inputs::Compiled,
    scenario: Option<Applied>,
    emulator_in_process: bool,
    observer: &dyn Observer,
) -> Result<Prepared, Error> {
    let mut requests = request_options(args)?;
    // The recipe always busts the cache.
    requests.cache_bust |= scenario.is_some();
    // ... and locks the prompts: no `--max-context` advice.
    requests.preflight.fit_locked = scenario.is_some();
    let options = inputs::derive_options(&args.input);
    let out = OutputDir::check(
        args.out.clone().unwrap_or_else(|| default_out(args)),
        args.force,
    )?;
    let policy_seed = compiled.policy.seed;
    let mut plan = compiled.schedule()?;
    let prompts = arbor_backends::virtual_clock::Prompts {
        workload: &compiled.loaded.workload,
        cache_bust: requests.markers(policy_seed),
        keys: None,
    };
    let service = args.service();
    let server = crate::plan::run_service(&mut plan, &service, prompts, "engine (planning)")?;
    // Before the clock starts: the records only look their figures up.
    let reuse = crate::reuse::plan(&plan, prompts, server.as_ref())
        .inspect_err(|too_large| observer.notice(&format!("arbor run: {too_large}")))
        .ok();
    let stats = plan.stats();
    let planned = Planned {
        service: service.to_string(),
        peak_inflight: stats.peak_inflight,
        peak_inflight_at_s: arbor_engine::time::nanos_to_secs(stats.peak_inflight_at),
        dispatched: stats.dispatched,
        time_breakdown: Some(arbor_runs::time_breakdown::TimeBreakdown::from(
            &arbor_engine::breakdown::breakdown(&plan),
        )),
    };
    let planned_duration = plan.slots().iter().map(|s| s.end).max().unwrap_or(0);
    let planned_load = PlannedLoad::of(&plan, &planned.service);
    let thread_count = threads::count(
        args.threads,
        &compiled.policy,
        emulator_in_process,
        threads::items(&plan),
        observer,
    )?;
    drop(plan);
    let thread_schedulers =
        threads::schedulers(&compiled.compiled, &compiled.policy, thread_count)?;

    let mut config = super::config::new(
        args,
        &compiled.loaded.description,
        &compiled.policy,
        options.overlap_tolerance,
        &planned.service,
        &requests,
        out.path(),
    );
    config.fit = compiled.loaded.fit;
    config.subset = compiled.loaded.subset.clone();
    config.threads = thread_count;
    config.corpus = compiled.loaded.corpus.clone();
    if let Some(fit) = &config.fit {
        observer.notice(&format!("arbor run: {}", describe_fit(fit)));
    }
    let inputs::Compiled {
        loaded,
        policy,
        compiled,
    } = compiled;
    let scheduler = inputs::scheduler(compiled, policy)?;
    config.shard = ShardConfig::of(scheduler.policy(), scheduler.trees());
    config.workload_hash = Some(identity::workload_hash(scheduler.trees()));
    config.policy_hash = Some(identity::policy_hash(scheduler.policy()));
    Ok(Prepared {
        workload: Arc::new(loaded.workload),
        scheduler,
        threads: thread_schedulers,
        planned,
        planned_load,
        planned_duration,
        requests,
        out,
        progress: args.progress,
        config,
        scenario,
        metrics: args.metrics.clone(),
        together: super::barrier::Together::of(&args.start, args.policy.shard)?,
        failures: args.request.failures,
        checked: None,
        history: args.input.history,
        reuse: reuse.map(Arc::new),
    })
}

fn request_options(args: &RunOptions) -> Result<RequestOptions, Error> {
    let r = &args.request;
    let messages = r.api == arbor_backends::live::request::Api::Messages;
    if r.session_routing == arbor_backends::live::routing::SessionRouting::User
        && arbor_backends::live::routing::extra_body_sets_user(messages, r.extra_body.as_ref())
    {
        return Err(Error::input(format!(
            "--session-routing user sets the body's `{}` and --extra-body sets it too: drop one",
            if messages { "metadata" } else { "user" }
        )));
    }
    if !r.more_endpoints.is_empty() && r.endpoint.is_none() {
        return Err(Error::input(
            "several endpoints need the first --endpoint too".to_string(),
        ));
    }
    Ok(RequestOptions {
        model: r.model.clone().filter(|m| !m.is_empty()),
        api: r.api,
        max_tokens_field: r.max_tokens_field,
        ignore_eos: r.ignore_eos,
        extra_body: r.extra_body.clone(),
        auth: Auth::from_flags(
            &r.headers,
            r.access.api_key_env.as_deref(),
            r.access.api_key_file.as_deref(),
            r.api,
        )?,
        tls: r.access.tls(),
        timeout: Duration::from_nanos(r.timeout),
        retries: r.retries,
        retry_on: r.retry_on.clone(),
        cache_bust: r.cache_bust,
        cache_bust_salt: r.cache_bust_salt,
        preflight: r.preflight,
        routing: r.session_routing.clone(),
        more_endpoints: r.more_endpoints.clone(),
        placement: r.placement,
        replica_header: r.replica_header.as_ref().map(|h| h.to_ascii_lowercase()),
    })
}

/// `arbor-results/<UTC YYYYmmdd-HHMMSS.mmm>-<name>-<pid>`: `<name>` is
/// the first input's file stem (`stdin` for `-`), `synthetic`, or `sample`. Sorted by name,
/// the directories are sorted by start time; the milliseconds and the pid
/// keep two runs started together apart (and the directory's lock
/// refuses a second writer anyway).
pub fn default_out(args: &RunOptions) -> PathBuf {
    let name = match args.input.inputs.first() {
        Some(path) => stem(path),
        None if args.input.synthetic.is_some() => "synthetic".to_string(),
        None => "sample".to_string(),
    };
    PathBuf::from("arbor-results").join(default_name(
        std::time::SystemTime::now(),
        &name,
        std::process::id(),
    ))
}

fn default_name(now: std::time::SystemTime, name: &str, pid: u32) -> String {
    let (compact, _) = output::utc_stamps(now);
    let millis = now
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_millis());
    format!("{compact}.{millis:03}-{name}-{pid}")
}

fn stem(path: &std::path::Path) -> String {
    if path == std::path::Path::new(arbor_formats::load::STDIN) {
        return "stdin".to_string();
    }
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
    use std::path::Path;

    #[test]
    fn default_names_come_from_the_first_input() {
        assert_eq!(stem(Path::new("a/trace_0187.json")), "trace_0187");
        assert_eq!(
            stem(Path::new("testdata/weka-kv-cache-tester")),
            "weka-kv-cache-tester"
        );
        assert_eq!(stem(Path::new("a b.json")), "a_b");
        assert_eq!(stem(Path::new("-")), "stdin");
    }

    #[test]
    fn default_names_sort_by_time_and_differ_by_pid() {
        let at = |ms| std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(ms);
        assert_eq!(
            default_name(at(1_709_214_307_042), "sample", 77),
            "20240229-134507.042-sample-77"
        );
        assert!(
            default_name(at(1_709_214_307_042), "x", 9)
                < default_name(at(1_709_214_307_043), "x", 1)
        );
        assert_ne!(default_name(at(5), "x", 1), default_name(at(5), "x", 2));
    }
}
