//! Command-line flags. Policy flags are shared by every command that
//! schedules (`plan` and `run`) so both read a workload the same way.

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
    /// Replay a workload against a live OpenAI-compatible server and
    /// measure it: records.jsonl, summary.json and a console table.
    /// Without --endpoint: the bundled sample against the built-in emulator.
    Run(RunArgs),
    /// Serve the built-in OpenAI-compatible emulator on 127.0.0.1.
    Emulate(crate::emulate::EmulateArgs),
    /// Probe a server before a run: models, streaming, usage, cached
    /// tokens, whether max_completion_tokens and ignore_eos are honoured;
    /// prints findings and the `arbor run` flags to use.
    Doctor(DoctorArgs),
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

    /// Count the tokens of recorded text exactly with this tokenizer.json
    /// (the served model's), instead of estimating them.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,

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

    /// Per-tree idle watchdog: a tree with nothing in flight never waits
    /// longer than S seconds for its next turn.
    #[arg(long, value_name = "S")]
    pub tree_idle_cap: Option<String>,

    /// Stop sending new turns after S seconds.
    #[arg(long, value_name = "S")]
    pub duration: Option<String>,

    /// In-flight requests at the end of --duration get S more seconds.
    #[arg(long, value_name = "S", default_value = "30")]
    pub grace: String,

    /// With --sessions: enter each lane's first tree at a seeded t* in this
    /// window of its recorded span (fractions, e.g. 0.25:0.75), warm the
    /// agents alive there, and start profiling on every lane together.
    #[arg(long, value_name = "MIN:MAX")]
    pub start_window: Option<String>,

    /// Warmups go out at their recorded lead before t*, capped at S seconds.
    #[arg(long, value_name = "S", default_value = "10")]
    pub warmup_spread: String,

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

    #[command(flatten)]
    pub scenario: crate::scenario::ScenarioArgs,

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

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Prepend a cache-bust marker (`[rid:<12 hex>]` and a blank line,
    /// derived from the seed) to the first user message of every turn of a
    /// play: plays never share a prefix, turns of one play do.
    #[arg(long)]
    pub cache_bust: bool,

    #[command(flatten)]
    pub scenario: crate::scenario::ScenarioArgs,

    /// Base URL of an OpenAI-compatible server (`http://127.0.0.1:8000`);
    /// requests go to URL/v1/chat/completions (or /v1/completions).
    /// Without it, the built-in emulator is started in-process.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,

    /// The in-process emulator's model and faults (only without --endpoint).
    #[command(flatten)]
    pub emulator: crate::emulate::EmulatorArgs,

    /// Model name sent in every request. Default: the first model the
    /// server lists at URL/v1/models.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,

    /// Which API to call: chat (/v1/chat/completions) or completions
    /// (/v1/completions).
    #[arg(long, value_name = "API", default_value = "chat")]
    pub api: String,

    /// Body field that asks for the output length: max_tokens or
    /// max_completion_tokens.
    #[arg(long, value_name = "FIELD", default_value = "max_tokens")]
    pub max_tokens_field: String,

    /// Send `ignore_eos: true` so the server generates the recorded length.
    #[arg(long)]
    pub ignore_eos: bool,

    /// A JSON object merged last into every request body.
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,

    /// An extra request header K=V (repeatable). The API key comes from
    /// the environment variable OPENAI_API_KEY.
    #[arg(long = "header", value_name = "K=V")]
    pub headers: Vec<String>,

    /// Per-request timeout in seconds.
    #[arg(long, value_name = "S", default_value = "600")]
    pub timeout: String,

    /// Retries of a request that got no response byte (connect errors).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retries: u32,

    /// Output directory. Default: arbor-results/<UTC time>-<name>.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Write into --out even if it is not empty (replacing arbor's files).
    #[arg(long)]
    pub force: bool,

    /// Service model of the planned side (the virtual-clock plan that
    /// gives the planned peak concurrency): recorded | fixed:TTFT_MS:ITL_MS
    /// | throughput:PREFILL_TOK_S:DECODE_TOK_S.
    #[arg(long, value_name = "MODEL", default_value = "recorded")]
    pub service: String,

    /// No progress bar (it is shown only when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Base URL of an OpenAI-compatible server (`http://127.0.0.1:8000`).
    #[arg(long, value_name = "URL")]
    pub endpoint: String,

    /// Model to probe. Default: the first model the server lists at
    /// URL/v1/models.
    #[arg(long, value_name = "M")]
    pub model: Option<String>,

    /// An extra request header K=V (repeatable). The API key comes from
    /// the environment variable OPENAI_API_KEY.
    #[arg(long = "header", value_name = "K=V")]
    pub headers: Vec<String>,

    /// Bound of each probe, in seconds.
    #[arg(long, value_name = "S", default_value = "30")]
    pub timeout: String,

    /// Print one JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
}
