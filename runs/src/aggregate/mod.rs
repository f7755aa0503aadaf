//! Repeated runs (`arbor run --repeat N`) and their aggregate: the plan of
//! the sequence (`OUT/repeat.json`: how many runs, the global seed), each
//! run's seed ([`seed_of`]), and `OUT/aggregate.json` rebuilt from the run
//! directories `OUT/run-1 .. run-N` (`arbor aggregate OUT`, and `arbor
//! run --repeat` at the end of the sequence): per headline metric
//! ([`metrics`]) the mean, sample standard deviation and 95 % t-interval
//! over the runs ([`stats`]), the runs as found ([`runs`]) and the
//! fail-closed validity stamp ([`validity`]).
//!
//! Reads only what runs wrote (each `summary.json`, through the typed
//! [`crate::output::Summary`]) and prints nothing: `arbor run --repeat`
//! drives the sequence and calls [`write_plan`] and [`rebuild`]; the
//! console table is the front end's. The shape of `aggregate.json` is
//! [`Aggregate`] (docs/repeat.md).

pub mod metrics;
pub mod runs;
pub mod stats;
pub mod validity;

use std::collections::BTreeMap;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use arbor_error::Error;

pub use crate::config::RepeatOf;
use runs::{RunSeen, RunState};
use stats::Spread;

pub const AGGREGATE_FILE: &str = "aggregate.json";
pub const REPEAT_FILE: &str = "repeat.json";
/// `aggregate.json`'s `schema_version`.
pub const AGGREGATE_SCHEMA: &str = "arbor.aggregate/1";

/// Run `k` (1-based) of a sequence with global seed `seed` runs with
/// `seed + k - 1` (wrapping): run 1 is the run `--seed seed` would make,
/// and every run's streams differ (arbor's streams mix the seed).
pub fn seed_of(seed: u64, k: u32) -> u64 {
    seed.wrapping_add(u64::from(k).wrapping_sub(1))
}

/// `repeat.json`: the sequence as planned, written before the first run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepeatPlan {
    pub runs: u32,
    pub seed: u64,
}

/// `aggregate.json`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Aggregate {
    /// `arbor.aggregate/1`.
    pub schema_version: &'static str,
    /// Runs planned (`null` when `repeat.json` could not be read).
    pub runs_planned: Option<u32>,
    /// Runs that ran to their end.
    pub runs_complete: u32,
    /// The global seed (`null` when `repeat.json` could not be read).
    pub seed: Option<u64>,
    /// The runs' recipe, when they share one.
    pub scenario: Option<String>,
    /// Fail-closed: false unless every planned run completed and was
    /// stamped valid.
    pub submission_valid: bool,
    pub submission_invalid_reasons: Vec<String>,
    /// The interval's confidence: 0.95.
    pub confidence: f64,
    /// Per headline metric, over the complete runs that have it.
    pub metrics: BTreeMap<String, MetricSpread>,
    pub runs: Vec<RunSeen>,
}

/// One headline metric across runs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MetricSpread {
    pub unit: &'static str,
    #[serde(flatten)]
    pub spread: Spread,
}

/// Writes `repeat.json` into `out` (created if needed).
pub fn write_plan(out: &Path, plan: &RepeatPlan) -> Result<(), Error> {
    std::fs::create_dir_all(out)
        .map_err(|e| Error::other(format!("{}: cannot create: {e}", out.display())))?;
    write_json(out, REPEAT_FILE, plan)
}

/// Rebuilds `aggregate.json` in `out` from its run directories, writes
/// it, and returns it.
pub fn rebuild(out: &Path) -> Result<Aggregate, Error> {
    let aggregate = resolve(out)?;
    write_json(out, AGGREGATE_FILE, &aggregate)?;
    Ok(aggregate)
}

/// Whether `dir` is the directory of a `--repeat` sequence (it has
/// `repeat.json` or `aggregate.json`).
pub fn is_repeat_dir(dir: &Path) -> bool {
    dir.join(REPEAT_FILE).is_file() || dir.join(AGGREGATE_FILE).is_file()
}

/// The aggregate of `out` re-resolved from `repeat.json` and its run
/// directories by the rules of [`rebuild`], without writing anything
/// (`arbor export --aiperf` reads a repeat directory this way).
pub fn resolve(out: &Path) -> Result<Aggregate, Error> {
    if !out.is_dir() {
        return Err(Error::input(format!(
            "{}: not a directory of `arbor run --repeat`",
            out.display()
        )));
    }
    let plan = read_plan(out)?;
    let planned = match &plan {
        Some(plan) => plan.runs,
        None => count_run_dirs(out),
    };
    let runs = (1..=planned)
        .map(|k| RunSeen::read(out, k))
        .collect::<Result<Vec<_>, _>>()?;
    let reasons = validity::reasons(&runs, plan.is_some());
    let complete: Vec<&RunSeen> = runs
        .iter()
        .filter(|r| r.state == RunState::Complete)
        .collect();
    let mut metrics = BTreeMap::new();
    for headline in metrics::LATENCIES.iter().chain(metrics::RATES.iter()) {
        let values: Vec<f64> = complete
            .iter()
            .filter_map(|r| r.summary.as_ref().and_then(|s| headline.value(s)))
            .collect();
        let (low, high) = headline.range();
        if let Some(spread) = Spread::within(&values, low, high) {
            metrics.insert(
                headline.name.to_string(),
                MetricSpread {
                    unit: headline.unit(),
                    spread,
                },
            );
        }
    }
    let scenario = runs.iter().find_map(|r| r.scenario.clone());
    let aggregate = Aggregate {
        schema_version: AGGREGATE_SCHEMA,
        runs_planned: plan.as_ref().map(|p| p.runs),
        runs_complete: complete.len() as u32,
        seed: plan.as_ref().map(|p| p.seed),
        scenario,
        submission_valid: reasons.is_empty(),
        submission_invalid_reasons: reasons,
        confidence: 0.95,
        metrics,
        runs,
    };
    Ok(aggregate)
}

/// The most runs `--repeat` makes: a `repeat.json` or a `run-K`
/// directory beyond it is not one of arbor's.
pub const MAX_RUNS: u32 = 1000;

/// `repeat.json`, or `None` when it is missing or cannot be read (the
/// aggregate is then stamped `repeat_unresolved`); a plan of more than
/// [`MAX_RUNS`] runs is refused, naming the file.
fn read_plan(out: &Path) -> Result<Option<RepeatPlan>, Error> {
    let path = out.join(REPEAT_FILE);
    let Ok(text) = crate::file_cap::read_to_string(&path) else {
        return Ok(None);
    };
    let Ok(plan) = serde_json::from_str::<RepeatPlan>(&text) else {
        return Ok(None);
    };
    if plan.runs > MAX_RUNS {
        return Err(Error::input(format!(
            "{}: runs {}: expected at most {MAX_RUNS}, the most `arbor run --repeat` makes",
            path.display(),
            plan.runs
        )));
    }
    Ok(Some(plan))
}

/// The largest `k` of the `run-k` directories in `out` (0 when none),
/// `k` up to [`MAX_RUNS`] (a `run-4294967295` is not one of a sequence's).
fn count_run_dirs(out: &Path) -> u32 {
    let Ok(entries) = std::fs::read_dir(out) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|name| name.strip_prefix("run-"))
                .and_then(|k| k.parse::<u32>().ok())
        })
        .filter(|&k| k <= MAX_RUNS)
        .max()
        .unwrap_or(0)
}

/// Writes `value` as pretty JSON to `dir/name`, through a temporary file
/// renamed into place (a reader never sees half a file).
fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<(), Error> {
    let path = dir.join(name);
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| Error::other(format!("{}: cannot encode: {e}", path.display())))?;
    bytes.push(b'\n');
    let temporary = dir.join(format!(".{name}.tmp"));
    std::fs::write(&temporary, &bytes)
        .and_then(|()| std::fs::rename(&temporary, &path))
        .map_err(|e| Error::other(format!("{}: cannot write: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("arbor-aggregate-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_plan_of_more_runs_than_repeat_makes_is_refused_not_walked() {
        // Issue 27, item 15: 4,294,967,295 planned runs were each looked
        // up (and listed) before the aggregate was written.
        let dir = scratch("huge");
        std::fs::write(dir.join(REPEAT_FILE), r#"{"runs":4294967295,"seed":0}"#).unwrap();
        let Err(e) = resolve(&dir) else {
            panic!("a plan beyond --repeat's maximum is refused")
        };
        assert!(e.is_input(), "{}", e.message);
        assert!(
            e.message.contains("runs 4294967295: expected at most 1000"),
            "{}",
            e.message
        );

        // Without a plan, a run-K directory beyond the maximum is not a run.
        std::fs::remove_file(dir.join(REPEAT_FILE)).unwrap();
        std::fs::create_dir(dir.join("run-4294967295")).unwrap();
        let Ok(aggregate) = resolve(&dir) else {
            panic!("the directory resolves")
        };
        assert!(aggregate.runs.is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn run_seeds_derive_from_the_global_seed() {
        assert_eq!(seed_of(42, 1), 42);
        assert_eq!(seed_of(42, 3), 44);
        assert_eq!(seed_of(u64::MAX, 2), 0);
    }
}
