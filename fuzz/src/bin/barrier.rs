//! Fuzz target: the start barrier's wire format
//! (`arbor::run::barrier::wire`: `read_line`, `parse`, `Line::render`,
//! `check_token`, `same_token`), what either end reads of a peer. The
//! first byte is the size of the pieces the bytes arrive in (1 to 255, as
//! reads would deliver them); the rest is the connection's bytes. Besides
//! never panicking: no line read is longer than the cap, the lines do not
//! depend on how the bytes were cut, and a line that parses renders to
//! one that parses back to the same.

use std::io::{BufReader, Cursor, Read};

use arbor::run::barrier::wire::{self, Line, MAX_LINE};

/// A reader that gives at most `size` bytes a read.
struct Pieces<'a> {
    data: &'a [u8],
    size: usize,
}

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.size.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The lines until the end or the first error (its words).
fn lines(mut reader: impl std::io::BufRead) -> (Vec<Vec<u8>>, Option<String>) {
    let mut lines = Vec::new();
    loop {
        match wire::read_line(&mut reader) {
            Ok(Some(line)) => {
                assert!(line.len() < MAX_LINE, "a line of {} bytes", line.len());
                lines.push(line);
            }
            Ok(None) => return (lines, None),
            Err(e) => return (lines, Some(e.to_string())),
        }
    }
}

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Some((&size, bytes)) = data.split_first() else {
            return;
        };
        let size = usize::from(size).max(1);
        let cut = lines(BufReader::with_capacity(size, Pieces { data: bytes, size }));
        let whole = lines(Cursor::new(bytes));
        assert_eq!(cut, whole, "the lines depend on where the bytes were cut");
        for line in &whole.0 {
            let Ok(parsed) = wire::parse(line) else {
                continue;
            };
            let text = parsed.render();
            assert_eq!(wire::parse(text.as_bytes()).as_ref(), Ok(&parsed), "{text}");
            if let Line::Hello {
                token: Some(token), ..
            } = parsed
            {
                assert!(wire::check_token(token).is_ok());
                assert!(wire::same_token(token, token));
                assert!(!wire::same_token(token, &token[1..]));
            }
            let _ = wire::printable(&String::from_utf8_lossy(line));
        }
    });
}
