//! A run's `summary.json` rebuilt from what the run left in its
//! directory (`arbor summarize RUN_DIR`) (`run.json`, `records.jsonl`, `metrics.jsonl` when the
//! server's metrics were scraped, and `end.json` when the run ended
//! cleanly), with the function `arbor run` itself uses
//! ([`Summary::build`]): on a run that ended cleanly the result is the
//! run's own `summary.json`, byte for byte.
//!
//! Owns reading the directory back, the figures of a run that did not end
//! cleanly (killed, a second Ctrl+C, an engine error: no `end.json`), which
//! it derives from the records and marks `"complete": false`, and the rule
//! that nothing is lost: a `summary.json` that differs from the rebuilt one
//! is kept as `summary.json.orig` (or `.orig.2`, ... when that is taken).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use arbor_engine::time::Nanos;

use crate::collector::{Collector, Facts};
use crate::journal::{self, LaneEnd, RunEnd, RunStart};
use crate::output::{Completeness, Summary, RECORDS_FILE, SUMMARY_FILE};
use crate::record::{secs_ns as ns, Status};
use crate::record_line;
use crate::seen::PlayRecords;
use crate::server_metrics::ServerMetrics;
use arbor_error::Error;

/// A summary rebuilt from a run directory.
pub struct Rebuilt {
    pub summary: Summary,
    /// Records read (a torn last line not counted).
    pub records: u64,
}

/// The summary of the run in `dir`, from its files alone.
pub fn rebuild(dir: &Path) -> Result<Rebuilt, Error> {
    if !dir.is_dir() {
        return Err(Error::input(format!(
            "{}: {}",
            dir.display(),
            if dir.exists() {
                "not a directory (give the output directory of `arbor run`)"
            } else {
                "no such directory"
            }
        )));
    }
    let records_path = dir.join(RECORDS_FILE);
    let start_path = dir.join(journal::RUN_FILE);
    // Present but not a regular file (a device, a FIFO) is refused by the
    // reader, by name; only a missing one is explained here.
    if !start_path.exists() {
        let why = if records_path.exists() {
            "the run was made by an older arbor, which wrote no run.json (its summary.json \
             cannot be rebuilt), or was stopped before its clock started"
        } else {
            "this is not the output directory of `arbor run`, or the run was stopped before \
             its clock started"
        };
        return Err(Error::input(format!(
            "{}: missing: {why}",
            start_path.display()
        )));
    }
    if !records_path.exists() {
        return Err(Error::input(format!(
            "{}: missing (run.json is there: the records were moved or deleted)",
            records_path.display()
        )));
    }
    let start: RunStart = journal::read_json(&start_path, journal::RUN_SCHEMA)?;
    let end_path = dir.join(journal::END_FILE);
    let end: Option<RunEnd> = if end_path.exists() {
        Some(journal::read_json(&end_path, journal::END_SCHEMA)?)
    } else {
        None
    };

    let mut collector = Collector::with_warmups(start.warmups.clone(), start.window_start_ns)
        .with_tree_turns(start.tree_turns.clone());
    // Only a run without end.json needs what the records say of its end
    // (this keeps every record's times: not kept when not needed).
    let mut derived = end.is_none().then(Derived::default);
    let mut plays = PlayRecords::new(&start.tree_turns);
    // One buffer for every line's gaps.
    let mut itl = Vec::new();
    let found = record_line::read(&records_path, |line, _| {
        line.itl_s.read_into(&mut itl)?;
        let facts = line.facts(&itl)?;
        if !facts.warmup {
            plays.add(facts.play, facts.tree_index)?;
        }
        collector.add(&facts);
        if let Some(derived) = derived.as_mut() {
            derived.add(&facts);
        }
        Ok(())
    })?;

    let mut notes = Vec::new();
    if let Some(torn) = found.torn {
        notes.push(format!(
            "{RECORDS_FILE} line {}: a torn last line ({} bytes, cut off when the run was \
             killed) was skipped",
            torn.line, torn.bytes
        ));
    }
    let complete = end.is_some();
    let end = match end {
        Some(end) => end,
        None => {
            notes.push(format!(
                "no {}: the run did not end cleanly (killed, a second Ctrl+C, or an engine \
                 error). From the records: elapsed_s (the last stamp), concurrency.observed_peak \
                 and scheduler_peak, counts.plays and plays_done, lanes[].plays (lower bounds: \
                 requests in flight at the end left no record); cancelled is true only if a \
                 record was cancelled. Unknown, shown as 0: counts.skipped, \
                 counts.plays_not_started, idle; profiling_start_s is the planned one",
                journal::END_FILE
            ));
            derived.unwrap_or_default().end(&start)
        }
    };
    let summary = Summary::build(
        &start,
        &end,
        collector.finish(),
        ServerMetrics::of_run_dir(dir)?,
        Completeness { complete, notes },
    );
    Ok(Rebuilt {
        summary,
        records: found.records,
    })
}

/// What the records say of the figures only a clean end knows (also what
/// `arbor merge` knows of the peaks of the shards' union).
#[derive(Debug, Default)]
pub struct Derived {
    last: Nanos,
    /// (time, +1 sent / -1 done) of the requests the driver saw in flight.
    sent: Vec<(Nanos, i8)>,
    /// (time, +1 dispatched / -1 done) as the scheduler counts in flight.
    dispatched: Vec<(Nanos, i8)>,
    /// Records per play, and each play's tree.
    plays: BTreeMap<u32, (u32, u32)>,
    lane_plays: BTreeMap<u32, BTreeSet<u32>>,
    cancelled: bool,
}

impl Derived {
    pub(crate) fn add(&mut self, r: &Facts) {
        let dispatched = ns(r.dispatched_s);
        let sent = r.sent_s.map(ns);
        let done = r.done_s.map(ns);
        self.last = [Some(dispatched), sent, done]
            .into_iter()
            .flatten()
            .fold(self.last, Nanos::max);
        if let Some(d) = done {
            self.dispatched.extend([(dispatched, 1), (d, -1)]);
            if let Some(s) = sent {
                self.sent.extend([(s, 1), (d, -1)]);
            }
        }
        self.plays.entry(r.play).or_insert((r.tree_index, 0)).1 += 1;
        if let Some(lane) = r.lane {
            self.lane_plays.entry(lane).or_default().insert(r.play);
        }
        self.cancelled |= r.status == Status::Cancelled;
    }

    pub(crate) fn end(mut self, start: &RunStart) -> RunEnd {
        let (observed_peak, _) = peak(&mut self.sent);
        let (scheduler_peak, scheduler_peak_at_ns) = peak(&mut self.dispatched);
        let plays_done = self
            .plays
            .values()
            .filter(|&&(tree, records)| {
                start
                    .tree_turns
                    .get(tree as usize)
                    .is_some_and(|&turns| records >= turns)
            })
            .count() as u64;
        let lanes = start.lanes.as_ref().map_or(0, Vec::len) as u32;
        RunEnd {
            schema_version: journal::END_SCHEMA.to_string(),
            cancelled: self.cancelled,
            elapsed_ns: self.last,
            observed_peak,
            profiling_start_ns: start.profiling_start_ns,
            plays_started: self.plays.len() as u64,
            plays_done,
            scheduler_peak: u32::try_from(scheduler_peak).unwrap_or(u32::MAX),
            scheduler_peak_at_ns,
            lanes: (0..lanes)
                .map(|lane| LaneEnd {
                    plays: self.lane_plays.get(&lane).map_or(0, |p| p.len() as u32),
                    stalled: false,
                })
                .collect(),
            ..RunEnd::default()
        }
    }
}

/// Most intervals open at once, and when that was first reached (an end
/// and a start at one instant: the end first).
fn peak(events: &mut [(Nanos, i8)]) -> (u64, Nanos) {
    events.sort_unstable();
    let (mut open, mut best, mut at) = (0i64, 0i64, 0);
    for &(t, delta) in events.iter() {
        open += i64::from(delta);
        if open > best {
            (best, at) = (open, t);
        }
    }
    (best as u64, at)
}

/// How `summary.json` was written.
pub enum Kept {
    /// None was there.
    New,
    /// The one there was identical.
    Unchanged,
    /// The one there differed and was moved here.
    Old(PathBuf),
}

/// Writes `bytes` as `dir/summary.json`, keeping a different one that was
/// there as `summary.json.orig` (`.orig.2`, ... if taken).
pub fn write_keeping_old(dir: &Path, bytes: &[u8]) -> Result<Kept, Error> {
    let path = dir.join(SUMMARY_FILE);
    let kept = match crate::file_cap::read(&path) {
        Ok(old) if old == bytes => return Ok(Kept::Unchanged),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Kept::New,
        // Another summary, or one that cannot be read back (not a regular
        // file, too long): kept, never overwritten.
        _ => {
            let old = (1u32..)
                .map(|i| match i {
                    1 => dir.join(format!("{SUMMARY_FILE}.orig")),
                    i => dir.join(format!("{SUMMARY_FILE}.orig.{i}")),
                })
                .find(|p| !p.exists())
                .unwrap_or_else(|| dir.join(format!("{SUMMARY_FILE}.orig")));
            fs::rename(&path, &old).map_err(|e| {
                Error::other(format!(
                    "{}: cannot keep the old summary as {}: {e}",
                    path.display(),
                    old.display()
                ))
            })?;
            Kept::Old(old)
        }
    };
    journal::write_atomic(dir, SUMMARY_FILE, bytes)?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_count_an_end_before_a_start_at_one_instant() {
        let mut e = vec![(0, 1), (10, -1), (10, 1), (20, -1), (5, 1), (15, -1)];
        assert_eq!(peak(&mut e), (2, 5));
        assert_eq!(peak(&mut []), (0, 0));
    }
}
