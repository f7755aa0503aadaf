//! `arbor convert`: read traces of any format, write arbor's native JSONL
//! form (one tree per line), input by input so only one input's trees are
//! in memory at a time.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use arbor_formats::load::{self, arbor::write_tree};

use crate::args::ConvertArgs;
use arbor_error::Error;

/// `--to arbor` (the only output format so far; clap checks the name).
pub fn run(args: &ConvertArgs) -> Result<(), Error> {
    let format = args.traces.format;
    let output = &args.output;
    let inputs = arbor_formats::data::resolve_inputs(&args.traces.inputs)?;
    for input in &inputs {
        if same_file(input, output) {
            return Err(Error::input(format!(
                "{}: the output would overwrite this input; expected a different -o FILE",
                input.display()
            )));
        }
    }
    let name = output.display().to_string();
    let file =
        File::create(output).map_err(|e| Error::other(format!("{name}: cannot create: {e}")))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let result = write_all(&inputs, format, &mut out, &name).and_then(|trees| {
        out.flush()
            .map_err(|e| Error::other(format!("{name}: cannot write: {e}")))?;
        Ok(trees)
    });
    match result {
        Ok(trees) => {
            eprintln!("arbor convert: wrote {trees} trees to {name}");
            Ok(())
        }
        Err(failure) => {
            // Leave no half-written file that looks like a good one.
            drop(out);
            let _ = std::fs::remove_file(output);
            Err(failure)
        }
    }
}

fn write_all(
    inputs: &[std::path::PathBuf],
    format: Option<arbor_formats::input::Format>,
    out: &mut impl Write,
    name: &str,
) -> Result<u64, Error> {
    let mut trees = 0u64;
    for input in inputs {
        let loaded = load::load_path(input, format).map_err(Error::input)?;
        for tree in &loaded.trees {
            write_tree(tree, out)
                .map_err(|e| Error::other(format!("{name}: cannot write: {e}")))?;
            trees += 1;
        }
    }
    if trees == 0 {
        return Err(Error::input(
            "the inputs hold no trees: expected at least one trace",
        ));
    }
    Ok(trees)
}

/// Whether writing `output` would change `input`: the same file, or a new
/// file inside the input directory (which would then be read as a trace).
fn same_file(input: &Path, output: &Path) -> bool {
    let Ok(input) = input.canonicalize() else {
        return false;
    };
    if output.canonicalize().is_ok_and(|o| o == input) {
        return true;
    }
    let parent = match output.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return false,
    };
    input.is_dir() && parent.canonicalize().is_ok_and(|p| p == input)
}
