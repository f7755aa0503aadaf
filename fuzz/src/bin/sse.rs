//! Fuzz target: the SSE line scanner of a streamed response
//! (`arbor_backends::live::sse`: `LineSplitter`, `data_of`, `classify`;
//! `messages_sse::classify`). The first byte is the size of the pieces the
//! body arrives in (1 to 255 bytes, as reads would deliver it); the rest is
//! the body. Besides never panicking, the lines must not depend on how the
//! body was cut: the pieces give the same lines as the whole.

use arbor_backends::live::messages_sse;
use arbor_backends::live::sse::{self, data_of, LineSplitter};

/// The lines, and the unterminated rest (or `None` once a line passed
/// the splitter's cap: it must not be fed after that).
fn lines<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> (Vec<Vec<u8>>, Option<Vec<u8>>) {
    let mut splitter = LineSplitter::default();
    let mut lines = Vec::new();
    for piece in pieces {
        if splitter
            .feed(piece, |line| lines.push(line.to_vec()))
            .is_err()
        {
            return (lines, None);
        }
    }
    (lines, Some(splitter.rest().to_vec()))
}

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Some((&size, body)) = data.split_first() else {
            return;
        };
        let size = usize::from(size).max(1);
        let (cut, cut_rest) = lines(body.chunks(size));
        let (whole, whole_rest) = lines(std::iter::once(body));
        assert_eq!(cut, whole, "lines depend on where the body was cut");
        assert_eq!(cut_rest, whole_rest);
        for line in &cut {
            if let Some(payload) = data_of(line) {
                let _ = sse::classify(payload);
                let _ = messages_sse::classify(payload);
            }
        }
    });
}
