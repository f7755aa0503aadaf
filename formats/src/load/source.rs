//! An input opened once, and the caps on what is read from it.
//!
//! Owns [`Source`]: what a reader reads. A regular file is named by its
//! path and opened when read (detection reads its first bytes, the reader
//! opens it again from the start); anything else (stdin as `-`, a pipe, a
//! FIFO, `/dev/stdin`, `<(cat f)`, a device) can be read only once, so its
//! first [`SNIFF_BYTES`] are read for detection and kept in front of the
//! rest of the same stream, which the reader then reads. Owns the caps too:
//! [`MAX_INPUT_BYTES`] (a whole input), [`MAX_DOCUMENT_BYTES`] (one JSON
//! document) and [`MAX_LINE_BYTES`] (one line),
//! which `json.rs` enforces while it reads. Knows nothing of formats.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

use arbor_engine::error::InputError;

use super::sniff::{Prefix, SNIFF_BYTES};

/// The largest input arbor reads: 4 GiB of text (after zstd decoding).
/// The largest real corpora are a few hundred MB.
pub const MAX_INPUT_BYTES: u64 = 4 << 30;

/// The longest line of a JSON-lines input: 64 MiB (one trace per line in
/// the largest Weka corpora is a few MB).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The longest input read as one JSON document (a format of one document
/// per file, e.g. a Weka trace): 512 MiB. The whole document is parsed
/// at once (several times its size in memory); the largest real ones are
/// a few MB, and a larger corpus is JSON lines.
pub const MAX_DOCUMENT_BYTES: u64 = 512 << 20;

/// The input path that means standard input.
pub const STDIN: &str = "-";

/// How messages name standard input.
const STDIN_NAME: &str = "stdin";

/// `4 GiB`, `64 MiB`: a cap in words.
pub fn show_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b => format!("{b} bytes"),
    }
}

/// One input to read.
pub struct Source {
    /// How messages and `Tree::source` name it: the path, or `stdin`.
    name: String,
    /// The path given (`None` for stdin).
    path: Option<PathBuf>,
    kind: Kind,
}

enum Kind {
    /// A regular file, opened when read.
    File(PathBuf),
    /// A stream read once: its first bytes (already read, for detection)
    /// and the rest.
    Stream {
        head: Vec<u8>,
        rest: Box<dyn Read + Send>,
    },
}

impl Source {
    /// A regular file, not opened yet (readers' tests use this).
    pub fn file(path: &Path) -> Source {
        Source {
            name: path.display().to_string(),
            path: Some(path.to_path_buf()),
            kind: Kind::File(path.to_path_buf()),
        }
    }

    /// Opens `path` (`-` is stdin) for reading once: a regular file stays a
    /// path; anything else has its first bytes read now, for detection.
    /// A directory is the caller's business (it is refused here).
    pub fn open(path: &Path) -> Result<Source, InputError> {
        if path == Path::new(STDIN) {
            return Source::stream(STDIN_NAME.to_string(), None, Box::new(io::stdin()));
        }
        let name = path.display().to_string();
        let cannot = |e: io::Error| InputError::whole(&name, format!("cannot read: {e}"));
        let meta = fs::metadata(path).map_err(cannot)?;
        if meta.is_dir() {
            return Err(InputError::whole(
                &name,
                "is a directory: expected a trace file",
            ));
        }
        if meta.is_file() {
            check_size(&name, meta.len())?;
            return Ok(Source::file(path));
        }
        // A FIFO, a pipe, a device: opened once, read once.
        let file = File::open(path).map_err(cannot)?;
        Source::stream(name, Some(path.to_path_buf()), Box::new(file))
    }

    pub(super) fn stream(
        name: String,
        path: Option<PathBuf>,
        mut rest: Box<dyn Read + Send>,
    ) -> Result<Source, InputError> {
        let mut head = Vec::new();
        (&mut rest)
            .take(SNIFF_BYTES)
            .read_to_end(&mut head)
            .map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
        Ok(Source {
            name,
            path,
            kind: Kind::Stream { head, rest },
        })
    }

    /// How messages name this input.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The path given, `None` for stdin.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The first bytes, as detectors see them.
    pub fn prefix(&self) -> Result<Prefix, InputError> {
        match &self.kind {
            Kind::File(path) => Prefix::read(path),
            Kind::Stream { head, .. } => Ok(Prefix::of(head)),
        }
    }

    /// Every byte of the input from its start (not yet zstd-decoded).
    pub(super) fn into_reader(self) -> Result<Box<dyn BufRead>, InputError> {
        let cannot = |e: io::Error| InputError::whole(&self.name, format!("cannot read: {e}"));
        match self.kind {
            Kind::File(path) => {
                let handle = File::open(&path).map_err(cannot)?;
                let len = handle.metadata().map_err(cannot)?.len();
                check_size(&self.name, len)?;
                Ok(Box::new(BufReader::with_capacity(1 << 16, handle)))
            }
            Kind::Stream { head, rest } => Ok(Box::new(BufReader::with_capacity(
                1 << 16,
                Cursor::new(head).chain(rest),
            ))),
        }
    }
}

impl From<&Path> for Source {
    fn from(path: &Path) -> Source {
        Source::file(path)
    }
}

impl From<&PathBuf> for Source {
    fn from(path: &PathBuf) -> Source {
        Source::file(path)
    }
}

/// Refuses a regular file larger than [`MAX_INPUT_BYTES`] before reading it.
fn check_size(name: &str, len: u64) -> Result<(), InputError> {
    if len > MAX_INPUT_BYTES {
        return Err(InputError::whole(
            name,
            format!(
                "{len} bytes: expected at most {} (the input cap; see docs/formats.md)",
                show_bytes(MAX_INPUT_BYTES)
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_read_in_words() {
        assert_eq!(show_bytes(MAX_INPUT_BYTES), "4 GiB");
        assert_eq!(show_bytes(MAX_LINE_BYTES as u64), "64 MiB");
        assert_eq!(show_bytes(1000), "1000 bytes");
    }

    #[test]
    fn a_stream_is_read_once_head_then_rest() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let source = Source::stream(
            "pipe".to_string(),
            None,
            Box::new(Cursor::new(bytes.clone())),
        )
        .expect("opens");
        let mut all = Vec::new();
        source
            .into_reader()
            .expect("reader")
            .read_to_end(&mut all)
            .expect("reads");
        assert_eq!(all, bytes);
    }

    #[test]
    fn a_directory_is_not_a_source() {
        let dir = std::env::temp_dir();
        let err = Source::open(&dir).err().expect("refused");
        assert!(err.message.contains("is a directory"), "{err}");
    }
}
