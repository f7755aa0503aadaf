//! `arbor emulate`: the flags to the library's emulator
//! ([`arbor::emulate::serve_until_interrupted`]), served until Ctrl+C.

use arbor::Error;

use crate::args::EmulateArgs;
use crate::console::Console;
use crate::options;

/// `arbor emulate`.
pub fn run(args: &EmulateArgs) -> Result<(), Error> {
    arbor::emulate::serve_until_interrupted(&options::emulate(args), &Console::default())
}
