//! arbor-formats' integration tests: engine parts checked on real
//! recordings read through the public loader, and on synthetic workloads
//! (the engine does not depend on this crate, so such tests live here).

mod cache_warmup;
mod prompt;
mod start;
