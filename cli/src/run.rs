//! `arbor run`: the flags to the library's run ([`arbor::run::run`]),
//! with the console as its observer (notices, the progress display
//! `--ui` picks, the table of [`crate::run_table`]). The run itself is
//! the library's.

use arbor::Error;

use crate::args::RunArgs;
use crate::console::Console;
use crate::options::{self, Given};
use crate::terminal::Ui;

/// `arbor run`.
pub fn run(args: &RunArgs, given: &Given) -> Result<(), Error> {
    let console = Console::with_ui(Ui::resolve(args.ui, args.no_progress));
    arbor::run::run(&options::run(args, given), &console)
}
