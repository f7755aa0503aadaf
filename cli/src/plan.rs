//! `arbor plan`: the flags to the library's plan ([`arbor::plan::plan`]),
//! and its report on stdout (`--json`, or the human form).

use arbor::Error;

use crate::args::PlanArgs;
use crate::console::Console;
use crate::options::{self, Given};
use crate::stdout;

/// `arbor plan`.
pub fn run(args: &PlanArgs, given: &Given) -> Result<(), Error> {
    let report = arbor::plan::plan(&options::plan(args, given), &Console::default())?;
    stdout::json_or_human(args.json, &report, |mut out| report.print_human(&mut out))
}
