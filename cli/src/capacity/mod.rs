//! `arbor capacity INPUT... --slo '...'`: the flags to the library's
//! capacity search ([`arbor::capacity::capacity`]), then the console: its
//! progress lines on stderr and the table ([`table`]) on stdout, ending
//! with where the capacity page is (`report in OUT/report.html`).

mod table;

use arbor::capacity_search::output::CAPACITY_FILE;
use arbor::{Error, Kind};

use crate::args::CapacityArgs;
use crate::console::Console;
use crate::options::{self, Given};
use crate::stdout;

/// `arbor capacity`.
/// An answer that is only a bound (a probe left unresolved) prints its
/// table and then ends as an error (exit 5) with its sentence.
pub fn run(args: &CapacityArgs, given: &Given) -> Result<(), Error> {
    let found = arbor::capacity::capacity(&options::capacity(args, given), &Console::default())?;
    let bound = found.conclusion.bound_sentence(found.knob, &found.slo);
    stdout::print(|mut text| {
        table::print(
            &mut text,
            found.knob,
            &found.points,
            &found.answer,
            &found.slo,
            bound.as_deref(),
        )?;
        table::conclusion(&mut text, found.knob, &found.conclusion)?;
        writeln!(
            text,
            "capacity in {}",
            found.out.join(CAPACITY_FILE).display()
        )?;
        writeln!(text, "{}", found.report)
    })?;
    match bound {
        None => Ok(()),
        Some(sentence) => Err(Error {
            kind: Kind::TooFewMeasured,
            message: format!("arbor capacity: {sentence}"),
        }),
    }
}
