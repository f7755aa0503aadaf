//! Fuzz target: a `--repeat` directory's `repeat.json` (`aggregate::
//! RepeatPlan`: runs and seed) as `arbor aggregate` reads it
//! (`arbor_runs::aggregate::rebuild`): the plan read (or, unreadable, the
//! `run-K` directories counted), the runs it names looked up, each
//! summary read, the headline metrics spread, the validity stamp, and
//! `aggregate.json` written. The whole input is `repeat.json`, in one
//! scratch directory per process (in /dev/shm when there is one) beside
//! `run-1/` and `run-2/`, each with `testdata/runs/small/summary.json`.
//! Besides never panicking: a plan of more than `MAX_RUNS` runs is
//! refused, and an aggregate lists one run for each planned (two, the
//! directories, without a plan), at most two of them complete.

use std::path::PathBuf;

use arbor_runs::aggregate::{self, MAX_RUNS};

const SUMMARY: &[u8] = include_bytes!("../../../testdata/runs/small/summary.json");

fn scratch_dir() -> PathBuf {
    let dir = PathBuf::from("/dev/shm");
    let dir = if dir.is_dir() {
        dir
    } else {
        std::env::temp_dir()
    };
    let dir = dir.join(format!("arbor-fuzz-repeat-json-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for run in ["run-1", "run-2"] {
        std::fs::create_dir_all(dir.join(run)).expect("the scratch directory can be made");
        std::fs::write(dir.join(run).join("summary.json"), SUMMARY)
            .expect("summary.json can be written");
    }
    dir
}

fn main() {
    let dir = scratch_dir();
    let plan = dir.join(aggregate::REPEAT_FILE);
    afl::fuzz!(|data: &[u8]| {
        std::fs::write(&plan, data).expect("repeat.json can be written");
        let Ok(found) = aggregate::rebuild(&dir) else {
            return;
        };
        let planned = found.runs_planned.unwrap_or(2);
        assert!(planned <= MAX_RUNS, "a plan of {planned} runs was walked");
        assert_eq!(found.runs.len(), planned as usize);
        assert!(
            found.runs_complete <= 2,
            "{} runs complete",
            found.runs_complete
        );
        assert_eq!(found.runs_planned.is_some(), found.seed.is_some());
    });
}
