//! Reading a run's `records.jsonl` back, line by line: the one reader that
//! `summarize`, `compare`, `export` and `report` share.
//!
//! Owns the reading rules, not what a line means: a line is read as a
//! [`crate::record_line::RecordLine`] (`record_line::read` is this reader
//! with that parse). Blank lines are skipped. A line a
//! caller cannot take is an error naming the file and the line, except a
//! last line without its newline, which a run killed mid-write leaves
//! torn: it is skipped and reported ([`Lines::torn`]), never an error.
//! A NUL byte or a line longer than [`LINE_CAP`] is an error where it is
//! found: a reader never buffers an endless line (`/dev/zero`, a
//! zero-filled tail) before refusing it.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use arbor_error::Error;

/// The file's name in a run directory.
pub const RECORDS_FILE: &str = "records.jsonl";

/// A torn last line: its number (1-based) and length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Torn {
    pub line: u64,
    pub bytes: usize,
}

/// What reading the file found besides its records.
#[derive(Debug, Clone, Default)]
pub struct Lines {
    /// Records handed to the caller.
    pub records: u64,
    pub torn: Option<Torn>,
}

/// Hands every non-blank line of `path` to `each` with its number
/// (1-based), in file order. `each` says why a line is not a record; that
/// becomes `PATH line N: MESSAGE` (exit 2), unless the line is the torn
/// last one.
pub fn for_each_line(
    path: &Path,
    mut each: impl FnMut(u64, &str) -> Result<(), String>,
) -> Result<Lines, Error> {
    let mut reader = Reader::open(path)?;
    while reader.next(&mut each)?.is_some() {}
    Ok(reader.found)
}

/// The file read a line at a time, for a caller that pulls (`arbor
/// merge` holds one per shard): the same rules as [`for_each_line`].
pub struct Reader {
    path: std::path::PathBuf,
    reader: BufReader<File>,
    buf: Vec<u8>,
    number: u64,
    /// What was read so far.
    pub found: Lines,
}

impl Reader {
    pub fn open(path: &Path) -> Result<Reader, Error> {
        let file = File::open(path).map_err(|e| {
            let why = match e.kind() {
                std::io::ErrorKind::NotFound => "missing".to_string(),
                _ => format!("cannot read ({e})"),
            };
            Error::input(format!(
                "{}: {why}; expected the records `arbor run` writes",
                path.display()
            ))
        })?;
        Ok(Reader {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(1 << 16, file),
            buf: Vec::new(),
            number: 0,
            found: Lines::default(),
        })
    }

    /// What `take` makes of the next non-blank line (with its number), or
    /// `None` at the end of the file or at a torn last line.
    pub fn next<T>(
        &mut self,
        mut take: impl FnMut(u64, &str) -> Result<T, String>,
    ) -> Result<Option<T>, Error> {
        if self.found.torn.is_some() {
            return Ok(None);
        }
        loop {
            self.buf.clear();
            let read = self
                .read_line()
                .map_err(|e| Error::input(format!("{}: cannot read: {e}", self.path.display())))?;
            let n = match read {
                Ok(0) => return Ok(None),
                Ok(n) => n,
                Err(why) => {
                    return Err(Error::input(format!(
                        "{} line {}: {why}",
                        self.path.display(),
                        self.number + 1
                    )))
                }
            };
            self.number += 1;
            let complete = self.buf.last() == Some(&b'\n');
            let taken = match std::str::from_utf8(self.buf.trim_ascii()) {
                Ok("") => continue,
                Ok(text) => take(self.number, text),
                Err(e) => Err(format!("not UTF-8 text ({e})")),
            };
            return match taken {
                Ok(value) => {
                    self.found.records += 1;
                    Ok(Some(value))
                }
                // Without its newline, this is the last line, cut short.
                Err(_) if !complete => {
                    self.found.torn = Some(Torn {
                        line: self.number,
                        bytes: n,
                    });
                    Ok(None)
                }
                Err(why) => Err(Error::input(format!(
                    "{} line {}: {why}",
                    self.path.display(),
                    self.number
                ))),
            };
        }
    }
}

impl Reader {
    /// Reads the next line into `buf`, its newline included when there is
    /// one: `Ok(Ok(bytes))`, 0 at the end of the file. A NUL byte (a tail
    /// a crash left zero-filled, or `/dev/zero`) or a line longer than
    /// [`LINE_CAP`] is `Ok(Err(why))`, found without reading past it.
    fn read_line(&mut self) -> std::io::Result<Result<usize, String>> {
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(Ok(self.buf.len()));
            }
            let (take, ends) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (at + 1, true),
                None => (chunk.len(), false),
            };
            if let Some(at) = memchr::memchr(0, &chunk[..take]) {
                return Ok(Err(format!(
                    "a NUL byte at byte {} of the line (a file zero-filled after a crash?); \
                     expected the records `arbor run` writes, one JSON object per line",
                    self.buf.len() + at + 1
                )));
            }
            if self.buf.len() + take > LINE_CAP {
                return Ok(Err(format!(
                    "a line longer than {} MiB; expected the records `arbor run` writes, one \
                     JSON object per line",
                    LINE_CAP >> 20
                )));
            }
            self.buf.extend_from_slice(&chunk[..take]);
            self.reader.consume(take);
            if ends {
                return Ok(Ok(self.buf.len()));
            }
        }
    }
}

/// The longest line a reader takes (64 MiB): a record of a million output
/// tokens, whose `itl_s` lists a million gaps, is about 20 MiB.
pub const LINE_CAP: usize = 64 << 20;

/// The words for a line serde could not read as a record.
pub fn not_a_record(e: &serde_json::Error) -> String {
    format!("expected a record of `arbor run` (docs/run.md): {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, text: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!(
            "arbor-records-file-{}-{name}.jsonl",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        path
    }

    fn numbers(path: &Path) -> Result<(Vec<u64>, Lines), Error> {
        let mut seen = Vec::new();
        let lines = for_each_line(path, |n, text| {
            serde_json::from_str::<serde_json::Value>(text)
                .map(|_| seen.push(n))
                .map_err(|e| not_a_record(&e))
        })?;
        Ok((seen, lines))
    }

    #[test]
    fn blank_lines_are_skipped_and_a_torn_last_line_is_reported() {
        let path = scratch("torn", "{\"a\":1}\n\n{\"a\":2}\n{\"a\":");
        let Ok((seen, lines)) = numbers(&path) else {
            panic!("a torn last line is not an error")
        };
        assert_eq!(seen, [1, 3]);
        assert_eq!(lines.records, 2);
        assert_eq!(lines.torn, Some(Torn { line: 4, bytes: 5 }));
    }

    #[test]
    fn a_bad_complete_line_names_the_file_and_line() {
        let path = scratch("bad", "{\"a\":1}\nnope\n{\"a\":2}\n");
        let Err(err) = numbers(&path) else {
            panic!("a bad line is an error")
        };
        assert!(err.is_input(), "{}", err.message);
        assert!(
            err.message
                .contains("line 2: expected a record of `arbor run`"),
            "{}",
            err.message
        );
    }
}
