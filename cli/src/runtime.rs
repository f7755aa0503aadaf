//! The tokio runtimes of the commands that do network I/O: the live run's
//! single-threaded client, the in-process emulator's, `arbor emulate`'s and
//! `arbor doctor`'s.

use crate::failure::Failure;

/// A runtime with `workers` threads (the in-process emulator).
pub fn with_workers(workers: usize) -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("arbor")
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the async runtime: {e}")))
}

/// A two-worker runtime (`arbor emulate`, `arbor doctor`).
pub fn two_workers() -> Result<tokio::runtime::Runtime, Failure> {
    with_workers(2)
}

/// The runtime of a live run's client: one thread runs the driver's loop,
/// every request's task and the I/O driver. No request ever waits for
/// another thread to wake: cross-thread wake-ups (futex calls, a spawn
/// unparking a worker, a completion unparking the loop) were half the CPU
/// of a short request. One core carries 2 M streamed tokens per second.
pub fn client() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the async runtime: {e}")))
}
