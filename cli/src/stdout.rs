//! Writing a command's report to stdout. A reader that goes away early
//! (`arbor plan ... | head -1`) is not an error: the command stops writing
//! and exits 0, quietly.

use std::io::{self, ErrorKind, Write};

use arbor::json::{self, Serialize};
use arbor::Error;

/// Runs `write` on a locked stdout and flushes; a closed pipe ends it
/// quietly.
pub fn print(write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), Error> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match write(&mut out).and_then(|()| out.flush()) {
        Err(e) if e.kind() != ErrorKind::BrokenPipe => Err(Error::other(format!("stdout: {e}"))),
        _ => Ok(()),
    }
}

/// `value` as one pretty JSON object (`--json`), or the human form.
pub fn json_or_human<T: Serialize>(
    json: bool,
    value: &T,
    human: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), Error> {
    print(|out| {
        if json {
            json::write_pretty(out, value)
        } else {
            human(out)
        }
    })
}
