//! `arbor convert`: read traces of any format, write arbor's native JSONL
//! form (one tree per line), input by input so only one input's trees are
//! in memory at a time.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use std::path::PathBuf;

use arbor_formats::input::Format;
use arbor_formats::load::{self, arbor::write_tree};

use crate::subset::{self, SubsetOptions};
use crate::Observer;
use arbor_error::Error;

/// `arbor convert`: the traces to read and the file to write.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// Trace files or directories, or `data:NAME`.
    pub inputs: Vec<PathBuf>,
    /// The format of every input; `None` detects each by content.
    pub format: Option<Format>,
    /// The arbor JSONL file to write.
    pub output: PathBuf,
    /// Which part of the inputs to write (`--trees`, `--tree`,
    /// `--max-requests`); `Default` is all of them.
    pub subset: SubsetOptions,
}

/// Writes the trees of every input to the output, in arbor's form (the
/// only output format so far); returns how many.
pub fn convert(args: &ConvertOptions, observer: &dyn Observer) -> Result<u64, Error> {
    let format = args.format;
    let output = &args.output;
    let inputs = arbor_formats::data::resolve_inputs(&args.inputs)?;
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
    let result =
        write_all(&inputs, format, &args.subset, observer, &mut out, &name).and_then(|trees| {
            out.flush()
                .map_err(|e| Error::other(format!("{name}: cannot write: {e}")))?;
            Ok(trees)
        });
    match result {
        Ok(trees) => {
            observer.notice(&format!("arbor convert: wrote {trees} trees to {name}"));
            Ok(trees)
        }
        Err(failure) => {
            // Leave no half-written file that looks like a good one.
            drop(out);
            let _ = std::fs::remove_file(output);
            Err(failure)
        }
    }
}

/// Writes every input's trees, input by input; with a subset, every input
/// is read first (a sample needs the whole corpus) and only the trees
/// taken are written.
fn write_all(
    inputs: &[PathBuf],
    format: Option<Format>,
    part: &SubsetOptions,
    observer: &dyn Observer,
    out: &mut impl Write,
    name: &str,
) -> Result<u64, Error> {
    let mut trees = 0u64;
    let mut write = |tree: &arbor_engine::model::Tree| {
        trees += 1;
        write_tree(tree, out).map_err(|e| Error::other(format!("{name}: cannot write: {e}")))
    };
    if part.is_whole() {
        for input in inputs {
            let loaded = load::load_path(input, format).map_err(Error::input)?;
            loaded.trees.iter().try_for_each(&mut write)?;
        }
    } else {
        let mut all = Vec::new();
        for input in inputs {
            all.extend(load::load_path(input, format).map_err(Error::input)?.trees);
        }
        match subset::choose(&all, part)? {
            Some((kept, taken)) => {
                observer.notice(&format!("arbor convert: {taken}"));
                kept.iter()
                    .filter_map(|&i| all.get(i))
                    .try_for_each(&mut write)?;
            }
            None => all.iter().try_for_each(&mut write)?,
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
