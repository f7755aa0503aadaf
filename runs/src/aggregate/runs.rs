//! Reading the run directories of a repeat (`OUT/run-1 .. run-N`): what
//! each says about itself (`summary.json`), or that it has none. Owns the
//! directory names and a run's state; judges nothing (that is `validity`).

use std::path::Path;

use crate::output::{Summary, SUMMARY_FILE};
use arbor_error::Error;
use schemars::JsonSchema;
use serde::Serialize;

/// The directory of run `k` (1-based) under the repeat's directory.
pub fn dir_name(k: u32) -> String {
    format!("run-{k}")
}

/// How a run of the sequence ended, as its directory shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// `summary.json` of a run that ran to its end.
    Complete,
    /// Stopped by a signal (`"cancelled": true`).
    Cancelled,
    /// Its summary was rebuilt from the records (`"complete": false`).
    Incomplete,
    /// The directory is there but has no summary: the run failed or was
    /// killed.
    Failed,
    /// No directory: the run never started.
    Missing,
}

impl RunState {
    /// Whether a run in this state left a `summary.json`.
    pub fn has_summary(self) -> bool {
        !matches!(self, RunState::Failed | RunState::Missing)
    }
}

/// One run of the sequence as `aggregate.json` lists it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunSeen {
    /// 1-based.
    pub run: u32,
    /// Its directory, relative to the repeat's.
    pub dir: String,
    pub state: RunState,
    /// Its seed (`config.seed`), when it wrote a summary.
    pub seed: Option<u64>,
    pub scenario: Option<String>,
    pub submission_valid: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub submission_invalid_reasons: Vec<String>,
    /// The summary itself, for the metrics (`None` in the states without
    /// one).
    #[serde(skip)]
    #[schemars(skip)]
    pub summary: Option<Summary>,
}

impl RunSeen {
    /// Reads run `k` under `out`. A `summary.json` that is not a summary
    /// is a fault (exit 2, naming the file): the aggregate is not guessed.
    pub fn read(out: &Path, k: u32) -> Result<RunSeen, Error> {
        let dir = dir_name(k);
        let path = out.join(&dir);
        let mut seen = RunSeen {
            run: k,
            dir,
            state: RunState::Missing,
            seed: None,
            scenario: None,
            submission_valid: None,
            submission_invalid_reasons: Vec::new(),
            summary: None,
        };
        if !path.is_dir() {
            return Ok(seen);
        }
        if !path.join(SUMMARY_FILE).exists() {
            seen.state = RunState::Failed;
            return Ok(seen);
        }
        let summary = Summary::read(&path)?;
        seen.state = if summary.cancelled {
            RunState::Cancelled
        } else if summary.complete {
            RunState::Complete
        } else {
            RunState::Incomplete
        };
        seen.seed = Some(summary.config.seed);
        seen.scenario = summary.scenario.clone();
        seen.submission_valid = summary.submission_valid;
        seen.submission_invalid_reasons = summary
            .submission_invalid_reasons
            .clone()
            .unwrap_or_default();
        seen.summary = Some(summary);
        Ok(seen)
    }
}
