//! `arbor aggregate OUT` and the console view of an aggregate
//! (`arbor::runs::aggregate`): the spread table, the validity line and
//! where the file is. Owns the wording only.

mod table;

use std::path::Path;

use arbor::runs::aggregate::validity::NO_SCENARIO;
use arbor::runs::aggregate::{rebuild, Aggregate, AGGREGATE_FILE};
use arbor::Error;

use crate::stdout;

/// `arbor aggregate OUT`.
pub fn run(dir: &Path) -> Result<(), Error> {
    let aggregate = rebuild(dir)?;
    print(&aggregate, dir)
}

/// The aggregate on stdout: the spread table, the validity line, the file.
pub fn print(aggregate: &Aggregate, dir: &Path) -> Result<(), Error> {
    stdout::print(|out| {
        if let Some(table) = table::spread_table(aggregate) {
            writeln!(out, "{table}")?;
        }
        writeln!(out, "{}", headline(aggregate))?;
        writeln!(out, "aggregate in {}", dir.join(AGGREGATE_FILE).display())
    })
}

/// One line: runs, validity and the reasons. Runs without a recipe
/// (`--scenario`) are no submission: they get no validity stamp, only
/// the reasons other than the missing recipe (a failed run, say).
fn headline(aggregate: &Aggregate) -> String {
    let planned = aggregate
        .runs_planned
        .map_or_else(|| "?".to_string(), |n| n.to_string());
    let reasons = &aggregate.submission_invalid_reasons;
    let validity = if aggregate.submission_valid {
        "submission_valid: true".to_string()
    } else if aggregate.scenario.is_none() {
        // No run had a recipe (`scenario` is any run's).
        let others: Vec<&str> = reasons
            .iter()
            .map(String::as_str)
            .filter(|r| *r != NO_SCENARIO)
            .collect();
        match others.is_empty() {
            true => "no recipe (--scenario): not a submission".to_string(),
            false => format!(
                "no recipe (--scenario): not a submission ({})",
                others.join(", ")
            ),
        }
    } else {
        format!("submission_valid: false ({})", reasons.join(", "))
    };
    format!(
        "aggregate: {} of {planned} runs complete; {validity}",
        aggregate.runs_complete
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arbor::runs::aggregate::AGGREGATE_SCHEMA;

    fn aggregate(scenario: Option<&str>, reasons: &[&str]) -> Aggregate {
        Aggregate {
            schema_version: AGGREGATE_SCHEMA,
            runs_planned: Some(3),
            runs_complete: 2,
            seed: Some(0),
            scenario: scenario.map(str::to_string),
            submission_valid: false,
            submission_invalid_reasons: reasons.iter().map(|r| r.to_string()).collect(),
            confidence: 0.95,
            metrics: Default::default(),
            runs: Vec::new(),
        }
    }

    #[test]
    fn runs_without_a_recipe_get_no_validity_stamp_but_keep_their_other_reasons() {
        let plain = headline(&aggregate(None, &["no_scenario"]));
        assert_eq!(
            plain,
            "aggregate: 2 of 3 runs complete; no recipe (--scenario): not a submission"
        );
        let failed = headline(&aggregate(None, &["no_scenario", "run_failed:2"]));
        assert!(
            failed.ends_with("not a submission (run_failed:2)"),
            "{failed}"
        );
        assert!(!failed.contains("submission_valid"), "{failed}");
        // Under a recipe the stamp stands, with every reason.
        let recipe = headline(&aggregate(
            Some("agentx-mvp"),
            &["no_scenario", "run_failed:2"],
        ));
        assert!(
            recipe.ends_with("submission_valid: false (no_scenario, run_failed:2)"),
            "{recipe}"
        );
    }
}
