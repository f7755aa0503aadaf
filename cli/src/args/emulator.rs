//! The built-in emulator's model and faults (docs/emulator.md), shared by
//! `arbor emulate` and by `arbor run` without `--endpoint`. Parsed by the
//! emulator's own value parsers (`arbor::sim::emulator::flags`).

use std::path::PathBuf;

use arbor::engine::time::Nanos;
use arbor::sim::emulator::{flags, FailStatus};
use clap::Args;

use super::heading::EMULATOR;

/// The emulator's model and faults (see docs/emulator.md).
#[derive(Debug, Args, Clone, Default)]
pub struct EmulatorArgs {
    /// Serve under the batching server model of this profile (queueing,
    /// batching, KV and prefix cache; replaces the timing flags).
    #[arg(long, value_name = "PROFILE.toml", help_heading = EMULATOR, conflicts_with_all = ["ttft_ms", "itl_ms", "prefill_tok_s", "decode_tok_s", "cache_blocks"])]
    pub profile: Option<PathBuf>,
    /// Emulated time to first token, ms.
    #[arg(long, value_name = "MS", value_parser = flags::ttft_ms, help_heading = EMULATOR)]
    pub ttft_ms: Option<Nanos>,
    /// Emulated inter-token latency, ms.
    #[arg(long, value_name = "MS", value_parser = flags::itl_ms, help_heading = EMULATOR)]
    pub itl_ms: Option<Nanos>,
    /// Prefill rate: TTFT grows by uncached prompt tokens / this rate.
    #[arg(long, value_name = "TOK_S", value_parser = flags::prefill_tok_s, help_heading = EMULATOR)]
    pub prefill_tok_s: Option<u64>,
    /// Decode rate (instead of --itl-ms).
    #[arg(long, value_name = "TOK_S", value_parser = flags::decode_tok_s, conflicts_with = "itl_ms", help_heading = EMULATOR)]
    pub decode_tok_s: Option<Nanos>,
    /// Context length reported by /v1/models and enforced.
    #[arg(long, value_name = "TOKENS", value_parser = flags::max_model_len, help_heading = EMULATOR)]
    pub max_model_len: Option<u32>,
    /// Model name served.
    #[arg(long, value_name = "NAME", value_parser = flags::model_name, help_heading = EMULATOR)]
    pub model_name: Option<String>,
    /// Prefix-cache capacity in 64-token blocks (0 disables; default unbounded).
    #[arg(long, value_name = "N", value_parser = flags::cache_blocks, help_heading = EMULATOR)]
    pub cache_blocks: Option<usize>,
    /// Fraction of requests answered with an error status.
    #[arg(long, value_name = "P", value_parser = flags::fail_rate, help_heading = EMULATOR)]
    pub fail_rate: Option<f64>,
    /// That status: 500, 429 (with Retry-After) or 529 (overloaded).
    #[arg(long, value_name = "CODE", value_parser = flags::fail_status, help_heading = EMULATOR)]
    pub fail_status: Option<FailStatus>,
    /// Retry-After seconds of a 429.
    #[arg(long, value_name = "S", value_parser = flags::retry_after_s, help_heading = EMULATOR)]
    pub retry_after_s: Option<u64>,
    /// Fraction of streams cut after --disconnect-after chunks.
    #[arg(long, value_name = "P", value_parser = flags::disconnect_rate, help_heading = EMULATOR)]
    pub disconnect_rate: Option<f64>,
    /// Content chunks a cut stream writes first.
    #[arg(long, value_name = "N", value_parser = flags::disconnect_after, help_heading = EMULATOR)]
    pub disconnect_after: Option<u32>,
    /// Fraction of streams that stall --stall-s after the first chunk.
    #[arg(long, value_name = "P", value_parser = flags::stall_rate, help_heading = EMULATOR)]
    pub stall_rate: Option<f64>,
    /// How long a stalled stream pauses, seconds.
    #[arg(long, value_name = "S", value_parser = flags::stall_s, help_heading = EMULATOR)]
    pub stall_s: Option<Nanos>,
    /// Fraction of streams with a malformed SSE line.
    #[arg(long, value_name = "P", value_parser = flags::malformed_rate, help_heading = EMULATOR)]
    pub malformed_rate: Option<f64>,
    /// End every stream after at most N tokens, whatever max_tokens asks (a model that stops early on a server that ignores ignore_eos).
    #[arg(long, value_name = "N", value_parser = flags::eos_after, help_heading = EMULATOR)]
    pub eos_after: Option<u32>,
    /// Answer under this model name instead of --model-name (a router that served the request with another model).
    #[arg(long, value_name = "NAME", value_parser = flags::model_name, help_heading = EMULATOR)]
    pub answer_as: Option<String>,
}
