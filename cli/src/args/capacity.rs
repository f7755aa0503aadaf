//! `arbor capacity`'s flags: the flag groups of `arbor run` (the workload,
//! the policy, the server, the emulator, server metrics), `--service`
//! with the batching server model (`server:PROFILE.toml`), the output
//! directory, the SLOs, the knob's range and resolution, and `--live`.
//! The SLO and range texts are parsed by the command (`crate::capacity`),
//! whose errors name the clause. [`CapacityArgs::run_args`] is the `arbor
//! run` a live probe makes.

use std::path::PathBuf;

use arbor_sim::{Service, ServiceModel};
use clap::Args;

use super::heading::{LOAD, OUTPUT};
use super::{
    EmulatorArgs, InputArgs, MetricsArgs, PeerFlags, PolicyArgs, RequestArgs, RunArgs, ScenarioArgs,
};

/// The help heading of the search's own flags.
const CAPACITY: &str = "Capacity search";

#[derive(Debug, Args, Clone)]
pub struct CapacityArgs {
    /// The latency targets: comma-separated METRIC_pNN<=DURATION
    /// (METRIC: ttft, itl, tpot, e2e, job; pNN: p50 to p99.9), and
    /// optionally goodput>=SHARE (then a load passes when that share of
    /// requests, and of trees, meets every bound of its kind), e.g.
    /// 'ttft_p99<=2s,itl_p99<=80ms,job_p90<=120s'.
    #[arg(long, value_name = "SLOS", help_heading = CAPACITY)]
    pub slo: String,

    /// The knob and its range: sessions[:LO..HI] (closed loop; default
    /// 1..1024) or rate[:LO..HI] (open loop, trees/s; default 0.1..1000).
    /// Default: rate when --arrival rate:R is given, else sessions; the
    /// search starts at --sessions N or --arrival rate:R when given.
    #[arg(long, value_name = "KNOB[:LO..HI]", help_heading = CAPACITY)]
    pub search: Option<String>,

    /// The resolution: the search stops when the passing and the failing
    /// load are this close (default 1 session, or 0.1 trees/s).
    #[arg(long, value_name = "STEP", help_heading = CAPACITY)]
    pub step: Option<String>,

    /// Search live: each load is a real `arbor run` against --endpoint, or
    /// the built-in emulator without it (needs --duration). --endpoint
    /// implies it. An explicit --service then gives the virtual prediction
    /// the live search starts around.
    #[arg(long, help_heading = CAPACITY)]
    pub live: bool,

    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Service model of the virtual search: recorded | fixed:TTFT_MS:ITL_MS
    /// | throughput:PREFILL_TOK_S:DECODE_TOK_S | server:PROFILE.toml (the
    /// batching server model; docs/capacity.md).
    #[arg(long, value_name = "MODEL", default_value = "recorded", help_heading = LOAD)]
    pub service: Service,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,

    /// Output directory: capacity.json and one directory per probe.
    /// Default: arbor-results/<UTC time>-capacity-<pid>.
    #[arg(short = 'o', long, visible_alias = "output", value_name = "DIR", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,

    /// Write into --out even if it is not empty (replacing arbor's files).
    #[arg(long, help_heading = OUTPUT)]
    pub force: bool,

    /// No progress on stderr during a live probe.
    #[arg(long, help_heading = OUTPUT)]
    pub no_progress: bool,

    #[command(flatten)]
    pub scenario: ScenarioArgs,

    /// The in-process emulator's model and faults (a live search without
    /// --endpoint).
    #[command(flatten)]
    pub emulator: EmulatorArgs,

    #[command(flatten)]
    pub peer: PeerFlags,
}

impl CapacityArgs {
    /// The `arbor run` of a live probe into `out` (the knob is set by the
    /// caller). Its planned side uses `--service` when it is a per-request
    /// model, else `recorded`.
    pub fn run_args(&self, out: PathBuf) -> RunArgs {
        let planned = match &self.service {
            Service::Model(model) => *model,
            Service::Server(_) => ServiceModel::Recorded,
        };
        RunArgs {
            input: self.input.clone(),
            policy: self.policy.clone(),
            // `into`: whichever type `run`'s --service holds.
            #[allow(clippy::useless_conversion)]
            service: planned.into(),
            request: self.request.clone(),
            metrics: self.metrics.clone(),
            out: Some(out),
            force: self.force,
            no_progress: self.no_progress,
            repeat: None,
            repeat_of: None,
            scenario: self.scenario.clone(),
            emulator: self.emulator.clone(),
            peer: self.peer.clone(),
        }
    }
}
