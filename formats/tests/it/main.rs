//! arbor-formats' integration tests: engine parts checked on real
//! recordings read through the public loader, and on synthetic workloads
//! (the engine does not depend on this crate, so such tests live here);
//! and the datasets' and the bundled sample's identity (`data`).

mod cache_warmup;
mod compressed;
mod data;
mod prompt;
mod start;
