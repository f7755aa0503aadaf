//! The flag groups every command that schedules shares (`plan` and `run`):
//! where the workload comes from, what the run changes on purpose, and the
//! AgentX recipe. Values are typed at parse time (see [`super::values`]).

use std::path::PathBuf;

use arbor::engine::policy::{Arrival, GapScale, GapTransform, Shard, Stagger, StartWindow};
use arbor::engine::time::Nanos;
use arbor::formats::input::Format;
use arbor::options::History;
use clap::Args;

use super::heading::{AGENTX, INPUT, LOAD, POLICY};
use super::values;

/// Where the workload comes from.
#[derive(Debug, Args, Clone)]
pub struct InputArgs {
    /// Trace files or directories, in any supported format (detected by
    /// content, `.zst` and `.gz` decompressed; see docs/formats.md); `-` is
    /// stdin. None: the bundled sample workload.
    #[arg(value_name = "INPUT", help_heading = INPUT)]
    pub inputs: Vec<PathBuf>,

    /// Read every INPUT as this format instead of detecting it: weka,
    /// mooncake, agentic-mooncake, abench, dynamo, lmcache, openai-log,
    /// arbor, tracelab, otel-genai, aiperf-graph.
    #[arg(long, value_name = "NAME", help_heading = INPUT)]
    pub format: Option<Format>,

    /// Count the tokens of recorded text exactly with this tokenizer.json
    /// (the served model's), instead of estimating them; `run` without
    /// --endpoint has the built-in emulator count its usage with it too.
    #[arg(long, value_name = "FILE", help_heading = INPUT)]
    pub tokenizer: Option<PathBuf>,

    /// Send recorded tool calls as text and tool results as user messages,
    /// without the tools (the shape replays had before they kept it).
    #[arg(long, help_heading = INPUT)]
    pub flatten_tools: bool,

    /// What a next turn reads of the previous answer: recorded, or live
    /// (the text the server generated in this run; docs/run.md).
    #[arg(long, value_name = "MODE", default_value = "recorded", value_parser = values::history, help_heading = INPUT)]
    pub history: History,

    /// A synthetic workload: `trees=N,turns=T,...` or a .toml/.json spec
    /// file (see docs/synthetic.md).
    #[arg(long, value_name = "SPEC", help_heading = INPUT)]
    pub synthetic: Option<String>,

    /// Overlap between consecutive turns of an agent up to this long is
    /// treated as recorder rounding (sequential, gap 0).
    #[arg(long, value_name = "DURATION", default_value = "1", value_parser = values::duration, help_heading = INPUT)]
    pub overlap_tolerance: Nanos,

    #[command(flatten)]
    pub fit: FitArgs,

    #[command(flatten)]
    pub subset: SubsetArgs,
}

/// Taking part of the corpus (docs/formats.md, "Taking part of a corpus"),
/// before the policy (copies, sessions) applies.
#[derive(Debug, Args, Clone, Default)]
pub struct SubsetArgs {
    /// Take a sample of N trees, drawn with --seed and kept in the
    /// corpus's order (the same seed takes the same trees); all when the
    /// corpus has no more.
    #[arg(long = "trees", value_name = "N", help_heading = INPUT)]
    pub sample: Option<u32>,

    /// Take exactly the tree with this id (repeatable); an unknown id is
    /// refused. Not with --trees or --max-requests.
    #[arg(long = "tree", value_name = "NAME", help_heading = INPUT)]
    pub names: Vec<String>,

    /// Take whole trees in corpus order (after --trees) while their
    /// requests add up to at most N; a tree is never cut.
    #[arg(long, value_name = "N", help_heading = INPUT)]
    pub max_requests: Option<u64>,
}

/// Recorded traces, at least one (`inspect`, `convert`).
#[derive(Debug, Args, Clone)]
pub struct TraceArgs {
    /// Trace files or directories, in any supported format (detected by
    /// content; see docs/formats.md); `-` is stdin.
    #[arg(value_name = "INPUT", required = true, help_heading = INPUT)]
    pub inputs: Vec<PathBuf>,

    /// Read every INPUT as this format instead of detecting it: weka,
    /// mooncake, agentic-mooncake, abench, dynamo, lmcache, openai-log,
    /// arbor, tracelab, otel-genai, aiperf-graph.
    #[arg(long, value_name = "NAME", help_heading = INPUT)]
    pub format: Option<Format>,
}

/// What a run changes on purpose (docs/policies.md).
#[derive(Debug, Args, Clone)]
pub struct PolicyArgs {
    /// Tool gaps: recorded | zero | pct:P | max:MS | fixed:MS.
    #[arg(long, value_name = "MODE", default_value = "recorded", help_heading = POLICY)]
    pub tool_time: GapTransform,

    /// Scale think gaps (before user text) by P percent.
    #[arg(long, value_name = "P", value_parser = values::percent, help_heading = POLICY)]
    pub think_time_pct: Option<GapTransform>,

    /// Other gaps (before an input of unknown kind): recorded | zero |
    /// pct:P | max:MS | fixed:MS.
    #[arg(long, value_name = "MODE", default_value = "recorded", help_heading = POLICY)]
    pub other_time: GapTransform,

    /// Spawn gaps (parent turn to a subagent's first turn), after their
    /// input's class: recorded | zero | pct:P | max:MS | fixed:MS.
    #[arg(long, value_name = "MODE", default_value = "recorded", help_heading = POLICY)]
    pub spawn_time: GapTransform,

    /// Join gaps (a subagent's last turn to the parent turn that waits for
    /// it), after their input's class: recorded | zero | pct:P | max:MS |
    /// fixed:MS.
    #[arg(long, value_name = "MODE", default_value = "recorded", help_heading = POLICY)]
    pub join_time: GapTransform,

    /// Multiply every gap of every class by F >= 0 (start-anchored ones
    /// too), after the per-class flags; 1 keeps them as recorded.
    #[arg(long, value_name = "F", default_value = "1", help_heading = POLICY)]
    pub gap_scale: GapScale,

    /// Never let the system sit idle longer than this while work remains:
    /// shift every pending timer earlier.
    #[arg(long, value_name = "DURATION", value_parser = values::duration, help_heading = POLICY)]
    pub idle_gap_cap: Option<Nanos>,

    /// Per-tree idle watchdog: a tree with nothing in flight never waits
    /// longer than this for its next turn.
    #[arg(long, value_name = "DURATION", value_parser = values::duration, help_heading = POLICY)]
    pub tree_idle_cap: Option<Nanos>,

    /// Tree arrivals: immediate | recorded | poisson:RATE | rate:RATE (trees/s).
    #[arg(long, value_name = "KIND", default_value = "recorded", help_heading = LOAD)]
    pub arrival: Arrival,

    /// Schedule every tree K times.
    #[arg(long, value_name = "K", default_value_t = 1, help_heading = LOAD)]
    pub copies: u32,

    /// Delay copy k: none | even[:SPAN] | random[:SPAN] (SPAN a duration,
    /// default 60 s).
    #[arg(long, value_name = "KIND", default_value = "none", help_heading = LOAD)]
    pub stagger: Stagger,

    /// At most M requests in flight; the rest wait in a FIFO.
    #[arg(long, value_name = "M", help_heading = LOAD)]
    pub max_inflight: Option<u32>,

    /// Closed loop: N lanes, each running one tree at a time.
    #[arg(long, value_name = "N", help_heading = LOAD)]
    pub sessions: Option<u32>,

    /// With --sessions, lanes cycle through their share (needs --duration).
    #[arg(long = "loop", help_heading = LOAD)]
    pub loop_lanes: bool,

    /// Stop sending new turns after this long (e.g. 900, 15m).
    #[arg(long, value_name = "DURATION", value_parser = values::duration, help_heading = LOAD)]
    pub duration: Option<Nanos>,

    /// In-flight requests at the end of --duration get this much longer.
    #[arg(long, value_name = "DURATION", default_value = "30", value_parser = values::duration, help_heading = LOAD)]
    pub grace: Nanos,

    /// Seed of every random choice (printed and stored).
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = LOAD)]
    pub seed: u64,

    /// Play shard I (from 0) of N: open-loop plays k and lanes k with
    /// k mod N = I, from the unsharded plan and seed; `arbor merge` joins
    /// the shards (docs/scale-out.md). Refuses --idle-gap-cap and
    /// --start-window; --max-inflight applies per shard.
    #[arg(long, value_name = "I/N", help_heading = LOAD)]
    pub shard: Option<Shard>,
}

/// The AgentX flags (docs/agentx.md): `--scenario`, its escape hatch,
/// and the start window the recipe sets.
#[derive(Debug, Args, Clone)]
pub struct ScenarioArgs {
    /// Run a named benchmark recipe with its locks: agentx-mvp (the
    /// InferenceX AgentX recipe; see docs/agentx.md).
    #[arg(long, value_name = "NAME", value_parser = ["agentx-mvp"], help_heading = AGENTX)]
    pub scenario: Option<String>,

    /// With --scenario: run even though flags conflict with the recipe.
    /// The run is stamped invalid (submission_valid false).
    #[arg(long, help_heading = AGENTX)]
    pub unsafe_override: bool,

    /// With --sessions: enter each lane's first tree at a seeded t* in this
    /// window of its recorded span (fractions, e.g. 0.25:0.75), warm the
    /// agents alive there, and start profiling on every lane together.
    #[arg(long, value_name = "MIN:MAX", help_heading = AGENTX)]
    pub start_window: Option<StartWindow>,

    /// Warmups go out at their recorded lead before t*, capped at this.
    #[arg(long, value_name = "DURATION", default_value = "10", value_parser = values::duration, help_heading = AGENTX)]
    pub warmup_spread: Nanos,

    /// With --start-window: after the boundary warmups, send each lane's
    /// next K requests from t* (children count, joins wait for their
    /// children) as warmups with no gaps and one output token; profiling
    /// starts when every warmup returned (the accelerated cache warmup;
    /// InferenceX uses 10). 0: none.
    #[arg(long, value_name = "K", default_value_t = 0, help_heading = AGENTX)]
    pub warmup_requests_per_lane: u32,

    /// With --start-window: the accelerated cache warmup bounded by time
    /// instead of a count (AIPerf 0.13's form): no warmup request is
    /// released after this long. Not with --warmup-requests-per-lane.
    #[arg(long, visible_alias = "agentic-cache-warmup-duration", value_name = "DURATION", value_parser = values::duration, help_heading = AGENTX)]
    pub cache_warmup_duration: Option<Nanos>,
}

/// Fitting prompts to the server (docs/run.md, "Fitting a workload to a
/// server"): `plan`, `run` and `inspect`.
#[derive(Debug, Args, Clone, Default)]
pub struct FitArgs {
    /// Scale every prompt by F > 0, its shared prefix blocks with it (two
    /// turns sharing k blocks share about F*k). Locked under --scenario.
    #[arg(long, value_name = "F", value_parser = values::isl_scale, help_heading = INPUT)]
    pub isl_scale: Option<f64>,

    /// Cap every prompt at N tokens, dropping the oldest context after the
    /// system/tool head; a turn keeps extending its capped predecessor
    /// where it fits. Locked under --scenario (no client-side truncation).
    #[arg(long, value_name = "N", value_parser = values::max_context, help_heading = INPUT)]
    pub max_context: Option<u32>,
}
