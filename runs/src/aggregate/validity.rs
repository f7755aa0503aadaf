//! The aggregate's validity stamp, fail-closed: it is valid only when
//! every planned run completed, every run is stamped valid by the same
//! scenario, and the plan of the sequence (`repeat.json`) could be read.
//! Owns the reasons and their order (the runs' order, each reason once).

use super::runs::{RunSeen, RunState};

/// The reason of runs made without a recipe (`--scenario`): nothing was
/// checked. A front end shows no validity stamp for such runs.
pub const NO_SCENARIO: &str = "no_scenario";

/// The reasons an aggregate is invalid (empty: valid). `planned_known` is
/// false when `repeat.json` could not be read.
pub fn reasons(runs: &[RunSeen], planned_known: bool) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |reason: String| {
        if !out.contains(&reason) {
            out.push(reason);
        }
    };
    if !planned_known {
        add("repeat_unresolved".to_string());
    }
    if runs.is_empty() {
        add("no_runs".to_string());
    }
    let first_scenario = runs.iter().find_map(|r| r.scenario.clone());
    for run in runs {
        let k = run.run;
        match run.state {
            RunState::Complete => {}
            RunState::Cancelled => add("run_cancelled".to_string()),
            RunState::Incomplete => add(format!("run_incomplete:{k}")),
            RunState::Failed => add(format!("run_failed:{k}")),
            RunState::Missing => add(format!("run_missing:{k}")),
        }
        if !run.state.has_summary() {
            continue;
        }
        if run.scenario.is_none() {
            add(NO_SCENARIO.to_string());
        } else if run.scenario != first_scenario {
            add(format!("scenario_mismatch:{k}"));
        }
        match run.submission_valid {
            Some(true) => {}
            Some(false) if run.submission_invalid_reasons.is_empty() => {
                add(format!("run_invalid:{k}"))
            }
            Some(false) => {
                for reason in &run.submission_invalid_reasons {
                    add(format!("run_invalid:{k}:{reason}"));
                }
            }
            None if run.scenario.is_some() => add(format!("run_unstamped:{k}")),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(k: u32, state: RunState, valid: Option<bool>, reasons: &[&str]) -> RunSeen {
        let has_summary = state.has_summary();
        RunSeen {
            run: k,
            dir: format!("run-{k}"),
            state,
            seed: None,
            scenario: has_summary.then(|| "agentx-mvp".to_string()),
            submission_valid: valid,
            submission_invalid_reasons: reasons.iter().map(|r| r.to_string()).collect(),
            summary: None,
        }
    }

    #[test]
    fn valid_only_when_every_run_completed_valid() {
        let good = [
            run(1, RunState::Complete, Some(true), &[]),
            run(2, RunState::Complete, Some(true), &[]),
        ];
        assert!(reasons(&good, true).is_empty());
        assert_eq!(reasons(&good, false), ["repeat_unresolved"]);
        assert_eq!(reasons(&[], true), ["no_runs"]);
    }

    #[test]
    fn a_cancelled_run_and_the_ones_after_it_are_named() {
        let runs = [
            run(1, RunState::Complete, Some(true), &[]),
            run(2, RunState::Cancelled, Some(false), &["run_cancelled"]),
            run(3, RunState::Missing, None, &[]),
        ];
        assert_eq!(
            reasons(&runs, true),
            [
                "run_cancelled",
                "run_invalid:2:run_cancelled",
                "run_missing:3"
            ]
        );
    }

    #[test]
    fn failed_runs_and_runs_without_a_scenario_are_invalid() {
        let mut plain = run(1, RunState::Complete, None, &[]);
        plain.scenario = None;
        let runs = [plain, run(2, RunState::Failed, None, &[])];
        assert_eq!(reasons(&runs, true), ["no_scenario", "run_failed:2"]);
    }
}
