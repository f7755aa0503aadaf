//! `arbor emulate`, and the emulator flags `arbor run` shares when it
//! starts the emulator in-process (no `--endpoint`).

use std::net::{Ipv4Addr, SocketAddr};

use arbor_sim::emulator::{serve, EmulatorConfig, EmulatorFlags};
use clap::Args;

use crate::Failure;

/// The emulator's model and faults (see docs/emulator.md).
#[derive(Debug, Args, Clone, Default)]
pub struct EmulatorArgs {
    /// Emulated time to first token, ms.
    #[arg(long, value_name = "MS", help_heading = "Emulator")]
    pub ttft_ms: Option<String>,
    /// Emulated inter-token latency, ms.
    #[arg(long, value_name = "MS", help_heading = "Emulator")]
    pub itl_ms: Option<String>,
    /// Prefill rate: TTFT grows by uncached prompt tokens / this rate.
    #[arg(long, value_name = "TOK_S", help_heading = "Emulator")]
    pub prefill_tok_s: Option<String>,
    /// Decode rate (instead of --itl-ms).
    #[arg(long, value_name = "TOK_S", help_heading = "Emulator")]
    pub decode_tok_s: Option<String>,
    /// Context length reported by /v1/models and enforced.
    #[arg(long, value_name = "TOKENS", help_heading = "Emulator")]
    pub max_model_len: Option<String>,
    /// Model name served.
    #[arg(long, value_name = "NAME", help_heading = "Emulator")]
    pub model_name: Option<String>,
    /// Prefix-cache capacity in 64-token blocks (0 disables; default unbounded).
    #[arg(long, value_name = "N", help_heading = "Emulator")]
    pub cache_blocks: Option<String>,
    /// Fraction of requests answered with an error status.
    #[arg(long, value_name = "P", help_heading = "Emulator faults")]
    pub fail_rate: Option<String>,
    /// That status: 500 or 429 (with Retry-After).
    #[arg(long, value_name = "CODE", help_heading = "Emulator faults")]
    pub fail_status: Option<String>,
    /// Retry-After seconds of a 429.
    #[arg(long, value_name = "S", help_heading = "Emulator faults")]
    pub retry_after_s: Option<String>,
    /// Fraction of streams cut after --disconnect-after chunks.
    #[arg(long, value_name = "P", help_heading = "Emulator faults")]
    pub disconnect_rate: Option<String>,
    #[arg(long, value_name = "N", help_heading = "Emulator faults")]
    pub disconnect_after: Option<String>,
    /// Fraction of streams that stall --stall-s after the first chunk.
    #[arg(long, value_name = "P", help_heading = "Emulator faults")]
    pub stall_rate: Option<String>,
    #[arg(long, value_name = "S", help_heading = "Emulator faults")]
    pub stall_s: Option<String>,
    /// Fraction of streams with a malformed SSE line.
    #[arg(long, value_name = "P", help_heading = "Emulator faults")]
    pub malformed_rate: Option<String>,
}

impl EmulatorArgs {
    /// The flags as the emulator's own, in one place.
    pub fn flags(&self, seed: Option<u64>) -> Result<EmulatorFlags, Failure> {
        let mut flags = EmulatorFlags::default();
        let pairs = [
            ("ttft-ms", &self.ttft_ms),
            ("itl-ms", &self.itl_ms),
            ("prefill-tok-s", &self.prefill_tok_s),
            ("decode-tok-s", &self.decode_tok_s),
            ("max-model-len", &self.max_model_len),
            ("model-name", &self.model_name),
            ("cache-blocks", &self.cache_blocks),
            ("fail-rate", &self.fail_rate),
            ("fail-status", &self.fail_status),
            ("retry-after-s", &self.retry_after_s),
            ("disconnect-rate", &self.disconnect_rate),
            ("disconnect-after", &self.disconnect_after),
            ("stall-rate", &self.stall_rate),
            ("stall-s", &self.stall_s),
            ("malformed-rate", &self.malformed_rate),
        ];
        for (flag, value) in pairs {
            if let Some(text) = value {
                flags.set(flag, text).map_err(Failure::input)?;
            }
        }
        flags.seed = seed;
        Ok(flags)
    }
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

    #[command(flatten)]
    pub emulator: EmulatorArgs,
}

/// `arbor emulate`: serve until Ctrl+C.
pub fn run(args: &EmulateArgs) -> Result<(), Failure> {
    let config: EmulatorConfig = args
        .emulator
        .flags(Some(args.seed))?
        .into_config()
        .map_err(Failure::input)?;
    let runtime = crate::run::runtime()?;
    runtime.block_on(async move {
        if args.busy_poll {
            // Yielding forever keeps this worker out of its sleep: it polls
            // the sockets between yields.
            tokio::spawn(async {
                loop {
                    tokio::task::yield_now().await;
                }
            });
        }
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        let emulator = serve(config, addr)
            .await
            .map_err(|e| Failure::other(format!("cannot listen on {addr}: {e}")))?;
        println!(
            "arbor emulate: listening on {} (Ctrl+C stops)",
            emulator.base_url()
        );
        let _ = tokio::signal::ctrl_c().await;
        emulator.shutdown().await;
        Ok(())
    })
}
