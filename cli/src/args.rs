//! Command-line flags. Policy flags are shared by every command that
//! schedules (`plan` now, `run` later) so both read a workload the same way.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "arbor",
    version,
    about = "Replay agentic LLM workloads: plan them on a virtual clock or run them against a server"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Dry-run a workload on a virtual clock: peak concurrency, timeline,
    /// demand. No server needed.
    Plan(PlanArgs),
    /// Describe what traces hold: sizes, shape, token and time
    /// distributions, recorded concurrency, cache reuse, problems.
    Inspect(InspectArgs),
    /// Rewrite traces of any format in arbor's native JSONL form.
    Convert(ConvertArgs),
}

/// Where the workload comes from.
#[derive(Debug, Args, Clone)]
pub struct InputArgs {
    /// Trace files or directories, in any supported format (detected by
    /// content; see docs/formats.md). None: the bundled sample workload.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,

    /// Read every INPUT as this format instead of detecting it: weka,
    /// mooncake, agentic-mooncake, abench, lmcache, openai-log, arbor.
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,

    /// A synthetic workload: `trees=N,turns=T,...` or a .toml/.json spec
    /// file (see docs/synthetic.md).
    #[arg(long, value_name = "SPEC")]
    pub synthetic: Option<String>,

    /// Overlap between consecutive turns of an agent up to this many
    /// seconds is treated as recorder rounding (sequential, gap 0).
    #[arg(long, value_name = "S", default_value = "1")]
    pub overlap_tolerance: String,
}

/// What a run changes on purpose (docs/policies.md).
#[derive(Debug, Args, Clone)]
pub struct PolicyArgs {
    /// Tool gaps: recorded | zero | pct:P | max:MS | fixed:MS.
    #[arg(long, value_name = "MODE", default_value = "recorded")]
    pub tool_time: String,

    /// Scale think gaps (before user text) by P percent.
    #[arg(long, value_name = "P")]
    pub think_time_pct: Option<String>,

    /// Tree arrivals: immediate | recorded | poisson:RATE | rate:RATE (trees/s).
    #[arg(long, value_name = "KIND", default_value = "recorded")]
    pub arrival: String,

    /// Schedule every tree K times.
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub copies: u32,

    /// Delay copy k: none | even[:SPAN_S] | random[:SPAN_S] (span default 60 s).
    #[arg(long, value_name = "KIND", default_value = "none")]
    pub stagger: String,

    /// At most M requests in flight; the rest wait in a FIFO.
    #[arg(long, value_name = "M")]
    pub max_inflight: Option<u32>,

    /// Closed loop: N lanes, each running one tree at a time.
    #[arg(long, value_name = "N")]
    pub sessions: Option<u32>,

    /// With --sessions, lanes cycle through their share (needs --duration).
    #[arg(long = "loop")]
    pub loop_lanes: bool,

    /// Never let the system sit idle longer than S seconds while work
    /// remains: shift every pending timer earlier.
    #[arg(long, value_name = "S")]
    pub idle_gap_cap: Option<String>,

    /// Stop sending new turns after S seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<String>,

    /// In-flight requests at the end of --duration get S more seconds.
    #[arg(long, value_name = "S", default_value = "30")]
    pub grace: String,

    /// Seed of every random choice (printed and stored).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Service model: recorded | fixed:TTFT_MS:ITL_MS | throughput:PREFILL_TOK_S:DECODE_TOK_S.
    #[arg(long, value_name = "MODEL", default_value = "recorded")]
    pub service: String,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,

    /// Write one JSON line per turn to FILE.
    #[arg(long, value_name = "FILE")]
    pub timeline: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Trace files or directories, in any supported format (detected by
    /// content; see docs/formats.md).
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Read every INPUT as this format instead of detecting it: weka,
    /// mooncake, agentic-mooncake, abench, lmcache, openai-log, arbor.
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,

    /// Overlap between consecutive turns of an agent up to this many
    /// seconds is treated as recorder rounding (sequential, gap 0).
    #[arg(long, value_name = "S", default_value = "1")]
    pub overlap_tolerance: String,

    /// Print one JSON object instead of the human summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// Trace files or directories, in any supported format.
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Read every INPUT as this format instead of detecting it.
    #[arg(long, value_name = "NAME")]
    pub format: Option<String>,

    /// Output format: arbor (the native JSONL form, one tree per line).
    #[arg(long, value_name = "FORMAT")]
    pub to: String,

    /// Output file.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
}
