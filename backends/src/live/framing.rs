//! HTTP/1.1 response body framing: where a body's bytes are and where it
//! ends.
//!
//! Owns decoding a body delimited by `Content-Length`, by chunked transfer
//! coding, or by the connection closing, fed in whatever pieces the socket
//! delivers. Pure: no I/O, no clock, no allocation. The decoder hands out
//! slices of its input, so the caller scans body bytes in the same read
//! that brought them.
//!
//! Cap: a chunk-size line (its hex digits and any extension) or a trailer
//! line longer than [`CHUNK_LINE_CAP`] bytes is an error
//! ([`FramingError::Oversized`]); nothing is buffered either way.

/// The longest chunk-size line (size, extension, line end) or trailer
/// line accepted, in bytes.
pub const CHUNK_LINE_CAP: usize = 4096;

/// How the end of a body is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// `Content-Length: n`.
    Length(u64),
    /// Neither: the body ends when the server closes the connection.
    UntilClose,
}

/// Why a body's framing cannot be followed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// It is broken (a bad chunk size line, a missing CRLF).
    #[error("bad HTTP body framing: {0}")]
    Broken(&'static str),
    /// A chunk-size or trailer line passed [`CHUNK_LINE_CAP`].
    #[error("a chunk-size line passed {CHUNK_LINE_CAP} bytes (the cap on one chunk-size line)")]
    Oversized,
}

use FramingError::Broken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading a chunk-size line's hex digits.
    Size {
        value: u64,
        digits: u8,
    },
    /// Skipping a chunk extension (`;name=value`) up to the line end;
    /// `len` bytes of the line so far.
    Extension {
        value: u64,
        len: usize,
    },
    /// Saw `\r` after a size line; `\n` must follow.
    SizeLf {
        value: u64,
    },
    /// Inside a chunk's data.
    Data {
        remaining: u64,
    },
    /// After a chunk's data: `\r\n` must follow.
    DataCr,
    DataLf,
    /// After the last (zero-size) chunk: trailer lines up to an empty one;
    /// `len` bytes of the current line so far.
    Trailer {
        len: usize,
    },
    /// Counting down a `Content-Length` body.
    Sized {
        remaining: u64,
    },
    /// Everything until the connection closes.
    Unbounded,
    Complete,
}

/// Incremental decoder of one response body.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
}

impl BodyDecoder {
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Chunked => State::Size {
                value: 0,
                digits: 0,
            },
            Framing::Length(0) => State::Complete,
            Framing::Length(n) => State::Sized { remaining: n },
            Framing::UntilClose => State::Unbounded,
        };
        BodyDecoder { state }
    }

    /// True once the whole body has been seen (the connection may then
    /// carry another request).
    pub fn is_complete(&self) -> bool {
        self.state == State::Complete
    }

    /// The connection closed: true when that was the body's end (a body
    /// delimited by the close), false when the body was cut.
    pub fn close(&mut self) -> bool {
        match self.state {
            State::Unbounded | State::Complete => {
                self.state = State::Complete;
                true
            }
            _ => false,
        }
    }

    /// Decodes `input`, calling `on_data` with each run of body bytes in
    /// order. Bytes after the body's end are ignored (the caller does not
    /// reuse such a connection: see [`Self::is_complete`]).
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<(), FramingError> {
        while !input.is_empty() {
            match self.state {
                State::Complete => return Ok(()),
                State::Unbounded => {
                    on_data(input);
                    return Ok(());
                }
                State::Sized { remaining } | State::Data { remaining } => {
                    let take = remaining.min(input.len() as u64) as usize;
                    let (data, rest) = input.split_at(take);
                    on_data(data);
                    input = rest;
                    let left = remaining - take as u64;
                    self.state = match (self.state, left) {
                        (State::Sized { .. }, 0) => State::Complete,
                        (State::Sized { .. }, _) => State::Sized { remaining: left },
                        (_, 0) => State::DataCr,
                        _ => State::Data { remaining: left },
                    };
                }
                _ => {
                    self.step(input[0])?;
                    input = &input[1..];
                }
            }
        }
        Ok(())
    }

    /// One byte of the chunked coding's control lines.
    fn step(&mut self, byte: u8) -> Result<(), FramingError> {
        self.state = match self.state {
            State::Size { value, digits } => match byte {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if digits >= 16 {
                        return Err(Broken("chunk size longer than 16 hex digits"));
                    }
                    let digit = (byte as char).to_digit(16).unwrap_or(0) as u64;
                    State::Size {
                        value: value << 4 | digit,
                        digits: digits + 1,
                    }
                }
                _ if digits == 0 => return Err(Broken("chunk size is not hexadecimal")),
                b';' | b' ' | b'\t' => State::Extension {
                    value,
                    len: usize::from(digits) + 1,
                },
                b'\r' => State::SizeLf { value },
                b'\n' => after_size_line(value),
                _ => return Err(Broken("chunk size is not hexadecimal")),
            },
            State::Extension { value, len } => match byte {
                b'\n' => after_size_line(value),
                _ if len >= CHUNK_LINE_CAP => return Err(FramingError::Oversized),
                _ => State::Extension {
                    value,
                    len: len + 1,
                },
            },
            State::SizeLf { value } => match byte {
                b'\n' => after_size_line(value),
                _ => return Err(Broken("chunk size line not ended by CRLF")),
            },
            State::DataCr => match byte {
                b'\r' => State::DataLf,
                b'\n' => State::Size {
                    value: 0,
                    digits: 0,
                },
                _ => return Err(Broken("chunk data not followed by CRLF")),
            },
            State::DataLf => match byte {
                b'\n' => State::Size {
                    value: 0,
                    digits: 0,
                },
                _ => return Err(Broken("chunk data not followed by CRLF")),
            },
            // A line of only `\r\n` (or `\n`) ends the trailer.
            State::Trailer { len } => match byte {
                b'\n' if len == 0 => State::Complete,
                b'\n' => State::Trailer { len: 0 },
                b'\r' if len == 0 => State::Trailer { len },
                _ if len >= CHUNK_LINE_CAP => return Err(FramingError::Oversized),
                _ => State::Trailer { len: len + 1 },
            },
            other => other,
        };
        Ok(())
    }
}

fn after_size_line(value: u64) -> State {
    if value == 0 {
        State::Trailer { len: 0 }
    } else {
        State::Data { remaining: value }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` split at every pair of positions; the body must come out
    /// whole and complete every time.
    fn decode_all_splits(framing: Framing, wire: &[u8]) -> Vec<u8> {
        let mut whole = None;
        for i in 0..=wire.len() {
            for j in i..=wire.len() {
                let mut decoder = BodyDecoder::new(framing);
                let mut out = Vec::new();
                for part in [&wire[..i], &wire[i..j], &wire[j..]] {
                    decoder
                        .feed(part, |d| out.extend_from_slice(d))
                        .expect("valid framing");
                }
                assert!(decoder.is_complete(), "split at {i},{j}");
                match &whole {
                    None => whole = Some(out),
                    Some(w) => assert_eq!(w, &out, "split at {i},{j}"),
                }
            }
        }
        whole.unwrap_or_default()
    }

    #[test]
    fn chunked_bodies_decode_across_any_split() {
        let wire = b"6\r\ndata: \r\n5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n";
        assert_eq!(
            decode_all_splits(Framing::Chunked, wire),
            b"data: hello0123456789"
        );
        assert_eq!(decode_all_splits(Framing::Chunked, b"0\r\n\r\n"), b"");
        // Bare LF line ends are accepted.
        assert_eq!(decode_all_splits(Framing::Chunked, b"2\nab\n0\n\n"), b"ab");
    }

    #[test]
    fn sized_bodies_end_at_their_length() {
        assert_eq!(decode_all_splits(Framing::Length(5), b"hello"), b"hello");
        let mut d = BodyDecoder::new(Framing::Length(3));
        let mut out = Vec::new();
        d.feed(b"abcdef", |x| out.extend_from_slice(x)).unwrap();
        assert_eq!(out, b"abc", "bytes past the length are not body");
        assert!(d.is_complete());
        assert!(BodyDecoder::new(Framing::Length(0)).is_complete());
    }

    #[test]
    fn close_ends_only_a_close_delimited_body() {
        let mut d = BodyDecoder::new(Framing::UntilClose);
        let mut out = Vec::new();
        d.feed(b"abc", |x| out.extend_from_slice(x)).unwrap();
        assert!(!d.is_complete());
        assert!(d.close());
        assert_eq!(out, b"abc");
        let mut cut = BodyDecoder::new(Framing::Chunked);
        cut.feed(b"5\r\nab", |_| {}).unwrap();
        assert!(!cut.close(), "a chunked body cut mid-chunk");
        let mut short = BodyDecoder::new(Framing::Length(9));
        short.feed(b"ab", |_| {}).unwrap();
        assert!(!short.close());
    }

    #[test]
    fn broken_framing_is_an_error_not_a_panic() {
        for wire in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"5\rx",
            b"2\r\nabX",
            b"2\r\nab\rX",
            b"11111111111111111\r\n",
        ] {
            let mut d = BodyDecoder::new(Framing::Chunked);
            assert!(d.feed(wire, |_| {}).is_err(), "{:?}", wire);
        }
        // A chunk-size line (or a trailer line) past the cap.
        let long = [&b"5;"[..], &vec![b'x'; CHUNK_LINE_CAP][..]].concat();
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert_eq!(d.feed(&long, |_| {}), Err(FramingError::Oversized));
        let trailer = [&b"0\r\nX-T: "[..], &vec![b'x'; CHUNK_LINE_CAP][..]].concat();
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert_eq!(d.feed(&trailer, |_| {}), Err(FramingError::Oversized));
        let mut d = BodyDecoder::new(Framing::Chunked);
        d.feed(&long[..CHUNK_LINE_CAP - 8], |_| {}).unwrap();
        d.feed(b"\r\nab", |_| {}).unwrap();
        assert!(!d.is_complete(), "a long extension under the cap is fine");
        // The largest size parses (and waits for its data).
        let mut d = BodyDecoder::new(Framing::Chunked);
        d.feed(b"ffffffffffffffff\r\nab", |_| {}).unwrap();
        assert!(!d.is_complete());
    }
}
