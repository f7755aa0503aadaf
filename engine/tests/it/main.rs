//! arbor-engine's integration tests: engine parts checked on real
//! recordings, read through the public loader (engine modules outside
//! `load` may not import it; these tests may).

mod cache_warmup;
mod start;
