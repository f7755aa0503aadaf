//! `arbor run`: the flags to the library's run ([`arbor::run::run`]),
//! with the console as its observer (notices, the progress ticker, the
//! table of [`table`]). The run itself is the library's.

use arbor::Error;

use crate::args::RunArgs;
use crate::console::Console;
use crate::options::{self, Given};

/// `arbor run`.
pub fn run(args: &RunArgs, given: &Given) -> Result<(), Error> {
    arbor::run::run(&options::run(args, given), &Console::default())
}
