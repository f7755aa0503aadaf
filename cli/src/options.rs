//! The flags, converted into the library's typed options
//! (`arbor::options`), field for field. The one place that reads which
//! flags the user gave: a flag whose option a recipe locks becomes
//! `Some` only when it came from the command line or the environment
//! (clap's value source), so an explicit `--grace 30` and the default 30
//! stay apart. Owns no rule of what the options mean.

use std::collections::BTreeSet;

use arbor::capacity::CapacityOptions;
use arbor::options::{
    AccessOptions, EmulateOptions, EmulatorOptions, FitOptions, InputOptions, IntervalOptions,
    MetricsOptions, PlanOptions, PolicyOptions, RequestOptions, RunOptions, ScenarioOptions,
    StartOptions, SubsetOptions,
};
use arbor::options::{FailureLimits, Preflight};
use arbor::sim::emulator::EmulatorFlags;
use clap::parser::ValueSource;
use clap::ArgMatches;

use crate::terminal::Ui;

use crate::args::{
    AccessArgs, CapacityArgs, EmulateArgs, EmulatorArgs, FitArgs, InputArgs, MetricsArgs, PlanArgs,
    PolicyArgs, RequestArgs, RunArgs, ScenarioArgs, StartArgs, SubsetArgs,
};

/// The argument ids the user gave (on the command line or in the
/// environment), as opposed to defaults.
#[derive(Debug, Clone, Default)]
pub struct Given(BTreeSet<String>);

impl Given {
    /// The given arguments of the subcommand in `matches`.
    pub fn of_subcommand(matches: &ArgMatches) -> Given {
        matches
            .subcommand()
            .map_or_else(Given::default, |(_, m)| Given::of(m))
    }

    pub fn of(matches: &ArgMatches) -> Given {
        Given(
            matches
                .ids()
                .filter(|id| {
                    matches!(
                        matches.value_source(id.as_str()),
                        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                    )
                })
                .map(|id| id.as_str().to_string())
                .collect(),
        )
    }

    /// `value` when the flag `id` was given.
    fn pick<T: Clone>(&self, id: &str, value: &T) -> Option<T> {
        self.0.contains(id).then(|| value.clone())
    }
}

/// The input options; `seed` is `--seed`, which draws the `--trees`
/// sample.
pub fn input(a: &InputArgs, seed: u64) -> InputOptions {
    InputOptions {
        inputs: a.inputs.clone(),
        format: a.format,
        tokenizer: a.tokenizer.clone(),
        flatten_tools: a.flatten_tools,
        history: a.history,
        synthetic: a.synthetic.clone(),
        overlap_tolerance: a.overlap_tolerance,
        fit: fit(&a.fit),
        subset: subset(&a.subset, seed),
    }
}

/// The part of the corpus to take; `seed` draws the `--trees` sample.
pub fn subset(a: &SubsetArgs, seed: u64) -> SubsetOptions {
    SubsetOptions {
        trees: a.sample,
        names: a.names.clone(),
        max_requests: a.max_requests,
        seed,
    }
}

pub fn fit(a: &FitArgs) -> FitOptions {
    FitOptions {
        isl_scale: a.isl_scale,
        max_context: a.max_context,
    }
}

pub fn policy(a: &PolicyArgs, given: &Given) -> PolicyOptions {
    PolicyOptions {
        tool_time: given.pick("tool_time", &a.tool_time),
        think_time_pct: a.think_time_pct,
        other_time: given.pick("other_time", &a.other_time),
        spawn_time: given.pick("spawn_time", &a.spawn_time),
        join_time: given.pick("join_time", &a.join_time),
        gap_scale: given.pick("gap_scale", &a.gap_scale),
        idle_gap_cap: a.idle_gap_cap,
        tree_idle_cap: a.tree_idle_cap,
        arrival: given.pick("arrival", &a.arrival),
        copies: given.pick("copies", &a.copies),
        stagger: given.pick("stagger", &a.stagger),
        max_inflight: a.max_inflight,
        sessions: a.sessions,
        loop_lanes: a.loop_lanes,
        duration: a.duration,
        grace: given.pick("grace", &a.grace),
        seed: given.pick("seed", &a.seed),
        shard: a.shard,
    }
}

pub fn scenario(a: &ScenarioArgs) -> ScenarioOptions {
    ScenarioOptions {
        scenario: a.scenario.clone(),
        unsafe_override: a.unsafe_override,
        start_window: a.start_window,
        warmup_spread: a.warmup_spread,
        warmup_requests_per_lane: a.warmup_requests_per_lane,
        cache_warmup_duration: a.cache_warmup_duration,
    }
}

pub fn access(a: &AccessArgs) -> AccessOptions {
    AccessOptions {
        cacert: a.cacert.clone(),
        insecure: a.insecure,
        api_key_env: a.api_key_env.clone(),
        api_key_file: a.api_key_file.clone(),
    }
}

fn request(a: &RequestArgs) -> RequestOptions {
    RequestOptions {
        endpoint: a.endpoint.first().cloned(),
        more_endpoints: a.endpoint.iter().skip(1).cloned().collect(),
        session_routing: a.routing.session_routing.clone(),
        placement: a.routing.placement,
        replica_header: a.routing.replica_header.clone(),
        model: a.model.clone(),
        api: a.api,
        max_tokens_field: a.max_tokens_field,
        ignore_eos: a.ignore_eos,
        extra_body: a.extra_body.clone(),
        headers: a.headers.clone(),
        access: access(&a.access),
        timeout: a.timeout,
        retries: a.retries,
        retry_on: a.retry_on.clone().map(|s| s.0).unwrap_or_default(),
        cache_bust: a.cache_bust,
        cache_bust_salt: a.cache_bust_salt,
        preflight: Preflight {
            ready_timeout: std::time::Duration::from_nanos(a.ready_timeout),
            allow_unlisted_model: a.allow_unlisted_model,
            allow_overflow: a.allow_overflow,
            fit_locked: false,
        },
        failures: FailureLimits {
            abort_after: a.abort_after,
            max_error_rate: a.max_error_rate,
        },
    }
}

fn metrics(a: &MetricsArgs) -> MetricsOptions {
    MetricsOptions {
        metrics_url: a.metrics_url.clone(),
        no_metrics: a.no_metrics,
        metrics_interval: a.metrics_interval,
        metrics_all: a.metrics_all,
    }
}

fn start(a: &StartArgs) -> StartOptions {
    StartOptions {
        start_at: a.start_at,
        barrier_listen: a.barrier_listen,
        barrier_size: a.barrier_size,
        barrier: a.barrier.clone(),
        barrier_timeout: a.barrier_timeout,
        barrier_token_file: a.barrier_token_file.clone(),
    }
}

fn emulator(a: &EmulatorArgs) -> EmulatorOptions {
    EmulatorOptions {
        profile: a.profile.clone(),
        flags: EmulatorFlags {
            ttft_ms: a.ttft_ms,
            itl_ms: a.itl_ms,
            prefill_tok_s: a.prefill_tok_s,
            decode_tok_s: a.decode_tok_s,
            max_model_len: a.max_model_len,
            model_name: a.model_name.clone(),
            cache_blocks: a.cache_blocks,
            fail_rate: a.fail_rate,
            fail_status: a.fail_status,
            retry_after_s: a.retry_after_s,
            disconnect_rate: a.disconnect_rate,
            disconnect_after: a.disconnect_after,
            stall_rate: a.stall_rate,
            stall_s: a.stall_s,
            malformed_rate: a.malformed_rate,
            eos_after: a.eos_after,
            answer_as: a.answer_as.clone(),
            seed: None,
        },
    }
}

pub fn run(a: &RunArgs, given: &Given) -> RunOptions {
    RunOptions {
        input: input(&a.input, a.policy.seed),
        policy: policy(&a.policy, given),
        service: given.pick("service", &a.service),
        threads: a.threads,
        request: request(&a.request),
        metrics: metrics(&a.metrics),
        out: a.out.clone(),
        force: a.force,
        // `Ui::resolve` gives `none` only when asked to.
        progress: !a.no_progress && a.ui != Some(Ui::None),
        repeat: a.repeat,
        repeat_of: None,
        scenario: scenario(&a.scenario),
        start: start(&a.start),
        emulator: emulator(&a.emulator),
        // `arbor run --slo` only ([`crate::args::RunCommand`]).
        slo: None,
    }
}

pub fn plan(a: &PlanArgs, given: &Given) -> PlanOptions {
    PlanOptions {
        input: input(&a.input, a.policy.seed),
        policy: policy(&a.policy, given),
        service: given.pick("service", &a.service),
        timeline: a.timeline.clone(),
        report: a.report.clone(),
        scenario: scenario(&a.scenario),
        intervals: IntervalOptions {
            level: a
                .intervals
                .map_or(IntervalOptions::default().level, |l| l.0),
            draws: a.interval_draws.map(|n| n as usize),
        },
    }
}

pub fn emulate(a: &EmulateArgs) -> EmulateOptions {
    EmulateOptions {
        port: a.port,
        seed: a.seed,
        busy_poll: a.busy_poll,
        tokenizer: a.tokenizer.clone(),
        tls_cert: a.tls_cert.clone(),
        tls_key: a.tls_key.clone(),
        tls_self_signed: a.tls_self_signed,
        tls_cert_out: a.tls_cert_out.clone(),
        emulator: emulator(&a.emulator),
        replicas: a.replicas.unwrap_or(1),
        router: a.router.clone(),
    }
}

pub fn capacity(a: &CapacityArgs, given: &Given) -> CapacityOptions {
    CapacityOptions {
        slo: a.slo.clone(),
        search: a.search.clone(),
        step: a.step.clone(),
        sweep: a.sweep,
        live: a.live,
        min_requests: a.min_requests,
        max_extensions: a.max_extensions,
        no_confirm: a.no_confirm,
        run: run(&a.run, given),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Cli;
    use arbor::options::defaults;
    use clap::{CommandFactory, FromArgMatches};

    fn parsed(args: &[&str]) -> (RunArgs, Given) {
        let matches = Cli::command()
            .try_get_matches_from(args.iter().copied())
            .unwrap();
        let Cli { command } = Cli::from_arg_matches(&matches).unwrap();
        let crate::args::Command::Run(run) = command else {
            panic!("not run")
        };
        (run.run, Given::of_subcommand(&matches))
    }

    /// The help shows clap's defaults; the library applies its own to
    /// what was not given: they must be the same values.
    #[test]
    fn the_flags_defaults_are_the_librarys() {
        let (a, given) = parsed(&["arbor", "run"]);
        let o = run(&a, &given);
        let p = &o.policy;
        assert_eq!(p.tool_time, None);
        assert_eq!(p.tool_time(), a.policy.tool_time);
        assert_eq!(p.other_time(), a.policy.other_time);
        assert_eq!(p.spawn_time(), a.policy.spawn_time);
        assert_eq!(p.join_time(), a.policy.join_time);
        assert_eq!(p.gap_scale(), a.policy.gap_scale);
        assert_eq!(p.arrival(), a.policy.arrival);
        assert_eq!(p.copies(), a.policy.copies);
        assert_eq!(p.stagger(), a.policy.stagger);
        assert_eq!(p.grace(), a.policy.grace);
        assert_eq!(p.seed(), a.policy.seed);
        assert_eq!(o.service(), a.service);
        assert_eq!(a.input.overlap_tolerance, defaults::OVERLAP_TOLERANCE);
        assert_eq!(a.scenario.warmup_spread, defaults::WARMUP_SPREAD);
        assert_eq!(a.request.timeout, defaults::TIMEOUT);
        assert_eq!(a.start.barrier_timeout, defaults::BARRIER_TIMEOUT);
        assert_eq!(a.metrics.metrics_interval, defaults::METRICS_INTERVAL);
        let d = RunOptions::default();
        assert_eq!(d.request.api, a.request.api);
        assert_eq!(d.request.max_tokens_field, a.request.max_tokens_field);
    }

    #[test]
    fn a_flag_given_at_its_default_is_given() {
        let (a, given) = parsed(&["arbor", "run", "--grace", "30", "--seed", "0"]);
        let o = run(&a, &given);
        assert_eq!(o.policy.grace, Some(defaults::GRACE));
        assert_eq!(o.policy.seed, Some(0));
        assert_eq!(o.policy.copies, None);
    }
}
