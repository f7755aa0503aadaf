//! The tokio runtimes of the commands that do network I/O: the live run's
//! single-threaded client, the in-process emulator's, `arbor emulate`'s and
//! `arbor doctor`'s; and the file-descriptor limit those runtimes' sockets
//! count against ([`raise_fd_limit`]).

use arbor_error::Error;

/// A runtime with `workers` threads (the in-process emulator).
pub fn with_workers(workers: usize) -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("arbor")
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}")))
}

/// A two-worker runtime (`arbor emulate`, `arbor doctor`).
pub fn two_workers() -> Result<tokio::runtime::Runtime, Error> {
    with_workers(2)
}

/// The runtime of a live run's client: one thread runs the driver's loop,
/// every request's task and the I/O driver. No request ever waits for
/// another thread to wake: cross-thread wake-ups (futex calls, a spawn
/// unparking a worker, a completion unparking the loop) were half the CPU
/// of a short request. One core carries 2 M streamed tokens per second.
pub fn client() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::other(format!("cannot start the async runtime: {e}")))
}

/// The file-descriptor limit (`RLIMIT_NOFILE`) of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    /// What the process may open now (after [`raise_fd_limit`]).
    pub soft: u64,
    /// What the soft limit may be raised to without privileges.
    pub hard: u64,
}

/// Linux's default `fs.nr_open`: the most descriptors a process may have.
const NR_OPEN: u64 = 1 << 20;

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (every connection is
/// a descriptor; the usual soft limit, 1024 or 256, is far below what a
/// run of thousands of sessions opens). Prints nothing; returns the limit
/// in force afterwards, or `None` when it cannot be read.
pub fn raise_fd_limit() -> Option<FdLimit> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
    // An unlimited hard limit is capped by the kernel's `nr_open`
    // (1048576 by default): try the hard limit, then that.
    for target in [hard, hard.min(NR_OPEN)] {
        if soft < target && setrlimit(Resource::RLIMIT_NOFILE, target, hard).is_ok() {
            return Some(FdLimit { soft: target, hard });
        }
    }
    Some(FdLimit { soft, hard })
}
