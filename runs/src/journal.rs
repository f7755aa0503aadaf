//! What a run writes beside its records so that `summary.json` can be
//! rebuilt from the directory alone: `run.json`, written when the clock
//! starts (everything the summary needs that is not measured), and
//! `end.json`, written when the run ends cleanly (what only the end knows).
//!
//! Owns the two files' shapes, their schema versions (and the records'
//! one, named in `run.json`), and the atomic write every file of the
//! directory but `records.jsonl` goes through (a temporary file, then a
//! rename: a reader sees the old file or the new one, never half of one).
//! Times are integer nanoseconds since the run's epoch.

use std::fs;
use std::path::Path;

use arbor_engine::breakdown::observed;
use arbor_engine::scheduler::Scheduler;
use arbor_engine::time::Nanos;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use arbor_error::Error;

use crate::collector::Warmups;
use crate::config::RunConfig;
use crate::history::HistoryCounts;
use crate::time_breakdown::TimeBreakdown;

pub const RUN_FILE: &str = "run.json";
pub const END_FILE: &str = "end.json";
/// The schema of `run.json`.
pub const RUN_SCHEMA: &str = "arbor.run/1";
/// The schema of `end.json`.
pub const END_SCHEMA: &str = "arbor.end/1";
/// The schema of a line of `records.jsonl` (named in `run.json`, not on
/// every line), owned by the record's type.
pub use crate::record::RECORDS_SCHEMA;

/// What the planned side (the same workload on the virtual clock) says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Planned {
    pub service: String,
    pub peak_inflight: u32,
    pub peak_inflight_at_s: f64,
    /// Requests the plan dispatches (the progress bar's length).
    pub dispatched: u64,
    /// Where the plan's time goes (its critical path on the virtual
    /// clock); absent in runs of older arbors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_breakdown: Option<TimeBreakdown>,
}

/// The recipe a run followed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioStart {
    pub name: String,
    /// Conflicting flags run anyway with `--unsafe-override`.
    pub overridden: Vec<String>,
}

/// A lane of a closed loop, as planned.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaneStart {
    /// With a start window: where the lane enters its first tree.
    pub t_star_ns: Option<Nanos>,
    /// Warmup requests of its first play.
    pub warmups: u32,
}

/// `run.json`: what the run knew when its clock started.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunStart {
    pub schema_version: String,
    /// The schema of every line of `records.jsonl`.
    pub records_schema_version: String,
    pub arbor_version: String,
    /// Wall-clock start, UTC, `YYYY-mm-ddTHH:MM:SSZ`.
    pub started_at: String,
    pub scenario: Option<ScenarioStart>,
    /// Trees in the workload (one copy).
    pub trees: u64,
    /// Turns of each tree, by `tree_index` (a play has its tree's turns).
    pub tree_turns: Vec<u32>,
    pub planned: Planned,
    /// Where measurement is planned to start (0 without a start window).
    pub profiling_start_ns: Nanos,
    /// With a start window: the throughput window starts here at the
    /// latest.
    pub window_start_ns: Option<Nanos>,
    /// The warm turns of each lane's first play (start window only).
    pub warmups: Warmups,
    /// With `--sessions`.
    pub lanes: Option<Vec<LaneStart>>,
    pub config: RunConfig,
}

impl RunStart {
    /// What `scheduler` (not yet run) and the run's setup say.
    pub fn new(
        scheduler: &Scheduler,
        scenario: Option<&crate::recipe::Applied>,
        started_at: String,
        trees: u64,
        planned: Planned,
        config: RunConfig,
    ) -> RunStart {
        // With the accelerated cache warmup the profiling start is known
        // only once every warmup returned: the window starts at the first
        // measured request.
        let window_start_ns = scheduler
            .policy()
            .start_window
            .filter(|_| !scheduler.policy().accelerates())
            .map(|_| scheduler.profiling_start());
        RunStart {
            schema_version: RUN_SCHEMA.to_string(),
            records_schema_version: RECORDS_SCHEMA.to_string(),
            arbor_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at,
            scenario: scenario.map(|a| ScenarioStart {
                name: a.name.to_string(),
                overridden: a.overridden.clone(),
            }),
            trees,
            tree_turns: scheduler.trees().iter().map(|t| t.turn_count()).collect(),
            planned,
            profiling_start_ns: scheduler.profiling_start(),
            window_start_ns,
            warmups: Warmups::of(scheduler),
            lanes: scheduler.policy().sessions.map(|_| {
                scheduler
                    .lanes()
                    .iter()
                    .map(|l| LaneStart {
                        t_star_ns: l.t_star,
                        warmups: l.warmups,
                    })
                    .collect()
            }),
            config,
        }
    }
}

/// A lane of a closed loop, at the end.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LaneEnd {
    pub plays: u32,
    pub stalled: bool,
}

/// `end.json`: what only the end of the run knew.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunEnd {
    pub schema_version: String,
    /// Stopped by a signal (Ctrl+C, SIGTERM, SIGHUP).
    pub cancelled: bool,
    /// Which: `SIGINT`, `SIGTERM`, `SIGHUP`, or `abort_after` (the
    /// circuit breaker); absent in runs of older arbors.
    #[serde(default)]
    pub stopped_by: Option<String>,
    /// Epoch to the driver's last event.
    pub elapsed_ns: Nanos,
    /// Most requests sent and not yet done at once, as the driver saw them.
    pub observed_peak: u64,
    /// Where measurement started (the profiling timer, or 0).
    pub profiling_start_ns: Nanos,
    /// Turns never sent.
    pub skipped: u64,
    pub plays_started: u64,
    pub plays_done: u64,
    pub plays_not_started: u64,
    /// Most requests dispatched and not finished, in the scheduler.
    pub scheduler_peak: u32,
    pub scheduler_peak_at_ns: Nanos,
    pub idle_shifts: u64,
    pub idle_skipped_ns: Nanos,
    /// Per lane, with `--sessions` (empty otherwise).
    pub lanes: Vec<LaneEnd>,
    /// Where the run's time went: its observed critical path in classes
    /// (with `--threads`, the thread whose last request ended last);
    /// absent in runs of older arbors, and in a run so long its scheduler
    /// forgot finished plays (past 4,096), whose path it cannot walk back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_breakdown: Option<TimeBreakdown>,
    /// Under `--history live`: turns built from generated text and turns
    /// that kept the recorded answer; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryCounts>,
}

/// What a driver says of a run once it is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Driven {
    /// Stopped by the caller's stop signal (e.g. Ctrl+C).
    pub cancelled: bool,
    /// Run duration, from the epoch to the last event.
    pub elapsed: Nanos,
    /// Most requests in flight at once, as observed (sent, not done).
    pub observed_peak: u64,
    /// Under `--history live`, its counts.
    pub history: Option<HistoryCounts>,
}

impl RunEnd {
    /// What the driver (`driven`) and the scheduler say once the run is
    /// over, and the signal that stopped it, if one did.
    pub fn new(
        outcome: &Driven,
        scheduler: &Scheduler,
        stopped_by: Option<&'static str>,
    ) -> RunEnd {
        let stats = scheduler.stats();
        RunEnd {
            schema_version: END_SCHEMA.to_string(),
            cancelled: outcome.cancelled,
            stopped_by: stopped_by.map(str::to_string),
            elapsed_ns: outcome.elapsed,
            observed_peak: outcome.observed_peak,
            profiling_start_ns: scheduler.profiling_start(),
            skipped: stats.skipped,
            plays_started: stats.plays_started,
            plays_done: stats.plays_done,
            plays_not_started: stats.plays_not_started,
            scheduler_peak: stats.peak_inflight,
            scheduler_peak_at_ns: stats.peak_inflight_at,
            idle_shifts: stats.idle_shifts,
            idle_skipped_ns: stats.idle_skipped,
            lanes: scheduler
                .lanes()
                .iter()
                .map(|l| LaneEnd {
                    plays: l.plays,
                    stalled: l.stalled,
                })
                .collect(),
            time_breakdown: observed(scheduler).map(|b| TimeBreakdown::from(&b)),
            history: outcome.history,
        }
    }
}

impl RunEnd {
    /// Two threads' ends as one run's (`--threads`): counts add up, the
    /// elapsed time is the later, peaks add up (at most that many at
    /// once; the scheduler's peak time is the larger peak's), a lane is
    /// played by one thread (plays add up).
    pub fn with(self, other: RunEnd) -> RunEnd {
        let peak_at = if other.scheduler_peak > self.scheduler_peak {
            other.scheduler_peak_at_ns
        } else {
            self.scheduler_peak_at_ns
        };
        let mut lanes = self.lanes;
        if lanes.len() < other.lanes.len() {
            lanes.resize(other.lanes.len(), LaneEnd::default());
        }
        for (lane, theirs) in lanes.iter_mut().zip(other.lanes) {
            lane.plays += theirs.plays;
            lane.stalled |= theirs.stalled;
        }
        RunEnd {
            schema_version: self.schema_version,
            cancelled: self.cancelled || other.cancelled,
            stopped_by: self.stopped_by.or(other.stopped_by),
            elapsed_ns: self.elapsed_ns.max(other.elapsed_ns),
            observed_peak: self.observed_peak + other.observed_peak,
            profiling_start_ns: self.profiling_start_ns.max(other.profiling_start_ns),
            skipped: self.skipped + other.skipped,
            plays_started: self.plays_started + other.plays_started,
            plays_done: self.plays_done + other.plays_done,
            plays_not_started: self.plays_not_started + other.plays_not_started,
            scheduler_peak: self.scheduler_peak.saturating_add(other.scheduler_peak),
            scheduler_peak_at_ns: peak_at,
            idle_shifts: self.idle_shifts + other.idle_shifts,
            idle_skipped_ns: self.idle_skipped_ns + other.idle_skipped_ns,
            lanes,
            time_breakdown: later(self.time_breakdown, other.time_breakdown),
            history: HistoryCounts::joined(self.history, other.history),
        }
    }
}

/// Of two threads' critical paths, the run's: the one that ended later
/// (the first among equals); none when either thread has none (it forgot
/// its finished plays: the run's path may be the one it cannot walk).
fn later(a: Option<TimeBreakdown>, b: Option<TimeBreakdown>) -> Option<TimeBreakdown> {
    match (a, b) {
        (Some(a), Some(b)) if b.makespan_ns > a.makespan_ns => Some(b),
        (Some(a), Some(_)) => Some(a),
        _ => None,
    }
}

/// Writes `bytes` to `dir/name` atomically: `dir/.name.tmp`, then a
/// rename over the old file.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), Error> {
    let path = dir.join(name);
    let temp = dir.join(format!(".{name}.tmp"));
    fs::write(&temp, bytes)
        .and_then(|()| fs::rename(&temp, &path))
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))
}

/// `value` as pretty JSON with a final newline, written atomically, and
/// read back from those bytes: the run goes on with exactly what a later
/// `arbor summarize` will read.
pub fn write_json<T: Serialize + DeserializeOwned>(
    dir: &Path,
    name: &str,
    value: &T,
) -> Result<T, Error> {
    let path = dir.join(name);
    let mut text = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::other(format!("{}: cannot serialize: {e}", path.display())))?;
    text.push(b'\n');
    write_atomic(dir, name, &text)?;
    serde_json::from_slice(&text)
        .map_err(|e| Error::other(format!("{}: cannot read back: {e}", path.display())))
}

/// Reads a JSON file of the run, checking its schema version first.
pub fn read_json<T: DeserializeOwned>(path: &Path, schema: &str) -> Result<T, Error> {
    let bytes = crate::file_cap::read(path)
        .map_err(|e| Error::input(format!("{}: cannot read: {e}", path.display())))?;
    parse_json(&bytes, path, schema)
}

/// The bytes of the JSON file `path` of schema `schema`: a missing or
/// another schema version is refused before any field is read, so the
/// error names the version rather than the first field it lacks.
pub fn parse_json<T: DeserializeOwned>(
    bytes: &[u8],
    path: &Path,
    schema: &str,
) -> Result<T, Error> {
    #[derive(Deserialize)]
    struct Versioned {
        schema_version: Option<String>,
    }
    let bad = |e: serde_json::Error| Error::input(format!("{}: {e}", path.display()));
    let versioned: Versioned = serde_json::from_slice(bytes).map_err(bad)?;
    match versioned.schema_version.as_deref() {
        Some(v) if v == schema => serde_json::from_slice(bytes).map_err(bad),
        v => Err(Error::input(format!(
            "{}: schema version {}, this arbor reads {schema} (was it written by another \
             version of arbor?)",
            path.display(),
            v.unwrap_or("missing")
        ))),
    }
}
