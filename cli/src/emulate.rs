//! `arbor emulate`, and the built-in emulator's configuration from its
//! flags, which `arbor run` also uses when it starts the emulator
//! in-process (no `--endpoint`; run's `--tokenizer` then counts the
//! emulator's prompt tokens too).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use arbor_sim::emulator::{serve, EmulatorConfig, EmulatorFlags};
use clap::{Args, Command};

use crate::args::{EmulateArgs, EmulatorArgs};
use crate::failure::Failure;
use crate::scenario::Explicit;
use crate::{runtime, stdout};

/// The emulator configuration the flags describe, with the fault seed and
/// the tokenizer that counts prompt text (none: the estimate).
pub fn config(
    args: &EmulatorArgs,
    seed: u64,
    tokenizer: Option<&Path>,
) -> Result<EmulatorConfig, Failure> {
    let mut config = EmulatorFlags {
        ttft_ms: args.ttft_ms,
        itl_ms: args.itl_ms,
        prefill_tok_s: args.prefill_tok_s,
        decode_tok_s: args.decode_tok_s,
        max_model_len: args.max_model_len,
        model_name: args.model_name.clone(),
        cache_blocks: args.cache_blocks,
        fail_rate: args.fail_rate,
        fail_status: args.fail_status,
        retry_after_s: args.retry_after_s,
        disconnect_rate: args.disconnect_rate,
        disconnect_after: args.disconnect_after,
        stall_rate: args.stall_rate,
        stall_s: args.stall_s,
        malformed_rate: args.malformed_rate,
        seed: Some(seed),
    }
    .into_config()
    .map_err(Failure::input)?;
    config.tokenizer = tokenizer.map(crate::tokenizer::for_emulator).transpose()?;
    Ok(config)
}

/// The emulator flags given on the command line, as `--name`.
pub fn flags_given(explicit: &Explicit) -> Vec<String> {
    EmulatorArgs::augment_args(Command::new("emulator"))
        .get_arguments()
        .filter(|arg| explicit.has(arg.get_id().as_str()))
        .filter_map(|arg| arg.get_long().map(|long| format!("--{long}")))
        .collect()
}

/// `arbor emulate`: serve until Ctrl+C.
pub fn run(args: &EmulateArgs) -> Result<(), Failure> {
    let config = config(&args.emulator, args.seed, args.tokenizer.as_deref())?;
    let runtime = runtime::two_workers()?;
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
        stdout::print(|out| {
            writeln!(
                out,
                "arbor emulate: listening on {} (Ctrl+C stops)",
                emulator.base_url()
            )
        })?;
        let _ = tokio::signal::ctrl_c().await;
        emulator.shutdown().await;
        Ok(())
    })
}
