//! `arbor export RUN_DIR`: a run directory in other tools' formats.
//!
//! - `--perfetto FILE` ([`perfetto`]): the Chrome trace-event JSON that the
//!   Perfetto UI and chrome://tracing open: plays as processes, agents as
//!   threads, turns as slices with their phases, spawns and joins as flows
//!   (from `trees.jsonl`; a run directory without it is exported without
//!   flows, with a note), requests in flight as a counter.
//! - `--csv FILE` ([`csv`]): one flat row per request.
//!
//! A file whose name ends in `.gz` is gzipped. Reads `records.jsonl`
//! ([`records`]) and `trees.jsonl` ([`crate::shape`]); writes only the
//! files it is asked for. A missing directory or file, or a bad line, is
//! an input error (exit 2) naming the file and line; a file that cannot be
//! written exits 1.

mod csv;
mod perfetto;
mod records;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::args::ExportArgs;
use crate::failure::Failure;
use crate::{shape, stdout};

/// `arbor export`.
pub fn run(args: &ExportArgs) -> Result<(), Failure> {
    let dir = &args.run_dir;
    let records = records::read(dir)?;
    let mut report = Vec::new();
    if let Some(path) = &args.perfetto {
        let shapes = shape::read(dir)?;
        if shapes.is_none() {
            eprintln!(
                "note: {} has no {} (written by arbor run since it draws spawns and joins): \
                 the trace has no spawn or join flows",
                dir.display(),
                shape::TREES_FILE
            );
        }
        let written = write_file(path, |out| {
            perfetto::write(out, &records, shapes.as_deref())
        })?;
        if written.undrawn > 0 {
            eprintln!(
                "note: {} records have no usable time and are not drawn",
                written.undrawn
            );
        }
        report.push(format!(
            "wrote {}: {} turns in {} plays, {} spawn/join flows (open it at ui.perfetto.dev or chrome://tracing)",
            path.display(),
            written.turns,
            written.plays,
            written.flows
        ));
    }
    if let Some(path) = &args.csv {
        write_file(path, |out| csv::write(out, &records))?;
        report.push(format!(
            "wrote {}: {} rows, one per request",
            path.display(),
            records.len()
        ));
    }
    stdout::print(|out| {
        for line in &report {
            writeln!(out, "{line}")?;
        }
        Ok(())
    })
}

/// Creates `path` and writes it with `write`, gzipped when its name ends
/// in `.gz`.
fn write_file<T>(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> Result<T, Failure> {
    let fail = |e: io::Error| Failure::other(format!("{}: cannot write: {e}", path.display()));
    let file = BufWriter::new(File::create(path).map_err(fail)?);
    let gzip = path.extension().is_some_and(|e| e == "gz");
    let result = if gzip {
        let mut out = GzEncoder::new(file, Compression::default());
        write(&mut out).and_then(|v| out.finish()?.flush().map(|()| v))
    } else {
        let mut out = file;
        write(&mut out).and_then(|v| out.flush().map(|()| v))
    };
    result.map_err(fail)
}
