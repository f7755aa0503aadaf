//! `arbor export RUN_DIR`: the flags to [`arbor::report::export`]'s
//! options; its notes on stderr as they arise, then the lines that say
//! what was written on stdout.

use arbor::report::export::{self, ExportOptions};
use arbor::Error;

use crate::args::ExportArgs;
use crate::stdout;

pub fn run(args: &ExportArgs) -> Result<(), Error> {
    let options = ExportOptions {
        run_dir: args.run_dir.clone(),
        perfetto: args.perfetto.clone(),
        csv: args.csv.clone(),
        aiperf: args.aiperf.clone(),
    };
    let report = export::export(&options, &mut |note| eprintln!("{note}"))?;
    stdout::print(|out| {
        for line in &report {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
}
