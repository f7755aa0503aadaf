//! `arbor calibrate`'s flags.

use std::path::PathBuf;

use arbor::backends::live::request::Api;
use arbor::engine::time::Nanos;
use arbor::json::{Map, Value};
use clap::Args;

use super::heading::{INPUT, OUTPUT, SERVER};
use super::values;

/// Fitting a server profile from live runs.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Run directories of `arbor run` against the one server to fit
    /// (records.jsonl; run.json and metrics.jsonl when present). Runs at
    /// several loads identify more of the model.
    #[arg(value_name = "RUN_DIR", required_unless_present = "probe", conflicts_with = "probe", help_heading = INPUT)]
    pub run_dirs: Vec<PathBuf>,

    /// Run a designed experiment against --endpoint and fit its runs
    /// (docs/capacity.md, "The probe"), instead of RUN_DIRs.
    #[arg(long, requires = "endpoint", help_heading = INPUT)]
    pub probe: bool,

    /// Fit RUN_DIRs (a probe's phase directories) as --probe fits them:
    /// lone requests on their whole time, late stamps left out, no stage
    /// B.
    #[arg(long, conflicts_with = "probe", help_heading = INPUT)]
    pub probe_fit: bool,

    /// With --probe: the server's base URL.
    #[arg(long, value_name = "URL", requires = "probe", value_parser = arbor::backends::endpoint::normalize_endpoint, help_heading = SERVER)]
    pub endpoint: Option<String>,

    /// With --probe: how long to wait for a server still loading (0: ask
    /// once).
    #[arg(long, value_name = "DURATION", default_value = "10", value_parser = values::duration, help_heading = SERVER)]
    pub ready_timeout: Nanos,

    /// With --probe: the model name sent (default: the server's first).
    #[arg(short = 'm', long, value_name = "M", requires = "probe", help_heading = SERVER)]
    pub model: Option<String>,

    /// With --probe: chat, completions, messages or responses.
    #[arg(long, value_name = "API", default_value = "chat", value_parser = values::api, help_heading = SERVER)]
    pub api: Api,

    /// With --probe: an extra request header K=V (repeatable).
    #[arg(short = 'H', long = "header", value_name = "K=V", requires = "probe", help_heading = SERVER)]
    pub headers: Vec<String>,

    /// With --probe: a JSON object merged into every request body
    /// (e.g. a logit_bias that bans the EOS token).
    #[arg(long, value_name = "JSON", requires = "probe", value_parser = values::json_object, help_heading = SERVER)]
    pub extra_body: Option<Map<String, Value>>,

    /// With --probe: send `ignore_eos: true` (vLLM, SGLang).
    #[arg(long, requires = "probe", help_heading = SERVER)]
    pub ignore_eos: bool,

    /// With --probe: count prompt tokens with this tokenizer.json.
    #[arg(long, value_name = "FILE", requires = "probe", help_heading = INPUT)]
    pub tokenizer: Option<PathBuf>,

    /// With --probe: where each phase's run goes (default: PROFILE.probe).
    #[arg(long, value_name = "DIR", requires = "probe", help_heading = OUTPUT)]
    pub probe_out: Option<PathBuf>,

    /// With --probe: the most tokens one request may hold (default: the
    /// KV pool's share of a sequence, at most 3 token budgets).
    #[arg(long, value_name = "N", requires = "probe", help_heading = SERVER)]
    pub max_context: Option<u32>,

    /// With --probe: output tokens of each decode-batch request.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u32).range(2..=4096), help_heading = INPUT)]
    pub probe_output_tokens: u32,

    /// With --probe: send each lone prompt N times; the quickest counts.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=20), help_heading = INPUT)]
    pub probe_repeat: u32,

    /// Bootstrap resamples of each coefficient's interval (0: none).
    #[arg(long, value_name = "N", default_value_t = 40, value_parser = clap::value_parser!(u32).range(0..=10000), help_heading = OUTPUT)]
    pub bootstrap: u32,

    /// Where to write the fitted profile (TOML, docs/capacity.md).
    #[arg(short = 'o', long = "out", visible_alias = "output", value_name = "PROFILE.toml", help_heading = OUTPUT)]
    pub out: PathBuf,

    /// The server's most sequences in one batch (vLLM --max-num-seqs).
    #[arg(long, value_name = "N", help_heading = SERVER)]
    pub max_num_seqs: Option<u32>,

    /// The server's token budget of one step (vLLM
    /// --max-num-batched-tokens).
    #[arg(long, value_name = "N", help_heading = SERVER)]
    pub max_num_batched_tokens: Option<u32>,

    /// Tokens per KV block. Default: the runs' scraped
    /// cache_config_info (vLLM), when they have one.
    #[arg(long, value_name = "N", help_heading = SERVER)]
    pub block_size: Option<u32>,

    /// KV blocks on the GPU. Default: the runs' scraped
    /// cache_config_info (vLLM), when they have one.
    #[arg(long, value_name = "N", help_heading = SERVER)]
    pub num_gpu_blocks: Option<u32>,

    /// Keep stage A's least-squares fit as it is: no correction factors
    /// fitted by replaying the runs through the model (stage B).
    #[arg(long, help_heading = OUTPUT)]
    pub no_correction: bool,
}
