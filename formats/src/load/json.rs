//! The one JSON reader: files read line by line ([`Lines`]), one JSON
//! object parsed into a format's typed record ([`parse`]), and the one
//! mapping from serde's errors to arbor's messages ([`Fault`]).
//!
//! Every format reads through here, so the same fault reads the same in
//! every format. A message names the file, the place (`line N`, a
//! `column C` for invalid JSON, the JSON path `$.a[1].b` when known) and
//! what was expected:
//!
//! | fault          | message                                                   |
//! |----------------|-----------------------------------------------------------|
//! | truncated JSON | `invalid JSON: the text ends early (truncated?): DETAIL`  |
//! | invalid JSON   | `invalid JSON: DETAIL` (serde's words, e.g. `expected value`) |
//! | trailing text  | `invalid JSON: trailing characters: expected one JSON object per line` |
//! | wrong type     | `invalid type: GOT: expected WHAT`                        |
//! | missing field  | ``missing field `F`: expected it in WHAT``                |
//! | unknown value  | ``unknown value `V`: expected one of ...``                |
//! | unknown field  | ``unknown field `F`: expected one of ...``                |
//! | bad value      | `expected WHAT, got VALUE` (see `fields.rs`)              |
//! | empty file     | `empty file: expected WHAT`                               |
//! | binary input   | `not UTF-8 text: expected one JSON object per line (is this a binary file?)` |
//! | a NUL byte     | `a NUL byte (0x00): expected JSON text (is this a binary or sparse file?)` |
//! | a long line    | `a line longer than 64 MiB: expected one JSON object per line of at most 64 MiB (the line cap; ...)` |
//! | a huge input   | `more than 4 GiB of text: expected at most 4 GiB (the input cap; ...)` |
//! | a huge document | `one JSON document longer than 512 MiB: expected at most 512 MiB read as one document (the document cap; ...)` |
//!
//! A NUL byte, a line over the cap and text past the input cap are placed
//! as `line N, byte offset B` (bytes of text from the start, after zstd
//! decoding).
//!
//! A record that is an array is a wrong type (`invalid type: array:
//! expected WHAT`); a missing field inside a nested object is `expected it
//! in this object` (its path is the place).
//!
//! Parsing runs serde once without path tracking (it costs about as much
//! as the parse), and again with it only to place a failure.

use std::io::{self, BufRead};

use serde::de::{Deserialize, DeserializeOwned};
use serde_json::error::Category;

use arbor_engine::error::InputError;

use super::sniff::{self, Codec};
use super::source::{show_bytes, Source, MAX_DOCUMENT_BYTES, MAX_INPUT_BYTES, MAX_LINE_BYTES};

/// A failure within one JSON text, before a file name is attached.
#[derive(Debug)]
pub(super) struct Fault {
    /// serde's (line, column) within the text (the column is shown for
    /// invalid JSON only, where the path may not reach the fault).
    pos: Option<(usize, usize)>,
    /// JSON path like `$.requests[3].t`.
    path: Option<String>,
    message: String,
    /// The text was one complete JSON value (a schema or value error, not
    /// invalid JSON or an early end).
    pub(super) complete: bool,
}

impl Fault {
    /// A fault in a value already parsed, at a JSON path.
    pub(super) fn at(path: impl Into<String>, message: impl Into<String>) -> Self {
        Fault {
            pos: None,
            path: Some(path.into()),
            message: message.into(),
            complete: true,
        }
    }

    /// The place (its JSON path) and the message, for readers that name
    /// the file and line themselves.
    pub(super) fn into_parts(self) -> (String, String) {
        (self.path.unwrap_or_else(|| "$".into()), self.message)
    }

    /// The error for a text that is line `line` of `file`.
    pub(super) fn on_line(self, file: &str, line: usize) -> InputError {
        self.place(file, Some(format!("line {line}")))
    }

    /// The error for a text that is the whole of `file` from line
    /// `line_offset + 1` on.
    pub(super) fn in_file(self, file: &str, line_offset: usize) -> InputError {
        let line = self
            .pos
            .map(|(line, _)| format!("line {}", line + line_offset));
        self.place(file, line)
    }

    fn place(self, file: &str, line: Option<String>) -> InputError {
        let column = self
            .pos
            .filter(|_| !self.complete)
            .map(|(_, column)| format!("column {column}"));
        let parts: Vec<String> = [line, column, self.path].into_iter().flatten().collect();
        let place = (!parts.is_empty()).then(|| parts.join(", "));
        InputError::new(file, place, self.message)
    }

    fn from_json(err: &serde_json::Error, path: Option<String>, what: &str) -> Self {
        let full = err.to_string();
        let bare = full
            .strip_suffix(&format!(" at line {} column {}", err.line(), err.column()))
            .unwrap_or(&full);
        let pos = (err.line() > 0).then_some((err.line(), err.column()));
        let (message, complete) = match err.classify() {
            Category::Eof => (
                format!("invalid JSON: the text ends early (truncated?): {bare}"),
                false,
            ),
            Category::Syntax | Category::Io => {
                let message = match bare {
                    "number out of range" => {
                        "invalid JSON: number out of range: expected a finite number".to_string()
                    }
                    "trailing characters" => {
                        "invalid JSON: trailing characters: expected one JSON object per line"
                            .to_string()
                    }
                    _ => format!("invalid JSON: {bare}"),
                };
                (message, false)
            }
            Category::Data => {
                let within = if path.is_some() { "this object" } else { what };
                (data_message(bare, within), true)
            }
        };
        Fault {
            pos,
            path,
            message,
            complete,
        }
    }
}

/// serde's words for a schema fault, in arbor's shape `FAULT: expected WHAT`.
fn data_message(bare: &str, within: &str) -> String {
    if bare.starts_with("missing field `") && !bare.contains(": expected") {
        return format!("{bare}: expected it in {within}");
    }
    if let Some(rest) = bare.strip_prefix("unknown variant ") {
        return format!(
            "unknown value {}",
            rest.replacen(", expected", ": expected", 1)
        );
    }
    if bare.starts_with("unknown field ") {
        return bare.replacen(", expected", ": expected", 1).replacen(
            ", there are no fields",
            ": expected no fields",
            1,
        );
    }
    if bare.starts_with("duplicate field ") {
        return format!("{bare}: expected each field once");
    }
    if bare.starts_with("invalid type: ")
        || bare.starts_with("invalid value: ")
        || bare.starts_with("invalid length ")
    {
        if let Some(at) = bare.rfind(", expected ") {
            let (got, expected) = bare.split_at(at);
            return format!("{got}: {}", expected.trim_start_matches(", "));
        }
    }
    bare.to_string()
}

/// `$.`-rooted JSON path of serde_path_to_error's path; `None` at the top.
/// A trailing `?` stands for a key serde had not read yet (invalid JSON
/// inside an object): the enclosing value is named instead.
fn json_path(path: &serde_path_to_error::Path) -> Option<String> {
    let text = path.to_string();
    match text.trim_end_matches(".?").trim_end_matches('?') {
        "." | "" => None,
        p if p.starts_with('[') => Some(format!("${p}")),
        p => Some(format!("$.{p}")),
    }
}

/// Parses one JSON object (a line, or a whole file) into `T`, borrowing
/// from `text` where `T` does. `what` names a record in messages ("a
/// Mooncake row (...)"). A record must be an object: serde would otherwise
/// read an array into a struct, field by position.
pub(super) fn parse<'de, T: Deserialize<'de>>(text: &'de str, what: &str) -> Result<T, Fault> {
    if sniff::trimmed(text).starts_with('[') {
        return Err(Fault {
            pos: None,
            path: None,
            message: format!("invalid type: array: expected {what}"),
            complete: false,
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let plain = T::deserialize(&mut de).and_then(|value| de.end().map(|()| value));
    let plain_err = match plain {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Err(e) => Err(Fault::from_json(e.inner(), json_path(e.path()), what)),
        // Only the end-of-input check failed (trailing characters).
        Ok(_) => Err(Fault::from_json(&plain_err, None, what)),
    }
}

/// Parses a value found inside a record (kept as its JSON text, e.g. a
/// request's `tools`) into `T`; a fault is placed at `path` (the value's
/// own path in the record, `$.request.tools`) followed by the path within
/// it. The text was valid JSON already, so a fault is a schema one.
pub(super) fn parse_value<'de, T: Deserialize<'de>>(
    text: &'de str,
    what: &str,
    path: &str,
) -> Result<T, Fault> {
    let mut de = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(value) => Ok(value),
        Err(e) => {
            let within = json_path(e.path()).map_or_else(
                || path.to_string(),
                |p| format!("{path}{}", p.trim_start_matches('$')),
            );
            let mut fault = Fault::from_json(e.inner(), Some(within), what);
            fault.pos = None;
            fault.complete = true;
            Err(fault)
        }
    }
}

/// A file read line by line (zstd decoded on the fly), counting lines and
/// bytes and naming the file and line in every failure. Reading stops at
/// the caps ([`MAX_LINE_BYTES`] a line, [`MAX_INPUT_BYTES`] in all) and at
/// the first NUL byte, which no JSON text holds (a sparse or binary file,
/// `/dev/zero`), so no input makes it grow without bound.
pub(super) struct Lines {
    reader: Box<dyn BufRead>,
    file: String,
    /// Number of the line last read.
    line: usize,
    /// Bytes of text read before `bytes`.
    offset: u64,
    /// The raw bytes being read (a line, or the rest of the file).
    bytes: Vec<u8>,
    /// The last line read, as text.
    text: String,
    compressed: Option<Codec>,
    /// What a record is, for messages.
    what: &'static str,
}

/// How much [`Lines::pull`] reads: up to a line break, or everything.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    LineEnd,
    End,
}

impl Lines {
    pub(super) fn open(source: Source, what: &'static str) -> Result<Lines, InputError> {
        let file = source.name().to_string();
        let (reader, compressed) = sniff::decode(source.into_reader()?, &file)?;
        Ok(Lines {
            reader,
            file,
            line: 0,
            offset: 0,
            bytes: Vec::new(),
            text: String::new(),
            compressed,
            what,
        })
    }

    pub(super) fn file(&self) -> &str {
        &self.file
    }

    /// The number of the line last read.
    pub(super) fn line(&self) -> usize {
        self.line
    }

    /// What a record is, for messages.
    pub(super) fn what(&self) -> &'static str {
        self.what
    }

    pub(super) fn compressed(&self) -> Option<Codec> {
        self.compressed
    }

    fn read_error(&self, e: &io::Error) -> InputError {
        let message = match self.compressed {
            Some(codec) => format!("corrupt {} stream: {e}", codec.name()),
            None => format!("cannot read: {e}"),
        };
        InputError::at(&self.file, format!("line {}", self.line + 1), message)
    }

    /// `line N, byte offset B` of byte `at` of `bytes`.
    fn place_of(&self, at: usize) -> String {
        let breaks = self.bytes.get(..at).unwrap_or_default();
        let line = self.line + 1 + breaks.iter().filter(|&&b| b == b'\n').count();
        format!("line {line}, byte offset {}", self.offset + at as u64)
    }

    /// Appends to `bytes` up to and with the next line break (or to the
    /// end); `false` when nothing was left. Fails at a NUL byte or a cap.
    fn pull(&mut self, until: Until) -> Result<bool, InputError> {
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.read_error(&e)),
            };
            if chunk.is_empty() {
                return Ok(!self.bytes.is_empty());
            }
            let line_end = match until {
                Until::LineEnd => memchr::memchr(b'\n', chunk),
                Until::End => None,
            };
            let take = line_end.map_or(chunk.len(), |i| i + 1);
            let part = &chunk[..take];
            let nul = memchr::memchr(0, part);
            let had = self.bytes.len();
            let line_cap = until == Until::LineEnd && had + take > MAX_LINE_BYTES;
            let total = self.offset + (had + take) as u64;
            self.bytes.extend_from_slice(part);
            self.reader.consume(take);
            if let Some(at) = nul {
                // Binary input is named as such when the bytes read fail
                // as UTF-8 (not merely cut at the end); NULs in text (a
                // sparse file, `/dev/zero`) are named as a NUL.
                let binary =
                    std::str::from_utf8(&self.bytes).is_err_and(|e| e.error_len().is_some());
                if binary {
                    return Err(self.not_text());
                }
                return Err(InputError::at(
                    &self.file,
                    self.place_of(had + at),
                    "a NUL byte (0x00): expected JSON text (is this a binary or sparse file?)",
                ));
            }
            if line_cap {
                return Err(InputError::at(
                    &self.file,
                    self.place_of(0),
                    format!(
                        "a line longer than {}: expected one JSON object per line of at most {} (the line cap; see docs/formats.md)",
                        show_bytes(MAX_LINE_BYTES as u64),
                        show_bytes(MAX_LINE_BYTES as u64)
                    ),
                ));
            }
            // Where a cap was passed: the start of the line being read, or
            // in a whole document, the byte where the cap was reached.
            let passed = || match until {
                Until::LineEnd => self.place_of(0),
                Until::End => self.place_of(self.bytes.len()),
            };
            if until == Until::End && total > MAX_DOCUMENT_BYTES {
                return Err(InputError::at(
                    &self.file,
                    passed(),
                    format!(
                        "one JSON document longer than {}: expected at most {} read as one \
                         document (the document cap; write it as JSON lines, one record per \
                         line, to read more: see docs/formats.md)",
                        show_bytes(MAX_DOCUMENT_BYTES),
                        show_bytes(MAX_DOCUMENT_BYTES)
                    ),
                ));
            }
            if total > MAX_INPUT_BYTES {
                return Err(InputError::at(
                    &self.file,
                    passed(),
                    format!(
                        "more than {} of text{}: expected at most {} (the input cap; see docs/formats.md)",
                        show_bytes(MAX_INPUT_BYTES),
                        self.compressed.map_or(String::new(), |c| format!(
                            " (after {} decompression)",
                            c.name()
                        )),
                        show_bytes(MAX_INPUT_BYTES)
                    ),
                ));
            }
            if line_end.is_some() {
                return Ok(true);
            }
        }
    }

    /// `bytes` as text (moved, not copied), read from it; `bytes` is then
    /// empty and `offset` past it.
    fn take_text(&mut self) -> Result<String, InputError> {
        let bytes = std::mem::take(&mut self.bytes);
        let len = bytes.len() as u64;
        match String::from_utf8(bytes) {
            Ok(text) => {
                self.offset += len;
                Ok(text)
            }
            Err(_) => Err(self.not_text()),
        }
    }

    fn not_text(&self) -> InputError {
        InputError::at(
            &self.file,
            format!("line {}", self.line + 1),
            "not UTF-8 text: expected one JSON object per line (is this a binary file?)",
        )
    }

    /// The next non-blank line, without its line break (so a line cut
    /// short reads as truncated) and, on line 1, without a byte order
    /// mark; `None` at the end.
    pub(super) fn next_line(&mut self) -> Result<Option<&str>, InputError> {
        loop {
            // Reuse the last line's allocation.
            self.bytes = std::mem::take(&mut self.text).into_bytes();
            self.bytes.clear();
            if !self.pull(Until::LineEnd)? {
                return Ok(None);
            }
            self.text = self.take_text()?;
            self.line += 1;
            if !self.text.trim().is_empty() {
                break;
            }
        }
        let text = self.text.trim_end_matches(['\n', '\r']);
        let text = match text.strip_prefix('\u{feff}') {
            Some(rest) if self.line == 1 => rest,
            _ => text,
        };
        Ok(Some(text))
    }

    /// Appends everything not read yet to `into` (up to the input cap).
    pub(super) fn read_rest(&mut self, into: &mut String) -> Result<(), InputError> {
        self.bytes.clear();
        self.pull(Until::End)?;
        into.push_str(&self.take_text()?);
        Ok(())
    }

    /// The next non-blank line parsed into a record; `None` at the end.
    pub(super) fn next<T: DeserializeOwned>(&mut self) -> Result<Option<T>, InputError> {
        let what = self.what;
        let Some(text) = self.next_line()? else {
            return Ok(None);
        };
        match parse(text, what) {
            Ok(record) => Ok(Some(record)),
            Err(fault) => Err(fault.on_line(&self.file, self.line)),
        }
    }

    /// An error about the record last read, at `path` (`$.a.b`, or empty
    /// for the whole record).
    pub(super) fn error(&self, path: &str, message: impl Into<String>) -> InputError {
        InputError::at(&self.file, self.place(path), message)
    }

    /// `line N, PATH` (or `line N` for an empty path) of the record last read.
    pub(super) fn place(&self, path: &str) -> String {
        place(self.line, path)
    }

    /// `file:line N, PATH`, where a problem of the record last read is.
    pub(super) fn problem_place(&self, path: &str) -> String {
        format!("{}:{}", self.file, self.place(path))
    }

    /// The error for a file that holds no record.
    pub(super) fn empty(&self, expected: &str) -> InputError {
        InputError::whole(&self.file, format!("empty file: expected {expected}"))
    }
}

/// `line N, PATH` (or `line N` for an empty path).
pub(super) fn place(line: usize, path: &str) -> String {
    if path.is_empty() {
        format!("line {line}")
    } else {
        format!("line {line}, {path}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{"a":[` and then `1,` and a line break for ever (a document that
    /// never ends, as from a pipe).
    struct Endless {
        started: bool,
    }

    impl io::Read for Endless {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if !std::mem::replace(&mut self.started, true) {
                buf[..6].copy_from_slice(b"{\"a\":[");
                return Ok(6);
            }
            for pair in buf.chunks_exact_mut(3) {
                pair.copy_from_slice(b"1,\n");
            }
            Ok(buf.len() / 3 * 3)
        }
    }

    #[test]
    fn an_endless_document_is_refused_at_the_document_cap_where_it_passed_it() {
        // Issue 27, item 20: buffered to the 4 GiB input cap (4.2 GB of
        // memory), and the error named line 1, byte offset 0.
        let source = Source::stream("stdin".into(), None, Box::new(Endless { started: false }))
            .expect("opens");
        let mut lines = Lines::open(source, "a trace").expect("opens");
        let mut text = String::new();
        let Err(e) = lines.read_rest(&mut text) else {
            panic!("an endless document is refused")
        };
        let e = e.to_string();
        assert!(e.contains("one JSON document longer than 512 MiB"), "{e}");
        // The place is where the cap was passed: past line 100 million.
        let line: u64 = e
            .split("line ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(line > 100_000_000, "{e}");
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(expecting = "a thing (an object with `n`)")]
    #[allow(dead_code)]
    struct Thing {
        n: u32,
        #[serde(default)]
        kind: Option<Kind>,
    }

    #[derive(serde::Deserialize, Debug)]
    #[serde(rename_all = "snake_case")]
    enum Kind {
        Root,
    }

    fn fault(text: &str) -> String {
        parse::<Thing>(text, "a thing")
            .expect_err(text)
            .on_line("f.jsonl", 3)
            .to_string()
    }

    #[test]
    fn every_fault_kind_has_its_wording() {
        assert_eq!(
            fault(r#"{"n": 1"#),
            "f.jsonl: line 3, column 7: invalid JSON: the text ends early (truncated?): EOF while parsing an object"
        );
        assert_eq!(
            fault(r#"{"n": "x"}"#),
            "f.jsonl: line 3, $.n: invalid type: string \"x\": expected u32"
        );
        assert_eq!(
            fault(r#"{}"#),
            "f.jsonl: line 3: missing field `n`: expected it in a thing"
        );
        assert_eq!(
            fault(r#"{"n": 1, "kind": "leaf"}"#),
            "f.jsonl: line 3, $.kind: unknown value `leaf`: expected `root`"
        );
        assert_eq!(
            fault(r#"{"n": 1} x"#),
            "f.jsonl: line 3, column 10: invalid JSON: trailing characters: expected one JSON object per line"
        );
        assert_eq!(
            fault("[1]"),
            "f.jsonl: line 3: invalid type: array: expected a thing"
        );
        assert_eq!(
            fault(r#"{"n": 1e999}"#),
            "f.jsonl: line 3, column 11, $.n: invalid JSON: number out of range: expected a finite number"
        );
    }

    /// Lines of `bytes`, written to a scratch file.
    fn lines_of(tag: &str, bytes: &[u8]) -> Lines {
        let path = super::super::test_support::scratch_file(tag, bytes);
        let lines = Lines::open(Source::file(&path), "a thing").expect("opens");
        std::fs::remove_file(&path).ok();
        lines
    }

    #[test]
    fn a_nul_byte_is_refused_where_it_is() {
        let mut lines = lines_of("nul-line", b"{\"n\": 1}\n  \0\0\n");
        assert_eq!(lines.next_line().unwrap(), Some("{\"n\": 1}"));
        assert_eq!(
            lines.next_line().unwrap_err().to_string(),
            format!(
                "{}: line 2, byte offset 11: a NUL byte (0x00): expected JSON text (is this a binary or sparse file?)",
                lines.file()
            )
        );
        // In the rest of a whole-file object: its line and offset.
        let mut lines = lines_of("nul-rest", b"{\n\"n\":\n1\0}");
        assert_eq!(lines.next_line().unwrap(), Some("{"));
        let mut rest = String::new();
        let err = lines.read_rest(&mut rest).unwrap_err();
        assert_eq!(err.place.as_deref(), Some("line 3, byte offset 8"));
    }
}
