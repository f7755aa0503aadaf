//! A file an export writes: buffered, gzipped when its
//! name ends in `.gz`, and removed again when the export fails. Owns the
//! message of a file that cannot be written (exit 1); knows nothing of
//! what is written.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;
use flate2::Compression;

use arbor_error::Error;

const BUFFER: usize = 1 << 16;

/// An output file being written.
pub struct Output {
    path: PathBuf,
    sink: Sink,
}

enum Sink {
    Plain(BufWriter<File>),
    /// Buffered before the encoder: it is slow with small writes.
    Gzip(BufWriter<GzEncoder<File>>),
}

impl Output {
    /// Creates `path` (exit 1 when it cannot be).
    pub fn create(path: &Path) -> Result<Output, Error> {
        let file = File::create(path).map_err(|e| cannot_write(path, &e))?;
        let sink = if path.extension().is_some_and(|e| e == "gz") {
            let gzip = GzEncoder::new(file, Compression::default());
            Sink::Gzip(BufWriter::with_capacity(BUFFER, gzip))
        } else {
            Sink::Plain(BufWriter::with_capacity(BUFFER, file))
        };
        Ok(Output {
            path: path.to_path_buf(),
            sink,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn writer(&mut self) -> &mut dyn Write {
        match &mut self.sink {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
        }
    }

    /// A write to this file failed: exit 1, naming it.
    pub fn fail(&self, e: io::Error) -> Error {
        cannot_write(&self.path, &e)
    }

    /// Ends the file (the gzip trailer) and flushes it.
    pub fn finish(self) -> Result<(), Error> {
        let done = match self.sink {
            Sink::Plain(mut w) => w.flush(),
            Sink::Gzip(w) => w
                .into_inner()
                .map_err(|e| e.into_error())
                .and_then(|gzip| gzip.finish())
                .and_then(|mut f| f.flush()),
        };
        done.map_err(|e| cannot_write(&self.path, &e))
    }

    /// Drops what was written and removes the file: an export that fails
    /// leaves no half-written file behind.
    pub fn discard(self) {
        let path = self.path;
        drop(self.sink);
        // Already failing: a file that cannot be removed changes nothing.
        let _ = std::fs::remove_file(path);
    }
}

fn cannot_write(path: &Path, e: &io::Error) -> Error {
    Error::other(format!("{}: cannot write: {e}", path.display()))
}
