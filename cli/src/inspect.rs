//! `arbor inspect`: load, summarise, print (human or JSON).

use std::io::{self, Write};

use arbor_engine::derive::DeriveOptions;
use arbor_engine::inspect::inspect;
use arbor_engine::load::{self, Format};
use arbor_engine::policy::parse_seconds;

use crate::args::InspectArgs;
use crate::Failure;

/// `--format NAME`, if given.
pub fn format_flag(format: Option<&str>) -> Result<Option<Format>, Failure> {
    format.map(str::parse).transpose().map_err(Failure::input)
}

pub fn run(args: &InspectArgs) -> Result<(), Failure> {
    let format = format_flag(args.format.as_deref())?;
    let options = DeriveOptions {
        overlap_tolerance: parse_seconds("--overlap-tolerance", &args.overlap_tolerance)
            .map_err(Failure::input)?,
    };
    let loaded = load::load_all(&args.inputs, format).map_err(Failure::input)?;
    let inspection = inspect(&loaded, &options);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let written = if args.json {
        serde_json::to_writer_pretty(&mut out, &inspection)
            .map_err(io::Error::other)
            .and_then(|_| writeln!(out))
    } else {
        inspection.write_human(&mut out)
    };
    written.map_err(|e| Failure::other(format!("stdout: {e}")))
}
