//! arbor's guarantees as properties, one test binary. Each property's doc
//! comment says what it guarantees to a user; `docs/testing.md` lists them.
//! `PROPTEST_CASES=N` raises the number of cases (CI runs the defaults in
//! each module); failing cases are stored in `proptest-regressions/` and
//! replayed first on every run.

mod api;
mod breakdown;
mod cache_warmup;
mod determinism;
mod fit;
mod identity;
mod loaders;
mod oracle;
mod prefix_keys;
mod scheduling;
mod server;
mod shard;
mod writers;
