//! `arbor capacity`'s flags: every flag of `arbor run` (the workload, the
//! policy, `--service` with the batching server model, the server, the
//! emulator, server metrics, the output directory), plus the SLOs, the
//! knob's range and resolution, and `--live`. The SLO and range texts are
//! parsed by the capacity library (`arbor::capacity_search::Slo`,
//! `arbor::capacity_search::Space`), whose errors name the clause. A live probe is
//! the `arbor run` of [`CapacityArgs::run`] with the knob and its
//! directory set.

use clap::Args;

use super::RunArgs;

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

    /// Plan every load of the range, LO, LO+STEP, ... HI, instead of
    /// searching: the whole goodput curve, one probe directory per load.
    /// Virtual only; the loads are planned side by side on the machine's
    /// cores (the output is the same on any number). The answer is the
    /// largest load below the first one that fails.
    #[arg(long, help_heading = CAPACITY)]
    pub sweep: bool,

    /// Search live: each load is a real `arbor run` against --endpoint, or
    /// the built-in emulator without it (needs --duration). --endpoint
    /// implies it. An explicit --service then gives the virtual prediction
    /// the live search starts around. Without it, every load is planned
    /// on the virtual clock under --service (server:PROFILE.toml for the
    /// batching server model).
    #[arg(long, help_heading = CAPACITY)]
    pub live: bool,

    /// Live only: the fewest successful requests a probe needs to decide
    /// (default 20). A probe with fewer is unresolved, as is one whose 95 %
    /// interval straddles a limit.
    #[arg(long, value_name = "N", help_heading = CAPACITY)]
    pub min_requests: Option<u64>,

    /// Live only: how many times an unresolved probe is run again, each
    /// for twice as long, its records pooled (default 2). Still
    /// unresolved: the answer is only a bound (exit 5).
    #[arg(long, value_name = "N", help_heading = CAPACITY)]
    pub max_extensions: Option<u32>,

    /// Live only: skip the confirmation run at the answer's passing load.
    #[arg(long, help_heading = CAPACITY)]
    pub no_confirm: bool,

    /// `arbor run`'s flags: --out is the search's directory (capacity.json
    /// and one directory per probe; default
    /// arbor-results/<UTC time>-capacity-<pid>); --repeat is refused.
    #[command(flatten)]
    pub run: RunArgs,
}
