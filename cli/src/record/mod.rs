//! `arbor record`: the flags to a recording's options, the recording
//! (the proxy is `arbor::backends::record`, the capture file
//! `arbor::formats::capture`), and what the console says: where it listens,
//! that it stops, how many exchanges the capture holds, a warning for a
//! listen address other machines may reach, and, at once, a capture that
//! cannot be written.

use std::net::SocketAddr;

use arbor::backends::record::{self, RecordObserver};
use arbor::Error;

use crate::args::RecordArgs;
use crate::stdout;
use arbor::runtime;

pub fn run(args: &RecordArgs) -> Result<(), Error> {
    runtime::raise_fd_limit();
    let options = args.options();
    let recorded = record::record(&options, &Console { args })?;
    eprintln!(
        "arbor record: {} exchanges written to {}; {} other requests forwarded only",
        recorded.lines,
        args.out.display(),
        recorded.forwarded
    );
    Ok(())
}

/// The recording's lines on the console.
struct Console<'a> {
    args: &'a RecordArgs,
}

impl RecordObserver for Console<'_> {
    fn listening(&self, addr: SocketAddr, upstream: &str) -> Result<(), Error> {
        if let Some(warning) = record::exposure_warning(addr) {
            eprintln!("arbor record: {warning}");
        }
        stdout::print(|out| {
            writeln!(
                out,
                "arbor record: listening on http://{addr}, forwarding to {upstream}, writing {} \
                 (Ctrl+C stops)",
                self.args.out.display()
            )
        })
    }

    fn stopping(&self, addr: SocketAddr) {
        eprintln!("arbor record: stopping (no new connections on {addr})");
    }

    fn capture_failed(&self, error: &str, forwarding: bool) {
        let out = self.args.out.display();
        if forwarding {
            eprintln!(
                "arbor record: WARNING: writing the capture {out} failed: {error}\n\
                 arbor record: WARNING: FORWARDING WITHOUT RECORDING \
                 (--forward-without-recording): no exchange from now on is in the capture"
            );
        } else {
            eprintln!(
                "arbor record: writing the capture {out} failed: {error}; no new exchanges \
                 are accepted (--forward-without-recording keeps forwarding instead)"
            );
        }
    }
}
