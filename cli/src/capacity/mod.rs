//! `arbor capacity INPUT... --slo '...'`: the flags to the library's
//! capacity search ([`arbor::capacity::capacity`]), then the console: its
//! progress lines on stderr and the table ([`table`]) on stdout, ending
//! with where the capacity page is (`report in OUT/report.html`).

mod table;

use arbor::capacity_search::output::CAPACITY_FILE;
use arbor::Error;

use crate::args::CapacityArgs;
use crate::console::Console;
use crate::options::{self, Given};
use crate::stdout;

/// `arbor capacity`.
pub fn run(args: &CapacityArgs, given: &Given) -> Result<(), Error> {
    let found = arbor::capacity::capacity(&options::capacity(args, given), &Console::default())?;
    stdout::print(|mut text| {
        table::print(
            &mut text,
            found.knob,
            &found.points,
            &found.answer,
            &found.slo,
        )?;
        writeln!(
            text,
            "capacity in {}",
            found.out.join(CAPACITY_FILE).display()
        )?;
        writeln!(text, "{}", found.report)
    })
}
