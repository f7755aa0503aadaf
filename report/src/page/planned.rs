//! `planned.json`: a run's plan as its report draws it, the planned
//! requests in flight over time. `arbor run` computes the plan on the
//! virtual clock before its clock starts and writes this beside `run.json`
//! (through the run's atomic writer), so that its report, written at the
//! end or rebuilt later by `arbor report` or `arbor summarize`, draws the
//! planned series against the observed one. Binned as the page bins
//! (about 200 bins): a few kilobytes whatever the run's size.
//!
//! Owns the file's shape, building it from a finished plan, and reading
//! it. Times are on the plan's virtual clock, from its epoch.

use std::path::Path;

use arbor_engine::scheduler::Scheduler;
use arbor_engine::time::nanos_to_secs;
use serde::{Deserialize, Serialize};

use super::plan_turns;
use super::series;
use arbor_error::Error;

pub use arbor_runs::output::PLANNED_FILE;
/// The schema of `planned.json`.
pub const PLANNED_SCHEMA: &str = "arbor.planned/1";

/// The plan's requests in flight over time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedLoad {
    pub schema_version: String,
    /// `--service` of the plan.
    pub service: String,
    /// The planned peak and when it was first reached (as `plan --json`
    /// has them).
    pub peak_inflight: u32,
    pub peak_inflight_at_s: f64,
    /// Width of a bin, seconds.
    pub bin_s: f64,
    /// Start of each bin, seconds on the plan's clock.
    pub t_s: Vec<f64>,
    /// Most requests in flight at once within the bin (warmups included,
    /// as in the peak).
    pub inflight_max: Vec<u32>,
    /// Requests in flight, averaged over the bin's time.
    pub inflight_mean: Vec<f64>,
}

impl PlannedLoad {
    /// The load of `scheduler`, run to the end on the virtual clock under
    /// `service`.
    pub fn of(scheduler: &Scheduler, service: &str) -> PlannedLoad {
        let turns = plan_turns::turns(scheduler);
        let s = series::planned(turns.iter().map(|p| &p.turn));
        let stats = scheduler.stats();
        PlannedLoad {
            schema_version: PLANNED_SCHEMA.to_string(),
            service: service.to_string(),
            peak_inflight: stats.peak_inflight,
            peak_inflight_at_s: nanos_to_secs(stats.peak_inflight_at),
            bin_s: s.bin_s,
            t_s: s.t_s,
            inflight_max: s.inflight_max,
            inflight_mean: s.inflight_mean,
        }
    }
}

/// Reads `dir/planned.json`: `Ok(None)` when the run has none (written by
/// an arbor older than the file); anything else unreadable is an input
/// error naming the file.
pub fn read(dir: &Path) -> Result<Option<PlannedLoad>, Error> {
    let path = dir.join(PLANNED_FILE);
    let text = match arbor_runs::file_cap::read(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::input(format!(
                "{}: cannot read: {e}",
                path.display()
            )))
        }
    };
    // Another schema version is refused by name before a field is read.
    arbor_runs::journal::parse_json(&text, &path, PLANNED_SCHEMA).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planned_json_of_another_schema_is_refused_by_name() {
        // A planned.json of another version was read as this one's.
        let dir = std::env::temp_dir().join(format!("arbor-planned-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let load = r#"{"service":"recorded","peak_inflight":1,"peak_inflight_at_s":0,"bin_s":1,"t_s":[0],"inflight_max":[1],"inflight_mean":[1.0]"#;
        std::fs::write(
            dir.join(PLANNED_FILE),
            format!(r#"{load},"schema_version":"arbor.planned/9"}}"#),
        )
        .unwrap();
        let Err(e) = read(&dir) else {
            panic!("another schema is refused")
        };
        assert!(e.is_input(), "{}", e.message);
        assert!(
            e.message
                .contains("schema version arbor.planned/9, this arbor reads arbor.planned/1"),
            "{}",
            e.message
        );
        std::fs::write(
            dir.join(PLANNED_FILE),
            format!(r#"{load},"schema_version":"{PLANNED_SCHEMA}"}}"#),
        )
        .unwrap();
        assert!(matches!(read(&dir), Ok(Some(p)) if p.peak_inflight == 1));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
