//! `arbor aggregate OUT` and the console view of an aggregate
//! (`arbor::runs::aggregate`): the spread table, the validity line and
//! where the file is. Owns the wording only.

mod table;

use std::path::Path;

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

/// One line: runs, validity and the reasons.
fn headline(aggregate: &Aggregate) -> String {
    let planned = aggregate
        .runs_planned
        .map_or_else(|| "?".to_string(), |n| n.to_string());
    let validity = if aggregate.submission_valid {
        "submission_valid: true".to_string()
    } else {
        format!(
            "submission_valid: false ({})",
            aggregate.submission_invalid_reasons.join(", ")
        )
    };
    format!(
        "aggregate: {} of {planned} runs complete; {validity}",
        aggregate.runs_complete
    )
}
