//! `arbor calibrate`'s flags.

use std::path::PathBuf;

use clap::Args;

use super::heading::{INPUT, OUTPUT, SERVER};

/// Fitting a server profile from live runs.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Run directories of `arbor run` against the one server to fit
    /// (records.jsonl; run.json and metrics.jsonl when present). Runs at
    /// several loads identify more of the model.
    #[arg(value_name = "RUN_DIR", required = true, help_heading = INPUT)]
    pub run_dirs: Vec<PathBuf>,

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
