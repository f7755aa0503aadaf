//! `arbor run`'s flags for starting shards together (docs/scale-out.md,
//! "Starting together"): `--start-at`, or the start barrier
//! (`--barrier-listen`/`--barrier-size` on rank 0, `--barrier` on the
//! others), and the RFC 3339 parser of `--start-at`'s value. The barrier
//! itself is `crate::run::barrier`'s; this module holds no logic of it.

use std::net::SocketAddr;
use std::path::PathBuf;

use arbor::engine::time::Nanos;
use clap::Args;

use super::heading::LOAD;
use super::values;

pub use arbor::options::UtcNanos;

/// `--start-at`'s value: an RFC 3339 UTC instant.
fn utc_time(text: &str) -> Result<UtcNanos, String> {
    arbor::run::barrier::utc_time(text)
}

/// When the clock starts: now (no flag), at an instant, or at the instant
/// rank 0's barrier announces.
#[derive(Debug, Args, Clone, Default)]
pub struct StartArgs {
    /// Start the clock at this UTC instant, RFC 3339
    /// (`2026-12-01T12:30:00Z`, `...T13:30:00.250+01:00`), for shards
    /// started by hand or by cron. A run that reaches it late fails
    /// (exit 1) instead of starting late.
    #[arg(long, value_name = "UTC_TIME", value_parser = utc_time, conflicts_with_all = ["barrier_listen", "barrier", "repeat"], help_heading = LOAD)]
    pub start_at: Option<UtcNanos>,

    /// Rank 0 of a sharded run (`--shard 0/N`): listen on ADDR:PORT for
    /// the other shards' `--barrier`, measure their clock offsets, and
    /// announce one start instant once --barrier-size shards (this one
    /// included) are there. Not loopback: needs --barrier-token-file.
    #[arg(long, value_name = "ADDR:PORT", requires = "barrier_size", conflicts_with_all = ["barrier", "repeat"], help_heading = LOAD)]
    pub barrier_listen: Option<SocketAddr>,

    /// How many shards meet at the barrier, rank 0 included (N of
    /// `--shard I/N`).
    #[arg(long, value_name = "N", requires = "barrier_listen", value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = LOAD)]
    pub barrier_size: Option<u32>,

    /// A shard other than rank 0 (`--shard I/N`, I ≥ 1): meet rank 0's
    /// barrier at HOST:PORT (retried until it answers) and start at the
    /// instant it announces.
    #[arg(long, value_name = "HOST:PORT", conflicts_with = "repeat", help_heading = LOAD)]
    pub barrier: Option<String>,

    /// How long to wait at the barrier for the other shards (rank 0) or
    /// for rank 0 (the others); past it the run fails without starting.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = values::positive_duration, help_heading = LOAD)]
    pub barrier_timeout: Nanos,

    /// The start barrier's shared token: the first line of FILE, 16 to
    /// 256 visible ASCII characters (`openssl rand -hex 32`), the same for
    /// every shard. Rank 0 refuses a shard without it; a --barrier-listen
    /// address that is not loopback needs it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["start_at", "repeat"], help_heading = LOAD)]
    pub barrier_token_file: Option<PathBuf>,
}
