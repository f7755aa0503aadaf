//! Merging the run directories of `arbor run --shard I/N` into one run
//! directory, which `arbor summarize`, `report`, `compare` and `export`
//! read like any other.
//!
//! Owns what the merged directory holds besides its records
//! (`merge::records`): `run.json` (rank 0's, with the planned requests
//! added up, each lane from the shard that played it, and `config.shard`
//! listing every shard and its barrier record), `end.json` (when every
//! shard ended cleanly: counts added up, the longest elapsed time, the
//! peaks of the union of the records) and `trees.jsonl` (one workload:
//! shard 0's). `summary.json` and `report.html` are then rebuilt from the
//! merged files by `arbor summarize`'s own path
//! ([`crate::summarize::rebuild`], hence `Summary::build`), so the merged
//! figures are recomputed from the records, never averaged. Not merged:
//! `planned.json` (binned per shard) and `metrics.jsonl` (each shard
//! scraped the same server); the planned peak is the sum of the shards'
//! (an upper bound).

use std::path::{Path, PathBuf};

use crate::history::HistoryCounts;
use crate::journal::{self, RunEnd, RunStart};
use crate::output::{OutputDir, PLANNED_FILE, SUMMARY_FILE};
use crate::records_file::{Lines, RECORDS_FILE};
use crate::server_metrics::METRICS_FILE;
use crate::shape::TREES_FILE;
use crate::sharding::{MergedShard, ShardConfig};
use crate::summarize::{self, Derived};
use arbor_error::Error;

use super::shards::{self, Identity};

/// What a merge wrote.
#[derive(Debug)]
pub struct Written {
    pub shards: u32,
    pub records: u64,
    /// Every shard ended cleanly (wrote `end.json`).
    pub complete: bool,
    /// Shards whose records ended in a torn line (skipped).
    pub torn: Vec<String>,
}

/// One shard's directory, read.
struct Shard {
    dir: PathBuf,
    start: RunStart,
    end: Option<RunEnd>,
    config: ShardConfig,
}

/// Merges the shard run directories `inputs` into the new (or empty,
/// or with `force` any) directory `out`.
pub fn merge(inputs: &[PathBuf], out: &Path, force: bool) -> Result<Written, Error> {
    let mut read = Vec::with_capacity(inputs.len());
    for dir in inputs {
        if same_dir(dir, out) {
            return Err(Error::input(format!(
                "-o {}: one of the shards; write the merged run elsewhere",
                out.display()
            )));
        }
        read.push(shard(dir)?);
    }
    let identities: Vec<Identity> = read
        .iter()
        .map(|s| Identity {
            name: s.dir.display().to_string(),
            index: s.config.index.unwrap_or(0),
            count: s.config.count,
            seed: s.start.config.seed,
            workload: s.config.workload.clone(),
            policy: s.config.policy.clone(),
        })
        .collect();
    let order = shards::in_index_order(&identities)?;
    let mut slots: Vec<Option<Shard>> = read.into_iter().map(Some).collect();
    let shards: Vec<Shard> = order.iter().filter_map(|&i| slots[i].take()).collect();

    let claimed = OutputDir::check(out.to_path_buf(), force)?.create()?;
    let out = claimed.path.as_path();
    let dirs: Vec<&Path> = shards.iter().map(|s| s.dir.as_path()).collect();
    let mut derived = Derived::default();
    let found = super::records::merge(
        &dirs,
        &out.join(RECORDS_FILE),
        &shards[0].start.tree_turns,
        &mut derived,
    )?;
    let start = merged_start(&shards, &found, out);
    let start = journal::write_json(out, journal::RUN_FILE, &start)?;
    let ends: Option<Vec<&RunEnd>> = shards.iter().map(|s| s.end.as_ref()).collect();
    match &ends {
        Some(ends) => {
            let end = merged_end(ends, derived.end(&start));
            journal::write_json(out, journal::END_FILE, &end)?;
        }
        // Under --force, an earlier merge's end must not stay.
        None => remove_stale(&out.join(journal::END_FILE))?,
    }
    let trees = shards[0].dir.join(TREES_FILE);
    if trees.is_file() {
        std::fs::copy(&trees, out.join(TREES_FILE))
            .map_err(|e| Error::other(format!("{}: cannot copy: {e}", trees.display())))?;
    } else {
        remove_stale(&out.join(TREES_FILE))?;
    }
    // Not merged: under --force, none of an earlier run's may stay.
    remove_stale(&out.join(PLANNED_FILE))?;
    remove_stale(&out.join(METRICS_FILE))?;
    let rebuilt = summarize::rebuild(out)?;
    journal::write_atomic(out, SUMMARY_FILE, &rebuilt.summary.to_bytes()?)?;
    Ok(Written {
        shards: shards.len() as u32,
        records: rebuilt.records,
        complete: ends.is_some(),
        torn: shards
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.torn.is_some())
            .map(|(s, _)| s.dir.display().to_string())
            .collect(),
    })
}

/// `a` and `b` name one directory (`b` need not exist).
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Removes `path` if it is there.
fn remove_stale(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::other(format!(
            "{}: cannot remove: {e}",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// A shard's `run.json`, `end.json` (if it ended cleanly) and its
/// `config.shard`.
fn shard(dir: &Path) -> Result<Shard, Error> {
    let path = dir.join(journal::RUN_FILE);
    if !path.is_file() {
        return Err(Error::input(format!(
            "{}: missing: not the output directory of `arbor run --shard I/N`, or the run \
             stopped before its clock started",
            path.display()
        )));
    }
    let start: RunStart = journal::read_json(&path, journal::RUN_SCHEMA)?;
    let Some(config) = start.config.shard.clone() else {
        return Err(Error::input(format!(
            "{}: not a shard: its run.json has no config.shard (run with --shard I/N)",
            dir.display()
        )));
    };
    if config.index.is_none() {
        return Err(Error::input(format!(
            "{}: already a merged run (merge the shards' own directories)",
            dir.display()
        )));
    }
    let end_path = dir.join(journal::END_FILE);
    let end = if end_path.is_file() {
        Some(journal::read_json(&end_path, journal::END_SCHEMA)?)
    } else {
        None
    };
    Ok(Shard {
        dir: dir.to_path_buf(),
        start,
        end,
        config,
    })
}

/// `run.json` of the merged run: rank 0's, with what the shards add up
/// to. `shards` are in index order.
fn merged_start(shards: &[Shard], found: &[Lines], out: &Path) -> RunStart {
    let first = &shards[0];
    let count = shards.len();
    let mut start = first.start.clone();
    start.started_at = shards
        .iter()
        .map(|s| s.start.started_at.clone())
        .min()
        .unwrap_or_default();
    let busiest = shards
        .iter()
        .max_by_key(|s| s.start.planned.peak_inflight)
        .map_or(&first.start.planned, |s| &s.start.planned);
    start.planned.peak_inflight_at_s = busiest.peak_inflight_at_s;
    start.planned.peak_inflight = shards.iter().map(|s| s.start.planned.peak_inflight).sum();
    start.planned.dispatched = shards.iter().map(|s| s.start.planned.dispatched).sum();
    start.profiling_start_ns = shards
        .iter()
        .map(|s| s.start.profiling_start_ns)
        .max()
        .unwrap_or(0);
    // Lane k is played by shard k mod N; the others hold it idle.
    start.lanes = first.start.lanes.as_ref().map(|lanes| {
        (0..lanes.len())
            .map(|k| {
                shards[k % count]
                    .start
                    .lanes
                    .as_ref()
                    .and_then(|l| l.get(k).cloned())
                    .unwrap_or_else(|| lanes[k].clone())
            })
            .collect()
    });
    start.config.out = out.display().to_string();
    start.config.barrier = None;
    start.config.shard = Some(ShardConfig {
        index: None,
        shards: shards
            .iter()
            .zip(found)
            .map(|(s, f)| MergedShard {
                index: s.config.index.unwrap_or(0),
                dir: s.dir.display().to_string(),
                records: f.records,
                barrier: s.start.config.barrier.clone(),
            })
            .collect(),
        ..first.config.clone()
    });
    start
}

/// `end.json` of the merged run: the shards' counts added up, the longest
/// elapsed time, each lane from the shard that played it, and the peaks
/// `derived` from the union of the records.
fn merged_end(ends: &[&RunEnd], derived: RunEnd) -> RunEnd {
    let count = ends.len();
    let sum = |f: fn(&RunEnd) -> u64| ends.iter().map(|e| f(e)).sum::<u64>();
    RunEnd {
        schema_version: journal::END_SCHEMA.to_string(),
        cancelled: ends.iter().any(|e| e.cancelled),
        stopped_by: ends.iter().find_map(|e| e.stopped_by.clone()),
        elapsed_ns: ends.iter().map(|e| e.elapsed_ns).max().unwrap_or(0),
        profiling_start_ns: ends.iter().map(|e| e.profiling_start_ns).max().unwrap_or(0),
        skipped: sum(|e| e.skipped),
        plays_started: sum(|e| e.plays_started),
        plays_done: sum(|e| e.plays_done),
        plays_not_started: sum(|e| e.plays_not_started),
        idle_shifts: sum(|e| e.idle_shifts),
        idle_skipped_ns: sum(|e| e.idle_skipped_ns),
        lanes: (0..ends[0].lanes.len())
            .map(|k| ends[k % count].lanes.get(k).cloned().unwrap_or_default())
            .collect(),
        history: ends
            .iter()
            .fold(None, |sum, e| HistoryCounts::joined(sum, e.history)),
        ..derived
    }
}
