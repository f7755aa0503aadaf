//! `arbor record`: the flags to a recording's options, the recording
//! (the proxy is `arbor::backends::record`, the capture file
//! `arbor::formats::capture`), and what the console says: where it listens,
//! that it stops, how many exchanges the capture holds.

use std::net::SocketAddr;

use arbor::backends::record::{self, RecordObserver, RecordOptions};
use arbor::Error;

use crate::args::RecordArgs;
use crate::stdout;
use arbor::runtime;

pub fn run(args: &RecordArgs) -> Result<(), Error> {
    runtime::raise_fd_limit();
    let options = RecordOptions {
        upstream: args.upstream.clone(),
        listen: args.listen,
        out: args.out.clone(),
        session_header: args.session_header.clone(),
        redact: args.redact,
        tls: args.tls(),
    };
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
}
