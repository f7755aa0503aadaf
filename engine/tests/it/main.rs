//! arbor-engine's integration tests: engine parts driven through the
//! public API on hand-built workloads (the same parts on real recordings,
//! read through the loaders, are `arbor-formats`' tests: the engine does
//! not depend on the readers).

mod cache_warmup;
