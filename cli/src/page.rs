//! `arbor report RUN_DIR... [-o FILE]`, and the page a run directory gets
//! (`run`, `summarize`, `merge`): [`arbor::report::page`] writes it, this
//! says where it is on stdout.

use std::path::Path;

use arbor::report::page::{self, ReportOptions};
use arbor::Error;

use crate::args::ReportArgs;
use crate::stdout;

/// `arbor report`.
pub fn run(args: &ReportArgs) -> Result<(), Error> {
    let options = ReportOptions {
        run_dirs: args.run_dirs.clone(),
        out: args.out.clone(),
    };
    let line = page::report(&options)?;
    say(&line)
}

/// Writes the page of the run directory `dir` and prints where it is (the
/// console's last line).
pub fn write_for_run(dir: &Path) -> Result<(), Error> {
    let line = page::write_for_run(dir)?;
    say(&line)
}

fn say(line: &str) -> Result<(), Error> {
    stdout::print(|text| writeln!(text, "{line}"))
}
