//! Recognising a file by its first bytes, and decoding zstd and gzip.
//!
//! Owns the prefix every detector looks at ([`Prefix`]: the first
//! [`SNIFF_BYTES`] bytes of text, decompressed first when the file starts
//! with the zstd or gzip magic, so a compressed file is recognised by its
//! content, not its extension), the key checks detectors share
//! ([`has_key`], [`first_row`], [`first_object_keys`]) and the transparent
//! decoders ([`decode`]). Detectors see a prefix that may be cut anywhere
//! and must never fail on it. The caps on decompressed text are `json.rs`'s
//! (the same as on plain text), so a zstd or gzip bomb stops at them.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use ruzstd::frame::ReadFrameHeaderError;
use ruzstd::frame_decoder::{BlockDecodingStrategy, FrameDecoder, FrameDecoderError};

use arbor_engine::error::InputError;

/// How many bytes of a file are read to recognise its format.
pub const SNIFF_BYTES: u64 = 64 * 1024;

/// zstd frame magic number (little endian 0xFD2FB528).
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// gzip member magic number (RFC 1952).
pub const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];

/// A compression arbor decodes on the fly, recognised by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Zstd,
    Gzip,
}

impl Codec {
    /// The codec whose magic these first bytes start with.
    pub fn of(head: &[u8]) -> Option<Codec> {
        if head.starts_with(&ZSTD_MAGIC) {
            Some(Codec::Zstd)
        } else if head.starts_with(&GZIP_MAGIC) {
            Some(Codec::Gzip)
        } else {
            None
        }
    }

    /// `zstd`, `gzip`: as messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Gzip => "gzip",
        }
    }

    /// The decompressed stream of `raw`.
    fn reader(self, raw: Box<dyn BufRead>) -> Box<dyn Read> {
        match self {
            Codec::Zstd => Box::new(ZstdReader {
                source: raw,
                decoder: FrameDecoder::new(),
                in_frame: false,
            }),
            // Every member of a multi-member file (`cat a.gz b.gz`), as gzip
            // itself reads it.
            Codec::Gzip => Box::new(GzipReader(flate2::bufread::MultiGzDecoder::new(raw))),
        }
    }
}

/// The start of a file, as detectors see it.
#[derive(Debug, Clone, Default)]
pub struct Prefix {
    /// The compression the file starts with the magic of (its text is then
    /// the decompressed start, as far as it decodes).
    pub compressed: Option<Codec>,
    /// The first bytes of text (invalid UTF-8 replaced), possibly cut
    /// anywhere; empty when a compressed start does not decode.
    pub text: String,
}

impl Prefix {
    /// Reads the first [`SNIFF_BYTES`] of a file's text (decompressed
    /// from as much of the file as that takes).
    pub fn read(path: &Path) -> Result<Prefix, InputError> {
        let name = path.display().to_string();
        let file =
            File::open(path).map_err(|e| InputError::whole(&name, format!("cannot read: {e}")))?;
        Ok(Prefix::from_reader(Box::new(BufReader::new(file))))
    }

    /// The prefix of these bytes (the start of a stream).
    pub fn of(bytes: &[u8]) -> Prefix {
        Prefix::from_reader(Box::new(Cursor::new(bytes.to_vec())))
    }

    /// The first [`SNIFF_BYTES`] of text of `raw`; a read or decoding error
    /// ends the text where it happened (the reader reports it later, with
    /// its place).
    fn from_reader(mut raw: Box<dyn BufRead>) -> Prefix {
        let compressed = raw.fill_buf().ok().and_then(Codec::of);
        let text: Box<dyn Read> = match compressed {
            Some(codec) => codec.reader(raw),
            None => raw,
        };
        let mut bytes = Vec::new();
        let mut limited = text.take(SNIFF_BYTES);
        let mut chunk = [0u8; 8192];
        loop {
            match limited.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(chunk.get(..n).unwrap_or_default()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        Prefix {
            compressed,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }
}

/// `text` without a leading byte order mark and whitespace.
pub(super) fn trimmed(text: &str) -> &str {
    text.trim_start_matches('\u{feff}').trim_start()
}

/// Whether `"key"` followed by optional whitespace and `:` occurs anywhere
/// in `text` (at any depth).
pub(super) fn has_key(text: &str, key: &str) -> bool {
    let needle = format!("\"{key}\"");
    let mut rest = text;
    while let Some(pos) = rest.find(&needle) {
        let after = rest.get(pos + needle.len()..).unwrap_or("");
        if after.trim_start().starts_with(':') {
            return true;
        }
        rest = after;
    }
    false
}

/// The first non-blank line of a prefix, when it starts an object.
pub(super) fn first_row(text: &str) -> Option<&str> {
    text.trim_start_matches('\u{feff}')
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .filter(|l| l.starts_with('{'))
}

/// The top-level keys of the first JSON object of a prefix.
pub(super) struct TopKeys(Vec<String>);

impl TopKeys {
    pub(super) fn of(text: &str) -> TopKeys {
        TopKeys(first_object_keys(text))
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.0.iter().any(|k| k == key)
    }

    pub(super) fn has_any(&self, keys: &[&str]) -> bool {
        keys.iter().any(|k| self.has(k))
    }
}

/// The keys of the first top-level JSON object in `text`, in order, as far
/// as the text goes (a file's start may cut it anywhere); empty when the
/// text does not start with an object. String values are skipped whole, so
/// a key name inside a recorded text never counts.
pub(super) fn first_object_keys(text: &str) -> Vec<String> {
    let text = trimmed(text);
    let bytes = text.as_bytes();
    if bytes.first() != Some(&b'{') {
        return Vec::new();
    }
    let mut keys = Vec::new();
    let mut depth = 0usize;
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        match b {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            b'"' => {
                let begin = i + 1;
                let mut j = begin;
                loop {
                    match bytes.get(j) {
                        None => return keys,
                        Some(b'\\') => j += 2,
                        Some(b'"') => break,
                        Some(_) => j += 1,
                    }
                }
                let mut after = j + 1;
                while bytes.get(after).is_some_and(u8::is_ascii_whitespace) {
                    after += 1;
                }
                if depth == 1 && bytes.get(after) == Some(&b':') {
                    if let Some(key) = text.get(begin..j) {
                        keys.push(key.to_string());
                    }
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    keys
}

// ---------------------------------------------------------------------------
// Opening, with zstd and gzip decoded on the fly

/// The text of an input: `raw` decompressed on the fly when it starts with
/// the zstd or gzip magic bytes; says which it was.
pub(super) fn decode(
    mut raw: Box<dyn BufRead>,
    file: &str,
) -> Result<(Box<dyn BufRead>, Option<Codec>), InputError> {
    let head = raw
        .fill_buf()
        .map_err(|e| InputError::whole(file, format!("cannot read: {e}")))?;
    match Codec::of(head) {
        Some(codec) => Ok((
            Box::new(BufReader::with_capacity(1 << 16, codec.reader(raw))),
            Some(codec),
        )),
        None => Ok((raw, None)),
    }
}

/// An error raised while decompressing, marked so it is not mistaken for
/// a UTF-8 error of the decoded text.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct ZstdError(String);

fn zstd_error(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, ZstdError(message))
}

/// A gzip stream; a stream that ends before its trailer is an error (flate2
/// reports it as an early end of file).
struct GzipReader<R>(flate2::bufread::MultiGzDecoder<R>);

impl<R: BufRead> Read for GzipReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            let message = match e.kind() {
                io::ErrorKind::UnexpectedEof => "the stream ends early (truncated)".to_string(),
                _ => e.to_string(),
            };
            zstd_error(message)
        })
    }
}

/// A zstd stream of one or more frames (skippable frames skipped), with
/// each frame's content checksum verified when it has one.
struct ZstdReader<R> {
    source: R,
    decoder: FrameDecoder,
    in_frame: bool,
}

impl<R: BufRead> Read for ZstdReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if self.in_frame {
                while self.decoder.can_collect() < buf.len() && !self.decoder.is_finished() {
                    let wanted = buf.len() - self.decoder.can_collect();
                    self.decoder
                        .decode_blocks(&mut self.source, BlockDecodingStrategy::UptoBytes(wanted))
                        .map_err(|e| zstd_error(e.to_string()))?;
                }
                let n = self.decoder.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                if let (Some(stored), Some(computed)) = (
                    self.decoder.get_checksum_from_data(),
                    self.decoder.get_calculated_checksum(),
                ) {
                    if stored != computed {
                        return Err(zstd_error(format!(
                            "content checksum mismatch (stored {stored:#010x}, computed \
                             {computed:#010x})"
                        )));
                    }
                }
                self.in_frame = false;
            }
            if self.source.fill_buf()?.is_empty() {
                return Ok(0);
            }
            match self.decoder.init(&mut self.source) {
                Ok(()) => self.in_frame = true,
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                    length,
                    ..
                })) => {
                    let skipped = io::copy(
                        &mut (&mut self.source).take(u64::from(length)),
                        &mut io::sink(),
                    )?;
                    if skipped != u64::from(length) {
                        return Err(zstd_error(
                            "the stream ends inside a skippable frame".into(),
                        ));
                    }
                }
                Err(e) => return Err(zstd_error(e.to_string())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_object_keys_skips_nested_and_strings() {
        assert_eq!(
            first_object_keys(r#" {"a": {"b": 1, "c": [ {"d": 2} ]}, "e": "x\"y:", "f" : 3}"#),
            ["a", "e", "f"]
        );
        assert_eq!(first_object_keys(r#"{"a": "cut"#), ["a"]);
        assert!(first_object_keys("[1]").is_empty());
        assert!(first_object_keys("\"\\").is_empty());
    }

    #[test]
    fn has_key_wants_a_colon() {
        assert!(has_key(r#"{"a" : 1}"#, "a"));
        assert!(!has_key(r#"{"x": "a"}"#, "a"));
        assert!(!has_key(r#"{"x": "\"a\""#, "b"));
    }
}
