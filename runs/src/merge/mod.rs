//! Shards of one plan or run joined into the unsharded result (`arbor
//! merge`).
//!
//! `shards.rs` the check that the inputs belong together, `timeline.rs`
//! the streaming merge of plan timelines (their manifests are
//! `crate::shard_manifest`'s, which `plan` writes), `run_dir.rs` the
//! merge of run directories and `records.rs` their records' streaming
//! merge. Uses `summarize` (the merged summary is its rebuild); prints
//! nothing and writes no page (the front end does both).

mod records;
pub mod run_dir;
mod shards;
pub mod timeline;
