//! The output directory of `arbor run`: `records.jsonl`, written a line at
//! a time as requests finish, and `summary.json`, written at the end (with
//! `run.json` and `end.json` of [`super::journal`] beside them).
//!
//! Owns the directory rules (an existing non-empty directory is refused
//! unless `--force`; a directory is claimed for the whole run by a `flock`
//! on its [`LOCK_FILE`], so two runs never write one directory), the
//! record sink, and the shape of `summary.json`
//! ([`Summary::build`], the one function `arbor run` and `arbor summarize`
//! both call).
//!
//! Records are serialized as their requests finish and handed to the file
//! at the end of the driver loop's turn that finished them (one `write` for
//! all the requests of a burst; at most [`FLUSH_BYTES`] held): a crash
//! loses at most the lines of that one turn, microseconds old, and a
//! normal end or Ctrl+C loses none.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::breaker::{Breaker, Trip};
use crate::record::{ErrorCategory, RecordSink, RequestRecord};
use arbor_engine::time::nanos_to_secs;
use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server_metrics::ServerMetrics;
use crate::time_breakdown::RunTimeBreakdown;
use arbor_error::Error;

use crate::collector::{
    CacheReport, Collector, ErrorSample, Facts, Latencies, Measured, Throughput, TokenReport,
};
use crate::config::RunConfig;
use crate::history::HistorySummary;
use crate::journal::{RunEnd, RunStart};
use std::collections::BTreeMap;

pub use crate::records_file::RECORDS_FILE;
pub const SUMMARY_FILE: &str = "summary.json";
/// The plan's requests in flight over time, written beside `run.json`
/// before the clock starts (its shape is the report's, which draws it).
pub const PLANNED_FILE: &str = "planned.json";
/// `arbor run --slo`'s verdict (written by `arbor::run`, drawn by the
/// page); absent without `--slo`.
pub const SLO_FILE: &str = "slo.json";

/// The lock file of an output directory: `flock`ed for the whole run, it
/// holds the pid of the run that claimed the directory last. Not counted
/// as content by the "not empty" rule; left in place after the run (the
/// kernel drops the lock when the process ends, even after `kill -9`).
pub const LOCK_FILE: &str = ".arbor.lock";

/// An output directory that was checked but not yet created.
#[derive(Debug, Clone)]
pub struct OutputDir {
    path: PathBuf,
    force: bool,
}

/// An output directory created and claimed: no other `arbor run` writes
/// it while this lives.
#[derive(Debug)]
pub struct Claimed {
    pub path: PathBuf,
    /// Held, never read: dropping it releases the directory.
    _lock: Flock<File>,
}

impl OutputDir {
    /// Refuses a path that is a file, or a directory with anything in it
    /// (unless `force`). Creates nothing.
    pub fn check(path: PathBuf, force: bool) -> Result<OutputDir, Error> {
        if path.exists() {
            if !path.is_dir() {
                return Err(Error::input(format!(
                    "--out {}: exists and is not a directory",
                    path.display()
                )));
            }
            if !force && has_content(&path)? {
                return Err(not_empty(&path));
            }
        }
        Ok(OutputDir { path, force })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the directory (and its parents) and claims it: an exclusive
    /// `flock` on its [`LOCK_FILE`], held until the [`Claimed`] is dropped.
    /// A directory another run holds is refused (exit 2) naming that run's
    /// pid (when it has written it: it does so just after taking the lock);
    /// so is one that filled up since [`OutputDir::check`] (a run that
    /// finished in it meanwhile), unless `--force`.
    pub fn create(self) -> Result<Claimed, Error> {
        let path = self.path;
        fs::create_dir_all(&path)
            .map_err(|e| Error::other(format!("{}: cannot create: {e}", path.display())))?;
        let lock_path = path.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::other(format!("{}: cannot create: {e}", lock_path.display())))?;
        let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut file, Errno::EAGAIN)) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let pid = holder
                    .trim()
                    .parse::<u32>()
                    .map_or_else(|_| String::new(), |pid| format!(" (pid {pid})"));
                return Err(Error::input(format!(
                    "--out {}: another arbor run{pid} is writing this directory (it holds \
                     {LOCK_FILE}); choose another --out, or wait for that run to end",
                    path.display()
                )));
            }
            Err((_, e)) => {
                return Err(Error::other(format!(
                    "{}: cannot lock: {e}",
                    lock_path.display()
                )))
            }
        };
        if !self.force && has_content(&path)? {
            return Err(not_empty(&path));
        }
        lock.set_len(0)
            .and_then(|()| lock.write_all(format!("{}\n", std::process::id()).as_bytes()))
            .map_err(|e| Error::other(format!("{}: cannot write: {e}", lock_path.display())))?;
        Ok(Claimed { path, _lock: lock })
    }
}

/// Whether `dir` holds anything but its [`LOCK_FILE`].
fn has_content(dir: &Path) -> Result<bool, Error> {
    let entries = fs::read_dir(dir)
        .map_err(|e| Error::input(format!("--out {}: cannot read: {e}", dir.display())))?;
    Ok(entries
        .flatten()
        .any(|entry| entry.file_name() != LOCK_FILE))
}

fn not_empty(dir: &Path) -> Error {
    Error::input(format!(
        "--out {}: exists and is not empty (choose another directory, or --force to overwrite \
         arbor's files in it)",
        dir.display()
    ))
}

/// Serialized records held before a write is forced.
pub const FLUSH_BYTES: usize = 1 << 20;

/// The error class of a request the client itself failed (out of file
/// descriptors, ...): its results measure no server.
pub const CLIENT_CLASS: &str = ErrorCategory::Client.as_str();

/// Requests the client itself failed ([`CLIENT_CLASS`]), warmups
/// included.
#[derive(Debug, Clone, Default)]
pub struct ClientFailures {
    pub count: u64,
    /// The first one's message.
    pub first: Option<String>,
}

/// `records.jsonl`, and the summary's collector fed from the same records.
pub struct RecordsFile {
    file: File,
    /// Lines not yet written.
    pending: Vec<u8>,
    collector: Collector,
    client_failures: ClientFailures,
    /// `--abort-after`: counts the records' failures in a row.
    breaker: Breaker,
    /// Called once, when the breaker trips (it stops the run).
    on_trip: Option<Box<dyn Fn() + Send>>,
    trip: Option<Trip>,
}

/// What the records of a finished run add up to.
pub struct Written {
    pub collector: Collector,
    pub client_failures: ClientFailures,
    /// The circuit breaker's trip, when it stopped the run.
    pub trip: Option<Trip>,
}

impl RecordsFile {
    pub fn create(dir: &Path, collector: Collector) -> Result<RecordsFile, Error> {
        let path = dir.join(RECORDS_FILE);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| Error::other(format!("{}: cannot create: {e}", path.display())))?;
        Ok(RecordsFile {
            file,
            pending: Vec::with_capacity(64 * 1024),
            collector,
            client_failures: ClientFailures::default(),
            breaker: Breaker::new(0),
            on_trip: None,
            trip: None,
        })
    }

    /// Counts failures in a row with `breaker`, and calls `on_trip` once
    /// when it trips.
    pub fn with_breaker(mut self, breaker: Breaker, on_trip: impl Fn() + Send + 'static) -> Self {
        self.breaker = breaker;
        self.on_trip = Some(Box::new(on_trip));
        self
    }

    /// Writes what is pending and hands over what the records add up to.
    pub fn finish(mut self) -> io::Result<Written> {
        self.write_pending()?;
        Ok(Written {
            collector: std::mem::take(&mut self.collector),
            client_failures: std::mem::take(&mut self.client_failures),
            trip: self.trip.take(),
        })
    }

    fn write_pending(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.file.write_all(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }
}

impl Drop for RecordsFile {
    /// A run that ends in an error still leaves every finished line.
    fn drop(&mut self) {
        let _ = self.write_pending();
    }
}

impl RecordsFile {
    /// Counts `record` in the summary's collector (and among the client's
    /// failures); its line is written by whoever serialized it.
    pub fn count(&mut self, record: &RequestRecord) {
        let facts = Facts::from(record);
        if facts.error_category == Some(ErrorCategory::Client) {
            let failures = &mut self.client_failures;
            failures.count += 1;
            if failures.first.is_none() {
                failures.first = record.error.as_ref().map(|e| e.message.clone());
            }
        }
        self.collector.add(&facts);
        if let Some(trip) = self.breaker.observe(record) {
            if let Some(stop) = &self.on_trip {
                stop();
            }
            self.trip = Some(trip);
        }
    }

    /// Writes whole lines serialized elsewhere (another thread's records),
    /// after what is pending.
    pub fn write_lines(&mut self, lines: &[u8]) -> io::Result<()> {
        self.write_pending()?;
        self.file.write_all(lines)
    }
}

/// Serializes `record` as one line of `records.jsonl` at the end of `out`.
pub fn serialize_line(out: &mut Vec<u8>, record: &RequestRecord) -> io::Result<()> {
    serde_json::to_writer(&mut *out, record).map_err(io::Error::other)?;
    out.push(b'\n');
    Ok(())
}

impl RecordSink for RecordsFile {
    fn record(&mut self, record: &RequestRecord) -> io::Result<()> {
        serialize_line(&mut self.pending, record)?;
        self.count(record);
        if self.pending.len() >= FLUSH_BYTES {
            self.write_pending()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_pending()
    }
}

/// Requests, plays and trees.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    /// Measured requests dispatched (one record each).
    pub dispatched: u64,
    /// Warmup requests: in records.jsonl, in no figure.
    pub warmups: u64,
    pub ok: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Requests sent again because they provably never left the client (a
    /// write failed with nothing written; at most once each): the sum of
    /// the records' `resends`.
    pub resends: u64,
    /// Tries again after a refusal with a `--retry-on` status: the sum of
    /// the records' `retries` (absent from summaries before it: 0).
    #[serde(default)]
    pub retries: u64,
    /// Turns never sent (the duration ended, or Ctrl+C).
    pub skipped: u64,
    /// Trees in the workload (one copy).
    pub trees: u64,
    pub plays: u64,
    pub plays_done: u64,
    pub plays_not_started: u64,
    /// Plays in `job_time`, and plays left out of it.
    pub plays_complete: u64,
    pub plays_incomplete: u64,
}

/// Planned against observed requests in flight.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Concurrency {
    /// The plan of the same workload on the virtual clock (`--service`).
    pub planned_peak: u32,
    pub planned_peak_at_s: f64,
    pub planned_service: String,
    /// Most requests sent and not yet done at once, as the driver saw them.
    pub observed_peak: u64,
    /// Most requests in flight (dispatched, not finished) in the scheduler.
    pub scheduler_peak: u32,
    pub scheduler_peak_at_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Idle {
    pub shifts: u64,
    pub skipped_s: f64,
}

/// The lanes of a closed loop.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct LaneSummary {
    pub lane: u32,
    pub plays: u32,
    pub recycles: u32,
    pub t_star_s: Option<f64>,
    pub warmups: u32,
    pub stalled: bool,
}

/// The schema of `summary.json` (the title of
/// docs/schema/summary.schema.json).
pub const SUMMARY_SCHEMA: &str = "arbor.summary/1";

/// `summary.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = SUMMARY_SCHEMA)]
pub struct Summary {
    #[schemars(extend("const" = SUMMARY_SCHEMA))]
    pub schema_version: String,
    /// The version of the arbor that ran (from `run.json`).
    pub arbor_version: String,
    /// False when the run did not end cleanly (no `end.json`): the figures
    /// only the end knows are derived from the records (see `notes`).
    pub complete: bool,
    /// What a rebuild had to derive or skip; absent when nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What the reader must know before the figures, most serious first:
    /// the failures in the server's own words, outputs shorter than
    /// planned, answers under another model's name (`runs::warnings`);
    /// absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The recipe (`--scenario`), if any.
    pub scenario: Option<String>,
    /// With a scenario: whether the run can be submitted, and why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_valid: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submission_invalid_reasons: Option<Vec<String>>,
    /// Where measurement started (run epoch, seconds): 0 without a start
    /// window. Latency and throughput cover what came after.
    pub profiling_start_s: f64,
    pub started_at: String,
    pub cancelled: bool,
    /// What stopped the run: a signal (`SIGINT`, `SIGTERM`, `SIGHUP`) or
    /// the circuit breaker (`abort_after`: requests in a row failed the
    /// same way; the notes say how); `null` when it ran to its end.
    pub stopped_by: Option<String>,
    /// Run epoch to the last event, in seconds.
    pub elapsed_s: f64,
    pub counts: Counts,
    pub latency: Latencies,
    pub throughput: Throughput,
    pub cache: CacheReport,
    pub errors: BTreeMap<String, u64>,
    /// The first failure of each error class (`errors`), in the server's
    /// (or the client's) own words; absent when none failed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_samples: BTreeMap<String, ErrorSample>,
    /// Measured requests the server answered under a model other than the
    /// one asked for (`config.model`), by the name it gave; absent when
    /// every answer named the model asked for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answered_models: BTreeMap<String, u64>,
    pub tokens: TokenReport,
    pub concurrency: Concurrency,
    pub idle: Idle,
    /// Where the time went: the run's critical path in classes beside the
    /// plan's (`runs::time_breakdown`); absent when the run has no
    /// `end.json` or was written by an older arbor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_breakdown: Option<RunTimeBreakdown>,
    /// What the server's own metrics said (`metrics.jsonl`); absent when
    /// none were scraped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetrics>,
    /// With --sessions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lanes: Option<Vec<LaneSummary>>,
    /// With several endpoints: the figures per replica and the imbalance
    /// (`runs::replicas`, docs/routing.md); absent with one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<crate::replicas::ReplicaReport>,
    /// Under `--history live`: the mode, turns built from generated text
    /// and turns that kept the recorded answer (`runs::history`); absent
    /// under recorded history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistorySummary>,
    /// Prefix reuse: best possible, the server model's prediction and
    /// what the server reported, in total and by the gap since the
    /// agent's previous turn (`runs::reuse`); absent when not computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<crate::reuse::ReuseSummary>,
    pub config: RunConfig,
}

/// Whether the run ended cleanly, and what a rebuild had to say.
#[derive(Debug, Clone, Default)]
pub struct Completeness {
    pub complete: bool,
    pub notes: Vec<String>,
}

impl Summary {
    /// The summary of a run: what it knew at the start, at the end, and
    /// what its records add up to. `arbor run` and `arbor summarize` both
    /// build it here, from the same files.
    pub fn build(
        start: &RunStart,
        end: &RunEnd,
        measured: Measured,
        server_metrics: Option<ServerMetrics>,
        completeness: Completeness,
    ) -> Summary {
        let reasons = start.scenario.as_ref().map(|s| {
            let applied = crate::recipe::Applied {
                name: crate::recipe::AGENTX_MVP,
                overridden: s.overridden.clone(),
            };
            let overflows = measured
                .errors
                .get("context_overflow")
                .copied()
                .unwrap_or(0);
            let mut reasons = crate::recipe::invalid_reasons(
                &applied,
                crate::recipe::Tallies {
                    context_overflows: overflows,
                    requests: measured.requests.dispatched,
                    short_outputs: measured.tokens.short_outputs,
                    measured_outputs: measured.tokens.measured_outputs(),
                    cancelled: end.cancelled,
                },
            );
            if !completeness.complete {
                reasons.push(crate::recipe::RUN_INCOMPLETE.to_string());
            }
            reasons
        });
        let lanes = start.lanes.as_ref().map(|lanes| {
            (0u32..)
                .zip(lanes)
                .map(|(i, l)| {
                    let at_end = end.lanes.get(i as usize).cloned().unwrap_or_default();
                    LaneSummary {
                        lane: i,
                        plays: at_end.plays,
                        recycles: at_end.plays.saturating_sub(1),
                        t_star_s: l.t_star_ns.map(nanos_to_secs),
                        warmups: l.warmups,
                        stalled: at_end.stalled,
                    }
                })
                .collect()
        });
        let waited_for_cap = measured.latency.queue_wait.max_s > 0.0;
        let replicas = crate::replicas::ReplicaReport::build(
            &measured.replicas,
            &crate::replicas::endpoints_of(&start.config),
        );
        let warnings = crate::warnings::of(&measured, start.config.model.as_deref());
        Summary {
            schema_version: SUMMARY_SCHEMA.to_string(),
            arbor_version: start.arbor_version.clone(),
            complete: completeness.complete,
            notes: completeness.notes,
            warnings,
            scenario: start.scenario.as_ref().map(|s| s.name.clone()),
            submission_valid: reasons.as_ref().map(Vec::is_empty),
            submission_invalid_reasons: reasons,
            profiling_start_s: nanos_to_secs(end.profiling_start_ns),
            started_at: start.started_at.clone(),
            cancelled: end.cancelled,
            stopped_by: end.stopped_by.clone(),
            elapsed_s: nanos_to_secs(end.elapsed_ns),
            counts: Counts {
                dispatched: measured.requests.dispatched,
                warmups: measured.requests.warmups,
                ok: measured.requests.ok,
                failed: measured.requests.failed,
                cancelled: measured.requests.cancelled,
                resends: measured.requests.resends,
                retries: measured.requests.retries,
                skipped: end.skipped,
                trees: start.trees,
                plays: end.plays_started,
                plays_done: end.plays_done,
                plays_not_started: end.plays_not_started,
                plays_complete: measured.plays_complete,
                plays_incomplete: measured.plays_incomplete,
            },
            latency: measured.latency,
            throughput: measured.throughput,
            cache: measured.cache,
            errors: measured.errors,
            error_samples: measured.error_samples,
            answered_models: measured.answered_models,
            tokens: measured.tokens,
            concurrency: Concurrency {
                planned_peak: start.planned.peak_inflight,
                planned_peak_at_s: start.planned.peak_inflight_at_s,
                planned_service: start.planned.service.clone(),
                observed_peak: end.observed_peak,
                scheduler_peak: end.scheduler_peak,
                scheduler_peak_at_s: nanos_to_secs(end.scheduler_peak_at_ns),
            },
            idle: Idle {
                shifts: end.idle_shifts,
                skipped_s: nanos_to_secs(end.idle_skipped_ns),
            },
            time_breakdown: end.time_breakdown.clone().map(|observed| RunTimeBreakdown {
                observed,
                planned: start.planned.time_breakdown.clone(),
            }),
            server_metrics,
            lanes,
            replicas,
            history: HistorySummary::of(&start.config.history, end.history),
            reuse: measured.reuse,
            config: RunConfig {
                // Whether `--max-inflight` fired: a measured turn waited
                // for the cap.
                shard: start.config.shard.clone().map(|s| s.ended(waited_for_cap)),
                ..start.config.clone()
            },
        }
    }

    /// Pretty JSON with a final newline: the bytes of `summary.json`.
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        let mut text = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::other(format!("{SUMMARY_FILE}: cannot serialize: {e}")))?;
        text.push(b'\n');
        Ok(text)
    }

    /// Reads `dir/summary.json`: the one typed reader of the file. Missing,
    /// not JSON, another schema or a field missing is an input error
    /// (exit 2) naming the file and what was expected; fields a later
    /// arbor adds are ignored.
    pub fn read(dir: &Path) -> Result<Summary, Error> {
        let path = dir.join(SUMMARY_FILE);
        let text = crate::file_cap::read(&path).map_err(|e| {
            Error::input(format!(
                "{}: cannot read ({e}); expected the {SUMMARY_FILE} `arbor run` writes \
                 (`arbor summarize {}` rebuilds it from the records)",
                path.display(),
                dir.display()
            ))
        })?;
        Summary::parse(&text, &path)
    }

    /// A summary from the bytes of `path` (named in errors).
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Summary, Error> {
        crate::journal::parse_json(bytes, path, SUMMARY_SCHEMA)
    }
}

/// (`YYYYmmdd-HHMMSS`, `YYYY-mm-ddTHH:MM:SSZ`) of a time, in UTC.
pub fn utc_stamps(time: SystemTime) -> (String, String) {
    let secs = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    let (y, mo, d) = civil_from_days(days as i64);
    (
        format!("{y:04}{mo:02}{d:02}-{h:02}{m:02}{s:02}"),
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z"),
    )
}

/// Gregorian (year, month, day) of days since 1970-01-01 (Howard
/// Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor_error::Kind;
    use std::time::Duration;

    #[test]
    fn utc_stamps_by_hand() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(0);
        assert_eq!(utc_stamps(t).0, "19700101-000000");
        // 2024-02-29T13:45:07Z (a leap day).
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_709_214_307);
        assert_eq!(
            utc_stamps(t),
            ("20240229-134507".into(), "2024-02-29T13:45:07Z".into())
        );
        // 2000-03-01T00:00:00Z.
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(951_868_800);
        assert_eq!(utc_stamps(t).1, "2000-03-01T00:00:00Z");
    }

    #[test]
    fn a_non_empty_directory_is_refused_unless_forced() {
        let dir = std::env::temp_dir().join(format!("arbor-out-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert!(
            OutputDir::check(dir.clone(), false).is_ok(),
            "missing is fine"
        );
        fs::create_dir_all(&dir).unwrap();
        assert!(
            OutputDir::check(dir.clone(), false).is_ok(),
            "empty is fine"
        );
        fs::write(dir.join("x"), "x").unwrap();
        assert_eq!(
            OutputDir::check(dir.clone(), false).err().map(|f| f.kind),
            Some(Kind::Input)
        );
        assert!(OutputDir::check(dir.clone(), true).is_ok());
        let file = dir.join("x");
        assert_eq!(
            OutputDir::check(file, true).err().map(|f| f.kind),
            Some(Kind::Input)
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_claimed_directory_is_refused_until_released() {
        let dir = std::env::temp_dir().join(format!("arbor-claim-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let first = OutputDir::check(dir.clone(), false).unwrap();
        let second = OutputDir::check(dir.clone(), false).unwrap();
        let claimed = first.create().unwrap();
        assert_eq!(
            fs::read_to_string(dir.join(LOCK_FILE)).unwrap().trim(),
            std::process::id().to_string()
        );
        let refused = second.clone().create().err().unwrap();
        assert!(refused.is_input(), "{}", refused.message);
        assert!(
            refused
                .message
                .contains(&format!("another arbor run (pid {})", std::process::id())),
            "{}",
            refused.message
        );
        // The lock file alone is no content.
        assert!(OutputDir::check(dir.clone(), false).is_ok());
        fs::write(dir.join(RECORDS_FILE), "").unwrap();
        drop(claimed);
        // Released, but a run wrote there meanwhile: still refused.
        let refused = second.create().err().unwrap();
        assert!(refused.message.contains("not empty"), "{}", refused.message);
        assert!(OutputDir::check(dir.clone(), true)
            .unwrap()
            .create()
            .is_ok());
        let _ = fs::remove_dir_all(&dir);
    }
}
