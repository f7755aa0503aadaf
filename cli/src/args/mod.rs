//! Command-line flags: every clap struct of every subcommand, and nothing
//! else. Values are typed at parse time by value parsers ([`values`]), so
//! no command parses a policy flag by hand and clap names the flag in every
//! error (exit 2). This module imports no command logic (run, emulate,
//! doctor, scenario): commands import it.
//!
//! Conventions (docs/cli.md): durations take units (`30s`, `5m`, `1h`,
//! `250ms`; a bare number is seconds); `-o, --out` names what a command
//! writes; `run --help` groups its flags under the headings below; flags
//! of other load generators are aliases when they mean the same, refused
//! with an explanation when they do not ([`peer`]).

mod access;
mod calibrate;
mod capacity;
mod data;
mod emulator;
mod heading;
mod metrics;
pub mod peer;
mod record;
mod routing;
pub mod start;
pub mod values;
mod workload;

use std::path::PathBuf;

use arbor::backends::live::request::{Api, MaxTokensField};
use arbor::engine::time::Nanos;
use arbor::formats::input::Format;
use arbor::formats::write::Target;
use arbor::json::{Map, Value};
use arbor::report::compare::metric::{fail_on, Thresholds};
use arbor::sim::Service;
use clap::{Args, Parser, Subcommand};

use heading::{INPUT, LOAD, OUTPUT, SERVER};

pub use access::AccessArgs;
pub use calibrate::CalibrateArgs;
pub use capacity::CapacityArgs;
pub use data::{DataArgs, DataCommand};
pub use emulator::EmulatorArgs;
pub use metrics::MetricsArgs;
pub use peer::PeerFlags;
pub use record::RecordArgs;
pub use routing::RoutingArgs;
pub use start::StartArgs;
pub use workload::{FitArgs, InputArgs, PolicyArgs, ScenarioArgs, SubsetArgs, TraceArgs};

/// Every flag that takes a value takes `-5` as that value, so a negative
/// number reaches the flag's own parser and its message ("must not be
/// negative") instead of clap's tip to write `-- -5`. Positional inputs
/// keep clap's rule.
pub fn numbers_may_be_negative(command: clap::Command) -> clap::Command {
    command
        .mut_args(|arg| {
            if arg.get_long().is_some() && arg.get_action().takes_values() {
                arg.allow_negative_numbers(true)
            } else {
                arg
            }
        })
        .mut_subcommands(numbers_may_be_negative)
}

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
    /// Rewrite traces of any format in another format (arbor's native
    /// JSONL by default), and say what the target kept, inferred and lost.
    Convert(ConvertArgs),
    /// Replay a workload against a live OpenAI-compatible server and
    /// measure it: records.jsonl, summary.json, report.html and a console
    /// table.
    /// Without --endpoint: the bundled sample against the built-in emulator.
    Run(RunCommand),
    /// Serve the built-in OpenAI-compatible emulator on 127.0.0.1.
    Emulate(EmulateArgs),
    /// Find the largest load (--sessions, or --arrival rate:) that meets
    /// latency SLOs: on the virtual clock (--service), or live (--live,
    /// --endpoint); a table of every probed load and OUT/capacity.json.
    Capacity(CapacityArgs),
    /// Probe a server before a run: models, streaming, usage, cached
    /// tokens, whether max_completion_tokens and ignore_eos are honoured;
    /// prints findings and the `arbor run` flags to use.
    Doctor(DoctorArgs),
    /// Compare run directories: every headline metric of BASE and each
    /// NEW side by side, deltas with bootstrap 95 % intervals;
    /// --fail-on makes it a CI gate (exit 1).
    Compare(CompareArgs),
    /// Rebuild summary.json of a run directory from its records.jsonl and
    /// run.json (also after kill -9 or a second Ctrl+C).
    Summarize(SummarizeArgs),
    /// Join the shards of `arbor plan --shard I/N` (timelines) or of
    /// `arbor run --shard I/N` (run directories) for I = 0..N-1 into the
    /// unsharded result (docs/scale-out.md).
    Merge(MergeArgs),
    /// Rebuild aggregate.json of an `arbor run --repeat N` directory from
    /// its run directories: mean, standard deviation and 95 % t-interval
    /// per headline metric, and the fail-closed validity stamp.
    Aggregate(AggregateArgs),
    /// Write one self-contained HTML page of one or more run directories:
    /// configuration, summary, CDFs, time series, swim lanes; several runs
    /// overlaid with a table of deltas.
    Report(ReportArgs),
    /// Export a run directory: a Chrome trace-event file for the Perfetto
    /// UI (--perfetto), one CSV row per request (--csv), or AIPerf's
    /// result files (--aiperf).
    Export(ExportArgs),
    /// Write the JSON Schemas of arbor's outputs (a records.jsonl line,
    /// summary.json, plan --json) into a directory; docs/schema/ holds
    /// this version's.
    Schema(SchemaArgs),
    /// Record a live agent's traffic: a pass-through proxy in front of an
    /// OpenAI or Anthropic server that writes every chat, Messages or
    /// Responses exchange to an openai-log capture (docs/record.md).
    Record(RecordArgs),
    /// Datasets by name: list the registry, show one, fetch one (resumable,
    /// SHA-256 verified), or pin a local directory (docs/data.md).
    Data(DataArgs),
    /// Fit a server profile (for --service server:PROFILE.toml) from live
    /// run directories: step-time coefficients by non-negative least
    /// squares over the rebuilt timeline, corrected by replay; prints the
    /// fit error of p50/p90 TTFT, ITL and E2E.
    Calibrate(CalibrateArgs),
}

impl Command {
    /// Flags of other tools given to this command, refused.
    pub fn peer_flags(&self) -> Option<&PeerFlags> {
        match self {
            Command::Plan(a) => Some(&a.peer),
            Command::Run(a) => Some(&a.run.peer),
            Command::Capacity(a) => Some(&a.run.peer),
            Command::Doctor(a) => Some(&a.peer),
            Command::Inspect(_)
            | Command::Convert(_)
            | Command::Emulate(_)
            | Command::Compare(_)
            | Command::Summarize(_)
            | Command::Merge(_)
            | Command::Aggregate(_)
            | Command::Report(_)
            | Command::Export(_)
            | Command::Schema(_)
            | Command::Data(_)
            | Command::Calibrate(_)
            | Command::Record(_) => None,
        }
    }
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Service model: recorded | fixed:TTFT_MS:ITL_MS | throughput:PREFILL_TOK_S:DECODE_TOK_S
    /// | server:PROFILE.toml (the batching server model: queueing, KV and
    /// prefix cache; docs/capacity.md).
    #[arg(long, value_name = "MODEL", default_value = "recorded", help_heading = LOAD)]
    pub service: Service,

    /// Print one JSON object instead of the human summary.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,

    /// Write the timeline, one JSON line per turn, to FILE.
    #[arg(short = 'o', long = "out", visible_alias = "timeline", alias = "output", value_name = "FILE", help_heading = OUTPUT)]
    pub timeline: Option<PathBuf>,

    /// Write the plan's page to FILE: the report.html of a run, drawn from
    /// the plan (planned concurrency and demand over time, lanes, swim
    /// lanes); opens from disk.
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub report: Option<PathBuf>,

    /// Intervals on the server model's predictions: `off`, or their level
    /// in percent (default 90).
    #[arg(long, value_name = "off|LEVEL", value_parser = values::interval_level, help_heading = OUTPUT)]
    pub intervals: Option<values::IntervalLevel>,

    /// Plan again under at most N of the profile's draws for the
    /// intervals (default: all, up to 200).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=200), help_heading = OUTPUT)]
    pub interval_draws: Option<u32>,

    #[command(flatten)]
    pub scenario: ScenarioArgs,

    #[command(flatten)]
    pub peer: PeerFlags,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' run directories, or their timeline files (each with
    /// its FILE.shard.json), in any order.
    #[arg(value_name = "DIR|TIMELINE", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Write the merged run directory (a new or empty DIR) or timeline
    /// (FILE) here.
    #[arg(short = 'o', long = "out", value_name = "DIR|FILE")]
    pub out: PathBuf,

    /// Write the merged run directory into an existing, non-empty DIR,
    /// over arbor's files there.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct SummarizeArgs {
    /// The output directory of `arbor run`.
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct AggregateArgs {
    /// The output directory of `arbor run --repeat N` (holding run-1 ..
    /// run-N).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub traces: TraceArgs,

    #[command(flatten)]
    pub fit: FitArgs,

    /// Overlap between consecutive turns of an agent up to this long is
    /// treated as recorder rounding (sequential, gap 0).
    #[arg(long, value_name = "DURATION", default_value = "1", value_parser = values::duration, help_heading = INPUT)]
    pub overlap_tolerance: Nanos,

    /// Print one JSON object instead of the human summary.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,

    /// List every tree's agents, turns, spawns and joins (shown anyway
    /// for inputs of at most 10 trees; with --json, as `tree_shapes`).
    #[arg(long, help_heading = OUTPUT)]
    pub trees: bool,

    /// Inspect exactly the tree with this id (repeatable); an unknown id is
    /// refused. Not with --max-requests.
    #[arg(long = "tree", value_name = "NAME", help_heading = INPUT)]
    pub tree_names: Vec<String>,

    /// Inspect whole trees in corpus order while their requests add up to
    /// at most N; a tree is never cut.
    #[arg(long, value_name = "N", help_heading = INPUT)]
    pub max_requests: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub traces: TraceArgs,

    /// Output format: arbor (native JSONL), weka (a directory, one file
    /// per tree), mooncake, agentic-mooncake, dynamo, aiperf-graph.
    #[arg(long, value_name = "FORMAT", default_value = "arbor", value_parser = values::convert_target, help_heading = OUTPUT)]
    pub to: Target,

    /// Output file (a directory for --to weka).
    #[arg(short = 'o', long = "out", visible_alias = "output", value_name = "FILE", help_heading = OUTPUT)]
    pub output: PathBuf,

    /// Print the account as one JSON object (arbor.convert/1).
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,

    #[command(flatten)]
    pub subset: SubsetArgs,

    /// Seed of the --trees sample (as `plan` and `run` take it, so the
    /// same seed writes the trees they would play).
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = INPUT)]
    pub seed: u64,
}

/// `arbor run`'s flags: every flag of a run ([`RunArgs`], which `arbor
/// capacity` shares for its probes) and the verdict only a run gives.
#[derive(Debug, Args, Clone)]
pub struct RunCommand {
    #[command(flatten)]
    pub run: RunArgs,

    /// Judge the finished run against latency targets, as `arbor capacity`
    /// does a probe: comma-separated METRIC_pNN<=DURATION (ttft, itl,
    /// tpot, e2e, job) and optionally goodput>=SHARE, e.g.
    /// 'ttft_p99<=2s,e2e_p90<=30s'. The verdict goes to OUT/slo.json, the
    /// console and the page; a miss exits 6, fewer than 20 successful
    /// requests exit 5 (undecided).
    #[arg(long, value_name = "SLOS", help_heading = OUTPUT)]
    pub slo: Option<String>,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Service model of the planned side (the virtual-clock plan that
    /// gives the planned peak concurrency): recorded | fixed:TTFT_MS:ITL_MS
    /// | throughput:PREFILL_TOK_S:DECODE_TOK_S | server:PROFILE.toml.
    #[arg(long, value_name = "MODEL", default_value = "recorded", help_heading = LOAD)]
    pub service: Service,

    /// Client threads, each with its own scheduler and connection pool
    /// over stripe j of N of the plan (docs/scale-out.md, "Every core of
    /// one box"). Default: the available cores, minus the built-in
    /// emulator's when it runs in-process; one with --idle-gap-cap or
    /// --start-window (refused when given above 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024), help_heading = LOAD)]
    pub threads: Option<u32>,

    #[command(flatten)]
    pub request: RequestArgs,

    #[command(flatten)]
    pub metrics: MetricsArgs,

    /// Output directory. Default: arbor-results/<UTC time>-<name>.
    #[arg(short = 'o', long, visible_alias = "output", value_name = "DIR", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,

    /// Write into --out even if it is not empty (replacing arbor's files).
    #[arg(long, help_heading = OUTPUT)]
    pub force: bool,

    /// How progress is shown on stderr while the clock runs: `dashboard`
    /// (live figures redrawn in place), `simple` (one line: a bar on a
    /// terminal, else a status line every 10 s) or `none`. Default: the
    /// dashboard on a terminal of at least 100 columns and 20 rows, else
    /// simple.
    #[arg(long, value_enum, value_name = "UI", help_heading = OUTPUT)]
    pub ui: Option<crate::terminal::Ui>,

    /// No progress on stderr: the same as `--ui none`.
    #[arg(long, conflicts_with = "ui", help_heading = OUTPUT)]
    pub no_progress: bool,

    /// Make N profiling runs one after another (AIPerf's
    /// --num-profile-runs), in OUT/run-1 .. OUT/run-N, run k with seed
    /// SEED + k - 1; then OUT/aggregate.json: mean, standard deviation and
    /// 95 % t-interval per headline metric, valid only if every run is.
    #[arg(long, visible_alias = "num-profile-runs", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000), help_heading = OUTPUT)]
    pub repeat: Option<u32>,

    #[command(flatten)]
    pub scenario: ScenarioArgs,

    /// When the clock starts: `--start-at` or the start barrier.
    #[command(flatten)]
    pub start: StartArgs,

    /// The in-process emulator's model and faults (only without --endpoint).
    #[command(flatten)]
    pub emulator: EmulatorArgs,

    #[command(flatten)]
    pub peer: PeerFlags,
}

/// Where requests go and what they carry.
#[derive(Debug, Args, Clone)]
pub struct RequestArgs {
    /// Base URL of an OpenAI-compatible server (`http://127.0.0.1:8000`);
    /// requests go to URL/v1/chat/completions (or /v1/completions).
    /// Without it, the built-in emulator is started in-process. Repeat
    /// it for several replicas (see --placement).
    #[arg(long, visible_alias = "url", value_name = "URL", value_parser = arbor::backends::endpoint::normalize_endpoint, help_heading = SERVER)]
    pub endpoint: Vec<String>,

    /// Model name sent in every request. Default: the first model the
    /// server lists at URL/v1/models.
    #[arg(short = 'm', long, value_name = "M", help_heading = SERVER)]
    pub model: Option<String>,

    /// Which API to call: chat (/v1/chat/completions), completions
    /// (/v1/completions), messages (Anthropic's /v1/messages) or
    /// responses (OpenAI's /v1/responses).
    #[arg(long, value_name = "API", default_value = "chat", value_parser = values::api, help_heading = SERVER)]
    pub api: Api,

    /// Body field that asks for the output length: max_tokens or
    /// max_completion_tokens.
    #[arg(long, value_name = "FIELD", default_value = "max_tokens", value_parser = values::max_tokens_field, help_heading = SERVER)]
    pub max_tokens_field: MaxTokensField,

    /// Send `ignore_eos: true` so the server generates the recorded length.
    #[arg(long, help_heading = SERVER)]
    pub ignore_eos: bool,

    /// A JSON object merged last into every request body.
    #[arg(long, value_name = "JSON", value_parser = values::json_object, help_heading = SERVER)]
    pub extra_body: Option<Map<String, Value>>,

    /// An extra request header K=V (repeatable). The API key comes from
    /// the environment (--api-key-env, default OPENAI_API_KEY, or
    /// ANTHROPIC_API_KEY with --api messages) or a file (--api-key-file).
    #[arg(short = 'H', long = "header", value_name = "K=V", help_heading = SERVER)]
    pub headers: Vec<String>,

    #[command(flatten)]
    pub access: AccessArgs,

    #[command(flatten)]
    pub routing: RoutingArgs,

    /// Per-request timeout (e.g. 600, 10m).
    #[arg(long, value_name = "DURATION", default_value = "600", value_parser = values::positive_duration, help_heading = SERVER)]
    pub timeout: Nanos,

    /// Retries of a request that got no response byte (connect errors), and with --retry-on of one refused with a listed status.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = SERVER)]
    pub retries: u32,

    /// Try a request again, up to --retries times, when the server refuses it with one of these statuses before any content (e.g. 429,503): after its Retry-After (capped at 30 s) or a backoff with jitter, within --timeout. Nothing is retried by default.
    #[arg(long, value_name = "STATUSES", value_parser = values::retry_statuses, help_heading = SERVER)]
    pub retry_on: Option<values::Statuses>,

    /// Prepend a cache-bust marker (`[rid:<12 hex>]` and a blank line,
    /// derived from the seed) to the first user message of every turn of a
    /// play: plays never share a prefix, turns of one play do.
    #[arg(long, help_heading = SERVER)]
    pub cache_bust: bool,

    /// Move every cache-bust marker by this salt (0: the seed's own
    /// markers). Markers repeat across runs of the same seed and salt, and
    /// the server's prefix cache keeps an earlier run's prompts: give runs
    /// that must start cold different salts (or restart the server).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "cache_bust", help_heading = SERVER)]
    pub cache_bust_salt: u64,

    /// How long to wait for a server that refuses connections or answers
    /// 502-504 (still loading) before the run starts (0: ask once).
    #[arg(long, value_name = "DURATION", default_value = "10", value_parser = values::duration, help_heading = SERVER)]
    pub ready_timeout: Nanos,

    /// Send --model even when the server's /v1/models does not list it
    /// (default: refused, listing what it serves).
    #[arg(long, help_heading = SERVER)]
    pub allow_unlisted_model: bool,

    /// Run turns whose prompt and output exceed the context length the
    /// server reports (they fail as context_overflow; default: refused
    /// with the --max-context and --isl-scale that fit).
    #[arg(long, help_heading = SERVER)]
    pub allow_overflow: bool,

    /// Stop the run after N requests in a row failed the same way that is
    /// not latency (connect, HTTP 401/403, 404, 5xx); 0 never stops.
    #[arg(long, value_name = "N", default_value_t = arbor::runs::breaker::DEFAULT_ABORT_AFTER, help_heading = SERVER)]
    pub abort_after: u32,

    /// Fail a finished run (exit 4) whose share of failed measured
    /// requests is above this (0-1); a run with none that succeeded
    /// always fails.
    #[arg(long, value_name = "SHARE", default_value_t = arbor::options::DEFAULT_MAX_ERROR_RATE, value_parser = values::share, help_heading = SERVER)]
    pub max_error_rate: f64,
}

#[derive(Debug, Args)]
pub struct EmulateArgs {
    /// Port on 127.0.0.1 (the emulator never binds another address).
    #[arg(long, value_name = "P", default_value_t = 8000)]
    pub port: u16,

    /// Seed of the fault decisions.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,

    /// Keep one worker polling instead of sleeping (costs a core). On
    /// loopback the kernel charges waking a sleeping server to the client
    /// that sends it a request; against a polling server, a client's
    /// measured CPU is its own (how `benches/harness` measures concurrency
    /// 1).
    #[arg(long)]
    pub busy_poll: bool,

    /// Count prompt tokens (usage.prompt_tokens) with this tokenizer.json
    /// instead of estimating them: as `arbor plan --tokenizer` counts.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,

    /// Serve https with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Serve https with a certificate made now for 127.0.0.1 and
    /// localhost; its PEM is written to --tls-cert-out for clients to
    /// trust (`arbor run --cacert FILE`).
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_self_signed: bool,

    /// Where --tls-self-signed writes its certificate. Default:
    /// <temp dir>/arbor-emulate-<port>-cert.pem.
    #[arg(long, value_name = "FILE", requires = "tls_self_signed")]
    pub tls_cert_out: Option<PathBuf>,

    /// Serve N replicas on consecutive ports from --port, each with its
    /// own prefix cache, counters and /metrics (default 1).
    #[arg(long, value_name = "N", value_parser = arbor::sim::emulator::flags::replicas, conflicts_with_all = ["tls_cert", "tls_self_signed"])]
    pub replicas: Option<usize>,

    /// A router on --port (replicas on the next ports) keeping sessions
    /// by MODE: affinity, dynamo, token, user, header:NAME, round-robin.
    #[arg(long, value_name = "MODE", value_parser = arbor::sim::emulator::flags::router, conflicts_with_all = ["tls_cert", "tls_self_signed"])]
    pub router: Option<arbor::sim::emulator::RouteBy>,

    #[command(flatten)]
    pub emulator: EmulatorArgs,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A workload to fit to the server's context length (trace files or
    /// directories, any format): the doctor suggests --max-context and
    /// --isl-scale by its largest prompt.
    #[arg(value_name = "INPUT", help_heading = INPUT)]
    pub inputs: Vec<PathBuf>,

    /// Read every INPUT as this format instead of detecting it.
    #[arg(long, value_name = "NAME", help_heading = INPUT)]
    pub format: Option<Format>,

    /// Base URL of an OpenAI-compatible server (`http://127.0.0.1:8000`).
    #[arg(long, visible_alias = "url", value_name = "URL", value_parser = arbor::backends::endpoint::normalize_endpoint, help_heading = SERVER)]
    pub endpoint: String,

    /// Model to probe. Default: the first model the server lists at
    /// URL/v1/models.
    #[arg(short = 'm', long, value_name = "M", help_heading = SERVER)]
    pub model: Option<String>,

    /// An extra request header K=V (repeatable). The API key comes from
    /// the environment (--api-key-env, default OPENAI_API_KEY, or
    /// ANTHROPIC_API_KEY for the Messages probe) or a file (--api-key-file).
    #[arg(short = 'H', long = "header", value_name = "K=V", help_heading = SERVER)]
    pub headers: Vec<String>,

    #[command(flatten)]
    pub access: AccessArgs,

    /// Bound of each probe (e.g. 30, 1m).
    #[arg(long, value_name = "DURATION", default_value = "30", value_parser = values::positive_duration, help_heading = SERVER)]
    pub timeout: Nanos,

    /// Print one JSON object instead of the human report.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,

    #[command(flatten)]
    pub peer: PeerFlags,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: a run directory written by `arbor run`
    /// (records.jsonl, summary.json).
    #[arg(value_name = "BASE")]
    pub base: PathBuf,

    /// One or more run directories compared with BASE.
    #[arg(value_name = "NEW", required = true)]
    pub new: Vec<PathBuf>,

    /// Exit 1 when NEW is worse than BASE by more than allowed, e.g.
    /// 'ttft_p99=+10%,itl_p50=+5%,errors=+0' (+N% relative, +N absolute in
    /// the metric's unit: ms, a count, req/s, tok/s, percentage points).
    /// Repeatable. Names: docs/compare.md.
    #[arg(long, value_name = "THRESHOLDS", value_parser = fail_on)]
    pub fail_on: Vec<Thresholds>,

    /// Seed of the bootstrap resamples (same inputs and seed: same bytes).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,

    /// Bootstrap resamples per percentile.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(10..=1_000_000))]
    pub resamples: u32,

    /// Compare runs that played another workload or policy than BASE
    /// (refused otherwise, exit 2); the difference leads the output.
    #[arg(long)]
    pub allow_different: bool,

    /// Print one JSON object instead of the table.
    #[arg(long, help_heading = OUTPUT)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run directories written by `arbor run` (records.jsonl and
    /// summary.json); several are overlaid and compared with the first.
    /// The directory of `arbor run --repeat N` gives its multi-run page:
    /// the aggregate's spread over its runs overlaid.
    #[arg(value_name = "RUN_DIR", required = true)]
    pub run_dirs: Vec<PathBuf>,

    /// Output file. Default: RUN_DIR/report.html for one run directory,
    /// report.html in the current directory for several.
    #[arg(short = 'o', long = "out", visible_alias = "output", value_name = "FILE", help_heading = OUTPUT)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Directory to write records.schema.json, summary.schema.json and
    /// plan.schema.json into (created if missing; the files are replaced).
    #[arg(short = 'o', long = "out", visible_alias = "output", value_name = "DIR", help_heading = OUTPUT)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("format").required(true).multiple(true).args(["perfetto", "csv", "aiperf"])))]
pub struct ExportArgs {
    /// The output directory of an `arbor run` (records.jsonl; trees.jsonl
    /// for the spawn and join flows).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,

    /// Write a Chrome trace-event JSON file that the Perfetto UI opens
    /// (gzipped when FILE ends in .gz).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub perfetto: Option<PathBuf>,

    /// Write one CSV row per request, every field of its record (gzipped
    /// when FILE ends in .gz).
    #[arg(long, value_name = "FILE", help_heading = OUTPUT)]
    pub csv: Option<PathBuf>,

    /// Write AIPerf 0.13's profile_export_aiperf.json and
    /// profile_export.jsonl into DIR (created if missing), for `aiperf plot`
    /// and leaderboard pipelines (needs the run's summary.json).
    #[arg(long, value_name = "DIR", help_heading = OUTPUT)]
    pub aiperf: Option<PathBuf>,
}
