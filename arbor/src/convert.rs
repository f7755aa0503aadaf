//! `arbor convert`: read traces of any format, write them in a target
//! format (`--to`: arbor's native JSONL by default, or Weka, Mooncake,
//! agentic Mooncake, Dynamo, AIPerf's graph), input by input so only one
//! input's trees are in memory at a time, and return the account of what
//! the target kept, inferred and could not express
//! ([`arbor_formats::write::Account`]).
//!
//! Owns the files: one output file, or for Weka a directory of one file
//! per tree; nothing half-written is left behind on failure. The writers
//! and their accounts are `arbor_formats::write`'s; arbor's own lines are
//! the native reader's writer.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arbor_engine::model::Tree;
use arbor_formats::input::Format;
use arbor_formats::load::{self, arbor::write_tree};
use arbor_formats::write::{self, Account, Target, TreeWriter};

use crate::subset::{self, SubsetOptions};
use crate::Observer;
use arbor_error::Error;

/// `arbor convert`: the traces to read, the format and place to write.
#[derive(Debug, Clone)]
pub struct ConvertOptions {
    /// Trace files or directories, or `data:NAME`.
    pub inputs: Vec<PathBuf>,
    /// The format of every input; `None` detects each by content.
    pub format: Option<Format>,
    /// The format to write (`--to`).
    pub target: Target,
    /// The file to write, or for Weka the directory (created; it must be
    /// new or empty).
    pub output: PathBuf,
    /// Which part of the inputs to write (`--trees`, `--tree`,
    /// `--max-requests`); `Default` is all of them.
    pub subset: SubsetOptions,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            inputs: Vec::new(),
            format: None,
            target: Target::Arbor,
            output: PathBuf::new(),
            subset: SubsetOptions::default(),
        }
    }
}

/// Writes the trees of every input to the output in the target format;
/// returns the account.
pub fn convert(args: &ConvertOptions, observer: &dyn Observer) -> Result<Account, Error> {
    let output = &args.output;
    let inputs = arbor_formats::data::resolve_inputs(&args.inputs)?;
    for input in &inputs {
        if same_file(input, output) {
            return Err(Error::input(format!(
                "{}: the output would overwrite this input; expected a different -o {}",
                input.display(),
                if args.target.file_per_tree() {
                    "DIR"
                } else {
                    "FILE"
                }
            )));
        }
    }
    let name = output.display().to_string();
    let mut account = Account::new(args.target.name(), &name, args.target.kept());
    let mut sink = Sink::open(args.target, output)?;
    let result =
        write_all(&inputs, args, observer, &mut sink, &mut account).and_then(|()| sink.finish());
    match result {
        Ok(files) => {
            account.files = files;
            Ok(account)
        }
        Err(failure) => {
            // Leave no half-written output that looks like a good one.
            sink.discard();
            Err(failure)
        }
    }
}

/// Writes every input's trees, input by input; with a subset, every input
/// is read first (a sample needs the whole corpus) and only the trees
/// taken are written.
fn write_all(
    inputs: &[PathBuf],
    args: &ConvertOptions,
    observer: &dyn Observer,
    sink: &mut Sink,
    account: &mut Account,
) -> Result<(), Error> {
    let format = args.format;
    let part = &args.subset;
    let mut write = |tree: &Tree| sink.write(tree, account);
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
    if account.written.trees == 0 {
        return Err(Error::input(
            "the inputs hold no trees: expected at least one trace",
        ));
    }
    sink.writer.finish(account);
    Ok(())
}

/// Arbor's own lines (the native reader's writer) with its account.
struct ArborLines;

impl TreeWriter for ArborLines {
    fn write_tree(
        &mut self,
        tree: &Tree,
        mut out: &mut dyn Write,
        account: &mut Account,
    ) -> std::io::Result<()> {
        write_tree(tree, &mut out)?;
        write::arbor::account(tree, account);
        Ok(())
    }
}

/// Where the trees go: one file, or one file per tree in a directory.
struct Sink {
    writer: Box<dyn TreeWriter>,
    output: PathBuf,
    name: String,
    /// The one output file (one-file targets).
    file: Option<BufWriter<File>>,
    /// Files written into the directory (per-tree targets), and whether
    /// the directory was made here.
    written: Vec<PathBuf>,
    made_dir: bool,
}

impl Sink {
    fn open(target: Target, output: &Path) -> Result<Sink, Error> {
        let name = output.display().to_string();
        let writer = target
            .writer()
            .unwrap_or_else(|| Box::new(ArborLines) as Box<dyn TreeWriter>);
        let mut sink = Sink {
            writer,
            output: output.to_path_buf(),
            name: name.clone(),
            file: None,
            written: Vec::new(),
            made_dir: false,
        };
        if target.file_per_tree() {
            match std::fs::read_dir(output) {
                Ok(mut entries) => {
                    if entries.next().is_some() {
                        return Err(Error::input(format!(
                            "{name}: the directory is not empty: expected a new or empty directory for -o DIR (--to {target} writes one file per tree)"
                        )));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    std::fs::create_dir_all(output)
                        .map_err(|e| Error::other(format!("{name}: cannot create: {e}")))?;
                    sink.made_dir = true;
                }
                Err(e) => {
                    return Err(Error::input(format!(
                        "{name}: {e}: expected a directory for -o DIR (--to {target} writes one file per tree)"
                    )))
                }
            }
        } else {
            let file = File::create(output)
                .map_err(|e| Error::other(format!("{name}: cannot create: {e}")))?;
            sink.file = Some(BufWriter::with_capacity(1 << 20, file));
        }
        Ok(sink)
    }

    fn write(&mut self, tree: &Tree, account: &mut Account) -> Result<(), Error> {
        account.tree_written(tree.agents.len(), tree.turn_count());
        let cannot =
            |path: &str, e: std::io::Error| Error::other(format!("{path}: cannot write: {e}"));
        match self.writer.tree_file(tree) {
            Some(file_name) => {
                let path = self.output.join(file_name);
                let shown = path.display().to_string();
                let file = File::create(&path).map_err(|e| cannot(&shown, e))?;
                self.written.push(path);
                let mut out = BufWriter::new(file);
                self.writer
                    .write_tree(tree, &mut out, account)
                    .and_then(|()| out.flush())
                    .map_err(|e| cannot(&shown, e))
            }
            None => {
                let name = &self.name;
                let Some(out) = self.file.as_mut() else {
                    return Err(Error::other(format!("{name}: not open for writing")));
                };
                self.writer
                    .write_tree(tree, out, account)
                    .map_err(|e| cannot(name, e))
            }
        }
    }

    /// Flushes the output; the number of files written.
    fn finish(&mut self) -> Result<u64, Error> {
        if let Some(out) = self.file.as_mut() {
            out.flush()
                .map_err(|e| Error::other(format!("{}: cannot write: {e}", self.name)))?;
            return Ok(1);
        }
        Ok(self.written.len() as u64)
    }

    /// Removes what was written.
    fn discard(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.output);
        }
        for path in self.written.drain(..) {
            let _ = std::fs::remove_file(path);
        }
        if self.made_dir {
            let _ = std::fs::remove_dir(&self.output);
        }
    }
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
