//! The library's use cases in-process: no binary spawned, the built-in
//! emulator on 127.0.0.1 where a run needs a server.

mod calibrate_probe;
mod capacity;
mod examples;
mod fleet;
mod gaps;
mod intervals;
mod metrics;
mod plan;
mod reuse;
mod run;
mod server_cache;
mod server_plan;
mod subset;
mod summarize;
mod threads;
mod util;
