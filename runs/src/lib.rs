//! arbor-runs: the run directory, the one owner of what a run leaves on
//! disk and what it adds up to.
//!
//! A run directory holds `run.json` at the start and `end.json` at the end
//! ([`journal`]), `records.jsonl` as requests finish ([`record`], the line;
//! [`records_file`], reading it back; [`record_line`], the one reader of
//! a line), `summary.json` ([`output`]: the directory's rules and the
//! summary; [`collector`], the figures the records add up to; [`latency`],
//! a latency's values in bounded memory), `trees.jsonl`
//! ([`shape`]), `metrics.jsonl` ([`server_metrics`]) and `planned.json`.
//! Around them: [`summarize`] (the summary rebuilt from the files),
//! [`merge`] (shards joined), [`aggregate`] (repeated runs and their
//! spread), [`metric`] (the metric vocabulary, declared once),
//! [`identity`] (the hashes of what a run measured, which `compare`
//! checks), [`sharding`] and [`shard_manifest`] (a shard's identity),
//! [`recipe`] (the validity stamp), [`seen`] (a record there twice),
//! [`earliest`] (the first stretch of a long run, for readers that keep
//! whole records), [`watch`] (a running run's records read back for a
//! live display), [`warnings`] (what a reader must be
//! told before the figures), [`history`] (live history's counts),
//! [`breaker`] (a run stopped when its requests
//! keep failing the same way), [`time_breakdown`] (where the time went,
//! as the reports show it), [`reuse`] (prefix reuse, best possible against
//! predicted against achieved), and the shapes the plan report shares
//! ([`policy`], [`work`]). Every whole JSON file is read through
//! [`file_cap`] (a regular file, at most 256 MiB).
//!
//! Reads and writes files, never the network or a clock; prints nothing
//! (the front end words what happened).
#![forbid(unsafe_code)]

pub mod aggregate;
pub mod breaker;
pub mod collector;
pub mod config;
pub mod earliest;
pub mod file_cap;
pub mod history;
pub mod identity;
pub mod journal;
pub mod latency;
pub mod merge;
pub mod metric;
pub mod output;
pub mod policy;
pub mod recipe;
pub mod record;
pub mod record_line;
pub mod records_file;
pub mod replicas;
pub mod reuse;
pub mod seen;
pub mod server_metrics;
pub mod shape;
pub mod shard_manifest;
pub mod sharding;
pub mod summarize;
pub mod time_breakdown;
pub mod warnings;
pub mod watch;
pub mod work;
