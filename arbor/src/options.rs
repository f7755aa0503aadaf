//! The typed options of the use cases: what a caller (the CLI, a Rust
//! program, a binding) says it wants, as plain data. No parsing here: the
//! CLI's flags are parsed by clap and converted into these, field for
//! field; a library user fills them in directly (`Default` gives what the
//! CLI gives with no flag).
//!
//! A field a recipe (`--scenario`) locks is an `Option`: `None` is "not
//! given" (the recipe may set it; without one the default below
//! applies), `Some` is "given", even when it equals the default. This is
//! how a recipe tells an explicit `--grace 30` from the default 30, with no
//! list of flag names.

use std::net::SocketAddr;
use std::path::PathBuf;

pub use arbor_backends::live::history::History;
use arbor_backends::live::placement::Placement;
use arbor_backends::live::request::{Api, MaxTokensField};
use arbor_backends::live::routing::SessionRouting;
use arbor_backends::live::tls::TlsOptions;
pub use arbor_backends::preflight::Options as Preflight;
use arbor_engine::policy::{Arrival, GapScale, GapTransform, Shard, Stagger, StartWindow};
use arbor_engine::time::{Nanos, NANOS_PER_SEC};
use arbor_formats::input::Format;

pub use crate::subset::SubsetOptions;
use arbor_sim::emulator::EmulatorFlags;
use arbor_sim::Service;
use serde_json::{Map, Value};

/// The defaults of the options that have one (the CLI's help shows the
/// same values; `cli`'s tests check that its defaults parse to these).
pub mod defaults {
    use super::*;

    /// `--overlap-tolerance`.
    pub const OVERLAP_TOLERANCE: Nanos = NANOS_PER_SEC;
    /// `--grace`.
    pub const GRACE: Nanos = 30 * NANOS_PER_SEC;
    /// `--copies`.
    pub const COPIES: u32 = 1;
    /// `--seed`.
    pub const SEED: u64 = 0;
    /// `--warmup-spread`.
    pub const WARMUP_SPREAD: Nanos = 10 * NANOS_PER_SEC;
    /// `--timeout`.
    pub const TIMEOUT: Nanos = 600 * NANOS_PER_SEC;
    /// `--barrier-timeout`.
    pub const BARRIER_TIMEOUT: Nanos = 60 * NANOS_PER_SEC;
    /// `--metrics-interval`.
    pub const METRICS_INTERVAL: Nanos = NANOS_PER_SEC;
    /// `--service`.
    pub fn service() -> Service {
        Service::default()
    }
}

/// Where the workload comes from.
#[derive(Debug, Clone)]
pub struct InputOptions {
    /// Trace files or directories (`-` for stdin), or dataset names; none
    /// (and no synthetic workload) is the bundled sample.
    pub inputs: Vec<PathBuf>,
    /// The format of every input; `None` detects each by content.
    pub format: Option<Format>,
    /// A `tokenizer.json` to count the prompts' tokens with.
    pub tokenizer: Option<PathBuf>,
    /// Send recorded tool calls as text and tool results as user
    /// messages, without the tools (`arbor_engine::shape::flatten`).
    pub flatten_tools: bool,
    /// Where a next turn's history comes from (`--history`): the recorded
    /// answers, or the text the server generated in the run.
    pub history: History,
    /// A synthetic workload spec, or a path to a spec file.
    pub synthetic: Option<String>,
    /// Two requests of one agent overlapping by less than this are one
    /// after the other.
    pub overlap_tolerance: Nanos,
    pub fit: FitOptions,
    /// Which part of the corpus to take (`--trees`, `--tree`,
    /// `--max-requests`); `Default` is all of it.
    pub subset: SubsetOptions,
}

impl Default for InputOptions {
    fn default() -> Self {
        InputOptions {
            inputs: Vec::new(),
            format: None,
            tokenizer: None,
            flatten_tools: false,
            history: History::Recorded,
            synthetic: None,
            overlap_tolerance: defaults::OVERLAP_TOLERANCE,
            fit: FitOptions::default(),
            subset: SubsetOptions::default(),
        }
    }
}

/// Fitting prompts to a server's context (`--isl-scale`, `--max-context`).
#[derive(Debug, Clone, Copy, Default)]
pub struct FitOptions {
    pub isl_scale: Option<f64>,
    pub max_context: Option<u32>,
}

impl FitOptions {
    pub fn fit(&self) -> arbor_engine::fit::Fit {
        arbor_engine::fit::Fit {
            isl_scale: self.isl_scale,
            max_context: self.max_context,
        }
    }
}

/// What a run changes on purpose (docs/policies.md). `None` is "not
/// given": see the module's doc.
#[derive(Debug, Clone, Default)]
pub struct PolicyOptions {
    pub tool_time: Option<GapTransform>,
    pub think_time_pct: Option<GapTransform>,
    pub other_time: Option<GapTransform>,
    pub spawn_time: Option<GapTransform>,
    pub join_time: Option<GapTransform>,
    pub gap_scale: Option<GapScale>,
    pub idle_gap_cap: Option<Nanos>,
    pub tree_idle_cap: Option<Nanos>,
    pub arrival: Option<Arrival>,
    pub copies: Option<u32>,
    pub stagger: Option<Stagger>,
    pub max_inflight: Option<u32>,
    pub sessions: Option<u32>,
    pub loop_lanes: bool,
    pub duration: Option<Nanos>,
    pub grace: Option<Nanos>,
    pub seed: Option<u64>,
    pub shard: Option<Shard>,
}

impl PolicyOptions {
    pub fn tool_time(&self) -> GapTransform {
        self.tool_time.unwrap_or(GapTransform::Recorded)
    }
    pub fn other_time(&self) -> GapTransform {
        self.other_time.unwrap_or(GapTransform::Recorded)
    }
    pub fn spawn_time(&self) -> GapTransform {
        self.spawn_time.unwrap_or(GapTransform::Recorded)
    }
    pub fn join_time(&self) -> GapTransform {
        self.join_time.unwrap_or(GapTransform::Recorded)
    }
    pub fn gap_scale(&self) -> GapScale {
        self.gap_scale.unwrap_or_default()
    }
    pub fn arrival(&self) -> Arrival {
        self.arrival.unwrap_or_default()
    }
    pub fn copies(&self) -> u32 {
        self.copies.unwrap_or(defaults::COPIES)
    }
    pub fn stagger(&self) -> Stagger {
        self.stagger.unwrap_or_default()
    }
    pub fn grace(&self) -> Nanos {
        self.grace.unwrap_or(defaults::GRACE)
    }
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or(defaults::SEED)
    }
}

/// The AgentX recipe and its start window (docs/agentx.md).
#[derive(Debug, Clone)]
pub struct ScenarioOptions {
    /// A named recipe (`agentx-mvp`), applied with its locks.
    pub scenario: Option<String>,
    /// Run even though options conflict with the recipe (stamped invalid).
    pub unsafe_override: bool,
    pub start_window: Option<StartWindow>,
    pub warmup_spread: Nanos,
    pub warmup_requests_per_lane: u32,
    pub cache_warmup_duration: Option<Nanos>,
}

impl Default for ScenarioOptions {
    fn default() -> Self {
        ScenarioOptions {
            scenario: None,
            unsafe_override: false,
            start_window: None,
            warmup_spread: defaults::WARMUP_SPREAD,
            warmup_requests_per_lane: 0,
            cache_warmup_duration: None,
        }
    }
}

/// How arbor reaches a server and proves who it is.
#[derive(Debug, Clone, Default)]
pub struct AccessOptions {
    pub cacert: Option<PathBuf>,
    pub insecure: bool,
    pub api_key_env: Option<String>,
    pub api_key_file: Option<PathBuf>,
}

impl AccessOptions {
    pub fn tls(&self) -> TlsOptions {
        TlsOptions {
            cacert: self.cacert.clone(),
            insecure: self.insecure,
        }
    }
}

/// The requests a run sends and where.
#[derive(Debug, Clone)]
pub struct RequestOptions {
    /// The server's base URL, normalized
    /// ([`arbor_backends::endpoint::normalize_endpoint`]); `None` runs
    /// against the built-in emulator in-process.
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api: Api,
    pub max_tokens_field: MaxTokensField,
    pub ignore_eos: bool,
    pub extra_body: Option<Map<String, Value>>,
    /// `K=V` headers.
    pub headers: Vec<String>,
    pub access: AccessOptions,
    pub timeout: Nanos,
    pub retries: u32,
    /// Statuses a refused request is tried again on (`--retry-on`).
    pub retry_on: Vec<u16>,
    pub cache_bust: bool,
    pub cache_bust_salt: u64,
    /// What is checked before the clock starts.
    pub preflight: Preflight,
    /// What failures stop a run or fail it.
    pub failures: FailureLimits,
    /// The endpoints after `endpoint` (`--endpoint` repeated: replicas
    /// without a router), normalized.
    pub more_endpoints: Vec<String>,
    /// How requests say which conversation they belong to
    /// (`--session-routing`, default `affinity`).
    pub session_routing: SessionRouting,
    /// How requests are spread over several endpoints (`--placement`,
    /// default `sticky`).
    pub placement: Placement,
    /// The response header naming the replica that served a request
    /// (`--replica-header`): recorded as `served_by`.
    pub replica_header: Option<String>,
}

/// What failures stop a run (`--abort-after`) or fail it at its end
/// (`--max-error-rate`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailureLimits {
    /// Stop after this many requests in a row failed the same way that is
    /// not latency (`arbor_runs::breaker`); 0 never stops.
    pub abort_after: u32,
    /// A finished run whose failed share of measured requests is above
    /// this fails (exit 4); a run with none that succeeded always does.
    pub max_error_rate: f64,
}

/// `--max-error-rate`'s default: more failed than succeeded.
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.5;

impl Default for FailureLimits {
    fn default() -> Self {
        FailureLimits {
            abort_after: arbor_runs::breaker::DEFAULT_ABORT_AFTER,
            max_error_rate: DEFAULT_MAX_ERROR_RATE,
        }
    }
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            endpoint: None,
            model: None,
            api: Api::Chat,
            max_tokens_field: MaxTokensField::MaxTokens,
            ignore_eos: false,
            extra_body: None,
            headers: Vec::new(),
            access: AccessOptions::default(),
            timeout: defaults::TIMEOUT,
            retries: 0,
            retry_on: Vec::new(),
            cache_bust: false,
            cache_bust_salt: 0,
            preflight: Preflight::default(),
            failures: FailureLimits::default(),
            more_endpoints: Vec::new(),
            session_routing: SessionRouting::default(),
            placement: Placement::default(),
            replica_header: None,
        }
    }
}

/// What to scrape of the server's own metrics.
#[derive(Debug, Clone)]
pub struct MetricsOptions {
    pub metrics_url: Option<String>,
    pub no_metrics: bool,
    pub metrics_interval: Nanos,
    pub metrics_all: bool,
}

impl Default for MetricsOptions {
    fn default() -> Self {
        MetricsOptions {
            metrics_url: None,
            no_metrics: false,
            metrics_interval: defaults::METRICS_INTERVAL,
            metrics_all: false,
        }
    }
}

/// Nanoseconds since the Unix epoch, UTC (a wall-clock instant).
pub type UtcNanos = i64;

/// When the clock starts: now, at an instant, or at the instant rank 0's
/// barrier announces (docs/scale-out.md).
#[derive(Debug, Clone)]
pub struct StartOptions {
    pub start_at: Option<UtcNanos>,
    pub barrier_listen: Option<SocketAddr>,
    pub barrier_size: Option<u32>,
    pub barrier: Option<String>,
    pub barrier_timeout: Nanos,
    /// The barrier's shared token: the first line of this file.
    pub barrier_token_file: Option<PathBuf>,
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions {
            start_at: None,
            barrier_listen: None,
            barrier_size: None,
            barrier: None,
            barrier_timeout: defaults::BARRIER_TIMEOUT,
            barrier_token_file: None,
        }
    }
}

/// The built-in emulator's model and faults (docs/emulator.md). Every
/// field is "not given" by default: the emulator's own defaults apply.
#[derive(Debug, Clone, Default)]
pub struct EmulatorOptions {
    /// Serve under the batching server model of this profile.
    pub profile: Option<PathBuf>,
    /// The model and faults, as the emulator reads them (its `seed` is
    /// the run's, set when the emulator is configured).
    pub flags: EmulatorFlags,
}

impl EmulatorOptions {
    /// The options given, as the CLI's flags (`--ttft-ms`), in the
    /// order of the CLI's help.
    pub fn given(&self) -> Vec<String> {
        let f = &self.flags;
        let given = [
            ("profile", self.profile.is_some()),
            ("ttft-ms", f.ttft_ms.is_some()),
            ("itl-ms", f.itl_ms.is_some()),
            ("prefill-tok-s", f.prefill_tok_s.is_some()),
            ("decode-tok-s", f.decode_tok_s.is_some()),
            ("max-model-len", f.max_model_len.is_some()),
            ("model-name", f.model_name.is_some()),
            ("cache-blocks", f.cache_blocks.is_some()),
            ("fail-rate", f.fail_rate.is_some()),
            ("fail-status", f.fail_status.is_some()),
            ("retry-after-s", f.retry_after_s.is_some()),
            ("disconnect-rate", f.disconnect_rate.is_some()),
            ("disconnect-after", f.disconnect_after.is_some()),
            ("stall-rate", f.stall_rate.is_some()),
            ("stall-s", f.stall_s.is_some()),
            ("malformed-rate", f.malformed_rate.is_some()),
            ("eos-after", f.eos_after.is_some()),
            ("answer-as", f.answer_as.is_some()),
        ];
        given
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(name, _)| format!("--{name}"))
            .collect()
    }
}

/// `arbor run`: one run (or `repeat` runs) of a workload against a server
/// or the built-in emulator.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub input: InputOptions,
    pub policy: PolicyOptions,
    /// The service model the run is planned under; `None`: recorded, or
    /// the in-process emulator's own timing.
    pub service: Option<Service>,
    pub threads: Option<u32>,
    pub request: RequestOptions,
    pub metrics: MetricsOptions,
    /// The run directory; `None`: a new one under `arbor-results/`.
    pub out: Option<PathBuf>,
    pub force: bool,
    /// Show the progress of the clock (the observer's `clock_started`).
    pub progress: bool,
    pub repeat: Option<u32>,
    /// Set on each run of a repeat sequence (recorded in its config).
    pub repeat_of: Option<arbor_runs::aggregate::RepeatOf>,
    pub scenario: ScenarioOptions,
    pub start: StartOptions,
    pub emulator: EmulatorOptions,
    /// `--slo`: latency targets the finished run is judged against
    /// (`slo.json`; a miss is the run's exit).
    pub slo: Option<String>,
}

impl RunOptions {
    /// The service the run is planned under.
    pub fn service(&self) -> Service {
        self.service.clone().unwrap_or_else(defaults::service)
    }
}

/// `arbor plan`: a workload planned on the virtual clock.
#[derive(Debug, Clone, Default)]
pub struct PlanOptions {
    pub input: InputOptions,
    pub policy: PolicyOptions,
    pub service: Option<Service>,
    /// Write the per-request timeline (JSON lines) here.
    pub timeline: Option<PathBuf>,
    /// Write the plan's page here.
    pub report: Option<PathBuf>,
    pub scenario: ScenarioOptions,
    /// Intervals on the server model's predictions.
    pub intervals: IntervalOptions,
}

/// `--intervals` and `--interval-draws`: the intervals on the server
/// model's predictions (docs/capacity.md, "Uncertainty: intervals on
/// predictions").
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalOptions {
    /// Coverage, from 0.5 to 0.999; `None`: no intervals
    /// (`--intervals off`).
    pub level: Option<f64>,
    /// Plan under at most this many of the profile's draws (the first
    /// ones); default all, up to `MAX_DRAWS`.
    pub draws: Option<usize>,
}

impl Default for IntervalOptions {
    /// 90 % intervals under every draw.
    fn default() -> Self {
        IntervalOptions {
            level: Some(0.9),
            draws: None,
        }
    }
}

impl IntervalOptions {
    /// `off`, or a level in percent (`90`, `95%`, `99.5`).
    pub fn parse_level(text: &str) -> Result<Option<f64>, String> {
        if text == "off" {
            return Ok(None);
        }
        let number = text.strip_suffix('%').unwrap_or(text).trim();
        match number.parse::<f64>() {
            Ok(pct) if (50.0..=99.9).contains(&pct) => Ok(Some(pct / 100.0)),
            _ => Err(format!(
                "expected `off` or a level in percent from 50 to 99.9 (e.g. 90), got `{text}`"
            )),
        }
    }
}

/// `arbor emulate`: the built-in emulator, served on a port.
#[derive(Debug, Clone, Default)]
pub struct EmulateOptions {
    pub port: u16,
    pub seed: u64,
    pub busy_poll: bool,
    pub tokenizer: Option<PathBuf>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub tls_self_signed: bool,
    pub tls_cert_out: Option<PathBuf>,
    pub emulator: EmulatorOptions,
    /// Replicas served (0 or 1: one emulator), each with its own cache.
    pub replicas: usize,
    /// A router in front of the replicas, by this convention.
    pub router: Option<arbor_sim::emulator::RouteBy>,
}
