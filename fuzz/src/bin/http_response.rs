//! Fuzz target: an HTTP/1.x response as arbor's client reads it: the head
//! (`arbor_backends::live::http::parse_head`) and then the body's framing
//! (`framing::BodyDecoder`: Content-Length, chunked, or until the close).
//! The first byte is the size of the pieces the body arrives in (1 to 255
//! bytes); the rest is the response. Besides never panicking, decoding
//! must not depend on how the body was cut: the pieces give the same
//! bytes, the same error and the same end as the whole.

use arbor_backends::live::framing::BodyDecoder;
use arbor_backends::live::http::parse_head;

/// The body bytes, whether decoding failed, and whether the body ended.
fn decode<'a>(
    decoder: &mut BodyDecoder,
    pieces: impl Iterator<Item = &'a [u8]>,
) -> (Vec<u8>, bool, bool) {
    let mut body = Vec::new();
    for piece in pieces {
        if decoder
            .feed(piece, |data| body.extend_from_slice(data))
            .is_err()
        {
            return (body, true, decoder.is_complete());
        }
    }
    (body, false, decoder.is_complete())
}

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Some((&size, response)) = data.split_first() else {
            return;
        };
        let Ok(Some((len, head))) = parse_head(response) else {
            return;
        };
        let rest = &response[len..];
        let size = usize::from(size).max(1);
        let mut cut = BodyDecoder::new(head.framing);
        let mut whole = BodyDecoder::new(head.framing);
        let by_pieces = decode(&mut cut, rest.chunks(size));
        let at_once = decode(&mut whole, std::iter::once(rest));
        assert_eq!(
            by_pieces, at_once,
            "decoding depends on where the body was cut"
        );
        assert_eq!(cut.close(), whole.close());
    });
}
