//! `arbor run`: the flags to the library's run ([`arbor::run::run`]),
//! with the console as its observer (notices, the progress display
//! `--ui` picks, the table of [`crate::run_table`]). The run itself is
//! the library's.

use arbor::Error;

use crate::args::RunCommand;
use crate::console::Console;
use crate::options::{self, Given};
use crate::terminal::Ui;

/// `arbor run`.
pub fn run(args: &RunCommand, given: &Given) -> Result<(), Error> {
    let console = Console::with_ui(Ui::resolve(args.run.ui, args.run.no_progress));
    let mut options = options::run(&args.run, given);
    options.slo = args.slo.clone();
    arbor::run::run(&options, &console)
}
