//! A file an export writes: buffered, gzipped when its name ends in
//! `.gz`, written under a temporary name beside it (`.NAME.partial`) and
//! given its name only when the whole export succeeded. Owns that rule
//! (an export that fails, even at its last file, leaves none of its files
//! behind: docs/export.md) and the message of a file that cannot be
//! written (exit 1); knows nothing of what is written.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use arbor_error::Error;

const BUFFER: usize = 1 << 16;

/// An output file being written (under its temporary name).
pub struct Output {
    path: PathBuf,
    temp: PathBuf,
    /// `None` once finished.
    sink: Option<Sink>,
    /// What a finished output would be written to (never: `finish` takes
    /// the output).
    gone: io::Sink,
}

enum Sink {
    Plain(BufWriter<File>),
    /// Buffered before the encoder: it is slow with small writes.
    Gzip(BufWriter<GzEncoder<File>>),
}

/// A file written in full under its temporary name, waiting for the rest
/// of the export: [`Staged::commit`] names it; dropped uncommitted, it is
/// removed.
pub struct Staged {
    path: PathBuf,
    temp: PathBuf,
    committed: bool,
}

impl Output {
    /// Creates `path`'s temporary file (exit 1 when it cannot be).
    pub fn create(path: &Path) -> Result<Output, Error> {
        let name = path
            .file_name()
            .map_or_else(|| "export".into(), |n| n.to_string_lossy().into_owned());
        let temp = path.with_file_name(format!(".{name}.partial"));
        let file = File::create(&temp).map_err(|e| cannot_write(path, &e))?;
        let sink = if path.extension().is_some_and(|e| e == "gz") {
            let gzip = GzEncoder::new(file, Compression::default());
            Sink::Gzip(BufWriter::with_capacity(BUFFER, gzip))
        } else {
            Sink::Plain(BufWriter::with_capacity(BUFFER, file))
        };
        Ok(Output {
            path: path.to_path_buf(),
            temp,
            sink: Some(sink),
            gone: io::sink(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn writer(&mut self) -> &mut dyn Write {
        match &mut self.sink {
            Some(Sink::Plain(w)) => w,
            Some(Sink::Gzip(w)) => w,
            None => &mut self.gone,
        }
    }

    /// A write to this file failed: exit 1, naming it.
    pub fn fail(&self, e: io::Error) -> Error {
        cannot_write(&self.path, &e)
    }

    /// Ends the file (the gzip trailer) and flushes it: staged, named when
    /// the export commits.
    pub fn finish(mut self) -> Result<Staged, Error> {
        let done = match self.sink.take() {
            Some(Sink::Plain(mut w)) => w.flush(),
            Some(Sink::Gzip(w)) => w
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|gzip| gzip.finish())
                .and_then(|mut f| f.flush()),
            None => Ok(()),
        };
        let staged = Staged {
            path: std::mem::take(&mut self.path),
            temp: std::mem::take(&mut self.temp),
            committed: false,
        };
        done.map_err(|e| cannot_write(&staged.path, &e))?;
        Ok(staged)
    }
}

impl Drop for Output {
    /// An output never finished is removed: nothing half-written stays.
    fn drop(&mut self) {
        if self.sink.take().is_some() {
            // Already failing: a file that cannot be removed changes nothing.
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

impl Staged {
    /// Gives the file its name.
    pub fn commit(mut self) -> Result<(), Error> {
        self.committed = true;
        std::fs::rename(&self.temp, &self.path).map_err(|e| cannot_write(&self.path, &e))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Names every staged file, in order (the export succeeded).
pub fn commit_all(staged: Vec<Staged>) -> Result<(), Error> {
    staged.into_iter().try_for_each(Staged::commit)
}

fn cannot_write(path: &Path, e: &io::Error) -> Error {
    Error::other(format!("{}: cannot write: {e}", path.display()))
}
