//! The `config` section of `summary.json`: what produced a run, with every
//! secret left out.
//!
//! What it stores is redacted by whoever fills it in (the `arbor` front
//! end's endpoint rules): the API key is never stored (only whether one
//! was set); a header whose name looks like a credential keeps its name
//! and loses its value; user info and credential-looking query parameters
//! are taken out of the endpoint URL.

use std::collections::BTreeMap;

use arbor_engine::fit::FitReport;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::policy::PolicySummary;
use crate::server_metrics::MetricsConfig;
pub use crate::sharding::BarrierRecord;
use crate::sharding::ShardConfig;

/// The part of a corpus a run or plan took (`--trees N` with `--seed`,
/// `--tree NAME`..., `--max-requests N`), and how much that was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubsetRecord {
    /// `--trees N`: a seeded sample of N trees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trees: Option<u32>,
    /// The sample's seed (with `trees`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// `--tree NAME`...: exactly these trees.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tree_names: Vec<String>,
    /// `--max-requests N`: whole trees while their requests add up to N.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u64>,
    /// Trees taken, of how many the corpus had.
    pub kept_trees: u64,
    pub of_trees: u64,
    /// Requests (turns) of the trees taken.
    pub requests: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct RunConfig {
    pub arbor_version: String,
    /// The inputs as `arbor plan` describes them.
    pub inputs: String,
    pub input_paths: Vec<String>,
    pub format: Option<String>,
    pub synthetic: Option<String>,
    pub seed: u64,
    pub policy: PolicySummary,
    /// `--isl-scale`/`--max-context`, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fit: Option<FitReport>,
    /// `--trees`/`--tree`/`--max-requests`: the part of the corpus taken,
    /// when only part was (also said in words in `inputs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<SubsetRecord>,
    /// The trace inputs' identity (docs/data.md, "Manifest"): absent for a
    /// synthetic workload alone or a stream (stdin, a FIFO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<arbor_formats::manifest::Corpus>,
    /// SHA-256 of the compiled workload (`crate::identity`): equal in two
    /// runs of one workload, wherever its files were read from. What
    /// `arbor compare` checks; absent in a run made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_hash: Option<String>,
    /// SHA-256 of the policy without its seed and shard
    /// (`crate::identity`): equal in two runs under one policy. What
    /// `arbor compare` checks; absent in a run made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_hash: Option<String>,
    /// Service model of the planned side.
    pub service: String,
    /// Base URL, redacted.
    pub endpoint: Option<String>,
    /// The URL every request went to, redacted.
    pub url: Option<String>,
    /// The built-in emulator's settings as flags, when it served the run
    /// (`null` against `--endpoint`).
    #[serde(default)]
    pub emulator: Option<String>,
    pub api: String,
    /// `--flatten-tools`: recorded tool calls were sent as text and tool
    /// results as user messages, without the tools; absent (false): the
    /// recorded shape was sent (docs/run.md, "What is sent").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flatten_tools: bool,
    /// `--history`: `recorded` (the recorded answers, the default: not
    /// written) or `live` (each next turn built from the text generated in
    /// the run; docs/run.md, "Live history").
    #[serde(
        default = "crate::history::recorded",
        skip_serializing_if = "crate::history::is_recorded"
    )]
    pub history: String,
    pub model: Option<String>,
    /// How the model was chosen by the pre-flight: `flag` (--model,
    /// listed), `flag-substring` (the one listed id containing --model),
    /// `flag-unlisted` (--allow-unlisted-model), `flag-unchecked` (the
    /// server lists no models), `server` (the one id listed).
    pub model_from: Option<String>,
    pub max_tokens_field: String,
    pub ignore_eos: bool,
    pub extra_body: Option<Map<String, Value>>,
    /// `--header` names and values; credential values redacted.
    pub headers: BTreeMap<String, String>,
    /// Whether an API key was found (the key itself is never stored).
    pub api_key_set: bool,
    /// Where it came from: `env NAME` or `file PATH`.
    #[serde(default)]
    pub api_key_from: Option<String>,
    /// `--cacert`: the PEM file whose CAs alone were trusted over https.
    #[serde(default)]
    pub cacert: Option<String>,
    /// `--insecure`: the server's TLS certificate was not verified.
    #[serde(default)]
    pub insecure: bool,
    pub timeout_s: f64,
    pub retries: u32,
    /// Statuses a refused request was tried again on (`--retry-on`);
    /// absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retry_on: Vec<u16>,
    /// When prompts carried cache-bust markers (`--cache-bust`, a recipe):
    /// the salt they were moved by (`--cache-bust-salt`; a live capacity
    /// probe adds its number). Absent without markers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bust_salt: Option<u64>,
    /// Connections opened before the clock starts (every thread's): the
    /// number asked for.
    pub warm_connections: usize,
    /// Of those, how many the server proved (answered `GET /v1/models` in
    /// full and kept the connection alive); 0 in a run made before it was
    /// recorded.
    #[serde(default)]
    pub warm_connections_proven: usize,
    /// Client threads (`--threads`), each over its stripe of the plan.
    #[serde(default = "one_thread")]
    pub threads: u32,
    pub out: String,
    pub force: bool,
    /// The server metrics scraped into `metrics.jsonl`; absent when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
    /// Under `--repeat N`: which run of the sequence this is, and the
    /// global seed its `seed` derives from; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<RepeatOf>,
    /// How the clock's start was agreed with the other shards
    /// (`--start-at` or the start barrier); absent for a run that started
    /// on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier: Option<BarrierRecord>,
    /// Under `--shard I/N`, and in a run `arbor merge` joined: the stripe
    /// and the rule each global policy followed (`crate::sharding`);
    /// absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardConfig>,
    /// How requests said which conversation they belong to
    /// (`--session-routing`: `affinity`, `dynamo`, `token:HEADER`, `user`,
    /// `header:NAME`, `sglang`, `none`; docs/routing.md); absent in a run
    /// made before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_routing: Option<String>,
    /// With several endpoints (`--endpoint` repeated): every one, redacted,
    /// in order (a record's `replica` is an index here; `endpoint` is the
    /// first). Absent with one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// With several endpoints: how requests were placed on them
    /// (`sticky`, `round-robin`, `least-loaded`, `random`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<String>,
    /// `--replica-header`: the response header whose value records name
    /// as `served_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_header: Option<String>,
}

/// A run directory from before `--threads` ran on one.
fn one_thread() -> u32 {
    1
}

/// Which run of a sequence a run is: recorded in its `run.json` and
/// `summary.json` as `config.repeat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RepeatOf {
    /// 1-based.
    pub run: u32,
    /// Runs planned.
    pub runs: u32,
    /// The global seed the run's own (`config.seed`) derives from.
    pub seed: u64,
}
